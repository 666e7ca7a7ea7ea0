// Sources/JourneySharing/TripSnapshot.swift - a trip as a subscriber sees it, with what the SDK derives

public import FleetEngineMessages

/// An immutable view of a followed trip at one moment: the merged `Trip` (this
/// trip's waypoints only, for shared trips) and the values the Consumer SDK
/// derives from it (active and remaining route, their distances and traffic,
/// pickup and dropoff ETAs).
///
/// A final class, so handing one to many subscribers copies a pointer.
public final class TripSnapshot: Sendable {
  /// The trip, with remaining waypoints of other trips in a shared pool filtered out.
  public let trip: Trip
  /// The trip's status.
  public var tripStatus: TripStatus { trip.tripStatus }
  /// The vehicle's last known location.
  public var vehicleLocation: VehicleLocation? { trip.lastLocation }
  /// Where the rider is picked up (nil once the trip is canceled).
  public let pickupLocation: TerminalLocation?
  /// Where the rider is dropped off (nil once the trip is canceled).
  public let dropoffLocation: TerminalLocation?
  /// The route from the vehicle to the next waypoint (decoded when the server sent an encoded polyline).
  public let activeRoute: [LatLng]
  /// Traffic on the active route.
  public let activeRouteTraffic: ConsumableTrafficPolyline?
  /// Meters from the vehicle to the next waypoint along the active route.
  public let activeRouteRemainingDistance: Int32?
  /// The route after the next waypoint, to the last one.
  public let remainingRoute: [LatLng]
  /// Traffic on the remaining route (the waypoints' traffic joined, indices into `remainingRoute`).
  public let remainingRouteTraffic: ConsumableTrafficPolyline?
  /// Meters from the vehicle to the last waypoint.
  public let remainingRouteDistance: Int32?
  /// When the vehicle reaches the next waypoint, Unix seconds.
  public let etaToNextWaypoint: Double?
  /// When the vehicle reaches the pickup, Unix seconds (nil once passed).
  public let pickupETA: Double?
  /// When the vehicle reaches the dropoff, Unix seconds.
  public let dropoffETA: Double?

  /// The remaining waypoints (this trip's).
  public var remainingWaypoints: [TripWaypoint] { trip.remainingWaypoints }
  /// The intermediate destinations.
  public var intermediateDestinations: [TerminalLocation] { trip.intermediateDestinations }
  /// Whether the trip reached a final state (COMPLETE or CANCELED).
  public var isFinal: Bool { trip.tripStatus == .complete || trip.tripStatus == .canceled }

  /// Derives a snapshot from a merged trip; `tripID` filters other trips' waypoints out.
  public init(trip rawTrip: Trip, tripID: String) {
    var trip = rawTrip
    // A shared trip's remaining waypoints may include other riders' stops: not ours to show.
    if trip.remainingWaypoints.contains(where: { !$0.tripId.isEmpty && $0.tripId != tripID }) {
      trip.remainingWaypoints.removeAll { !$0.tripId.isEmpty && $0.tripId != tripID }
    }
    self.trip = trip
    let canceled = trip.tripStatus == .canceled
    pickupLocation = canceled ? nil : trip.pickupPoint
    dropoffLocation = canceled ? nil : trip.dropoffPoint
    if !trip.route.isEmpty {
      activeRoute = trip.route
    } else if !trip.currentRouteSegment.isEmpty {
      activeRoute = EncodedPolyline.decode(trip.currentRouteSegment) ?? []
    } else {
      activeRoute = []
    }
    activeRouteTraffic = trip.currentRouteSegmentTraffic
    activeRouteRemainingDistance = trip.remainingDistanceMeters?.value
    etaToNextWaypoint = trip.etaToFirstWaypoint?.unixTime

    var remaining: [LatLng] = []
    var intervals: [SpeedReadingInterval] = []
    var distance = trip.remainingDistanceMeters?.value
    var pickup: Double?
    var dropoff: Double?
    for (index, waypoint) in trip.remainingWaypoints.enumerated() {
      switch waypoint.waypointType {
      case .pickupWaypointType where pickup == nil: pickup = waypoint.eta?.unixTime
      case .dropOffWaypointType: dropoff = waypoint.eta?.unixTime
      default: break
      }
      // The first waypoint's leg is the active route; later legs form the remaining route.
      guard index > 0 else { continue }
      if let meters = waypoint.distanceMeters?.value, let sum = distance { distance = sum + meters }
      let path =
        !waypoint.pathToWaypoint.isEmpty
        ? waypoint.pathToWaypoint : (EncodedPolyline.decode(waypoint.encodedPathToWaypoint) ?? [])
      let offset = Int32(remaining.count)
      for interval in waypoint.trafficToWaypoint?.speedReadingInterval ?? [] {
        var shifted = interval
        shifted.startPolylinePointIndex += offset
        shifted.endPolylinePointIndex += offset
        intervals.append(shifted)
      }
      remaining.append(contentsOf: path)
    }
    remainingRoute = remaining
    remainingRouteDistance = trip.remainingWaypoints.count > 1 ? distance : activeRouteRemainingDistance
    if intervals.isEmpty {
      remainingRouteTraffic = nil
    } else {
      var traffic = ConsumableTrafficPolyline()
      traffic.speedReadingInterval = intervals
      remainingRouteTraffic = traffic
    }
    pickupETA = pickup ?? (trip.tripStatus.isBeforePickup ? trip.pickupTime?.unixTime : nil)
    dropoffETA = dropoff ?? trip.dropoffTime?.unixTime
  }

