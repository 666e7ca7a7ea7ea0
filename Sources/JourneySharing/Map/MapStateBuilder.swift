// Sources/JourneySharing/Map/MapStateBuilder.swift - the map state of one trip, from its snapshots
//
// Feed every merged Trip snapshot to `update(with:at:)`; read `state`, or
// `state(at:)` / `interpolatedVehicle(at:)` between snapshots for smooth
// animation, or `geoJSON(at:)` for a renderer. A value type: no I/O, no
// clock (times are passed in), no locks; copies are independent.
//
// Choices a renderer can observe:
// - The active route is `route` if set, else the decoded
//   `current_route_segment`, else (unless the vehicle is waiting at a stop)
//   the first remaining waypoint's `path_to_waypoint` / encoded path. A route
//   with a broken point (not finite, out of range) is not used. Routes are
//   trimmed to start where the vehicle projects on them, searching forward
//   from the previous projection first so a route that passes the same street
//   twice does not snap back to the earlier pass; a vehicle farther than
//   `routeToleranceMeters` from its route is "off route": the route is shown
//   whole and the vehicle is not moved along it.
// - Stops are this trip's remaining waypoints (others' are dropped: a shared
//   pool's `remaining_waypoints` holds other riders' stops); when none is
//   left, the trip's own pickup / intermediate / drop-off points by status.
//   COMPLETE and CANCELED show no stops and no route ahead (the SDKs report
//   nil pickup and drop-off for a canceled trip); the traveled path stays.
// - Stop distances are cumulative from the vehicle through every remaining
//   waypoint before the stop, other riders' included: the first leg is
//   `remaining_distance_meters` (else the trimmed route's length), the next
//   ones each waypoint's `distance_meters` (else its path's length).
// - The later route runs through the waypoints after the next one and stops at
//   this trip's last stop: the vehicle's plans beyond it are not this rider's.
// - Fixes only move forward in time: a snapshot whose `last_location` is older
//   than the one already seen (a stale location some responses repeat) keeps
//   the newer one. A different `vehicle_id` (reassignment) clears the history.
// - Dead reckoning moves the vehicle along the active route at its reported
//   speed from its fix time, for at most `maxExtrapolationSeconds`, never past
//   the route's end (the next waypoint). When a new fix lands behind where the
//   marker was already shown (by at most `maxHoldMeters`), the marker holds
//   there instead of moving back, until the new fix's own extrapolation passes
//   it: from the moment the snapshot is fed (its `at` time) on, the animated
//   position on an unchanged route never decreases. Queries before that moment
//   are not held, so at the fix's own time the position is the fix. A fix more
//   than `maxHoldMeters` behind is a correction, and the marker jumps to it.
// - The traveled path joins consecutive fixes along the route between them
//   (so it follows streets, not chords): along the old route when a fix is
//   still ahead on it after the route changed (arriving at a stop), and across
//   a leg change when the old route ends where the new one starts. A fix
//   slightly behind the path's end (GPS jitter) is not drawn. It keeps the
//   newest `maxTraveledPoints` points.

public import FleetEngineMessages

/// The map state of one followed trip, kept up to date from its Trip snapshots: the headless counterpart of a
/// journey-sharing session shown on a map.
///
/// ```swift
/// var map = MapStateBuilder(tripName: "providers/acme/trips/trip-7")
/// map.update(with: trip, at: now)          // every merged snapshot
/// let frame = map.state(at: now + 0.25)    // animate between snapshots
/// let json = map.geoJSON(at: now + 0.25)   // or hand a renderer GeoJSON
/// ```
///
/// A value: whoever owns it (an actor, a task) feeds and reads it; copies are independent and `Sendable`.
public struct MapStateBuilder: Sendable {
  /// The trip followed; snapshots of other trips are ignored.
  public let tripName: String
  /// The most points ``JourneySharingMapState/traveledRoute`` keeps (the newest ones).
  public let maxTraveledPoints: Int
  /// A fix older than this many seconds at the state's time is stale.
  public let staleThreshold: Double
  /// ``JourneySharingMapState/cameraBounds`` is padded by this fraction of its size on each side.
  public let cameraPadding: Double
  /// How far (meters) a vehicle may be from its route and still be "on" it.
  public let routeToleranceMeters: Double
  /// The longest time (seconds) past a fix that dead reckoning extrapolates.
  public let maxExtrapolationSeconds: Double
  /// How far (meters) behind the shown position a new fix may land and still have the marker hold rather than move
  /// back; 0 never holds.
  public let maxHoldMeters: Double

