// Sources/FleetEngineMessages/Wrappers.swift - google.protobuf wrapper messages
//
// The nine wrapper messages of google/protobuf/wrappers.proto. Fleet Engine uses
// them for optional scalars (a distance of 0 meters is not the same as no distance);
// in Swift an absent wrapper is a `nil` property of the enclosing message.

public import ProtoWire

/// `google.protobuf.DoubleValue`: a `double`, wrapped so that presence can be told apart from the default.
public struct DoubleValue: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.DoubleValue"

  /// `value` (field 1): the wrapped double.
  public var value: Double = 0
  public var unknownFields = UnknownFields()

  public init() {}

  /// A wrapper holding `value`.
  public init(_ value: Double) { self.value = value }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readDouble(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if value.bitPattern != 0 { size += WireSize.double(value, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if value.bitPattern != 0 { writer.writeDouble(value, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.protobuf.FloatValue`: a `float`, wrapped so that presence can be told apart from the default.
public struct FloatValue: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.FloatValue"

  /// `value` (field 1): the wrapped float.
  public var value: Float = 0
  public var unknownFields = UnknownFields()

  public init() {}

  /// A wrapper holding `value`.
  public init(_ value: Float) { self.value = value }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readFloat(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if value.bitPattern != 0 { size += WireSize.float(value, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if value.bitPattern != 0 { writer.writeFloat(value, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.protobuf.Int64Value`: an `int64`, wrapped so that presence can be told apart from the default.
public struct Int64Value: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.Int64Value"

  /// `value` (field 1): the wrapped int64.
  public var value: Int64 = 0
  public var unknownFields = UnknownFields()

  public init() {}

  /// A wrapper holding `value`.
  public init(_ value: Int64) { self.value = value }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readInt64(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if value != 0 { size += WireSize.int64(value, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if value != 0 { writer.writeInt64(value, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.protobuf.UInt64Value`: a `uint64`, wrapped so that presence can be told apart from the default.
public struct UInt64Value: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.UInt64Value"

  /// `value` (field 1): the wrapped uint64.
  public var value: UInt64 = 0
  public var unknownFields = UnknownFields()

  public init() {}

  /// A wrapper holding `value`.
  public init(_ value: UInt64) { self.value = value }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readUInt64(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if value != 0 { size += WireSize.uint64(value, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if value != 0 { writer.writeUInt64(value, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.protobuf.Int32Value`: an `int32`, wrapped so that presence can be told apart from the default.
public struct Int32Value: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.Int32Value"

  /// `value` (field 1): the wrapped int32.
  public var value: Int32 = 0
  public var unknownFields = UnknownFields()

  public init() {}

  /// A wrapper holding `value`.
  public init(_ value: Int32) { self.value = value }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readInt32(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if value != 0 { size += WireSize.int32(value, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if value != 0 { writer.writeInt32(value, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.protobuf.UInt32Value`: a `uint32`, wrapped so that presence can be told apart from the default.
public struct UInt32Value: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.UInt32Value"

  /// `value` (field 1): the wrapped uint32.
  public var value: UInt32 = 0
  public var unknownFields = UnknownFields()

  public init() {}

  /// A wrapper holding `value`.
  public init(_ value: UInt32) { self.value = value }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readUInt32(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if value != 0 { size += WireSize.uint32(value, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if value != 0 { writer.writeUInt32(value, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.protobuf.BoolValue`: a `bool`, wrapped so that presence can be told apart from the default.
public struct BoolValue: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.BoolValue"

  /// `value` (field 1): the wrapped bool.
  public var value: Bool = false
  public var unknownFields = UnknownFields()

  public init() {}

  /// A wrapper holding `value`.
  public init(_ value: Bool) { self.value = value }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readBool(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if value { size += WireSize.bool(value, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if value { writer.writeBool(value, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.protobuf.StringValue`: a `string`, wrapped so that presence can be told apart from the default.
public struct StringValue: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.StringValue"

  /// `value` (field 1): the wrapped string.
  public var value: String = ""
  public var unknownFields = UnknownFields()

  public init() {}

  /// A wrapper holding `value`.
  public init(_ value: String) { self.value = value }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readString(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if !value.isEmpty { size += WireSize.string(value, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if !value.isEmpty { writer.writeString(value, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.protobuf.BytesValue`: a `bytes` value, wrapped so that presence can be told apart from the default.
public struct BytesValue: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.BytesValue"

  /// `value` (field 1): the wrapped bytes.
  public var value: [UInt8] = []
  public var unknownFields = UnknownFields()

  public init() {}

  /// A wrapper holding `value`.
  public init(_ value: [UInt8]) { self.value = value }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: value = try reader.readBytes(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if !value.isEmpty { size += WireSize.bytes(value, field: 1) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if !value.isEmpty { writer.writeBytes(value, field: 1) }
    writer.writeUnknown(unknownFields)
  }
}
