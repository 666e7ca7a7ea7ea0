// Sources/NATSClient/NATSConnection.swift - a connection to a NATS server or cluster, its events, core publish/subscribe

internal import CNATS
package import Logging
internal import Primitives

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Something that happened to a connection, as libnats reported it.
package enum NATSConnectionEvent: Sendable, Hashable {
  /// The first connection was made in the background (only with `retryOnFailedConnect`).
  case connected(server: String?)
  /// The connection to the server was lost; libnats is reconnecting unless ``closed`` follows.
  case disconnected
  /// The connection is back, to `server`.
  case reconnected(server: String?)
  /// The server announced that it is about to shut down (lame duck mode); libnats moves to another server.
  case lameDuckMode
  /// The cluster announced servers that were not in the configured list.
  case serversDiscovered
  /// An error outside any call: a slow consumer dropped messages, missed heartbeats, a consumer sequence
  /// mismatch on a subscription (`subject` names the subscription: its subject, or its stream and consumer).
  case asynchronousError(NATSError, subject: String?)
  /// The connection is closed for good.
  case closed
}

/// Where a connection stands, as its last event left it.
package enum NATSConnectionState: Sendable, Hashable {
  /// The first connect is still being tried (only with `retryOnFailedConnect`).
  case connecting
  /// Connected to a server.
  case connected
  /// Lost the server; reconnecting.
  case reconnecting
  /// Closed for good.
  case closed
}

