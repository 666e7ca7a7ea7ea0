// Sources/HTTP2Transport/ChannelCore.swift - one event loop's part of a channel's connection pool
//
// A channel has one ChannelCore per event loop of its group; each lives on its loop and owns the
// connections of that loop, so a call started on a loop runs on a connection of that loop. The
// channel's resolver hands every core the same addresses (NameResolution).
//
// Connections are spread over the resolved addresses: while a core has calls to carry it keeps a
// connection to every address (up to its share of maxConnections), starting at a different address
// on each loop, and opens more, to the address with the fewest, when the open ones reach the
// server's MAX_CONCURRENT_STREAMS. A call goes to the ready connection with the fewest open streams.
// While connections to other addresses are coming up (for at most a second each), the ready ones
// take only an even share of the calls, so calls made on a fresh channel do not all go to the first
// connection that happens to be ready.
// An address that disappears from a resolution is drained: GOAWAY, its calls finish, no new ones.
//
// A failed connection attempt holds off the next attempt to that address by the backoff delay and
// asks for a new resolution. The backoff is the channel's, shared by its cores (AddressBackoff): while an
// address is failing, one attempt at a time goes to it from all loops together. Calls fail fast (UNAVAILABLE) only when no connection is open and every
// address is backing off (TRANSIENT_FAILURE); calls failed for a connection's sake carry its
// ConnectionError as the cause. A connection counts as made only once the server's SETTINGS allow a
// stream, so a server announcing MAX_CONCURRENT_STREAMS = 0 costs one attempt per backoff period,
// bounded by the connect timeout, not a connection per call.

public import GRPCProtocol
import Logging
import Primitives

final class ChannelCore: ClientConnectionDelegate {
  let loop: EventLoop
  /// This core's place in the channel's group: where its round robin over the addresses starts.
  let loopIndex: Int
  let configuration: GRPCChannelConfiguration
  let tlsContext: TLSContext?
  let authority: String
  private let serverName: String?
  private let logger: Logger
  /// This loop's share of ``GRPCChannelConfiguration/maxConnections``.
  private let maxConnections: Int
  private let resolution: NameResolution
  /// The channel's backoff per address, shared with the other cores.
  private let backoff: AddressBackoff

  private var connections: [ClientConnection] = []
  /// The address key of each connection (and of closed ones until they report).
  private var connectionKeys: [ObjectIdentifier: String] = [:]
  /// Connections this core drained because their address left the resolution: their close is no failure.
  private var drainedConnections: Set<ObjectIdentifier> = []
  private var nextConnectionID = 1
  /// When each connection still connecting started (monotonic nanoseconds).
  private var connectStarted: [ObjectIdentifier: UInt64] = [:]
  private var comingUpTimer: EventLoop.TimerID?
  /// Calls waiting for a connection, in arrival order. A call taken out before its turn (cancelled, past its
  /// deadline) leaves `queuedCalls` at once and its entry here stale until it is popped or the queue is
  /// compacted (`removeWaiting`): removing it in place was a pass over the whole queue per call, quadratic
  /// when a million queued calls time out. `queuedCalls` holds exactly the live ones.
  private var waiting = FIFOQueue<PendingCall>()
  /// Entries of `waiting` whose call is no longer queued.
  private var staleWaiting = 0
  /// Whether any call waits for a connection.
  private var hasWaiting: Bool { !queuedCalls.isEmpty }
  private var activeCalls: [UInt64: (connection: ClientConnection, call: PendingCall)] = [:]
  private var queuedCalls: [UInt64: PendingCall] = [:]

