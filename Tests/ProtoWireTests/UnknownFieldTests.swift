// Tests/ProtoWireTests/UnknownFieldTests.swift - fields a message does not declare, and groups

import ProtoWire
import Testing

@Suite("Unknown fields and groups")
struct UnknownFieldTests {
  /// Every wire type as an unknown field of `Inner` (which knows only fields 1 and 2).
  static let unknownOfEveryWireType: [UInt8] = [
    0x18, 0x96, 0x01,  // field 3, varint 150
    0x21, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // field 4, fixed64
    0x2A, 0x02, 0x68, 0x69,  // field 5, length-delimited "hi"
    0x33,  // field 6, start group
    0x38, 0x01,  //   field 7, varint 1
    0x43,  //   field 8, start group
    0x4D, 0x01, 0x02, 0x03, 0x04,  //     field 9, fixed32
    0x52, 0x01, 0x34,  //     field 10, length-delimited: a byte (34) that looks like group 6's end tag
    0x44,  //   field 8, end group
    0x08, 0x09,  //   field 1, varint 9: a known number, but inside a group it is skipped too
    0x34,  // field 6, end group
    0x55, 0x0A, 0x0B, 0x0C, 0x0D,  // field 10, fixed32
  ]

  @Test("unknown fields of every wire type are kept byte for byte and written after the known fields")
  func preservedAndReemitted() throws {
    let bytes: [UInt8] =
      [0x08, 0x01]  // a = 1
      + Self.unknownOfEveryWireType.prefix(16)  // fields 3, 4, 5
      + [0x12, 0x01, 0x7A]  // b = "z"
      + Self.unknownOfEveryWireType.dropFirst(16)  // group 6, field 10
    let message = try Inner(serializedBytes: bytes)
    #expect(message.a == 1)
    #expect(message.b == "z")
    #expect(message.unknownFields.bytes == Self.unknownOfEveryWireType)
    #expect(message.unknownFields.count == Self.unknownOfEveryWireType.count)
    let reencoded = message.serializedBytes()
    #expect(reencoded == [0x08, 0x01, 0x12, 0x01, 0x7A] + Self.unknownOfEveryWireType)
    #expect(message.encodedSize() == reencoded.count)
    // Decoding the re-encoding gives the same message.
    #expect(try Inner(serializedBytes: reencoded) == message)
  }

  @Test("non-canonical encodings in unknown fields survive exactly")
  func nonCanonical() throws {
    let bytes: [UInt8] = [
      0x98, 0x00, 0x01,  // field 3, varint, with its tag padded to two bytes
      0x18, 0x81, 0x80, 0x80, 0x00,  // field 3, the value 1 padded to four bytes
      0x2A, 0x80, 0x00,  // field 5, length 0 padded to two bytes
      0x33, 0xB4, 0x80, 0x00,  // field 6 group, closed by an end tag padded to three bytes
    ]
    let message = try Inner(serializedBytes: bytes)
    #expect(message.unknownFields.bytes == bytes)
    #expect(message.serializedBytes() == bytes)
  }

