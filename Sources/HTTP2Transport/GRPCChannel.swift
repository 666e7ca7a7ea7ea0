// Sources/HTTP2Transport/GRPCChannel.swift - the public gRPC client channel

public import GRPCProtocol
public import Logging
import Primitives
import Synchronization
import TLSCrypto

/// A gRPC client channel to one target, over HTTP/2 (nghttp2) with TLS (OpenSSL)
/// or, when explicitly chosen, cleartext h2c.
///
/// A channel runs every connection, stream and call state machine it has on the event loops of
/// its ``GRPCEventLoopGroup`` (a loop of its own unless configured): each loop holds its own part
/// of the connection pool, spread over every address the target resolves to. Every gRPC call kind is available:
/// - ``unary(path:request:options:)``: `async`, returns the response or throws ``GRPCError``;
/// - ``serverStreaming(path:request:options:)``: an `AsyncSequence` of response messages,
///   with flow control: a consumer that stops reading stops the stream's window updates;
/// - ``clientStreaming(path:options:requestProducer:)``: requests written by a closure through
///   a ``GRPCRequestWriter``, one response;
/// - ``bidirectionalStreaming(path:options:requestProducer:onResponse:)``: requests written by
///   one closure while another reads the responses;
/// - ``makeStreamingCall(path:kind:options:)``: the same two without closures, for callers that
///   interleave writes and reads themselves;
/// - ``startCall(path:request:kind:options:handler:)``: callbacks on the loop thread,
///   with no task hop and no copy per message, for the hot path.
///
/// Every kind follows the same rules: the deadline (``CallOptions/timeout``) covers the whole
/// call, writes included; cancelling (or cancelling the task) resets the stream with CANCEL;
/// responses are flow-controlled by their consumer and requests by the server's window
/// (a writer waits while more than 64 KiB of its requests are unsent); the status is decided
/// once and only what the server sent (or a local failure) decides it.
///
/// Messages are raw bytes: callers encode and decode them (see `FleetEngineMessages`).
/// Call ``shutdown()`` (graceful) or ``close()`` when done.
public final class GRPCChannel: GRPCClientTransport, Sendable {
  /// The target's host: its DNS name, or the first address of a list.
  public let host: String
  /// The target's port (of its first address, for a list).
  public let port: Int
  /// Where the channel's servers are.
  public let target: GRPCTarget
  /// The configuration the channel was made with.
  public let configuration: GRPCChannelConfiguration
  /// The event loops the channel runs on: the configured group, or one of its own.
  public let eventLoopGroup: GRPCEventLoopGroup

  /// The pool's parts, one per loop of the group, in the group's order.
  let cores: [LoopBound<ChannelCore>]
  private let ownsGroup: Bool
  private let resolution: NameResolution
  private let nextCallID = Atomic<UInt64>(1)
  private let nextCore = Atomic<Int>(0)
  private let closed = Atomic<Bool>(false)
  private let serverEncodings = ServerEncodings()

  /// Creates a channel to `host:port` (resolved through DNS, or used as it is when numeric). No
  /// connection is made until the first call.
  ///
  /// - Throws: ``GRPCError`` with code `INVALID_ARGUMENT` when the TLS settings
  ///   cannot be loaded (a missing CA file, a key that doesn't match its certificate).
  public convenience init(
    host: String,
    port: Int,
    configuration: GRPCChannelConfiguration = .init(),
    logger: Logger = Logger(label: "journeysharing.grpc", factory: { _ in SwiftLogNoOpLogHandler() })
  ) throws(GRPCError) {
    try self.init(target: .dns(host: host, port: port), configuration: configuration, logger: logger)
  }

