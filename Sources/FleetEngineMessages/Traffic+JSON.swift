// Sources/FleetEngineMessages/Traffic+JSON.swift - SpeedReadingInterval and ConsumableTrafficPolyline as JSON

extension SpeedReadingInterval: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.int32Field("start_polyline_point_index", startPolylinePointIndex)
    writer.int32Field("end_polyline_point_index", endPolylinePointIndex)
    writer.enumField("speed", speed)
    writer.endObject()
  }
}

extension ConsumableTrafficPolyline: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.repeatedMessageField("speed_reading_interval", speedReadingInterval)
    writer.stringField("encoded_path_to_waypoint", encodedPathToWaypoint)
    writer.endObject()
  }
}
