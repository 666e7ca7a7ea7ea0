// Tests/GRPCProtocolTests/FramingTests.swift - the 5-byte prefix: framing and reassembly across any split

import GRPCProtocol
import Testing

/// Feeds `chunks` to `deframer` and returns the messages it delivered, copied.
func deframe(_ chunks: [[UInt8]], with deframer: inout GRPCMessageDeframer) throws(GRPCError) -> [[UInt8]] {
  var messages: [[UInt8]] = []
  for chunk in chunks {
    let outcome: Result<Void, GRPCError> = chunk.withUnsafeBytes { raw in
      Result { () throws(GRPCError) in
        try deframer.process(raw) { messages.append(Array($0)) }
      }
    }
    try outcome.get()
  }
  return messages
}

/// `bytes` cut into pieces of `size` bytes (the last may be shorter).
func chunked(_ bytes: [UInt8], size: Int) -> [[UInt8]] {
  stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
}

/// A deterministic message of `length` bytes.
func message(_ length: Int, seed: Int = 0) -> [UInt8] {
  (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ 1) }
}

@Suite("Message framing")
struct FramerTests {
  @Test(
    "prefix is flag 0 and a big-endian length",
    arguments: [
      (0, [0, 0, 0, 0, 0]),
      (1, [0, 0, 0, 0, 1]),
      (255, [0, 0, 0, 0, 0xFF]),
      (256, [0, 0, 0, 1, 0]),
      (70_000, [0, 0, 1, 0x11, 0x70]),
      (1 << 24, [0, 1, 0, 0, 0]),  // grpc-go #399: the byte that once was misread as the flag
    ] as [(Int, [UInt8])])
  func prefix(length: Int, expected: [UInt8]) {
    let body = message(length)
    let framed = GRPCMessageFramer.framed(body)
    #expect(Array(framed.prefix(5)) == expected)
    #expect(framed.count == 5 + length)
    #expect(Array(framed.dropFirst(5)) == body)
  }

  @Test("frame(_:into:) appends after existing bytes")
  func appends() {
    var buffer: [UInt8] = [0xAA]
    [UInt8]([1, 2, 3]).withUnsafeBytes { GRPCMessageFramer.frame($0, into: &buffer) }
    [UInt8]().withUnsafeBytes { GRPCMessageFramer.frame($0, into: &buffer) }
    #expect(buffer == [0xAA, 0, 0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 0, 0])
  }
}

@Suite("Message deframing")
struct DeframerTests {
  /// Several messages of awkward sizes, zero-length ones included, framed back to back.
  static let messages: [[UInt8]] = [
    message(0), message(1, seed: 1), message(4, seed: 2), message(5, seed: 3), message(0), message(6, seed: 4),
    message(300, seed: 5), message(0),
  ]
  static let stream: [UInt8] = messages.flatMap(GRPCMessageFramer.framed)

  @Test("all messages in one chunk are all delivered, in order")
  func oneChunk() throws {
    var deframer = GRPCMessageDeframer()
    #expect(try deframe([Self.stream], with: &deframer) == Self.messages)
    #expect(!deframer.hasPartialMessage)
    #expect(deframer.bufferedBytes == 0)
  }

  @Test("every chunk size from 1 byte up reassembles the same messages", arguments: Array(1...40) + [299, 305, 1000])
  func everyChunkSize(size: Int) throws {
    var deframer = GRPCMessageDeframer()
    #expect(try deframe(chunked(Self.stream, size: size), with: &deframer) == Self.messages)
    #expect(!deframer.hasPartialMessage)
  }

  @Test("a split at every byte boundary reassembles the same messages")
  func everySplitPoint() throws {
    for split in 0...Self.stream.count {
      var deframer = GRPCMessageDeframer()
      let chunks = [Array(Self.stream[..<split]), Array(Self.stream[split...])]
      #expect(try deframe(chunks, with: &deframer) == Self.messages, "split at \(split)")
    }
  }

  @Test("every pair of split points inside one message (prefix split anywhere)")
  func everyTwoSplitPoints() throws {
    let body = message(9, seed: 9)
    let framed = GRPCMessageFramer.framed(body) + GRPCMessageFramer.framed([7])
    for first in 0...framed.count {
      for second in first...framed.count {
        var deframer = GRPCMessageDeframer()
        let chunks = [Array(framed[..<first]), Array(framed[first..<second]), Array(framed[second...])]
        #expect(try deframe(chunks, with: &deframer) == [body, [7]], "splits \(first), \(second)")
      }
    }
  }

  @Test("partial state is reported while a message is incomplete")
  func partialState() throws {
    var deframer = GRPCMessageDeframer()
    let framed = GRPCMessageFramer.framed(message(10))
    #expect(try deframe([Array(framed[..<3])], with: &deframer).isEmpty)
    #expect(deframer.hasPartialMessage)
    #expect(deframer.bufferedBytes == 3)
    #expect(try deframe([Array(framed[3..<9])], with: &deframer).isEmpty)
    #expect(deframer.bufferedBytes == 9)
    #expect(try deframe([Array(framed[9...])], with: &deframer) == [message(10)])
    #expect(!deframer.hasPartialMessage)
    #expect(deframer.bufferedBytes == 0)
  }

