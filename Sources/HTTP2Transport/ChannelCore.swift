// Sources/HTTP2Transport/ChannelCore.swift - one event loop's part of a channel's connection pool
//
// A channel has one ChannelCore per event loop of its group; each lives on its loop and owns the connections of that
// loop, so a call started on a loop runs on a connection of that loop. Its parts: the calls waiting for a connection
// (CallQueue), the policy that picks a ready connection for a call (ConnectionPicker: least loaded), one record per
// connection (ConnectionRecord), and the channel's subchannels, one per address, shared by the loops (Subchannel:
// the reconnect backoff). The channel's resolver hands every core the same addresses (NameResolution).
//
// While a core has calls to carry it keeps a connection to every address (up to its share of maxConnections),
// starting at a different address on each loop, and opens more, to the address with the fewest, when the open
// ones reach the server's MAX_CONCURRENT_STREAMS. While connections to other addresses are coming up (for at most
// a second each), the ready ones take only an even share of the calls, so calls made on a fresh channel do not all
// go to the first connection that happens to be ready. An address that leaves the resolution is drained.
//
// A failed attempt holds off the next one to that address by the subchannel's backoff and asks for a new
// resolution. Calls fail fast (UNAVAILABLE) only when no connection is open and every address is backing off
// (TRANSIENT_FAILURE), with the connection's ConnectionError as the cause. A connection counts as made only once
// the server's SETTINGS allow a stream.

import GRPCProtocol
import GRPCValues
import Logging
import Primitives
import TLSCrypto

final class ChannelCore: ClientConnectionDelegate {
  // The state below is shared with the connections' part (ChannelCore+Connections.swift); nothing outside the
  // pool part touches it.
  /// How long calls wait for a connection coming up to an address no ready connection serves, rather than all
  /// going to the first that is ready.
  static let comingUpHold: UInt64 = 1_000_000_000

  let loop: EventLoop
  /// This core's place in the channel's group: where its round robin over the addresses starts.
  let loopIndex: Int
  let configuration: GRPCChannelConfiguration
  let tlsContext: TLSContext?
  let authority: String
  let serverName: String?
  let logger: Logger
  /// This loop's share of ``GRPCChannelConfiguration/maxConnections``.
  let maxConnections: Int
  let resolution: NameResolution
  let subchannels: Subchannels
  var picker = LeastLoadedPicker()

  var records: [ConnectionRecord] = []
  var nextConnectionID = 1
  var queue = CallQueue()
  var activeCalls: [UInt64: (connection: ClientConnection, call: PendingCall)] = [:]
  var comingUpTimer: EventLoop.TimerID?
  /// The latest resolution's addresses, in its order; empty until one succeeded.
  var addresses: [ResolvedEndpoint] = []
  /// Where the next extra connection's search for an address starts.
  var cursor: Int
  /// While no address is known: until when the resolution's backoff makes calls fail fast.
  var resolutionRetryAt: UInt64 = 0
  var backoffTimer: EventLoop.TimerID?
  /// Why the last connection attempt failed: the cause of calls failed fast during the backoff.
  var lastFailure: ConnectionError?
  var shuttingDown = false
  private var shutdownWaiters: [@Sendable () -> Void] = []
  var counters = ChannelCounters()

  /// The keepalive interval in force: the configured one, doubled after each `too_many_pings`.
  var keepaliveInterval: Duration?
  /// What the server last said it accepts, shared with the channel, which picks each call's request encoding.
  let serverEncodings: ServerEncodings

