// Sources/ProtoWire/WireWriter.swift - writes fields into exactly sized storage

/// Writes protobuf fields into a buffer that ``ProtoMessage/encodedSize()``
/// sized exactly. Every write is unconditional: message types decide which
/// fields are present (proto3 leaves defaults out) before calling it.
///
/// Running past the end of the buffer is a programming error (a size pass that
/// disagrees with the write pass) and traps.
public struct WireWriter {
  @usableFromInline let buffer: UnsafeMutableRawBufferPointer
  @usableFromInline var _written: Int
  /// How many bytes have been written.
  @inlinable public var written: Int { _written }

  /// A writer that fills `buffer` from its start.
  public init(_ buffer: UnsafeMutableRawBufferPointer) {
    self.buffer = buffer
    self._written = 0
  }

  // MARK: - Raw writes

  /// Writes a varint.
  @inlinable
  public mutating func writeRawVarint(_ value: UInt64) {
    var v = value
    precondition(buffer.count - written >= Varint.size(of: v), "WireWriter overflow")
    let base = buffer.baseAddress.unsafelyUnwrapped
    while v >= 0x80 {
      base.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: written, as: UInt8.self)
      _written += 1
      v >>= 7
    }
    base.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: written, as: UInt8.self)
    _written += 1
  }

  /// Writes four little-endian bytes.
  @inlinable
  public mutating func writeRawFixed32(_ value: UInt32) {
    precondition(buffer.count - written >= 4, "WireWriter overflow")
    buffer.baseAddress.unsafelyUnwrapped.storeBytes(of: value.littleEndian, toByteOffset: written, as: UInt32.self)
    _written += 4
  }

  /// Writes eight little-endian bytes.
  @inlinable
  public mutating func writeRawFixed64(_ value: UInt64) {
    precondition(buffer.count - written >= 8, "WireWriter overflow")
    buffer.baseAddress.unsafelyUnwrapped.storeBytes(of: value.littleEndian, toByteOffset: written, as: UInt64.self)
    _written += 8
  }

  /// Writes bytes as they are.
  @inlinable
  public mutating func writeRawBytes(_ bytes: UnsafeRawBufferPointer) {
    guard bytes.count > 0 else { return }
    precondition(buffer.count - written >= bytes.count, "WireWriter overflow")
    (buffer.baseAddress.unsafelyUnwrapped + written).copyMemory(
      from: bytes.baseAddress.unsafelyUnwrapped, byteCount: bytes.count)
    _written += bytes.count
  }

  /// Writes a tag.
  @inlinable
  public mutating func writeTag(_ fieldNumber: Int, _ wireType: WireType) {
    writeRawVarint(UInt64(FieldTag(fieldNumber: fieldNumber, wireType: wireType).rawValue))
  }

  // MARK: - Fields

  /// Writes an `int32` field (negative values take ten bytes, as protobuf specifies).
  @inlinable public mutating func writeInt32(_ value: Int32, field: Int) {
    writeTag(field, .varint); writeRawVarint(UInt64(bitPattern: Int64(value)))
  }
  /// Writes an `int64` field.
  @inlinable public mutating func writeInt64(_ value: Int64, field: Int) {
    writeTag(field, .varint); writeRawVarint(UInt64(bitPattern: value))
  }
  /// Writes a `uint32` field.
  @inlinable public mutating func writeUInt32(_ value: UInt32, field: Int) {
    writeTag(field, .varint); writeRawVarint(UInt64(value))
  }
  /// Writes a `uint64` field.
  @inlinable public mutating func writeUInt64(_ value: UInt64, field: Int) {
    writeTag(field, .varint); writeRawVarint(value)
  }
  /// Writes a `sint32` field.
  @inlinable public mutating func writeSInt32(_ value: Int32, field: Int) {
    writeTag(field, .varint); writeRawVarint(UInt64(ZigZag.encoded(value)))
  }
  /// Writes a `sint64` field.
  @inlinable public mutating func writeSInt64(_ value: Int64, field: Int) {
    writeTag(field, .varint); writeRawVarint(ZigZag.encoded(value))
  }
  /// Writes a `bool` field.
  @inlinable public mutating func writeBool(_ value: Bool, field: Int) {
    writeTag(field, .varint); writeRawVarint(value ? 1 : 0)
  }
  /// Writes an enum field.
  @inlinable public mutating func writeEnum<E: ProtoEnum>(_ value: E, field: Int) {
    writeInt32(value.rawValue, field: field)
  }
  /// Writes a `fixed32` field.
  @inlinable public mutating func writeFixed32(_ value: UInt32, field: Int) {
    writeTag(field, .fixed32); writeRawFixed32(value)
  }
  /// Writes a `fixed64` field.
  @inlinable public mutating func writeFixed64(_ value: UInt64, field: Int) {
    writeTag(field, .fixed64); writeRawFixed64(value)
  }
  /// Writes an `sfixed32` field.
  @inlinable public mutating func writeSFixed32(_ value: Int32, field: Int) {
    writeTag(field, .fixed32); writeRawFixed32(UInt32(bitPattern: value))
  }
  /// Writes an `sfixed64` field.
  @inlinable public mutating func writeSFixed64(_ value: Int64, field: Int) {
    writeTag(field, .fixed64); writeRawFixed64(UInt64(bitPattern: value))
  }
  /// Writes a `float` field.
  @inlinable public mutating func writeFloat(_ value: Float, field: Int) {
    writeTag(field, .fixed32); writeRawFixed32(value.bitPattern)
  }
  /// Writes a `double` field.
  @inlinable public mutating func writeDouble(_ value: Double, field: Int) {
    writeTag(field, .fixed64); writeRawFixed64(value.bitPattern)
  }
  /// Writes a `string` field.
  @inlinable public mutating func writeString(_ value: String, field: Int) {
    writeTag(field, .lengthDelimited)
    var value = value
    value.withUTF8 { utf8 in
      writeRawVarint(UInt64(utf8.count))
      writeRawBytes(UnsafeRawBufferPointer(utf8))
    }
  }
  /// Writes a `bytes` field.
  @inlinable public mutating func writeBytes(_ value: [UInt8], field: Int) {
    writeTag(field, .lengthDelimited)
    writeRawVarint(UInt64(value.count))
    value.withUnsafeBytes { writeRawBytes($0) }
  }
  /// Writes an embedded message field (tag, length, then the message).
  @inlinable public mutating func writeMessage<M: ProtoMessage>(_ value: M, field: Int) {
    writeTag(field, .lengthDelimited)
    writeRawVarint(UInt64(value.encodedSize()))
    value.encodeFields(to: &self)
  }
  /// Writes each message of a repeated message field.
  @inlinable public mutating func writeRepeatedMessage<S: Sequence>(_ values: S, field: Int)
  where S.Element: ProtoMessage {
    for value in values { writeMessage(value, field: field) }
  }
  /// Writes each string of a repeated string field.
  @inlinable public mutating func writeRepeatedString(_ values: [String], field: Int) {
    for value in values { writeString(value, field: field) }
  }
  /// Writes each element of a repeated bytes field.
  @inlinable public mutating func writeRepeatedBytes(_ values: [[UInt8]], field: Int) {
    for value in values { writeBytes(value, field: field) }
  }
  /// Writes preserved unknown fields verbatim.
  @inlinable public mutating func writeUnknown(_ unknown: UnknownFields) {
    guard !unknown.isEmpty else { return }
    unknown.bytes.withUnsafeBytes { writeRawBytes($0) }
  }

  // MARK: - Packed repeated scalars (nothing is written for an empty array)

  /// Writes a packed run of varints produced by `raw`.
  @inlinable
  public mutating func writePackedVarints<T>(_ values: [T], field: Int, _ raw: (T) -> UInt64) {
    guard !values.isEmpty else { return }
    var length = 0
    for value in values { length += Varint.size(of: raw(value)) }
    writeTag(field, .lengthDelimited)
    writeRawVarint(UInt64(length))
    for value in values { writeRawVarint(raw(value)) }
  }

  /// Writes packed `int32` values.
  @inlinable public mutating func writePackedInt32(_ values: [Int32], field: Int) {
    writePackedVarints(values, field: field) { UInt64(bitPattern: Int64($0)) }
  }
  /// Writes packed `int64` values.
  @inlinable public mutating func writePackedInt64(_ values: [Int64], field: Int) {
    writePackedVarints(values, field: field) { UInt64(bitPattern: $0) }
  }
  /// Writes packed `uint32` values.
  @inlinable public mutating func writePackedUInt32(_ values: [UInt32], field: Int) {
    writePackedVarints(values, field: field) { UInt64($0) }
  }
  /// Writes packed `uint64` values.
  @inlinable public mutating func writePackedUInt64(_ values: [UInt64], field: Int) {
    writePackedVarints(values, field: field) { $0 }
  }
  /// Writes packed `sint32` values.
  @inlinable public mutating func writePackedSInt32(_ values: [Int32], field: Int) {
    writePackedVarints(values, field: field) { UInt64(ZigZag.encoded($0)) }
  }
  /// Writes packed `sint64` values.
  @inlinable public mutating func writePackedSInt64(_ values: [Int64], field: Int) {
    writePackedVarints(values, field: field) { ZigZag.encoded($0) }
  }
  /// Writes packed `bool` values.
  @inlinable public mutating func writePackedBool(_ values: [Bool], field: Int) {
    writePackedVarints(values, field: field) { $0 ? 1 : 0 }
  }
  /// Writes packed enum values.
  @inlinable public mutating func writePackedEnum<E: ProtoEnum>(_ values: [E], field: Int) {
    writePackedVarints(values, field: field) { UInt64(bitPattern: Int64($0.rawValue)) }
  }
  /// Writes packed `fixed32` values.
  @inlinable public mutating func writePackedFixed32(_ values: [UInt32], field: Int) {
    guard !values.isEmpty else { return }
    writeTag(field, .lengthDelimited); writeRawVarint(UInt64(values.count * 4))
    for value in values { writeRawFixed32(value) }
  }
  /// Writes packed `fixed64` values.
  @inlinable public mutating func writePackedFixed64(_ values: [UInt64], field: Int) {
    guard !values.isEmpty else { return }
    writeTag(field, .lengthDelimited); writeRawVarint(UInt64(values.count * 8))
    for value in values { writeRawFixed64(value) }
  }
  /// Writes packed `sfixed32` values.
  @inlinable public mutating func writePackedSFixed32(_ values: [Int32], field: Int) {
    guard !values.isEmpty else { return }
    writeTag(field, .lengthDelimited); writeRawVarint(UInt64(values.count * 4))
    for value in values { writeRawFixed32(UInt32(bitPattern: value)) }
  }
  /// Writes packed `sfixed64` values.
  @inlinable public mutating func writePackedSFixed64(_ values: [Int64], field: Int) {
    guard !values.isEmpty else { return }
    writeTag(field, .lengthDelimited); writeRawVarint(UInt64(values.count * 8))
    for value in values { writeRawFixed64(UInt64(bitPattern: value)) }
  }
  /// Writes packed `float` values.
  @inlinable public mutating func writePackedFloat(_ values: [Float], field: Int) {
    guard !values.isEmpty else { return }
    writeTag(field, .lengthDelimited); writeRawVarint(UInt64(values.count * 4))
    for value in values { writeRawFixed32(value.bitPattern) }
  }
  /// Writes packed `double` values.
  @inlinable public mutating func writePackedDouble(_ values: [Double], field: Int) {
    guard !values.isEmpty else { return }
    writeTag(field, .lengthDelimited); writeRawVarint(UInt64(values.count * 8))
    for value in values { writeRawFixed64(value.bitPattern) }
  }
}