  /// Creates a channel to a target in gRPC's name syntax (``GRPCTarget``): `dns:///NAME:PORT`,
  /// `ipv4:ADDR:PORT,…`, `ipv6:[ADDR]:PORT,…` or a bare `HOST:PORT`. No connection is made until the
  /// first call.
  ///
  /// - Throws: ``GRPCError`` with code `INVALID_ARGUMENT` when the target does not parse or the TLS
  ///   settings cannot be loaded.
  public convenience init(
    target: String,
    configuration: GRPCChannelConfiguration = .init(),
    logger: Logger = Logger(label: "journeysharing.grpc", factory: { _ in SwiftLogNoOpLogHandler() })
  ) throws(GRPCError) {
    try self.init(target: try GRPCTarget(parsing: target), configuration: configuration, logger: logger)
  }

  /// Creates a channel to `target`, whose addresses come from `resolver` (by default the target's
  /// own: DNS, or its fixed list). No connection is made until the first call.
  ///
  /// The channel resolves the target when it first needs a connection, after a connection attempt
  /// fails, after a connection is lost or gets GOAWAY, when the resolver reports a change, and every
  /// ``GRPCChannelConfiguration/resolutionInterval`` while in use. Connections are spread over every
  /// address; an address that disappears is drained (GOAWAY; its calls finish).
  ///
  /// - Parameters:
  ///   - target: The servers; its host is the default `:authority` and TLS server name.
  ///   - resolver: Where the addresses come from, when not from `target` (for example a
  ///     ``GRPCStaticResolver`` the caller updates, or a resolver of its own).
  /// - Throws: ``GRPCError`` with code `INVALID_ARGUMENT` when the TLS settings cannot be loaded.
  public init(
    target: GRPCTarget,
    resolver: (any GRPCNameResolver)? = nil,
    configuration: GRPCChannelConfiguration = .init(),
    logger: Logger = Logger(label: "journeysharing.grpc", factory: { _ in SwiftLogNoOpLogHandler() })
  ) throws(GRPCError) {
    let host = target.primaryHost
    let port = target.primaryPort
    self.host = host
    self.port = port
    self.target = target
    self.configuration = configuration
    var tlsContext: TLSContext?
    switch configuration.security {
    case .plaintext:
      logger.notice(
        "gRPC channel uses plaintext HTTP/2 (h2c): no TLS, no server verification",
        metadata: ["target": "\(target.logDescription)"])
    case .tls(let tls):
      do {
        tlsContext = try TLSContext(client: tls)
      } catch {
        throw GRPCError(code: .invalidArgument, message: "TLS configuration: \(error.description)")
      }
    }
    let group = configuration.eventLoopGroup ?? GRPCEventLoopGroup(loopCount: 1, name: "grpc-\(host):\(port)")
    self.eventLoopGroup = group
    self.ownsGroup = configuration.eventLoopGroup == nil
    let resolution = NameResolution(
      resolver: resolver ?? target.makeResolver(), name: host, interval: configuration.resolutionInterval,
      backoff: configuration.backoff, logger: logger)
    self.resolution = resolution
    let loops = group.loops
    let serverEncodings = serverEncodings
    let subchannels = Subchannels(backoff: configuration.backoff)
    // maxConnections shared out between the loops, at least one each.
    self.cores = loops.enumerated().map { index, loop in
      let share =
        configuration.maxConnections / loops.count + (index < configuration.maxConnections % loops.count ? 1 : 0)
      return LoopBound(
        unchecked: ChannelCore(
          loop: loop, loopIndex: index, maxConnections: max(1, share), host: host, port: port,
          configuration: configuration, tlsContext: tlsContext, serverEncodings: serverEncodings,
          resolution: resolution, subchannels: subchannels, logger: logger),
        loop: loop)
    }
    resolution.attach(cores)
  }

  deinit {
    resolution.close()
    if !closed.load(ordering: .acquiring) {
      for core in cores {
        core.loop.execute { core.value.shutdown(graceful: false) {} }
      }
    }
    if ownsGroup { eventLoopGroup.shutdown() }
  }

  /// The core of `scheduler` when it is one of the group's loops; otherwise the next, round robin.
  private func core(for scheduler: (any GRPCScheduler)?) -> LoopBound<ChannelCore> {
    if cores.count == 1 { return cores[0] }
    if let scheduler, let index = eventLoopGroup.index(of: scheduler) { return cores[index] }
    return cores[nextCore.add(1, ordering: .relaxed).oldValue % cores.count]
  }

