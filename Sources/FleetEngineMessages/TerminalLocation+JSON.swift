// Sources/FleetEngineMessages/TerminalLocation+JSON.swift - TerminalPointId and TerminalLocation as JSON

extension TerminalPointId: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    switch id {
    case .placeId(let v):
      writer.writeKey("place_id")
      writer.writeString(v)
    case .generatedId(let v):
      writer.writeKey("generated_id")
      writer.writeString(v)
    case nil:
      break
    }
    writer.stringField("value", value)
    writer.endObject()
  }
}

extension TerminalLocation: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.messageField("point", point)
    writer.messageField("terminal_point_id", terminalPointId)
    writer.stringField("access_point_id", accessPointId)
    writer.stringField("trip_id", tripId)
    writer.enumField("terminal_location_type", terminalLocationType)
    writer.endObject()
  }
}