  @Test("unknown fields inside an embedded message stay with that message")
  func nestedUnknown() throws {
    // inner (8A 01), length 5: a = 1, field 3 (unknown) = 150; then field 99 (unknown, 98 06) = 2 at the top.
    let bytes: [UInt8] = [0x8A, 0x01, 0x05, 0x08, 0x01, 0x18, 0x96, 0x01, 0x98, 0x06, 0x02]
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.inner?.a == 1)
    #expect(message.inner?.unknownFields.bytes == [0x18, 0x96, 0x01])
    #expect(message.unknownFields.bytes == [0x98, 0x06, 0x02])
    #expect(message.serializedBytes() == bytes)
  }

  @Test("unknown fields set by hand are written last")
  func setByHand() {
    var message = Inner(a: 3)
    message.unknownFields = UnknownFields(bytes: [0x18, 0x01])
    message.unknownFields.append(UnsafeRawBufferPointer(start: nil, count: 0))
    [UInt8]([0x20, 0x02]).withUnsafeBytes { message.unknownFields.append($0) }
    #expect(!message.unknownFields.isEmpty)
    #expect(UnknownFields().isEmpty && UnknownFields().count == 0)
    #expect(message.serializedBytes() == [0x08, 0x03, 0x18, 0x01, 0x20, 0x02])
  }

  @Test("a group is skipped whole: nested groups, and bytes inside it that look like tags")
  func groupSkipping() throws {
    let bytes: [UInt8] = [
      0x33,  // field 6, start group
      0x0D, 0x01, 0x02, 0x03, 0x04,  //   field 1 as fixed32 (a wrong wire type for `a`, but inside a group)
      0x2A, 0x01, 0x34,  //   field 5, length 1, holding 34 (group 6's end tag as data)
      0x33, 0x34,  //   field 6 again, an empty group nested in the first
      0x34,  // field 6, end group
      0x08, 0x07,  // a = 7
    ]
    let message = try Inner(serializedBytes: bytes)
    #expect(message.a == 7)
    #expect(message.unknownFields.bytes == Array(bytes.prefix(12)))
  }

  @Test("groups nested 100 deep inside an unknown field are skipped and kept")
  func deepGroups() throws {
    // 100 start-group tags of field 6 (33), then 100 end-group tags (34).
    let bytes = [UInt8](repeating: 0x33, count: 100) + [UInt8](repeating: 0x34, count: 100)
    let message = try Inner(serializedBytes: bytes)
    #expect(message.unknownFields.bytes == bytes)
    // A group of the largest field number: start FB FF FF FF 0F, end FC FF FF FF 0F.
    let widest: [UInt8] = [0xFB, 0xFF, 0xFF, 0xFF, 0x0F, 0xFC, 0xFF, 0xFF, 0xFF, 0x0F]
    #expect(try Inner(serializedBytes: widest).unknownFields.bytes == widest)
  }

  @Test(
    "an end-group tag without its start, or closing another group, is unmatched",
    arguments: [
      ([0x34] as [UInt8], 6, 0),  // field 6, end group, at the top level
      ([0x08, 0x01, 0x0C], 1, 2),  // after a = 1, an end group of field 1
      ([0x33, 0x44], 8, 1),  // group 6 closed by field 8's end tag
      ([0x33, 0x43, 0x34], 6, 2),  // group 8 inside group 6 closed by group 6's end tag
      ([0x33, 0x34, 0x34], 6, 2),  // group 6 closed, then a second, unmatched end of group 6
      // group of field 536870911 (FB FF FF FF 0F) closed by field 536870910's end tag (F4 FF FF FF 0F)
      ([0xFB, 0xFF, 0xFF, 0xFF, 0x0F, 0xF4, 0xFF, 0xFF, 0xFF, 0x0F], 536_870_910, 5),
    ] as [([UInt8], Int, Int)])
  func unmatchedEndGroup(bytes: [UInt8], field: Int, offset: Int) {
    #expect(throws: WireDecodingError(.unmatchedEndGroup(field: field), offset: offset)) {
      try Inner(serializedBytes: bytes)
    }
  }

  @Test(
    "a group still open when its message ends is unterminated, reported at its start tag",
    arguments: [
      ([0x33] as [UInt8], 6, 0),  // group 6 and nothing else
      ([0x33, 0x38, 0x01], 6, 0),  // group 6 holding field 7 = 1, no end
      ([0x33, 0x43, 0x44], 6, 0),  // group 8 closed inside group 6, which is not
      ([0x33, 0x43], 8, 1),  // the innermost open group is reported
      ([0x08, 0x01, 0x33, 0x2A, 0x00], 6, 2),  // after a = 1
    ] as [([UInt8], Int, Int)])
  func unterminatedGroup(bytes: [UInt8], field: Int, offset: Int) {
    #expect(throws: WireDecodingError(.unterminatedGroup(field: field), offset: offset)) {
      try Inner(serializedBytes: bytes)
    }
  }

  @Test("a group inside an embedded message ends with that message, even if its end tag follows it")
  func groupBoundedByEnclosingMessage() {
    // inner (8A 01), length 1: only the start of group 6 (33); its end tag (34) lies outside the inner message.
    #expect(throws: WireDecodingError(.unterminatedGroup(field: 6), offset: 3)) {
      try AllKinds(serializedBytes: [0x8A, 0x01, 0x01, 0x33, 0x34])
    }
  }

  @Test(
    "errors inside a skipped group are reported where they occur",
    arguments: [
      ([0x33, 0x3E], WireDecodingError(.invalidWireType(6), offset: 1)),  // field 7, wire type 6
      ([0x33, 0x00], WireDecodingError(.invalidFieldNumber, offset: 1)),  // field 0
      ([0x33, 0x38], WireDecodingError(.truncated, offset: 2)),  // field 7 varint, no value
      ([0x33, 0x38, 0x80], WireDecodingError(.truncated, offset: 3)),  // field 7 varint, cut off
      ([0x33, 0x3D, 0x01], WireDecodingError(.truncated, offset: 2)),  // field 7 fixed32, one byte
      ([0x33, 0x39, 0x01], WireDecodingError(.truncated, offset: 2)),  // field 7 fixed64, one byte
      ([0x33, 0x3A, 0x05, 0x00], WireDecodingError(.lengthPastEnd(length: 5), offset: 2)),  // length 5, one byte
      ([0x33, 0x80], WireDecodingError(.truncated, offset: 2)),  // a tag cut off
    ] as [([UInt8], WireDecodingError)])
  func errorsInsideGroups(bytes: [UInt8], error: WireDecodingError) {
    #expect(throws: error) { try Inner(serializedBytes: bytes) }
  }

  @Test("skipping with skipField returns the whole field, tag included")
  func skipFieldDirectly() throws {
    // field 5, length 2, "hi"; then field 3 varint 1.
    try withReader([0x2A, 0x02, 0x68, 0x69, 0x18, 0x01]) { (reader) throws in
      var unknown = UnknownFields()
      let first = try #require(try reader.nextTag())
      try reader.skipField(first, into: &unknown)
      #expect(unknown.bytes == [0x2A, 0x02, 0x68, 0x69])
      let second = try #require(try reader.nextTag())
      try reader.skipField(second, into: &unknown)
      #expect(unknown.bytes == [0x2A, 0x02, 0x68, 0x69, 0x18, 0x01])
      #expect(try reader.nextTag() == nil)
    }
  }
}
