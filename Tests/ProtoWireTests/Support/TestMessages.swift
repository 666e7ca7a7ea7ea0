// Tests/ProtoWireTests/Support/TestMessages.swift - small message types the codec tests drive
//
// Hand-written the way FleetEngineMessages are: `AllKinds` has one singular
// and one repeated field of every scalar kind plus an embedded message, `Inner`
// is a two-field message whose spare field numbers carry unknown fields, and
// `Node` nests itself to exercise the recursion limit.

import ProtoWire

/// An open proto3 enum: every number is a value.
struct Color: ProtoEnum {
  var rawValue: Int32
  init(rawValue: Int32) { self.rawValue = rawValue }

  static let unspecified = Color(rawValue: 0)
  static let red = Color(rawValue: 1)
  static let green = Color(rawValue: 2)

  var protoName: String {
    switch rawValue {
    case 0: "COLOR_UNSPECIFIED"
    case 1: "RED"
    case 2: "GREEN"
    default: String(rawValue)
    }
  }
}

/// `message Inner { int32 a = 1; string b = 2; }`
struct Inner: ProtoMessage {
  static let protoMessageName = "protowire.test.Inner"

  var a: Int32 = 0
  var b: String = ""
  var unknownFields = UnknownFields()

  init() {}
  init(a: Int32 = 0, b: String = "") {
    self.a = a
    self.b = b
  }

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: a = try reader.readInt32(tag)
      case 2: b = try reader.readString(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    var size = unknownFields.count
    if a != 0 { size += WireSize.int32(a, field: 1) }
    if !b.isEmpty { size += WireSize.string(b, field: 2) }
    return size
  }

  func encodeFields(to writer: inout WireWriter) {
    if a != 0 { writer.writeInt32(a, field: 1) }
    if !b.isEmpty { writer.writeString(b, field: 2) }
    writer.writeUnknown(unknownFields)
  }
}

/// Every field kind, singular in fields 1...17 and repeated in fields 21...37
/// (field n + 20 repeats the kind of field n; scalars are written packed).
struct AllKinds: ProtoMessage {
  static let protoMessageName = "protowire.test.AllKinds"

  var int32: Int32 = 0  // 1
  var int64: Int64 = 0  // 2
  var uint32: UInt32 = 0  // 3
  var uint64: UInt64 = 0  // 4
  var sint32: Int32 = 0  // 5
  var sint64: Int64 = 0  // 6
  var bool = false  // 7
  var color = Color.unspecified  // 8
  var fixed32: UInt32 = 0  // 9
  var fixed64: UInt64 = 0  // 10
  var sfixed32: Int32 = 0  // 11
  var sfixed64: Int64 = 0  // 12
  var float: Float = 0  // 13
  var double: Double = 0  // 14
  var string = ""  // 15
  var bytes: [UInt8] = []  // 16
  var inner: Inner?  // 17

  var int32s: [Int32] = []  // 21
  var int64s: [Int64] = []  // 22
  var uint32s: [UInt32] = []  // 23
  var uint64s: [UInt64] = []  // 24
  var sint32s: [Int32] = []  // 25
  var sint64s: [Int64] = []  // 26
  var bools: [Bool] = []  // 27
  var colors: [Color] = []  // 28
  var fixed32s: [UInt32] = []  // 29
  var fixed64s: [UInt64] = []  // 30
  var sfixed32s: [Int32] = []  // 31
  var sfixed64s: [Int64] = []  // 32
  var floats: [Float] = []  // 33
  var doubles: [Double] = []  // 34
  var strings: [String] = []  // 35
  var byteStrings: [[UInt8]] = []  // 36
  var inners: [Inner] = []  // 37

  var unknownFields = UnknownFields()

