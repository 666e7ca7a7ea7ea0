// Tests/ProtoWireTests/RepeatedFieldTests.swift - packed and unpacked repeated fields

import ProtoWire
import Testing

/// One repeated scalar field of `AllKinds`, written packed, unpacked and mixed.
struct RepeatedCase: Sendable, CustomTestStringConvertible {
  let name: String
  let field: Int
  /// `AllKinds` with the field holding five values.
  let expected: AllKinds
  /// One packed run of all values.
  let packed: [UInt8]
  /// One tag per value.
  let unpacked: [UInt8]
  /// The first value unpacked, the middle three packed, the last unpacked.
  let mixed: [UInt8]
  var testDescription: String { "repeated \(name) (field \(field))" }

  init<T>(
    _ name: String,
    field: Int,
    _ values: [T],
    set: (inout AllKinds, [T]) -> Void,
    packed writePacked: (inout WireWriter, [T], Int) -> Void,
    element writeElement: (inout WireWriter, T, Int) -> Void
  ) {
    precondition(values.count == 5)
    self.name = name
    self.field = field
    var message = AllKinds()
    set(&message, values)
    expected = message
    packed = written { writePacked(&$0, values, field) }
    unpacked = written { writer in for value in values { writeElement(&writer, value, field) } }
    mixed = written { writer in
      writeElement(&writer, values[0], field)
      writePacked(&writer, Array(values[1...3]), field)
      writeElement(&writer, values[4], field)
    }
  }

  static let all: [RepeatedCase] = [
    .init(
      "int32", field: 21, [0, 1, -1, .max, .min], set: { $0.int32s = $1 },
      packed: { $0.writePackedInt32($1, field: $2) }, element: { $0.writeInt32($1, field: $2) }),
    .init(
      "int64", field: 22, [0, 300, -1, .max, .min], set: { $0.int64s = $1 },
      packed: { $0.writePackedInt64($1, field: $2) }, element: { $0.writeInt64($1, field: $2) }),
    .init(
      "uint32", field: 23, [0, 127, 128, .max, 16_384], set: { $0.uint32s = $1 },
      packed: { $0.writePackedUInt32($1, field: $2) }, element: { $0.writeUInt32($1, field: $2) }),
    .init(
      "uint64", field: 24, [0, 1, 1 << 35, .max, 1 << 63], set: { $0.uint64s = $1 },
      packed: { $0.writePackedUInt64($1, field: $2) }, element: { $0.writeUInt64($1, field: $2) }),
    .init(
      "sint32", field: 25, [0, -1, 1, .max, .min], set: { $0.sint32s = $1 },
      packed: { $0.writePackedSInt32($1, field: $2) }, element: { $0.writeSInt32($1, field: $2) }),
    .init(
      "sint64", field: 26, [0, -1, 1, .max, .min], set: { $0.sint64s = $1 },
      packed: { $0.writePackedSInt64($1, field: $2) }, element: { $0.writeSInt64($1, field: $2) }),
    .init(
      "bool", field: 27, [true, false, true, true, false], set: { $0.bools = $1 },
      packed: { $0.writePackedBool($1, field: $2) }, element: { $0.writeBool($1, field: $2) }),
    .init(
      "enum", field: 28, [.red, .unspecified, Color(rawValue: -5), .green, Color(rawValue: 1000)],
      set: { $0.colors = $1 },
      packed: { $0.writePackedEnum($1, field: $2) }, element: { $0.writeEnum($1, field: $2) }),
    .init(
      "fixed32", field: 29, [0, 1, 0xDEAD_BEEF, .max, 7], set: { $0.fixed32s = $1 },
      packed: { $0.writePackedFixed32($1, field: $2) }, element: { $0.writeFixed32($1, field: $2) }),
    .init(
      "fixed64", field: 30, [0, 1, 0xDEAD_BEEF_CAFE_F00D, .max, 7], set: { $0.fixed64s = $1 },
      packed: { $0.writePackedFixed64($1, field: $2) }, element: { $0.writeFixed64($1, field: $2) }),
    .init(
      "sfixed32", field: 31, [0, -1, 1, .max, .min], set: { $0.sfixed32s = $1 },
      packed: { $0.writePackedSFixed32($1, field: $2) }, element: { $0.writeSFixed32($1, field: $2) }),
    .init(
      "sfixed64", field: 32, [0, -1, 1, .max, .min], set: { $0.sfixed64s = $1 },
      packed: { $0.writePackedSFixed64($1, field: $2) }, element: { $0.writeSFixed64($1, field: $2) }),
    .init(
      "float", field: 33, [0, -1.5, .infinity, -.infinity, .greatestFiniteMagnitude], set: { $0.floats = $1 },
      packed: { $0.writePackedFloat($1, field: $2) }, element: { $0.writeFloat($1, field: $2) }),
    .init(
      "double", field: 34, [0, -1.5, .infinity, -.infinity, .leastNonzeroMagnitude], set: { $0.doubles = $1 },
      packed: { $0.writePackedDouble($1, field: $2) }, element: { $0.writeDouble($1, field: $2) }),
  ]
}

