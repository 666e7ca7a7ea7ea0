// Sources/FleetEngineMessages/VehicleLocation.swift - where a vehicle is, and key-value attributes
//
// maps.fleetengine.v1.VehicleAttribute, VehicleLocation and TripAttribute
// (google/maps/fleetengine/v1/fleetengine.proto).

public import ProtoWire

/// `maps.fleetengine.v1.VehicleAttribute`: a key-value attribute of a vehicle.
public struct VehicleAttribute: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.VehicleAttribute"

  /// The `vehicle_attribute_value` oneof: the attribute's typed value.
  public enum VehicleAttributeValue: Sendable, Hashable {
    /// `string_value` (field 3): a string attribute value.
    case stringValue(String)
    /// `bool_value` (field 4): a Boolean attribute value.
    case boolValue(Bool)
    /// `number_value` (field 5): a numeric attribute value.
    case numberValue(Double)
  }

  /// `key` (field 1): the attribute's key; may not contain a colon.
  public var key: String = ""
  /// `value` (field 2): the attribute's value (superseded by the typed oneof members).
  public var value: String = ""
  /// The `vehicle_attribute_value` oneof (fields 3, 4 and 5); `nil` when none is set.
  public var vehicleAttributeValue: VehicleAttributeValue?
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: key = try reader.readString(tag)
      case 2: value = try reader.readString(tag)
      case 3: vehicleAttributeValue = .stringValue(try reader.readString(tag))
      case 4: vehicleAttributeValue = .boolValue(try reader.readBool(tag))
      case 5: vehicleAttributeValue = .numberValue(try reader.readDouble(tag))
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  // A set oneof member is written even when it holds its default: presence is what it says.
  public func encodedSize() -> Int {
    var size = unknownFields.count
    if !key.isEmpty { size += WireSize.string(key, field: 1) }
    if !value.isEmpty { size += WireSize.string(value, field: 2) }
    switch vehicleAttributeValue {
    case .stringValue(let v): size += WireSize.string(v, field: 3)
    case .boolValue(let v): size += WireSize.bool(v, field: 4)
    case .numberValue(let v): size += WireSize.double(v, field: 5)
    case nil: break
    }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if !key.isEmpty { writer.writeString(key, field: 1) }
    if !value.isEmpty { writer.writeString(value, field: 2) }
    switch vehicleAttributeValue {
    case .stringValue(let v): writer.writeString(v, field: 3)
    case .boolValue(let v): writer.writeBool(v, field: 4)
    case .numberValue(let v): writer.writeDouble(v, field: 5)
    case nil: break
    }
    writer.writeUnknown(unknownFields)
  }
}

