// Tests/ProtoWireTests/ErrorTests.swift - where errors say they happened, and how they read

import ProtoWire
import Testing

@Suite("Error offsets")
struct ErrorOffsetTests {
  @Test(
    "offsets inside embedded messages count from the start of the top-level input",
    arguments: [
      // inner (8A 01) length 4 { b (12) length 2: C3 28 }: invalid UTF-8, field 2's tag at byte 3.
      ([0x8A, 0x01, 0x04, 0x12, 0x02, 0xC3, 0x28] as [UInt8], WireDecodingError(.invalidUTF8(field: 2), offset: 3)),
      // The same after int32 = 1 (08 01): everything moves two bytes.
      ([0x08, 0x01, 0x8A, 0x01, 0x04, 0x12, 0x02, 0xC3, 0x28], WireDecodingError(.invalidUTF8(field: 2), offset: 5)),
      // inner length 2 { a (08) = 80 }: the varint is cut off by the inner message's end at byte 5,
      // although the next input byte (01) would have completed it.
      ([0x8A, 0x01, 0x02, 0x08, 0x80, 0x01], WireDecodingError(.truncated, offset: 5)),
      // inner length 3 { b (12) length 5 }: the string runs past the inner message (ends at byte 6),
      // though the input has enough bytes. The length is at byte 4.
      (
        [0x8A, 0x01, 0x03, 0x12, 0x05, 0x61, 0x61, 0x61, 0x61, 0x61],
        WireDecodingError(.lengthPastEnd(length: 5), offset: 4)
      ),
      // inner length 1 { field 0 }: field number 0 at byte 3.
      ([0x8A, 0x01, 0x01, 0x00], WireDecodingError(.invalidFieldNumber, offset: 3)),
      // inner length 5 { a as fixed32 (0D) }: wrong wire type at byte 3.
      (
        [0x8A, 0x01, 0x05, 0x0D, 0x01, 0x00, 0x00, 0x00],
        WireDecodingError(.wrongWireType(field: 1, wireType: .fixed32), offset: 3)
      ),
      // inners (AA 02): a valid { a: 1 }, then one holding wire type 7 (0F) at byte 8.
      ([0xAA, 0x02, 0x02, 0x08, 0x01, 0xAA, 0x02, 0x01, 0x0F], WireDecodingError(.invalidWireType(7), offset: 8)),
      // A valid inner, then at the top level wire type 7 (0F) at byte 5: the position and limit are restored.
      ([0x8A, 0x01, 0x02, 0x08, 0x01, 0x0F], WireDecodingError(.invalidWireType(7), offset: 5)),
      // inner length 1 { end group of field 6 (34) }: unmatched at byte 3.
      ([0x8A, 0x01, 0x01, 0x34], WireDecodingError(.unmatchedEndGroup(field: 6), offset: 3)),
    ] as [([UInt8], WireDecodingError)])
  func nestedOffsets(bytes: [UInt8], error: WireDecodingError) {
    #expect(throws: error) { try AllKinds(serializedBytes: bytes) }
  }

  @Test("offsets deep in a chain of messages are absolute", arguments: [1, 2, 10, 50, 100])
  func deepOffsets(depth: Int) {
    // The innermost node holds value (field 1) as fixed32 (0D): the wrong wire type.
    let innermost: [UInt8] = [0x0D, 0x01, 0x00, 0x00, 0x00]
    let (bytes, _) = nestedNodeBytes(depth: depth, innermost: innermost)
    let expected = WireDecodingError(
      .wrongWireType(field: 1, wireType: .fixed32), offset: bytes.count - innermost.count)
    #expect(throws: expected) { try Node(serializedBytes: bytes) }
  }

  @Test("an offset is the reader's position when the problem is found")
  func readerOffset() throws {
    try withReader([0x08, 0x96, 0x01, 0x0F]) { (reader) throws in
      #expect(reader.offset == 0)
      let tag = try #require(try reader.nextTag())
      #expect(reader.offset == 1)
      #expect(try reader.readInt32(tag) == 150)
      #expect(reader.offset == 3)
      #expect(throws: WireDecodingError(.invalidWireType(7), offset: 3)) { try reader.nextTag() }
    }
  }
}

@Suite("WireDecodingError")
struct WireDecodingErrorTests {
  @Test(
    "every kind describes itself with its offset and its details",
    arguments: [
      (WireDecodingError.Kind.truncated, ["truncated"]),
      (.lengthPastEnd(length: 77), ["length 77", "past the end"]),
      (.malformedVarint, ["varint", "10 bytes"]),
      (.invalidWireType(6), ["wire type 6"]),
      (.invalidFieldNumber, ["field number 0"]),
      (.wrongWireType(field: 3, wireType: .fixed32), ["field 3", "fixed32"]),
      (.invalidUTF8(field: 15), ["field 15", "UTF-8"]),
      (.recursionLimitExceeded(limit: 100), ["deeper than 100"]),
      (.messageTooLarge(size: 70_000_000, limit: 67_108_864), ["70000000 bytes", "67108864"]),
      (.unmatchedEndGroup(field: 9), ["group 9", "without its start"]),
      (.unterminatedGroup(field: 12), ["group 12", "not terminated"]),
      (.malformedPackedField(field: 29), ["packed field 29", "multiple"]),
    ] as [(WireDecodingError.Kind, [String])])
  func descriptions(kind: WireDecodingError.Kind, details: [String]) {
    let error = WireDecodingError(kind, offset: 1234)
    #expect(error.description.hasPrefix("protobuf decoding failed at byte 1234: "))
    for detail in details {
      #expect(error.description.contains(detail), "\(error.description) lacks \(detail)")
    }
    #expect("\(error)" == error.description)
  }

  @Test("a real failure reads well")
  func realFailure() {
    do throws(WireDecodingError) {
      _ = try AllKinds(serializedBytes: [0x08, 0x01, 0x7A, 0x02, 0xC3, 0x28])
      Issue.record("decoding should have failed")
    } catch {
      #expect(error.kind == .invalidUTF8(field: 15))
      #expect(error.offset == 2)
      #expect(error.description == "protobuf decoding failed at byte 2: field 15 is not valid UTF-8")
    }
  }

  @Test("errors compare by kind and offset")
  func equality() {
    #expect(WireDecodingError(.truncated, offset: 1) == WireDecodingError(.truncated, offset: 1))
    #expect(WireDecodingError(.truncated, offset: 1) != WireDecodingError(.truncated, offset: 2))
    #expect(WireDecodingError(.invalidWireType(6), offset: 1) != WireDecodingError(.invalidWireType(7), offset: 1))
  }
}
