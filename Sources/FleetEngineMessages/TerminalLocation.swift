// Sources/FleetEngineMessages/TerminalLocation.swift - where a trip starts, stops or ends
//
// maps.fleetengine.v1.TerminalPointId, TerminalLocation and WaypointType
// (google/maps/fleetengine/v1/fleetengine.proto).

public import ProtoWire

/// `maps.fleetengine.v1.WaypointType`: the role of a stop in a trip.
public enum WaypointType: ProtoEnum, CaseIterable {
  /// `UNKNOWN_WAYPOINT_TYPE` (0).
  case unknownWaypointType
  /// `PICKUP_WAYPOINT_TYPE` (1).
  case pickupWaypointType
  /// `DROP_OFF_WAYPOINT_TYPE` (2).
  case dropOffWaypointType
  /// `INTERMEDIATE_DESTINATION_WAYPOINT_TYPE` (3).
  case intermediateDestinationWaypointType
  /// A value this version does not name, kept as received.
  case unrecognized(Int32)

  public static let allCases: [WaypointType] = [
    .unknownWaypointType, .pickupWaypointType, .dropOffWaypointType, .intermediateDestinationWaypointType,
  ]

  public init(rawValue: Int32) {
    switch rawValue {
    case 0: self = .unknownWaypointType
    case 1: self = .pickupWaypointType
    case 2: self = .dropOffWaypointType
    case 3: self = .intermediateDestinationWaypointType
    default: self = .unrecognized(rawValue)
    }
  }

  public var rawValue: Int32 {
    switch self {
    case .unknownWaypointType: 0
    case .pickupWaypointType: 1
    case .dropOffWaypointType: 2
    case .intermediateDestinationWaypointType: 3
    case .unrecognized(let value): value
    }
  }

  public var protoName: String {
    switch self {
    case .unknownWaypointType: "UNKNOWN_WAYPOINT_TYPE"
    case .pickupWaypointType: "PICKUP_WAYPOINT_TYPE"
    case .dropOffWaypointType: "DROP_OFF_WAYPOINT_TYPE"
    case .intermediateDestinationWaypointType: "INTERMEDIATE_DESTINATION_WAYPOINT_TYPE"
    case .unrecognized(let value): String(value)
    }
  }
}

