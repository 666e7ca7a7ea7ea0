// Tests/ProtoWireTests/TagTests.swift - field tags: numbers, wire types, lengths

import ProtoWire
import Testing

@Suite("Tags")
struct TagTests {
  @Test(
    "tags decode into field number and wire type",
    arguments: [
      ([0x08], 1, WireType.varint),  // 1 << 3 | 0
      ([0x11], 2, .fixed64),  // 2 << 3 | 1
      ([0x1A], 3, .lengthDelimited),  // 3 << 3 | 2
      ([0x23], 4, .startGroup),  // 4 << 3 | 3
      ([0x2D], 5, .fixed32),  // 5 << 3 | 5
      ([0x78], 15, .varint),  // the largest one-byte tag's field
      ([0x80, 0x01], 16, .varint),  // 16 << 3 = 128 needs two bytes
      ([0xF8, 0xFF, 0xFF, 0xFF, 0x0F], 536_870_911, .varint),  // the largest field number: 0xFFFFFFF8
      ([0xFD, 0xFF, 0xFF, 0xFF, 0x0F], 536_870_911, .fixed32),  // 0xFFFFFFFD
      ([0x88, 0x80, 0x80, 0x80, 0x00], 1, .varint),  // field 1 padded to five bytes: allowed
    ] as [([UInt8], Int, WireType)])
  func decodes(bytes: [UInt8], fieldNumber: Int, wireType: WireType) throws {
    try withReader(bytes) { (reader) throws in
      let tag = try #require(try reader.nextTag())
      #expect(tag.fieldNumber == fieldNumber)
      #expect(tag.wireType == wireType)
      #expect(reader.offset == bytes.count)
    }
  }

  @Test("nextTag returns nil at the end of the message")
  func endOfMessage() throws {
    try withReader([]) { (reader) throws in #expect(try reader.nextTag() == nil) }
    try withReader([0x08, 0x01]) { (reader) throws in
      let tag = try #require(try reader.nextTag())
      _ = try reader.readInt32(tag)
      #expect(try reader.nextTag() == nil)
    }
  }

  @Test(
    "tags encode as the writer and WireSize say",
    arguments: [
      (1, WireType.varint, [0x08]),
      (15, .lengthDelimited, [0x7A]),
      (16, .varint, [0x80, 0x01]),
      (2047, .fixed64, [0xF9, 0x7F]),  // 2047 << 3 | 1 = 16377: the largest two-byte tag's field
      (2048, .fixed32, [0x85, 0x80, 0x01]),  // 16389: three bytes
      (262_143, .startGroup, [0xFB, 0xFF, 0x7F]),  // 2^18 - 1: the largest three-byte tag's field
      (262_144, .endGroup, [0x84, 0x80, 0x80, 0x01]),
      (536_870_911, .lengthDelimited, [0xFA, 0xFF, 0xFF, 0xFF, 0x0F]),  // the largest field number
    ] as [(Int, WireType, [UInt8])])
  func encodes(fieldNumber: Int, wireType: WireType, bytes: [UInt8]) {
    #expect(written { $0.writeTag(fieldNumber, wireType) } == bytes)
    #expect(WireSize.tag(fieldNumber) == bytes.count)
    #expect(UInt64(FieldTag(fieldNumber: fieldNumber, wireType: wireType).rawValue) == (try? readVarint(bytes).value))
  }

  @Test(
    "field number 0 is rejected at its tag",
    arguments: [
      ([0x00], 0),  // field 0, varint
      ([0x02, 0x00], 0),  // field 0, length-delimited
      ([0x80, 0x00], 0),  // field 0 in a two-byte (padded) tag
      ([0x08, 0x01, 0x05], 2),  // after int32 = 1, field 0 with wire type 5
    ] as [([UInt8], Int)])
  func fieldNumberZero(bytes: [UInt8], offset: Int) {
    #expect(throws: WireDecodingError(.invalidFieldNumber, offset: offset)) { try AllKinds(serializedBytes: bytes) }
  }

  @Test(
    "wire types 6 and 7 are rejected at their tag",
    arguments: [
      ([0x0E], UInt8(6), 0),  // field 1, wire type 6
      ([0x0F], 7, 0),  // field 1, wire type 7
      ([0x86, 0x01], 6, 0),  // field 16, wire type 6 (two-byte tag)
      ([0x08, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], 7, 2),  // field 536870911, wire type 7, after int32 = 1
      ([0x07], 7, 0),  // field 0 and wire type 7: the wire type is checked first
    ] as [([UInt8], UInt8, Int)])
  func invalidWireType(bytes: [UInt8], wireType: UInt8, offset: Int) {
    #expect(throws: WireDecodingError(.invalidWireType(wireType), offset: offset)) {
      try AllKinds(serializedBytes: bytes)
    }
  }