  init() {}

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: int32 = try reader.readInt32(tag)
      case 2: int64 = try reader.readInt64(tag)
      case 3: uint32 = try reader.readUInt32(tag)
      case 4: uint64 = try reader.readUInt64(tag)
      case 5: sint32 = try reader.readSInt32(tag)
      case 6: sint64 = try reader.readSInt64(tag)
      case 7: bool = try reader.readBool(tag)
      case 8: color = try reader.readEnum(tag)
      case 9: fixed32 = try reader.readFixed32(tag)
      case 10: fixed64 = try reader.readFixed64(tag)
      case 11: sfixed32 = try reader.readSFixed32(tag)
      case 12: sfixed64 = try reader.readSFixed64(tag)
      case 13: float = try reader.readFloat(tag)
      case 14: double = try reader.readDouble(tag)
      case 15: string = try reader.readString(tag)
      case 16: bytes = try reader.readBytes(tag)
      case 17: try reader.readMessage(tag, into: &inner)
      case 21: try reader.readRepeatedInt32(tag, into: &int32s)
      case 22: try reader.readRepeatedInt64(tag, into: &int64s)
      case 23: try reader.readRepeatedUInt32(tag, into: &uint32s)
      case 24: try reader.readRepeatedUInt64(tag, into: &uint64s)
      case 25: try reader.readRepeatedSInt32(tag, into: &sint32s)
      case 26: try reader.readRepeatedSInt64(tag, into: &sint64s)
      case 27: try reader.readRepeatedBool(tag, into: &bools)
      case 28: try reader.readRepeatedEnum(tag, into: &colors)
      case 29: try reader.readRepeatedFixed32(tag, into: &fixed32s)
      case 30: try reader.readRepeatedFixed64(tag, into: &fixed64s)
      case 31: try reader.readRepeatedSFixed32(tag, into: &sfixed32s)
      case 32: try reader.readRepeatedSFixed64(tag, into: &sfixed64s)
      case 33: try reader.readRepeatedFloat(tag, into: &floats)
      case 34: try reader.readRepeatedDouble(tag, into: &doubles)
      case 35: try reader.readRepeatedString(tag, into: &strings)
      case 36: try reader.readRepeatedBytes(tag, into: &byteStrings)
      case 37: try reader.readRepeatedMessage(tag, into: &inners)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  // Floating-point fields are left out only when all their bits are zero, so -0.0 survives.
  func encodedSize() -> Int {
    var size = 0
    if int32 != 0 { size += WireSize.int32(int32, field: 1) }
    if int64 != 0 { size += WireSize.int64(int64, field: 2) }
    if uint32 != 0 { size += WireSize.uint32(uint32, field: 3) }
    if uint64 != 0 { size += WireSize.uint64(uint64, field: 4) }
    if sint32 != 0 { size += WireSize.sint32(sint32, field: 5) }
    if sint64 != 0 { size += WireSize.sint64(sint64, field: 6) }
    if bool { size += WireSize.bool(bool, field: 7) }
    if color.rawValue != 0 { size += WireSize.enum(color, field: 8) }
    if fixed32 != 0 { size += WireSize.fixed32(field: 9) }
    if fixed64 != 0 { size += WireSize.fixed64(field: 10) }
    if sfixed32 != 0 { size += WireSize.fixed32(field: 11) }
    if sfixed64 != 0 { size += WireSize.fixed64(field: 12) }
    if float.bitPattern != 0 { size += WireSize.float(float, field: 13) }
    if double.bitPattern != 0 { size += WireSize.double(double, field: 14) }
    if !string.isEmpty { size += WireSize.string(string, field: 15) }
    if !bytes.isEmpty { size += WireSize.bytes(bytes, field: 16) }
    if let inner { size += WireSize.message(inner, field: 17) }
    size += WireSize.packedInt32(int32s, field: 21)
    size += WireSize.packedInt64(int64s, field: 22)
    size += WireSize.packedUInt32(uint32s, field: 23)
    size += WireSize.packedUInt64(uint64s, field: 24)
    size += WireSize.packedSInt32(sint32s, field: 25)
    size += WireSize.packedSInt64(sint64s, field: 26)
    size += WireSize.packedBool(bools, field: 27)
    size += WireSize.packedEnum(colors, field: 28)
    size += WireSize.packedFixed32(count: fixed32s.count, field: 29)
    size += WireSize.packedFixed64(count: fixed64s.count, field: 30)
    size += WireSize.packedFixed32(count: sfixed32s.count, field: 31)
    size += WireSize.packedFixed64(count: sfixed64s.count, field: 32)
    size += WireSize.packedFixed32(count: floats.count, field: 33)
    size += WireSize.packedFixed64(count: doubles.count, field: 34)
    size += WireSize.repeatedString(strings, field: 35)
    size += WireSize.repeatedBytes(byteStrings, field: 36)
    size += WireSize.repeatedMessage(inners, field: 37)
    return size + unknownFields.count
  }

