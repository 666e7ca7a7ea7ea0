// Sources/HTTP2Transport/GRPCCallHandler.swift - the callback form of a call

public import GRPCProtocol

/// Receives one call's response parts, on the channel's event loop thread.
///
/// This is the cheapest way to consume responses (no task hop, no copy: a
/// message is lent for the duration of the callback), meant for the hot path
/// of following many trips. Callbacks must return quickly and must not block:
/// they run on the thread that serves every call of the connection.
///
/// Compressed responses arrive decompressed; a message that does not decompress,
/// or exceeds the receive limit once decompressed, ends the call instead.
public protocol GRPCCallHandler: AnyObject, Sendable {
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

/// A handler that takes messages as they arrived (compressed ones still compressed) and
/// returns their flow-control window itself, as its consumer takes them: the
/// `AsyncSequence` forms of streaming responses.
protocol GRPCMessageReceiver: GRPCCallHandler {
  /// One response message: `compression` is its encoding when it is still compressed, and
  /// `windowBytes` how much stream window to return (with ``GRPCCallHandle/release(bytes:)``)
  /// once the consumer has taken it.
  func callDidReceive(_ message: UnsafeRawBufferPointer, compression: GRPCCompressionAlgorithm?, windowBytes: Int)
}

/// Cancels a call started with ``GRPCChannel/startCall(path:request:kind:options:handler:)``.
public struct GRPCCallHandle: Sendable {
  let cancelAction: @Sendable () -> Void
  let releaseAction: @Sendable (Int) -> Void
  let abortAction: @Sendable (GRPCStatus) -> Void

  /// Cancels the call: RST_STREAM(CANCEL) goes to the server and the handler
  /// finishes with CANCELLED, unless the call already ended.
  public func cancel() { cancelAction() }

  /// With manual flow control, returns `bytes` of received data to the stream's
  /// window so the server may send more.
  func release(bytes: Int) { releaseAction(bytes) }

  /// Ends the call with `status` (RST_STREAM(CANCEL) to the server) for a failure found by
  /// the consumer, such as a message that does not decompress; nothing if it already ended.
  func abort(_ status: GRPCStatus) { abortAction(status) }
}

/// The shape of a call.
public enum GRPCCallKind: Sendable, Hashable {
  /// One request, one response.
  case unary
  /// One request, a stream of responses.
  case serverStreaming
  /// A stream of requests, one response.
  case clientStreaming
  /// A stream of requests and a stream of responses, independent of each other.
  case bidirectionalStreaming

  /// The kind the per-call state machine checks the response against.
  var machineKind: GRPCClientCall.Kind {
    switch self {
    case .unary: .unary
    case .serverStreaming: .serverStreaming
    case .clientStreaming: .clientStreaming
    case .bidirectionalStreaming: .bidirectionalStreaming
    }
  }

  /// Whether requests are written one by one (``GRPCRequestWriter``) rather than given whole.
  var streamsRequests: Bool { self == .clientStreaming || self == .bidirectionalStreaming }
}
