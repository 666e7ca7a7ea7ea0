// Sources/ProtoWire/WireType.swift - wire types and field tags
//
// The protobuf binary format prefixes every field with a tag: the field number
// shifted left by three bits, or'ed with one of six wire types.

/// How a field's value is laid out on the wire.
///
/// Wire types 6 and 7 do not exist; a tag carrying them is rejected with
/// ``WireDecodingError/Kind/invalidWireType(_:)`` and never becomes a `WireType`.
public enum WireType: UInt8, Sendable, Hashable, CaseIterable {
  /// A base-128 varint: int32, int64, uint32, uint64, sint32, sint64, bool, enum.
  case varint = 0
  /// Eight little-endian bytes: fixed64, sfixed64, double.
  case fixed64 = 1
  /// A varint length followed by that many bytes: string, bytes, messages, packed repeated fields.
  case lengthDelimited = 2
  /// The start of a (deprecated) group; skipped together with its contents.
  case startGroup = 3
  /// The end of a group.
  case endGroup = 4
  /// Four little-endian bytes: fixed32, sfixed32, float.
  case fixed32 = 5
}

/// A field number together with its wire type, as found before every field.
///
/// A `FieldTag` is valid by construction: its field number lies in
/// `1...FieldTag.maxFieldNumber` and its wire type is one of the six that
/// exist, so code holding one never re-checks.
public struct FieldTag: Sendable, Hashable, CustomStringConvertible {
  /// The largest field number protobuf allows (2^29 - 1).
  public static let maxFieldNumber = 536_870_911

  /// The field number, in `1...maxFieldNumber`.
  public let fieldNumber: Int
  /// The wire type that follows the tag.
  public let wireType: WireType

  /// Creates a tag. The field number must be in `1...maxFieldNumber`.
  @inlinable
  public init(fieldNumber: Int, wireType: WireType) {
    precondition(
      fieldNumber >= 1 && fieldNumber <= FieldTag.maxFieldNumber,
      "protobuf field numbers are 1...536870911")
    self.fieldNumber = fieldNumber
    self.wireType = wireType
  }

  /// The tag as the varint value written on the wire.
  @inlinable
  public var rawValue: UInt32 { UInt32(truncatingIfNeeded: fieldNumber << 3) | UInt32(wireType.rawValue) }

  public var description: String { "field \(fieldNumber) (\(wireType))" }
}