  /// The smallest span (degrees, about 200 m of latitude) of the camera rectangle.
  static let minimumCameraSpan = 0.002
  /// Consecutive traveled points closer than this (meters) are merged.
  static let traveledResolution = 0.5

  private let tripID: String
  private var vehicleID = ""
  private var route = MapPolyline.empty
  private var intervals: [SpeedReadingInterval] = []
  private var fix: MapFix?
  private var traveled: [LatLng] = []
  /// Meters along `route` where `traveled` ends; `nil` when its end is not on the route.
  private var traveledEnd: Double?
  private var stops = MapStops()
  private var laterRoute: [LatLng] = []
  private var tripStatus = TripStatus.unknownTripStatus
  private var lastUpdate: Double?

  /// The state as of the latest snapshot, at the time it was fed: the vehicle at its fix (not extrapolated).
  public private(set) var state = JourneySharingMapState()

  /// A builder for the trip `tripName` (`providers/{provider}/trips/{trip}`, or the bare trip ID).
  ///
  /// - Parameters:
  ///   - maxTraveledPoints: the most traveled points kept; older ones are dropped. Default 2000.
  ///   - staleThreshold: seconds after which a fix is stale. Default 30.
  ///   - cameraPadding: camera padding as a fraction of the fitted size, per side. Default 0.1.
  ///   - routeToleranceMeters: the farthest a vehicle may be from its route and be on it. Default 50.
  ///   - maxExtrapolationSeconds: the longest dead reckoning past a fix. Default 60.
  ///   - maxHoldMeters: the farthest a new fix may land behind the shown position for the marker to hold
  ///     instead of moving back; 0 never holds. Default 50.
  public init(
    tripName: String,
    maxTraveledPoints: Int = 2_000,
    staleThreshold: Double = 30,
    cameraPadding: Double = 0.1,
    routeToleranceMeters: Double = 50,
    maxExtrapolationSeconds: Double = 60,
    maxHoldMeters: Double = 50
  ) {
    self.tripName = tripName
    self.tripID = Self.tripID(of: tripName)
    self.maxTraveledPoints = max(0, maxTraveledPoints)
    self.staleThreshold = staleThreshold.isNaN ? 30 : staleThreshold
    self.cameraPadding = cameraPadding.isFinite ? max(0, cameraPadding) : 0
    self.routeToleranceMeters = routeToleranceMeters.isNaN ? 50 : max(0, routeToleranceMeters)
    self.maxExtrapolationSeconds = maxExtrapolationSeconds.isNaN ? 0 : max(0, maxExtrapolationSeconds)
    self.maxHoldMeters = maxHoldMeters.isNaN ? 0 : max(0, maxHoldMeters)
  }

  // MARK: - Feeding snapshots