  /// The latest resolution's addresses, in its order; empty until one succeeded.
  private var addresses: [ResolvedEndpoint] = []
  /// Where the next extra connection's search for an address starts.
  private var cursor: Int
  /// The backoff generation each connection still connecting started at (``AddressBackoff``).
  private var attemptGenerations: [ObjectIdentifier: Int] = [:]
  /// Failed resolutions in a row while no address is known, and until when calls fail fast.
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
    loop: EventLoop, loopIndex: Int, maxConnections: Int, host: String, port: Int,
    configuration: GRPCChannelConfiguration, tlsContext: TLSContext?, serverEncodings: ServerEncodings,
    resolution: NameResolution, backoff: AddressBackoff, logger: Logger
  ) {
    self.backoff = backoff
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

  /// The ready connection with a free stream and the fewest open streams (the first of equals).
  private func leastLoadedConnection() -> ClientConnection? {
    var best: ClientConnection?
    for connection in connections where connection.canStartStream {
      if let current = best, current.activeStreamCount <= connection.activeStreamCount { continue }
      best = connection
    }
    return best
  }

  private func dispatch(_ call: PendingCall) {
    if comingUpCount() > 0, leastLoadedConnection() != nil {
      // Connections to other addresses are coming up: the ready ones take their share only.
      waiting.append(call)
      queuedCalls[call.id] = call
      drainWaiting()
      return
    }
    if let connection = leastLoadedConnection() {
      activeCalls[call.id] = (connection, call)
      connection.start(call)
      // Calls to carry: every address gets its connection (one added by a resolution, one whose
      // connection closed).
      if hasUncoveredAddress() { ensureConnecting() }
      return
    }
    if inTransientFailure() {
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

  /// No connection is open and every way to make one is backing off.
  private func inTransientFailure() -> Bool {
    guard !connections.contains(where: { $0.phase != .closed }) else { return false }
    let now = monotonicNanoseconds()
    if addresses.isEmpty { return now < backoffUntil }
    return addresses.allSatisfy { backoff.until($0.key) > now }
  }

  func cancel(callID: UInt64) {
    if let call = queuedCalls.removeValue(forKey: callID) {
      removeWaiting(call)
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
      removeWaiting(call)
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
      removeWaiting(call)
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
    guard call.finish(status, loop: loop) else { return }
    checkShutdownComplete()
  }

  /// How long calls wait for a connection coming up to an address no ready connection serves,
  /// rather than all going to the first that is ready.
  static let comingUpHold: UInt64 = 1_000_000_000

  /// Connections connecting, for at most ``comingUpHold``, to addresses no ready connection serves:
  /// calls queued at the start are shared with them rather than all given to the first one ready.
  private func comingUpCount() -> Int {
    guard !connectStarted.isEmpty else { return 0 }
    let now = monotonicNanoseconds()
    var readyKeys = Set<String>()
    for connection in connections where connection.phase == .ready {
      if let key = connectionKeys[ObjectIdentifier(connection)] { readyKeys.insert(key) }
    }
    var count = 0
    var earliestExpiry: UInt64?
    for connection in connections where connection.phase == .connecting {
      let id = ObjectIdentifier(connection)
      guard let started = connectStarted[id], let key = connectionKeys[id], !readyKeys.contains(key) else { continue }
      let expiry = started + Self.comingUpHold
      guard expiry > now else { continue }
      count += 1
      earliestExpiry = min(earliestExpiry ?? expiry, expiry)
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

  private func drainWaiting() {
    let comingUp = comingUpCount()
    var share = Int.max
    if comingUp > 0 && hasWaiting {
      // An even share of everything to carry, over the ready connections and those coming up.
      var ready = 0
      var load = queuedCalls.count
      for connection in connections where connection.canStartStream {
        ready += 1
        load += connection.activeStreamCount
      }
      share = (load + ready + comingUp - 1) / max(1, ready + comingUp)
    }
    while hasWaiting, let connection = leastLoadedConnection(), connection.activeStreamCount < share,
      let call = popLiveWaiting()
    {
      queuedCalls[call.id] = nil
      activeCalls[call.id] = (connection, call)
      connection.start(call)
    }
    if hasWaiting { ensureConnecting() }
  }

  /// The first call still waiting (stale entries skipped).
  private func popLiveWaiting() -> PendingCall? {
    while let call = waiting.popFirst() {
      if queuedCalls[call.id] === call { return call }
      staleWaiting -= 1
    }
    return nil
  }

  /// Leaves `call` (already out of `queuedCalls`) stale in `waiting`, compacting the queue once stale
  /// entries are most of it: amortized O(1) a call.
  private func removeWaiting(_ call: PendingCall) {
    staleWaiting += 1
    if staleWaiting > 64 && staleWaiting * 2 > waiting.count {
      waiting.removeAll { self.queuedCalls[$0.id] !== $0 }
      staleWaiting = 0
    }
  }

  /// Every call still waiting, in order; the queue emptied.
  private func takeAllWaiting() -> [PendingCall] {
    let live = waiting.filter { queuedCalls[$0.id] === $0 }
    waiting.removeAll()
    staleWaiting = 0
    return live
  }

  // MARK: - Connections

  /// Connections connecting or ready (not draining, not closed).
  private func isOpen(_ connection: ClientConnection) -> Bool {
    connection.phase == .ready || connection.phase == .connecting
  }

  /// Whether an address of the resolution has no connection connecting or ready.
  private func hasUncoveredAddress() -> Bool {
    guard !addresses.isEmpty else { return false }
    var covered = Set<String>()
    var openCount = 0
    for connection in connections where isOpen(connection) {
      openCount += 1
      if let key = connectionKeys[ObjectIdentifier(connection)] { covered.insert(key) }
    }
    guard openCount < maxConnections else { return false }
    return addresses.contains { !covered.contains($0.key) }
  }

  /// Opens connections while there are calls to carry: one to every address that has none (up to
  /// this loop's share of maxConnections), and one more to the least-connected address when calls
  /// still wait and none is connecting. Addresses backing off are skipped (a timer comes back).
  private func ensureConnecting() {
    guard !shuttingDown, hasWaiting || !activeCalls.isEmpty else { return }
    let now = monotonicNanoseconds()
    guard !addresses.isEmpty else {
      if now < backoffUntil {
        scheduleBackoffTimer(until: backoffUntil, now: now)
      } else {
        resolution.request()
      }
      return
    }
    var perAddress: [String: Int] = [:]
    var openCount = 0
    for connection in connections where isOpen(connection) {
      openCount += 1
      if let key = connectionKeys[ObjectIdentifier(connection)] { perAddress[key, default: 0] += 1 }
    }
    var earliestRetry: UInt64?
    func backingOff(_ endpoint: ResolvedEndpoint) -> Bool {
      let until = backoff.until(endpoint.key)
      guard until > now else { return false }
      earliestRetry = min(earliestRetry ?? until, until)
      return true
    }
    /// Connects unless the channel's backoff for the address says to wait.
    func connectIfAllowed(_ endpoint: ResolvedEndpoint) -> Bool {
      let core = LoopBound(self, loop: loop)
      switch backoff.start(endpoint.key, now: now, wake: { core.loop.execute { core.value.anotherAttemptEnded() } }) {
      case .connect(let generation):
        connect(to: endpoint, generation: generation)
        return true
      case .backingOff(let until):
        earliestRetry = min(earliestRetry ?? until, until)
        return false
      case .waitingForAnotherAttempt:
        return false
      }
    }
    // One connection to every address.
    for offset in 0..<addresses.count where openCount < maxConnections {
      let endpoint = addresses[(loopIndex + offset) % addresses.count]
      guard perAddress[endpoint.key] == nil, connectIfAllowed(endpoint) else { continue }
      perAddress[endpoint.key] = 1
      openCount += 1
    }
    // More, when calls wait for a stream and nothing is connecting: the address with the fewest.
    if hasWaiting, openCount < maxConnections, !connections.contains(where: { $0.phase == .connecting }) {
      var choice: ResolvedEndpoint?
      for offset in 0..<addresses.count {
        let endpoint = addresses[(cursor + offset) % addresses.count]
        guard !backingOff(endpoint) else { continue }
        if let current = choice, perAddress[current.key, default: 0] <= perAddress[endpoint.key, default: 0] {
          continue
        }
        choice = endpoint
      }
      if let choice, connectIfAllowed(choice) {
        cursor += 1
      }
    }
    if let earliestRetry { scheduleBackoffTimer(until: earliestRetry, now: now) }
  }

  private func scheduleBackoffTimer(until: UInt64, now: UInt64) {
    guard backoffTimer == nil else { return }
    backoffTimer = loop.scheduleTimer(after: .nanoseconds(Int64(until - now))) { [weak self] in
      guard let self else { return }
      self.backoffTimer = nil
      if self.hasWaiting { self.ensureConnecting() }
    }
  }

  private func connect(to endpoint: ResolvedEndpoint, generation: Int) {
    let connection = ClientConnection(
      loop: loop, id: nextConnectionID, address: endpoint.address, authority: authority,
      configuration: configuration, logger: logger)
    nextConnectionID += 1
    connection.delegate = self
    connections.append(connection)
    connectionKeys[ObjectIdentifier(connection)] = endpoint.key
    connectStarted[ObjectIdentifier(connection)] = monotonicNanoseconds()
    attemptGenerations[ObjectIdentifier(connection)] = generation
    connectAttempts += 1
    logger.debug("connecting", metadata: ["address": "\(endpoint.key)", "connection": "\(connection.id)"])
    connection.connect(tlsContext: tlsContext, serverName: serverName)
  }

  /// A resolution's outcome, from ``NameResolution`` (the same for every core of the channel).
  func resolved(_ result: Result<[ResolvedEndpoint], ConnectionError>) {
    guard !shuttingDown else { return }
    switch result {
    case .success(let found):
      let keys = Set(found.map(\.key))
      addresses = found
      consecutiveFailures = 0
      backoffUntil = 0
      backoff.retain(keys)
      // Addresses gone from the resolution: their connections drain (GOAWAY; their calls finish).
      for connection in connections where connection.phase != .closed {
        let id = ObjectIdentifier(connection)
        guard let key = connectionKeys[id], !keys.contains(key), !drainedConnections.contains(id) else { continue }
        logger.debug("address removed by the resolver: draining", metadata: ["address": "\(key)"])
        drainedConnections.insert(id)
        connection.shutdown(graceful: true)
      }
      ensureConnecting()
    case .failure(let error):
      if addresses.isEmpty {
        connectionAttemptFailed(error, key: nil, generation: nil)
      } else {
        // Keep using the addresses of the last good resolution.
        logger.debug("resolution failed; keeping the last addresses", metadata: ["error": "\(error)"])
      }
    }
  }

  /// A connection attempt (`key`: to that address, started at backoff `generation`) or, with no key, a
  /// resolution failed.
  private func connectionAttemptFailed(_ error: ConnectionError, key: String?, generation: Int?) {
    connectFailures += 1
    lastFailure = error
    let delay: Duration?
    if let key {
      // Counted once for the channel: a failure of an attempt under way beside another that already failed
      // starts no backoff period of its own.
      delay = backoff.failed(key, generation: generation ?? 0, now: monotonicNanoseconds(), error: error) {
        failures in
        configuration.backoff.delay(retry: failures, using: &random)
      }
    } else {
      consecutiveFailures += 1
      let chosen = configuration.backoff.delay(retry: consecutiveFailures, using: &random)
      backoffUntil = monotonicNanoseconds() + chosen.nonNegativeNanoseconds
      delay = chosen
    }
    if let delay {
      recentBackoffDelays.append(delay)
      if recentBackoffDelays.count > 32 { recentBackoffDelays.removeFirst() }
    }
    logger.debug(
      "connection attempt failed",
      metadata: ["error": "\(error)", "retry_in": "\(delay.map { "\($0)" } ?? "backing off")"])
    // Another address may take the waiting calls.
    if key != nil {
      resolution.request()
      ensureConnecting()
      // Calls held for the connection that failed go to the ready ones.
      if connections.contains(where: { $0.canStartStream }) { drainWaiting() }
    }
    // Fail fast: calls waiting for a connection end UNAVAILABLE now, unless another
    // connection can still take them.
    if !connections.contains(where: isOpen) { failWaitingCalls(error) }
  }

  /// Another loop's attempt to a failing address, which this core waited for, ended: when it made a connection,
  /// this core connects too; when it failed and every address is backing off with no connection open here, the
  /// calls waiting here fail fast as the other loop's did.
  private func anotherAttemptEnded() {
    if hasWaiting, inTransientFailure() {
      let error = addresses.lazy.compactMap { self.backoff.lastError($0.key) }.first ?? lastFailure ?? .shutdown
      lastFailure = error
      failWaitingCalls(error)
    }
    ensureConnecting()
  }

  private func failWaitingCalls(_ error: ConnectionError) {
    for call in takeAllWaiting() {
      queuedCalls[call.id] = nil
      finishUnstarted(call, Self.unavailable(error))
    }
  }

  func connectionDidBecomeReady(_ connection: ClientConnection) {
    connectStarted[ObjectIdentifier(connection)] = nil
    attemptGenerations[ObjectIdentifier(connection)] = nil
    if let key = connectionKeys[ObjectIdentifier(connection)] { backoff.succeeded(key) }
    logger.debug("connection ready", metadata: ["connection": "\(connection.id)"])
    drainWaiting()
  }

  func connectionHasCapacity(_ connection: ClientConnection) {
    drainWaiting()
  }

  func connection(_ connection: ClientConnection, didCloseWithError error: ConnectionError?, wasReady: Bool) {
    let id = ObjectIdentifier(connection)
    connections.removeAll { $0 === connection }
    let key = connectionKeys.removeValue(forKey: id)
    connectStarted[id] = nil
    let drained = drainedConnections.remove(id) != nil
    let generation = attemptGenerations.removeValue(forKey: id)
    if !wasReady && !drained {
      // A clean close before the connection was ready is this side's (a graceful shutdown).
      connectionAttemptFailed(error ?? .shutdown, key: key ?? "", generation: generation)
    } else {
      logger.debug(
        "connection closed", metadata: ["connection": "\(connection.id)", "error": "\(error?.description ?? "none")"])
      // A connection lost under its calls: the servers may have moved.
      if error != nil && !shuttingDown { resolution.request() }
      ensureConnecting()
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
    // The server is going away (a rollout, a scale-down): its name may now say something else.
    if !shuttingDown { resolution.request() }
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
    if let comingUpTimer { loop.cancelTimer(comingUpTimer) }
    comingUpTimer = nil
    for call in takeAllWaiting() {
      queuedCalls[call.id] = nil
      finishUnstarted(call, Self.unavailable(.shutdown))
    }
    for connection in connections { connection.shutdown(graceful: graceful) }
    checkShutdownComplete()
  }

  private func checkShutdownComplete() {
    guard shuttingDown, activeCalls.isEmpty, !hasWaiting,
      !connections.contains(where: { $0.phase != .closed })
    else { return }
    let waiters = shutdownWaiters
    shutdownWaiters.removeAll()
    for waiter in waiters { waiter() }
  }

  /// This loop's counters; the channel adds up those of its loops.
  var stats: GRPCChannelStats {
    var connectionsPerAddress: [String: Int] = [:]
    var streamsPerAddress: [String: Int] = [:]
    var open = 0
    for connection in connections where connection.phase != .closed {
      open += 1
      let key = connectionKeys[ObjectIdentifier(connection)] ?? "?"
      connectionsPerAddress[key, default: 0] += 1
      streamsPerAddress[key, default: 0] += connection.activeStreamCount
    }
    return GRPCChannelStats(
      transport: GRPCTransportStatistics(
        openConnections: open, activeCalls: activeCalls.count, queuedCalls: queuedCalls.count,
        connectAttempts: connectAttempts, connectFailures: connectFailures, pingsSent: pingsSent,
        pingAcksReceived: pingAcksReceived, goAwaysReceived: goAwaysReceived, recentBackoffDelays: recentBackoffDelays,
        connectionsPerAddress: connectionsPerAddress),
      keepaliveInterval: keepaliveInterval,
      streamsPerAddress: streamsPerAddress,
      connectionsPerLoop: [open])
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

/// A snapshot of a channel's connections and calls: the figures every client transport gives
/// (``GRPCTransportStatistics``, read through as `stats.openConnections`, `stats.connectAttempts` …)
/// and the channel's own (keepalive, streams per address, loops, resolution failures, addresses).
@dynamicMemberLookup
public struct GRPCChannelStats: Sendable, Hashable {
  /// The transport's figures: connections, calls, connection attempts, pings, GOAWAYs, backoff delays,
  /// connections per address and resolutions.
  public var transport: GRPCTransportStatistics
  /// The keepalive interval in force (doubled after each `too_many_pings`), or `nil` without keepalive.
  public var keepaliveInterval: Duration?
  /// Calls holding a stream, per server address.
  public var streamsPerAddress: [String: Int] = [:]
  /// Open connections on each event loop of the channel's group, in the group's order.
  public var connectionsPerLoop: [Int] = []
  /// Resolutions that failed.
  public var resolutionFailures: Int = 0
  /// The addresses of the last successful resolution, in its order.
  public var addresses: [String] = []

  /// A snapshot of `transport`'s figures and the channel's own.
  public init(
    transport: GRPCTransportStatistics = GRPCTransportStatistics(), keepaliveInterval: Duration? = nil,
    streamsPerAddress: [String: Int] = [:], connectionsPerLoop: [Int] = [], resolutionFailures: Int = 0,
    addresses: [String] = []
  ) {
    self.transport = transport
    self.keepaliveInterval = keepaliveInterval
    self.streamsPerAddress = streamsPerAddress
    self.connectionsPerLoop = connectionsPerLoop
    self.resolutionFailures = resolutionFailures
    self.addresses = addresses
  }

  /// One of the transport's figures (`stats.openConnections` is `stats.transport.openConnections`).
  public subscript<Value>(dynamicMember keyPath: WritableKeyPath<GRPCTransportStatistics, Value>) -> Value {
    get { transport[keyPath: keyPath] }
    set { transport[keyPath: keyPath] = newValue }
  }
}