  func encodeFields(to writer: inout WireWriter) {
    if int32 != 0 { writer.writeInt32(int32, field: 1) }
    if int64 != 0 { writer.writeInt64(int64, field: 2) }
    if uint32 != 0 { writer.writeUInt32(uint32, field: 3) }
    if uint64 != 0 { writer.writeUInt64(uint64, field: 4) }
    if sint32 != 0 { writer.writeSInt32(sint32, field: 5) }
    if sint64 != 0 { writer.writeSInt64(sint64, field: 6) }
    if bool { writer.writeBool(bool, field: 7) }
    if color.rawValue != 0 { writer.writeEnum(color, field: 8) }
    if fixed32 != 0 { writer.writeFixed32(fixed32, field: 9) }
    if fixed64 != 0 { writer.writeFixed64(fixed64, field: 10) }
    if sfixed32 != 0 { writer.writeSFixed32(sfixed32, field: 11) }
    if sfixed64 != 0 { writer.writeSFixed64(sfixed64, field: 12) }
    if float.bitPattern != 0 { writer.writeFloat(float, field: 13) }
    if double.bitPattern != 0 { writer.writeDouble(double, field: 14) }
    if !string.isEmpty { writer.writeString(string, field: 15) }
    if !bytes.isEmpty { writer.writeBytes(bytes, field: 16) }
    if let inner { writer.writeMessage(inner, field: 17) }
    writer.writePackedInt32(int32s, field: 21)
    writer.writePackedInt64(int64s, field: 22)
    writer.writePackedUInt32(uint32s, field: 23)
    writer.writePackedUInt64(uint64s, field: 24)
    writer.writePackedSInt32(sint32s, field: 25)
    writer.writePackedSInt64(sint64s, field: 26)
    writer.writePackedBool(bools, field: 27)
    writer.writePackedEnum(colors, field: 28)
    writer.writePackedFixed32(fixed32s, field: 29)
    writer.writePackedFixed64(fixed64s, field: 30)
    writer.writePackedSFixed32(sfixed32s, field: 31)
    writer.writePackedSFixed64(sfixed64s, field: 32)
    writer.writePackedFloat(floats, field: 33)
    writer.writePackedDouble(doubles, field: 34)
    writer.writeRepeatedString(strings, field: 35)
    writer.writeRepeatedBytes(byteStrings, field: 36)
    writer.writeRepeatedMessage(inners, field: 37)
    writer.writeUnknown(unknownFields)
  }
}

/// The storage of a `Node`'s child: a struct cannot contain itself, a class reference can.
final class NodeBox: Sendable, Equatable {
  let node: Node
  init(_ node: Node) { self.node = node }
  static func == (lhs: NodeBox, rhs: NodeBox) -> Bool { lhs === rhs || lhs.node == rhs.node }
}

/// `message Node { int32 value = 1; Node child = 2; }`
struct Node: ProtoMessage {
  static let protoMessageName = "protowire.test.Node"

  var value: Int32 = 0
  private var childBox: NodeBox?
  var unknownFields = UnknownFields()

  init() {}

  /// `child` (field 2).
  var child: Node? {
    get { childBox?.node }
    set { childBox = newValue.map(NodeBox.init) }
  }

  /// A chain with `depth` nodes below the top one; the deepest holds `leafValue`.
  static func chain(depth: Int, leafValue: Int32 = 0) -> Node {
    var node = Node()
    node.value = leafValue
    for _ in 0..<depth {
      var parent = Node()
      parent.child = node
      node = parent
    }
    return node
  }

  /// How many nodes hang below this one.
  var depth: Int {
    var count = 0
    var current = child
    while let node = current {
      count += 1
      current = node.child
    }
    return count
  }

  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readInt32(tag)
      case 2: try reader.readMessage(tag, into: &child)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  func encodedSize() -> Int {
    var size = unknownFields.count
    if value != 0 { size += WireSize.int32(value, field: 1) }
    if let child { size += WireSize.message(child, field: 2) }
    return size
  }

  func encodeFields(to writer: inout WireWriter) {
    if value != 0 { writer.writeInt32(value, field: 1) }
    if let child { writer.writeMessage(child, field: 2) }
    writer.writeUnknown(unknownFields)
  }
}
