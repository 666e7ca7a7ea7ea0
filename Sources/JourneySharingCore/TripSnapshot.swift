// Sources/JourneySharingCore/TripSnapshot.swift - a trip as a subscriber sees it, with what the SDK derives

public import FleetEngineMessages

/// An immutable view of a followed trip at one moment: the merged `Trip` (this
/// trip's waypoints only, for shared trips) and the values the Consumer SDK
/// derives from it (active and remaining route, their distances and traffic,
/// pickup and dropoff ETAs).
///
/// A final class, so handing one to many subscribers copies a pointer. A snapshot
/// never changes while anything outside the library holds it: the library reuses a
/// snapshot's storage for the next update only when nothing else references it
/// (`isKnownUniquelyReferenced`), which is what keeps a steady stream of updates free
/// of allocations.
public final class TripSnapshot: @unchecked Sendable {
  /// The stored state: the trip and everything derived from it.
  package struct Values {
    package var trip: Trip
    package var activeRoute = LatLngPath()
    package var activeRouteRemainingDistance: Int32?
    package var remainingRoute = RouteLegs()
    package var remainingRouteTraffic: ConsumableTrafficPolyline?
    package var remainingRouteDistance: Int32?
    package var etaToNextWaypoint: Double?
    package var pickupETA: Double?
    package var dropoffETA: Double?
    package var updateSendTime: Double?
    package var updateSequence: UInt64 = 0
  }

  // Written only while the library holds the sole reference (see the type's documentation), so no access can
  // overlap a write: the runtime's exclusivity checks (about 3% of the pipeline's time) are left out.
  @exclusivity(unchecked) private(set) var values: Values

  /// The trip, with remaining waypoints of other trips in a shared pool filtered out.
  public var trip: Trip { _read { yield values.trip } }
  /// The trip's status.
  public var tripStatus: TripStatus { values.trip.tripStatus }
  // Plain getters for the trip's fields, not `_read`: they live in the trip's copy-on-write storage, so
  // yielding one yields a temporary, and a coroutine holding a temporary that large allocates its frame on
  // every access (one allocation per delivered update, found with heaptrack in `tripload pipeline`).
  /// The vehicle's last known location.
  public var vehicleLocation: VehicleLocation? { values.trip.lastLocation }
  /// Where the rider is picked up (nil once the trip is canceled).
  public var pickupLocation: TerminalLocation? { values.pickupLocation }
  /// Where the rider is dropped off (nil once the trip is canceled).
  public var dropoffLocation: TerminalLocation? { values.dropoffLocation }
  /// The route from the vehicle to the next waypoint (decoded when the server sent an encoded polyline), 16
  /// bytes a point; the trip's own `route` when it came as a list of points.
  public var activeRoute: LatLngPath { _read { yield values.activeRoute } }
  /// Traffic on the active route.
  public var activeRouteTraffic: ConsumableTrafficPolyline? { values.activeRouteTraffic }
  /// Meters from the vehicle to the next waypoint along the active route.
  public var activeRouteRemainingDistance: Int32? { values.activeRouteRemainingDistance }
  /// The route after the next waypoint, to the last one: the later waypoints' paths end to end, read in
  /// place (not a copy of their points).
  public var remainingRoute: RouteLegs { _read { yield values.remainingRoute } }
  /// Traffic on the remaining route (the waypoints' traffic joined, indices into `remainingRoute`).
  public var remainingRouteTraffic: ConsumableTrafficPolyline? { values.remainingRouteTraffic }
  /// Meters from the vehicle to the last waypoint.
  public var remainingRouteDistance: Int32? { values.remainingRouteDistance }
  /// When the vehicle reaches the next waypoint, Unix seconds.
  public var etaToNextWaypoint: Double? { values.etaToNextWaypoint }
  /// When the vehicle reaches the pickup, Unix seconds (nil once passed).
  public var pickupETA: Double? { values.pickupETA }
  /// When the vehicle reaches the dropoff, Unix seconds.
  public var dropoffETA: Double? { values.dropoffETA }
  /// When the server sent the streaming update this snapshot is the result of (its `send_time`,
  /// Unix seconds, on the server's clock); nil for a polled trip or when the server sent none.
  /// For measuring delivery latency.
  public var updateSendTime: Double? { values.updateSendTime }
  /// The `sequence` of that streaming update (numbered from 1 on each stream); 0 for a polled trip.
  public var updateSequence: UInt64 { values.updateSequence }

