// Sources/FleetEngineMessages/Traffic.swift - traffic along a route
//
// maps.fleetengine.v1.SpeedReadingInterval and ConsumableTrafficPolyline
// (google/maps/fleetengine/v1/traffic.proto).

public import ProtoWire

/// `maps.fleetengine.v1.SpeedReadingInterval`: the traffic density on a contiguous run of polyline points.
public struct SpeedReadingInterval: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.SpeedReadingInterval"

  /// `maps.fleetengine.v1.SpeedReadingInterval.Speed`: how fast traffic moves on an interval.
  public enum Speed: ProtoEnum, CaseIterable {
    /// `SPEED_UNSPECIFIED` (0): default, unused.
    case speedUnspecified
    /// `NORMAL` (1): normal speed, no slowdown.
    case normal
    /// `SLOW` (2): a slowdown, but no traffic jam.
    case slow
    /// `TRAFFIC_JAM` (3): a traffic jam.
    case trafficJam
    /// A value this version does not name, kept as received.
    case unrecognized(Int32)

    public static let allCases: [Speed] = [.speedUnspecified, .normal, .slow, .trafficJam]

    public init(rawValue: Int32) {
      switch rawValue {
      case 0: self = .speedUnspecified
      case 1: self = .normal
      case 2: self = .slow
      case 3: self = .trafficJam
      default: self = .unrecognized(rawValue)
      }
    }

    public var rawValue: Int32 {
      switch self {
      case .speedUnspecified: 0
      case .normal: 1
      case .slow: 2
      case .trafficJam: 3
      case .unrecognized(let value): value
      }
    }

    public var protoName: String {
      switch self {
      case .speedUnspecified: "SPEED_UNSPECIFIED"
      case .normal: "NORMAL"
      case .slow: "SLOW"
      case .trafficJam: "TRAFFIC_JAM"
      case .unrecognized(let value): String(value)
      }
    }
  }

  /// `start_polyline_point_index` (field 1): zero-based index of the interval's first point in the path.
  public var startPolylinePointIndex: Int32 = 0
  /// `end_polyline_point_index` (field 2): zero-based index of the interval's last point in the path.
  public var endPolylinePointIndex: Int32 = 0
  /// `speed` (field 3): the traffic speed on the interval.
  public var speed: Speed = .speedUnspecified
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: startPolylinePointIndex = try reader.readInt32(tag)
      case 2: endPolylinePointIndex = try reader.readInt32(tag)
      case 3: speed = try reader.readEnum(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if startPolylinePointIndex != 0 { size += WireSize.int32(startPolylinePointIndex, field: 1) }
    if endPolylinePointIndex != 0 { size += WireSize.int32(endPolylinePointIndex, field: 2) }
    if speed.rawValue != 0 { size += WireSize.enum(speed, field: 3) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if startPolylinePointIndex != 0 { writer.writeInt32(startPolylinePointIndex, field: 1) }
    if endPolylinePointIndex != 0 { writer.writeInt32(endPolylinePointIndex, field: 2) }
    if speed.rawValue != 0 { writer.writeEnum(speed, field: 3) }
    writer.writeUnknown(unknownFields)
  }
}

/// `maps.fleetengine.v1.ConsumableTrafficPolyline`: traffic density along a vehicle's path.
public struct ConsumableTrafficPolyline: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.ConsumableTrafficPolyline"

  /// `speed_reading_interval` (field 1): traffic speed along the path from the previous waypoint to the current one.
  public var speedReadingInterval: [SpeedReadingInterval] = []
  /// `encoded_path_to_waypoint` (field 2): the path the driver takes from the previous waypoint to the current one, as
  /// an encoded polyline.
  public var encodedPathToWaypoint: String = ""
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readRepeatedMessage(tag, into: &speedReadingInterval, budget: .routePoints)
      case 2: encodedPathToWaypoint = try reader.readString(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    size += WireSize.repeatedMessage(speedReadingInterval, field: 1)
    if !encodedPathToWaypoint.isEmpty { size += WireSize.string(encodedPathToWaypoint, field: 2) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    writer.writeRepeatedMessage(speedReadingInterval, field: 1)
    if !encodedPathToWaypoint.isEmpty { writer.writeString(encodedPathToWaypoint, field: 2) }
    writer.writeUnknown(unknownFields)
  }
}