/// `maps.fleetengine.v1.VehicleLocation`: the location, speed and heading of a vehicle at a point in time.
public struct VehicleLocation: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.VehicleLocation"

  /// `location` (field 1): the vehicle's location; its source is given by `location_sensor`.
  public var location: LatLng?
  /// `horizontal_accuracy` (field 8): deprecated, use `latlng_accuracy`.
  public var horizontalAccuracy: DoubleValue?
  /// `latlng_accuracy` (field 22): accuracy of `location` in meters, as a radius.
  public var latlngAccuracy: DoubleValue?
  /// `heading` (field 2): the direction of travel in degrees, 0 is north, in [0, 360).
  public var heading: Int32Value?
  /// `bearing_accuracy` (field 10): deprecated, use `heading_accuracy`.
  public var bearingAccuracy: DoubleValue?
  /// `heading_accuracy` (field 23): accuracy of `heading` in degrees.
  public var headingAccuracy: DoubleValue?
  /// `altitude` (field 5): altitude in meters above WGS84.
  public var altitude: DoubleValue?
  /// `vertical_accuracy` (field 9): deprecated, use `altitude_accuracy`.
  public var verticalAccuracy: DoubleValue?
  /// `altitude_accuracy` (field 24): accuracy of `altitude` in meters.
  public var altitudeAccuracy: DoubleValue?
  /// `speed_kmph` (field 3): speed in km/h; deprecated, use `speed`.
  public var speedKmph: Int32Value?
  /// `speed` (field 6): speed in meters per second.
  public var speed: DoubleValue?
  /// `speed_accuracy` (field 7): accuracy of `speed` in meters per second.
  public var speedAccuracy: DoubleValue?
  /// `update_time` (field 4): when the sensor reported `location`, by the sensor's clock.
  public var updateTime: Timestamp?
  /// `server_time` (field 13): when the server received the location (output only).
  public var serverTime: Timestamp?
  /// `location_sensor` (field 11): the provider of `location`, for example `GPS`.
  public var locationSensor: LocationSensor = .unknownSensor
  /// `is_road_snapped` (field 27): whether `location` is snapped to a road.
  public var isRoadSnapped: BoolValue?
  /// `is_gps_sensor_enabled` (field 12): whether the device's GPS sensor is enabled (input only).
  public var isGpsSensorEnabled: BoolValue?
  /// `time_since_update` (field 14): seconds since this location was first sent to the server (input only).
  public var timeSinceUpdate: Int32Value?
  /// `num_stale_updates` (field 15): deprecated (input only).
  public var numStaleUpdates: Int32Value?
  /// `raw_location` (field 16): the raw location, before road snapping.
  public var rawLocation: LatLng?
  /// `raw_location_time` (field 17): when `raw_location` was taken.
  public var rawLocationTime: Timestamp?
  /// `raw_location_sensor` (field 28): the source of `raw_location`.
  public var rawLocationSensor: LocationSensor = .unknownSensor
  /// `raw_location_accuracy` (field 25): accuracy of `raw_location` in meters, as a radius.
  public var rawLocationAccuracy: DoubleValue?
  /// `flp_location` (field 29): the location from Android's Fused Location Provider.
  public var flpLocation: LatLng?
  /// `flp_update_time` (field 30): when `flp_location` was taken.
  public var flpUpdateTime: Timestamp?
  /// `flp_latlng_accuracy_meters` (field 31): accuracy of `flp_location` in meters, as a radius.
  public var flpLatlngAccuracyMeters: DoubleValue?
  /// `flp_heading_degrees` (field 32): the direction of travel by the Fused Location Provider, in degrees.
  public var flpHeadingDegrees: Int32Value?
  /// `supplemental_location` (field 18): a location supplied by the integrating app.
  public var supplementalLocation: LatLng?
  /// `supplemental_location_time` (field 19): when `supplemental_location` was taken.
  public var supplementalLocationTime: Timestamp?
  /// `supplemental_location_sensor` (field 20): the source of `supplemental_location`.
  public var supplementalLocationSensor: LocationSensor = .unknownSensor
  /// `supplemental_location_accuracy` (field 21): accuracy of `supplemental_location` in meters, as a radius.
  public var supplementalLocationAccuracy: DoubleValue?
  /// `road_snapped` (field 26): deprecated, use `is_road_snapped`.
  public var roadSnapped: Bool = false
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &location)
      case 2: try reader.readMessage(tag, into: &heading)
      case 3: try reader.readMessage(tag, into: &speedKmph)
      case 4: try reader.readMessage(tag, into: &updateTime)
      case 5: try reader.readMessage(tag, into: &altitude)
      case 6: try reader.readMessage(tag, into: &speed)
      case 7: try reader.readMessage(tag, into: &speedAccuracy)
      case 8: try reader.readMessage(tag, into: &horizontalAccuracy)
      case 9: try reader.readMessage(tag, into: &verticalAccuracy)
      case 10: try reader.readMessage(tag, into: &bearingAccuracy)
      case 11: locationSensor = try reader.readEnum(tag)
      case 12: try reader.readMessage(tag, into: &isGpsSensorEnabled)
      case 13: try reader.readMessage(tag, into: &serverTime)
      case 14: try reader.readMessage(tag, into: &timeSinceUpdate)
      case 15: try reader.readMessage(tag, into: &numStaleUpdates)
      case 16: try reader.readMessage(tag, into: &rawLocation)
      case 17: try reader.readMessage(tag, into: &rawLocationTime)
      case 18: try reader.readMessage(tag, into: &supplementalLocation)
      case 19: try reader.readMessage(tag, into: &supplementalLocationTime)
      case 20: supplementalLocationSensor = try reader.readEnum(tag)
      case 21: try reader.readMessage(tag, into: &supplementalLocationAccuracy)
      case 22: try reader.readMessage(tag, into: &latlngAccuracy)
      case 23: try reader.readMessage(tag, into: &headingAccuracy)
      case 24: try reader.readMessage(tag, into: &altitudeAccuracy)
      case 25: try reader.readMessage(tag, into: &rawLocationAccuracy)
      case 26: roadSnapped = try reader.readBool(tag)
      case 27: try reader.readMessage(tag, into: &isRoadSnapped)
      case 28: rawLocationSensor = try reader.readEnum(tag)
      case 29: try reader.readMessage(tag, into: &flpLocation)
      case 30: try reader.readMessage(tag, into: &flpUpdateTime)
      case 31: try reader.readMessage(tag, into: &flpLatlngAccuracyMeters)
      case 32: try reader.readMessage(tag, into: &flpHeadingDegrees)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if let location { size += WireSize.message(location, field: 1) }
    if let heading { size += WireSize.message(heading, field: 2) }
    if let speedKmph { size += WireSize.message(speedKmph, field: 3) }
    if let updateTime { size += WireSize.message(updateTime, field: 4) }
    if let altitude { size += WireSize.message(altitude, field: 5) }
    if let speed { size += WireSize.message(speed, field: 6) }
    if let speedAccuracy { size += WireSize.message(speedAccuracy, field: 7) }
    if let horizontalAccuracy { size += WireSize.message(horizontalAccuracy, field: 8) }
    if let verticalAccuracy { size += WireSize.message(verticalAccuracy, field: 9) }
    if let bearingAccuracy { size += WireSize.message(bearingAccuracy, field: 10) }
    if locationSensor.rawValue != 0 { size += WireSize.enum(locationSensor, field: 11) }
    if let isGpsSensorEnabled { size += WireSize.message(isGpsSensorEnabled, field: 12) }
    if let serverTime { size += WireSize.message(serverTime, field: 13) }
    if let timeSinceUpdate { size += WireSize.message(timeSinceUpdate, field: 14) }
    if let numStaleUpdates { size += WireSize.message(numStaleUpdates, field: 15) }
    if let rawLocation { size += WireSize.message(rawLocation, field: 16) }
    if let rawLocationTime { size += WireSize.message(rawLocationTime, field: 17) }
    if let supplementalLocation { size += WireSize.message(supplementalLocation, field: 18) }
    if let supplementalLocationTime { size += WireSize.message(supplementalLocationTime, field: 19) }
    if supplementalLocationSensor.rawValue != 0 { size += WireSize.enum(supplementalLocationSensor, field: 20) }
    if let supplementalLocationAccuracy { size += WireSize.message(supplementalLocationAccuracy, field: 21) }
    if let latlngAccuracy { size += WireSize.message(latlngAccuracy, field: 22) }
    if let headingAccuracy { size += WireSize.message(headingAccuracy, field: 23) }
    if let altitudeAccuracy { size += WireSize.message(altitudeAccuracy, field: 24) }
    if let rawLocationAccuracy { size += WireSize.message(rawLocationAccuracy, field: 25) }
    if roadSnapped { size += WireSize.bool(roadSnapped, field: 26) }
    if let isRoadSnapped { size += WireSize.message(isRoadSnapped, field: 27) }
    if rawLocationSensor.rawValue != 0 { size += WireSize.enum(rawLocationSensor, field: 28) }
    if let flpLocation { size += WireSize.message(flpLocation, field: 29) }
    if let flpUpdateTime { size += WireSize.message(flpUpdateTime, field: 30) }
    if let flpLatlngAccuracyMeters { size += WireSize.message(flpLatlngAccuracyMeters, field: 31) }
    if let flpHeadingDegrees { size += WireSize.message(flpHeadingDegrees, field: 32) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if let location { writer.writeMessage(location, field: 1) }
    if let heading { writer.writeMessage(heading, field: 2) }
    if let speedKmph { writer.writeMessage(speedKmph, field: 3) }
    if let updateTime { writer.writeMessage(updateTime, field: 4) }
    if let altitude { writer.writeMessage(altitude, field: 5) }
    if let speed { writer.writeMessage(speed, field: 6) }
    if let speedAccuracy { writer.writeMessage(speedAccuracy, field: 7) }
    if let horizontalAccuracy { writer.writeMessage(horizontalAccuracy, field: 8) }
    if let verticalAccuracy { writer.writeMessage(verticalAccuracy, field: 9) }
    if let bearingAccuracy { writer.writeMessage(bearingAccuracy, field: 10) }
    if locationSensor.rawValue != 0 { writer.writeEnum(locationSensor, field: 11) }
    if let isGpsSensorEnabled { writer.writeMessage(isGpsSensorEnabled, field: 12) }
    if let serverTime { writer.writeMessage(serverTime, field: 13) }
    if let timeSinceUpdate { writer.writeMessage(timeSinceUpdate, field: 14) }
    if let numStaleUpdates { writer.writeMessage(numStaleUpdates, field: 15) }
    if let rawLocation { writer.writeMessage(rawLocation, field: 16) }
    if let rawLocationTime { writer.writeMessage(rawLocationTime, field: 17) }
    if let supplementalLocation { writer.writeMessage(supplementalLocation, field: 18) }
    if let supplementalLocationTime { writer.writeMessage(supplementalLocationTime, field: 19) }
    if supplementalLocationSensor.rawValue != 0 { writer.writeEnum(supplementalLocationSensor, field: 20) }
    if let supplementalLocationAccuracy { writer.writeMessage(supplementalLocationAccuracy, field: 21) }
    if let latlngAccuracy { writer.writeMessage(latlngAccuracy, field: 22) }
    if let headingAccuracy { writer.writeMessage(headingAccuracy, field: 23) }
    if let altitudeAccuracy { writer.writeMessage(altitudeAccuracy, field: 24) }
    if let rawLocationAccuracy { writer.writeMessage(rawLocationAccuracy, field: 25) }
    if roadSnapped { writer.writeBool(roadSnapped, field: 26) }
    if let isRoadSnapped { writer.writeMessage(isRoadSnapped, field: 27) }
    if rawLocationSensor.rawValue != 0 { writer.writeEnum(rawLocationSensor, field: 28) }
    if let flpLocation { writer.writeMessage(flpLocation, field: 29) }
    if let flpUpdateTime { writer.writeMessage(flpUpdateTime, field: 30) }
    if let flpLatlngAccuracyMeters { writer.writeMessage(flpLatlngAccuracyMeters, field: 31) }
    if let flpHeadingDegrees { writer.writeMessage(flpHeadingDegrees, field: 32) }
    writer.writeUnknown(unknownFields)
  }
}

