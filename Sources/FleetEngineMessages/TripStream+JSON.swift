// Sources/FleetEngineMessages/TripStream+JSON.swift - StreamTripRequest and TripUpdate as JSON

extension StreamTripRequest: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.messageField("header", header)
    writer.stringField("name", name)
    writer.enumField("view", view)
    writer.enumField("route_format_type", routeFormatType)
    writer.uint64Field("after_sequence", afterSequence)
    writer.endObject()
  }
}

extension TripUpdate: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.messageField("trip", trip)
    writer.boolField("full_trip", fullTrip)
    writer.repeatedInt32Field("updated_fields", updatedFields)
    writer.uint64Field("sequence", sequence)
    writer.messageField("send_time", sendTime)
    writer.boolField("discontinuity", discontinuity)
    writer.endObject()
  }
}
