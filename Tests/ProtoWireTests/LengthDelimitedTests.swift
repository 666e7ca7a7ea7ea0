// Tests/ProtoWireTests/LengthDelimitedTests.swift - strings, bytes and lengths that lie

import ProtoWire
import Testing

@Suite("Length-delimited fields")
struct LengthDelimitedTests {
  @Test(
    "strings decode as UTF-8 and encode back byte for byte",
    arguments: [
      ([0x7A, 0x02, 0x68, 0x69], "hi"),  // string (tag 7A), length 2, "hi"
      ([0x7A, 0x02, 0xC3, 0xA9], "é"),  // two-byte scalar
      ([0x7A, 0x04, 0xF0, 0x9F, 0x9A, 0x95], "🚕"),  // four-byte scalar
      ([0x7A, 0x03, 0x61, 0x00, 0x62], "a\u{0}b"),  // NUL is valid UTF-8
      // length 128 (80 01): a two-byte length prefix
      ([0x7A, 0x80, 0x01] + [UInt8](repeating: 0x78, count: 128), String(repeating: "x", count: 128)),
    ] as [([UInt8], String)])
  func strings(bytes: [UInt8], value: String) throws {
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.string == value)
    #expect(message.serializedBytes() == bytes)
    #expect(WireSize.string(value, field: 15) == bytes.count)
  }

  @Test("bytes are kept as they are, any values allowed")
  func bytes() throws {
    // bytes (tag 82 01), length 4, four bytes that are not UTF-8.
    let encoding: [UInt8] = [0x82, 0x01, 0x04, 0xFF, 0x00, 0xC3, 0x28]
    let message = try AllKinds(serializedBytes: encoding)
    #expect(message.bytes == [0xFF, 0x00, 0xC3, 0x28])
    #expect(message.serializedBytes() == encoding)
    #expect(WireSize.bytes(message.bytes, field: 16) == encoding.count)
  }

  @Test("empty string and bytes decode to their defaults, which proto3 does not write back")
  func empty() throws {
    // string (7A) length 0, bytes (82 01) length 0.
    let message = try AllKinds(serializedBytes: [0x7A, 0x00, 0x82, 0x01, 0x00])
    #expect(message.string == "")
    #expect(message.bytes == [])
    #expect(message.isEmpty)
    #expect(message.serializedBytes() == [])
    // An empty string as the whole input of a repeated field is still one element.
    let repeated = try AllKinds(serializedBytes: [0x9A, 0x02, 0x00])  // strings (tag 9A 02), ""
    #expect(repeated.strings == [""])
    #expect(repeated.serializedBytes() == [0x9A, 0x02, 0x00])
  }

  @Test("an empty embedded message is present, and written back as tag and zero length")
  func emptyMessage() throws {
    // inner (tag 8A 01), length 0.
    let message = try AllKinds(serializedBytes: [0x8A, 0x01, 0x00])
    #expect(message.inner == Inner())
    #expect(message.serializedBytes() == [0x8A, 0x01, 0x00])
  }

  @Test(
    "a length past the end of the input is reported at the length's first byte",
    arguments: [
      ([0x7A, 0x05, 0x61], UInt64(5), 1),  // string claims 5 bytes, 1 follows
      ([0x82, 0x01, 0x01], 1, 2),  // bytes (82 01) claims 1 byte, none follows
      ([0x8A, 0x01, 0x80, 0x01, 0x00], 128, 2),  // inner claims 128 (80 01), 1 follows
      ([0x08, 0x01, 0x7A, 0x02, 0x61], 2, 3),  // after int32 = 1, a string claims 2 bytes, 1 follows
      ([0x2A, 0x03, 0x00, 0x00], 3, 1),  // an unknown field (5, length-delimited) is checked too
    ] as [([UInt8], UInt64, Int)])
  func lengthPastEnd(bytes: [UInt8], length: UInt64, offset: Int) {
    let expected = WireDecodingError(.lengthPastEnd(length: length), offset: offset)
    if bytes.first == 0x2A {
      #expect(throws: expected) { try Inner(serializedBytes: bytes) }
    } else {
      #expect(throws: expected) { try AllKinds(serializedBytes: bytes) }
    }
  }

  @Test(
    "lengths far beyond Int.max are rejected without overflow",
    arguments: [
      // string (7A), length 2^64 - 1 as a ten-byte varint, then one byte of payload.
      ([0x7A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x61], UInt64.max),
      // string (7A), length 2^63 (Int.max + 1).
      ([0x7A, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x61], 1 << 63),
      // string (7A), length 2^63 - 1 (Int.max).
      ([0x7A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x61], UInt64(Int.max)),
      // string (7A), length Int.max - 10, which would overflow if added to the cursor unchecked.
      ([0x7A] + varint(UInt64(Int.max - 10)) + [0x61], UInt64(Int.max - 10)),
    ] as [([UInt8], UInt64)])
  func hugeLength(bytes: [UInt8], length: UInt64) {
    #expect(throws: WireDecodingError(.lengthPastEnd(length: length), offset: 1)) {
      try AllKinds(serializedBytes: bytes)
    }
  }

  @Test("huge lengths are rejected for every length-delimited use")
  func hugeLengthEverywhere() {
    let huge: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]
    let expected = WireDecodingError(.lengthPastEnd(length: .max), offset: 2)
    // bytes (82 01), inner (8A 01), packed int32s (AA 01), packed fixed32s (EA 01), inners (AA 02).
    for tag: [UInt8] in [[0x82, 0x01], [0x8A, 0x01], [0xAA, 0x01], [0xEA, 0x01], [0xAA, 0x02]] {
      #expect(throws: expected) { try AllKinds(serializedBytes: tag + huge) }
    }
    // An unknown length-delimited field (field 99, tag 9A 06) that is skipped.
    #expect(throws: expected) { try Inner(serializedBytes: [0x9A, 0x06] + huge) }
  }

  @Test(
    "invalid UTF-8 in a string field is rejected at the field's tag",
    arguments: [
      [0x7A, 0x02, 0xC3, 0x28],  // C3 starts a two-byte scalar, 28 does not continue it
      [0x7A, 0x01, 0xFF],  // FF never appears in UTF-8
      [0x7A, 0x02, 0xC0, 0x80],  // overlong encoding of NUL
      [0x7A, 0x03, 0xED, 0xA0, 0x80],  // U+D800, a UTF-16 surrogate
      [0x7A, 0x04, 0xF4, 0x90, 0x80, 0x80],  // U+110000, past the last scalar
      [0x7A, 0x01, 0x80],  // a lone continuation byte
      [0x7A, 0x02, 0xE2, 0x82],  // a three-byte scalar cut short by the field's end
    ] as [[UInt8]])
  func invalidUTF8(bytes: [UInt8]) {
    #expect(throws: WireDecodingError(.invalidUTF8(field: 15), offset: 0)) { try AllKinds(serializedBytes: bytes) }
    // The same payload in a bytes field (82 01) is fine.
    #expect(throws: Never.self) { try AllKinds(serializedBytes: [0x82, 0x01] + bytes.dropFirst()) }
  }

  @Test("invalid UTF-8 in a repeated string, after valid elements")
  func invalidUTF8Repeated() {
    // strings (9A 02) "a", then strings (9A 02) with FF at byte 5.
    let bytes: [UInt8] = [0x9A, 0x02, 0x01, 0x61, 0x9A, 0x02, 0x01, 0xFF]
    #expect(throws: WireDecodingError(.invalidUTF8(field: 35), offset: 4)) { try AllKinds(serializedBytes: bytes) }
  }

  @Test("withLengthDelimitedBytes borrows exactly the payload and moves past it")
  func borrowedPayload() throws {
    // length 3, "abc", then 7F.
    try withReader([0x03, 0x61, 0x62, 0x63, 0x7F]) { (reader) throws in
      let payload = try reader.withLengthDelimitedBytes { Array($0) }
      #expect(payload == [0x61, 0x62, 0x63])
      #expect(reader.offset == 4)
      #expect(try reader.readRawVarint() == 0x7F)
    }
  }
}
