// Tests/ProtoWireTests/WriterTests.swift - the size pass and the write pass agree

import ProtoWire
import Testing

/// A message whose `encodedSize()` is off by `delta` from the two bytes it writes.
struct LyingSize: ProtoMessage {
  static let protoMessageName = "protowire.test.LyingSize"
  var delta = 0
  var unknownFields = UnknownFields()

  init() {}
  init(delta: Int) { self.delta = delta }

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() { try reader.skipField(tag, into: &unknownFields) }
  }
  func encodedSize() -> Int { 2 + delta }
  func encodeFields(to writer: inout WireWriter) { writer.writeInt32(1, field: 1) }
}

@Suite("WireWriter and WireSize")
struct WriterTests {
  /// Checks that `body` writes exactly `size` bytes.
  static func check(
    _ what: String, _ size: Int, sourceLocation: SourceLocation = #_sourceLocation, _ body: (inout WireWriter) -> Void
  ) {
    let bytes = written(capacity: 70_000, body)
    #expect(bytes.count == size, "\(what)", sourceLocation: sourceLocation)
  }

  static let fieldNumbers = [1, 15, 16, 2047, 2048, 262_143, 262_144, 33_554_431, 33_554_432, 536_870_911]

  @Test("each WireSize function matches what the writer writes", arguments: fieldNumbers)
  func sizesMatchWrites(field f: Int) {
    for v: Int32 in [0, 1, -1, 63, 64, 127, 128, 16_383, 16_384, .max, .min] {
      Self.check("int32 \(v)", WireSize.int32(v, field: f)) { $0.writeInt32(v, field: f) }
      Self.check("sint32 \(v)", WireSize.sint32(v, field: f)) { $0.writeSInt32(v, field: f) }
      Self.check("enum \(v)", WireSize.enum(Color(rawValue: v), field: f)) {
        $0.writeEnum(Color(rawValue: v), field: f)
      }
      Self.check("sfixed32 \(v)", WireSize.fixed32(field: f)) { $0.writeSFixed32(v, field: f) }
    }
    for v: Int64 in [0, 1, -1, 1 << 35, -(1 << 35), .max, .min] {
      Self.check("int64 \(v)", WireSize.int64(v, field: f)) { $0.writeInt64(v, field: f) }
      Self.check("sint64 \(v)", WireSize.sint64(v, field: f)) { $0.writeSInt64(v, field: f) }
      Self.check("sfixed64 \(v)", WireSize.fixed64(field: f)) { $0.writeSFixed64(v, field: f) }
    }
    for v: UInt32 in [0, 127, 128, 1 << 28, .max] {
      Self.check("uint32 \(v)", WireSize.uint32(v, field: f)) { $0.writeUInt32(v, field: f) }
      Self.check("fixed32 \(v)", WireSize.fixed32(field: f)) { $0.writeFixed32(v, field: f) }
    }
    for v: UInt64 in [0, 127, 128, 1 << 56, 1 << 63, .max] {
      Self.check("uint64 \(v)", WireSize.uint64(v, field: f)) { $0.writeUInt64(v, field: f) }
      Self.check("fixed64 \(v)", WireSize.fixed64(field: f)) { $0.writeFixed64(v, field: f) }
    }
    for v in [false, true] {
      Self.check("bool \(v)", WireSize.bool(v, field: f)) { $0.writeBool(v, field: f) }
    }
    for v: Float in [0, -0.0, .infinity, .nan] {
      Self.check("float \(v)", WireSize.float(v, field: f)) { $0.writeFloat(v, field: f) }
    }
    for v: Double in [0, -0.0, .infinity, .nan] {
      Self.check("double \(v)", WireSize.double(v, field: f)) { $0.writeDouble(v, field: f) }
    }
    for count in [0, 1, 127, 128, 16_383, 16_384] {
      let string = String(repeating: "é", count: count / 2) + (count % 2 == 1 ? "x" : "")
      #expect(string.utf8.count == count)
      Self.check("string of \(count) bytes", WireSize.string(string, field: f)) { $0.writeString(string, field: f) }
      let bytes = [UInt8](repeating: 0xAB, count: count)
      Self.check("bytes of \(count)", WireSize.bytes(bytes, field: f)) { $0.writeBytes(bytes, field: f) }
      #expect(WireSize.lengthDelimited(count, field: f) == WireSize.bytes(bytes, field: f))
      let inner = Inner(b: String(repeating: "m", count: count))
      Self.check("message of \(count)", WireSize.message(inner, field: f)) { $0.writeMessage(inner, field: f) }
      let strings = [String](repeating: string, count: 3)
      Self.check("repeated string", WireSize.repeatedString(strings, field: f)) {
        $0.writeRepeatedString(strings, field: f)
      }
      Self.check("repeated bytes", WireSize.repeatedBytes([bytes, []], field: f)) {
        $0.writeRepeatedBytes([bytes, []], field: f)
      }
      Self.check("repeated message", WireSize.repeatedMessage([inner, Inner()], field: f)) {
        $0.writeRepeatedMessage([inner, Inner()], field: f)
      }
    }
    for count in [0, 1, 2, 40, 200] {
      let int32s = (0..<count).map { Int32(truncatingIfNeeded: $0 &* 0x0101_0101 &- 1000) }
      let int64s = int32s.map { Int64($0) << 20 }
      Self.check("packed int32 ×\(count)", WireSize.packedInt32(int32s, field: f)) {
        $0.writePackedInt32(int32s, field: f)
      }
      Self.check("packed sint32 ×\(count)", WireSize.packedSInt32(int32s, field: f)) {
        $0.writePackedSInt32(int32s, field: f)
      }
      Self.check("packed sfixed32 ×\(count)", WireSize.packedFixed32(count: count, field: f)) {
        $0.writePackedSFixed32(int32s, field: f)
      }
      Self.check("packed enum ×\(count)", WireSize.packedEnum(int32s.map(Color.init(rawValue:)), field: f)) {
        $0.writePackedEnum(int32s.map(Color.init(rawValue:)), field: f)
      }
      Self.check("packed int64 ×\(count)", WireSize.packedInt64(int64s, field: f)) {
        $0.writePackedInt64(int64s, field: f)
      }
      Self.check("packed sint64 ×\(count)", WireSize.packedSInt64(int64s, field: f)) {
        $0.writePackedSInt64(int64s, field: f)
      }
      Self.check("packed sfixed64 ×\(count)", WireSize.packedFixed64(count: count, field: f)) {
        $0.writePackedSFixed64(int64s, field: f)
      }
      let uint32s = int32s.map { UInt32(bitPattern: $0) }
      let uint64s = int64s.map { UInt64(bitPattern: $0) }
      Self.check("packed uint32 ×\(count)", WireSize.packedUInt32(uint32s, field: f)) {
        $0.writePackedUInt32(uint32s, field: f)
      }
      Self.check("packed fixed32 ×\(count)", WireSize.packedFixed32(count: count, field: f)) {
        $0.writePackedFixed32(uint32s, field: f)
      }
      Self.check("packed uint64 ×\(count)", WireSize.packedUInt64(uint64s, field: f)) {
        $0.writePackedUInt64(uint64s, field: f)
      }
      Self.check("packed fixed64 ×\(count)", WireSize.packedFixed64(count: count, field: f)) {
        $0.writePackedFixed64(uint64s, field: f)
      }
      let bools = int32s.map { $0 & 1 == 0 }
      Self.check("packed bool ×\(count)", WireSize.packedBool(bools, field: f)) { $0.writePackedBool(bools, field: f) }
      let floats = int32s.map { Float($0) / 3 }
      Self.check("packed float ×\(count)", WireSize.packedFixed32(count: count, field: f)) {
        $0.writePackedFloat(floats, field: f)
      }
      let doubles = int64s.map { Double($0) / 3 }
      Self.check("packed double ×\(count)", WireSize.packedFixed64(count: count, field: f)) {
        $0.writePackedDouble(doubles, field: f)
      }
    }
  }

