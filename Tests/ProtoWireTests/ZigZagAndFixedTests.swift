// Tests/ProtoWireTests/ZigZagAndFixedTests.swift - sint32/sint64, and the fixed-width kinds

import ProtoWire
import Testing

@Suite("ZigZag")
struct ZigZagTests {
  @Test(
    "32-bit mapping",
    arguments: [
      (Int32(0), UInt32(0)),
      (-1, 1),
      (1, 2),
      (-2, 3),
      (2, 4),
      (-64, 127),  // the last value that fits one varint byte
      (64, 128),
      (Int32.max, 0xFFFF_FFFE),
      (Int32.min, 0xFFFF_FFFF),
    ] as [(Int32, UInt32)])
  func mapping32(signed: Int32, unsigned: UInt32) {
    #expect(ZigZag.encoded(signed) == unsigned)
    #expect(ZigZag.decoded(unsigned) == signed)
  }

  @Test(
    "64-bit mapping",
    arguments: [
      (Int64(0), UInt64(0)),
      (-1, 1),
      (1, 2),
      (-2, 3),
      (Int64(Int32.max), 0xFFFF_FFFE),
      (Int64(Int32.min), 0xFFFF_FFFF),
      (Int64(Int32.max) + 1, 0x1_0000_0000),
      (Int64.max, 0xFFFF_FFFF_FFFF_FFFE),
      (Int64.min, 0xFFFF_FFFF_FFFF_FFFF),
    ] as [(Int64, UInt64)])
  func mapping64(signed: Int64, unsigned: UInt64) {
    #expect(ZigZag.encoded(signed) == unsigned)
    #expect(ZigZag.decoded(unsigned) == signed)
  }

  @Test("round trip over a spread of values")
  func roundTrip() {
    for shift in 0..<63 {
      for base in [Int64(1) << shift, -(Int64(1) << shift)] {
        for value in [base - 1, base, base + 1] {
          #expect(ZigZag.decoded(ZigZag.encoded(value)) == value)
          let narrow = Int32(truncatingIfNeeded: value)
          #expect(ZigZag.decoded(ZigZag.encoded(narrow)) == narrow)
        }
      }
    }
  }

  @Test(
    "sint32 fields on the wire",
    arguments: [
      ([0x28, 0x01], Int32(-1)),  // sint32 (tag 28) = -1: zigzag 1
      ([0x28, 0x02], 1),  // zigzag 2
      ([0x28, 0x7F], -64),  // zigzag 127, one byte
      ([0x28, 0x80, 0x01], 64),  // zigzag 128, two bytes
      ([0x28, 0xFE, 0xFF, 0xFF, 0xFF, 0x0F], .max),  // zigzag 0xFFFFFFFE, five bytes
      ([0x28, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], .min),  // zigzag 0xFFFFFFFF, five bytes (not ten like int32)
    ] as [([UInt8], Int32)])
  func sint32Wire(bytes: [UInt8], value: Int32) throws {
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.sint32 == value)
    #expect(message.serializedBytes() == bytes)
    #expect(WireSize.sint32(value, field: 5) == bytes.count)
  }

  @Test(
    "sint64 fields on the wire",
    arguments: [
      ([0x30, 0x01], Int64(-1)),  // sint64 (tag 30) = -1
      ([0x30, 0x03], -2),
      ([0x30, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], .max),  // zigzag 2^64 - 2
      ([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], .min),  // zigzag 2^64 - 1
    ] as [([UInt8], Int64)])
  func sint64Wire(bytes: [UInt8], value: Int64) throws {
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.sint64 == value)
    #expect(message.serializedBytes() == bytes)
    #expect(WireSize.sint64(value, field: 6) == bytes.count)
  }
}

