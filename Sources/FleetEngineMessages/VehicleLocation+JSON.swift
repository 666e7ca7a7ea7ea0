// Sources/FleetEngineMessages/VehicleLocation+JSON.swift - VehicleAttribute, VehicleLocation, TripAttribute as JSON
//
// Fields in field-number order. A set oneof member is printed even when it holds
// its default, as on the wire.

extension VehicleAttribute: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.stringField("key", key)
    writer.stringField("value", value)
    switch vehicleAttributeValue {
    case .stringValue(let v):
      writer.writeKey("string_value")
      writer.writeString(v)
    case .boolValue(let v):
      writer.writeKey("bool_value")
      writer.writeBool(v)
    case .numberValue(let v):
      writer.writeKey("number_value")
      writer.writeDouble(v)
    case nil:
      break
    }
    writer.endObject()
  }
}

extension VehicleLocation: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.messageField("location", location)
    writer.messageField("heading", heading)
    writer.messageField("speed_kmph", speedKmph)
    writer.messageField("update_time", updateTime)
    writer.messageField("altitude", altitude)
    writer.messageField("speed", speed)
    writer.messageField("speed_accuracy", speedAccuracy)
    writer.messageField("horizontal_accuracy", horizontalAccuracy)
    writer.messageField("vertical_accuracy", verticalAccuracy)
    writer.messageField("bearing_accuracy", bearingAccuracy)
    writer.enumField("location_sensor", locationSensor)
    writer.messageField("is_gps_sensor_enabled", isGpsSensorEnabled)
    writer.messageField("server_time", serverTime)
    writer.messageField("time_since_update", timeSinceUpdate)
    writer.messageField("num_stale_updates", numStaleUpdates)
    writer.messageField("raw_location", rawLocation)
    writer.messageField("raw_location_time", rawLocationTime)
    writer.messageField("supplemental_location", supplementalLocation)
    writer.messageField("supplemental_location_time", supplementalLocationTime)
    writer.enumField("supplemental_location_sensor", supplementalLocationSensor)
    writer.messageField("supplemental_location_accuracy", supplementalLocationAccuracy)
    writer.messageField("latlng_accuracy", latlngAccuracy)
    writer.messageField("heading_accuracy", headingAccuracy)
    writer.messageField("altitude_accuracy", altitudeAccuracy)
    writer.messageField("raw_location_accuracy", rawLocationAccuracy)
    writer.boolField("road_snapped", roadSnapped)
    writer.messageField("is_road_snapped", isRoadSnapped)
    writer.enumField("raw_location_sensor", rawLocationSensor)
    writer.messageField("flp_location", flpLocation)
    writer.messageField("flp_update_time", flpUpdateTime)
    writer.messageField("flp_latlng_accuracy_meters", flpLatlngAccuracyMeters)
    writer.messageField("flp_heading_degrees", flpHeadingDegrees)
    writer.endObject()
  }
}

extension TripAttribute: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.stringField("key", key)
    switch tripAttributeValue {
    case .stringValue(let v):
      writer.writeKey("string_value")
      writer.writeString(v)
    case .boolValue(let v):
      writer.writeKey("bool_value")
      writer.writeBool(v)
    case .numberValue(let v):
      writer.writeKey("number_value")
      writer.writeDouble(v)
    case nil:
      break
    }
    writer.endObject()
  }
}