/// A connection to a NATS server or cluster (libnats' `natsConnection`).
///
/// ```swift
/// let connection = try await NATSConnection.connect(
///   NATSConnectionConfiguration(servers: ["nats://127.0.0.1:4222"], name: "relay-1"), logger: logger)
/// let jetStream = try connection.jetStream()
/// …
/// await connection.close()
/// ```
///
/// It reconnects by itself (see ``NATSConnectionConfiguration/reconnect``); ``events()`` reports what
/// happens. Dropping the last reference closes it; prefer ``close()`` or ``drain(timeout:)``, which wait.
package final class NATSConnection: Sendable {
  /// The configuration it was made with.
  package let configuration: NATSConnectionConfiguration
  let handle: ConnectionHandle
  let logger: Logger

  private init(configuration: NATSConnectionConfiguration, handle: ConnectionHandle, logger: Logger) {
    self.configuration = configuration
    self.handle = handle
    self.logger = logger
  }

  /// Connects to one of `configuration.servers`.
  ///
  /// Throws ``NATSError`` (``NATSError/Code/noServer`` when no server answers) unless
  /// `retryOnFailedConnect` is set; then it returns at once and keeps trying in the background.
  package static func connect(
    _ configuration: NATSConnectionConfiguration, logger: Logger
  ) async throws(NATSError) -> NATSConnection {
    guard !configuration.servers.isEmpty else {
      throw NATSError(code: .addressMissing, message: "connect: no server URL")
    }
    let sink = ConnectionEventSink(logger: logger)
    let id = connectionEventSinks.register(sink)
    do {
      let connection = try await BlockingThreadPool.shared.run { () throws(NATSError) -> UncheckedPointer in
        try UncheckedPointer(connectBlocking(configuration, closure: id.closure, sink: sink))
      }
      let handle = ConnectionHandle(connection.pointer, sinkID: id, sink: sink)
      logger.debug(
        "NATS connection made",
        metadata: ["servers": "\(configuration.redactedServers)", "name": "\(configuration.name ?? "")"])
      return NATSConnection(configuration: configuration, handle: handle, logger: logger)
    } catch {
      connectionEventSinks.remove(id)
      logger.debug("NATS connect failed", metadata: ["error": "\(error)"])
      throw error
    }
  }

  private static func connectBlocking(
    _ configuration: NATSConnectionConfiguration, closure: UnsafeMutableRawPointer, sink: ConnectionEventSink
  ) throws(NATSError) -> OpaquePointer {
    var optionsPointer: OpaquePointer?
    try checkStatus(natsOptions_Create(&optionsPointer), "connect: natsOptions_Create")
    guard let options = optionsPointer else { throw NATSError(code: .noMemory, message: "connect: no options") }
    // libnats clones the options in natsConnection_Connect, so they can go right after.
    defer { natsOptions_Destroy(options) }
    let arena = CStringArena()
    defer { arena.free() }

    let (servers, credentials) = try configuration.resolved()
    let urls = servers.map { "nats://\($0.host.contains(":") ? "[\($0.host)]" : $0.host):\($0.port)" }
    try checkStatus(
      natsOptions_SetServers(options, arena.copyArray(urls), Int32(urls.count)),
      "connect: servers \(servers.map(\.description))")
    try credentials.apply(to: options)
    if let tls = configuration.tls {
      try tls.apply(to: options)
    } else if servers.contains(where: { $0.scheme == "tls" }) {
      try NATSTLSConfiguration().apply(to: options)
    }
    if let name = configuration.name { try checkStatus(natsOptions_SetName(options, name), "connect: name") }
    try checkStatus(
      natsOptions_SetTimeout(options, configuration.connectTimeout.clampedMilliseconds), "connect: timeout")
    switch configuration.reconnect {
    case .disabled:
      try checkStatus(natsOptions_SetAllowReconnect(options, false), "connect: reconnect")
    case .forever(let wait):
      try checkStatus(natsOptions_SetAllowReconnect(options, true), "connect: reconnect")
      try checkStatus(natsOptions_SetMaxReconnect(options, -1), "connect: reconnect")
      try checkStatus(natsOptions_SetReconnectWait(options, wait.clampedMilliseconds), "connect: reconnect wait")
    case .attempts(let attempts, let wait):
      try checkStatus(natsOptions_SetAllowReconnect(options, true), "connect: reconnect")
      try checkStatus(natsOptions_SetMaxReconnect(options, Int32(clamping: max(attempts, 0))), "connect: reconnect")
      try checkStatus(natsOptions_SetReconnectWait(options, wait.clampedMilliseconds), "connect: reconnect wait")
    }
    let jitter = configuration.reconnectJitter.clampedMilliseconds
    try checkStatus(natsOptions_SetReconnectJitter(options, jitter, jitter), "connect: reconnect jitter")
    try checkStatus(
      natsOptions_SetReconnectBufSize(options, Int32(clamping: configuration.reconnectBufferSize)),
      "connect: reconnect buffer")
    try checkStatus(
      natsOptions_SetPingInterval(options, configuration.pingInterval.clampedMilliseconds), "connect: ping interval")
    try checkStatus(
      natsOptions_SetMaxPingsOut(options, Int32(clamping: configuration.maxPingsOutstanding)), "connect: pings")
    try checkStatus(natsOptions_SetNoRandomize(options, !configuration.randomizeServers), "connect: randomize")
    try checkStatus(
      natsOptions_SetFailRequestsOnDisconnect(options, configuration.failRequestsOnDisconnect),
      "connect: fail requests on disconnect")
    try checkStatus(
      natsOptions_SetMaxPendingMsgs(options, Int32(clamping: configuration.maxPendingMessagesPerSubscription)),
      "connect: max pending")

    try checkStatus(natsOptions_SetDisconnectedCB(options, disconnectedCallback, closure), "connect: callbacks")
    try checkStatus(natsOptions_SetReconnectedCB(options, reconnectedCallback, closure), "connect: callbacks")
    try checkStatus(natsOptions_SetClosedCB(options, closedCallback, closure), "connect: callbacks")
    try checkStatus(natsOptions_SetErrorHandler(options, asynchronousErrorCallback, closure), "connect: callbacks")
    try checkStatus(natsOptions_SetLameDuckModeCB(options, lameDuckModeCallback, closure), "connect: callbacks")
    try checkStatus(
      natsOptions_SetDiscoveredServersCB(options, discoveredServersCallback, closure), "connect: callbacks")
    if configuration.retryOnFailedConnect {
      try checkStatus(
        natsOptions_SetRetryOnFailedConnect(options, true, connectedCallback, closure), "connect: retry")
    }

    var connection: OpaquePointer?
    let status = natsConnection_Connect(&connection, options)
    if status == NATS_NOT_YET_CONNECTED, let connection {
      sink.setInitialState(.connecting)
      return connection
    }
    try checkStatus(status, "connect to \(servers.map(\.description))")
    guard let connection else { throw NATSError(code: .noMemory, message: "connect: no connection") }
    sink.setInitialState(.connected)
    return connection
  }

  // MARK: - State and events

  /// Where the connection stands, as its last event left it.
  package var state: NATSConnectionState { handle.sink.state }

  /// A stream of the connection's events from now on; it ends after ``NATSConnectionEvent/closed``.
  ///
  /// Each call makes a new stream; it keeps the newest `bufferingNewest` events when its reader falls behind.
  package func events(bufferingNewest: Int = 256) -> AsyncStream<NATSConnectionEvent> {
    handle.sink.makeStream(bufferingNewest: bufferingNewest)
  }

  /// The URL of the server the connection is on now (nil while disconnected).
  package func connectedServer() async -> String? {
    await BlockingThreadPool.shared.run { [handle] in handle.connectedServer() }
  }

  /// Every server libnats knows of: the configured ones and those the cluster announced.
  package func knownServers() async throws(NATSError) -> [String] {
    try await BlockingThreadPool.shared.run { [handle] () throws(NATSError) -> [String] in
      var servers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
      var count: Int32 = 0
      try checkStatus(natsConnection_GetServers(handle.pointer, &servers, &count), "known servers")
      guard let servers else { return [] }
      var result: [String] = []
      for index in 0..<Int(count) {
        if let server = servers[index] {
          result.append(NATSServerURL.redacted(String(cString: server)))
          free(server)
        }
      }
      free(servers)
      return result
    }
  }

  // MARK: - Closing

  /// Closes the connection now: pending publishes still in libnats' buffer are flushed, subscriptions end,
  /// and ``NATSConnectionEvent/closed`` is reported. Idempotent.
  package func close() async {
    let handle = handle
    handle.sink.closing()
    await BlockingThreadPool.shared.run { natsConnection_Close(handle.pointer) }
    handle.sink.markClosed()
  }

  /// Flushes everything published so far (acks included) to the server, then closes; returns once closed.
  ///
  /// Not libnats' own drain: in libnats 3.4.1, natsConnection_Drain never finishes draining a synchronous
  /// subscription nobody reads any more and always waits out its timeout, and every subscription here is
  /// synchronous (read with `fetch` and `next`). Messages a subscription received and nobody read are
  /// dropped on close; JetStream redelivers those that were not acked.
  package func drain(timeout: Duration = .seconds(30)) async throws(NATSError) {
    let handle = handle
    defer { handle.sink.markClosed() }
    try await BlockingThreadPool.shared.run { () throws(NATSError) in
      defer {
        handle.sink.closing()
        natsConnection_Close(handle.pointer)
      }
      let status = natsConnection_FlushTimeout(handle.pointer, max(timeout.clampedMilliseconds, 1))
      // Already closed: nothing left to flush.
      if status == NATS_CONNECTION_CLOSED { return }
      try checkStatus(status, "drain")
    }
  }

  // MARK: - Core NATS

  /// Waits until the server has processed everything published so far (a PING/PONG round trip).
  package func flush(timeout: Duration = .seconds(10)) async throws(NATSError) {
    let handle = handle
    try await BlockingThreadPool.shared.run { () throws(NATSError) in
      try checkStatus(natsConnection_FlushTimeout(handle.pointer, timeout.clampedMilliseconds), "flush")
    }
  }

  /// Publishes `message` with core NATS: at most once, to whoever subscribes now (no JetStream ack).
  package func publish(_ message: NATSMessage) async throws(NATSError) {
    let handle = handle
    try await BlockingThreadPool.shared.run { () throws(NATSError) in
      let native = try makeMessage(
        subject: message.subject, reply: message.replySubject, data: message.data, headers: message.headers,
        operation: "publish to \(message.subject)")
      defer { natsMsg_Destroy(native) }
      try checkStatus(natsConnection_PublishMsg(handle.pointer, native), "publish to \(message.subject)")
    }
  }

  /// Publishes `data` to `subject` with core NATS.
  package func publish(subject: String, data: [UInt8], headers: NATSHeaders = NATSHeaders()) async throws(NATSError) {
    try await publish(NATSMessage(subject: subject, data: data, headers: headers))
  }

  /// Sends a request and waits for the first reply, at most `timeout`.
  package func request(
    subject: String, data: [UInt8], headers: NATSHeaders = NATSHeaders(), timeout: Duration
  ) async throws(NATSError) -> NATSMessage {
    let handle = handle
    return try await BlockingThreadPool.shared.run { () throws(NATSError) -> NATSMessage in
      let native = try makeMessage(subject: subject, data: data, headers: headers, operation: "request to \(subject)")
      defer { natsMsg_Destroy(native) }
      var reply: OpaquePointer?
      try checkStatus(
        natsConnection_RequestMsg(&reply, handle.pointer, native, timeout.clampedMilliseconds), "request to \(subject)")
      guard let reply else { throw NATSError(code: .generic, message: "request to \(subject): no reply") }
      defer { natsMsg_Destroy(reply) }
      return NATSMessage(native: reply)
    }
  }

  /// Subscribes to `subject` (wildcards allowed); with a `queue`, the members of the queue group share the
  /// messages. Read with ``NATSSubscription/next(timeout:)``.
  package func subscribe(subject: String, queue: String? = nil) async throws(NATSError) -> NATSSubscription {
    let handle = handle
    let pointer = try await BlockingThreadPool.shared.run { () throws(NATSError) -> UncheckedPointer in
      try validateSubject(subject, operation: "subscribe")
      var subscription: OpaquePointer?
      if let queue {
        try checkStatus(
          natsConnection_QueueSubscribeSync(&subscription, handle.pointer, subject, queue),
          "subscribe to \(subject) in queue \(queue)")
      } else {
        try checkStatus(natsConnection_SubscribeSync(&subscription, handle.pointer, subject), "subscribe to \(subject)")
      }
      guard let subscription else { throw NATSError(code: .noMemory, message: "subscribe: no subscription") }
      return UncheckedPointer(subscription)
    }
    return NATSSubscription(
      subject: subject,
      handle: SubscriptionHandle(pointer.pointer, connection: handle, jetStream: nil, label: subject))
  }
}