  /// Folds in a snapshot of the trip: the full trip after merging (fields a poll left out because their version
  /// did not change must already be filled in from earlier responses), received at Unix time `unixTime`.
  ///
  /// A snapshot of another trip (a non-empty `name` naming another trip ID) is ignored.
  public mutating func update(with trip: Trip, at unixTime: Double) {
    guard trip.name.isEmpty || Self.tripID(of: trip.name) == tripID else { return }
    let now = unixTime.isFinite ? unixTime : (lastUpdate ?? 0)
    lastUpdate = now

    if !trip.vehicleId.isEmpty {
      if !vehicleID.isEmpty && vehicleID != trip.vehicleId {
        fix = nil
        traveled = []
        traveledEnd = nil
      }
      vehicleID = trip.vehicleId
    }
    tripStatus = trip.tripStatus
    let terminal = trip.isFinal

    // The route and where the vehicle and the traveled path are on it.
    let newRoute: (points: [LatLng], intervals: [SpeedReadingInterval]) =
      terminal ? ([], []) : activeRoute(of: trip)
    let sameRoute = newRoute.points == route.points
    let previousRoute = route
    let previousTraveledEnd = traveledEnd
    let shownBefore = sameRoute ? displayedProgress(at: now) : nil
    if !sameRoute { route = MapPolyline(newRoute.points) }
    intervals = newRoute.intervals
    if !sameRoute {
      if var moved = fix {
        moved.progress = onRoute(moved.marker.position, hint: nil)
        moved.hold = nil
        fix = moved
      }
      traveledEnd = traveled.last.flatMap { onRoute($0, hint: nil) }
    }

    if var candidate = Self.fix(from: trip.lastLocation, receivedAt: now) {
      let current = fix
      let isOlder = current.map { candidate.marker.lastFix < $0.marker.lastFix } ?? false
      let isSame =
        current.map {
          candidate.marker.lastFix == $0.marker.lastFix && candidate.marker.position == $0.marker.position
        } ?? false
      if isSame, let current {
        // The same fix again: keep where it is on the route, its hold and when it first arrived.
        candidate.receivedAt = current.receivedAt
        candidate.progress = current.progress
        candidate.hold = current.hold
        fix = candidate
      } else if !isOlder {
        candidate.progress = onRoute(candidate.marker.position, hint: sameRoute ? current?.progress : nil)
        if let shown = shownBefore, let progress = candidate.progress, maxHoldMeters > 0 {
          let fresh = min(extrapolated(progress, fix: candidate, at: now), route.length)
          if shown > fresh && shown - fresh <= maxHoldMeters { candidate.hold = shown }
        }
        appendTraveled(
          candidate.marker.position, progress: candidate.progress, sameRoute: sameRoute,
          previousRoute: previousRoute, previousTraveledEnd: previousTraveledEnd)
        fix = candidate
      }
    } else {
      fix = nil
    }

    stops = terminal ? MapStops() : makeStops(of: trip)
    laterRoute = terminal ? [] : makeLaterRoute(of: trip)
    state = makeState(at: now, animated: false)
  }

  // MARK: - Reading

  /// The state at Unix time `unixTime`, animated: the vehicle dead-reckoned as ``interpolatedVehicle(at:)``
  /// describes, the remaining route and its traffic trimmed to start there, the traveled path extended along the
  /// route to it, stop distances shortened by the distance moved, and the camera refitted.
  public func state(at unixTime: Double) -> JourneySharingMapState {
    makeState(at: unixTime, animated: true)
  }

  /// The vehicle's marker at Unix time `unixTime`, for smooth animation between snapshots; `nil` without a fix.
  ///
  /// Dead reckoning along the active route from the last fix at its speed (for at most
  /// ``maxExtrapolationSeconds``), never past the route's end (the next waypoint); never backwards, in time (a
  /// time before the fix gives the fix) or along the route (see the hold rule in the file header: after a new fix
  /// lands slightly behind the shown position, the marker holds until the fix's extrapolation passes it). At the
  /// fix's time it is the fix, position and heading as reported. Once moved, the heading is the bearing of the
  /// route segment it is on. With no speed, no route, or a vehicle off its route, it is the fix itself. `isStale`
  /// is evaluated at `unixTime`.
  public func interpolatedVehicle(at unixTime: Double) -> VehicleMarker? {
    guard let fix else { return nil }
    var marker = fix.marker
    marker.isStale = isStale(fix.marker.lastFix, at: unixTime)
    guard let progress = fix.progress, let shown = displayedProgress(at: unixTime), shown > progress else {
      return marker
    }
    marker.position = route.point(at: shown)
    if let bearing = route.bearing(at: shown) { marker.heading = bearing }
    return marker
  }

