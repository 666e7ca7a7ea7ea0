// Sources/FleetEngineMessages/GetTripRequest+JSON.swift - GetTripRequest as JSON

extension GetTripRequest: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.messageField("header", header)
    writer.stringField("name", name)
    writer.messageField("current_route_segment_version", currentRouteSegmentVersion)
    writer.messageField("remaining_waypoints_version", remainingWaypointsVersion)
    writer.enumField("route_format_type", routeFormatType)
    writer.messageField("current_route_segment_traffic_version", currentRouteSegmentTrafficVersion)
    writer.messageField("remaining_waypoints_route_version", remainingWaypointsRouteVersion)
    writer.enumField("view", view)
    writer.endObject()
  }
}
