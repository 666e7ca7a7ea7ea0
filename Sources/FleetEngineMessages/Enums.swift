// Sources/FleetEngineMessages/Enums.swift - top-level Fleet Engine enums
//
// maps.fleetengine.v1.TripType, PolylineFormatType, NavigationStatus and
// LocationSensor (google/maps/fleetengine/v1/fleetengine.proto). WaypointType is
// in TerminalLocation.swift.

public import ProtoWire

/// `maps.fleetengine.v1.TripType`: whether a trip may share its vehicle with other trips.
public enum TripType: ProtoEnum, CaseIterable {
  /// `UNKNOWN_TRIP_TYPE` (0): default, used for an unspecified or unrecognized trip type.
  case unknownTripType
  /// `SHARED` (1): the trip may share a vehicle with other trips.
  case shared
  /// `EXCLUSIVE` (2): the trip is exclusive to a vehicle.
  case exclusive
  /// A value this version does not name, kept as received.
  case unrecognized(Int32)

  public static let allCases: [TripType] = [.unknownTripType, .shared, .exclusive]

  public init(rawValue: Int32) {
    switch rawValue {
    case 0: self = .unknownTripType
    case 1: self = .shared
    case 2: self = .exclusive
    default: self = .unrecognized(rawValue)
    }
  }

  public var rawValue: Int32 {
    switch self {
    case .unknownTripType: 0
    case .shared: 1
    case .exclusive: 2
    case .unrecognized(let value): value
    }
  }

  public var protoName: String {
    switch self {
    case .unknownTripType: "UNKNOWN_TRIP_TYPE"
    case .shared: "SHARED"
    case .exclusive: "EXCLUSIVE"
    case .unrecognized(let value): String(value)
    }
  }
}

/// `maps.fleetengine.v1.PolylineFormatType`: how a route polyline is returned.
public enum PolylineFormatType: ProtoEnum, CaseIterable {
  /// `UNKNOWN_FORMAT_TYPE` (0): unspecified; the server picks.
  case unknownFormatType
  /// `LAT_LNG_LIST_TYPE` (1): a list of `LatLng`s.
  case latLngListType
  /// `ENCODED_POLYLINE_TYPE` (2): a string in the encoded polyline format.
  case encodedPolylineType
  /// A value this version does not name, kept as received.
  case unrecognized(Int32)

  public static let allCases: [PolylineFormatType] = [.unknownFormatType, .latLngListType, .encodedPolylineType]

  public init(rawValue: Int32) {
    switch rawValue {
    case 0: self = .unknownFormatType
    case 1: self = .latLngListType
    case 2: self = .encodedPolylineType
    default: self = .unrecognized(rawValue)
    }
  }

  public var rawValue: Int32 {
    switch self {
    case .unknownFormatType: 0
    case .latLngListType: 1
    case .encodedPolylineType: 2
    case .unrecognized(let value): value
    }
  }

  public var protoName: String {
    switch self {
    case .unknownFormatType: "UNKNOWN_FORMAT_TYPE"
    case .latLngListType: "LAT_LNG_LIST_TYPE"
    case .encodedPolylineType: "ENCODED_POLYLINE_TYPE"
    case .unrecognized(let value): String(value)
    }
  }
}

/// `maps.fleetengine.v1.NavigationStatus`: the navigation state of a vehicle.
public enum NavigationStatus: ProtoEnum, CaseIterable {
  /// `UNKNOWN_NAVIGATION_STATUS` (0): unspecified.
  case unknownNavigationStatus
  /// `NO_GUIDANCE` (1): the driver app's navigation is off.
  case noGuidance
  /// `ENROUTE_TO_DESTINATION` (2): turn-by-turn navigation is on, towards a destination.
  case enrouteToDestination
  /// `OFF_ROUTE` (3): the vehicle has left the suggested route.
  case offRoute
  /// `ARRIVED_AT_DESTINATION` (4): the vehicle is about 50 m or less from its destination.
  case arrivedAtDestination
  /// A value this version does not name, kept as received.
  case unrecognized(Int32)

  public static let allCases: [NavigationStatus] = [
    .unknownNavigationStatus, .noGuidance, .enrouteToDestination, .offRoute, .arrivedAtDestination,
  ]