// MARK: - Owning the libnats connection

/// A libnats object pointer carried from a pool thread to the task that waits for it.
struct UncheckedPointer: @unchecked Sendable {
  // @unchecked: the pointer is handed over once, from the pool thread that created the object to the
  // Swift object that owns it from then on.
  let pointer: OpaquePointer
  init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// Owns a `natsConnection`; destroys it (on a pool thread) when the last reference goes.
final class ConnectionHandle: @unchecked Sendable {
  // @unchecked: `pointer` is immutable and libnats' connection functions are thread-safe; it is destroyed
  // only in deinit, when no Swift object can still use it (subscriptions, contexts and messages retain this).
  let pointer: OpaquePointer
  let sinkID: CallbackID
  let sink: ConnectionEventSink

  init(_ pointer: OpaquePointer, sinkID: CallbackID, sink: ConnectionEventSink) {
    self.pointer = pointer
    self.sinkID = sinkID
    self.sink = sink
  }

  deinit {
    let pointer = UncheckedPointer(pointer)
    let sinkID = sinkID
    let sink = sink
    // natsConnection_Destroy closes first, which flushes and joins libnats' threads: not for the caller's thread.
    BlockingThreadPool.shared.submit {
      natsConnection_Destroy(pointer.pointer)
      sink.markClosed()
      connectionEventSinks.remove(sinkID)
    }
  }

