// Sources/HTTP2Transport/ChannelCore.swift - connection pool, call queue and backoff of a channel
//
// Lives on the channel's event loop. Calls go to the first ready connection
// with a free stream; when none has one, a new connection is opened (up to
// maxConnections) and the call waits for it. A failed connection attempt
// fails the waiting calls UNAVAILABLE at once (fail-fast) and holds off the
// next attempt by the backoff delay; calls arriving meanwhile fail fast too.
// Calls failed for a connection's sake carry its ConnectionError as the cause.
// A connection counts as made only once the server's SETTINGS allow a stream,
// so a server announcing MAX_CONCURRENT_STREAMS = 0 costs one attempt per
// backoff period, bounded by the connect timeout, not a connection per call.

import Primitives
import GRPCProtocol
import Logging

final class ChannelCore: ClientConnectionDelegate {
  let loop: EventLoop
  let host: String
  let port: Int
  let configuration: GRPCChannelConfiguration
  let tlsContext: TLSContext?
  let authority: String
  private let serverName: String?
  private let logger: Logger

  private var connections: [ClientConnection] = []
  private var nextConnectionID = 1
  private var waiting = FIFOQueue<PendingCall>()
  private var activeCalls: [UInt64: (connection: ClientConnection, call: PendingCall)] = [:]
  private var queuedCalls: [UInt64: PendingCall] = [:]

  private var addresses: [SocketAddress] = []
  private var nextAddressIndex = 0
  private var resolving = false
  private var consecutiveFailures = 0
  private var backoffUntil: UInt64 = 0
  private var backoffTimer: EventLoop.TimerID?
  /// Why the last connection attempt failed: the cause of calls failed fast during the backoff.
  private var lastFailure: ConnectionError?
  private var random = SystemRandomNumberGenerator()

  private var shuttingDown = false
  private var shutdownWaiters: [@Sendable () -> Void] = []

  /// The keepalive interval in force: the configured one, doubled after each `too_many_pings`.
  private(set) var keepaliveInterval: Duration?
  /// What the server last said it accepts (`grpc-accept-encoding`), shared with the channel,
  /// which picks each call's request encoding from it.
  let serverEncodings: ServerEncodings

  /// Connection attempts made and failed, for tests and stats.
  private(set) var connectAttempts = 0
  private(set) var connectFailures = 0
  /// Keepalive PINGs sent and acknowledged, over all connections.
  private(set) var pingsSent = 0
  private(set) var pingAcksReceived = 0
  /// GOAWAY frames received, over all connections.
  private(set) var goAwaysReceived = 0
  /// The delays applied after each failed attempt, most recent last (kept short).
  private(set) var recentBackoffDelays: [Duration] = []

  init(
    loop: EventLoop, host: String, port: Int, configuration: GRPCChannelConfiguration, tlsContext: TLSContext?,
    serverEncodings: ServerEncodings, logger: Logger
  ) {
    self.serverEncodings = serverEncodings
    self.keepaliveInterval = configuration.keepalive?.interval
    self.loop = loop
    self.host = host
    self.port = port
    self.configuration = configuration
    self.tlsContext = tlsContext
    self.logger = logger
    var tlsOverride: String?
    if case .tls(let tls) = configuration.security { tlsOverride = tls.serverNameOverride }
    self.serverName = tlsOverride ?? host
    let hostPart = host.contains(":") ? "[\(host)]" : host
    self.authority = configuration.authority ?? tlsOverride ?? "\(hostPart):\(port)"
  }

  // MARK: - Calls

  func start(_ call: PendingCall) {
    loop.assertInEventLoop()
    if shuttingDown {
      finishUnstarted(call, Self.unavailable(.shutdown))
      return
    }
    if let deadline = call.deadline {
      let now = monotonicNanoseconds()
      guard deadline > now else {
        finishUnstarted(
          call, GRPCStatus(code: .deadlineExceeded, message: "the deadline passed before the call started"))
        return
      }
      call.deadlineTimer = loop.scheduleTimer(after: .nanoseconds(Int64(deadline - now))) { [weak self] in
        self?.deadlineExpired(call)
      }
    }
    dispatch(call)
  }