  @Test("empty packed fields write nothing and have size 0")
  func emptyPacked() {
    #expect(written { $0.writePackedInt32([], field: 1) }.isEmpty)
    #expect(written { $0.writePackedDouble([], field: 1) }.isEmpty)
    #expect(written { $0.writePackedBool([], field: 1) }.isEmpty)
    #expect(written { $0.writePackedEnum([Color](), field: 1) }.isEmpty)
    #expect(WireSize.packedInt32([], field: 1) == 0)
    #expect(WireSize.packedBool([], field: 1) == 0)
    #expect(WireSize.packedFixed64(count: 0, field: 1) == 0)
    #expect(WireSize.repeatedMessage([Inner](), field: 1) == 0)
  }

  @Test("fields are written as the format specifies")
  func writtenBytes() {
    // sint32 field 2 = -2: tag 10, zigzag 3.
    #expect(written { $0.writeSInt32(-2, field: 2) } == [0x10, 0x03])
    // enum field 3 = -1: tag 18, then ten bytes, like int32.
    #expect(written { $0.writeEnum(Color(rawValue: -1), field: 3) } == [0x18] + varint(.max))
    // fixed32 field 1 = 1: tag 0D, 01 00 00 00.
    #expect(written { $0.writeFixed32(1, field: 1) } == [0x0D, 0x01, 0x00, 0x00, 0x00])
    // string field 2 = "hi": tag 12, length 2.
    #expect(written { $0.writeString("hi", field: 2) } == [0x12, 0x02, 0x68, 0x69])
    // message field 1 = Inner { b: 128 × "m" }: tag 0A, length 131 (83 01), then 12 80 01 and the string.
    let inner = Inner(b: String(repeating: "m", count: 128))
    #expect(
      written { $0.writeMessage(inner, field: 1) }
        == [0x0A, 0x83, 0x01, 0x12, 0x80, 0x01] + [UInt8](repeating: 0x6D, count: 128))
    // packed sint32 field 4 = [-1, 1]: tag 22, length 2, 01 02.
    #expect(written { $0.writePackedSInt32([-1, 1], field: 4) } == [0x22, 0x02, 0x01, 0x02])
    // packed float field 1 = [1.0]: tag 0A, length 4, 00 00 80 3F.
    #expect(written { $0.writePackedFloat([1.0], field: 1) } == [0x0A, 0x04, 0x00, 0x00, 0x80, 0x3F])
    // Unknown fields and raw bytes verbatim; an empty buffer writes nothing.
    #expect(written { $0.writeUnknown(UnknownFields(bytes: [0x18, 0x01])) } == [0x18, 0x01])
    #expect(written { $0.writeRawBytes(UnsafeRawBufferPointer(start: nil, count: 0)) }.isEmpty)
  }

  @Test("written counts every byte")
  func writtenCounter() {
    var storage = [UInt8](repeating: 0, count: 32)
    storage.withUnsafeMutableBytes { raw in
      var writer = WireWriter(raw)
      #expect(writer.written == 0)
      writer.writeRawVarint(300)
      #expect(writer.written == 2)
      writer.writeRawFixed32(0)
      #expect(writer.written == 6)
      writer.writeRawFixed64(0)
      #expect(writer.written == 14)
      writer.writeTag(16, .varint)
      #expect(writer.written == 16)
    }
  }

  /// A named message, so test output shows the name rather than every field.
  struct Sample: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let message: AllKinds
  }

  static let sampleMessages: [Sample] = {
    var samples = [Sample(testDescription: "empty", message: AllKinds())]
    var everything = AllKinds()
    everything.int32 = -1
    everything.int64 = .min
    everything.uint32 = .max
    everything.uint64 = .max
    everything.sint32 = .min
    everything.sint64 = .min
    everything.bool = true
    everything.color = Color(rawValue: -7)
    everything.fixed32 = 1
    everything.fixed64 = .max
    everything.sfixed32 = -1
    everything.sfixed64 = .min
    everything.float = -0.0
    everything.double = .infinity
    everything.string = "Fleet Engine 🚕"
    everything.bytes = [0, 1, 2, 255]
    everything.inner = Inner(a: -5, b: "inner")
    everything.int32s = [-1, 0, 1]
    everything.int64s = [.min, .max]
    everything.uint32s = [.max]
    everything.uint64s = [.max, 0]
    everything.sint32s = [.min, .max]
    everything.sint64s = [.min, .max]
    everything.bools = [true, false]
    everything.colors = [.red, Color(rawValue: -1)]
    everything.fixed32s = [1, 2, 3]
    everything.fixed64s = [4]
    everything.sfixed32s = [-1]
    everything.sfixed64s = [-2, 2]
    everything.floats = [1.5, -.infinity]
    everything.doubles = [-0.5]
    everything.strings = ["", "a", String(repeating: "b", count: 300)]
    everything.byteStrings = [[], [0xFF]]
    everything.inners = [Inner(), Inner(a: 1), Inner(b: String(repeating: "c", count: 20_000))]
    everything.unknownFields = UnknownFields(bytes: [0x98, 0x06, 0x01, 0x9B, 0x06, 0x08, 0x01, 0x9C, 0x06])
    samples.append(Sample(testDescription: "every field set", message: everything))
    var big = AllKinds()
    big.bytes = [UInt8](repeating: 7, count: 1 << 17)  // a three-byte length
    big.int32s = (0..<5000).map { Int32($0) - 2500 }
    samples.append(Sample(testDescription: "128 KiB of bytes and 5000 packed int32s", message: big))
    var nested = AllKinds()
    var inner = Inner(a: 1)
    inner.unknownFields = UnknownFields(bytes: [0x18, 0x96, 0x01])
    nested.inner = inner
    nested.inners = [inner, inner]
    samples.append(Sample(testDescription: "embedded messages with unknown fields", message: nested))
    return samples
  }()

  @Test("encodedSize() equals the bytes written, and serializedBytes() fills exactly that", arguments: sampleMessages)
  func encodedSizeMatches(sample: Sample) throws {
    let message = sample.message
    let size = message.encodedSize()
    let bytes = message.serializedBytes()
    #expect(bytes.count == size)
    // Written into a buffer of exactly that size: any overrun would trap in the writer.
    var exact = [UInt8](repeating: 0, count: size)
    let count = exact.withUnsafeMutableBytes { raw in
      var writer = WireWriter(raw)
      message.encodeFields(to: &writer)
      return writer.written
    }
    #expect(count == size)
    #expect(exact == bytes)
    // And the bytes decode back to the message.
    let decoded = try AllKinds(serializedBytes: bytes)
    #expect(decoded == message)
    #expect(decoded.serializedBytes() == bytes)
  }

  @Test("Node chains: encodedSize() matches at every depth")
  func nodeSizes() {
    for depth in [0, 1, 15, 16, 17, 100, 127, 128, 129] {
      let node = Node.chain(depth: depth, leafValue: -1)
      #expect(node.serializedBytes().count == node.encodedSize())
    }
  }

  @Test("a size pass that is too small traps in the writer")
  func undersizedTraps() async {
    await #expect(processExitsWith: .failure) {
      _ = LyingSize(delta: -1).serializedBytes()
    }
  }

  @Test("a size pass that is too large traps in serializedBytes()")
  func oversizedTraps() async {
    await #expect(processExitsWith: .failure) {
      _ = LyingSize(delta: 1).serializedBytes()
    }
    #expect(LyingSize(delta: 0).serializedBytes() == [0x08, 0x01])
  }

  @Test("a field number outside 1...536870911 traps when written")
  func badFieldNumberTraps() async {
    await #expect(processExitsWith: .failure) {
      var storage = [UInt8](repeating: 0, count: 16)
      storage.withUnsafeMutableBytes { raw in
        var writer = WireWriter(raw)
        writer.writeTag(0, .varint)
      }
    }
    await #expect(processExitsWith: .failure) {
      _ = FieldTag(fieldNumber: FieldTag.maxFieldNumber + 1, wireType: .varint)
    }
  }
}
