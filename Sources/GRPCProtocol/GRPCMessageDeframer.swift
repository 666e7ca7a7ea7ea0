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
  /// - Throws: ``GRPCError`` with INTERNAL for a compressed message (flag 1: this
  ///   form delivers plain messages only; see ``processMessages(_:_:)``) or an
  ///   undefined flag (above 1); RESOURCE_EXHAUSTED for a prefix announcing more
  ///   than ``maxMessageSize`` bytes, detected before anything is buffered.
  ///   Messages completed before the bad prefix have already been delivered.
  public mutating func process(
    _ chunk: UnsafeRawBufferPointer,
    _ onMessage: (UnsafeRawBufferPointer) -> Void
  ) throws(GRPCError) {
    try deframe(chunk, acceptingCompressed: false) { message, _ in onMessage(message) }
  }

  /// Where a message delivered by ``processMessages(_:_:)`` came from.
  public struct MessageInfo: Sendable, Hashable {
    /// The Compressed-Flag was 1: the bytes are encoded with the stream's `grpc-encoding`.
    public var isCompressed: Bool
    /// The offset in the chunk just past the message's last byte. The bytes of the chunk up
    /// to here and after the previous message's `endOffset` (or from 0) belong to this
    /// message; bytes past the last message's `endOffset` belong to a message not yet complete.
    public var endOffset: Int
  }

  /// Like ``process(_:_:)``, but accepts compressed messages (flag 1) and tells which
  /// messages were compressed and where each one ends in the chunk.
  ///
  /// Whether a compressed message is acceptable (an encoding other than identity was
  /// declared) is the caller's decision; the bytes are delivered as they arrived.
  ///
  /// - Throws: ``GRPCError`` with INTERNAL for an undefined flag (above 1), RESOURCE_EXHAUSTED
  ///   for a prefix announcing more than ``maxMessageSize`` bytes (compressed or not).
  public mutating func processMessages(
    _ chunk: UnsafeRawBufferPointer,
    _ onMessage: (UnsafeRawBufferPointer, MessageInfo) -> Void
  ) throws(GRPCError) {
    try deframe(chunk, acceptingCompressed: true, onMessage)
  }

  private mutating func deframe(
    _ chunk: UnsafeRawBufferPointer,
    acceptingCompressed: Bool,
    _ onMessage: (UnsafeRawBufferPointer, MessageInfo) -> Void
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
          let info = MessageInfo(isCompressed: prefix.0 == 1, endOffset: offset)
          body.withUnsafeBytes { onMessage($0, info) }
          finishMessage()
        }
      } else if prefixCount == 0, count - offset >= GRPCMessageFramer.prefixSize {
        // The common case: the whole prefix is in this chunk.
        let flag = chunk[offset]
        let length = try checkPrefix(
          flag: flag, chunk[offset + 1], chunk[offset + 2], chunk[offset + 3], chunk[offset + 4],
          acceptingCompressed: acceptingCompressed)
        offset += GRPCMessageFramer.prefixSize
        if count - offset >= length {
          // And the whole message too: hand out the chunk's own bytes.
          let info = MessageInfo(isCompressed: flag == 1, endOffset: offset + length)
          onMessage(UnsafeRawBufferPointer(rebasing: chunk[offset..<offset + length]), info)
          offset += length
        } else {
          // Start gathering; the length was already checked against the limit.
          prefix.0 = flag
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
          let length = try checkPrefix(
            flag: prefix.0, prefix.1, prefix.2, prefix.3, prefix.4, acceptingCompressed: acceptingCompressed)
          if length == 0 {
            let info = MessageInfo(isCompressed: prefix.0 == 1, endOffset: offset)
            onMessage(UnsafeRawBufferPointer(start: nil, count: 0), info)
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
    flag: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8, _ b4: UInt8, acceptingCompressed: Bool
  ) throws(GRPCError) -> Int {
    let error: GRPCError
    switch flag {
    case 0, 1:
      guard flag == 0 || acceptingCompressed else {
        error = GRPCError(code: .internalError, message: Self.compressedMessageError)
        break
      }
      let length = Int(b1) << 24 | Int(b2) << 16 | Int(b3) << 8 | Int(b4)
      guard length > maxMessageSize else { return length }
      error = GRPCError(
        code: .resourceExhausted,
        message: "received message of \(length) bytes exceeds the limit of \(maxMessageSize) bytes")
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

  /// The message of the error for a compressed-flag of 1 where only plain messages are taken.
  static let compressedMessageError = "compressed message received but no grpc-encoding was negotiated"

  /// Resets for the next message, keeping a small buffer's capacity.
  private mutating func finishMessage() {
    prefixCount = 0
    expectedLength = nil
    body.removeAll(keepingCapacity: body.capacity <= Self.retainedCapacity)
  }
}
