// Tests/ProtoWireTests/LimitTests.swift - recursion and size limits for untrusted input

import ProtoWire
import Testing

@Suite("Recursion limit")
struct RecursionLimitTests {
  @Test("the byte-built nesting matches what the encoder writes")
  func helperMatchesEncoder() {
    for depth in [0, 1, 2, 63, 64, 100, 101, 150] {
      #expect(nestedNodeBytes(depth: depth).bytes == Node.chain(depth: depth).serializedBytes())
    }
  }

  @Test("messages nested 100 deep decode under the default limit")
  func depth100() throws {
    let bytes = Node.chain(depth: 100, leafValue: 42).serializedBytes()
    let node = try Node(serializedBytes: bytes)
    #expect(node.depth == 100)
    #expect(node == Node.chain(depth: 100, leafValue: 42))
    #expect(node.serializedBytes() == bytes)
  }

  @Test("the 101st nested message is rejected at its tag")
  func depth101() {
    let (bytes, tagOffsets) = nestedNodeBytes(depth: 101)
    #expect(throws: WireDecodingError(.recursionLimitExceeded(limit: 100), offset: tagOffsets[100])) {
      try Node(serializedBytes: bytes)
    }
    // Deeper still fails at the same level, not further in.
    let (deeper, deeperOffsets) = nestedNodeBytes(depth: 500)
    #expect(throws: WireDecodingError(.recursionLimitExceeded(limit: 100), offset: deeperOffsets[100])) {
      try Node(serializedBytes: deeper)
    }
  }

  @Test(
    "a custom recursion limit allows exactly that many levels",
    arguments: [0, 1, 5, 100, 101, 300])
  func customLimit(limit: Int) throws {
    let options = WireDecodingOptions(recursionLimit: limit)
    let allowed = Node.chain(depth: limit, leafValue: 1)
    #expect(try Node(serializedBytes: allowed.serializedBytes(), options: options) == allowed)
    let (tooDeep, offsets) = nestedNodeBytes(depth: limit + 1)
    #expect(throws: WireDecodingError(.recursionLimitExceeded(limit: limit), offset: offsets[limit])) {
      try Node(serializedBytes: tooDeep, options: options)
    }
  }

  @Test("unknown groups nested 100 deep are fine, 101 are rejected at the 101st start tag")
  func groupDepth() {
    // 33 = field 6 start group, 34 = its end; `Inner` does not know field 6.
    let ok = [UInt8](repeating: 0x33, count: 100) + [UInt8](repeating: 0x34, count: 100)
    #expect(throws: Never.self) { try Inner(serializedBytes: ok) }
    let tooDeep = [UInt8](repeating: 0x33, count: 101) + [UInt8](repeating: 0x34, count: 101)
    #expect(throws: WireDecodingError(.recursionLimitExceeded(limit: 100), offset: 100)) {
      try Inner(serializedBytes: tooDeep)
    }
    // With no end tags at all, the limit still trips before the input runs out.
    #expect(throws: WireDecodingError(.recursionLimitExceeded(limit: 100), offset: 100)) {
      try Inner(serializedBytes: [UInt8](repeating: 0x33, count: 100_000))
    }
  }

  @Test("a custom limit applies to groups", arguments: [0, 3])
  func customGroupLimit(limit: Int) {
    let options = WireDecodingOptions(recursionLimit: limit)
    let ok = [UInt8](repeating: 0x33, count: limit) + [UInt8](repeating: 0x34, count: limit)
    #expect(throws: Never.self) { try Inner(serializedBytes: ok, options: options) }
    let tooDeep = [UInt8](repeating: 0x33, count: limit + 1) + [UInt8](repeating: 0x34, count: limit + 1)
    #expect(throws: WireDecodingError(.recursionLimitExceeded(limit: limit), offset: limit)) {
      try Inner(serializedBytes: tooDeep, options: options)
    }
  }

  @Test("messages and groups share one budget")
  func mixedNesting() {
    // Node's field 3 is unknown: 1B starts its group, 1C ends it.
    let group: [UInt8] = [0x1B, 0x1C]
    // 99 messages deep, then a group: 100 levels.
    let fits = nestedNodeBytes(depth: 99, innermost: group)
    #expect(throws: Never.self) { try Node(serializedBytes: fits.bytes) }
    // 100 messages deep, then a group: 101 levels, rejected at the group's tag.
    let over = nestedNodeBytes(depth: 100, innermost: group)
    #expect(throws: WireDecodingError(.recursionLimitExceeded(limit: 100), offset: over.bytes.count - 2)) {
      try Node(serializedBytes: over.bytes)
    }
  }

  @Test("the budget is given back when a nested message or group ends")
  func budgetRestoredForSiblings() throws {
    let options = WireDecodingOptions(recursionLimit: 1)
    // 300 sibling inners (AA 02 02 08 01), each one level deep.
    let siblings = [[UInt8]](repeating: [0xAA, 0x02, 0x02, 0x08, 0x01], count: 300).flatMap { $0 }
    #expect(try AllKinds(serializedBytes: siblings, options: options).inners.count == 300)
    // 300 sibling groups (field 99: start 9B 06, end 9C 06), each one level deep.
    let groups = [[UInt8]](repeating: [0x9B, 0x06, 0x9C, 0x06], count: 300).flatMap { $0 }
    #expect(try AllKinds(serializedBytes: groups, options: options).unknownFields.count == 1200)
    // Alternating a message, a group and a packed run keeps working at limit 1.
    // inner = {} (8A 01 00), group 99 (9B 06 9C 06), int32s packed [5] (AA 01 01 05).
    let round: [UInt8] = [0x8A, 0x01, 0x00, 0x9B, 0x06, 0x9C, 0x06, 0xAA, 0x01, 0x01, 0x05]
    let alternating = [[UInt8]](repeating: round, count: 100).flatMap { $0 }
    let message = try AllKinds(serializedBytes: alternating, options: options)
    #expect(message.int32s.count == 100)
  }

  @Test("the default options are a depth of 100 and 64 MiB")
  func defaults() {
    let options = WireDecodingOptions()
    #expect(options.recursionLimit == 100)
    #expect(options.maxMessageSize == 64 << 20)
  }
}

