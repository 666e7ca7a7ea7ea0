// Sources/FleetEngineMessages/TrafficRendering+JSON.swift - the traffic-rendering messages as JSON

extension VisualTrafficReportPolylineRendering: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.repeatedMessageField("road_stretch", roadStretch)
    writer.endObject()
  }
}

extension VisualTrafficReportPolylineRendering.RoadStretch: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.enumField("style", style)
    writer.int32Field("offset_meters", offsetMeters)
    writer.int32Field("length_meters", lengthMeters)
    writer.endObject()
  }
}

extension TrafficPolylineData: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.messageField("traffic_rendering", trafficRendering)
    writer.endObject()
  }
}