@Suite("Repeated fields")
struct RepeatedFieldTests {
  @Test("packed, unpacked and mixed encodings decode to the same array", arguments: RepeatedCase.all)
  func packedAndUnpackedAgree(c: RepeatedCase) throws {
    #expect(c.packed != c.unpacked)
    #expect(try AllKinds(serializedBytes: c.packed) == c.expected)
    #expect(try AllKinds(serializedBytes: c.unpacked) == c.expected)
    // Unpacked and packed occurrences of one field append in the order they arrive.
    #expect(try AllKinds(serializedBytes: c.mixed) == c.expected)
    // The packed encoding is the canonical one, and the one this codec writes.
    #expect(c.expected.serializedBytes() == c.packed)
    #expect(c.expected.encodedSize() == c.packed.count)
  }

  @Test("a packed run split in two appends, and an empty run adds nothing", arguments: RepeatedCase.all)
  func splitAndEmptyRuns(c: RepeatedCase) throws {
    // The packed run, an empty packed run of the same field (tag, length 0), then the run again.
    let tag = written { $0.writeTag(c.field, .lengthDelimited) }
    let twice = try AllKinds(serializedBytes: c.packed + tag + [0x00] + c.packed)
    let once = try AllKinds(serializedBytes: c.packed)
    var expected = once
    expected.appendRepeatedScalars(of: once)
    #expect(twice == expected)
    #expect(try AllKinds(serializedBytes: tag + [0x00]) == AllKinds())
  }

  @Test("packed int32 spelled out")
  func packedInt32Vector() throws {
    // int32s (field 21, length-delimited: AA 01), length 13: 1 (01), -1 (FF×9 01), 300 (AC 02).
    let packed: [UInt8] = [
      0xAA, 0x01, 0x0D, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0xAC, 0x02,
    ]
    // The same three values unpacked: int32s (field 21, varint: A8 01) three times.
    let unpacked: [UInt8] = [
      0xA8, 0x01, 0x01,
      0xA8, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,
      0xA8, 0x01, 0xAC, 0x02,
    ]
    #expect(try AllKinds(serializedBytes: packed).int32s == [1, -1, 300])
    #expect(try AllKinds(serializedBytes: unpacked).int32s == [1, -1, 300])
    var message = AllKinds()
    message.int32s = [1, -1, 300]
    #expect(message.serializedBytes() == packed)
  }

  @Test("packed double spelled out")
  func packedDoubleVector() throws {
    // doubles (field 34, length-delimited: 92 02), length 16: 1.5 (3FF8 0000 0000 0000), -0.0 (8000 0000 0000 0000).
    let packed: [UInt8] = [
      0x92, 0x02, 0x10,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80,
    ]
    let decoded = try AllKinds(serializedBytes: packed)
    #expect(decoded.doubles.map(\.bitPattern) == [0x3FF8_0000_0000_0000, 0x8000_0000_0000_0000])
    #expect(decoded.serializedBytes() == packed)
    // Unpacked: doubles (field 34, fixed64: 91 02) twice.
    let unpacked: [UInt8] = [
      0x91, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F,
      0x91, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80,
    ]
    #expect(try AllKinds(serializedBytes: unpacked).doubles.map(\.bitPattern) == decoded.doubles.map(\.bitPattern))
  }

  @Test("packed bools accept any varint and are written back one byte each")
  func packedBoolsNonCanonical() throws {
    // bools (field 27, length-delimited: DA 01), length 4: 1, 128 (80 01), 0.
    let message = try AllKinds(serializedBytes: [0xDA, 0x01, 0x04, 0x01, 0x80, 0x01, 0x00])
    #expect(message.bools == [true, true, false])
    #expect(message.serializedBytes() == [0xDA, 0x01, 0x03, 0x01, 0x01, 0x00])
  }

