// Sources/FleetEngineMessages/GetTripRequest.swift - the unary GetTrip request
//
// maps.fleetengine.v1.GetTripRequest (google/maps/fleetengine/v1/trip_api.proto).
// The `*_version` fields let a polling client say what it already has, so the
// server leaves out route and waypoint data that has not changed since.

public import ProtoWire

/// `maps.fleetengine.v1.GetTripRequest`: the request of `TripService/GetTrip`.
public struct GetTripRequest: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.GetTripRequest"

  /// `header` (field 1): the standard request header.
  public var header: RequestHeader?
  /// `name` (field 3): the trip, `providers/{provider}/trips/{trip}`.
  public var name: String = ""
  /// `view` (field 11): the subset of trip fields to return.
  public var view: TripView = .tripViewUnspecified
  /// `current_route_segment_version` (field 6): return route data only if it changed after this time.
  public var currentRouteSegmentVersion: Timestamp?
  /// `remaining_waypoints_version` (field 7): return `remaining_waypoints` only if they changed after this time.
  public var remainingWaypointsVersion: Timestamp?
  /// `route_format_type` (field 8): the format of the returned route.
  public var routeFormatType: PolylineFormatType = .unknownFormatType
  /// `current_route_segment_traffic_version` (field 9): return `current_route_segment_traffic` only if it changed after
  /// this time.
  public var currentRouteSegmentTrafficVersion: Timestamp?
  /// `remaining_waypoints_route_version` (field 10): return waypoint paths and traffic only if they changed after this
  /// time.
  public var remainingWaypointsRouteVersion: Timestamp?
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &header)
      case 3: name = try reader.readString(tag)
      case 6: try reader.readMessage(tag, into: &currentRouteSegmentVersion)
      case 7: try reader.readMessage(tag, into: &remainingWaypointsVersion)
      case 8: routeFormatType = try reader.readEnum(tag)
      case 9: try reader.readMessage(tag, into: &currentRouteSegmentTrafficVersion)
      case 10: try reader.readMessage(tag, into: &remainingWaypointsRouteVersion)
      case 11: view = try reader.readEnum(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if let header { size += WireSize.message(header, field: 1) }
    if !name.isEmpty { size += WireSize.string(name, field: 3) }
    if let currentRouteSegmentVersion { size += WireSize.message(currentRouteSegmentVersion, field: 6) }
    if let remainingWaypointsVersion { size += WireSize.message(remainingWaypointsVersion, field: 7) }
    if routeFormatType.rawValue != 0 { size += WireSize.enum(routeFormatType, field: 8) }
    if let currentRouteSegmentTrafficVersion { size += WireSize.message(currentRouteSegmentTrafficVersion, field: 9) }
    if let remainingWaypointsRouteVersion { size += WireSize.message(remainingWaypointsRouteVersion, field: 10) }
    if view.rawValue != 0 { size += WireSize.enum(view, field: 11) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if let header { writer.writeMessage(header, field: 1) }
    if !name.isEmpty { writer.writeString(name, field: 3) }
    if let currentRouteSegmentVersion { writer.writeMessage(currentRouteSegmentVersion, field: 6) }
    if let remainingWaypointsVersion { writer.writeMessage(remainingWaypointsVersion, field: 7) }
    if routeFormatType.rawValue != 0 { writer.writeEnum(routeFormatType, field: 8) }
    if let currentRouteSegmentTrafficVersion { writer.writeMessage(currentRouteSegmentTrafficVersion, field: 9) }
    if let remainingWaypointsRouteVersion { writer.writeMessage(remainingWaypointsRouteVersion, field: 10) }
    if view.rawValue != 0 { writer.writeEnum(view, field: 11) }
    writer.writeUnknown(unknownFields)
  }
}
