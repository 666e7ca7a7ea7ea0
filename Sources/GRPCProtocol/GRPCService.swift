// Sources/GRPCProtocol/GRPCService.swift - the seam between a service and whatever serves it
//
// A service handles calls; a server hands them over. GRPCServer (HTTP/2 on nghttp2) is one server, an
// in-memory transport another (for tests, on a virtual clock). A service sees calls only through
// ``GRPCServerCallContext``, and runs on the call's scheduler.

/// One call as a service sees it. Every method runs on, and must be called on, ``scheduler``.
public protocol GRPCServerCallContext: AnyObject, Sendable {
  /// The method path, `/package.Service/Method`.
  var path: String { get }
  /// The request's custom metadata (credentials included: never log it).
  var requestMetadata: GRPCMetadata { get }
  /// The request's `:authority`.
  var authority: String { get }
  /// The request message (unary and server-streaming calls).
  var request: [UInt8] { get }
  /// The client's `grpc-timeout`, if it sent one.
  var timeout: Duration? { get }
  /// The client's address (a numeric host; "unknown" where a transport has none), for per-client limits.
  var peerAddress: String { get }
  /// Whether the call has ended (finished, reset, or cancelled by the client).
  var isClosed: Bool { get }
  /// Where the call's callbacks run and its timers fire.
  var scheduler: any GRPCScheduler { get }
  /// Bytes of responses handed over and not yet sent (flow control): a generator backs off while it is high.
  var outboundBufferedBytes: Int { get }

  /// Sends the response headers now (otherwise they go with the first message or the status).
  func sendHeaders(_ metadata: GRPCMetadata)
  /// Sends one response message.
  func send(_ message: [UInt8])
  /// Sends one response message from borrowed bytes.
  func send(bytes message: UnsafeRawBufferPointer)
  /// Ends the call with `status` and `trailers`.
  func finish(_ status: GRPCStatus, trailers: GRPCMetadata)
  /// Ends the stream abruptly (HTTP/2 RST_STREAM with `errorCode`; 8 is CANCEL).
  func reset(errorCode: HTTP2ErrorCode)
  /// Runs `handler` once if the client cancels the call (or its connection goes) before it finished.
  func onCancel(_ handler: @escaping () -> Void)
  /// Runs `body` on the scheduler after `delay`, whether or not the call has ended by then (check ``isClosed``): a
  /// service without a scheduler of its own keeps its timers through any call it holds.
  func schedule(after delay: Duration, _ body: @escaping () -> Void)
}

extension GRPCServerCallContext {
  /// Transports without addresses (in memory) have no peer to name.
  public var peerAddress: String { "unknown" }

  /// Ends the call with `status` and no trailers.
  public func finish(_ status: GRPCStatus) { finish(status, trailers: GRPCMetadata()) }
  /// Sends the response headers with no metadata.
  public func sendHeaders() { sendHeaders(GRPCMetadata()) }
}

/// Handles calls. ``handle(_:)`` runs on the call's scheduler and must not block it.
public protocol GRPCService: AnyObject, Sendable {
  /// A call arrived: answer it now or later, on ``GRPCServerCallContext/scheduler``.
  func handle(_ call: any GRPCServerCallContext)

  /// The largest request message the method at `path` takes, when it is smaller than the server's own
  /// limit: a server refuses a larger one (RESOURCE_EXHAUSTED) as soon as its length prefix arrives,
  /// before buffering any of it. Called on whatever thread reads the request; must not block. Default:
  /// nil (the server's limit).
  func maxRequestMessageSize(forMethod path: String) -> Int?
}

extension GRPCService {
  /// No limit of the service's own.
  public func maxRequestMessageSize(forMethod path: String) -> Int? { nil }
}