  /// The remaining waypoints (this trip's).
  public var remainingWaypoints: [TripWaypoint] { values.trip.remainingWaypoints }
  /// The intermediate destinations.
  public var intermediateDestinations: [TerminalLocation] { values.trip.intermediateDestinations }
  /// Whether the trip reached a final state (COMPLETE or CANCELED).
  public var isFinal: Bool { values.trip.isFinal }

  /// Derives a snapshot from a merged trip; `tripID` filters other trips' waypoints out.
  public convenience init(trip: Trip, tripID: String) {
    self.init(values: Values(trip: trip, tripID: tripID, previous: nil))
  }

  package init(values: Values) {
    self.values = values
  }

  /// Replaces the state; only while the caller holds the sole reference.
  package func replace(with values: Values) {
    self.values = values
  }

  /// Merges a partial update that names only progress fields (`TripProgressUpdate.progressFieldNumbers`) into this snapshot's own storage
  /// (only while the caller holds the sole reference); returns what changed, or nil (nothing done)
  /// when the update names other fields. No copy of the trip, no allocation: what the update names
  /// is compared and assigned field by field, and the derived values those fields feed are recomputed.
  package func mergeInPlace(_ update: TripUpdate) -> TripPropertyFields? {
    guard let progress = TripProgressUpdate(update) else { return nil }
    return mergeInPlace(progress)
  }

  /// Merges a progress update into this snapshot's own storage (only while the caller holds the sole
  /// reference); returns what changed. The same merge as for the equivalent `TripUpdate`, for an update
  /// decoded flat (`TripProgressUpdate.decode`): no `Trip` is built at all.
  package func mergeInPlace(_ update: TripProgressUpdate) -> TripPropertyFields {
    var changes: TripPropertyFields = []
    if update.names(11) {
      // `!=` (concrete, specialized) rather than the generic bitwise comparison: an update that names
      // the location almost always moves it, and one carrying a NaN is reported as a change.
      if values.trip.lastLocation != update.lastLocation { changes.insert(.routeLastVehicleLocation) }
      values.trip.lastLocation = update.lastLocation
    }
    if update.names(12) {
      let meters = update.remainingDistanceMeters
      values.trip.remainingDistanceMeters = meters
      let active = meters?.value
      if values.activeRouteRemainingDistance != active { changes.insert(.remainingDistanceOfActiveRouteInMeters) }
      values.activeRouteRemainingDistance = active
      let remaining = JourneySharingCore.remainingRouteDistance(of: values.trip.remainingWaypoints, active: active)
      if values.remainingRouteDistance != remaining { changes.insert(.distanceOfRemainingRouteInMeters) }
      values.remainingRouteDistance = remaining
    }
    if update.names(13) {
      let eta = update.etaToFirstWaypoint
      values.trip.etaToFirstWaypoint = eta
      let seconds = eta?.unixTime
      if !sameBits(values.etaToNextWaypoint, seconds) { changes.insert(.etaToNextWaypoint) }
      values.etaToNextWaypoint = seconds
    }
    if update.names(10) {
      if values.trip.numberOfPassengers != update.numberOfPassengers { changes.insert(.numberOfPassengers) }
      values.trip.numberOfPassengers = update.numberOfPassengers
    }
    if update.names(26) { values.trip.lastLocationSnappable = update.lastLocationSnappable }
    if update.names(27) { values.trip.remainingTimeToFirstWaypoint = update.remainingTimeToFirstWaypoint }
    return changes
  }

  /// Records which streaming update the snapshot reflects (only while the caller holds the sole reference).
  package func setUpdate(sendTime: Double?, sequence: UInt64) {
    values.updateSendTime = sendTime
    values.updateSequence = sequence
  }

  /// What differs between `old` and this snapshot; everything present when `old` is nil.
  public func changedProperties(from old: TripSnapshot?) -> TripPropertyFields {
    guard let old else { return presentProperties }
    return values.changedProperties(from: old.values)
  }

