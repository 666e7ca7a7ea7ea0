// Sources/FleetEngineMessages/Trip.swift - a Fleet Engine trip
//
// maps.fleetengine.v1.Trip, StopLocation, TripStatus, BillingPlatformIdentifier and
// TripView (google/maps/fleetengine/v1/trips.proto).

public import ProtoWire

/// `maps.fleetengine.v1.TripStatus`: the progress of a trip.
public enum TripStatus: ProtoEnum, CaseIterable {
  /// `UNKNOWN_TRIP_STATUS` (0): default, for an unspecified or unrecognized status.
  case unknownTripStatus
  /// `NEW` (1): newly created.
  case new
  /// `ENROUTE_TO_PICKUP` (2): the driver is on the way to the pickup point.
  case enrouteToPickup
  /// `ARRIVED_AT_PICKUP` (3): the driver has arrived at the pickup point.
  case arrivedAtPickup
  /// `ENROUTE_TO_DROPOFF` (4): the driver has picked up the rider and is on the way to the next destination.
  case enrouteToDropoff
  /// `COMPLETE` (5): the rider has been dropped off and the trip is complete.
  case complete
  /// `CANCELED` (6): the trip was canceled before pickup by the driver, rider or provider.
  case canceled
  /// `ARRIVED_AT_INTERMEDIATE_DESTINATION` (7): the driver has arrived at an intermediate destination.
  case arrivedAtIntermediateDestination
  /// `ENROUTE_TO_INTERMEDIATE_DESTINATION` (8): the driver is on the way to an intermediate destination.
  case enrouteToIntermediateDestination
  /// A value this version does not name, kept as received.
  case unrecognized(Int32)

  public static let allCases: [TripStatus] = [
    .unknownTripStatus, .new, .enrouteToPickup, .arrivedAtPickup, .enrouteToDropoff, .complete, .canceled,
    .arrivedAtIntermediateDestination, .enrouteToIntermediateDestination,
  ]

  public init(rawValue: Int32) {
    switch rawValue {
    case 0: self = .unknownTripStatus
    case 1: self = .new
    case 2: self = .enrouteToPickup
    case 3: self = .arrivedAtPickup
    case 4: self = .enrouteToDropoff
    case 5: self = .complete
    case 6: self = .canceled
    case 7: self = .arrivedAtIntermediateDestination
    case 8: self = .enrouteToIntermediateDestination
    default: self = .unrecognized(rawValue)
    }
  }

  public var rawValue: Int32 {
    switch self {
    case .unknownTripStatus: 0
    case .new: 1
    case .enrouteToPickup: 2
    case .arrivedAtPickup: 3
    case .enrouteToDropoff: 4
    case .complete: 5
    case .canceled: 6
    case .arrivedAtIntermediateDestination: 7
    case .enrouteToIntermediateDestination: 8
    case .unrecognized(let value): value
    }
  }

  public var protoName: String {
    switch self {
    case .unknownTripStatus: "UNKNOWN_TRIP_STATUS"
    case .new: "NEW"
    case .enrouteToPickup: "ENROUTE_TO_PICKUP"
    case .arrivedAtPickup: "ARRIVED_AT_PICKUP"
    case .enrouteToDropoff: "ENROUTE_TO_DROPOFF"
    case .complete: "COMPLETE"
    case .canceled: "CANCELED"
    case .arrivedAtIntermediateDestination: "ARRIVED_AT_INTERMEDIATE_DESTINATION"
    case .enrouteToIntermediateDestination: "ENROUTE_TO_INTERMEDIATE_DESTINATION"
    case .unrecognized(let value): String(value)
    }
  }
}

/// `maps.fleetengine.v1.BillingPlatformIdentifier`: the platform on which a billable trip was requested.
public enum BillingPlatformIdentifier: ProtoEnum, CaseIterable {
  /// `BILLING_PLATFORM_IDENTIFIER_UNSPECIFIED` (0): default, for an unspecified platform.
  case billingPlatformIdentifierUnspecified
  /// `SERVER` (1): a server.
  case server
  /// `WEB` (2): a web browser.
  case web
  /// `ANDROID` (3): an Android device.
  case android
  /// `IOS` (4): an iOS device.
  case ios
  /// `OTHERS` (5): any other platform.
  case others
  /// A value this version does not name, kept as received.
  case unrecognized(Int32)

  public static let allCases: [BillingPlatformIdentifier] = [
    .billingPlatformIdentifierUnspecified, .server, .web, .android, .ios, .others,
  ]

  public init(rawValue: Int32) {
    switch rawValue {
    case 0: self = .billingPlatformIdentifierUnspecified
    case 1: self = .server
    case 2: self = .web
    case 3: self = .android
    case 4: self = .ios
    case 5: self = .others
    default: self = .unrecognized(rawValue)
    }
  }

  public var rawValue: Int32 {
    switch self {
    case .billingPlatformIdentifierUnspecified: 0
    case .server: 1
    case .web: 2
    case .android: 3
    case .ios: 4
    case .others: 5
    case .unrecognized(let value): value
    }
  }

  public var protoName: String {
    switch self {
    case .billingPlatformIdentifierUnspecified: "BILLING_PLATFORM_IDENTIFIER_UNSPECIFIED"
    case .server: "SERVER"
    case .web: "WEB"
    case .android: "ANDROID"
    case .ios: "IOS"
    case .others: "OTHERS"
    case .unrecognized(let value): String(value)
    }
  }
}

