// Sources/FleetEngineMessages/TripWaypoint.swift - a stop on a vehicle's route
//
// maps.fleetengine.v1.TripWaypoint (google/maps/fleetengine/v1/fleetengine.proto).

public import ProtoWire

/// `maps.fleetengine.v1.TripWaypoint`: a stopping point on a vehicle's route, or an end point of its trip.
public struct TripWaypoint: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.TripWaypoint"

  /// `location` (field 1): where the waypoint is.
  public var location: TerminalLocation?
  /// `trip_id` (field 2): the trip the waypoint belongs to.
  public var tripId: String = ""
  /// `waypoint_type` (field 3): the role of the waypoint in its trip.
  public var waypointType: WaypointType = .unknownWaypointType
  /// `path_to_waypoint` (field 4): the path from the previous waypoint to this one, 16 bytes a point.
  public var pathToWaypoint = LatLngPath()
  /// `encoded_path_to_waypoint` (field 5): the same path as an encoded polyline.
  public var encodedPathToWaypoint: String = ""
  /// `traffic_to_waypoint` (field 10): traffic conditions along the path to this waypoint.
  public var trafficToWaypoint: ConsumableTrafficPolyline?
  /// `distance_meters` (field 6): the path distance from the previous waypoint.
  public var distanceMeters: Int32Value?
  /// `eta` (field 7): the estimated time of arrival at this waypoint.
  public var eta: Timestamp?
  /// `duration` (field 8): the travel time from the previous waypoint.
  public var duration: ProtobufDuration?
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &location)
      case 2: tripId = try reader.readString(tag)
      case 3: waypointType = try reader.readEnum(tag)
      case 4: try reader.readRepeatedMessage(tag, into: &pathToWaypoint, budget: .routePoints)
      case 5: encodedPathToWaypoint = try reader.readString(tag)
      case 6: try reader.readMessage(tag, into: &distanceMeters)
      case 7: try reader.readMessage(tag, into: &eta)
      case 8: try reader.readMessage(tag, into: &duration)
      case 10: try reader.readMessage(tag, into: &trafficToWaypoint)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if let location { size += WireSize.message(location, field: 1) }
    if !tripId.isEmpty { size += WireSize.string(tripId, field: 2) }
    if waypointType.rawValue != 0 { size += WireSize.enum(waypointType, field: 3) }
    size += WireSize.repeatedMessage(pathToWaypoint, field: 4)
    if !encodedPathToWaypoint.isEmpty { size += WireSize.string(encodedPathToWaypoint, field: 5) }
    if let distanceMeters { size += WireSize.message(distanceMeters, field: 6) }
    if let eta { size += WireSize.message(eta, field: 7) }
    if let duration { size += WireSize.message(duration, field: 8) }
    if let trafficToWaypoint { size += WireSize.message(trafficToWaypoint, field: 10) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if let location { writer.writeMessage(location, field: 1) }
    if !tripId.isEmpty { writer.writeString(tripId, field: 2) }
    if waypointType.rawValue != 0 { writer.writeEnum(waypointType, field: 3) }
    writer.writeRepeatedMessage(pathToWaypoint, field: 4)
    if !encodedPathToWaypoint.isEmpty { writer.writeString(encodedPathToWaypoint, field: 5) }
    if let distanceMeters { writer.writeMessage(distanceMeters, field: 6) }
    if let eta { writer.writeMessage(eta, field: 7) }
    if let duration { writer.writeMessage(duration, field: 8) }
    if let trafficToWaypoint { writer.writeMessage(trafficToWaypoint, field: 10) }
    writer.writeUnknown(unknownFields)
  }
}
