// Tests/ProtoWireTests/ElementLimitTests.swift - element limits on repeated fields, enforced while decoding
//
// WireDecodingOptions.maxRepeatedCount caps every repeated field; WireElementBudget caps chosen fields,
// each on its own (eachField) or together over the whole input (wholeInput). A decode over a limit
// stops at the tag of the first element too many, before decoding it.

import ProtoWire
import Testing

/// A budget each `Tree.each` field has on its own.
private let eachBudget = WireElementBudget(slot: 2, name: "each", scope: .eachField)
/// A budget all `Tree.shared` fields draw on together, in every nested tree.
private let sharedBudget = WireElementBudget(slot: 3, name: "shared", scope: .wholeInput)

/// `message Tree { repeated Inner each = 1; repeated Inner shared = 2; repeated Tree children = 3; }`
private struct Tree: ProtoMessage {
  static let protoMessageName = "protowire.test.Tree"
  var each: [Inner] = []
  var shared: [Inner] = []
  var children: [Tree] = []
  var unknownFields = UnknownFields()

  init() {}

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readRepeatedMessage(tag, into: &each, budget: eachBudget)
      case 2: try reader.readRepeatedMessage(tag, into: &shared, budget: sharedBudget)
      case 3: try reader.readRepeatedMessage(tag, into: &children)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    unknownFields.count + WireSize.repeatedMessage(each, field: 1) + WireSize.repeatedMessage(shared, field: 2)
      + WireSize.repeatedMessage(children, field: 3)
  }

  func encodeFields(to writer: inout WireWriter) {
    writer.writeRepeatedMessage(each, field: 1)
    writer.writeRepeatedMessage(shared, field: 2)
    writer.writeRepeatedMessage(children, field: 3)
    writer.writeUnknown(unknownFields)
  }
}

/// `count` empty elements of a length-delimited field whose one- or two-byte tag is `tag`.
private func emptyElements(_ tag: [UInt8], count: Int) -> [UInt8] {
  [[UInt8]](repeating: tag + [0x00], count: count).flatMap { $0 }
}

/// `AllKinds.inners` (field 37, tag AA 02), `count` empty ones: three bytes each.
private func inners(_ count: Int) -> [UInt8] { emptyElements([0xAA, 0x02], count: count) }

private func limitError(field: Int, limit: Int, budget: String, offset: Int) -> WireDecodingError {
  WireDecodingError(.elementLimitExceeded(field: field, limit: limit, budget: budget), offset: offset)
}

@Suite("Element limits")
struct ElementLimitTests {
  @Test("by default repeated fields have no element limit")
  func noLimitByDefault() throws {
    #expect(WireDecodingOptions().maxRepeatedCount == .max)
    #expect(WireDecodingOptions().limit(of: sharedBudget) == .max)
    let message = try AllKinds(serializedBytes: inners(100_000))
    #expect(message.inners.count == 100_000)
  }

