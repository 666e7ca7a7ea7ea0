// Sources/GRPCProtocol/GRPCCallHandler.swift - the callback form of a call, as every transport gives it

/// Receives one call's response parts, on the scheduler the call was started on (an event loop thread).
///
/// This is the cheapest way to consume responses (no task hop, no copy: a
/// message is lent for the duration of the callback), meant for the hot path
/// of following many trips. Callbacks must return quickly and must not block:
/// they run on the thread that serves every call of the connection.
///
/// Compressed responses arrive decompressed; a message that does not decompress,
/// or exceeds the receive limit once decompressed, ends the call instead.
///
/// Not `Sendable`: a handler is confined to the scheduler its call runs on, which calls it; the transport carries it
/// there without the handler having to claim it is safe to share.
public protocol GRPCCallHandler: AnyObject {
  /// The response headers arrived (not called for a Trailers-Only response).
  func callDidReceiveHeaders(_ headers: GRPCMetadata)
  /// One response message; the buffer is valid only during the call.
  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer)
  /// One response message, with the encoding it arrived compressed with (`nil`: it arrived
  /// uncompressed). The default calls ``callDidReceiveMessage(_:)``.
  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer, compression: GRPCCompressionAlgorithm?)
  /// The call ended with `status`; nothing more follows.
  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata)
}

extension GRPCCallHandler {
  public func callDidReceiveHeaders(_ headers: GRPCMetadata) {}

  public func callDidReceiveMessage(_ message: UnsafeRawBufferPointer, compression: GRPCCompressionAlgorithm?) {
    callDidReceiveMessage(message)
  }
}

/// Cancels a call started through a ``GRPCClientTransport``.
public struct GRPCCallHandle: Sendable {
  let cancelAction: @Sendable () -> Void
  let releaseAction: @Sendable (Int) -> Void
  let abortAction: @Sendable (GRPCStatus) -> Void

  /// A handle whose ``cancel()`` runs `cancel`, whose window releases (manual flow control) run
  /// `release`, and whose aborts run `abort`: for transports.
  package init(
    cancel: @escaping @Sendable () -> Void, release: @escaping @Sendable (Int) -> Void = { _ in },
    abort: @escaping @Sendable (GRPCStatus) -> Void = { _ in }
  ) {
    cancelAction = cancel
    releaseAction = release
    abortAction = abort
  }

  /// Cancels the call: RST_STREAM(CANCEL) goes to the server and the handler
  /// finishes with CANCELLED, unless the call already ended.
  public func cancel() { cancelAction() }

  /// With manual flow control, returns `bytes` of received data to the stream's
  /// window so the server may send more.
  package func release(bytes: Int) { releaseAction(bytes) }

  /// Ends the call with `status` (RST_STREAM(CANCEL) to the server) for a failure found by
  /// the consumer, such as a message that does not decompress; nothing if it already ended.
  package func abort(_ status: GRPCStatus) { abortAction(status) }
}

/// The shape of a call: how many requests and responses it has. The one call-kind type: transports
/// start calls of a kind, and ``GRPCClientCall`` checks the response against it.
public enum GRPCCallKind: Sendable, Hashable {
  /// One request, exactly one response message (when the status is OK).
  case unary
  /// One request, any number of response messages.
  case serverStreaming
  /// A stream of requests, exactly one response message (when the status is OK).
  case clientStreaming
  /// A stream of requests and a stream of responses, independent of each other.
  case bidirectionalStreaming

  /// Whether an OK status needs exactly one response message.
  public var expectsSingleResponse: Bool { self == .unary || self == .clientStreaming }

  /// Whether requests are written one by one (a request writer) rather than given whole.
  package var streamsRequests: Bool { self == .clientStreaming || self == .bidirectionalStreaming }
}
