// Sources/ProtoWire/WireSize.swift - the exact encoded size of fields
//
// The size pass mirrors `WireWriter` call for call, so a message's
// `encodedSize()` reads like its `encodeFields(to:)`.

/// Sizes of varints.
public enum Varint {
  /// The number of bytes `value` takes as a varint (1...10).
  @inlinable
  public static func size(of value: UInt64) -> Int {
    // Each byte carries 7 bits; a zero still takes one byte.
    let bits = 64 - (value | 1).leadingZeroBitCount
    return (bits + 6) / 7
  }
}

/// Exact sizes of encoded fields, tag included, one function per ``WireWriter`` write.
public enum WireSize {
  /// The size of the tag of `field`.
  @inlinable public static func tag(_ field: Int) -> Int { Varint.size(of: UInt64(field) << 3) }

  /// The size of an `int32` field.
  @inlinable public static func int32(_ value: Int32, field: Int) -> Int {
    tag(field) + Varint.size(of: UInt64(bitPattern: Int64(value)))
  }
  /// The size of an `int64` field.
  @inlinable public static func int64(_ value: Int64, field: Int) -> Int {
    tag(field) + Varint.size(of: UInt64(bitPattern: value))
  }
  /// The size of a `uint32` field.
  @inlinable public static func uint32(_ value: UInt32, field: Int) -> Int {
    tag(field) + Varint.size(of: UInt64(value))
  }
  /// The size of a `uint64` field.
  @inlinable public static func uint64(_ value: UInt64, field: Int) -> Int {
    tag(field) + Varint.size(of: value)
  }
  /// The size of a `sint32` field.
  @inlinable public static func sint32(_ value: Int32, field: Int) -> Int {
    tag(field) + Varint.size(of: UInt64(ZigZag.encoded(value)))
  }
  /// The size of a `sint64` field.
  @inlinable public static func sint64(_ value: Int64, field: Int) -> Int {
    tag(field) + Varint.size(of: ZigZag.encoded(value))
  }
  /// The size of a `bool` field.
  @inlinable public static func bool(_ value: Bool, field: Int) -> Int { tag(field) + 1 }
  /// The size of an enum field.
  @inlinable public static func `enum`<E: ProtoEnum>(_ value: E, field: Int) -> Int {
    int32(value.rawValue, field: field)
  }
  /// The size of a `fixed32`, `sfixed32` or `float` field.
  @inlinable public static func fixed32(field: Int) -> Int { tag(field) + 4 }
  /// The size of a `fixed64`, `sfixed64` or `double` field.
  @inlinable public static func fixed64(field: Int) -> Int { tag(field) + 8 }
  /// The size of a `float` field.
  @inlinable public static func float(_ value: Float, field: Int) -> Int { fixed32(field: field) }
  /// The size of a `double` field.
  @inlinable public static func double(_ value: Double, field: Int) -> Int { fixed64(field: field) }
  /// The size of a length-delimited field whose payload is `length` bytes.
  @inlinable public static func lengthDelimited(_ length: Int, field: Int) -> Int {
    tag(field) + Varint.size(of: UInt64(length)) + length
  }
  /// The size of a `string` field.
  @inlinable public static func string(_ value: String, field: Int) -> Int {
    lengthDelimited(value.utf8.count, field: field)
  }
  /// The size of a `bytes` field.
  @inlinable public static func bytes(_ value: [UInt8], field: Int) -> Int {
    lengthDelimited(value.count, field: field)
  }
  /// The size of an embedded message field.
  @inlinable public static func message<M: ProtoMessage>(_ value: M, field: Int) -> Int {
    lengthDelimited(value.encodedSize(), field: field)
  }
  /// The size of a repeated message field.
  @inlinable public static func repeatedMessage<S: Sequence>(_ values: S, field: Int) -> Int
  where S.Element: ProtoMessage {
    var size = 0
    for value in values { size += message(value, field: field) }
    return size
  }
  /// The size of a repeated string field.
  @inlinable public static func repeatedString(_ values: [String], field: Int) -> Int {
    var size = 0
    for value in values { size += string(value, field: field) }
    return size
  }
  /// The size of a repeated bytes field.
  @inlinable public static func repeatedBytes(_ values: [[UInt8]], field: Int) -> Int {
    var size = 0
    for value in values { size += bytes(value, field: field) }
    return size
  }

  // MARK: - Packed repeated scalars (0 for an empty array)

  /// The size of a packed run of varints produced by `raw`.
  @inlinable
  public static func packedVarints<T>(_ values: [T], field: Int, _ raw: (T) -> UInt64) -> Int {
    guard !values.isEmpty else { return 0 }
    var length = 0
    for value in values { length += Varint.size(of: raw(value)) }
    return lengthDelimited(length, field: field)
  }
  /// The size of packed `int32` values.
  @inlinable public static func packedInt32(_ values: [Int32], field: Int) -> Int {
    packedVarints(values, field: field) { UInt64(bitPattern: Int64($0)) }
  }
  /// The size of packed `int64` values.
  @inlinable public static func packedInt64(_ values: [Int64], field: Int) -> Int {
    packedVarints(values, field: field) { UInt64(bitPattern: $0) }
  }
  /// The size of packed `uint32` values.
  @inlinable public static func packedUInt32(_ values: [UInt32], field: Int) -> Int {
    packedVarints(values, field: field) { UInt64($0) }
  }
  /// The size of packed `uint64` values.
  @inlinable public static func packedUInt64(_ values: [UInt64], field: Int) -> Int {
    packedVarints(values, field: field) { $0 }
  }
  /// The size of packed `sint32` values.
  @inlinable public static func packedSInt32(_ values: [Int32], field: Int) -> Int {
    packedVarints(values, field: field) { UInt64(ZigZag.encoded($0)) }
  }
  /// The size of packed `sint64` values.
  @inlinable public static func packedSInt64(_ values: [Int64], field: Int) -> Int {
    packedVarints(values, field: field) { ZigZag.encoded($0) }
  }
  /// The size of packed `bool` values.
  @inlinable public static func packedBool(_ values: [Bool], field: Int) -> Int {
    values.isEmpty ? 0 : lengthDelimited(values.count, field: field)
  }
  /// The size of packed enum values.
  @inlinable public static func packedEnum<E: ProtoEnum>(_ values: [E], field: Int) -> Int {
    packedVarints(values, field: field) { UInt64(bitPattern: Int64($0.rawValue)) }
  }
  /// The size of packed 4-byte values (`fixed32`, `sfixed32`, `float`).
  @inlinable public static func packedFixed32(count: Int, field: Int) -> Int {
    count == 0 ? 0 : lengthDelimited(count * 4, field: field)
  }
  /// The size of packed 8-byte values (`fixed64`, `sfixed64`, `double`).
  @inlinable public static func packedFixed64(count: Int, field: Int) -> Int {
    count == 0 ? 0 : lengthDelimited(count * 8, field: field)
  }
}