  @Test("an empty chunk changes nothing")
  func emptyChunk() throws {
    var deframer = GRPCMessageDeframer()
    #expect(try deframe([[], [0, 0], [], [0, 0, 1], [], [42]], with: &deframer) == [[42]])
  }

  @Test("a message that lies whole inside the chunk is handed out in place, not copied")
  func zeroCopy() throws {
    var deframer = GRPCMessageDeframer()
    let framed = GRPCMessageFramer.framed([1, 2, 3]) + GRPCMessageFramer.framed([4])
    var offsets: [Int] = []
    try framed.withUnsafeBytes { raw in
      try deframer.process(raw) { message in
        offsets.append(message.baseAddress! - raw.baseAddress!)
      }
    }
    #expect(offsets == [5, 13])
  }

  @Test("messages of exactly the limit pass; one byte more is RESOURCE_EXHAUSTED", arguments: [0, 1, 10, 1000])
  func sizeLimit(limit: Int) throws {
    var deframer = GRPCMessageDeframer(maxMessageSize: limit)
    #expect(try deframe([GRPCMessageFramer.framed(message(limit))], with: &deframer) == [message(limit)])

    var over = GRPCMessageDeframer(maxMessageSize: limit)
    // Only the prefix is sent: the limit is checked before any of the body is buffered.
    let prefix = Array(GRPCMessageFramer.framed(message(limit + 1)).prefix(5))
    let error = #expect(throws: GRPCError.self) { try deframe([prefix], with: &over) }
    #expect(error?.code == .resourceExhausted)
    #expect(error?.message == "received message of \(limit + 1) bytes exceeds the limit of \(limit) bytes")
  }

  @Test("an oversized length is refused even when the prefix arrives byte by byte")
  func sizeLimitSplitPrefix() {
    var deframer = GRPCMessageDeframer(maxMessageSize: 100)
    let error = #expect(throws: GRPCError.self) {
      try deframe([[0], [0], [0xFF], [0xFF], [0xFF]], with: &deframer)
    }
    #expect(error?.code == .resourceExhausted)
    #expect(deframer.bufferedBytes <= 5)
  }

  @Test("the largest length a prefix can state is refused under the default 4 MiB limit")
  func maxLength() {
    var deframer = GRPCMessageDeframer()
    #expect(deframer.maxMessageSize == 4 << 20)
    let error = #expect(throws: GRPCError.self) { try deframe([[0, 0xFF, 0xFF, 0xFF, 0xFF]], with: &deframer) }
    #expect(error?.code == .resourceExhausted)
  }

  @Test("compressed flag 1 is INTERNAL: no encoding was negotiated")
  func compressedFlag() {
    var deframer = GRPCMessageDeframer()
    let error = #expect(throws: GRPCError.self) { try deframe([[1, 0, 0, 0, 1, 0x42]], with: &deframer) }
    #expect(error?.code == .internalError)
    #expect(error?.message == "compressed message received but no grpc-encoding was negotiated")
  }

  @Test("flag values above 1 are INTERNAL", arguments: [UInt8(2), 3, 0x80, 0xFF])
  func invalidFlag(flag: UInt8) {
    var deframer = GRPCMessageDeframer()
    let error = #expect(throws: GRPCError.self) { try deframe([[flag, 0, 0, 0, 0]], with: &deframer) }
    #expect(error?.code == .internalError)
  }

  @Test("messages before a bad prefix are delivered; after the error the deframer stays failed")
  func deliversBeforeError() throws {
    var deframer = GRPCMessageDeframer()
    var delivered: [[UInt8]] = []
    let bytes = GRPCMessageFramer.framed([1]) + GRPCMessageFramer.framed([2]) + [9, 0, 0, 0, 0]
    let first = #expect(throws: GRPCError.self) {
      try bytes.withUnsafeBytes { raw in
        try deframer.process(raw) { delivered.append(Array($0)) }
      }
    }
    #expect(delivered == [[1], [2]])
    // Even a valid chunk now rethrows the same error and delivers nothing.
    let second = #expect(throws: GRPCError.self) { try deframe([GRPCMessageFramer.framed([3])], with: &deframer) }
    #expect(first == second)
  }

  @Test("a large message split into 16 KiB DATA frames reassembles exactly")
  func largeMessage() throws {
    let body = message(1 << 20, seed: 3)
    var deframer = GRPCMessageDeframer()
    let frames = chunked(GRPCMessageFramer.framed(body) + GRPCMessageFramer.framed([5]), size: 16_384)
    #expect(try deframe(frames, with: &deframer) == [body, [5]])
  }
}