  /// The state as a GeoJSON FeatureCollection (see ``JourneySharingMapState/geoJSON()``), with the trip name as
  /// the `tripName` member: ``state`` when `unixTime` is `nil`, else ``state(at:)``.
  public func geoJSON(at unixTime: Double? = nil) -> String {
    MapGeoJSON.encode(unixTime.map(state(at:)) ?? state, tripName: tripName)
  }

  // MARK: - Building the state

  private func makeState(at time: Double, animated: Bool) -> JourneySharingMapState {
    var result = JourneySharingMapState(tripStatus: tripStatus)
    var progress = fix?.progress
    if animated {
      result.vehicle = interpolatedVehicle(at: time)
      if let shown = displayedProgress(at: time) { progress = shown }
    } else if var marker = fix?.marker {
      marker.isStale = isStale(marker.lastFix, at: time)
      result.vehicle = marker
    }
    let advance = max(0, (progress ?? 0) - (fix?.progress ?? 0))

    if route.isDrawable {
      let (points, offset) = route.trimmed(from: progress ?? 0)
      if points.count >= 2 {
        result.remainingRoute = points
        result.trafficSegments = MapTraffic.segments(of: points, offset: offset, intervals: intervals)
      }
    }
    result.remainingRouteAfterNextWaypoint = laterRoute

    func moved(_ stop: StopMarker?) -> StopMarker? {
      guard var stop else { return nil }
      if let distance = stop.distanceMeters { stop.distanceMeters = max(0, distance - advance) }
      return stop
    }
    result.pickup = moved(stops.pickup)
    result.dropoff = moved(stops.dropoff)
    result.intermediateDestinations = stops.intermediateDestinations.compactMap(moved)

    result.traveledRoute = traveled
    if animated, advance > 0, route.isDrawable, let end = traveledEnd, let shown = progress, shown > end {
      var extended = traveled
      Self.append(contentsOf: route.vertices(after: end, before: shown), to: &extended)
      Self.append(route.point(at: shown), to: &extended)
      if extended.count > maxTraveledPoints { extended.removeFirst(extended.count - maxTraveledPoints) }
      result.traveledRoute = extended
    }

    var fitted: [LatLng] = []
    if let vehicle = result.vehicle { fitted.append(vehicle.position) }
    fitted.append(contentsOf: result.stops.map(\.position))
    fitted.append(contentsOf: result.remainingRoute)
    fitted.append(contentsOf: result.remainingRouteAfterNextWaypoint)
    result.cameraBounds = CoordinateBounds.fitting(fitted)?.padded(by: cameraPadding)
      .expanded(toMinimumSpan: Self.minimumCameraSpan)
    return result
  }

  // MARK: - Motion

  private func isStale(_ lastFix: Double, at time: Double) -> Bool {
    time - lastFix > staleThreshold
  }

  /// Meters along the route where the fix's dead reckoning puts the vehicle at `time` (no hold, not clamped).
  private func extrapolated(_ progress: Double, fix: MapFix, at time: Double) -> Double {
    guard let speed = fix.marker.speed, speed > 0 else { return progress }
    let elapsed = min(max(time - fix.marker.lastFix, 0), maxExtrapolationSeconds)
    return progress + speed * elapsed
  }

  /// Meters along the route where the marker is shown at `time`: the extrapolation, held (from the snapshot's
  /// arrival on) at the hold point, capped at the route's end; `nil` when the vehicle is not on a route.
  private func displayedProgress(at time: Double) -> Double? {
    guard let fix, let progress = fix.progress, route.isDrawable else { return nil }
    var shown = extrapolated(progress, fix: fix, at: time)
    if let hold = fix.hold, time >= fix.receivedAt { shown = max(shown, hold) }
    return min(shown, route.length)
  }

  /// Meters along the route where `point` projects, when it is within the tolerance; with a `hint` (the previous
  /// position on the same route) the route from the hint's segment on is tried first.
  private func onRoute(_ point: LatLng, hint: Double?) -> Double? {
    guard route.isDrawable else { return nil }
    if let hint, let ahead = route.project(point, fromSegment: route.locate(hint).segment),
      ahead.offset <= routeToleranceMeters
    {
      return ahead.distanceAlong
    }
    guard let nearest = route.project(point), nearest.offset <= routeToleranceMeters else { return nil }
    return nearest.distanceAlong
  }