  @Test(
    "a packed fixed-width run whose length is not a multiple of the width is malformed",
    arguments: [
      ([0xEA, 0x01, 0x03, 0x01, 0x02, 0x03] as [UInt8], 29),  // fixed32s (EA 01), length 3
      ([0xF2, 0x01, 0x04, 0x01, 0x02, 0x03, 0x04], 30),  // fixed64s (F2 01), length 4
      ([0xFA, 0x01, 0x05, 0x01, 0x02, 0x03, 0x04, 0x05], 31),  // sfixed32s (FA 01), length 5
      ([0x82, 0x02, 0x0C] + [UInt8](repeating: 0, count: 12), 32),  // sfixed64s (82 02), length 12
      ([0x8A, 0x02, 0x01, 0x00], 33),  // floats (8A 02), length 1
      ([0x92, 0x02, 0x07] + [UInt8](repeating: 0, count: 7), 34),  // doubles (92 02), length 7
    ] as [([UInt8], Int)])
  func malformedPackedFixed(bytes: [UInt8], field: Int) {
    #expect(throws: WireDecodingError(.malformedPackedField(field: field), offset: 0)) {
      try AllKinds(serializedBytes: bytes)
    }
    // After another field the offset still names the packed field's tag.
    #expect(throws: WireDecodingError(.malformedPackedField(field: field), offset: 2)) {
      try AllKinds(serializedBytes: [0x08, 0x01] + bytes)
    }
  }

  @Test("a varint cut off by the end of a packed run is truncated at the run's end, not read past it")
  func truncatedInsideRun() {
    // int32s (AA 01), length 1, 80 (a varint that continues), then 01 outside the run.
    #expect(throws: WireDecodingError(.truncated, offset: 4)) {
      try AllKinds(serializedBytes: [0xAA, 0x01, 0x01, 0x80, 0x01])
    }
    // An eleven-byte varint inside a packed run (length 11) is malformed, at its first byte.
    let run: [UInt8] = [UInt8](repeating: 0xFF, count: 10) + [0x01]
    #expect(throws: WireDecodingError(.malformedVarint, offset: 3)) {
      try AllKinds(serializedBytes: [0xAA, 0x01, 0x0B] + run)
    }
  }

  @Test("a packed run longer than the input is reported at its length")
  func packedLengthPastEnd() {
    // fixed32s (EA 01), length 8, four bytes follow.
    #expect(throws: WireDecodingError(.lengthPastEnd(length: 8), offset: 2)) {
      try AllKinds(serializedBytes: [0xEA, 0x01, 0x08, 0x01, 0x02, 0x03, 0x04])
    }
  }

  @Test("fields after a packed run are read normally")
  func afterRun() throws {
    // int32s (AA 01) length 2: 5, 6; then int32 (08) = 7; then int32s unpacked (A8 01) = 8.
    let message = try AllKinds(serializedBytes: [0xAA, 0x01, 0x02, 0x05, 0x06, 0x08, 0x07, 0xA8, 0x01, 0x08])
    #expect(message.int32s == [5, 6, 8])
    #expect(message.int32 == 7)
  }

  @Test("repeated strings, bytes and messages append one element per occurrence")
  func lengthDelimitedElements() throws {
    let bytes: [UInt8] = [
      0x9A, 0x02, 0x01, 0x61,  // strings (9A 02): "a"
      0xA2, 0x02, 0x02, 0x00, 0xFF,  // byteStrings (A2 02): 00 FF
      0xAA, 0x02, 0x02, 0x08, 0x01,  // inners (AA 02): { a: 1 }
      0x9A, 0x02, 0x00,  // strings: ""
      0xAA, 0x02, 0x00,  // inners: {}
      0xA2, 0x02, 0x00,  // byteStrings: empty
      0x9A, 0x02, 0x02, 0x62, 0x63,  // strings: "bc"
      0xAA, 0x02, 0x03, 0x12, 0x01, 0x7A,  // inners: { b: "z" }
    ]
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.strings == ["a", "", "bc"])
    #expect(message.byteStrings == [[0x00, 0xFF], []])
    #expect(message.inners == [Inner(a: 1), Inner(), Inner(b: "z")])
    // Re-encoded grouped by field number, each field's elements in order.
    let reencoded = try AllKinds(serializedBytes: message.serializedBytes())
    #expect(reencoded == message)
    #expect(message.encodedSize() == bytes.count)
  }
}

extension AllKinds {
  /// Appends the repeated scalar fields of `other` to this message's.
  fileprivate mutating func appendRepeatedScalars(of other: AllKinds) {
    int32s += other.int32s
    int64s += other.int64s
    uint32s += other.uint32s
    uint64s += other.uint64s
    sint32s += other.sint32s
    sint64s += other.sint64s
    bools += other.bools
    colors += other.colors
    fixed32s += other.fixed32s
    fixed64s += other.fixed64s
    sfixed32s += other.sfixed32s
    sfixed64s += other.sfixed64s
    floats += other.floats
    doubles += other.doubles
  }
}