  /// The URL of the current server; call on a pool thread (it takes the connection's lock).
  func connectedServer() -> String? { currentURL(pointer) }
}

// MARK: - Events from libnats' threads

/// Where a connection's callbacks go: its state, its event streams, the tasks waiting for it to close.
final class ConnectionEventSink: Sendable {
  private struct State {
    var connectionState: NATSConnectionState = .connecting
    var streams: [Int: AsyncStream<NATSConnectionEvent>.Continuation] = [:]
    var nextStream = 0
    var closeWaiters: [CheckedContinuation<Void, Never>] = []
    /// Set by ``closing()``: the disconnect that follows is ours, not a lost server.
    var closing = false
  }

  private let stateLock = Locked(State())
  let logger: Logger

  /// Notes that the connection is being closed on purpose (before natsConnection_Close).
  func closing() { stateLock.withLock { $0.closing = true } }

  init(logger: Logger) {
    self.logger = logger
  }

  var state: NATSConnectionState { stateLock.withLock { $0.connectionState } }

  func setInitialState(_ state: NATSConnectionState) {
    stateLock.withLock { if $0.connectionState != .closed { $0.connectionState = state } }
  }

  func makeStream(bufferingNewest: Int) -> AsyncStream<NATSConnectionEvent> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: NATSConnectionEvent.self, bufferingPolicy: .bufferingNewest(max(bufferingNewest, 1)))
    let key = stateLock.withLock { state -> Int? in
      guard state.connectionState != .closed else { return nil }
      let key = state.nextStream
      state.nextStream += 1
      state.streams[key] = continuation
      return key
    }
    guard let key else {
      continuation.yield(.closed)
      continuation.finish()
      return stream
    }
    // Set outside the lock: the handler takes it (and runs at once if the stream is already finished).
    continuation.onTermination = { [weak self] _ in
      let removed = self?.stateLock.withLock { $0.streams.removeValue(forKey: key) }
      withExtendedLifetime(removed) {}
    }
    return stream
  }

  /// Records and publishes `event`; called on libnats' threads (and by ``markClosed()``).
  func handle(_ event: NATSConnectionEvent) {
    let (streams, waiters, isNew) = stateLock.withLock {
      state -> ([AsyncStream<NATSConnectionEvent>.Continuation], [CheckedContinuation<Void, Never>], Bool) in
      if state.connectionState == .closed { return ([], [], false) }
      switch event {
      case .connected, .reconnected: state.connectionState = .connected
      case .disconnected: state.connectionState = .reconnecting
      case .closed: state.connectionState = .closed
      case .lameDuckMode, .serversDiscovered, .asynchronousError: break
      }
      let streams = Array(state.streams.values)
      guard case .closed = event else { return (streams, [], true) }
      state.streams.removeAll()
      let waiters = state.closeWaiters
      state.closeWaiters.removeAll()
      return (streams, waiters, true)
    }
    guard isNew else { return }
    if case .disconnected = event, stateLock.withLock({ $0.closing }) {
      logger.debug("NATS disconnected: closing")
    } else {
      log(event)
    }
    for stream in streams {
      stream.yield(event)
      if case .closed = event { stream.finish() }
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Marks the connection closed (after natsConnection_Close returned; libnats' own callback may come later).
  func markClosed() { handle(.closed) }

  func waitUntilClosed() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let closed = stateLock.withLock { state -> Bool in
        if state.connectionState == .closed { return true }
        state.closeWaiters.append(continuation)
        return false
      }
      if closed { continuation.resume() }
    }
  }

  private func log(_ event: NATSConnectionEvent) {
    switch event {
    case .connected(let server): logger.debug("NATS connected", metadata: ["server": "\(server ?? "?")"])
    case .disconnected: logger.warning("NATS disconnected; reconnecting")
    case .reconnected(let server): logger.info("NATS reconnected", metadata: ["server": "\(server ?? "?")"])
    case .lameDuckMode: logger.info("NATS server entered lame duck mode")
    case .serversDiscovered: logger.debug("NATS servers discovered")
    case .asynchronousError(let error, let subject):
      logger.warning("NATS asynchronous error", metadata: ["error": "\(error)", "subject": "\(subject ?? "")"])
    case .closed: logger.debug("NATS connection closed")
    }
  }
}