  @Test(
    "a tag longer than five bytes or above 32 bits is malformed",
    arguments: [
      [0x88, 0x80, 0x80, 0x80, 0x80, 0x00],  // field 1 padded to six bytes
      [0x80, 0x80, 0x80, 0x80, 0x10],  // 2^32: field number 2^29, one past the largest
      [0xF8, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],  // 0x1FFFFFFF8: six bytes and over 32 bits
      [0x88, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],  // eleven bytes: malformed as a varint
    ] as [[UInt8]])
  func overlongTag(bytes: [UInt8]) {
    #expect(throws: WireDecodingError(.malformedVarint, offset: 0)) { try AllKinds(serializedBytes: bytes) }
    // The same tag inside a group that is being skipped (group 6 of Inner, tag 33) is rejected the same way.
    #expect(throws: WireDecodingError(.malformedVarint, offset: 1)) { try Inner(serializedBytes: [0x33] + bytes) }
  }

  @Test("a tag cut off by the end of input is truncated")
  func truncatedTag() {
    // int32 = 1, then the first byte of a two-byte tag.
    #expect(throws: WireDecodingError(.truncated, offset: 3)) { try AllKinds(serializedBytes: [0x08, 0x01, 0x80]) }
  }

  @Test("the largest field number is accepted as an unknown field and kept")
  func maxFieldNumberUnknown() throws {
    // field 536870911, varint (F8 FF FF FF 0F), value 1.
    let bytes: [UInt8] = [0xF8, 0xFF, 0xFF, 0xFF, 0x0F, 0x01]
    let message = try Inner(serializedBytes: bytes)
    #expect(message.unknownFields.bytes == bytes)
    #expect(message.serializedBytes() == bytes)
  }

  @Test(
    "a known field with the wrong wire type is rejected at its tag",
    arguments: [
      ([0x0D, 0x01, 0x00, 0x00, 0x00], 1, WireType.fixed32),  // int32 as fixed32
      ([0x0A, 0x00], 1, .lengthDelimited),  // int32 as length-delimited (singular scalars are never packed)
      ([0x4C], 9, .endGroup),  // fixed32 as an end group: found by nextTag as an unmatched end group instead
      ([0x48, 0x01], 9, .varint),  // fixed32 as varint
      ([0x70, 0x00], 14, .varint),  // double as varint (14 << 3 | 0)
      ([0x69, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00], 13, .fixed64),  // float as fixed64 (13 << 3 | 1)
      ([0x78, 0x01], 15, .varint),  // string as varint
      ([0x7D, 0x00, 0x00, 0x00, 0x00], 15, .fixed32),  // string as fixed32
      ([0x80, 0x01, 0x00], 16, .varint),  // bytes as varint
      ([0x88, 0x01, 0x00], 17, .varint),  // message as varint
      ([0x8B, 0x01, 0x8C, 0x01], 17, .startGroup),  // message as a group
      ([0xAD, 0x01, 0x00, 0x00, 0x00, 0x00], 21, .fixed32),  // repeated int32 as fixed32
      ([0xE8, 0x01, 0x00], 29, .varint),  // repeated fixed32 as varint
      ([0xF5, 0x01, 0x00, 0x00, 0x00, 0x00], 30, .fixed32),  // repeated fixed64 as fixed32
      ([0x98, 0x02, 0x00], 35, .varint),  // repeated string as varint
      ([0xA8, 0x02, 0x00], 37, .varint),  // repeated message as varint
    ] as [([UInt8], Int, WireType)])
  func wrongWireType(bytes: [UInt8], field: Int, wireType: WireType) {
    let expected =
      wireType == .endGroup
      ? WireDecodingError(.unmatchedEndGroup(field: field), offset: 0)
      : WireDecodingError(.wrongWireType(field: field, wireType: wireType), offset: 0)
    #expect(throws: expected) { try AllKinds(serializedBytes: bytes) }
  }

  @Test("a wrong wire type after other fields is reported at that field's tag")
  func wrongWireTypeOffset() {
    // int32 = 1 (08 01), string = "a" (7A 01 61), then int64 (field 2) as fixed64 (11) at byte 5.
    let bytes: [UInt8] = [0x08, 0x01, 0x7A, 0x01, 0x61, 0x11, 0, 0, 0, 0, 0, 0, 0, 0]
    #expect(throws: WireDecodingError(.wrongWireType(field: 2, wireType: .fixed64), offset: 5)) {
      try AllKinds(serializedBytes: bytes)
    }
  }

  @Test("FieldTag and WireType describe themselves")
  func descriptions() {
    #expect(FieldTag(fieldNumber: 7, wireType: .fixed32).description == "field 7 (fixed32)")
    #expect(FieldTag(fieldNumber: 1, wireType: .varint).rawValue == 0x08)
    #expect(FieldTag(fieldNumber: FieldTag.maxFieldNumber, wireType: .endGroup).rawValue == 0xFFFF_FFFC)
    #expect(WireType.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5])
  }
}