  @Test("maxRepeatedCount: N embedded messages decode, the N+1st is refused at its tag", arguments: [0, 1, 7, 1000])
  func repeatedMessages(limit: Int) throws {
    let options = WireDecodingOptions(maxRepeatedCount: limit)
    #expect(try AllKinds(serializedBytes: inners(limit), options: options).inners.count == limit)
    #expect(throws: limitError(field: 37, limit: limit, budget: "maxRepeatedCount", offset: 3 * limit)) {
      try AllKinds(serializedBytes: inners(limit + 1), options: options)
    }
    // A long run stops at the same element: nothing after it is looked at.
    #expect(throws: limitError(field: 37, limit: limit, budget: "maxRepeatedCount", offset: 3 * limit)) {
      try AllKinds(serializedBytes: inners(limit + 200_000), options: options)
    }
  }

  @Test("maxRepeatedCount counts every occurrence of a field, also when other fields come between")
  func occurrencesAddUp() throws {
    let options = WireDecodingOptions(maxRepeatedCount: 4)
    // inners ×2, int32 = 1 (08 01), inners ×2: four in all.
    let four = inners(2) + [0x08, 0x01] + inners(2)
    #expect(try AllKinds(serializedBytes: four, options: options).inners.count == 4)
    // inners ×2, int32 = 1, inners ×3: the fifth (at 2·3 + 2 + 2·3 = 14) is refused.
    #expect(throws: limitError(field: 37, limit: 4, budget: "maxRepeatedCount", offset: 14)) {
      try AllKinds(serializedBytes: inners(2) + [0x08, 0x01] + inners(3), options: options)
    }
  }

  @Test("maxRepeatedCount applies to strings, bytes and unpacked scalars, element by element")
  func unpackedElements() throws {
    let options = WireDecodingOptions(maxRepeatedCount: 2)
    let cases: [(field: Int, element: [UInt8])] = [
      (35, [0x9A, 0x02, 0x01, 0x61]),  // strings: "a"
      (36, [0xA2, 0x02, 0x01, 0xFF]),  // byteStrings: FF
      (21, [0xA8, 0x01, 0x05]),  // int32s, unpacked: 5
      (29, [0xED, 0x01, 0x01, 0x00, 0x00, 0x00]),  // fixed32s, unpacked: 1
      (34, [0x91, 0x02] + [UInt8](repeating: 0, count: 8)),  // doubles, unpacked: 0
    ]
    for (field, element) in cases {
      let two = element + element
      #expect(throws: Never.self) { try AllKinds(serializedBytes: two, options: options) }
      #expect(throws: limitError(field: field, limit: 2, budget: "maxRepeatedCount", offset: two.count)) {
        try AllKinds(serializedBytes: two + element, options: options)
      }
    }
  }

  @Test("a packed run is counted before it is decoded: one over the limit is refused at its tag")
  func packedRuns() throws {
    let options = WireDecodingOptions(maxRepeatedCount: 3)
    // int32s packed (AA 01): three one-byte varints fit, four do not; varints of several bytes count once.
    #expect(try AllKinds(serializedBytes: [0xAA, 0x01, 0x03, 0x01, 0x02, 0x03], options: options).int32s == [1, 2, 3])
    let multiByte: [UInt8] = [0xAA, 0x01, 0x05, 0x81, 0x01, 0x82, 0x01, 0x03]
    #expect(try AllKinds(serializedBytes: multiByte, options: options).int32s == [129, 130, 3])
    #expect(throws: limitError(field: 21, limit: 3, budget: "maxRepeatedCount", offset: 0)) {
      try AllKinds(serializedBytes: [0xAA, 0x01, 0x04, 0x01, 0x02, 0x03, 0x04], options: options)
    }
    // fixed32s packed (EA 01): 12 bytes are three, 16 are four.
    let twelve: [UInt8] = [0xEA, 0x01, 12] + [UInt8](repeating: 1, count: 12)
    #expect(try AllKinds(serializedBytes: twelve, options: options).fixed32s.count == 3)
    #expect(throws: limitError(field: 29, limit: 3, budget: "maxRepeatedCount", offset: 0)) {
      try AllKinds(serializedBytes: [0xEA, 0x01, 16] + [UInt8](repeating: 1, count: 16), options: options)
    }
    // Two runs of two: the second takes the field to four, refused at its own tag (offset 5).
    #expect(throws: limitError(field: 21, limit: 3, budget: "maxRepeatedCount", offset: 5)) {
      try AllKinds(serializedBytes: [0xAA, 0x01, 0x02, 0x01, 0x02, 0xAA, 0x01, 0x02, 0x03, 0x04], options: options)
    }
    // Packed and unpacked elements add up: a run of three, then one unpacked element.
    #expect(throws: limitError(field: 21, limit: 3, budget: "maxRepeatedCount", offset: 6)) {
      try AllKinds(serializedBytes: [0xAA, 0x01, 0x03, 0x01, 0x02, 0x03, 0xA8, 0x01, 0x04], options: options)
    }
  }

  @Test("an eachField budget caps each field in each message on its own")
  func eachFieldBudget() throws {
    let options = WireDecodingOptions().limiting(eachBudget, to: 2)
    #expect(options.limit(of: eachBudget) == 2)
    // Tree { each ×2, children [ Tree { each ×2 } ] }: every field within its limit.
    let child = emptyElements([0x0A], count: 2)
    let ok = emptyElements([0x0A], count: 2) + [0x1A, UInt8(child.count)] + child
    let tree = try Tree(serializedBytes: ok, options: options)
    #expect(tree.each.count == 2 && tree.children.first?.each.count == 2)
    // The third element of one field is refused, naming the budget.
    #expect(throws: limitError(field: 1, limit: 2, budget: "each", offset: 4)) {
      try Tree(serializedBytes: emptyElements([0x0A], count: 3), options: options)
    }
    // Fields not drawing on the budget are not capped by it.
    #expect(try Tree(serializedBytes: emptyElements([0x12], count: 50), options: options).shared.count == 50)
  }

  @Test("a wholeInput budget counts its fields together over every nested message")
  func wholeInputBudget() throws {
    let options = WireDecodingOptions().limiting(sharedBudget, to: 5)
    // Tree { shared ×2, children [ Tree { shared ×3 } ] }: five in all.
    let child = emptyElements([0x12], count: 3)
    let five = emptyElements([0x12], count: 2) + [0x1A, UInt8(child.count)] + child
    let tree = try Tree(serializedBytes: five, options: options)
    #expect(tree.shared.count == 2 && tree.children.first?.shared.count == 3)
    // One more in a second child: its tag (after 4 + 2 + 6 + 2 bytes) is refused.
    let one = emptyElements([0x12], count: 1)
    #expect(throws: limitError(field: 2, limit: 5, budget: "shared", offset: 14)) {
      try Tree(serializedBytes: five + [0x1A, UInt8(one.count)] + one, options: options)
    }
  }

  @Test("the tighter of maxRepeatedCount and a budget is the one reported")
  func tighterLimitIsReported() {
    let budgetTighter = WireDecodingOptions(maxRepeatedCount: 10).limiting(eachBudget, to: 3)
    #expect(throws: limitError(field: 1, limit: 3, budget: "each", offset: 6)) {
      try Tree(serializedBytes: emptyElements([0x0A], count: 4), options: budgetTighter)
    }
    let countTighter = WireDecodingOptions(maxRepeatedCount: 3).limiting(eachBudget, to: 10)
    #expect(throws: limitError(field: 1, limit: 3, budget: "maxRepeatedCount", offset: 6)) {
      try Tree(serializedBytes: emptyElements([0x0A], count: 4), options: countTighter)
    }
  }

  @Test("limit errors are resource limits; malformed input is not")
  func resourceLimitClassification() {
    #expect(limitError(field: 1, limit: 1, budget: "x", offset: 0).isResourceLimit)
    #expect(WireDecodingError(.messageTooLarge(size: 2, limit: 1), offset: 0).isResourceLimit)
    #expect(!WireDecodingError(.truncated, offset: 0).isResourceLimit)
    #expect(!WireDecodingError(.recursionLimitExceeded(limit: 1), offset: 0).isResourceLimit)
    let text = limitError(field: 16, limit: 100, budget: "stops", offset: 300).description
    #expect(text == "protobuf decoding failed at byte 300: repeated field 16 exceeds the limit of 100 elements (stops)")
  }
}