  private func dispatch(_ call: PendingCall) {
    if let connection = connections.first(where: { $0.canStartStream }) {
      activeCalls[call.id] = (connection, call)
      connection.start(call)
      return
    }
    if monotonicNanoseconds() < backoffUntil && !connections.contains(where: { $0.phase != .closed }) {
      // TRANSIENT_FAILURE: fail fast rather than queue behind the backoff delay.
      let status =
        lastFailure.map(Self.unavailable) ?? GRPCStatus(code: .unavailable, message: "not connected")
      finishUnstarted(call, status)
      return
    }
    waiting.append(call)
    queuedCalls[call.id] = call
    ensureConnecting()
  }

  func cancel(callID: UInt64) {
    if let call = queuedCalls.removeValue(forKey: callID) {
      waiting.removeAll { $0 === call }
      finishUnstarted(call, GRPCStatus(code: .cancelled, message: "the call was cancelled"))
    } else if let active = activeCalls[callID], let streamID = active.call.streamID {
      active.connection.cancel(streamID: streamID, deadline: false)
    }
  }

  func release(callID: UInt64, bytes: Int) {
    guard let active = activeCalls[callID], let streamID = active.call.streamID else { return }
    active.connection.release(streamID: streamID, bytes: bytes)
  }

  /// Ends `callID` with `status`, a failure its consumer found (a message that does not decompress).
  func abort(callID: UInt64, status: GRPCStatus) {
    if let call = queuedCalls.removeValue(forKey: callID) {
      waiting.removeAll { $0 === call }
      finishUnstarted(call, status)
    } else if let active = activeCalls[callID], let streamID = active.call.streamID {
      active.connection.abort(streamID: streamID, status: status)
    }
  }

  /// Sends framed request bytes of `call` (and its end, with `end`), or keeps them until it has
  /// a stream. `waiter` (if any) resumes with `nil` once the call's unsent request bytes are
  /// within the buffer limit, or with the final status once the call has ended.
  func write(
    _ call: PendingCall, bytes: [UInt8], end: Bool, waiter: CheckedContinuation<GRPCStatus?, Never>?
  ) {
    if call.finished {
      waiter?.resume(returning: call.finalStatus ?? GRPCStatus(code: .cancelled, message: "the call has ended"))
      return
    }
    if let active = activeCalls[call.id], let streamID = call.streamID {
      active.connection.write(streamID: streamID, bytes: bytes, end: end, waiter: waiter)
      return
    }
    // Not on a stream yet: keep the bytes with the call; they go out when it starts.
    guard !call.requestEnded else {
      waiter?.resume(returning: nil)
      return
    }
    call.outbound.append(contentsOf: bytes)
    if end { call.requestEnded = true }
    guard let waiter else { return }
    if call.outbound.count <= ClientConnection.requestBufferLimit {
      waiter.resume(returning: nil)
    } else {
      call.writeWaiters.append(waiter)
    }
  }

  private func deadlineExpired(_ call: PendingCall) {
    call.deadlineTimer = nil
    guard !call.finished else { return }
    if queuedCalls.removeValue(forKey: call.id) != nil {
      waiting.removeAll { $0 === call }
      finishUnstarted(
        call, GRPCStatus(code: .deadlineExceeded, message: "the deadline passed while waiting for a connection"))
    } else if let active = activeCalls[call.id], let streamID = active.call.streamID {
      active.connection.cancel(streamID: streamID, deadline: true)
    }
  }

  /// UNAVAILABLE because of `error`: its description as the message, itself as the cause.
  private static func unavailable(_ error: ConnectionError) -> GRPCStatus {
    GRPCStatus(code: .unavailable, message: error.description, cause: error)
  }

  private func finishUnstarted(_ call: PendingCall, _ status: GRPCStatus) {
    guard !call.finished else { return }
    call.finished = true
    call.finalStatus = status
    if let timer = call.deadlineTimer { loop.cancelTimer(timer) }
    call.handler.callDidFinish(status: status, trailers: GRPCMetadata())
    call.resumeWriters(status)
    checkShutdownComplete()
  }

  private func drainWaiting() {
    while !waiting.isEmpty, let connection = connections.first(where: { $0.canStartStream }),
      let call = waiting.popFirst()
    {
      queuedCalls[call.id] = nil
      activeCalls[call.id] = (connection, call)
      connection.start(call)
    }
    if !waiting.isEmpty { ensureConnecting() }
  }

  // MARK: - Connections

