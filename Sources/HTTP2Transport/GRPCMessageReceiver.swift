// Sources/HTTP2Transport/GRPCMessageReceiver.swift - handlers that pace a stream themselves

import GRPCProtocol

/// A handler that takes messages as they arrived (compressed ones still compressed) and
/// returns their flow-control window itself, as its consumer takes them: the
/// `AsyncSequence` forms of streaming responses.
protocol GRPCMessageReceiver: GRPCCallHandler {
  /// One response message: `compression` is its encoding when it is still compressed, and
  /// `windowBytes` how much stream window to return (with ``GRPCCallHandle/release(bytes:)``)
  /// once the consumer has taken it.
  func callDidReceive(_ message: UnsafeRawBufferPointer, compression: GRPCCompressionAlgorithm?, windowBytes: Int)
}
