// Sources/FleetEngineMessages/TripWaypoint+JSON.swift - TripWaypoint as JSON

extension TripWaypoint: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.messageField("location", location)
    writer.stringField("trip_id", tripId)
    writer.enumField("waypoint_type", waypointType)
    writer.repeatedMessageField("path_to_waypoint", pathToWaypoint)
    writer.stringField("encoded_path_to_waypoint", encodedPathToWaypoint)
    writer.messageField("distance_meters", distanceMeters)
    writer.messageField("eta", eta)
    writer.messageField("duration", duration)
    writer.messageField("traffic_to_waypoint", trafficToWaypoint)
    writer.endObject()
  }
}