  private func ensureConnecting() {
    guard !shuttingDown else { return }
    if connections.contains(where: { $0.phase == .connecting }) { return }
    let open = connections.filter { $0.phase == .ready || $0.phase == .connecting }.count
    guard open < configuration.maxConnections else { return }  // Wait for a stream to free up.
    let now = monotonicNanoseconds()
    if now < backoffUntil {
      if backoffTimer == nil {
        backoffTimer = loop.scheduleTimer(after: .nanoseconds(Int64(backoffUntil - now))) { [weak self] in
          self?.backoffTimer = nil
          if let self, !self.waiting.isEmpty { self.ensureConnecting() }
        }
      }
      return
    }
    guard !addresses.isEmpty else {
      resolve()
      return
    }
    let address = addresses[nextAddressIndex % addresses.count]
    let connection = ClientConnection(
      loop: loop, id: nextConnectionID, address: address, authority: authority, configuration: configuration,
      logger: logger)
    nextConnectionID += 1
    connection.delegate = self
    connections.append(connection)
    connectAttempts += 1
    logger.debug("connecting", metadata: ["address": "\(address)", "connection": "\(connection.id)"])
    connection.connect(tlsContext: tlsContext, serverName: serverName)
  }

  private func resolve() {
    guard !resolving else { return }
    resolving = true
    // Numeric addresses and localhost resolve at once without DNS: do it here, so making a
    // connection never waits for another thread.
    let host = host
    let port = port
    if TLSEngine.isIPAddress(host) || host == "localhost" {
      resolved(
        Result { () throws(SocketError) -> [SocketAddress] in try SocketAddress.resolve(host: host, port: port) })
      return
    }
    let core = LoopBound(unchecked: self, loop: loop)
    // getaddrinfo blocks: run it on a thread of its own, not on the event loop and not on
    // Swift's cooperative pool (which callers may be keeping busy).
    detachThread {
      let result = Result { () throws(SocketError) -> [SocketAddress] in
        try SocketAddress.resolve(host: host, port: port)
      }
      core.loop.execute {
        core.value.resolved(result)
      }
    }
  }

  private func resolved(_ result: Result<[SocketAddress], SocketError>) {
    resolving = false
    switch result {
    case .success(let found) where !found.isEmpty:
      addresses = found
      ensureConnecting()
    case .success:
      connectionAttemptFailed(.resolutionFailed(host: host, reason: "no addresses"))
    case .failure(let error):
      connectionAttemptFailed(.resolutionFailed(host: host, reason: error.resolutionFailure ?? error.description))
    }
  }

  private func connectionAttemptFailed(_ error: ConnectionError) {
    connectFailures += 1
    consecutiveFailures += 1
    lastFailure = error
    let delay = configuration.backoff.delay(retry: consecutiveFailures, using: &random)
    recentBackoffDelays.append(delay)
    if recentBackoffDelays.count > 32 { recentBackoffDelays.removeFirst() }
    let nanos = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
    backoffUntil = monotonicNanoseconds() + UInt64(max(0, nanos))
    logger.debug("connection attempt failed", metadata: ["error": "\(error)", "retry_in": "\(delay)"])
    // Fail fast: calls waiting for a connection end UNAVAILABLE now, unless another
    // connection can still take them.
    if !connections.contains(where: { $0.phase == .ready || $0.phase == .connecting }) {
      let failed = waiting
      waiting.removeAll()
      for call in failed {
        queuedCalls[call.id] = nil
        finishUnstarted(call, Self.unavailable(error))
      }
    }
  }

  func connectionDidBecomeReady(_ connection: ClientConnection) {
    consecutiveFailures = 0
    backoffUntil = 0
    logger.debug("connection ready", metadata: ["connection": "\(connection.id)"])
    drainWaiting()
  }

  func connectionHasCapacity(_ connection: ClientConnection) {
    drainWaiting()
  }

  func connection(_ connection: ClientConnection, didCloseWithError error: ConnectionError?, wasReady: Bool) {
    connections.removeAll { $0 === connection }
    if !wasReady {
      // A clean close before the connection was ready is this side's (a graceful shutdown).
      connectionAttemptFailed(error ?? .shutdown)
      nextAddressIndex += 1
    } else {
      logger.debug(
        "connection closed", metadata: ["connection": "\(connection.id)", "error": "\(error?.description ?? "none")"])
      if !waiting.isEmpty { ensureConnecting() }
    }
    checkShutdownComplete()
  }

  func connection(_ connection: ClientConnection, didFinish call: PendingCall) {
    activeCalls[call.id] = nil
    checkShutdownComplete()
  }

