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

  // What a consumer update carries (the location, its time and accuracy, heading and speed) is stored inline;
  // the rest, rarely present, behind one optional copy-on-write reference that stays nil (no allocation) until
  // one of those fields is set. Copying a location (it travels through every merge, snapshot and delivery)
  // then retains a handful of references instead of one per field, and decoding one allocates nothing more.
  /// `location` (field 1): the vehicle's location; its source is given by `location_sensor`.
  public var location: LatLng? = nil
  /// `latlng_accuracy` (field 22): accuracy of `location` in meters, as a radius.
  public var latlngAccuracy: DoubleValue? = nil
  /// `heading` (field 2): the direction of travel in degrees, 0 is north, in [0, 360).
  public var heading: Int32Value? = nil
  /// `heading_accuracy` (field 23): accuracy of `heading` in degrees.
  public var headingAccuracy: DoubleValue? = nil
  /// `speed` (field 6): speed in meters per second.
  public var speed: DoubleValue? = nil
  /// `update_time` (field 4): when the sensor reported `location`, by the sensor's clock.
  public var updateTime: Timestamp? = nil
  /// `server_time` (field 13): when the server received the location (output only).
  public var serverTime: Timestamp? = nil
  /// `location_sensor` (field 11): the provider of `location`, for example `GPS`.
  public var locationSensor: LocationSensor = .unknownSensor
  public var unknownFields: UnknownFields = UnknownFields()

  /// The rarely present fields, behind one reference (see above); nil while none has been set.
  @usableFromInline var _rare: RareFields?

  /// The rarely present fields of a ``VehicleLocation``.
  // @unchecked Sendable and @exclusivity(unchecked): as for Trip.Storage, a RareFields is written only through
  // `_uniqueRare()`, while the one VehicleLocation holding it is its only reference.
  @usableFromInline
  final class RareFields: CopyOnWriteBox, @unchecked Sendable {
    @exclusivity(unchecked) var horizontalAccuracy: DoubleValue? = nil
    @exclusivity(unchecked) var bearingAccuracy: DoubleValue? = nil
    @exclusivity(unchecked) var altitude: DoubleValue? = nil
    @exclusivity(unchecked) var verticalAccuracy: DoubleValue? = nil
    @exclusivity(unchecked) var altitudeAccuracy: DoubleValue? = nil
    @exclusivity(unchecked) var speedKmph: Int32Value? = nil
    @exclusivity(unchecked) var speedAccuracy: DoubleValue? = nil
    @exclusivity(unchecked) var isRoadSnapped: BoolValue? = nil
    @exclusivity(unchecked) var isGpsSensorEnabled: BoolValue? = nil
    @exclusivity(unchecked) var timeSinceUpdate: Int32Value? = nil
    @exclusivity(unchecked) var numStaleUpdates: Int32Value? = nil
    @exclusivity(unchecked) var rawLocation: LatLng? = nil
    @exclusivity(unchecked) var rawLocationTime: Timestamp? = nil
    @exclusivity(unchecked) var rawLocationSensor: LocationSensor = .unknownSensor
    @exclusivity(unchecked) var rawLocationAccuracy: DoubleValue? = nil
    @exclusivity(unchecked) var flpLocation: LatLng? = nil
    @exclusivity(unchecked) var flpUpdateTime: Timestamp? = nil
    @exclusivity(unchecked) var flpLatlngAccuracyMeters: DoubleValue? = nil
    @exclusivity(unchecked) var flpHeadingDegrees: Int32Value? = nil
    @exclusivity(unchecked) var supplementalLocation: LatLng? = nil
    @exclusivity(unchecked) var supplementalLocationTime: Timestamp? = nil
    @exclusivity(unchecked) var supplementalLocationSensor: LocationSensor = .unknownSensor
    @exclusivity(unchecked) var supplementalLocationAccuracy: DoubleValue? = nil
    @exclusivity(unchecked) var roadSnapped: Bool = false

    init() {}

    init(copying other: RareFields) {
      horizontalAccuracy = other.horizontalAccuracy
      bearingAccuracy = other.bearingAccuracy
      altitude = other.altitude
      verticalAccuracy = other.verticalAccuracy
      altitudeAccuracy = other.altitudeAccuracy
      speedKmph = other.speedKmph
      speedAccuracy = other.speedAccuracy
      isRoadSnapped = other.isRoadSnapped
      isGpsSensorEnabled = other.isGpsSensorEnabled
      timeSinceUpdate = other.timeSinceUpdate
      numStaleUpdates = other.numStaleUpdates
      rawLocation = other.rawLocation
      rawLocationTime = other.rawLocationTime
      rawLocationSensor = other.rawLocationSensor
      rawLocationAccuracy = other.rawLocationAccuracy
      flpLocation = other.flpLocation
      flpUpdateTime = other.flpUpdateTime
      flpLatlngAccuracyMeters = other.flpLatlngAccuracyMeters
      flpHeadingDegrees = other.flpHeadingDegrees
      supplementalLocation = other.supplementalLocation
      supplementalLocationTime = other.supplementalLocationTime
      supplementalLocationSensor = other.supplementalLocationSensor
      supplementalLocationAccuracy = other.supplementalLocationAccuracy
      roadSnapped = other.roadSnapped
    }

    /// Whether every field holds its default.
    var isEmpty: Bool {
      horizontalAccuracy == nil
        && bearingAccuracy == nil
        && altitude == nil
        && verticalAccuracy == nil
        && altitudeAccuracy == nil
        && speedKmph == nil
        && speedAccuracy == nil
        && isRoadSnapped == nil
        && isGpsSensorEnabled == nil
        && timeSinceUpdate == nil
        && numStaleUpdates == nil
        && rawLocation == nil
        && rawLocationTime == nil
        && rawLocationSensor == .unknownSensor
        && rawLocationAccuracy == nil
        && flpLocation == nil
        && flpUpdateTime == nil
        && flpLatlngAccuracyMeters == nil
        && flpHeadingDegrees == nil
        && supplementalLocation == nil
        && supplementalLocationTime == nil
        && supplementalLocationSensor == .unknownSensor
        && supplementalLocationAccuracy == nil
        && !roadSnapped
    }

    /// Field-by-field equality (`==` on each field: a NaN differs from itself).
    func equals(_ other: RareFields) -> Bool {
      horizontalAccuracy == other.horizontalAccuracy
        && bearingAccuracy == other.bearingAccuracy
        && altitude == other.altitude
        && verticalAccuracy == other.verticalAccuracy
        && altitudeAccuracy == other.altitudeAccuracy
        && speedKmph == other.speedKmph
        && speedAccuracy == other.speedAccuracy
        && isRoadSnapped == other.isRoadSnapped
        && isGpsSensorEnabled == other.isGpsSensorEnabled
        && timeSinceUpdate == other.timeSinceUpdate
        && numStaleUpdates == other.numStaleUpdates
        && rawLocation == other.rawLocation
        && rawLocationTime == other.rawLocationTime
        && rawLocationSensor == other.rawLocationSensor
        && rawLocationAccuracy == other.rawLocationAccuracy
        && flpLocation == other.flpLocation
        && flpUpdateTime == other.flpUpdateTime
        && flpLatlngAccuracyMeters == other.flpLatlngAccuracyMeters
        && flpHeadingDegrees == other.flpHeadingDegrees
        && supplementalLocation == other.supplementalLocation
        && supplementalLocationTime == other.supplementalLocationTime
        && supplementalLocationSensor == other.supplementalLocationSensor
        && supplementalLocationAccuracy == other.supplementalLocationAccuracy
        && roadSnapped == other.roadSnapped
    }

    func hash(into hasher: inout Hasher) {
      hasher.combine(horizontalAccuracy)
      hasher.combine(bearingAccuracy)
      hasher.combine(altitude)
      hasher.combine(verticalAccuracy)
      hasher.combine(altitudeAccuracy)
      hasher.combine(speedKmph)
      hasher.combine(speedAccuracy)
      hasher.combine(isRoadSnapped)
      hasher.combine(isGpsSensorEnabled)
      hasher.combine(timeSinceUpdate)
      hasher.combine(numStaleUpdates)
      hasher.combine(rawLocation)
      hasher.combine(rawLocationTime)
      hasher.combine(rawLocationSensor)
      hasher.combine(rawLocationAccuracy)
      hasher.combine(flpLocation)
      hasher.combine(flpUpdateTime)
      hasher.combine(flpLatlngAccuracyMeters)
      hasher.combine(flpHeadingDegrees)
      hasher.combine(supplementalLocation)
      hasher.combine(supplementalLocationTime)
      hasher.combine(supplementalLocationSensor)
      hasher.combine(supplementalLocationAccuracy)
      hasher.combine(roadSnapped)
    }
  }

  /// The identity of the rare fields' box (nil: none), for tests of its copy on write.
  package var rareFieldsIdentity: ObjectIdentifier? { _rare.map(ObjectIdentifier.init) }

  /// The rare fields, made this location's own (and created) first.
  @usableFromInline
  mutating func _uniqueRare() -> RareFields { _rare.unique() }

  /// `horizontal_accuracy` (field 8): deprecated, use `latlng_accuracy`.
  public var horizontalAccuracy: DoubleValue? {
    get { _rare?.horizontalAccuracy }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().horizontalAccuracy = newValue
    }
  }
  /// `bearing_accuracy` (field 10): deprecated, use `heading_accuracy`.
  public var bearingAccuracy: DoubleValue? {
    get { _rare?.bearingAccuracy }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().bearingAccuracy = newValue
    }
  }
  /// `altitude` (field 5): altitude in meters above WGS84.
  public var altitude: DoubleValue? {
    get { _rare?.altitude }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().altitude = newValue
    }
  }
  /// `vertical_accuracy` (field 9): deprecated, use `altitude_accuracy`.
  public var verticalAccuracy: DoubleValue? {
    get { _rare?.verticalAccuracy }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().verticalAccuracy = newValue
    }
  }
  /// `altitude_accuracy` (field 24): accuracy of `altitude` in meters.
  public var altitudeAccuracy: DoubleValue? {
    get { _rare?.altitudeAccuracy }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().altitudeAccuracy = newValue
    }
  }
  /// `speed_kmph` (field 3): speed in km/h; deprecated, use `speed`.
  public var speedKmph: Int32Value? {
    get { _rare?.speedKmph }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().speedKmph = newValue
    }
  }
  /// `speed_accuracy` (field 7): accuracy of `speed` in meters per second.
  public var speedAccuracy: DoubleValue? {
    get { _rare?.speedAccuracy }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().speedAccuracy = newValue
    }
  }
  /// `is_road_snapped` (field 27): whether `location` is snapped to a road.
  public var isRoadSnapped: BoolValue? {
    get { _rare?.isRoadSnapped }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().isRoadSnapped = newValue
    }
  }
  /// `is_gps_sensor_enabled` (field 12): whether the device's GPS sensor is enabled (input only).
  public var isGpsSensorEnabled: BoolValue? {
    get { _rare?.isGpsSensorEnabled }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().isGpsSensorEnabled = newValue
    }
  }
  /// `time_since_update` (field 14): seconds since this location was first sent to the server (input only).
  public var timeSinceUpdate: Int32Value? {
    get { _rare?.timeSinceUpdate }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().timeSinceUpdate = newValue
    }
  }
  /// `num_stale_updates` (field 15): deprecated (input only).
  public var numStaleUpdates: Int32Value? {
    get { _rare?.numStaleUpdates }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().numStaleUpdates = newValue
    }
  }
  /// `raw_location` (field 16): the raw location, before road snapping.
  public var rawLocation: LatLng? {
    get { _rare?.rawLocation }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().rawLocation = newValue
    }
  }
  /// `raw_location_time` (field 17): when `raw_location` was taken.
  public var rawLocationTime: Timestamp? {
    get { _rare?.rawLocationTime }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().rawLocationTime = newValue
    }
  }
  /// `raw_location_sensor` (field 28): the source of `raw_location`.
  public var rawLocationSensor: LocationSensor {
    get { _rare?.rawLocationSensor ?? .unknownSensor }
    set {
      guard _rare != nil || newValue != .unknownSensor else { return }
      _uniqueRare().rawLocationSensor = newValue
    }
  }
  /// `raw_location_accuracy` (field 25): accuracy of `raw_location` in meters, as a radius.
  public var rawLocationAccuracy: DoubleValue? {
    get { _rare?.rawLocationAccuracy }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().rawLocationAccuracy = newValue
    }
  }
  /// `flp_location` (field 29): the location from Android's Fused Location Provider.
  public var flpLocation: LatLng? {
    get { _rare?.flpLocation }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().flpLocation = newValue
    }
  }
  /// `flp_update_time` (field 30): when `flp_location` was taken.
  public var flpUpdateTime: Timestamp? {
    get { _rare?.flpUpdateTime }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().flpUpdateTime = newValue
    }
  }
  /// `flp_latlng_accuracy_meters` (field 31): accuracy of `flp_location` in meters, as a radius.
  public var flpLatlngAccuracyMeters: DoubleValue? {
    get { _rare?.flpLatlngAccuracyMeters }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().flpLatlngAccuracyMeters = newValue
    }
  }
  /// `flp_heading_degrees` (field 32): the direction of travel by the Fused Location Provider, in degrees.
  public var flpHeadingDegrees: Int32Value? {
    get { _rare?.flpHeadingDegrees }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().flpHeadingDegrees = newValue
    }
  }
  /// `supplemental_location` (field 18): a location supplied by the integrating app.
  public var supplementalLocation: LatLng? {
    get { _rare?.supplementalLocation }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().supplementalLocation = newValue
    }
  }
  /// `supplemental_location_time` (field 19): when `supplemental_location` was taken.
  public var supplementalLocationTime: Timestamp? {
    get { _rare?.supplementalLocationTime }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().supplementalLocationTime = newValue
    }
  }
  /// `supplemental_location_sensor` (field 20): the source of `supplemental_location`.
  public var supplementalLocationSensor: LocationSensor {
    get { _rare?.supplementalLocationSensor ?? .unknownSensor }
    set {
      guard _rare != nil || newValue != .unknownSensor else { return }
      _uniqueRare().supplementalLocationSensor = newValue
    }
  }
  /// `supplemental_location_accuracy` (field 21): accuracy of `supplemental_location` in meters, as a radius.
  public var supplementalLocationAccuracy: DoubleValue? {
    get { _rare?.supplementalLocationAccuracy }
    set {
      guard _rare != nil || newValue != nil else { return }
      _uniqueRare().supplementalLocationAccuracy = newValue
    }
  }
  /// `road_snapped` (field 26): deprecated, use `is_road_snapped`.
  public var roadSnapped: Bool {
    get { _rare?.roadSnapped ?? false }
    set {
      guard _rare != nil || newValue != false else { return }
      _uniqueRare().roadSnapped = newValue
    }
  }

  public init() {}

  public static func == (a: VehicleLocation, b: VehicleLocation) -> Bool {
    guard
      a.location == b.location
        && a.latlngAccuracy == b.latlngAccuracy
        && a.heading == b.heading
        && a.headingAccuracy == b.headingAccuracy
        && a.speed == b.speed
        && a.updateTime == b.updateTime
        && a.serverTime == b.serverTime
        && a.locationSensor == b.locationSensor
        && a.unknownFields == b.unknownFields
    else { return false }
    switch (a._rare, b._rare) {
    case (nil, nil): return true
    case (let x?, nil), (nil, let x?): return x.isEmpty
    // Field by field even when shared, as for the inline fields: a NaN differs from itself.
    case (let x?, let y?): return x.equals(y)
    }
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(location)
    hasher.combine(latlngAccuracy)
    hasher.combine(heading)
    hasher.combine(headingAccuracy)
    hasher.combine(speed)
    hasher.combine(updateTime)
    hasher.combine(serverTime)
    hasher.combine(locationSensor)
    hasher.combine(unknownFields)
    // Absent and empty rare fields hash alike, as they compare equal.
    if let rare = _rare, !rare.isEmpty { rare.hash(into: &hasher) }
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &location)
      case 2: try reader.readMessage(tag, into: &heading)
      case 3: try reader.readMessage(tag, into: &_uniqueRare().speedKmph)
      case 4: try reader.readMessage(tag, into: &updateTime)
      case 5: try reader.readMessage(tag, into: &_uniqueRare().altitude)
      case 6: try reader.readMessage(tag, into: &speed)
      case 7: try reader.readMessage(tag, into: &_uniqueRare().speedAccuracy)
      case 8: try reader.readMessage(tag, into: &_uniqueRare().horizontalAccuracy)
      case 9: try reader.readMessage(tag, into: &_uniqueRare().verticalAccuracy)
      case 10: try reader.readMessage(tag, into: &_uniqueRare().bearingAccuracy)
      case 11: locationSensor = try reader.readEnum(tag)
      case 12: try reader.readMessage(tag, into: &_uniqueRare().isGpsSensorEnabled)
      case 13: try reader.readMessage(tag, into: &serverTime)
      case 14: try reader.readMessage(tag, into: &_uniqueRare().timeSinceUpdate)
      case 15: try reader.readMessage(tag, into: &_uniqueRare().numStaleUpdates)
      case 16: try reader.readMessage(tag, into: &_uniqueRare().rawLocation)
      case 17: try reader.readMessage(tag, into: &_uniqueRare().rawLocationTime)
      case 18: try reader.readMessage(tag, into: &_uniqueRare().supplementalLocation)
      case 19: try reader.readMessage(tag, into: &_uniqueRare().supplementalLocationTime)
      case 20: _uniqueRare().supplementalLocationSensor = try reader.readEnum(tag)
      case 21: try reader.readMessage(tag, into: &_uniqueRare().supplementalLocationAccuracy)
      case 22: try reader.readMessage(tag, into: &latlngAccuracy)
      case 23: try reader.readMessage(tag, into: &headingAccuracy)
      case 24: try reader.readMessage(tag, into: &_uniqueRare().altitudeAccuracy)
      case 25: try reader.readMessage(tag, into: &_uniqueRare().rawLocationAccuracy)
      case 26: _uniqueRare().roadSnapped = try reader.readBool(tag)
      case 27: try reader.readMessage(tag, into: &_uniqueRare().isRoadSnapped)
      case 28: _uniqueRare().rawLocationSensor = try reader.readEnum(tag)
      case 29: try reader.readMessage(tag, into: &_uniqueRare().flpLocation)
      case 30: try reader.readMessage(tag, into: &_uniqueRare().flpUpdateTime)
      case 31: try reader.readMessage(tag, into: &_uniqueRare().flpLatlngAccuracyMeters)
      case 32: try reader.readMessage(tag, into: &_uniqueRare().flpHeadingDegrees)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    let r = _rare
    if let location { size += WireSize.message(location, field: 1) }
    if let heading { size += WireSize.message(heading, field: 2) }
    if let speedKmph = r?.speedKmph { size += WireSize.message(speedKmph, field: 3) }
    if let updateTime { size += WireSize.message(updateTime, field: 4) }
    if let altitude = r?.altitude { size += WireSize.message(altitude, field: 5) }
    if let speed { size += WireSize.message(speed, field: 6) }
    if let speedAccuracy = r?.speedAccuracy { size += WireSize.message(speedAccuracy, field: 7) }
    if let horizontalAccuracy = r?.horizontalAccuracy { size += WireSize.message(horizontalAccuracy, field: 8) }
    if let verticalAccuracy = r?.verticalAccuracy { size += WireSize.message(verticalAccuracy, field: 9) }
    if let bearingAccuracy = r?.bearingAccuracy { size += WireSize.message(bearingAccuracy, field: 10) }
    if locationSensor.rawValue != 0 { size += WireSize.enum(locationSensor, field: 11) }
    if let isGpsSensorEnabled = r?.isGpsSensorEnabled { size += WireSize.message(isGpsSensorEnabled, field: 12) }
    if let serverTime { size += WireSize.message(serverTime, field: 13) }
    if let timeSinceUpdate = r?.timeSinceUpdate { size += WireSize.message(timeSinceUpdate, field: 14) }
    if let numStaleUpdates = r?.numStaleUpdates { size += WireSize.message(numStaleUpdates, field: 15) }
    if let rawLocation = r?.rawLocation { size += WireSize.message(rawLocation, field: 16) }
    if let rawLocationTime = r?.rawLocationTime { size += WireSize.message(rawLocationTime, field: 17) }
    if let supplementalLocation = r?.supplementalLocation { size += WireSize.message(supplementalLocation, field: 18) }
    if let supplementalLocationTime = r?.supplementalLocationTime {
      size += WireSize.message(supplementalLocationTime, field: 19)
    }
    if let r, r.supplementalLocationSensor.rawValue != 0 {
      size += WireSize.enum(r.supplementalLocationSensor, field: 20)
    }
    if let supplementalLocationAccuracy = r?.supplementalLocationAccuracy {
      size += WireSize.message(supplementalLocationAccuracy, field: 21)
    }
    if let latlngAccuracy { size += WireSize.message(latlngAccuracy, field: 22) }
    if let headingAccuracy { size += WireSize.message(headingAccuracy, field: 23) }
    if let altitudeAccuracy = r?.altitudeAccuracy { size += WireSize.message(altitudeAccuracy, field: 24) }
    if let rawLocationAccuracy = r?.rawLocationAccuracy { size += WireSize.message(rawLocationAccuracy, field: 25) }
    if let r, r.roadSnapped { size += WireSize.bool(r.roadSnapped, field: 26) }
    if let isRoadSnapped = r?.isRoadSnapped { size += WireSize.message(isRoadSnapped, field: 27) }
    if let r, r.rawLocationSensor.rawValue != 0 { size += WireSize.enum(r.rawLocationSensor, field: 28) }
    if let flpLocation = r?.flpLocation { size += WireSize.message(flpLocation, field: 29) }
    if let flpUpdateTime = r?.flpUpdateTime { size += WireSize.message(flpUpdateTime, field: 30) }
    if let flpLatlngAccuracyMeters = r?.flpLatlngAccuracyMeters {
      size += WireSize.message(flpLatlngAccuracyMeters, field: 31)
    }
    if let flpHeadingDegrees = r?.flpHeadingDegrees { size += WireSize.message(flpHeadingDegrees, field: 32) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    let r = _rare
    if let location { writer.writeMessage(location, field: 1) }
    if let heading { writer.writeMessage(heading, field: 2) }
    if let speedKmph = r?.speedKmph { writer.writeMessage(speedKmph, field: 3) }
    if let updateTime { writer.writeMessage(updateTime, field: 4) }
    if let altitude = r?.altitude { writer.writeMessage(altitude, field: 5) }
    if let speed { writer.writeMessage(speed, field: 6) }
    if let speedAccuracy = r?.speedAccuracy { writer.writeMessage(speedAccuracy, field: 7) }
    if let horizontalAccuracy = r?.horizontalAccuracy { writer.writeMessage(horizontalAccuracy, field: 8) }
    if let verticalAccuracy = r?.verticalAccuracy { writer.writeMessage(verticalAccuracy, field: 9) }
    if let bearingAccuracy = r?.bearingAccuracy { writer.writeMessage(bearingAccuracy, field: 10) }
    if locationSensor.rawValue != 0 { writer.writeEnum(locationSensor, field: 11) }
    if let isGpsSensorEnabled = r?.isGpsSensorEnabled { writer.writeMessage(isGpsSensorEnabled, field: 12) }
    if let serverTime { writer.writeMessage(serverTime, field: 13) }
    if let timeSinceUpdate = r?.timeSinceUpdate { writer.writeMessage(timeSinceUpdate, field: 14) }
    if let numStaleUpdates = r?.numStaleUpdates { writer.writeMessage(numStaleUpdates, field: 15) }
    if let rawLocation = r?.rawLocation { writer.writeMessage(rawLocation, field: 16) }
    if let rawLocationTime = r?.rawLocationTime { writer.writeMessage(rawLocationTime, field: 17) }
    if let supplementalLocation = r?.supplementalLocation { writer.writeMessage(supplementalLocation, field: 18) }
    if let supplementalLocationTime = r?.supplementalLocationTime {
      writer.writeMessage(supplementalLocationTime, field: 19)
    }
    if let r, r.supplementalLocationSensor.rawValue != 0 { writer.writeEnum(r.supplementalLocationSensor, field: 20) }
    if let supplementalLocationAccuracy = r?.supplementalLocationAccuracy {
      writer.writeMessage(supplementalLocationAccuracy, field: 21)
    }
    if let latlngAccuracy { writer.writeMessage(latlngAccuracy, field: 22) }
    if let headingAccuracy { writer.writeMessage(headingAccuracy, field: 23) }
    if let altitudeAccuracy = r?.altitudeAccuracy { writer.writeMessage(altitudeAccuracy, field: 24) }
    if let rawLocationAccuracy = r?.rawLocationAccuracy { writer.writeMessage(rawLocationAccuracy, field: 25) }
    if let r, r.roadSnapped { writer.writeBool(r.roadSnapped, field: 26) }
    if let isRoadSnapped = r?.isRoadSnapped { writer.writeMessage(isRoadSnapped, field: 27) }
    if let r, r.rawLocationSensor.rawValue != 0 { writer.writeEnum(r.rawLocationSensor, field: 28) }
    if let flpLocation = r?.flpLocation { writer.writeMessage(flpLocation, field: 29) }
    if let flpUpdateTime = r?.flpUpdateTime { writer.writeMessage(flpUpdateTime, field: 30) }
    if let flpLatlngAccuracyMeters = r?.flpLatlngAccuracyMeters {
      writer.writeMessage(flpLatlngAccuracyMeters, field: 31)
    }
    if let flpHeadingDegrees = r?.flpHeadingDegrees { writer.writeMessage(flpHeadingDegrees, field: 32) }
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