  // MARK: - Calls

  /// Starts a call whose response parts go to `handler` on one of the channel's event loops (the
  /// next one, round robin).
  ///
  /// - Parameters:
  ///   - path: The method path, `/package.Service/Method`.
  ///   - request: The serialized request message.
  ///   - kind: Unary or server streaming.
  ///   - options: Timeout, metadata, limits for this call.
  ///   - handler: Receives headers, each message, and the final status exactly once.
  /// - Returns: A handle that cancels the call.
  @discardableResult
  public func startCall(
    path: String,
    request: [UInt8],
    kind: GRPCCallKind,
    options: CallOptions = .init(),
    handler: any GRPCCallHandler
  ) -> GRPCCallHandle {
    startCall(path: path, request: request, kind: kind, options: options, handler: handler, receiver: nil).handle
  }

  /// Starts a call whose response parts go to `handler` on `scheduler`, one of ``schedulers``: the
  /// call runs on a connection of that loop. A scheduler that is not one of the channel's loops
  /// gets the next loop, round robin (and the handler is called there).
  public func startCall(
    path: String, request: [UInt8], kind: GRPCCallKind, options: CallOptions, on scheduler: any GRPCScheduler,
    handler: any GRPCCallHandler
  ) -> GRPCCallHandle {
    assert(eventLoopGroup.index(of: scheduler) != nil, "a call started on a scheduler that is not the channel's")
    return startCall(
      path: path, request: request, kind: kind, options: options, handler: handler, receiver: nil,
      scheduler: scheduler
    ).handle
  }

  /// Starts a call of any kind. `request` is the single request of a unary or server-streaming
  /// call (or `nil` for a request-streaming one: write with ``GRPCRequestWriter``); `receiver`
  /// is set when the handler takes messages as they arrived and returns window itself.
  func startCall(
    path: String, request: [UInt8]?, kind: GRPCCallKind, options: CallOptions, handler: any GRPCCallHandler,
    receiver: (any GRPCMessageReceiver)?, scheduler: (any GRPCScheduler)? = nil
  ) -> (
    handle: GRPCCallHandle, call: LoopBound<PendingCall>?, encoding: GRPCCompressionAlgorithm,
    core: LoopBound<ChannelCore>
  ) {
    let id = nextCallID.add(1, ordering: .relaxed).oldValue
    let core = core(for: scheduler)
    let handle = GRPCCallHandle(
      cancel: { core.loop.execute { core.value.cancel(callID: id) } },
      release: { bytes in core.loop.execute { core.value.release(callID: id, bytes: bytes) } },
      abort: { status in core.loop.execute { core.value.abort(callID: id, status: status) } })
    guard GRPCRequestHead.isValidMethodPath(path) else {
      handler.callDidFinish(
        status: GRPCStatus(code: .invalidArgument, message: "invalid method path \(path)"), trailers: GRPCMetadata())
      return (handle, nil, .identity, core)
    }
    var deadline: UInt64?
    if let timeout = options.timeout {
      let nanos = timeout.nonNegativeNanoseconds
      deadline = nanos == 0 ? 0 : monotonicNanoseconds() &+ nanos
    }
    let encoding = serverEncodings.negotiate(options.compression ?? configuration.compression.requestEncoding)
    var single: [UInt8]?
    if let request {
      do {
        single = try GRPCMessageFramer.framed(request, compressedWith: encoding)
      } catch {
        handler.callDidFinish(status: error.status, trailers: GRPCMetadata())
        return (handle, nil, encoding, core)
      }
    }
    let call = PendingCall(
      id: id, path: path, kind: kind, singleRequest: single, options: options, handler: handler, receiver: receiver,
      deadline: deadline, requestEncoding: encoding)
    let boxed = LoopBound(unchecked: call, loop: core.loop)
    core.loop.execute { core.value.start(boxed.value) }
    return (handle, boxed, encoding, core)
  }