  init(
    loop: EventLoop, loopIndex: Int, maxConnections: Int, host: String, port: Int,
    configuration: GRPCChannelConfiguration, tlsContext: TLSContext?, serverEncodings: ServerEncodings,
    resolution: NameResolution, subchannels: Subchannels, logger: Logger
  ) {
    self.subchannels = subchannels
    self.serverEncodings = serverEncodings
    self.keepaliveInterval = configuration.keepalive?.interval
    self.loop = loop
    self.loopIndex = loopIndex
    self.cursor = loopIndex
    self.maxConnections = max(1, maxConnections)
    self.resolution = resolution
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
    if shuttingDown { return finishUnstarted(call, Self.unavailable(.shutdown)) }
    if let deadline = call.deadline {
      let now = monotonicNanoseconds()
      guard deadline > now else {
        return finishUnstarted(
          call, GRPCStatus(code: .deadlineExceeded, message: "the deadline passed before the call started"))
      }
      call.deadlineTimer = loop.scheduleTimer(after: .nanoseconds(Int64(deadline - now))) { [weak self] in
        self?.deadlineExpired(call)
      }
    }
    dispatch(call)
  }

  /// The connection the picker chooses among those that can start a stream, under `share` open streams.
  func pickConnection(share: Int = .max) -> ClientConnection? {
    picker.pick(from: records.lazy.map(\.connection).filter(\.canStartStream), share: share)
  }

  func dispatch(_ call: PendingCall) {
    if comingUpCount() > 0, pickConnection() != nil {
      // Connections to other addresses are coming up: the ready ones take their share only.
      queue.append(call)
      return drainWaiting()
    }
    if let connection = pickConnection() {
      activeCalls[call.id] = (connection, call)
      connection.start(call)
      // Calls to carry: every address gets its connection (one added by a resolution, one whose connection closed).
      if hasUncoveredAddress() { ensureConnecting() }
      return
    }
    if inTransientFailure() {
      // TRANSIENT_FAILURE: fail fast rather than queue behind the backoff delay.
      return finishUnstarted(
        call, lastFailure.map(Self.unavailable) ?? GRPCStatus(code: .unavailable, message: "not connected"))
    }
    queue.append(call)
    ensureConnecting()
  }

  /// No connection is open and every way to make one is backing off.
  func inTransientFailure() -> Bool {
    guard !records.contains(where: { $0.connection.phase != .closed }) else { return false }
    let now = monotonicNanoseconds()
    if addresses.isEmpty { return now < resolutionRetryAt }
    return addresses.allSatisfy { subchannels[$0.key].backingOffUntil > now }
  }

