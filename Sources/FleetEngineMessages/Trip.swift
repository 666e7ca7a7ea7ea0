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

  /// `name` (field 1): the resource name, `providers/{provider}/trips/{trip}` (output only).
  public var name: String = ""
  /// `vehicle_id` (field 2): the ID of the vehicle making the trip.
  public var vehicleId: String = ""
  /// `trip_status` (field 3): the trip's current status.
  public var tripStatus: TripStatus = .unknownTripStatus
  /// `trip_type` (field 4): whether the trip is shared or exclusive.
  public var tripType: TripType = .unknownTripType
  /// `pickup_point` (field 5): where the customer says they will be picked up.
  public var pickupPoint: TerminalLocation?
  /// `actual_pickup_point` (field 22): when and where the customer was actually picked up (input only).
  public var actualPickupPoint: StopLocation?
  /// `actual_pickup_arrival_point` (field 32): when and where the driver actually arrived at the pickup point (input
  /// only).
  public var actualPickupArrivalPoint: StopLocation?
  /// `pickup_time` (field 6): the estimated or actual pickup time (output only).
  public var pickupTime: Timestamp?
  /// `intermediate_destinations` (field 14): stops requested between pickup and dropoff, in order.
  public var intermediateDestinations: [TerminalLocation] = []
  /// `intermediate_destinations_version` (field 25): when `intermediate_destinations` last changed.
  public var intermediateDestinationsVersion: Timestamp?
  /// `intermediate_destination_index` (field 15): which intermediate destination the vehicle is heading to or at.
  public var intermediateDestinationIndex: Int32 = 0
  /// `actual_intermediate_destination_arrival_points` (field 33): when and where the driver arrived at intermediate
  /// destinations (input only).
  public var actualIntermediateDestinationArrivalPoints: [StopLocation] = []
  /// `actual_intermediate_destinations` (field 34): when and where the customer was picked up at intermediate
  /// destinations (input only).
  public var actualIntermediateDestinations: [StopLocation] = []
  /// `dropoff_point` (field 7): where the customer says they will be dropped off.
  public var dropoffPoint: TerminalLocation?
  /// `actual_dropoff_point` (field 23): when and where the customer was actually dropped off (input only).
  public var actualDropoffPoint: StopLocation?
  /// `dropoff_time` (field 8): the estimated or actual dropoff time (output only).
  public var dropoffTime: Timestamp?
  /// `remaining_waypoints` (field 16): the full path from the vehicle to the dropoff point, other trips' waypoints
  /// included (output only).
  public var remainingWaypoints: [TripWaypoint] = []
  /// `vehicle_waypoints` (field 20): every remaining waypoint of the assigned vehicle, for manual ordering (not
  /// returned by GetTrip).
  public var vehicleWaypoints: [TripWaypoint] = []
  /// `route` (field 9): the anticipated route to the first remaining waypoint (output only), 16 bytes a point.
  public var route = LatLngPath()
  /// `current_route_segment` (field 21): the path to the next waypoint as an encoded polyline (output only).
  public var currentRouteSegment: String = ""
  /// `current_route_segment_version` (field 17): when the route last changed (output only).
  public var currentRouteSegmentVersion: Timestamp?
  /// `current_route_segment_traffic` (field 28): traffic along `current_route_segment` (output only).
  public var currentRouteSegmentTraffic: ConsumableTrafficPolyline?
  /// `current_route_segment_traffic_version` (field 30): when `current_route_segment_traffic` last changed (output
  /// only).
  public var currentRouteSegmentTrafficVersion: Timestamp?
  /// `current_route_segment_end_point` (field 24): the waypoint where `current_route_segment` ends (output only).
  public var currentRouteSegmentEndPoint: TripWaypoint?
  /// `remaining_distance_meters` (field 12): the driving distance left in `current_route_segment` (output only).
  public var remainingDistanceMeters: Int32Value?
  /// `eta_to_first_waypoint` (field 13): the ETA at the first entry of `remaining_waypoints` (output only).
  public var etaToFirstWaypoint: Timestamp?
  /// `remaining_time_to_first_waypoint` (field 27): the time from when the trip was returned to `eta_to_first_waypoint`
  /// (output only).
  public var remainingTimeToFirstWaypoint: ProtobufDuration?
  /// `remaining_waypoints_version` (field 19): when `remaining_waypoints` last changed (output only).
  public var remainingWaypointsVersion: Timestamp?
  /// `remaining_waypoints_route_version` (field 29): when the paths and traffic of `remaining_waypoints` last changed
  /// (output only).
  public var remainingWaypointsRouteVersion: Timestamp?
  /// `number_of_passengers` (field 10): the number of passengers, not counting the driver.
  public var numberOfPassengers: Int32 = 0
  /// `last_location` (field 11): the vehicle's last reported location along the route (output only).
  public var lastLocation: VehicleLocation?
  /// `last_location_snappable` (field 26): whether `last_location` can be snapped to `current_route_segment` (output
  /// only).
  public var lastLocationSnappable: Bool = false
  /// `view` (field 31): which subset of the fields is populated.
  public var view: TripView = .tripViewUnspecified
  /// `attributes` (field 35): custom attributes, each with a unique key.
  public var attributes: [TripAttribute] = []
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: name = try reader.readString(tag)
      case 2: vehicleId = try reader.readString(tag)
      case 3: tripStatus = try reader.readEnum(tag)
      case 4: tripType = try reader.readEnum(tag)
      case 5: try reader.readMessage(tag, into: &pickupPoint)
      case 6: try reader.readMessage(tag, into: &pickupTime)
      case 7: try reader.readMessage(tag, into: &dropoffPoint)
      case 8: try reader.readMessage(tag, into: &dropoffTime)
      case 9: try reader.readRepeatedMessage(tag, into: &route, budget: .routePoints)
      case 10: numberOfPassengers = try reader.readInt32(tag)
      case 11: try reader.readMessage(tag, into: &lastLocation)
      case 12: try reader.readMessage(tag, into: &remainingDistanceMeters)
      case 13: try reader.readMessage(tag, into: &etaToFirstWaypoint)
      case 14: try reader.readRepeatedMessage(tag, into: &intermediateDestinations, budget: .tripStops)
      case 15: intermediateDestinationIndex = try reader.readInt32(tag)
      case 16: try reader.readRepeatedMessage(tag, into: &remainingWaypoints, budget: .tripStops)
      case 17: try reader.readMessage(tag, into: &currentRouteSegmentVersion)
      case 19: try reader.readMessage(tag, into: &remainingWaypointsVersion)
      case 20: try reader.readRepeatedMessage(tag, into: &vehicleWaypoints, budget: .tripStops)
      case 21: currentRouteSegment = try reader.readString(tag)
      case 22: try reader.readMessage(tag, into: &actualPickupPoint)
      case 23: try reader.readMessage(tag, into: &actualDropoffPoint)
      case 24: try reader.readMessage(tag, into: &currentRouteSegmentEndPoint)
      case 25: try reader.readMessage(tag, into: &intermediateDestinationsVersion)
      case 26: lastLocationSnappable = try reader.readBool(tag)
      case 27: try reader.readMessage(tag, into: &remainingTimeToFirstWaypoint)
      case 28: try reader.readMessage(tag, into: &currentRouteSegmentTraffic)
      case 29: try reader.readMessage(tag, into: &remainingWaypointsRouteVersion)
      case 30: try reader.readMessage(tag, into: &currentRouteSegmentTrafficVersion)
      case 31: view = try reader.readEnum(tag)
      case 32: try reader.readMessage(tag, into: &actualPickupArrivalPoint)
      case 33: try reader.readRepeatedMessage(tag, into: &actualIntermediateDestinationArrivalPoints)
      case 34: try reader.readRepeatedMessage(tag, into: &actualIntermediateDestinations)
      case 35: try reader.readRepeatedMessage(tag, into: &attributes)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if !name.isEmpty { size += WireSize.string(name, field: 1) }
    if !vehicleId.isEmpty { size += WireSize.string(vehicleId, field: 2) }
    if tripStatus.rawValue != 0 { size += WireSize.enum(tripStatus, field: 3) }
    if tripType.rawValue != 0 { size += WireSize.enum(tripType, field: 4) }
    if let pickupPoint { size += WireSize.message(pickupPoint, field: 5) }
    if let pickupTime { size += WireSize.message(pickupTime, field: 6) }
    if let dropoffPoint { size += WireSize.message(dropoffPoint, field: 7) }
    if let dropoffTime { size += WireSize.message(dropoffTime, field: 8) }
    size += WireSize.repeatedMessage(route, field: 9)
    if numberOfPassengers != 0 { size += WireSize.int32(numberOfPassengers, field: 10) }
    if let lastLocation { size += WireSize.message(lastLocation, field: 11) }
    if let remainingDistanceMeters { size += WireSize.message(remainingDistanceMeters, field: 12) }
    if let etaToFirstWaypoint { size += WireSize.message(etaToFirstWaypoint, field: 13) }
    size += WireSize.repeatedMessage(intermediateDestinations, field: 14)
    if intermediateDestinationIndex != 0 { size += WireSize.int32(intermediateDestinationIndex, field: 15) }
    size += WireSize.repeatedMessage(remainingWaypoints, field: 16)
    if let currentRouteSegmentVersion { size += WireSize.message(currentRouteSegmentVersion, field: 17) }
    if let remainingWaypointsVersion { size += WireSize.message(remainingWaypointsVersion, field: 19) }
    size += WireSize.repeatedMessage(vehicleWaypoints, field: 20)
    if !currentRouteSegment.isEmpty { size += WireSize.string(currentRouteSegment, field: 21) }
    if let actualPickupPoint { size += WireSize.message(actualPickupPoint, field: 22) }
    if let actualDropoffPoint { size += WireSize.message(actualDropoffPoint, field: 23) }
    if let currentRouteSegmentEndPoint { size += WireSize.message(currentRouteSegmentEndPoint, field: 24) }
    if let intermediateDestinationsVersion { size += WireSize.message(intermediateDestinationsVersion, field: 25) }
    if lastLocationSnappable { size += WireSize.bool(lastLocationSnappable, field: 26) }
    if let remainingTimeToFirstWaypoint { size += WireSize.message(remainingTimeToFirstWaypoint, field: 27) }
    if let currentRouteSegmentTraffic { size += WireSize.message(currentRouteSegmentTraffic, field: 28) }
    if let remainingWaypointsRouteVersion { size += WireSize.message(remainingWaypointsRouteVersion, field: 29) }
    if let currentRouteSegmentTrafficVersion { size += WireSize.message(currentRouteSegmentTrafficVersion, field: 30) }
    if view.rawValue != 0 { size += WireSize.enum(view, field: 31) }
    if let actualPickupArrivalPoint { size += WireSize.message(actualPickupArrivalPoint, field: 32) }
    size += WireSize.repeatedMessage(actualIntermediateDestinationArrivalPoints, field: 33)
    size += WireSize.repeatedMessage(actualIntermediateDestinations, field: 34)
    size += WireSize.repeatedMessage(attributes, field: 35)
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if !name.isEmpty { writer.writeString(name, field: 1) }
    if !vehicleId.isEmpty { writer.writeString(vehicleId, field: 2) }
    if tripStatus.rawValue != 0 { writer.writeEnum(tripStatus, field: 3) }
    if tripType.rawValue != 0 { writer.writeEnum(tripType, field: 4) }
    if let pickupPoint { writer.writeMessage(pickupPoint, field: 5) }
    if let pickupTime { writer.writeMessage(pickupTime, field: 6) }
    if let dropoffPoint { writer.writeMessage(dropoffPoint, field: 7) }
    if let dropoffTime { writer.writeMessage(dropoffTime, field: 8) }
    writer.writeRepeatedMessage(route, field: 9)
    if numberOfPassengers != 0 { writer.writeInt32(numberOfPassengers, field: 10) }
    if let lastLocation { writer.writeMessage(lastLocation, field: 11) }
    if let remainingDistanceMeters { writer.writeMessage(remainingDistanceMeters, field: 12) }
    if let etaToFirstWaypoint { writer.writeMessage(etaToFirstWaypoint, field: 13) }
    writer.writeRepeatedMessage(intermediateDestinations, field: 14)
    if intermediateDestinationIndex != 0 { writer.writeInt32(intermediateDestinationIndex, field: 15) }
    writer.writeRepeatedMessage(remainingWaypoints, field: 16)
    if let currentRouteSegmentVersion { writer.writeMessage(currentRouteSegmentVersion, field: 17) }
    if let remainingWaypointsVersion { writer.writeMessage(remainingWaypointsVersion, field: 19) }
    writer.writeRepeatedMessage(vehicleWaypoints, field: 20)
    if !currentRouteSegment.isEmpty { writer.writeString(currentRouteSegment, field: 21) }
    if let actualPickupPoint { writer.writeMessage(actualPickupPoint, field: 22) }
    if let actualDropoffPoint { writer.writeMessage(actualDropoffPoint, field: 23) }
    if let currentRouteSegmentEndPoint { writer.writeMessage(currentRouteSegmentEndPoint, field: 24) }
    if let intermediateDestinationsVersion { writer.writeMessage(intermediateDestinationsVersion, field: 25) }
    if lastLocationSnappable { writer.writeBool(lastLocationSnappable, field: 26) }
    if let remainingTimeToFirstWaypoint { writer.writeMessage(remainingTimeToFirstWaypoint, field: 27) }
    if let currentRouteSegmentTraffic { writer.writeMessage(currentRouteSegmentTraffic, field: 28) }
    if let remainingWaypointsRouteVersion { writer.writeMessage(remainingWaypointsRouteVersion, field: 29) }
    if let currentRouteSegmentTrafficVersion { writer.writeMessage(currentRouteSegmentTrafficVersion, field: 30) }
    if view.rawValue != 0 { writer.writeEnum(view, field: 31) }
    if let actualPickupArrivalPoint { writer.writeMessage(actualPickupArrivalPoint, field: 32) }
    writer.writeRepeatedMessage(actualIntermediateDestinationArrivalPoints, field: 33)
    writer.writeRepeatedMessage(actualIntermediateDestinations, field: 34)
    writer.writeRepeatedMessage(attributes, field: 35)
    writer.writeUnknown(unknownFields)
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