/// `maps.fleetengine.v1.TerminalPointId` (deprecated in the API, still on the wire).
public struct TerminalPointId: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.TerminalPointId"

  /// The `Id` oneof: which kind of identifier this is.
  public enum Id: Sendable, Hashable {
    /// `place_id` (field 2).
    case placeId(String)
    /// `generated_id` (field 3).
    case generatedId(String)
  }

  /// The `Id` oneof (fields 2 and 3); `nil` when neither is set.
  public var id: Id?
  /// `value` (field 4).
  public var value: String = ""
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 2: id = .placeId(try reader.readString(tag))
      case 3: id = .generatedId(try reader.readString(tag))
      case 4: value = try reader.readString(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  // A set oneof member is written even when it holds its default: presence is what it says.
  public func encodedSize() -> Int {
    var size = unknownFields.count
    switch id {
    case .placeId(let v): size += WireSize.string(v, field: 2)
    case .generatedId(let v): size += WireSize.string(v, field: 3)
    case nil: break
    }
    if !value.isEmpty { size += WireSize.string(value, field: 4) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    switch id {
    case .placeId(let v): writer.writeString(v, field: 2)
    case .generatedId(let v): writer.writeString(v, field: 3)
    case nil: break
    }
    if !value.isEmpty { writer.writeString(value, field: 4) }
    writer.writeUnknown(unknownFields)
  }
}

/// `maps.fleetengine.v1.TerminalLocation`: the location of a waypoint.
public struct TerminalLocation: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.TerminalLocation"

  /// The deprecated fields, which servers hardly ever send, behind a reference of their own: nil until one is
  /// set, shared between copies until one of them changes it (copy on write). Inline they were 80 of a
  /// location's 120 bytes, in every pickup, dropoff and waypoint of every followed trip.
  @usableFromInline
  final class DeprecatedFields: CopyOnWriteBox, @unchecked Sendable {
    @exclusivity(unchecked) var terminalPointId: TerminalPointId? = nil
    @exclusivity(unchecked) var accessPointId: String = ""
    @exclusivity(unchecked) var tripId: String = ""
    @exclusivity(unchecked) var terminalLocationType: WaypointType = .unknownWaypointType

    init() {}

    init(copying other: DeprecatedFields) {
      terminalPointId = other.terminalPointId
      accessPointId = other.accessPointId
      tripId = other.tripId
      terminalLocationType = other.terminalLocationType
    }
  }

  /// `point` (field 1): the waypoint's position.
  public var point: LatLng?
  @usableFromInline var _deprecated: DeprecatedFields?
  public var unknownFields = UnknownFields()

  /// The deprecated fields, made this location's own first (created empty, or copied when shared).
  @usableFromInline
  mutating func _uniqueDeprecated() -> DeprecatedFields { _deprecated.unique() }

  /// The identity of the deprecated fields' box (nil: none), for tests of its copy on write.
  package var deprecatedFieldsIdentity: ObjectIdentifier? { _deprecated.map(ObjectIdentifier.init) }

  /// `terminal_point_id` (field 2), deprecated.
  public var terminalPointId: TerminalPointId? {
    get { _deprecated?.terminalPointId }
    set {
      guard _deprecated != nil || newValue != nil else { return }
      _uniqueDeprecated().terminalPointId = newValue
    }
    _modify { yield &_uniqueDeprecated().terminalPointId }
  }
  /// `access_point_id` (field 3), deprecated.
  public var accessPointId: String {
    get { _deprecated?.accessPointId ?? "" }
    set {
      guard _deprecated != nil || !newValue.isEmpty else { return }
      _uniqueDeprecated().accessPointId = newValue
    }
    _modify { yield &_uniqueDeprecated().accessPointId }
  }
  /// `trip_id` (field 4), deprecated.
  public var tripId: String {
    get { _deprecated?.tripId ?? "" }
    set {
      guard _deprecated != nil || !newValue.isEmpty else { return }
      _uniqueDeprecated().tripId = newValue
    }
    _modify { yield &_uniqueDeprecated().tripId }
  }
  /// `terminal_location_type` (field 5), deprecated.
  public var terminalLocationType: WaypointType {
    get { _deprecated?.terminalLocationType ?? .unknownWaypointType }
    set {
      guard _deprecated != nil || newValue.rawValue != 0 else { return }
      _uniqueDeprecated().terminalLocationType = newValue
    }
    _modify { yield &_uniqueDeprecated().terminalLocationType }
  }

  // Field by field, so that a box whose fields are all back at their defaults equals no box.
  public static func == (a: TerminalLocation, b: TerminalLocation) -> Bool {
    a.point == b.point && a.unknownFields == b.unknownFields
      && (a._deprecated === b._deprecated
        || (a.terminalPointId == b.terminalPointId && a.accessPointId == b.accessPointId && a.tripId == b.tripId
          && a.terminalLocationType == b.terminalLocationType))
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(point)
    hasher.combine(terminalPointId)
    hasher.combine(accessPointId)
    hasher.combine(tripId)
    hasher.combine(terminalLocationType)
    hasher.combine(unknownFields)
  }

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &point)
      case 2: try reader.readMessage(tag, into: &terminalPointId)
      case 3: accessPointId = try reader.readString(tag)
      case 4: tripId = try reader.readString(tag)
      case 5: terminalLocationType = try reader.readEnum(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if let point { size += WireSize.message(point, field: 1) }
    if let terminalPointId { size += WireSize.message(terminalPointId, field: 2) }
    if !accessPointId.isEmpty { size += WireSize.string(accessPointId, field: 3) }
    if !tripId.isEmpty { size += WireSize.string(tripId, field: 4) }
    if terminalLocationType.rawValue != 0 { size += WireSize.enum(terminalLocationType, field: 5) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if let point { writer.writeMessage(point, field: 1) }
    if let terminalPointId { writer.writeMessage(terminalPointId, field: 2) }
    if !accessPointId.isEmpty { writer.writeString(accessPointId, field: 3) }
    if !tripId.isEmpty { writer.writeString(tripId, field: 4) }
    if terminalLocationType.rawValue != 0 { writer.writeEnum(terminalLocationType, field: 5) }
    writer.writeUnknown(unknownFields)
  }
}