  /// What differs between `old` and this snapshot; everything present when `old` is nil.
  public func changedProperties(from old: TripSnapshot?) -> TripPropertyFields {
    guard let old else { return presentProperties }
    var fields: TripPropertyFields = []
    let a = old.trip
    let b = trip
    if a.name != b.name { fields.insert(.tripName) }
    if a.vehicleId != b.vehicleId { fields.insert(.vehicleID) }
    if a.tripType != b.tripType { fields.insert(.tripType) }
    if a.tripStatus != b.tripStatus { fields.insert(.tripStatus) }
    if !bitwiseEqual(old.pickupLocation, pickupLocation) { fields.insert(.pickupLocation) }
    if a.pickupTime != b.pickupTime { fields.insert(.pickupTime) }
    if !bitwiseEqual(old.dropoffLocation, dropoffLocation) { fields.insert(.dropoffLocation) }
    if a.dropoffTime != b.dropoffTime { fields.insert(.dropoffTime) }
    if !bitwiseEqual(a.lastLocation, b.lastLocation) { fields.insert(.routeLastVehicleLocation) }
    if a.numberOfPassengers != b.numberOfPassengers { fields.insert(.numberOfPassengers) }
    if !bitwiseEqual(a.remainingWaypoints, b.remainingWaypoints) { fields.insert(.remainingWaypoints) }
    if !bitwiseEqual(a.intermediateDestinations, b.intermediateDestinations) {
      fields.insert(.intermediateDestinations)
    }
    if a.intermediateDestinationIndex != b.intermediateDestinationIndex { fields.insert(.intermediateDestinationIndex) }
    if old.activeRouteRemainingDistance != activeRouteRemainingDistance {
      fields.insert(.remainingDistanceOfActiveRouteInMeters)
    }
    if old.remainingRouteDistance != remainingRouteDistance { fields.insert(.distanceOfRemainingRouteInMeters) }
    if !bitwiseEqual(old.activeRoute, activeRoute) { fields.insert(.activeRoute) }
    if old.activeRouteTraffic != activeRouteTraffic { fields.insert(.activeRouteTraffic) }
    if !bitwiseEqual(old.remainingRoute, remainingRoute) { fields.insert(.remainingRoute) }
    if old.remainingRouteTraffic != remainingRouteTraffic { fields.insert(.remainingRouteTraffic) }
    if !Self.sameBits(old.etaToNextWaypoint, etaToNextWaypoint) { fields.insert(.etaToNextWaypoint) }
    if !Self.sameBits(old.pickupETA, pickupETA) { fields.insert(.pickupETA) }
    if !Self.sameBits(old.dropoffETA, dropoffETA) { fields.insert(.dropoffETA) }
    return fields
  }

  /// The properties that have a value, for the first delivery.
  var presentProperties: TripPropertyFields {
    var fields: TripPropertyFields = [.tripName, .tripStatus]
    if !trip.vehicleId.isEmpty { fields.insert(.vehicleID) }
    if trip.tripType.rawValue != 0 { fields.insert(.tripType) }
    if pickupLocation != nil { fields.insert(.pickupLocation) }
    if trip.pickupTime != nil { fields.insert(.pickupTime) }
    if dropoffLocation != nil { fields.insert(.dropoffLocation) }
    if trip.dropoffTime != nil { fields.insert(.dropoffTime) }
    if trip.lastLocation != nil { fields.insert(.routeLastVehicleLocation) }
    if trip.numberOfPassengers != 0 { fields.insert(.numberOfPassengers) }
    if !trip.remainingWaypoints.isEmpty { fields.insert(.remainingWaypoints) }
    if !trip.intermediateDestinations.isEmpty { fields.insert([.intermediateDestinations, .intermediateDestinationIndex]) }
    if activeRouteRemainingDistance != nil { fields.insert(.remainingDistanceOfActiveRouteInMeters) }
    if remainingRouteDistance != nil { fields.insert(.distanceOfRemainingRouteInMeters) }
    if !activeRoute.isEmpty { fields.insert(.activeRoute) }
    if activeRouteTraffic != nil { fields.insert(.activeRouteTraffic) }
    if !remainingRoute.isEmpty { fields.insert(.remainingRoute) }
    if remainingRouteTraffic != nil { fields.insert(.remainingRouteTraffic) }
    if etaToNextWaypoint != nil { fields.insert(.etaToNextWaypoint) }
    if pickupETA != nil { fields.insert(.pickupETA) }
    if dropoffETA != nil { fields.insert(.dropoffETA) }
    return fields
  }

  // Floating point compared by bit pattern (as Trip.changedFields does), so a NaN does not
  // count as a change on every update.
  static func sameBits(_ a: Double?, _ b: Double?) -> Bool {
    a?.bitPattern == b?.bitPattern
  }
}

extension TripStatus {
  /// NEW or ENROUTE_TO_PICKUP: the pickup is still ahead.
  var isBeforePickup: Bool { self == .new || self == .enrouteToPickup }
}