/// `maps.fleetengine.v1.TripView`: which subset of a trip's fields a read returns.
public enum TripView: ProtoEnum, CaseIterable {
  /// `TRIP_VIEW_UNSPECIFIED` (0): the server's default view (currently `SDK`).
  case tripViewUnspecified
  /// `SDK` (1): fields that may not be interpretable or supportable with public libraries.
  case sdk
  /// `JOURNEY_SHARING_V1S` (2): fields for the journey sharing use case, for service providers.
  case journeySharingV1S
  /// A value this version does not name, kept as received.
  case unrecognized(Int32)

  public static let allCases: [TripView] = [.tripViewUnspecified, .sdk, .journeySharingV1S]

  public init(rawValue: Int32) {
    switch rawValue {
    case 0: self = .tripViewUnspecified
    case 1: self = .sdk
    case 2: self = .journeySharingV1S
    default: self = .unrecognized(rawValue)
    }
  }

  public var rawValue: Int32 {
    switch self {
    case .tripViewUnspecified: 0
    case .sdk: 1
    case .journeySharingV1S: 2
    case .unrecognized(let value): value
    }
  }

  public var protoName: String {
    switch self {
    case .tripViewUnspecified: "TRIP_VIEW_UNSPECIFIED"
    case .sdk: "SDK"
    case .journeySharingV1S: "JOURNEY_SHARING_V1S"
    case .unrecognized(let value): String(value)
    }
  }
}

