// Sources/HTTP2Session/StreamState.swift - what the session keeps per open stream: the outbound queue
//
// nghttp2 pulls DATA payload through a data provider only as flow control
// allows, one frame at a time, so bytes the application sends wait here, not
// inside nghttp2. The queue can end with END_STREAM or with trailers, which go
// out only after the last queued byte (nghttp2_submit_trailer semantics).

/// Per-stream bookkeeping of one ``HTTP2Session``: the bytes waiting to be sent and how the stream ends.
///
/// A class so the data provider callback can update it in place through the
/// session's dictionary without copying the queue.
final class StreamState {
  /// Bytes submitted with `sendData` and not yet handed to nghttp2; the live part starts at `queueHead`.
  var queue: [UInt8] = []
  /// Index of the first unsent byte in `queue`.
  var queueHead = 0
  /// Trailers to send once `queue` is empty; only set together with `localEnded`.
  var trailers: [HTTP2HeaderField]?
  /// The application ended its side: no more data or headers are accepted.
  var localEnded = false
  /// Final (non-1xx) headers were submitted, so DATA may follow.
  var headersSubmitted = false
  /// A data provider for this stream is registered with nghttp2 and has not reported EOF.
  var providerAttached = false
  /// The provider returned NGHTTP2_ERR_DEFERRED and waits for `nghttp2_session_resume_data`.
  var providerDeferred = false
  /// The code of a RST_STREAM the application asked for, reported if the stream never opens.
  var resetCode: HTTP2ErrorCode?
  /// Why this side's HEADERS could not be sent (a block above the send limit), reported as the close code.
  var sendFailure: HTTP2ErrorCode?

  /// The largest queue buffer an emptied queue keeps.
  static let retainedQueueCapacity = 1_024

  /// The number of queued bytes not yet handed to nghttp2.
  var bufferedBytes: Int { queue.count - queueHead }

  /// Appends `bytes` to the queue, first dropping the sent prefix when it outweighs what is left.
  func enqueue(_ bytes: UnsafeRawBufferPointer) {
    if queueHead > 0 && queueHead >= queue.count - queueHead {
      // Moves at most as many bytes as were already sent, so compaction is amortised O(1) per byte.
      queue.removeSubrange(0..<queueHead)
      queueHead = 0
    }
    queue.append(contentsOf: bytes)
  }

  /// Copies up to `capacity` queued bytes to `destination` and returns how many were copied.
  func dequeue(into destination: UnsafeMutableRawPointer, capacity: Int) -> Int {
    let count = min(capacity, bufferedBytes)
    guard count > 0 else { return 0 }
    queue.withUnsafeBytes { source in
      // Safe: `queueHead + count <= queue.count`, and nghttp2 gave `destination` room for `capacity` bytes.
      destination.copyMemory(from: source.baseAddress! + queueHead, byteCount: count)
    }
    queueHead += count
    if queueHead == queue.count {
      // A small queue keeps its buffer for the next message; a large one (a stream's first, whole-trip
      // message, or a backlog) gives it back: a buffer kept per stream was 6 KiB a stream at 100,000 streams.
      if queue.capacity <= StreamState.retainedQueueCapacity {
        queue.removeAll(keepingCapacity: true)
      } else {
        queue = []
      }
      queueHead = 0
    }
    return count
  }
}