@Suite("Message size limit")
struct MessageSizeLimitTests {
  @Test("input larger than maxMessageSize is rejected before it is parsed")
  func tooLarge() throws {
    let options = WireDecodingOptions(maxMessageSize: 4)
    // int32 = 1, int32 = 2: four bytes fit, six do not.
    #expect(try AllKinds(serializedBytes: [0x08, 0x01, 0x08, 0x02], options: options).int32 == 2)
    #expect(throws: WireDecodingError(.messageTooLarge(size: 6, limit: 4), offset: 0)) {
      try AllKinds(serializedBytes: [0x08, 0x01, 0x08, 0x02, 0x08, 0x03], options: options)
    }
    // Garbage is not looked at once the size alone is too large.
    #expect(throws: WireDecodingError(.messageTooLarge(size: 5, limit: 4), offset: 0)) {
      try AllKinds(serializedBytes: [0x00, 0x00, 0x00, 0x00, 0x00], options: options)
    }
  }

  @Test("every entry point checks the limit")
  func everyEntryPoint() throws {
    let options = WireDecodingOptions(maxMessageSize: 1)
    let bytes: [UInt8] = [0x08, 0x01]
    let expected = WireDecodingError(.messageTooLarge(size: 2, limit: 1), offset: 0)
    #expect(throws: expected) { try bytes.withUnsafeBytes { try AllKinds(serializedBuffer: $0, options: options) } }
    #expect(throws: expected) {
      var message = AllKinds()
      try message.merge(serializedBytes: bytes, options: options)
    }
    #expect(throws: expected) { try AllKinds(serializedBytes: AnySequence(bytes), options: options) }
    #expect(throws: expected) { try AllKinds(serializedBytes: bytes[...], options: options) }
  }

  @Test("the default limit is 64 MiB")
  func defaultLimit() throws {
    // 64 MiB + 1 zero bytes: rejected for size, not for the field number 0 the first byte would be.
    let huge = [UInt8](repeating: 0, count: (64 << 20) + 1)
    #expect(throws: WireDecodingError(.messageTooLarge(size: huge.count, limit: 64 << 20), offset: 0)) {
      try Inner(serializedBytes: huge)
    }
  }
}
