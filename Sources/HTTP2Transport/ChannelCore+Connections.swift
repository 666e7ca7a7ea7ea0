// Sources/HTTP2Transport/ChannelCore+Connections.swift - a pool part's connections: making them, and what they report
//
// When a pool part connects and to which address (a connection to every address, more to the least connected while
// calls wait, none to an address its subchannel holds off), what a resolution changes (new addresses, drained
// ones), and the connections' reports (ready, capacity, closed, GOAWAY, pings). Calls and shutdown are in
// ChannelCore.swift.

import GRPCProtocol
import Logging
import Primitives

/// What a pool part knows of one of its connections.
struct ConnectionRecord {
  let connection: ClientConnection
  /// The address it goes to (its subchannel's key).
  let key: String
  /// When it started connecting (monotonic nanoseconds), while it connects.
  var connectStarted: UInt64?
  /// The subchannel's backoff generation the attempt started at, while it connects.
  var generation: Int?
  /// Drained because its address left the resolution: its close is no failure.
  var drained = false

  /// Connecting or ready (not draining, not closed).
  var isOpen: Bool { connection.phase == .ready || connection.phase == .connecting }
}

extension ChannelCore {
  // MARK: - Connections

  private func record(of connection: ClientConnection) -> Int? {
    records.firstIndex { $0.connection === connection }
  }

  /// Whether an address of the resolution has no connection connecting or ready.
  func hasUncoveredAddress() -> Bool {
    guard !addresses.isEmpty else { return false }
    let open = records.filter(\.isOpen)
    guard open.count < maxConnections else { return false }
    let covered = Set(open.map(\.key))
    return addresses.contains { !covered.contains($0.key) }
  }