/// `maps.fleetengine.v1.TripAttribute`: a key-value attribute of a trip.
public struct TripAttribute: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.TripAttribute"

  /// The `trip_attribute_value` oneof: the attribute's typed value.
  public enum TripAttributeValue: Sendable, Hashable {
    /// `string_value` (field 2): a string attribute value.
    case stringValue(String)
    /// `bool_value` (field 3): a Boolean attribute value.
    case boolValue(Bool)
    /// `number_value` (field 4): a numeric attribute value.
    case numberValue(Double)
  }

  /// `key` (field 1): the attribute's key; may not contain a colon.
  public var key: String = ""
  /// The `trip_attribute_value` oneof (fields 2, 3 and 4); `nil` when none is set.
  public var tripAttributeValue: TripAttributeValue?
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: key = try reader.readString(tag)
      case 2: tripAttributeValue = .stringValue(try reader.readString(tag))
      case 3: tripAttributeValue = .boolValue(try reader.readBool(tag))
      case 4: tripAttributeValue = .numberValue(try reader.readDouble(tag))
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  // A set oneof member is written even when it holds its default: presence is what it says.
  public func encodedSize() -> Int {
    var size = unknownFields.count
    if !key.isEmpty { size += WireSize.string(key, field: 1) }
    switch tripAttributeValue {
    case .stringValue(let v): size += WireSize.string(v, field: 2)
    case .boolValue(let v): size += WireSize.bool(v, field: 3)
    case .numberValue(let v): size += WireSize.double(v, field: 4)
    case nil: break
    }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if !key.isEmpty { writer.writeString(key, field: 1) }
    switch tripAttributeValue {
    case .stringValue(let v): writer.writeString(v, field: 2)
    case .boolValue(let v): writer.writeBool(v, field: 3)
    case .numberValue(let v): writer.writeDouble(v, field: 4)
    case nil: break
    }
    writer.writeUnknown(unknownFields)
  }
}