  /// The properties that have a value, for the first delivery.
  package var presentProperties: TripPropertyFields {
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
    if !trip.intermediateDestinations.isEmpty {
      fields.insert([.intermediateDestinations, .intermediateDestinationIndex])
    }
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

}

extension TripSnapshot.Values {
  // Read from the trip rather than kept beside it: a second copy of each location was 240 bytes a snapshot.
  /// Where the rider is picked up (nil once the trip is canceled).
  package var pickupLocation: TerminalLocation? { trip.tripStatus == .canceled ? nil : trip.pickupPoint }
  /// Where the rider is dropped off (nil once the trip is canceled).
  package var dropoffLocation: TerminalLocation? { trip.tripStatus == .canceled ? nil : trip.dropoffPoint }
  /// Traffic on the active route.
  package var activeRouteTraffic: ConsumableTrafficPolyline? { trip.currentRouteSegmentTraffic }

  /// Derives the values from a merged trip. Parts whose inputs are the same storage as
  /// `previous`'s (the fields an update did not touch) are taken from it instead of derived again.
  package init(trip rawTrip: Trip, tripID: String, previous: TripSnapshot.Values?) {
    var trip = rawTrip
    let waypointsUnchanged = previous.map { sameStorage($0.trip.remainingWaypoints, trip.remainingWaypoints) } ?? false
    // A shared trip's remaining waypoints may include other riders' stops: not ours to show.
    // (Unchanged waypoints were filtered when they arrived.)
    if !waypointsUnchanged, trip.remainingWaypoints.contains(where: { !$0.tripId.isEmpty && $0.tripId != tripID }) {
      trip.remainingWaypoints.removeAll { !$0.tripId.isEmpty && $0.tripId != tripID }
    }
    self.trip = trip
    if !trip.route.isEmpty {
      activeRoute = trip.route
    } else if !trip.currentRouteSegment.isEmpty {
      if let previous, previous.trip.route.isEmpty, previous.trip.currentRouteSegment == trip.currentRouteSegment {
        activeRoute = previous.activeRoute
      } else {
        activeRoute = LatLngPath(EncodedPolyline.decode(trip.currentRouteSegment) ?? [])
      }
    } else {
      activeRoute = []
    }
    activeRouteRemainingDistance = trip.remainingDistanceMeters?.value
    etaToNextWaypoint = trip.etaToFirstWaypoint?.unixTime

    var pickup: Double?
    var dropoff: Double?
    for waypoint in trip.remainingWaypoints {
      switch waypoint.waypointType {
      case .pickupWaypointType where pickup == nil: pickup = waypoint.eta?.unixTime
      case .dropOffWaypointType: dropoff = waypoint.eta?.unixTime
      default: break
      }
    }
    if let previous, waypointsUnchanged {
      remainingRoute = previous.remainingRoute
      remainingRouteTraffic = previous.remainingRouteTraffic
    } else {
      var legs: [LatLngPath] = []
      var points = 0
      var intervals: [SpeedReadingInterval] = []
      // The first waypoint's leg is the active route; later legs form the remaining route, each the
      // waypoint's own path (shared, not copied) or its encoded polyline decoded.
      for waypoint in trip.remainingWaypoints.dropFirst() {
        let path =
          !waypoint.pathToWaypoint.isEmpty
          ? waypoint.pathToWaypoint : LatLngPath(EncodedPolyline.decode(waypoint.encodedPathToWaypoint) ?? [])
        let offset = Int32(clamping: points)
        for interval in waypoint.trafficToWaypoint?.speedReadingInterval ?? [] {
          // The indices come from the network: held at Int32's bounds instead of trapping (a reading
          // past the route's end stays past it).
          var shifted = interval
          shifted.startPolylinePointIndex = saturatingSum(interval.startPolylinePointIndex, offset)
          shifted.endPolylinePointIndex = saturatingSum(interval.endPolylinePointIndex, offset)
          intervals.append(shifted)
        }
        if !path.isEmpty { legs.append(path) }
        points += path.count
      }
      remainingRoute = RouteLegs(legs: legs)
      if intervals.isEmpty {
        remainingRouteTraffic = nil
      } else {
        var traffic = ConsumableTrafficPolyline()
        traffic.speedReadingInterval = intervals
        remainingRouteTraffic = traffic
      }
    }
    remainingRouteDistance = JourneySharingCore.remainingRouteDistance(
      of: trip.remainingWaypoints, active: activeRouteRemainingDistance)
    pickupETA = pickup ?? (trip.tripStatus.isBeforePickup ? trip.pickupTime?.unixTime : nil)
    dropoffETA = dropoff ?? trip.dropoffTime?.unixTime
  }