  /// Makes a unary call.
  ///
  /// - Returns: The response message with the response headers and trailers.
  /// - Throws: ``GRPCError`` for any status other than OK; task cancellation cancels the call (CANCELLED).
  public func unary(
    path: String,
    request: [UInt8],
    options: CallOptions = .init()
  ) async throws(GRPCError) -> GRPCUnaryResponse {
    try await awaitUnaryResponse { handler in
      startCall(path: path, request: request, kind: .unary, options: options, handler: handler, receiver: nil).handle
    }.get()
  }

  /// Starts a server-streaming call; iterate the result for the response messages.
  ///
  /// The sequence ends after the last message when the status is OK, and throws
  /// ``GRPCError`` otherwise. Dropping it before the end cancels the call.
  public func serverStreaming(
    path: String,
    request: [UInt8],
    options: CallOptions = .init()
  ) -> GRPCServerStreamingResponse {
    let response = GRPCServerStreamingResponse(
      maxReceiveMessageSize: options.maxReceiveMessageSize ?? configuration.maxReceiveMessageSize)
    let started = startCall(
      path: path, request: request, kind: .serverStreaming, options: options, handler: response.receiver,
      receiver: response.receiver)
    response.receiver.setHandle(started.handle)
    return response
  }

  /// Starts a call whose requests are written one by one: ``GRPCStreamingCall/requests`` writes
  /// them (and ends them with ``GRPCRequestWriter/finish()``), ``GRPCStreamingCall/responses``
  /// reads what comes back, concurrently.
  ///
  /// Prefer ``clientStreaming(path:options:requestProducer:)`` and
  /// ``bidirectionalStreaming(path:options:requestProducer:onResponse:)``, which scope the
  /// call's lifetime to closures; this form suits callers that interleave writes and reads by
  /// hand (a ping-pong). Dropping the call (and its response) before its end cancels it.
  ///
  /// - Parameter kind: `.bidirectionalStreaming` (any number of responses) or `.clientStreaming`
  ///   (exactly one); the other kinds work too, with their own response rules.
  public func makeStreamingCall(
    path: String,
    kind: GRPCCallKind = .bidirectionalStreaming,
    options: CallOptions = .init()
  ) -> GRPCStreamingCall {
    let response = GRPCServerStreamingResponse(
      maxReceiveMessageSize: options.maxReceiveMessageSize ?? configuration.maxReceiveMessageSize)
    let started = startCall(
      path: path, request: nil, kind: kind, options: options, handler: response.receiver, receiver: response.receiver)
    response.receiver.setHandle(started.handle)
    let writer = GRPCRequestWriter(
      call: started.call, core: started.core, encoding: started.encoding, handle: started.handle)
    return GRPCStreamingCall(requests: writer, responses: response)
  }

  /// Makes a client-streaming call: `requestProducer` writes the requests, and the call's one
  /// response is returned once the server sends its status.
  ///
  /// The request side ends (half-close) when `requestProducer` returns. If it throws first, the
  /// call is cancelled (RST_STREAM(CANCEL)) and its error is rethrown. If the call ends first
  /// (the server answered early, failed it, or the deadline passed), the producer's task is
  /// cancelled and its writes throw; the call's outcome is what this method returns or throws.
  /// Cancelling the calling task cancels the call.
  ///
  /// ```swift
  /// let response = try await channel.clientStreaming(path: "/pkg.Service/Upload") { writer in
  ///   for chunk in chunks { try await writer.write(chunk) }   // waits while the server is slow
  /// }
  /// ```
  ///
  /// - Throws: ``GRPCError`` for any status other than OK, or the error `requestProducer` threw.
  public func clientStreaming(
    path: String,
    options: CallOptions = .init(),
    requestProducer: @escaping @Sendable (GRPCRequestWriter) async throws -> Void
  ) async throws -> GRPCUnaryResponse {
    let call = makeStreamingCall(path: path, kind: .clientStreaming, options: options)
    return try await call.run(requestProducer: requestProducer) { responses in
      var message: GRPCReceivedMessage?
      while let received = try await responses.nextReceivedMessage() { message = received }
      let result = await responses.result()
      return GRPCUnaryResponse(
        message: message?.bytes ?? [], headers: result.headers, trailers: result.trailers,
        compression: message?.compression)
    }
  }