@Suite("Fixed-width fields")
struct FixedWidthTests {
  @Test(
    "fixed32 and sfixed32 are four little-endian bytes",
    arguments: [
      ([0x4D, 0x78, 0x56, 0x34, 0x12], UInt32(0x1234_5678)),  // fixed32 (tag 4D)
      ([0x4D, 0xFF, 0xFF, 0xFF, 0xFF], .max),
      ([0x4D, 0x01, 0x00, 0x00, 0x00], 1),  // small values still take four bytes
    ] as [([UInt8], UInt32)])
  func fixed32(bytes: [UInt8], value: UInt32) throws {
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.fixed32 == value)
    #expect(message.serializedBytes() == bytes)
    // The same payload under sfixed32 (tag 5D) is the same bits, signed.
    let signed = try AllKinds(serializedBytes: [0x5D] + bytes.dropFirst())
    #expect(signed.sfixed32 == Int32(bitPattern: value))
    #expect(signed.serializedBytes() == [0x5D] + bytes.dropFirst())
  }

  @Test(
    "fixed64 and sfixed64 are eight little-endian bytes",
    arguments: [
      ([0x51, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01], UInt64(0x0102_0304_0506_0708)),  // fixed64 (tag 51)
      ([0x51, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], .max),
      ([0x51, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80], 1 << 63),  // Int64.min as sfixed64
    ] as [([UInt8], UInt64)])
  func fixed64(bytes: [UInt8], value: UInt64) throws {
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.fixed64 == value)
    #expect(message.serializedBytes() == bytes)
    // The same payload under sfixed64 (tag 61).
    let signed = try AllKinds(serializedBytes: [0x61] + bytes.dropFirst())
    #expect(signed.sfixed64 == Int64(bitPattern: value))
    #expect(signed.serializedBytes() == [0x61] + bytes.dropFirst())
  }

  @Test(
    "float keeps its exact bits, -0.0, infinities and NaN payloads included",
    arguments: [
      ([0x6D, 0x00, 0x00, 0x80, 0x3F], UInt32(0x3F80_0000)),  // float (tag 6D) = 1.0
      ([0x6D, 0x00, 0x00, 0x00, 0x80], 0x8000_0000),  // -0.0: only the sign bit
      ([0x6D, 0x00, 0x00, 0x80, 0x7F], 0x7F80_0000),  // +infinity
      ([0x6D, 0x00, 0x00, 0x80, 0xFF], 0xFF80_0000),  // -infinity
      ([0x6D, 0x01, 0x00, 0xC0, 0x7F], 0x7FC0_0001),  // quiet NaN with payload 1
      ([0x6D, 0x01, 0x00, 0x00, 0x00], 0x0000_0001),  // smallest subnormal
    ] as [([UInt8], UInt32)])
  func float(bytes: [UInt8], bits: UInt32) throws {
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.float.bitPattern == bits)
    #expect(message.serializedBytes() == bytes)
  }

  @Test(
    "double keeps its exact bits, -0.0, infinities and NaN payloads included",
    arguments: [
      ([0x71, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0x3F], UInt64(0x3FF0_0000_0000_0000)),  // double (tag 71) = 1.0
      ([0x71, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80], 0x8000_0000_0000_0000),  // -0.0
      ([0x71, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0x7F], 0x7FF0_0000_0000_0000),  // +infinity
      ([0x71, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0xFF], 0xFFF0_0000_0000_0000),  // -infinity
      ([0x71, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x7F], 0x7FF8_0000_0000_0001),  // quiet NaN, payload 1
      ([0x71, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00], 0x0000_0000_0000_0001),  // smallest subnormal
    ] as [([UInt8], UInt64)])
  func double(bytes: [UInt8], bits: UInt64) throws {
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.double.bitPattern == bits)
    #expect(message.serializedBytes() == bytes)
  }

  @Test("-0.0 is written and decodes with its sign; +0.0 is the default and is left out")
  func negativeZero() throws {
    var message = AllKinds()
    message.float = -0.0
    message.double = -0.0
    let bytes = message.serializedBytes()
    // float (6D) 00 00 00 80, double (71) 00×7 80.
    #expect(bytes == [0x6D, 0x00, 0x00, 0x00, 0x80, 0x71, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80])
    let decoded = try AllKinds(serializedBytes: bytes)
    #expect(decoded.float.sign == .minus && decoded.float.isZero)
    #expect(decoded.double.sign == .minus && decoded.double.isZero)
    message.float = 0
    message.double = 0
    #expect(message.serializedBytes().isEmpty)
  }

  @Test(
    "a fixed-width value cut off by the end of input is truncated at its first byte",
    arguments: [
      ([0x4D, 0x01, 0x02, 0x03]),  // fixed32 (tag 4D) with three of four bytes
      ([0x6D]),  // float with none
      ([0x51, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07]),  // fixed64 (tag 51) with seven of eight
      ([0x71, 0x00]),  // double with one
    ] as [[UInt8]])
  func truncated(bytes: [UInt8]) {
    #expect(throws: WireDecodingError(.truncated, offset: 1)) { try AllKinds(serializedBytes: bytes) }
  }

  @Test("raw fixed reads are little-endian and bounds-checked")
  func rawReads() throws {
    let bytes: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B]
    try withReader(bytes) { (reader) throws in
      #expect(try reader.readRawFixed32() == 0x0403_0201)
      #expect(reader.offset == 4)
      #expect(reader.remainingInMessage == 7)
      // Seven bytes remain: a fixed64 does not fit and the cursor does not move.
      #expect(throws: WireDecodingError(.truncated, offset: 4)) { try reader.readRawFixed64() }
      #expect(reader.offset == 4)
      #expect(try reader.readRawFixed32() == 0x0807_0605)
      #expect(throws: WireDecodingError(.truncated, offset: 8)) { try reader.readRawFixed32() }
    }
    #expect(try withReader(Array(bytes.prefix(8))) { try $0.readRawFixed64() } == 0x0807_0605_0403_0201)
  }
}
