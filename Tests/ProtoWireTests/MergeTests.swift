// Tests/ProtoWireTests/MergeTests.swift - a field that arrives more than once

import ProtoWire
import Testing

@Suite("Merging repeated occurrences")
struct MergeTests {
  @Test("the last occurrence of a singular scalar wins")
  func lastOneWins() throws {
    let bytes: [UInt8] = [
      0x08, 0x01, 0x08, 0x02,  // int32 = 1, then int32 = 2
      0x28, 0x01, 0x28, 0x04,  // sint32 = -1, then sint32 = 2
      0x38, 0x01, 0x38, 0x00,  // bool = true, then bool = false
      0x40, 0x01, 0x40, 0x02,  // enum = RED, then GREEN
      0x4D, 0x01, 0x00, 0x00, 0x00, 0x4D, 0x02, 0x00, 0x00, 0x00,  // fixed32 = 1, then 2
      0x71, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0x71, 0, 0, 0, 0, 0, 0, 0x00, 0x40,  // double = 1.0, then 2.0
      0x7A, 0x01, 0x61, 0x7A, 0x01, 0x62,  // string = "a", then "b"
      0x82, 0x01, 0x02, 0x01, 0x02, 0x82, 0x01, 0x00,  // bytes = 01 02, then empty
    ]
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.int32 == 2)
    #expect(message.sint32 == 2)
    #expect(!message.bool)
    #expect(message.color == .green)
    #expect(message.fixed32 == 2)
    #expect(message.double == 2.0)
    #expect(message.string == "b")
    #expect(message.bytes == [])
    // Written back once each, defaults left out.
    #expect(
      message.serializedBytes() == [
        0x08, 0x02, 0x28, 0x04, 0x40, 0x02, 0x4D, 0x02, 0x00, 0x00, 0x00,
        0x71, 0, 0, 0, 0, 0, 0, 0x00, 0x40, 0x7A, 0x01, 0x62,
      ])
  }

  @Test("an embedded message that arrives twice is merged, field by field")
  func embeddedMerge() throws {
    let bytes: [UInt8] = [
      0x8A, 0x01, 0x02, 0x08, 0x01,  // inner = { a: 1 }
      0x8A, 0x01, 0x03, 0x12, 0x01, 0x78,  // inner = { b: "x" }: a stays 1
      0x8A, 0x01, 0x02, 0x18, 0x05,  // inner = { field 3 (unknown) = 5 }
      0x8A, 0x01, 0x02, 0x08, 0x07,  // inner = { a: 7 }: a is replaced
      0x8A, 0x01, 0x02, 0x18, 0x06,  // inner = { field 3 (unknown) = 6 }: unknown fields accumulate
    ]
    let message = try AllKinds(serializedBytes: bytes)
    let inner = try #require(message.inner)
    #expect(inner.a == 7)
    #expect(inner.b == "x")
    #expect(inner.unknownFields.bytes == [0x18, 0x05, 0x18, 0x06])
    // One occurrence on the way out: inner (8A 01), length 9: a = 7, b = "x", then the unknown fields.
    #expect(message.serializedBytes() == [0x8A, 0x01, 0x09, 0x08, 0x07, 0x12, 0x01, 0x78, 0x18, 0x05, 0x18, 0x06])
  }

  @Test("merging reaches through nested levels")
  func deepMerge() throws {
    // Node { child { child { value 1 } } } followed by Node { child { value 2, child { } } }
    // gives child.value 2 and child.child.value 1.
    let first: [UInt8] = [0x12, 0x04, 0x12, 0x02, 0x08, 0x01]
    let second: [UInt8] = [0x12, 0x04, 0x08, 0x02, 0x12, 0x00]
    let node = try Node(serializedBytes: first + second)
    #expect(node.child?.value == 2)
    #expect(node.child?.child?.value == 1)
    #expect(node.child?.child?.child == nil)
    #expect(node.serializedBytes() == [0x12, 0x06, 0x08, 0x02, 0x12, 0x02, 0x08, 0x01])
  }

  @Test("repeated fields append across occurrences; singular fields follow last-one-wins")
  func repeatedAppend() throws {
    let bytes: [UInt8] = [
      0xA8, 0x01, 0x01,  // int32s += 1
      0xAA, 0x02, 0x02, 0x08, 0x01,  // inners += { a: 1 }
      0x08, 0x09,  // int32 = 9
      0xA8, 0x01, 0x02,  // int32s += 2
      0xAA, 0x02, 0x02, 0x08, 0x01,  // inners += { a: 1 } again: a second element, not a merge
    ]
    let message = try AllKinds(serializedBytes: bytes)
    #expect(message.int32s == [1, 2])
    #expect(message.inners == [Inner(a: 1), Inner(a: 1)])
    #expect(message.int32 == 9)
  }

  @Test("merge(serializedBytes:) merges into an existing message")
  func mergeAPI() throws {
    var message = AllKinds()
    message.int32 = 1
    message.string = "keep"
    message.int32s = [1]
    message.inner = Inner(a: 1)
    // int32 = 5, int32s += 2, inner = { b: "y" }, unknown field 99 (varint, tag 98 06) = 1.
    try message.merge(serializedBytes: [
      0x08, 0x05, 0xA8, 0x01, 0x02, 0x8A, 0x01, 0x03, 0x12, 0x01, 0x79, 0x98, 0x06, 0x01,
    ])
    #expect(message.int32 == 5)
    #expect(message.string == "keep")
    #expect(message.int32s == [1, 2])
    #expect(message.inner == Inner(a: 1, b: "y"))
    #expect(message.unknownFields.bytes == [0x98, 0x06, 0x01])
    // A merge of nothing changes nothing.
    let before = message
    try message.merge(serializedBytes: [])
    #expect(message == before)
  }

  @Test("a message decodes the same from an array, a slice, a buffer and a non-contiguous sequence")
  func inputKinds() throws {
    let bytes: [UInt8] = [0x0F, 0x08, 0x96, 0x01, 0x7A, 0x02, 0x68, 0x69, 0x0F]  // 0F: field 1, wire type 7
    let core = Array(bytes[1..<8])  // int32 = 150, string = "hi"
    let fromArray = try AllKinds(serializedBytes: core)
    #expect(fromArray.int32 == 150 && fromArray.string == "hi")
    #expect(try AllKinds(serializedBytes: bytes[1..<8]) == fromArray)
    #expect(try AllKinds(serializedBytes: core.lazy.map { $0 }) == fromArray)
    #expect(try AllKinds(serializedBytes: AnySequence(core)) == fromArray)
    let fromBuffer = try core.withUnsafeBytes { try AllKinds(serializedBuffer: $0) }
    #expect(fromBuffer == fromArray)
    // Offsets in errors count from the start of the slice, not of its base array.
    #expect(throws: WireDecodingError(.invalidWireType(7), offset: 7)) { try AllKinds(serializedBytes: bytes[1...]) }
    #expect(throws: WireDecodingError(.invalidWireType(7), offset: 7)) {
      try AllKinds(serializedBytes: AnySequence(bytes[1...]))
    }
  }

  @Test("isEmpty is true only for the default message")
  func isEmpty() throws {
    #expect(AllKinds().isEmpty)
    #expect(try AllKinds(serializedBytes: []).isEmpty)
    #expect(try !AllKinds(serializedBytes: [0x08, 0x01]).isEmpty)
    // An unknown field makes a message non-empty.
    #expect(try !Inner(serializedBytes: [0x18, 0x00]).isEmpty)
  }
}