  /// Makes a bidirectional-streaming call: `requestProducer` writes requests while
  /// `onResponse` reads the responses, concurrently; returns what `onResponse` returns.
  ///
  /// The request side ends (half-close) when `requestProducer` returns. The call is scoped to
  /// `onResponse`: when it returns before the call ended, the call is cancelled; when it throws,
  /// the call is cancelled and the error rethrown. If `requestProducer` throws, the call is
  /// cancelled (so `onResponse`'s iteration ends with CANCELLED) and the producer's error is
  /// rethrown. Cancelling the calling task cancels the call.
  ///
  /// ```swift
  /// let count = try await channel.bidirectionalStreaming(path: "/pkg.Chat/Talk") { writer in
  ///   try await writer.write(hello)
  /// } onResponse: { responses in
  ///   var count = 0
  ///   for try await _ in responses { count += 1 }   // throws GRPCError unless the call ends OK
  ///   return count
  /// }
  /// ```
  public func bidirectionalStreaming<Result: Sendable>(
    path: String,
    options: CallOptions = .init(),
    requestProducer: @escaping @Sendable (GRPCRequestWriter) async throws -> Void,
    onResponse: (GRPCStreamingResponse) async throws -> Result
  ) async throws -> Result {
    let call = makeStreamingCall(path: path, kind: .bidirectionalStreaming, options: options)
    return try await call.run(requestProducer: requestProducer, onResponse: onResponse)
  }

  // MARK: - The transport seam

  /// The group's loops: a call started on one runs on a connection of that loop.
  public var schedulers: [any GRPCScheduler] { eventLoopGroup.schedulers }

  // MARK: - Lifecycle

  /// Stops taking calls, lets the open ones finish, then closes every connection (GOAWAY). A group
  /// of the channel's own stops with it; a shared group keeps running.
  public func shutdown() async {
    guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    resolution.close()
    await withTaskGroup(of: Void.self) { tasks in
      for core in cores {
        tasks.addTask {
          await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.loop.execute { core.value.shutdown(graceful: true) { continuation.resume() } }
          }
        }
      }
    }
  }

  /// Fails every call UNAVAILABLE and closes every connection now.
  public func close() {
    guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    resolution.close()
    for core in cores {
      core.loop.execute { core.value.shutdown(graceful: false) {} }
    }
  }

  /// Connections and calls right now, over every loop: the figures every transport gives, and the channel's
  /// own (keepalive, streams per address, connections per loop, resolutions, addresses).
  public func statistics() async -> GRPCTransportStatistics {
    var total = GRPCTransportStatistics()
    for core in cores {
      let part = await withCheckedContinuation { continuation in
        core.loop.execute { continuation.resume(returning: core.value.statistics) }
      }
      total.openConnections += part.openConnections
      total.activeCalls += part.activeCalls
      total.queuedCalls += part.queuedCalls
      total.connectAttempts += part.connectAttempts
      total.connectFailures += part.connectFailures
      total.pingsSent += part.pingsSent
      total.pingAcksReceived += part.pingAcksReceived
      total.goAwaysReceived += part.goAwaysReceived
      total.recentBackoffDelays += part.recentBackoffDelays
      if let interval = part.keepaliveInterval {
        total.keepaliveInterval = max(total.keepaliveInterval ?? interval, interval)
      }
      total.connectionsPerAddress.merge(part.connectionsPerAddress, uniquingKeysWith: +)
      total.streamsPerAddress.merge(part.streamsPerAddress, uniquingKeysWith: +)
      total.connectionsPerLoop += part.connectionsPerLoop
    }
    let counts = resolution.counts
    total.resolutions = counts.resolutions
    total.resolutionFailures = counts.failures
    total.addresses = counts.addresses
    return total
  }
}
