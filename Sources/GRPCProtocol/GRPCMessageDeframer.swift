// Sources/GRPCProtocol/GRPCMessageDeframer.swift - splits DATA bytes back into messages
//
// DATA frame boundaries have nothing to do with message boundaries: one frame
// may hold several messages, and one message (even its 5-byte prefix) may be
// spread over many frames. Most updates this library receives are small and
// arrive whole inside one chunk, so that case hands out a pointer into the
// chunk itself: no copy, no allocation. Only a message that straddles chunks is
// gathered into a buffer owned by the deframer.

/// Reassembles length-prefixed gRPC messages from the payload of DATA frames.
///
/// Feed it every chunk of a stream's DATA, in order, with ``process(_:_:)``.
/// After it throws, the stream is broken: further calls rethrow the same error.
public struct GRPCMessageDeframer: Sendable {
  /// The default limit on one received message: 4 MiB, as grpc-go and grpc-java use.
  public static let defaultMaxMessageSize = 4 << 20

  /// Messages longer than this many bytes are refused with RESOURCE_EXHAUSTED.
  public let maxMessageSize: Int

  /// The bytes of a prefix split across chunks; only the first `prefixCount` are meaningful.
  private var prefix: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0)
  /// How many prefix bytes have arrived for the message being assembled (0…5).
  private var prefixCount = 0
  /// The length announced by the prefix, once all five bytes are in; `nil` while reading a prefix.
  private var expectedLength: Int?
  /// The body of a message that straddles chunks.
  private var body: [UInt8] = []
  /// The error that broke the stream, rethrown by later calls.
  private var failure: GRPCError?

  /// Buffers larger than this are released after use rather than kept for the next message,
  /// so one large message does not pin memory for the rest of a long-lived stream.
  private static let retainedCapacity = 4096

  /// At most this much is reserved up front for a straddling message; the rest grows as bytes
  /// arrive, so five bytes of prefix cannot make the client allocate the whole limit.
  private static let initialReservation = 64 << 10

  /// Creates a deframer that accepts messages of up to `maxMessageSize` bytes.
  public init(maxMessageSize: Int = GRPCMessageDeframer.defaultMaxMessageSize) {
    precondition(maxMessageSize >= 0, "maxMessageSize must not be negative")
    self.maxMessageSize = maxMessageSize
  }

  /// Whether part of a message (or of its prefix) has arrived but not the rest.
  /// True when the stream ends means the response was truncated.
  public var hasPartialMessage: Bool { prefixCount > 0 }

  /// How many bytes of an incomplete message are held, prefix bytes included.
  public var bufferedBytes: Int { prefixCount + body.count }

  /// Consumes one chunk of DATA payload and calls `onMessage` for every message
  /// it completes, in order.
  ///
  /// The buffer passed to `onMessage` is only valid during the call: it points
  /// into `chunk` or into the deframer's own storage. Copy what must outlive it.
  ///
  /// - Throws: ``GRPCError`` with INTERNAL for a compressed message (flag 1: no
  ///   `grpc-encoding` is ever negotiated, since this client supports none) or
  ///   an undefined flag (above 1); RESOURCE_EXHAUSTED for a prefix announcing
  ///   more than ``maxMessageSize`` bytes, detected before anything is buffered.
  ///   Messages completed before the bad prefix have already been delivered.
  public mutating func process(
    _ chunk: UnsafeRawBufferPointer,
    _ onMessage: (UnsafeRawBufferPointer) -> Void
  ) throws(GRPCError) {
    if let failure { throw failure }
    var offset = 0
    let count = chunk.count
    while offset < count {
      if let expected = expectedLength {
        // Continue a message that straddles chunks.
        let take = min(expected - body.count, count - offset)
        body.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[offset..<offset + take]))
        offset += take
        if body.count == expected {
          body.withUnsafeBytes { onMessage($0) }
          finishMessage()
        }
      } else if prefixCount == 0, count - offset >= GRPCMessageFramer.prefixSize {
        // The common case: the whole prefix is in this chunk.
        let length = try checkPrefix(
          flag: chunk[offset],
          chunk[offset + 1], chunk[offset + 2], chunk[offset + 3], chunk[offset + 4])
        offset += GRPCMessageFramer.prefixSize
        if count - offset >= length {
          // And the whole message too: hand out the chunk's own bytes.
          onMessage(UnsafeRawBufferPointer(rebasing: chunk[offset..<offset + length]))
          offset += length
        } else {
          // Start gathering; the length was already checked against the limit.
          prefixCount = GRPCMessageFramer.prefixSize
          expectedLength = length
          body.reserveCapacity(min(length, Self.initialReservation))
          body.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[offset..<count]))
          offset = count
        }
      } else {
        // A prefix split across chunks: collect it byte by byte.
        storePrefixByte(chunk[offset])
        offset += 1
        if prefixCount == GRPCMessageFramer.prefixSize {
          let length = try checkPrefix(flag: prefix.0, prefix.1, prefix.2, prefix.3, prefix.4)
          if length == 0 {
            onMessage(UnsafeRawBufferPointer(start: nil, count: 0))
            finishMessage()
          } else {
            expectedLength = length
            body.reserveCapacity(min(length, Self.initialReservation))
          }
        }
      }
    }
  }

  /// Validates a complete prefix and returns the message length, or records and throws the error.
  private mutating func checkPrefix(
    flag: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8, _ b4: UInt8
  ) throws(GRPCError) -> Int {
    let error: GRPCError
    switch flag {
    case 0:
      let length = Int(b1) << 24 | Int(b2) << 16 | Int(b3) << 8 | Int(b4)
      guard length > maxMessageSize else { return length }
      error = GRPCError(
        code: .resourceExhausted,
        message: "received message of \(length) bytes exceeds the limit of \(maxMessageSize) bytes")
    case 1:
      error = GRPCError(code: .internalError, message: Self.compressedMessageError)
    default:
      error = GRPCError(code: .internalError, message: "invalid compressed-flag \(flag) in message prefix")
    }
    failure = error
    throw error
  }

  private mutating func storePrefixByte(_ byte: UInt8) {
    switch prefixCount {
    case 0: prefix.0 = byte
    case 1: prefix.1 = byte
    case 2: prefix.2 = byte
    case 3: prefix.3 = byte
    default: prefix.4 = byte
    }
    prefixCount += 1
  }

  /// The message of the error for a compressed-flag of 1; ``GRPCClientCall`` recognises it
  /// to say which (unsupported) encoding the server declared, when it declared one.
  static let compressedMessageError = "compressed message received but no grpc-encoding was negotiated"

  /// Resets for the next message, keeping a small buffer's capacity.
  private mutating func finishMessage() {
    prefixCount = 0
    expectedLength = nil
    body.removeAll(keepingCapacity: body.capacity <= Self.retainedCapacity)
  }
}