  /// What differs between `old` and these values. Arrays that share storage are equal without
  /// looking at their elements (an update leaves the fields it does not name untouched).
  package func changedProperties(from old: TripSnapshot.Values) -> TripPropertyFields {
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
    if !sameElements(a.remainingWaypoints, b.remainingWaypoints) { fields.insert(.remainingWaypoints) }
    if !sameElements(a.intermediateDestinations, b.intermediateDestinations) {
      fields.insert(.intermediateDestinations)
    }
    if a.intermediateDestinationIndex != b.intermediateDestinationIndex { fields.insert(.intermediateDestinationIndex) }
    if old.activeRouteRemainingDistance != activeRouteRemainingDistance {
      fields.insert(.remainingDistanceOfActiveRouteInMeters)
    }
    if old.remainingRouteDistance != remainingRouteDistance { fields.insert(.distanceOfRemainingRouteInMeters) }
    if !old.activeRoute.isBitwiseEqual(to: activeRoute) { fields.insert(.activeRoute) }
    if !sameTraffic(old.activeRouteTraffic, activeRouteTraffic) { fields.insert(.activeRouteTraffic) }
    if !old.remainingRoute.isBitwiseEqual(to: remainingRoute) { fields.insert(.remainingRoute) }
    if !sameTraffic(old.remainingRouteTraffic, remainingRouteTraffic) { fields.insert(.remainingRouteTraffic) }
    if !sameBits(old.etaToNextWaypoint, etaToNextWaypoint) { fields.insert(.etaToNextWaypoint) }
    if !sameBits(old.pickupETA, pickupETA) { fields.insert(.pickupETA) }
    if !sameBits(old.dropoffETA, dropoffETA) { fields.insert(.dropoffETA) }
    return fields
  }
}

/// Meters from the vehicle to the last waypoint: the distance to the next one plus the later legs'
/// (nil when a leg's distance is unknown), or just the first when there is one waypoint.
package func remainingRouteDistance(of waypoints: [TripWaypoint], active: Int32?) -> Int32? {
  guard waypoints.count > 1 else { return active }
  var distance = active
  // By index, not `for waypoint in`: that copies each waypoint (its location, path and traffic retained and
  // released) to read one field, on every progress update.
  for index in waypoints.indices.dropFirst() {
    if let meters = waypoints[index].distanceMeters?.value, let sum = distance { distance = saturatingSum(sum, meters) }
  }
  return distance
}

/// `a + b`, held at Int32's bounds instead of trapping: the distances come from the network.
@inline(__always)
package func saturatingSum(_ a: Int32, _ b: Int32) -> Int32 {
  let (sum, overflow) = a.addingReportingOverflow(b)
  return overflow ? (b > 0 ? .max : .min) : sum
}

/// Whether two arrays are the same storage (a copy nobody changed): equal without comparing elements.
@inline(__always)
package func sameStorage<Element>(_ a: [Element], _ b: [Element]) -> Bool {
  a.withUnsafeBufferPointer { x in
    b.withUnsafeBufferPointer { y in x.count == y.count && x.baseAddress == y.baseAddress }
  }
}

/// Element-wise equality (floats by bit pattern), short-cut when both share storage.
@inline(__always)
package func sameElements<Element: BitwiseComparable>(_ a: [Element], _ b: [Element]) -> Bool {
  sameStorage(a, b) || bitwiseEqual(a, b)
}

/// Traffic equality, short-cut when both share their intervals' storage.
@inline(__always)
package func sameTraffic(_ a: ConsumableTrafficPolyline?, _ b: ConsumableTrafficPolyline?) -> Bool {
  if let a, let b, sameStorage(a.speedReadingInterval, b.speedReadingInterval), a.unknownFields == b.unknownFields {
    return a.encodedPathToWaypoint == b.encodedPathToWaypoint
  }
  return a == b
}

// Floating point compared by bit pattern (as Trip.changedFields does), so a NaN does not
// count as a change on every update.
@inline(__always)
package func sameBits(_ a: Double?, _ b: Double?) -> Bool {
  a?.bitPattern == b?.bitPattern
}

extension TripStatus {
  /// NEW or ENROUTE_TO_PICKUP: the pickup is still ahead.
  package var isBeforePickup: Bool { self == .new || self == .enrouteToPickup }
}
