// Tests/ProtoWireTests/VarintTests.swift - base-128 varints: boundaries, limits, truncation

import ProtoWire
import Testing

@Suite("Varint")
struct VarintTests {
  @Test(
    "encodes and decodes at each length boundary",
    arguments: [
      (UInt64(0), [0x00]),  // smallest: one zero byte
      (1, [0x01]),
      (127, [0x7F]),  // largest one-byte value
      (128, [0x80, 0x01]),  // smallest two-byte value: 0 + continuation, then 1 << 7
      (150, [0x96, 0x01]),  // the protobuf documentation's example
      (300, [0xAC, 0x02]),
      (16_383, [0xFF, 0x7F]),  // largest two-byte value (2^14 - 1)
      (16_384, [0x80, 0x80, 0x01]),  // smallest three-byte value (2^14)
      (2_097_151, [0xFF, 0xFF, 0x7F]),  // 2^21 - 1
      (2_097_152, [0x80, 0x80, 0x80, 0x01]),  // 2^21
      (268_435_455, [0xFF, 0xFF, 0xFF, 0x7F]),  // 2^28 - 1
      (268_435_456, [0x80, 0x80, 0x80, 0x80, 0x01]),  // 2^28
      (UInt64(UInt32.max), [0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),  // 2^32 - 1: five bytes
      (1 << 32, [0x80, 0x80, 0x80, 0x80, 0x10]),
      ((1 << 35) - 1, [0xFF, 0xFF, 0xFF, 0xFF, 0x7F]),  // 2^35 - 1: largest five-byte value
      (1 << 35, [0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),  // six bytes
      (1 << 63, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),  // top bit alone: ten bytes
      // 64 ones: ten bytes, the last holding a single bit
      (UInt64.max, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
    ] as [(UInt64, [UInt8])])
  func boundaries(value: UInt64, encoding: [UInt8]) throws {
    #expect(varint(value) == encoding)
    #expect(Varint.size(of: value) == encoding.count)
    let decoded = try readVarint(encoding)
    #expect(decoded.value == value)
    #expect(decoded.length == encoding.count)
  }

  @Test("Varint.size(of:) agrees with the writer and the reader for every bit width")
  func sizeAgreesWithWriter() throws {
    var values: Set<UInt64> = [0, 1, UInt64.max, UInt64.max - 1]
    for shift in 0..<64 {
      let power = UInt64(1) << shift
      values.formUnion([power, power - 1, power + 1, power | (power >> 1), ~power])
    }
    // A deterministic spread of arbitrary values as well (SplitMix64).
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    for _ in 0..<2000 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      z ^= z >> 31
      values.insert(z >> (z & 63))
    }
    #expect(values.count > 2000)
    for value in values {
      let bytes = varint(value)
      #expect(bytes.count == Varint.size(of: value), "size of \(value)")
      #expect((1...10).contains(bytes.count))
      // Every byte but the last carries the continuation bit.
      #expect(bytes.dropLast().allSatisfy { $0 & 0x80 != 0 } && bytes.last! & 0x80 == 0)
      let decoded = try readVarint(bytes)
      #expect(decoded.value == value && decoded.length == bytes.count)
    }
  }

  @Test("a ten-byte varint is accepted; bits past the 64th are dropped")
  func tenByteMaximum() throws {
    // Nine 0xFF bytes then 0x7F: 63 + 7 bits, of which only the lowest of the last byte's fits.
    let overlong: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]
    #expect(try readVarint(overlong) == (UInt64.max, 10))
    // 1 padded with nine continuation bytes of zero bits: a non-minimal but valid ten-byte encoding of 1.
    let padded: [UInt8] = [0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]
    #expect(try readVarint(padded) == (1, 10))
  }

  @Test(
    "a varint running past ten bytes is malformed, reported at its first byte",
    arguments: [
      // Eleven bytes: ten with the continuation bit, then a terminator.
      [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
      // Eleven bytes of UInt64.max padding.
      [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
      // Ten continuation bytes, then the input ends: the tenth already promises an eleventh.
      [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
    ] as [[UInt8]])
  func elevenBytesIsMalformed(bytes: [UInt8]) {
    #expect(throws: WireDecodingError(.malformedVarint, offset: 0)) { try readVarint(bytes) }
  }

  @Test("a malformed varint inside a field is reported where the varint starts")
  func malformedInsideField() {
    // int32 = 1 (08 01), then field 1 again (08) with an eleven-byte value starting at byte 3.
    let bytes: [UInt8] = [0x08, 0x01, 0x08] + [UInt8](repeating: 0x80, count: 10) + [0x01]
    #expect(throws: WireDecodingError(.malformedVarint, offset: 3)) { try AllKinds(serializedBytes: bytes) }
  }

  @Test(
    "a varint cut off by the end of input is truncated, at the offset where input ran out",
    arguments: [
      ([0x80], 1),  // continuation bit, then nothing
      ([0xFF, 0xFF], 2),
      ([0x96], 1),  // 150 missing its second byte
      ([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], 9),  // nine of ten bytes
    ] as [([UInt8], Int)])
  func truncated(bytes: [UInt8], offset: Int) {
    #expect(throws: WireDecodingError(.truncated, offset: offset)) { try readVarint(bytes) }
  }

  @Test("reading a varint at the end of input is truncated")
  func emptyInput() {
    #expect(throws: WireDecodingError(.truncated, offset: 0)) { try readVarint([]) }
  }

  @Test("a field value cut off by the end of input is truncated")
  func truncatedFieldValue() {
    // int64 (tag 10) = 150 but only its first byte (96) arrives; input ends at byte 2.
    #expect(throws: WireDecodingError(.truncated, offset: 2)) { try AllKinds(serializedBytes: [0x10, 0x96]) }
    // uint64 (tag 20) with no value at all.
    #expect(throws: WireDecodingError(.truncated, offset: 1)) { try AllKinds(serializedBytes: [0x20]) }
  }

  @Test("a negative int32 is sign-extended to ten bytes and decodes back")
  func negativeInt32() throws {
    var message = AllKinds()
    message.int32 = -1
    let bytes = message.serializedBytes()
    // Tag 08 (field 1, varint), then -1 as a 64-bit two's complement varint: nine FF and 01.
    #expect(bytes == [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
    #expect(WireSize.int32(-1, field: 1) == 11)
    #expect(try AllKinds(serializedBytes: bytes).int32 == -1)

    message.int32 = .min
    // -2^31 = 0xFFFF_FFFF_8000_0000: 80 80 80 80 F8 FF FF FF FF 01.
    #expect(message.serializedBytes() == [0x08, 0x80, 0x80, 0x80, 0x80, 0xF8, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
    #expect(try AllKinds(serializedBytes: message.serializedBytes()).int32 == .min)
  }

  @Test("a negative int32 sent as five bytes (not sign-extended) still decodes, by truncation")
  func int32FromFiveBytes() throws {
    // 08, then 0xFFFF_FFFF as a five-byte varint: some encoders send -1 this way.
    #expect(try AllKinds(serializedBytes: [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]).int32 == -1)
  }

  @Test(
    "int64 fields at their extremes",
    arguments: [
      // int64 (tag 10) = Int64.min: 80×9 then 01.
      ([0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], Int64.min),
      // int64 (tag 10) = Int64.max: FF×8 then 7F.
      ([0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], Int64.max),
      // int64 (tag 10) = -1: FF×9 then 01.
      ([0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], -1),
      // int64 (tag 10) = 1: one byte.
      ([0x10, 0x01], 1),
    ] as [([UInt8], Int64)])
  func int64Extremes(bytes: [UInt8], value: Int64) throws {
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.int64 == value)
    #expect(message.serializedBytes() == bytes)
    #expect(WireSize.int64(value, field: 2) == bytes.count)
  }

  @Test("unsigned varint fields at their extremes, and uint32 truncating a wider varint")
  func unsignedExtremes() throws {
    // uint32 (tag 18) = 4294967295: FF FF FF FF 0F.
    var message = try AllKinds(serializedBytes: [0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F])
    #expect(message.uint32 == .max)
    #expect(message.serializedBytes() == [0x18, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F])
    // uint64 (tag 20) = 2^64 - 1: FF×9 01.
    message = try AllKinds(serializedBytes: [0x20, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
    #expect(message.uint64 == .max)
    // uint32 (tag 18) given 2^32 + 5 keeps the low 32 bits, as protobuf's parsers do.
    message = try AllKinds(serializedBytes: [0x18, 0x85, 0x80, 0x80, 0x80, 0x10])
    #expect(message.uint32 == 5)
  }

  @Test("bool: any non-zero varint is true, and true is written as 1")
  func bools() throws {
    // bool (tag 38) = 2: non-canonical but true.
    let message = try AllKinds(serializedBytes: [0x38, 0x02])
    #expect(message.bool)
    #expect(message.serializedBytes() == [0x38, 0x01])
    // bool (tag 38) = 2^63 (ten bytes): true as well.
    #expect(try AllKinds(serializedBytes: [0x38] + varint(1 << 63)).bool)
    // bool (tag 38) = 0: false, and nothing is written back.
    let falseMessage = try AllKinds(serializedBytes: [0x38, 0x00])
    #expect(!falseMessage.bool)
    #expect(falseMessage.serializedBytes().isEmpty)
  }

  @Test("an enum keeps values it does not name, including negative ones")
  func openEnum() throws {
    // enum (tag 40) = 99.
    let message = try AllKinds(serializedBytes: [0x40, 0x63])
    #expect(message.color == Color(rawValue: 99))
    #expect(message.color.protoName == "99")
    #expect(message.serializedBytes() == [0x40, 0x63])
    // enum (tag 40) = -3, sign-extended to ten bytes like int32.
    let negative: [UInt8] = [0x40, 0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]
    let decoded = try AllKinds(serializedBytes: negative)
    #expect(decoded.color.rawValue == -3)
    #expect(decoded.serializedBytes() == negative)
  }
}