  public init(rawValue: Int32) {
    switch rawValue {
    case 0: self = .unknownNavigationStatus
    case 1: self = .noGuidance
    case 2: self = .enrouteToDestination
    case 3: self = .offRoute
    case 4: self = .arrivedAtDestination
    default: self = .unrecognized(rawValue)
    }
  }

  public var rawValue: Int32 {
    switch self {
    case .unknownNavigationStatus: 0
    case .noGuidance: 1
    case .enrouteToDestination: 2
    case .offRoute: 3
    case .arrivedAtDestination: 4
    case .unrecognized(let value): value
    }
  }

  public var protoName: String {
    switch self {
    case .unknownNavigationStatus: "UNKNOWN_NAVIGATION_STATUS"
    case .noGuidance: "NO_GUIDANCE"
    case .enrouteToDestination: "ENROUTE_TO_DESTINATION"
    case .offRoute: "OFF_ROUTE"
    case .arrivedAtDestination: "ARRIVED_AT_DESTINATION"
    case .unrecognized(let value): String(value)
    }
  }
}

/// `maps.fleetengine.v1.LocationSensor`: the sensor or method a location came from.
public enum LocationSensor: ProtoEnum, CaseIterable {
  /// `UNKNOWN_SENSOR` (0): unspecified or unknown.
  case unknownSensor
  /// `GPS` (1): GPS or assisted GPS.
  case gps
  /// `NETWORK` (2): assisted GPS, cell tower ID or WiFi access point.
  case network
  /// `PASSIVE` (3): cell tower ID or WiFi access point.
  case passive
  /// `ROAD_SNAPPED_LOCATION_PROVIDER` (4): the device's best estimate of its position on a road.
  case roadSnappedLocationProvider
  /// `CUSTOMER_SUPPLIED_LOCATION` (5): a location supplied independently by the customer.
  case customerSuppliedLocation
  /// `FLEET_ENGINE_LOCATION` (6): computed by Fleet Engine from the signals available to it (output only).
  case fleetEngineLocation
  /// `FUSED_LOCATION_PROVIDER` (100): Android's Fused Location Provider.
  case fusedLocationProvider
  /// `CORE_LOCATION` (200): the location provider on Apple operating systems.
  case coreLocation
  /// A value this version does not name, kept as received.
  case unrecognized(Int32)

  public static let allCases: [LocationSensor] = [
    .unknownSensor, .gps, .network, .passive, .roadSnappedLocationProvider, .customerSuppliedLocation,
    .fleetEngineLocation, .fusedLocationProvider, .coreLocation,
  ]

  public init(rawValue: Int32) {
    switch rawValue {
    case 0: self = .unknownSensor
    case 1: self = .gps
    case 2: self = .network
    case 3: self = .passive
    case 4: self = .roadSnappedLocationProvider
    case 5: self = .customerSuppliedLocation
    case 6: self = .fleetEngineLocation
    case 100: self = .fusedLocationProvider
    case 200: self = .coreLocation
    default: self = .unrecognized(rawValue)
    }
  }

  public var rawValue: Int32 {
    switch self {
    case .unknownSensor: 0
    case .gps: 1
    case .network: 2
    case .passive: 3
    case .roadSnappedLocationProvider: 4
    case .customerSuppliedLocation: 5
    case .fleetEngineLocation: 6
    case .fusedLocationProvider: 100
    case .coreLocation: 200
    case .unrecognized(let value): value
    }
  }

  public var protoName: String {
    switch self {
    case .unknownSensor: "UNKNOWN_SENSOR"
    case .gps: "GPS"
    case .network: "NETWORK"
    case .passive: "PASSIVE"
    case .roadSnappedLocationProvider: "ROAD_SNAPPED_LOCATION_PROVIDER"
    case .customerSuppliedLocation: "CUSTOMER_SUPPLIED_LOCATION"
    case .fleetEngineLocation: "FLEET_ENGINE_LOCATION"
    case .fusedLocationProvider: "FUSED_LOCATION_PROVIDER"
    case .coreLocation: "CORE_LOCATION"
    case .unrecognized(let value): String(value)
    }
  }
}
