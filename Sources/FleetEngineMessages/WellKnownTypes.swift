// Sources/FleetEngineMessages/WellKnownTypes.swift - google.protobuf and google.type messages
//
// Timestamp, Duration and FieldMask (google/protobuf/*.proto) and LatLng
// (google/type/latlng.proto), as the Fleet Engine messages use them.

public import ProtoWire

/// `google.protobuf.Timestamp`: a point in time as seconds and nanoseconds since the Unix epoch (UTC).
public struct Timestamp: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.Timestamp"

  /// Seconds since 1970-01-01T00:00:00Z (field 1).
  public var seconds: Int64 = 0
  /// Non-negative fractions of a second at nanosecond resolution (field 2).
  public var nanos: Int32 = 0
  public var unknownFields = UnknownFields()

  public init() {}

  /// A timestamp of `seconds` and `nanos`.
  public init(seconds: Int64, nanos: Int32 = 0) {
    self.seconds = seconds
    self.nanos = nanos
  }

  /// A timestamp from Unix time in seconds (fractions kept to the nanosecond).
  public init(unixTime: Double) {
    let whole = unixTime.rounded(.down)
    self.seconds = Int64(whole)
    self.nanos = Int32(((unixTime - whole) * 1e9).rounded())
    if nanos >= 1_000_000_000 { seconds += 1; nanos -= 1_000_000_000 }
  }

  /// The time as Unix seconds.
  public var unixTime: Double { Double(seconds) + Double(nanos) / 1e9 }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: seconds = try reader.readInt64(tag)
      case 2: nanos = try reader.readInt32(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if seconds != 0 { size += WireSize.int64(seconds, field: 1) }
    if nanos != 0 { size += WireSize.int32(nanos, field: 2) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if seconds != 0 { writer.writeInt64(seconds, field: 1) }
    if nanos != 0 { writer.writeInt32(nanos, field: 2) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.protobuf.Duration`: a signed span of time. Named `ProtobufDuration` so it does not
/// shadow `Swift.Duration` in code that imports this module.
public struct ProtobufDuration: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.Duration"

  /// Whole seconds (field 1).
  public var seconds: Int64 = 0
  /// Fractions of a second, with the sign of `seconds` (field 2).
  public var nanos: Int32 = 0
  public var unknownFields = UnknownFields()

  public init() {}

  /// A duration of `seconds` and `nanos`.
  public init(seconds: Int64, nanos: Int32 = 0) {
    self.seconds = seconds
    self.nanos = nanos
  }

  /// The span in seconds.
  public var timeInterval: Double { Double(seconds) + Double(nanos) / 1e9 }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: seconds = try reader.readInt64(tag)
      case 2: nanos = try reader.readInt32(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if seconds != 0 { size += WireSize.int64(seconds, field: 1) }
    if nanos != 0 { size += WireSize.int32(nanos, field: 2) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if seconds != 0 { writer.writeInt64(seconds, field: 1) }
    if nanos != 0 { writer.writeInt32(nanos, field: 2) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.type.LatLng`: a WGS84 position in degrees.
public struct LatLng: ProtoMessage, Hashable {
  public static let protoMessageName = "google.type.LatLng"

  /// Degrees, in [-90, 90] (field 1).
  public var latitude: Double = 0
  /// Degrees, in [-180, 180] (field 2).
  public var longitude: Double = 0
  public var unknownFields = UnknownFields()

  public init() {}

  /// A position in degrees.
  public init(latitude: Double, longitude: Double) {
    self.latitude = latitude
    self.longitude = longitude
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    // Fast path: both coordinates set, as fields 1 and 2 (tags 0x09 and 0x11) and nothing else.
    if let (latitudeBits, longitudeBits) = reader.readExactFixed64Pair(tags: 0x09, 0x11) {
      latitude = Double(bitPattern: latitudeBits)
      longitude = Double(bitPattern: longitudeBits)
      return
    }
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: latitude = try reader.readDouble(tag)
      case 2: longitude = try reader.readDouble(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  // Proto3 leaves out a double whose bits are all zero; -0.0 is written, as protobuf's runtimes do.
  public func encodedSize() -> Int {
    var size = unknownFields.count
    if latitude.bitPattern != 0 { size += WireSize.double(latitude, field: 1) }
    if longitude.bitPattern != 0 { size += WireSize.double(longitude, field: 2) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if latitude.bitPattern != 0 { writer.writeDouble(latitude, field: 1) }
    if longitude.bitPattern != 0 { writer.writeDouble(longitude, field: 2) }
    writer.writeUnknown(unknownFields)
  }
}

/// `google.protobuf.FieldMask`: a set of field paths.
public struct FieldMask: ProtoMessage, Hashable {
  public static let protoMessageName = "google.protobuf.FieldMask"

  /// Field paths, for example `trip_status` (field 1).
  public var paths: [String] = []
  public var unknownFields = UnknownFields()

  public init() {}

  /// A mask of `paths`.
  public init(paths: [String]) { self.paths = paths }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readRepeatedString(tag, into: &paths)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    unknownFields.count + WireSize.repeatedString(paths, field: 1)
  }

  public func encodeFields(to writer: inout WireWriter) {
    writer.writeRepeatedString(paths, field: 1)
    writer.writeUnknown(unknownFields)
  }
}