/// `maps.fleetengine.v1.Trip`: a trip and everything known about its progress.
public struct Trip: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.Trip"

  /// The fields, behind one reference: copying a `Trip` copies a pointer, and the first change to a copy
  /// that shares its storage copies the storage (copy on write, as swift-protobuf does for large messages).
  /// A trip's fields are most of a followed trip's state, and the trip travels whole through decoding,
  /// merging, snapshots and deliveries: copying it inline (about 1.7 KB, with a retain and a release for
  /// every field that holds a reference) was the largest single cost of a full update.
  // @unchecked Sendable: a Storage is mutated only through `_uniqueStorage()`, that is while the one `Trip`
  // that holds it is the only reference to it; shared storage is never written. For the same reason its fields
  // need no dynamic exclusivity checks (`@exclusivity(unchecked)`): a `Trip`'s own exclusivity already covers
  // every access to its storage, and the runtime checks made copying and decoding a trip more than twice as
  // slow as the inline struct was.
  @usableFromInline
  final class Storage: @unchecked Sendable {
    @exclusivity(unchecked) var name: String = ""
    @exclusivity(unchecked) var vehicleId: String = ""
    @exclusivity(unchecked) var tripStatus: TripStatus = .unknownTripStatus
    @exclusivity(unchecked) var tripType: TripType = .unknownTripType
    @exclusivity(unchecked) var pickupPoint: TerminalLocation? = nil
    @exclusivity(unchecked) var pickupTime: Timestamp? = nil
    @exclusivity(unchecked) var intermediateDestinations: [TerminalLocation] = []
    @exclusivity(unchecked) var intermediateDestinationIndex: Int32 = 0
    @exclusivity(unchecked) var dropoffPoint: TerminalLocation? = nil
    @exclusivity(unchecked) var dropoffTime: Timestamp? = nil
    @exclusivity(unchecked) var remainingWaypoints: [TripWaypoint] = []
    @exclusivity(unchecked) var route: LatLngPath = LatLngPath()
    @exclusivity(unchecked) var currentRouteSegment: String = ""
    @exclusivity(unchecked) var currentRouteSegmentVersion: Timestamp? = nil
    @exclusivity(unchecked) var currentRouteSegmentTraffic: ConsumableTrafficPolyline? = nil
    @exclusivity(unchecked) var currentRouteSegmentTrafficVersion: Timestamp? = nil
    @exclusivity(unchecked) var currentRouteSegmentEndPoint: TripWaypoint? = nil
    @exclusivity(unchecked) var remainingDistanceMeters: Int32Value? = nil
    @exclusivity(unchecked) var etaToFirstWaypoint: Timestamp? = nil
    @exclusivity(unchecked) var remainingTimeToFirstWaypoint: ProtobufDuration? = nil
    @exclusivity(unchecked) var remainingWaypointsVersion: Timestamp? = nil
    @exclusivity(unchecked) var remainingWaypointsRouteVersion: Timestamp? = nil
    @exclusivity(unchecked) var numberOfPassengers: Int32 = 0
    @exclusivity(unchecked) var lastLocation: VehicleLocation? = nil
    @exclusivity(unchecked) var lastLocationSnappable: Bool = false
    @exclusivity(unchecked) var view: TripView = .tripViewUnspecified
    @exclusivity(unchecked) var unknownFields: UnknownFields = UnknownFields()

    /// The fields a followed trip rarely has (what actually happened at stops, which are input only, the
    /// vehicle's other trips' waypoints, attributes), behind a reference of their own: nil until one is set,
    /// shared between storages until one of them changes it (copy on write, as the storage itself). Inline they
    /// were about 300 of the storage's 1,360 bytes, in every followed trip. (The segment's end point stays
    /// inline: a journey-sharing trip has one, and boxed it cost more than it saved.)
    @exclusivity(unchecked) var _rare: Rare?

    /// The rare fields, made this storage's own first (created empty, or copied when another storage shares them).
    func uniqueRare() -> Rare { _rare.unique() }

    var actualPickupPoint: StopLocation? {
      get { _rare?.actualPickupPoint ?? nil }
      set { if _rare != nil || newValue != nil { uniqueRare().actualPickupPoint = newValue } }
      _modify { yield &uniqueRare().actualPickupPoint }
    }
    var actualPickupArrivalPoint: StopLocation? {
      get { _rare?.actualPickupArrivalPoint ?? nil }
      set { if _rare != nil || newValue != nil { uniqueRare().actualPickupArrivalPoint = newValue } }
      _modify { yield &uniqueRare().actualPickupArrivalPoint }
    }
    var intermediateDestinationsVersion: Timestamp? {
      get { _rare?.intermediateDestinationsVersion ?? nil }
      set { if _rare != nil || newValue != nil { uniqueRare().intermediateDestinationsVersion = newValue } }
      _modify { yield &uniqueRare().intermediateDestinationsVersion }
    }
    var actualIntermediateDestinationArrivalPoints: [StopLocation] {
      get { _rare?.actualIntermediateDestinationArrivalPoints ?? [] }
      set {
        if _rare != nil || !newValue.isEmpty { uniqueRare().actualIntermediateDestinationArrivalPoints = newValue }
      }
      _modify { yield &uniqueRare().actualIntermediateDestinationArrivalPoints }
    }
    var actualIntermediateDestinations: [StopLocation] {
      get { _rare?.actualIntermediateDestinations ?? [] }
      set { if _rare != nil || !newValue.isEmpty { uniqueRare().actualIntermediateDestinations = newValue } }
      _modify { yield &uniqueRare().actualIntermediateDestinations }
    }
    var actualDropoffPoint: StopLocation? {
      get { _rare?.actualDropoffPoint ?? nil }
      set { if _rare != nil || newValue != nil { uniqueRare().actualDropoffPoint = newValue } }
      _modify { yield &uniqueRare().actualDropoffPoint }
    }
    var vehicleWaypoints: [TripWaypoint] {
      get { _rare?.vehicleWaypoints ?? [] }
      set { if _rare != nil || !newValue.isEmpty { uniqueRare().vehicleWaypoints = newValue } }
      _modify { yield &uniqueRare().vehicleWaypoints }
    }
    var attributes: [TripAttribute] {
      get { _rare?.attributes ?? [] }
      set { if _rare != nil || !newValue.isEmpty { uniqueRare().attributes = newValue } }
      _modify { yield &uniqueRare().attributes }
    }

    /// The rarely present fields.
    final class Rare: CopyOnWriteBox, @unchecked Sendable {
      @exclusivity(unchecked) var actualPickupPoint: StopLocation? = nil
      @exclusivity(unchecked) var actualPickupArrivalPoint: StopLocation? = nil
      @exclusivity(unchecked) var intermediateDestinationsVersion: Timestamp? = nil
      @exclusivity(unchecked) var actualIntermediateDestinationArrivalPoints: [StopLocation] = []
      @exclusivity(unchecked) var actualIntermediateDestinations: [StopLocation] = []
      @exclusivity(unchecked) var actualDropoffPoint: StopLocation? = nil
      @exclusivity(unchecked) var vehicleWaypoints: [TripWaypoint] = []
      @exclusivity(unchecked) var attributes: [TripAttribute] = []

      init() {}

      init(copying other: Rare) {
        actualPickupPoint = other.actualPickupPoint
        actualPickupArrivalPoint = other.actualPickupArrivalPoint
        intermediateDestinationsVersion = other.intermediateDestinationsVersion
        actualIntermediateDestinationArrivalPoints = other.actualIntermediateDestinationArrivalPoints
        actualIntermediateDestinations = other.actualIntermediateDestinations
        actualDropoffPoint = other.actualDropoffPoint
        vehicleWaypoints = other.vehicleWaypoints
        attributes = other.attributes
      }
    }

    init() {}

    init(copying other: Storage) {
      name = other.name
      vehicleId = other.vehicleId
      tripStatus = other.tripStatus
      tripType = other.tripType
      pickupPoint = other.pickupPoint
      pickupTime = other.pickupTime
      intermediateDestinations = other.intermediateDestinations
      intermediateDestinationIndex = other.intermediateDestinationIndex
      dropoffPoint = other.dropoffPoint
      dropoffTime = other.dropoffTime
      remainingWaypoints = other.remainingWaypoints
      route = other.route
      currentRouteSegment = other.currentRouteSegment
      currentRouteSegmentVersion = other.currentRouteSegmentVersion
      currentRouteSegmentTraffic = other.currentRouteSegmentTraffic
      currentRouteSegmentTrafficVersion = other.currentRouteSegmentTrafficVersion
      currentRouteSegmentEndPoint = other.currentRouteSegmentEndPoint
      remainingDistanceMeters = other.remainingDistanceMeters
      etaToFirstWaypoint = other.etaToFirstWaypoint
      remainingTimeToFirstWaypoint = other.remainingTimeToFirstWaypoint
      remainingWaypointsVersion = other.remainingWaypointsVersion
      remainingWaypointsRouteVersion = other.remainingWaypointsRouteVersion
      numberOfPassengers = other.numberOfPassengers
      lastLocation = other.lastLocation
      lastLocationSnappable = other.lastLocationSnappable
      view = other.view
      unknownFields = other.unknownFields
      _rare = other._rare
    }
  }

  /// The storage every empty trip shares until its first change.
  private static let emptyStorage = Storage()

  @usableFromInline var _storage: Storage

  /// The storage, made this trip's own first when another trip shares it.
  @usableFromInline
  mutating func _uniqueStorage() -> Storage {
    if !isKnownUniquelyReferenced(&_storage) { _storage = Storage(copying: _storage) }
    return _storage
  }

  /// The identity of the rare fields' box (nil: none), for tests of its copy on write.
  package var rareFieldsIdentity: ObjectIdentifier? { _storage._rare.map(ObjectIdentifier.init) }

  /// Whether `self` and `other` share their storage (one is an unchanged copy of the other): equal
  /// without comparing fields.
  public func sharesStorage(with other: Trip) -> Bool { _storage === other._storage }

  /// `name` (field 1): the resource name, `providers/{provider}/trips/{trip}` (output only).
  public var name: String {
    get { _storage.name }
    set { _uniqueStorage().name = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.name
    }
  }
  /// `vehicle_id` (field 2): the ID of the vehicle making the trip.
  public var vehicleId: String {
    get { _storage.vehicleId }
    set { _uniqueStorage().vehicleId = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.vehicleId
    }
  }
  /// `trip_status` (field 3): the trip's current status.
  public var tripStatus: TripStatus {
    get { _storage.tripStatus }
    set { _uniqueStorage().tripStatus = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.tripStatus
    }
  }
  /// `trip_type` (field 4): whether the trip is shared or exclusive.
  public var tripType: TripType {
    get { _storage.tripType }
    set { _uniqueStorage().tripType = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.tripType
    }
  }
  /// `pickup_point` (field 5): where the customer says they will be picked up.
  public var pickupPoint: TerminalLocation? {
    get { _storage.pickupPoint }
    set { _uniqueStorage().pickupPoint = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.pickupPoint
    }
  }
  /// `actual_pickup_point` (field 22): when and where the customer was actually picked up (input only).
  public var actualPickupPoint: StopLocation? {
    get { _storage.actualPickupPoint }
    set { _uniqueStorage().actualPickupPoint = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.actualPickupPoint
    }
  }
  /// `actual_pickup_arrival_point` (field 32): when and where the driver actually arrived at the pickup point (input
  /// only).
  public var actualPickupArrivalPoint: StopLocation? {
    get { _storage.actualPickupArrivalPoint }
    set { _uniqueStorage().actualPickupArrivalPoint = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.actualPickupArrivalPoint
    }
  }
  /// `pickup_time` (field 6): the estimated or actual pickup time (output only).
  public var pickupTime: Timestamp? {
    get { _storage.pickupTime }
    set { _uniqueStorage().pickupTime = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.pickupTime
    }
  }
  /// `intermediate_destinations` (field 14): stops requested between pickup and dropoff, in order.
  public var intermediateDestinations: [TerminalLocation] {
    get { _storage.intermediateDestinations }
    set { _uniqueStorage().intermediateDestinations = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.intermediateDestinations
    }
  }
  /// `intermediate_destinations_version` (field 25): when `intermediate_destinations` last changed.
  public var intermediateDestinationsVersion: Timestamp? {
    get { _storage.intermediateDestinationsVersion }
    set { _uniqueStorage().intermediateDestinationsVersion = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.intermediateDestinationsVersion
    }
  }
  /// `intermediate_destination_index` (field 15): which intermediate destination the vehicle is heading to or at.
  public var intermediateDestinationIndex: Int32 {
    get { _storage.intermediateDestinationIndex }
    set { _uniqueStorage().intermediateDestinationIndex = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.intermediateDestinationIndex
    }
  }
  /// `actual_intermediate_destination_arrival_points` (field 33): when and where the driver arrived at intermediate
  /// destinations (input only).
  public var actualIntermediateDestinationArrivalPoints: [StopLocation] {
    get { _storage.actualIntermediateDestinationArrivalPoints }
    set { _uniqueStorage().actualIntermediateDestinationArrivalPoints = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.actualIntermediateDestinationArrivalPoints
    }
  }
  /// `actual_intermediate_destinations` (field 34): when and where the customer was picked up at intermediate
  /// destinations (input only).
  public var actualIntermediateDestinations: [StopLocation] {
    get { _storage.actualIntermediateDestinations }
    set { _uniqueStorage().actualIntermediateDestinations = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.actualIntermediateDestinations
    }
  }
  /// `dropoff_point` (field 7): where the customer says they will be dropped off.
  public var dropoffPoint: TerminalLocation? {
    get { _storage.dropoffPoint }
    set { _uniqueStorage().dropoffPoint = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.dropoffPoint
    }
  }
  /// `actual_dropoff_point` (field 23): when and where the customer was actually dropped off (input only).
  public var actualDropoffPoint: StopLocation? {
    get { _storage.actualDropoffPoint }
    set { _uniqueStorage().actualDropoffPoint = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.actualDropoffPoint
    }
  }
  /// `dropoff_time` (field 8): the estimated or actual dropoff time (output only).
  public var dropoffTime: Timestamp? {
    get { _storage.dropoffTime }
    set { _uniqueStorage().dropoffTime = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.dropoffTime
    }
  }
  /// `remaining_waypoints` (field 16): the full path from the vehicle to the dropoff point, other trips' waypoints
  /// included (output only).
  public var remainingWaypoints: [TripWaypoint] {
    get { _storage.remainingWaypoints }
    set { _uniqueStorage().remainingWaypoints = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.remainingWaypoints
    }
  }
  /// `vehicle_waypoints` (field 20): every remaining waypoint of the assigned vehicle, for manual ordering (not
  /// returned by GetTrip).
  public var vehicleWaypoints: [TripWaypoint] {
    get { _storage.vehicleWaypoints }
    set { _uniqueStorage().vehicleWaypoints = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.vehicleWaypoints
    }
  }
  /// `route` (field 9): the anticipated route to the first remaining waypoint (output only), 16 bytes a point.
  public var route: LatLngPath {
    get { _storage.route }
    set { _uniqueStorage().route = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.route
    }
  }
  /// `current_route_segment` (field 21): the path to the next waypoint as an encoded polyline (output only).
  public var currentRouteSegment: String {
    get { _storage.currentRouteSegment }
    set { _uniqueStorage().currentRouteSegment = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.currentRouteSegment
    }
  }
  /// `current_route_segment_version` (field 17): when the route last changed (output only).
  public var currentRouteSegmentVersion: Timestamp? {
    get { _storage.currentRouteSegmentVersion }
    set { _uniqueStorage().currentRouteSegmentVersion = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.currentRouteSegmentVersion
    }
  }
  /// `current_route_segment_traffic` (field 28): traffic along `current_route_segment` (output only).
  public var currentRouteSegmentTraffic: ConsumableTrafficPolyline? {
    get { _storage.currentRouteSegmentTraffic }
    set { _uniqueStorage().currentRouteSegmentTraffic = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.currentRouteSegmentTraffic
    }
  }
  /// `current_route_segment_traffic_version` (field 30): when `current_route_segment_traffic` last changed (output
  /// only).
  public var currentRouteSegmentTrafficVersion: Timestamp? {
    get { _storage.currentRouteSegmentTrafficVersion }
    set { _uniqueStorage().currentRouteSegmentTrafficVersion = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.currentRouteSegmentTrafficVersion
    }
  }
  /// `current_route_segment_end_point` (field 24): the waypoint where `current_route_segment` ends (output only).
  public var currentRouteSegmentEndPoint: TripWaypoint? {
    get { _storage.currentRouteSegmentEndPoint }
    set { _uniqueStorage().currentRouteSegmentEndPoint = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.currentRouteSegmentEndPoint
    }
  }
  /// `remaining_distance_meters` (field 12): the driving distance left in `current_route_segment` (output only).
  public var remainingDistanceMeters: Int32Value? {
    get { _storage.remainingDistanceMeters }
    set { _uniqueStorage().remainingDistanceMeters = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.remainingDistanceMeters
    }
  }
  /// `eta_to_first_waypoint` (field 13): the ETA at the first entry of `remaining_waypoints` (output only).
  public var etaToFirstWaypoint: Timestamp? {
    get { _storage.etaToFirstWaypoint }
    set { _uniqueStorage().etaToFirstWaypoint = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.etaToFirstWaypoint
    }
  }
  /// `remaining_time_to_first_waypoint` (field 27): the time from when the trip was returned to `eta_to_first_waypoint`
  /// (output only).
  public var remainingTimeToFirstWaypoint: ProtobufDuration? {
    get { _storage.remainingTimeToFirstWaypoint }
    set { _uniqueStorage().remainingTimeToFirstWaypoint = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.remainingTimeToFirstWaypoint
    }
  }
  /// `remaining_waypoints_version` (field 19): when `remaining_waypoints` last changed (output only).
  public var remainingWaypointsVersion: Timestamp? {
    get { _storage.remainingWaypointsVersion }
    set { _uniqueStorage().remainingWaypointsVersion = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.remainingWaypointsVersion
    }
  }
  /// `remaining_waypoints_route_version` (field 29): when the paths and traffic of `remaining_waypoints` last changed
  /// (output only).
  public var remainingWaypointsRouteVersion: Timestamp? {
    get { _storage.remainingWaypointsRouteVersion }
    set { _uniqueStorage().remainingWaypointsRouteVersion = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.remainingWaypointsRouteVersion
    }
  }
  /// `number_of_passengers` (field 10): the number of passengers, not counting the driver.
  public var numberOfPassengers: Int32 {
    get { _storage.numberOfPassengers }
    set { _uniqueStorage().numberOfPassengers = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.numberOfPassengers
    }
  }
  /// `last_location` (field 11): the vehicle's last reported location along the route (output only).
  public var lastLocation: VehicleLocation? {
    get { _storage.lastLocation }
    set { _uniqueStorage().lastLocation = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.lastLocation
    }
  }
  /// `last_location_snappable` (field 26): whether `last_location` can be snapped to `current_route_segment` (output
  /// only).
  public var lastLocationSnappable: Bool {
    get { _storage.lastLocationSnappable }
    set { _uniqueStorage().lastLocationSnappable = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.lastLocationSnappable
    }
  }
  /// `view` (field 31): which subset of the fields is populated.
  public var view: TripView {
    get { _storage.view }
    set { _uniqueStorage().view = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.view
    }
  }
  /// `attributes` (field 35): custom attributes, each with a unique key.
  public var attributes: [TripAttribute] {
    get { _storage.attributes }
    set { _uniqueStorage().attributes = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.attributes
    }
  }
  /// Fields of this message that this version does not know, kept byte for byte.
  public var unknownFields: UnknownFields {
    get { _storage.unknownFields }
    set { _uniqueStorage().unknownFields = newValue }
    _modify {
      let storage = _uniqueStorage()
      yield &storage.unknownFields
    }
  }

  public static func == (a: Trip, b: Trip) -> Bool {
    a.name == b.name
      && a.vehicleId == b.vehicleId
      && a.tripStatus == b.tripStatus
      && a.tripType == b.tripType
      && a.pickupPoint == b.pickupPoint
      && a.actualPickupPoint == b.actualPickupPoint
      && a.actualPickupArrivalPoint == b.actualPickupArrivalPoint
      && a.pickupTime == b.pickupTime
      && a.intermediateDestinations == b.intermediateDestinations
      && a.intermediateDestinationsVersion == b.intermediateDestinationsVersion
      && a.intermediateDestinationIndex == b.intermediateDestinationIndex
      && a.actualIntermediateDestinationArrivalPoints == b.actualIntermediateDestinationArrivalPoints
      && a.actualIntermediateDestinations == b.actualIntermediateDestinations
      && a.dropoffPoint == b.dropoffPoint
      && a.actualDropoffPoint == b.actualDropoffPoint
      && a.dropoffTime == b.dropoffTime
      && a.remainingWaypoints == b.remainingWaypoints
      && a.vehicleWaypoints == b.vehicleWaypoints
      && a.route == b.route
      && a.currentRouteSegment == b.currentRouteSegment
      && a.currentRouteSegmentVersion == b.currentRouteSegmentVersion
      && a.currentRouteSegmentTraffic == b.currentRouteSegmentTraffic
      && a.currentRouteSegmentTrafficVersion == b.currentRouteSegmentTrafficVersion
      && a.currentRouteSegmentEndPoint == b.currentRouteSegmentEndPoint
      && a.remainingDistanceMeters == b.remainingDistanceMeters
      && a.etaToFirstWaypoint == b.etaToFirstWaypoint
      && a.remainingTimeToFirstWaypoint == b.remainingTimeToFirstWaypoint
      && a.remainingWaypointsVersion == b.remainingWaypointsVersion
      && a.remainingWaypointsRouteVersion == b.remainingWaypointsRouteVersion
      && a.numberOfPassengers == b.numberOfPassengers
      && a.lastLocation == b.lastLocation
      && a.lastLocationSnappable == b.lastLocationSnappable
      && a.view == b.view
      && a.attributes == b.attributes
      && a.unknownFields == b.unknownFields
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(name)
    hasher.combine(vehicleId)
    hasher.combine(tripStatus)
    hasher.combine(tripType)
    hasher.combine(pickupPoint)
    hasher.combine(actualPickupPoint)
    hasher.combine(actualPickupArrivalPoint)
    hasher.combine(pickupTime)
    hasher.combine(intermediateDestinations)
    hasher.combine(intermediateDestinationsVersion)
    hasher.combine(intermediateDestinationIndex)
    hasher.combine(actualIntermediateDestinationArrivalPoints)
    hasher.combine(actualIntermediateDestinations)
    hasher.combine(dropoffPoint)
    hasher.combine(actualDropoffPoint)
    hasher.combine(dropoffTime)
    hasher.combine(remainingWaypoints)
    hasher.combine(vehicleWaypoints)
    hasher.combine(route)
    hasher.combine(currentRouteSegment)
    hasher.combine(currentRouteSegmentVersion)
    hasher.combine(currentRouteSegmentTraffic)
    hasher.combine(currentRouteSegmentTrafficVersion)
    hasher.combine(currentRouteSegmentEndPoint)
    hasher.combine(remainingDistanceMeters)
    hasher.combine(etaToFirstWaypoint)
    hasher.combine(remainingTimeToFirstWaypoint)
    hasher.combine(remainingWaypointsVersion)
    hasher.combine(remainingWaypointsRouteVersion)
    hasher.combine(numberOfPassengers)
    hasher.combine(lastLocation)
    hasher.combine(lastLocationSnappable)
    hasher.combine(view)
    hasher.combine(attributes)
    hasher.combine(unknownFields)
  }

  public init() { _storage = Self.emptyStorage }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    // Fields are read into the storage directly: one uniqueness check per decode, not one per field.
    let storage = _uniqueStorage()
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: storage.name = try reader.readString(tag)
      case 2: storage.vehicleId = try reader.readString(tag)
      case 3: storage.tripStatus = try reader.readEnum(tag)
      case 4: storage.tripType = try reader.readEnum(tag)
      case 5: try reader.readMessage(tag, into: &storage.pickupPoint)
      case 6: try reader.readMessage(tag, into: &storage.pickupTime)
      case 7: try reader.readMessage(tag, into: &storage.dropoffPoint)
      case 8: try reader.readMessage(tag, into: &storage.dropoffTime)
      case 9: try reader.readRepeatedMessage(tag, into: &storage.route, budget: .routePoints)
      case 10: storage.numberOfPassengers = try reader.readInt32(tag)
      case 11: try reader.readMessage(tag, into: &storage.lastLocation)
      case 12: try reader.readMessage(tag, into: &storage.remainingDistanceMeters)
      case 13: try reader.readMessage(tag, into: &storage.etaToFirstWaypoint)
      case 14: try reader.readRepeatedMessage(tag, into: &storage.intermediateDestinations, budget: .tripStops)
      case 15: storage.intermediateDestinationIndex = try reader.readInt32(tag)
      case 16: try reader.readRepeatedMessage(tag, into: &storage.remainingWaypoints, budget: .tripStops)
      case 17: try reader.readMessage(tag, into: &storage.currentRouteSegmentVersion)
      case 19: try reader.readMessage(tag, into: &storage.remainingWaypointsVersion)
      case 20: try reader.readRepeatedMessage(tag, into: &storage.vehicleWaypoints, budget: .tripStops)
      case 21: storage.currentRouteSegment = try reader.readString(tag)
      case 22: try reader.readMessage(tag, into: &storage.actualPickupPoint)
      case 23: try reader.readMessage(tag, into: &storage.actualDropoffPoint)
      case 24: try reader.readMessage(tag, into: &storage.currentRouteSegmentEndPoint)
      case 25: try reader.readMessage(tag, into: &storage.intermediateDestinationsVersion)
      case 26: storage.lastLocationSnappable = try reader.readBool(tag)
      case 27: try reader.readMessage(tag, into: &storage.remainingTimeToFirstWaypoint)
      case 28: try reader.readMessage(tag, into: &storage.currentRouteSegmentTraffic)
      case 29: try reader.readMessage(tag, into: &storage.remainingWaypointsRouteVersion)
      case 30: try reader.readMessage(tag, into: &storage.currentRouteSegmentTrafficVersion)
      case 31: storage.view = try reader.readEnum(tag)
      case 32: try reader.readMessage(tag, into: &storage.actualPickupArrivalPoint)
      case 33: try reader.readRepeatedMessage(tag, into: &storage.actualIntermediateDestinationArrivalPoints)
      case 34: try reader.readRepeatedMessage(tag, into: &storage.actualIntermediateDestinations)
      case 35: try reader.readRepeatedMessage(tag, into: &storage.attributes)
      default: try reader.skipField(tag, into: &storage.unknownFields)
      }
    }
  }

  public func encodedSize() -> Int { encodedSize(fields: Self.allFieldBits, includingUnknownFields: true) }

  public func encodeFields(to writer: inout WireWriter) {
    encodeFields(Self.allFieldBits, includingUnknownFields: true, to: &writer)
  }

  /// The size of the encoding of the fields in `fields` (bit n: field n), and of the unknown fields when
  /// `includingUnknownFields`: the size of a projection's encoding, without building the projection.
  public func encodedSize(fields: UInt64, includingUnknownFields: Bool) -> Int {
    var size = includingUnknownFields ? unknownFields.count : 0
    if fields & (1 << 1) != 0, !name.isEmpty { size += WireSize.string(name, field: 1) }
    if fields & (1 << 2) != 0, !vehicleId.isEmpty { size += WireSize.string(vehicleId, field: 2) }
    if fields & (1 << 3) != 0, tripStatus.rawValue != 0 { size += WireSize.enum(tripStatus, field: 3) }
    if fields & (1 << 4) != 0, tripType.rawValue != 0 { size += WireSize.enum(tripType, field: 4) }
    if fields & (1 << 5) != 0, let pickupPoint { size += WireSize.message(pickupPoint, field: 5) }
    if fields & (1 << 6) != 0, let pickupTime { size += WireSize.message(pickupTime, field: 6) }
    if fields & (1 << 7) != 0, let dropoffPoint { size += WireSize.message(dropoffPoint, field: 7) }
    if fields & (1 << 8) != 0, let dropoffTime { size += WireSize.message(dropoffTime, field: 8) }
    if fields & (1 << 9) != 0 { size += WireSize.repeatedMessage(route, field: 9) }
    if fields & (1 << 10) != 0, numberOfPassengers != 0 { size += WireSize.int32(numberOfPassengers, field: 10) }
    if fields & (1 << 11) != 0, let lastLocation { size += WireSize.message(lastLocation, field: 11) }
    if fields & (1 << 12) != 0, let remainingDistanceMeters {
      size += WireSize.message(remainingDistanceMeters, field: 12)
    }
    if fields & (1 << 13) != 0, let etaToFirstWaypoint { size += WireSize.message(etaToFirstWaypoint, field: 13) }
    if fields & (1 << 14) != 0 { size += WireSize.repeatedMessage(intermediateDestinations, field: 14) }
    if fields & (1 << 15) != 0, intermediateDestinationIndex != 0 {
      size += WireSize.int32(intermediateDestinationIndex, field: 15)
    }
    if fields & (1 << 16) != 0 { size += WireSize.repeatedMessage(remainingWaypoints, field: 16) }
    if fields & (1 << 17) != 0, let currentRouteSegmentVersion {
      size += WireSize.message(currentRouteSegmentVersion, field: 17)
    }
    if fields & (1 << 19) != 0, let remainingWaypointsVersion {
      size += WireSize.message(remainingWaypointsVersion, field: 19)
    }
    if fields & (1 << 20) != 0 { size += WireSize.repeatedMessage(vehicleWaypoints, field: 20) }
    if fields & (1 << 21) != 0, !currentRouteSegment.isEmpty { size += WireSize.string(currentRouteSegment, field: 21) }
    if fields & (1 << 22) != 0, let actualPickupPoint { size += WireSize.message(actualPickupPoint, field: 22) }
    if fields & (1 << 23) != 0, let actualDropoffPoint { size += WireSize.message(actualDropoffPoint, field: 23) }
    if fields & (1 << 24) != 0, let currentRouteSegmentEndPoint {
      size += WireSize.message(currentRouteSegmentEndPoint, field: 24)
    }
    if fields & (1 << 25) != 0, let intermediateDestinationsVersion {
      size += WireSize.message(intermediateDestinationsVersion, field: 25)
    }
    if fields & (1 << 26) != 0, lastLocationSnappable { size += WireSize.bool(lastLocationSnappable, field: 26) }
    if fields & (1 << 27) != 0, let remainingTimeToFirstWaypoint {
      size += WireSize.message(remainingTimeToFirstWaypoint, field: 27)
    }
    if fields & (1 << 28) != 0, let currentRouteSegmentTraffic {
      size += WireSize.message(currentRouteSegmentTraffic, field: 28)
    }
    if fields & (1 << 29) != 0, let remainingWaypointsRouteVersion {
      size += WireSize.message(remainingWaypointsRouteVersion, field: 29)
    }
    if fields & (1 << 30) != 0, let currentRouteSegmentTrafficVersion {
      size += WireSize.message(currentRouteSegmentTrafficVersion, field: 30)
    }
    if fields & (1 << 31) != 0, view.rawValue != 0 { size += WireSize.enum(view, field: 31) }
    if fields & (1 << 32) != 0, let actualPickupArrivalPoint {
      size += WireSize.message(actualPickupArrivalPoint, field: 32)
    }
    if fields & (1 << 33) != 0 {
      size += WireSize.repeatedMessage(actualIntermediateDestinationArrivalPoints, field: 33)
    }
    if fields & (1 << 34) != 0 { size += WireSize.repeatedMessage(actualIntermediateDestinations, field: 34) }
    if fields & (1 << 35) != 0 { size += WireSize.repeatedMessage(attributes, field: 35) }
    return size
  }

  /// Encodes the fields in `fields` (bit n: field n) that are set, then the unknown fields when
  /// `includingUnknownFields`: the encoding of `projected(onto:)` those fields, without building it.
  public func encodeFields(_ fields: UInt64, includingUnknownFields: Bool, to writer: inout WireWriter) {
    if fields & (1 << 1) != 0, !name.isEmpty { writer.writeString(name, field: 1) }
    if fields & (1 << 2) != 0, !vehicleId.isEmpty { writer.writeString(vehicleId, field: 2) }
    if fields & (1 << 3) != 0, tripStatus.rawValue != 0 { writer.writeEnum(tripStatus, field: 3) }
    if fields & (1 << 4) != 0, tripType.rawValue != 0 { writer.writeEnum(tripType, field: 4) }
    if fields & (1 << 5) != 0, let pickupPoint { writer.writeMessage(pickupPoint, field: 5) }
    if fields & (1 << 6) != 0, let pickupTime { writer.writeMessage(pickupTime, field: 6) }
    if fields & (1 << 7) != 0, let dropoffPoint { writer.writeMessage(dropoffPoint, field: 7) }
    if fields & (1 << 8) != 0, let dropoffTime { writer.writeMessage(dropoffTime, field: 8) }
    if fields & (1 << 9) != 0 { writer.writeRepeatedMessage(route, field: 9) }
    if fields & (1 << 10) != 0, numberOfPassengers != 0 { writer.writeInt32(numberOfPassengers, field: 10) }
    if fields & (1 << 11) != 0, let lastLocation { writer.writeMessage(lastLocation, field: 11) }
    if fields & (1 << 12) != 0, let remainingDistanceMeters { writer.writeMessage(remainingDistanceMeters, field: 12) }
    if fields & (1 << 13) != 0, let etaToFirstWaypoint { writer.writeMessage(etaToFirstWaypoint, field: 13) }
    if fields & (1 << 14) != 0 { writer.writeRepeatedMessage(intermediateDestinations, field: 14) }
    if fields & (1 << 15) != 0, intermediateDestinationIndex != 0 {
      writer.writeInt32(intermediateDestinationIndex, field: 15)
    }
    if fields & (1 << 16) != 0 { writer.writeRepeatedMessage(remainingWaypoints, field: 16) }
    if fields & (1 << 17) != 0, let currentRouteSegmentVersion {
      writer.writeMessage(currentRouteSegmentVersion, field: 17)
    }
    if fields & (1 << 19) != 0, let remainingWaypointsVersion {
      writer.writeMessage(remainingWaypointsVersion, field: 19)
    }
    if fields & (1 << 20) != 0 { writer.writeRepeatedMessage(vehicleWaypoints, field: 20) }
    if fields & (1 << 21) != 0, !currentRouteSegment.isEmpty { writer.writeString(currentRouteSegment, field: 21) }
    if fields & (1 << 22) != 0, let actualPickupPoint { writer.writeMessage(actualPickupPoint, field: 22) }
    if fields & (1 << 23) != 0, let actualDropoffPoint { writer.writeMessage(actualDropoffPoint, field: 23) }
    if fields & (1 << 24) != 0, let currentRouteSegmentEndPoint {
      writer.writeMessage(currentRouteSegmentEndPoint, field: 24)
    }
    if fields & (1 << 25) != 0, let intermediateDestinationsVersion {
      writer.writeMessage(intermediateDestinationsVersion, field: 25)
    }
    if fields & (1 << 26) != 0, lastLocationSnappable { writer.writeBool(lastLocationSnappable, field: 26) }
    if fields & (1 << 27) != 0, let remainingTimeToFirstWaypoint {
      writer.writeMessage(remainingTimeToFirstWaypoint, field: 27)
    }
    if fields & (1 << 28) != 0, let currentRouteSegmentTraffic {
      writer.writeMessage(currentRouteSegmentTraffic, field: 28)
    }
    if fields & (1 << 29) != 0, let remainingWaypointsRouteVersion {
      writer.writeMessage(remainingWaypointsRouteVersion, field: 29)
    }
    if fields & (1 << 30) != 0, let currentRouteSegmentTrafficVersion {
      writer.writeMessage(currentRouteSegmentTrafficVersion, field: 30)
    }
    if fields & (1 << 31) != 0, view.rawValue != 0 { writer.writeEnum(view, field: 31) }
    if fields & (1 << 32) != 0, let actualPickupArrivalPoint {
      writer.writeMessage(actualPickupArrivalPoint, field: 32)
    }
    if fields & (1 << 33) != 0 { writer.writeRepeatedMessage(actualIntermediateDestinationArrivalPoints, field: 33) }
    if fields & (1 << 34) != 0 { writer.writeRepeatedMessage(actualIntermediateDestinations, field: 34) }
    if fields & (1 << 35) != 0 { writer.writeRepeatedMessage(attributes, field: 35) }
    if includingUnknownFields { writer.writeUnknown(unknownFields) }
  }
}

/// `maps.fleetengine.v1.StopLocation`: where and when a stop (pickup, dropoff or intermediate) actually happened.
public struct StopLocation: ProtoMessage, Hashable {
  public static let protoMessageName = "maps.fleetengine.v1.StopLocation"

  /// `point` (field 1): the actual location.
  public var point: LatLng?
  /// `timestamp` (field 2): when the stop happened.
  public var timestamp: Timestamp?
  /// `stop_time` (field 3): input only, deprecated: use `timestamp`.
  public var stopTime: Timestamp?
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &point)
      case 2: try reader.readMessage(tag, into: &timestamp)
      case 3: try reader.readMessage(tag, into: &stopTime)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if let point { size += WireSize.message(point, field: 1) }
    if let timestamp { size += WireSize.message(timestamp, field: 2) }
    if let stopTime { size += WireSize.message(stopTime, field: 3) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if let point { writer.writeMessage(point, field: 1) }
    if let timestamp { writer.writeMessage(timestamp, field: 2) }
    if let stopTime { writer.writeMessage(stopTime, field: 3) }
    writer.writeUnknown(unknownFields)
  }
}