/// The sinks libnats' connection callbacks find through their closure.
let connectionEventSinks = CallbackRegistry<ConnectionEventSink>()

// The C callbacks. They run on libnats' connection-event thread; they only read the connection's URL
// (libnats documents that as allowed there) and hand the event over.

private let connectedCallback: natsConnectionHandler = { connection, closure in
  guard let sink = connectionEventSinks.target(for: closure) else { return }
  sink.handle(.connected(server: connection.flatMap(currentURL)))
}

private let disconnectedCallback: natsConnectionHandler = { _, closure in
  connectionEventSinks.target(for: closure)?.handle(.disconnected)
}

private let reconnectedCallback: natsConnectionHandler = { connection, closure in
  guard let sink = connectionEventSinks.target(for: closure) else { return }
  sink.handle(.reconnected(server: connection.flatMap(currentURL)))
}

private let closedCallback: natsConnectionHandler = { _, closure in
  connectionEventSinks.target(for: closure)?.handle(.closed)
}

private let lameDuckModeCallback: natsConnectionHandler = { _, closure in
  connectionEventSinks.target(for: closure)?.handle(.lameDuckMode)
}

private let discoveredServersCallback: natsConnectionHandler = { _, closure in
  connectionEventSinks.target(for: closure)?.handle(.serversDiscovered)
}

private let asynchronousErrorCallback: natsErrHandler = { _, subscription, status, closure in
  guard let sink = connectionEventSinks.target(for: closure) else { return }
  // libnats 3.4.1 does not retain the subscription for this callback (it may be freed already): named
  // from our own table, never read.
  let subject = subscription.flatMap { SubscriptionHandle.label(of: $0) }
  let error = NATSError(
    code: NATSError.Code(rawValue: status.rawValue),
    message: "asynchronous: \(String(cString: natsStatus_GetText(status)))")
  sink.handle(.asynchronousError(error, subject: subject))
}

/// The URL of the server `connection` is on (nil while disconnected); takes the connection's lock.
private func currentURL(_ connection: OpaquePointer) -> String? {
  var buffer = [CChar](repeating: 0, count: 512)
  let status = buffer.withUnsafeMutableBufferPointer {
    natsConnection_GetConnectedUrl(connection, $0.baseAddress, $0.count)
  }
  guard status == NATS_OK else { return nil }
  let url = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  // Never with user information, whatever libnats kept (servers the cluster announced carry none, and
  // configured ones are given without).
  return url.isEmpty ? nil : NATSServerURL.redacted(url)
}