  // MARK: - The traveled path

  private mutating func appendTraveled(
    _ position: LatLng, progress: Double?, sameRoute: Bool, previousRoute: MapPolyline, previousTraveledEnd: Double?
  ) {
    guard maxTraveledPoints > 0 else {
      traveled = []
      traveledEnd = nil
      return
    }
    defer {
      if traveled.count > maxTraveledPoints { traveled.removeFirst(traveled.count - maxTraveledPoints) }
    }
    guard !traveled.isEmpty else {
      traveled = [position]
      traveledEnd = progress
      return
    }
    if !sameRoute, let oldEnd = previousTraveledEnd, previousRoute.isDrawable {
      // The route changed, but the fix is still ahead on the old one (arriving at a stop, or a new route that
      // begins with the old one's streets): follow the old route to it.
      if let onOld = previousRoute.project(position, fromSegment: previousRoute.locate(oldEnd).segment),
        onOld.offset <= routeToleranceMeters, onOld.distanceAlong >= oldEnd
      {
        Self.append(contentsOf: previousRoute.vertices(after: oldEnd, before: onOld.distanceAlong), to: &traveled)
        Self.append(position, to: &traveled)
        traveledEnd = progress
        return
      }
      // A new leg from where the old one ended: finish the old route, then follow the new one to the fix.
      let oldFinish = previousRoute.points[previousRoute.points.count - 1]
      if let progress, route.isDrawable, MapGeo.distance(oldFinish, route.points[0]) <= routeToleranceMeters {
        Self.append(contentsOf: previousRoute.vertices(after: oldEnd, before: previousRoute.length), to: &traveled)
        Self.append(oldFinish, to: &traveled)
        Self.append(contentsOf: route.vertices(after: 0, before: progress), to: &traveled)
        Self.append(position, to: &traveled)
        traveledEnd = progress
        return
      }
    }
    // Along the (current) route from the path's end to the fix.
    if let progress, let end = traveledEnd {
      if progress >= end {
        Self.append(contentsOf: route.vertices(after: end, before: progress), to: &traveled)
        Self.append(position, to: &traveled)
        traveledEnd = progress
      } else if end - progress > routeToleranceMeters {
        Self.append(position, to: &traveled)
        traveledEnd = progress
      }
      // Otherwise a little behind the path's end: jitter, not drawn.
      return
    }
    Self.append(position, to: &traveled)
    traveledEnd = progress
  }

  private static func append(_ point: LatLng, to path: inout [LatLng]) {
    if let last = path.last, MapGeo.distance(last, point) < traveledResolution { return }
    path.append(point)
  }

  private static func append(contentsOf points: some Sequence<LatLng>, to path: inout [LatLng]) {
    for point in points { append(point, to: &path) }
  }

  // MARK: - Reading the trip

  /// The trip ID in a trip name (`providers/p/trips/{id}`), or the string itself when it is a bare ID.
  static func tripID(of name: String) -> String {
    if let parsed = TripName(parsing: name) { return parsed.tripID }
    let parts = name.split(separator: "/", omittingEmptySubsequences: false)
    if let trips = parts.lastIndex(of: "trips"), trips + 1 < parts.count { return String(parts[trips + 1]) }
    return name
  }

  /// Whether `waypoint` belongs to this trip (a waypoint naming no trip is taken as this trip's).
  private func isOwn(_ waypoint: TripWaypoint) -> Bool {
    let owner = waypoint.tripId.isEmpty ? (waypoint.location?.tripId ?? "") : waypoint.tripId
    return owner.isEmpty || owner == tripID
  }