  func cancel(callID: UInt64) {
    if let call = queue.remove(id: callID) {
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
    if let call = queue.remove(id: callID) {
      finishUnstarted(call, status)
    } else if let active = activeCalls[callID], let streamID = active.call.streamID {
      active.connection.abort(streamID: streamID, status: status)
    }
  }

  /// Sends framed request bytes of `call` (and its end, with `end`), or keeps them until it has a stream. `waiter`
  /// (if any) resumes with nil once the call's unsent request bytes are within the buffer limit, or with the final
  /// status once the call has ended.
  func write(_ call: PendingCall, bytes: [UInt8], end: Bool, waiter: CheckedContinuation<GRPCStatus?, Never>?) {
    if call.finished {
      waiter?.resume(returning: call.finalStatus ?? GRPCStatus(code: .cancelled, message: "the call has ended"))
      return
    }
    if let active = activeCalls[call.id], let streamID = call.streamID {
      return active.connection.write(streamID: streamID, bytes: bytes, end: end, waiter: waiter)
    }
    call.keepUnsent(bytes, end: end, waiter: waiter)
  }

  func deadlineExpired(_ call: PendingCall) {
    call.deadlineTimer = nil
    guard !call.finished else { return }
    if queue.remove(id: call.id) != nil {
      finishUnstarted(
        call, GRPCStatus(code: .deadlineExceeded, message: "the deadline passed while waiting for a connection"))
    } else if let active = activeCalls[call.id], let streamID = active.call.streamID {
      active.connection.cancel(streamID: streamID, deadline: true)
    }
  }

  /// UNAVAILABLE because of `error`: its description as the message, itself as the cause.
  static func unavailable(_ error: ConnectionError) -> GRPCStatus {
    GRPCStatus(code: .unavailable, message: error.description, cause: error)
  }

  func finishUnstarted(_ call: PendingCall, _ status: GRPCStatus) {
    guard call.finish(status, loop: loop) else { return }
    checkShutdownComplete()
  }

  /// Connections connecting, for at most ``comingUpHold``, to addresses no ready connection serves: calls queued
  /// at the start are shared with them rather than all given to the first one ready.
  func comingUpCount() -> Int {
    guard records.contains(where: { $0.connectStarted != nil }) else { return 0 }
    let now = monotonicNanoseconds()
    let readyKeys = Set(records.lazy.filter { $0.connection.phase == .ready }.map(\.key))
    var count = 0
    var earliestExpiry: UInt64?
    for record in records where record.connection.phase == .connecting && !readyKeys.contains(record.key) {
      guard let started = record.connectStarted, started + Self.comingUpHold > now else { continue }
      count += 1
      earliestExpiry = min(earliestExpiry ?? .max, started + Self.comingUpHold)
    }
    if let earliestExpiry, comingUpTimer == nil {
      // When the hold ends, the calls still held go to the ready connections.
      comingUpTimer = loop.scheduleTimer(after: .nanoseconds(Int64(earliestExpiry - now))) { [weak self] in
        self?.comingUpTimer = nil
        self?.drainWaiting()
      }
    }
    return count
  }

  func drainWaiting() {
    let comingUp = comingUpCount()
    var share = Int.max
    if comingUp > 0 && !queue.isEmpty {
      // An even share of everything to carry, over the ready connections and those coming up.
      let ready = records.lazy.map(\.connection).filter(\.canStartStream)
      let load = queue.count + ready.reduce(0) { $0 + $1.activeStreamCount }
      share = (load + ready.count + comingUp - 1) / max(1, ready.count + comingUp)
    }
    while !queue.isEmpty, let connection = pickConnection(share: share), let call = queue.popFirst() {
      activeCalls[call.id] = (connection, call)
      connection.start(call)
    }
    if !queue.isEmpty { ensureConnecting() }
  }

  // MARK: - Shutdown

  /// Stops taking calls; `done` runs once every call has finished and every connection closed.
  func shutdown(graceful: Bool, done: @escaping @Sendable () -> Void) {
    shuttingDown = true
    shutdownWaiters.append(done)
    for timer in [backoffTimer, comingUpTimer].compactMap({ $0 }) { loop.cancelTimer(timer) }
    backoffTimer = nil
    comingUpTimer = nil
    for call in queue.removeAll() { finishUnstarted(call, Self.unavailable(.shutdown)) }
    for record in records { record.connection.shutdown(graceful: graceful) }
    checkShutdownComplete()
  }

  func checkShutdownComplete() {
    guard shuttingDown, activeCalls.isEmpty, queue.isEmpty, !records.contains(where: { $0.connection.phase != .closed })
    else { return }
    let waiters = shutdownWaiters
    shutdownWaiters.removeAll()
    for waiter in waiters { waiter() }
  }

  /// This loop's figures; the channel adds up those of its loops.
  var statistics: GRPCTransportStatistics {
    var connectionsPerAddress: [String: Int] = [:]
    var streamsPerAddress: [String: Int] = [:]
    for record in records where record.connection.phase != .closed {
      connectionsPerAddress[record.key, default: 0] += 1
      streamsPerAddress[record.key, default: 0] += record.connection.activeStreamCount
    }
    let open = connectionsPerAddress.values.reduce(0, +)
    var statistics = GRPCTransportStatistics(
      openConnections: open, activeCalls: activeCalls.count, queuedCalls: queue.count,
      connectAttempts: counters.connectAttempts, connectFailures: counters.connectFailures,
      pingsSent: counters.pingsSent, pingAcksReceived: counters.pingAcksReceived,
      goAwaysReceived: counters.goAwaysReceived, recentBackoffDelays: counters.recentBackoffDelays,
      connectionsPerAddress: connectionsPerAddress)
    statistics.keepaliveInterval = keepaliveInterval
    statistics.streamsPerAddress = streamsPerAddress
    statistics.connectionsPerLoop = [open]
    return statistics
  }
}