  /// Opens connections while there are calls to carry: one to every address that has none (up to this loop's share
  /// of maxConnections), and one more to the least-connected address when calls still wait and none is connecting.
  /// Addresses backing off are skipped (a timer comes back).
  func ensureConnecting() {
    guard !shuttingDown, !queue.isEmpty || !activeCalls.isEmpty else { return }
    let now = monotonicNanoseconds()
    guard !addresses.isEmpty else {
      if now < resolutionRetryAt {
        scheduleBackoffTimer(until: resolutionRetryAt, now: now)
      } else {
        resolution.request()
      }
      return
    }
    var perAddress: [String: Int] = [:]
    var openCount = 0
    for record in records where record.isOpen {
      openCount += 1
      perAddress[record.key, default: 0] += 1
    }
    var earliestRetry: UInt64?
    /// Connects unless the address's subchannel says to wait.
    func connectIfAllowed(_ endpoint: ResolvedEndpoint) -> Bool {
      let core = LoopBound(self, loop: loop)
      let start = subchannels[endpoint.key].start(now: now) { core.loop.execute { core.value.anotherAttemptEnded() } }
      switch start {
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
    if !queue.isEmpty, openCount < maxConnections, !records.contains(where: { $0.connection.phase == .connecting }) {
      var choice: ResolvedEndpoint?
      for offset in 0..<addresses.count {
        let endpoint = addresses[(cursor + offset) % addresses.count]
        let until = subchannels[endpoint.key].backingOffUntil
        if until > now {
          earliestRetry = min(earliestRetry ?? until, until)
          continue
        }
        if let current = choice, perAddress[current.key, default: 0] <= perAddress[endpoint.key, default: 0] {
          continue
        }
        choice = endpoint
      }
      if let choice, connectIfAllowed(choice) { cursor += 1 }
    }
    if let earliestRetry { scheduleBackoffTimer(until: earliestRetry, now: now) }
  }

  private func scheduleBackoffTimer(until: UInt64, now: UInt64) {
    guard backoffTimer == nil else { return }
    backoffTimer = loop.scheduleTimer(after: .nanoseconds(Int64(until - now))) { [weak self] in
      guard let self else { return }
      self.backoffTimer = nil
      if !self.queue.isEmpty { self.ensureConnecting() }
    }
  }

  private func connect(to endpoint: ResolvedEndpoint, generation: Int) {
    let connection = ClientConnection(
      loop: loop, id: nextConnectionID, address: endpoint.address, authority: authority,
      configuration: configuration, logger: logger)
    nextConnectionID += 1
    connection.delegate = self
    records.append(
      ConnectionRecord(
        connection: connection, key: endpoint.key, connectStarted: monotonicNanoseconds(), generation: generation))
    counters.connectAttempts += 1
    logger.debug("connecting", metadata: ["address": "\(endpoint.key)", "connection": "\(connection.id)"])
    connection.connect(tlsContext: tlsContext, serverName: serverName)
  }

  /// A resolution's outcome, from ``NameResolution`` (the same for every core of the channel); after a failure,
  /// `retryAfter` is the resolution's backoff delay.
  func resolved(_ result: Result<[ResolvedEndpoint], ConnectionError>, retryAfter: Duration?) {
    guard !shuttingDown else { return }
    switch result {
    case .success(let found):
      let keys = Set(found.map(\.key))
      addresses = found
      resolutionRetryAt = 0
      subchannels.retain(keys)
      // Addresses gone from the resolution: their connections drain (GOAWAY; their calls finish).
      for index in records.indices where records[index].connection.phase != .closed {
        guard !keys.contains(records[index].key), !records[index].drained else { continue }
        logger.debug("address removed by the resolver: draining", metadata: ["address": "\(records[index].key)"])
        records[index].drained = true
        records[index].connection.shutdown(graceful: true)
      }
      ensureConnecting()
    case .failure(let error):
      guard addresses.isEmpty else {
        // Keep using the addresses of the last good resolution.
        return logger.debug("resolution failed; keeping the last addresses", metadata: ["error": "\(error)"])
      }
      let delay = retryAfter ?? configuration.backoff.initial
      resolutionRetryAt = monotonicNanoseconds() + delay.nonNegativeNanoseconds
      attemptFailed(error, delay: delay, address: nil)
    }
  }

  /// A connection attempt to `address` or, with none, a resolution failed; `delay` is the backoff it started (nil:
  /// another failure had already started it).
  private func attemptFailed(_ error: ConnectionError, delay: Duration?, address: String?) {
    counters.connectFailures += 1
    lastFailure = error
    if let delay { counters.backedOff(delay) }
    logger.debug(
      "connection attempt failed",
      metadata: ["error": "\(error)", "retry_in": "\(delay.map { "\($0)" } ?? "backing off")"])
    if address != nil {
      // Another address may take the waiting calls; calls held for this one go to the ready ones.
      resolution.request()
      ensureConnecting()
      if records.contains(where: { $0.connection.canStartStream }) { drainWaiting() }
    }
    // Fail fast: calls waiting for a connection end UNAVAILABLE now, unless another connection can still take them.
    if !records.contains(where: \.isOpen) { failWaitingCalls(error) }
  }

  /// Another loop's attempt to a failing address, which this core waited for, ended: when it made a connection,
  /// this core connects too; when it failed and every address is backing off with no connection open here, the
  /// calls waiting here fail fast as the other loop's did.
  private func anotherAttemptEnded() {
    if !queue.isEmpty, inTransientFailure() {
      let error = addresses.lazy.compactMap { self.subchannels[$0.key].lastError }.first ?? lastFailure ?? .shutdown
      lastFailure = error
      failWaitingCalls(error)
    }
    ensureConnecting()
  }

  private func failWaitingCalls(_ error: ConnectionError) {
    for call in queue.removeAll() { finishUnstarted(call, Self.unavailable(error)) }
  }

  func connectionDidBecomeReady(_ connection: ClientConnection) {
    if let index = record(of: connection) {
      records[index].connectStarted = nil
      records[index].generation = nil
      subchannels[records[index].key].succeeded()
    }
    logger.debug("connection ready", metadata: ["connection": "\(connection.id)"])
    drainWaiting()
  }

  func connectionHasCapacity(_ connection: ClientConnection) {
    drainWaiting()
  }

  func connection(_ connection: ClientConnection, didCloseWithError error: ConnectionError?, wasReady: Bool) {
    guard let index = record(of: connection) else { return checkShutdownComplete() }
    let record = records.remove(at: index)
    if !wasReady && !record.drained {
      // A clean close before the connection was ready is this side's (a graceful shutdown). Counted once for the
      // channel: a failure beside another that already failed starts no backoff period of its own.
      let failure = error ?? .shutdown
      let delay = subchannels[record.key].failed(
        generation: record.generation ?? 0, now: monotonicNanoseconds(), error: failure)
      attemptFailed(failure, delay: delay, address: record.key)
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
    if ack { counters.pingAcksReceived += 1 } else { counters.pingsSent += 1 }
  }

  func connectionReceivedGoAway(_ connection: ClientConnection) {
    counters.goAwaysReceived += 1
    // The server is going away (a rollout, a scale-down): its name may now say something else.
    if !shuttingDown { resolution.request() }
  }

  func connectionReceivedTooManyPings(_ connection: ClientConnection) {
    guard let interval = keepaliveInterval else { return }
    // As grpc-go does: the server's ping policy is stricter than our interval; double it for every later
    // connection (this one is closing).
    keepaliveInterval = interval * 2
    logger.warning(
      "the server sent GOAWAY ENHANCE_YOUR_CALM too_many_pings; keepalive interval doubled",
      metadata: ["connection": "\(connection.id)", "interval": "\(interval * 2)"])
  }

  func connection(_ connection: ClientConnection, serverAcceptsEncodings encodings: [String]) {
    serverEncodings.update(encodings)
  }
}