  /// A waypoint's path: `path_to_waypoint`, else the decoded `encoded_path_to_waypoint`; empty when neither is
  /// usable.
  private static func path(of waypoint: TripWaypoint) -> [LatLng] {
    if !waypoint.pathToWaypoint.isEmpty, let points = MapGeo.clean(Array(waypoint.pathToWaypoint)) { return points }
    if !waypoint.encodedPathToWaypoint.isEmpty, let decoded = EncodedPolyline.decode(waypoint.encodedPathToWaypoint),
      let points = MapGeo.clean(decoded)
    {
      return points
    }
    return []
  }

  /// The active route's points and the traffic intervals that index them.
  private func activeRoute(of trip: Trip) -> ([LatLng], [SpeedReadingInterval]) {
    let traffic = trip.currentRouteSegmentTraffic?.speedReadingInterval ?? []
    if !trip.route.isEmpty, let points = MapGeo.clean(Array(trip.route)) { return (points, traffic) }
    if !trip.currentRouteSegment.isEmpty, let decoded = EncodedPolyline.decode(trip.currentRouteSegment),
      !decoded.isEmpty, let points = MapGeo.clean(decoded)
    {
      return (points, traffic)
    }
    let waiting = trip.tripStatus == .arrivedAtPickup || trip.tripStatus == .arrivedAtIntermediateDestination
    if !waiting, let first = trip.remainingWaypoints.first {
      let points = Self.path(of: first)
      if !points.isEmpty { return (points, first.trafficToWaypoint?.speedReadingInterval ?? traffic) }
    }
    return ([], [])
  }

  /// The paths of the waypoints after the next one, up to this trip's last one, joined.
  private func makeLaterRoute(of trip: Trip) -> [LatLng] {
    let waypoints = trip.remainingWaypoints
    guard let lastOwn = waypoints.lastIndex(where: isOwn), lastOwn >= 1 else { return [] }
    var joined: [LatLng] = []
    for waypoint in waypoints[1...lastOwn] {
      var path = Self.path(of: waypoint)
      if path.isEmpty, let stop = MapGeo.clean(waypoint.location?.point) { path = [stop] }
      for point in path where joined.last.map({ MapGeo.distance($0, point) >= Self.traveledResolution }) ?? true {
        joined.append(point)
      }
    }
    return joined.count >= 2 ? joined : []
  }

  /// The stops ahead, from the remaining waypoints, else from the trip's own points by status.
  private func makeStops(of trip: Trip) -> MapStops {
    var result = MapStops()
    var cumulative: Double?
    var ownCount = 0
    for (index, waypoint) in trip.remainingWaypoints.enumerated() {
      let leg: Double?
      if index == 0 {
        if let remaining = trip.remainingDistanceMeters {
          leg = Double(remaining.value)
        } else if route.isDrawable {
          leg = route.length - (fix?.progress ?? 0)
        } else {
          leg = waypoint.distanceMeters.map { Double($0.value) }
        }
        cumulative = leg.map { max(0, $0) }
      } else {
        if let distance = waypoint.distanceMeters {
          leg = Double(distance.value)
        } else {
          let path = Self.path(of: waypoint)
          leg = path.count >= 2 ? MapPolyline(path).length : nil
        }
        if let sum = cumulative, let leg { cumulative = sum + max(0, leg) } else { cumulative = nil }
      }
      guard isOwn(waypoint), let position = MapGeo.clean(waypoint.location?.point) else { continue }
      ownCount += 1
      let eta = waypoint.eta?.unixTime ?? (index == 0 ? trip.etaToFirstWaypoint?.unixTime : nil)
      switch waypoint.waypointType {
      case .pickupWaypointType where result.pickup == nil:
        result.pickup = StopMarker(
          kind: .pickup, position: position, eta: eta ?? trip.pickupTime?.unixTime, distanceMeters: cumulative)
      case .dropOffWaypointType where result.dropoff == nil:
        result.dropoff = StopMarker(
          kind: .dropoff, position: position, eta: eta ?? trip.dropoffTime?.unixTime, distanceMeters: cumulative)
      case .intermediateDestinationWaypointType:
        result.intermediateDestinations.append(
          StopMarker(kind: .intermediateDestination, position: position, eta: eta, distanceMeters: cumulative))
      default:
        break
      }
    }
    if ownCount == 0 { result = stopsFromTripPoints(of: trip) }

    // Intermediate destinations still ahead are the last ones of the trip's list.
    let total = trip.intermediateDestinations.count
    let ahead = result.intermediateDestinations.count
    for index in result.intermediateDestinations.indices
    where result.intermediateDestinations[index].intermediateDestinationIndex == nil {
      result.intermediateDestinations[index].intermediateDestinationIndex =
        total >= ahead ? total - ahead + index : index
    }
    return result
  }