  func connection(_ connection: ClientConnection, retry call: PendingCall) {
    activeCalls[call.id] = nil
    guard !call.finished else { return }
    dispatch(call)
  }

  func connectionDidCountPing(_ connection: ClientConnection, ack: Bool) {
    if ack { pingAcksReceived += 1 } else { pingsSent += 1 }
  }

  func connectionReceivedGoAway(_ connection: ClientConnection) {
    goAwaysReceived += 1
  }

  func connectionReceivedTooManyPings(_ connection: ClientConnection) {
    guard let interval = keepaliveInterval else { return }
    // As grpc-go does: the server's ping policy is stricter than our interval; double it for
    // every later connection (this one is closing).
    let doubled = interval * 2
    keepaliveInterval = doubled
    logger.warning(
      "the server sent GOAWAY ENHANCE_YOUR_CALM too_many_pings; keepalive interval doubled",
      metadata: ["connection": "\(connection.id)", "interval": "\(doubled)"])
  }

  func connection(_ connection: ClientConnection, serverAcceptsEncodings encodings: [String]) {
    serverEncodings.update(encodings)
  }

  // MARK: - Shutdown

  /// Stops taking calls; `done` runs once every call has finished and every connection closed.
  func shutdown(graceful: Bool, done: @escaping @Sendable () -> Void) {
    shuttingDown = true
    shutdownWaiters.append(done)
    if let backoffTimer { loop.cancelTimer(backoffTimer) }
    backoffTimer = nil
    let queued = waiting
    waiting.removeAll()
    for call in queued {
      queuedCalls[call.id] = nil
      finishUnstarted(call, Self.unavailable(.shutdown))
    }
    for connection in connections { connection.shutdown(graceful: graceful) }
    checkShutdownComplete()
  }

  private func checkShutdownComplete() {
    guard shuttingDown, activeCalls.isEmpty, waiting.isEmpty,
      !connections.contains(where: { $0.phase != .closed })
    else { return }
    let waiters = shutdownWaiters
    shutdownWaiters.removeAll()
    for waiter in waiters { waiter() }
  }

  /// Counters for tests and stats.
  var stats: GRPCChannelStats {
    GRPCChannelStats(
      openConnections: connections.filter { $0.phase != .closed }.count,
      activeCalls: activeCalls.count,
      queuedCalls: waiting.count,
      connectAttempts: connectAttempts,
      connectFailures: connectFailures,
      pingsSent: pingsSent,
      pingAcksReceived: pingAcksReceived,
      goAwaysReceived: goAwaysReceived,
      recentBackoffDelays: recentBackoffDelays,
      keepaliveInterval: keepaliveInterval)
  }
}

/// The encodings a server last said it accepts, shared between the channel's callers (who
/// pick request encodings) and its loop (which learns them from responses).
final class ServerEncodings: Sendable {
  private let accepted = Locked<[String]?>(nil)

  /// Records the server's `grpc-accept-encoding` names.
  func update(_ names: [String]) {
    accepted.withLock { $0 = names }
  }

  /// `wanted` if the server accepts it or has not said what it accepts; identity otherwise
  /// (compression.md: a client must not compress with what the server cannot decode).
  func negotiate(_ wanted: GRPCCompressionAlgorithm) -> GRPCCompressionAlgorithm {
    guard wanted != .identity else { return .identity }
    let names = accepted.withLock { $0 }
    guard let names else { return wanted }
    return names.contains(wanted.name) ? wanted : .identity
  }
}

/// A snapshot of a channel's connections and calls.
public struct GRPCChannelStats: Sendable, Hashable {
  /// Connections connecting, ready or draining.
  public var openConnections: Int
  /// Calls holding a stream.
  public var activeCalls: Int
  /// Calls waiting for a connection or a stream.
  public var queuedCalls: Int
  /// Connection attempts started.
  public var connectAttempts: Int
  /// Connection attempts that failed before the connection was ready.
  public var connectFailures: Int
  /// Keepalive PINGs sent.
  public var pingsSent: Int
  /// Keepalive PING acknowledgements received.
  public var pingAcksReceived: Int
  /// GOAWAY frames received from the server, over all connections.
  public var goAwaysReceived: Int
  /// The backoff delays chosen after recent failures, oldest first.
  public var recentBackoffDelays: [Duration]
  /// The keepalive interval in force (doubled after each `too_many_pings`), or `nil` without keepalive.
  public var keepaliveInterval: Duration?
}