  /// Stops from `pickup_point`, `intermediate_destinations` and `dropoff_point`, for a trip without remaining
  /// waypoints: the pickup until the rider is aboard, the intermediate destinations not yet left behind.
  private func stopsFromTripPoints(of trip: Trip) -> MapStops {
    var result = MapStops()
    let beforePickup: Bool
    var firstIntermediate: Int
    switch trip.tripStatus {
    case .enrouteToDropoff:
      beforePickup = false
      firstIntermediate = trip.intermediateDestinations.count
    case .enrouteToIntermediateDestination, .arrivedAtIntermediateDestination:
      beforePickup = false
      firstIntermediate = Int(trip.intermediateDestinationIndex)
    default:
      beforePickup = true
      firstIntermediate = 0
    }
    firstIntermediate = min(max(firstIntermediate, 0), trip.intermediateDestinations.count)
    if beforePickup, let position = MapGeo.clean(trip.pickupPoint?.point) {
      result.pickup = StopMarker(kind: .pickup, position: position, eta: trip.pickupTime?.unixTime)
    }
    for index in firstIntermediate..<trip.intermediateDestinations.count {
      guard let position = MapGeo.clean(trip.intermediateDestinations[index].point) else { continue }
      result.intermediateDestinations.append(
        StopMarker(kind: .intermediateDestination, position: position, intermediateDestinationIndex: index))
    }
    if let position = MapGeo.clean(trip.dropoffPoint?.point) {
      result.dropoff = StopMarker(kind: .dropoff, position: position, eta: trip.dropoffTime?.unixTime)
    }
    return result
  }

  /// The vehicle fix in `location`; `nil` without a usable position.
  private static func fix(from location: VehicleLocation?, receivedAt: Double) -> MapFix? {
    guard let location, let position = MapGeo.clean(location.location) ?? MapGeo.clean(location.rawLocation) else {
      return nil
    }
    let heading = location.heading.map { MapGeo.normalizedDegrees(Double($0.value)) }
    var speed: Double?
    if let meters = location.speed?.value, meters.isFinite, meters >= 0 {
      speed = meters
    } else if let kmph = location.speedKmph?.value, kmph >= 0 {
      speed = Double(kmph) / 3.6
    }
    let lastFix = location.updateTime?.unixTime ?? location.serverTime?.unixTime ?? receivedAt
    let marker = VehicleMarker(
      position: position, heading: heading, speed: speed, lastFix: lastFix,
      isRoadSnapped: location.isRoadSnapped?.value ?? false)
    return MapFix(marker: marker, receivedAt: receivedAt)
  }
}

/// The latest vehicle fix and where it is on the active route.
struct MapFix: Sendable, Hashable {
  /// The fix as reported (`isStale` not yet evaluated).
  var marker: VehicleMarker
  /// When the snapshot carrying the fix was first fed (Unix time).
  var receivedAt: Double
  /// Meters along the active route where the fix projects; `nil` when off the route or there is none.
  var progress: Double?
  /// Meters along the route below which the marker is not shown from `receivedAt` on; `nil` for no hold.
  var hold: Double?
}

/// The stop markers of a state, before the animation's distance adjustment.
struct MapStops: Sendable, Hashable {
  /// The pickup, while ahead.
  var pickup: StopMarker?
  /// The drop-off.
  var dropoff: StopMarker?
  /// The intermediate destinations ahead, in driving order.
  var intermediateDestinations: [StopMarker] = []
}
