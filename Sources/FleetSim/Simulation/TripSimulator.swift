// Sources/FleetSim/Simulation/TripSimulator.swift - trips as a pure function of (seed, index, time)
//
// The simulator owns the city grid and a bounded cache of trip plans; a snapshot
// is the plan looked up at a time and dressed as the Trip that Fleet Engine's
// GetTrip returns with the JOURNEY_SHARING_V1S view.
//
// Choices a consumer can observe (the documented ones Fleet Engine leaves open):
// - A leg's route (route / current_route_segment, the first remaining waypoint's
//   path, the traffic) is the path planned when the leg began, from where the
//   vehicle was then to the next stop. It is replaced, and its versions move, only
//   when a leg begins or ends, not as the vehicle advances along it: a client trims
//   the driven part using last_location, as the Consumer SDK does. The live
//   figures are remaining_distance_meters and remaining_time_to_first_waypoint.
// - ETAs come from the plan's speed profile and are exact, so eta_to_first_waypoint
//   is constant within a leg and the remaining time falls one second per second.
// - Timestamps and durations are wall-clock (simulated seconds / speedup), so
//   `eta - server_time` is what a client waits; speeds and distances are simulated.
// - vehicle_waypoints is left empty: Fleet Engine never returns it from GetTrip.

public import FleetEngineMessages
import Primitives
import Synchronization

/// The deterministic trip simulation: trip `providers/{provider}/trips/trip-{i}` for `i` in `0..<tripCount`,
/// each a pure function of the configuration, its index and the simulated time.
///
/// Thread-safe and cheap to copy; copies share the plan cache.
public struct TripSimulator: Sendable {
  /// The configuration it simulates.
  public let configuration: SimulationConfiguration
  let grid: StreetGrid
  private let cache: PlanCache
  private let tripNamePrefix: String

  /// A simulator for `configuration`.
  ///
  /// Plans are made on first use and kept in a cache of `planCacheCapacity` slots (direct-mapped by
  /// index, each plan about 10–25 KB), so a server following many trips does not re-plan them on every
  /// tick while memory stays bounded however many trips exist. The capacity never changes results.
  ///
  /// - Precondition: `configuration.speedup` is positive and finite; `tripCount` is not negative.
  public init(configuration: SimulationConfiguration, planCacheCapacity: Int = 4_096) {
    precondition(configuration.speedup > 0 && configuration.speedup.isFinite, "speedup must be positive and finite")
    precondition(configuration.tripCount >= 0, "tripCount must not be negative")
    precondition(configuration.startTime.isFinite, "startTime must be finite")
    self.configuration = configuration
    self.grid = StreetGrid(seed: configuration.seed, center: configuration.cityCenter)
    self.cache = PlanCache(capacity: min(max(planCacheCapacity, 0), configuration.tripCount))
    self.tripNamePrefix = "providers/\(configuration.provider)/trips/trip-"
  }

  // MARK: - Names and time

  /// The resource name of trip `index`: `providers/{provider}/trips/trip-{index}`.
  public func tripName(index: Int) -> String { tripNamePrefix + String(index) }

  /// The index of the trip called `name`; `nil` unless it is exactly
  /// `providers/{provider}/trips/trip-{i}` with this provider and `i` in `0..<tripCount`, written in
  /// decimal without sign or leading zeros.
  public func tripIndex(forName name: String) -> Int? {
    guard name.hasPrefix(tripNamePrefix) else { return nil }
    let digits = name.utf8.dropFirst(tripNamePrefix.utf8.count)
    guard let first = digits.first, !digits.isEmpty, digits.count <= 18 else { return nil }
    if first == UInt8(ascii: "0"), digits.count > 1 { return nil }
    var index = 0
    for digit in digits {
      guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
      index = index * 10 + Int(digit - UInt8(ascii: "0"))
    }
    return index < configuration.tripCount ? index : nil
  }

  /// Simulated seconds at Unix time `unixTime`: `(unixTime - startTime) * speedup`, negative before the start.
  public func simulatedSeconds(atUnixTime unixTime: Double) -> Double {
    (unixTime - configuration.startTime) * configuration.speedup
  }

  /// The Unix time at simulated second `seconds`: `startTime + seconds / speedup`.
  public func unixTime(atSimulatedSeconds seconds: Double) -> Double {
    configuration.startTime + seconds / configuration.speedup
  }

  // MARK: - Trips

  /// The scenario of trip `index` (any index ≥ 0 has one; names resolve only below `tripCount`).
  public func plan(index: Int) -> TripPlan {
    precondition(index >= 0, "trip indexes are not negative")
    return cache.plan(index: index) {
      TripPlan(index: index, provider: configuration.provider, seed: configuration.seed, grid: grid)
    }
  }

  /// Trip `index` at simulated second `seconds`, as GetTrip returns it with the `JOURNEY_SHARING_V1S` view:
  /// the route as a LatLng list (`route`, `path_to_waypoint`) unless `routeFormat` is
  /// `.encodedPolylineType` (`current_route_segment`, `encoded_path_to_waypoint`).
  public func trip(
    index: Int, atSimulatedSeconds seconds: Double, routeFormat: PolylineFormatType = .latLngListType
  ) -> Trip {
    trip(for: plan(index: index), atSimulatedSeconds: seconds, routeFormat: routeFormat)
  }

  /// Whether trip `index` has reached `COMPLETE` or `CANCELED` by simulated second `seconds`
  /// (after which its snapshots never change).
  public func isFinished(index: Int, atSimulatedSeconds seconds: Double) -> Bool {
    seconds >= plan(index: index).finishTime
  }

  /// The trip of `plan` (from this simulator's ``plan(index:)``) at simulated second `seconds`; see
  /// ``trip(index:atSimulatedSeconds:routeFormat:)``. Times beyond ±10^12 s are clamped, NaN is 0.
  public func trip(
    for plan: TripPlan, atSimulatedSeconds seconds: Double, routeFormat: PolylineFormatType = .latLngListType
  ) -> Trip {
    let seconds = seconds.isNaN ? 0 : min(max(seconds, -1e12), 1e12)
    let storage = plan.storage
    let encoded = routeFormat == .encodedPolylineType
    let phaseIndex = plan.phaseIndex(at: seconds)
    let phase = storage.phases[phaseIndex]
    let stops = storage.stops
    let lastStop = stops.count - 1

    var trip = Trip()
    trip.name = storage.name
    trip.vehicleId = storage.vehicleID
    trip.tripStatus = phase.status
    trip.tripType = storage.tripType
    trip.numberOfPassengers = storage.numberOfPassengers
    trip.view = .journeySharingV1S
    trip.pickupPoint = storage.stopLocations[0]
    trip.dropoffPoint = storage.stopLocations[lastStop]
    if lastStop > 1 {
      trip.intermediateDestinations = storage.intermediateLocations
      trip.intermediateDestinationsVersion = timestamp(storage.createdAt)
      // The stop headed to or waited at; before the first it is 0, after the last it stays there.
      trip.intermediateDestinationIndex = Int32(min(max(phase.stopIndex - 1, 0), lastStop - 2))
    }

    // What has happened so far; a canceled trip's history stops at the cancellation.
    let canceled = phase.status == .canceled
    let effective = min(seconds, storage.canceledAt ?? .infinity)
    for j in 0..<lastStop {
      if stops[j].arrival <= effective {
        let arrivedAt = stopLocation(j, at: stops[j].arrival, storage)
        if j == 0 {
          trip.actualPickupArrivalPoint = arrivedAt
        } else {
          trip.actualIntermediateDestinationArrivalPoints.append(arrivedAt)
        }
      }
      if stops[j].departure <= effective {
        let leftAt = stopLocation(j, at: stops[j].departure, storage)
        if j == 0 { trip.actualPickupPoint = leftAt } else { trip.actualIntermediateDestinations.append(leftAt) }
      }
    }
    if phase.status == .complete {
      trip.actualDropoffPoint = stopLocation(lastStop, at: stops[lastStop].arrival, storage)
    }
    if !canceled {
      // Estimated (the arrival at the pickup) until the rider is aboard, then the actual time.
      trip.pickupTime = timestamp(stops[0].departure <= effective ? stops[0].departure : stops[0].arrival)
      trip.dropoffTime = timestamp(stops[lastStop].arrival)
    }

    trip.lastLocation = vehicleLocation(plan, phaseIndex: phaseIndex, at: seconds)

    switch phase.status {
    case .new, .enrouteToPickup, .enrouteToIntermediateDestination, .enrouteToDropoff:
      let k = phase.stopIndex
      let leg = storage.legs[k]
      let version = timestamp(leg.routeComputedAt)
      if encoded { trip.currentRouteSegment = leg.encodedPath } else { trip.route = leg.path }
      trip.currentRouteSegmentVersion = version
      trip.currentRouteSegmentTraffic = leg.trafficPolyline
      trip.currentRouteSegmentTrafficVersion = version
      trip.currentRouteSegmentEndPoint = endPoint(k, storage)
      let driven = phase.status == .new ? 0 : leg.position(atElapsed: seconds - leg.departure).distance
      trip.remainingDistanceMeters = Int32Value(Int32((leg.distance - driven).rounded()))
      trip.etaToFirstWaypoint = timestamp(leg.arrival)
      trip.remainingTimeToFirstWaypoint = duration(leg.arrival - seconds)
      trip.remainingWaypoints = remainingWaypoints(from: k, arrived: false, encoded: encoded, storage)
      trip.remainingWaypointsVersion = version
      trip.remainingWaypointsRouteVersion = version
      trip.lastLocationSnappable = true
    case .arrivedAtPickup, .arrivedAtIntermediateDestination:
      let k = phase.stopIndex
      let arrivedAt = timestamp(stops[k].arrival)
      trip.currentRouteSegmentVersion = arrivedAt
      trip.currentRouteSegmentTrafficVersion = arrivedAt
      trip.currentRouteSegmentEndPoint = endPoint(k, storage)
      trip.remainingDistanceMeters = Int32Value(0)
      trip.etaToFirstWaypoint = arrivedAt
      trip.remainingTimeToFirstWaypoint = ProtobufDuration()
      trip.remainingWaypoints = remainingWaypoints(from: k, arrived: true, encoded: encoded, storage)
      // The same stops as on the way here; only the first one's path (now empty) changed.
      trip.remainingWaypointsVersion = timestamp(storage.legs[k].routeComputedAt)
      trip.remainingWaypointsRouteVersion = arrivedAt
    default:
      // COMPLETE or CANCELED: no route, no stops left; everything was replaced by nothing then.
      let finishedAt = timestamp(phase.start)
      trip.currentRouteSegmentVersion = finishedAt
      trip.currentRouteSegmentTrafficVersion = finishedAt
      trip.remainingWaypointsVersion = finishedAt
      trip.remainingWaypointsRouteVersion = finishedAt
    }
    return trip
  }

  // MARK: - Pieces of a snapshot

  private func timestamp(_ seconds: Double) -> Timestamp {
    Timestamp(unixTime: configuration.startTime + seconds / configuration.speedup)
  }

  /// A simulated span as a wall-clock duration.
  private func duration(_ seconds: Double) -> ProtobufDuration {
    let wall = seconds / configuration.speedup
    let whole = wall.rounded(.towardZero)
    var result = ProtobufDuration(seconds: Int64(whole), nanos: Int32(((wall - whole) * 1e9).rounded()))
    if result.nanos >= 1_000_000_000 {
      result.seconds += 1
      result.nanos -= 1_000_000_000
    } else if result.nanos <= -1_000_000_000 {
      result.seconds -= 1
      result.nanos += 1_000_000_000
    }
    return result
  }

  private func stopLocation(_ index: Int, at seconds: Double, _ storage: TripPlan.Storage) -> StopLocation {
    var stop = StopLocation()
    stop.point = storage.stops[index].location
    stop.timestamp = timestamp(seconds)
    return stop
  }

  /// The stop where the current route segment ends: where, whose and what, no path.
  private func endPoint(_ index: Int, _ storage: TripPlan.Storage) -> TripWaypoint {
    var waypoint = TripWaypoint()
    waypoint.location = storage.stopLocations[index]
    waypoint.tripId = storage.tripID
    waypoint.waypointType = storage.stops[index].type
    return waypoint
  }

  /// Stops `first`… as remaining waypoints, each with the path, distance and driving time from the stop before
  /// (for the first, from where its leg began), its ETA and traffic. When `arrived`, the first is the stop the
  /// vehicle waits at: no path left, distance and duration 0, the ETA its arrival.
  private func remainingWaypoints(
    from first: Int, arrived: Bool, encoded: Bool, _ storage: TripPlan.Storage
  ) -> [TripWaypoint] {
    var waypoints: [TripWaypoint] = []
    waypoints.reserveCapacity(storage.stops.count - first)
    for index in first..<storage.stops.count {
      var waypoint = endPoint(index, storage)
      waypoint.eta = timestamp(storage.stops[index].arrival)
      if arrived && index == first {
        waypoint.distanceMeters = Int32Value(0)
        waypoint.duration = ProtobufDuration()
      } else {
        let leg = storage.legs[index]
        if encoded { waypoint.encodedPathToWaypoint = leg.encodedPath } else { waypoint.pathToWaypoint = leg.path }
        waypoint.trafficToWaypoint = leg.trafficPolyline
        waypoint.distanceMeters = Int32Value(Int32(leg.distance.rounded()))
        waypoint.duration = duration(leg.duration)
      }
      waypoints.append(waypoint)
    }
    return waypoints
  }

  /// Where the vehicle is, as its driver app would report it: moving along the leg while driving, parked at
  /// the stop while waiting, frozen where it ended once the trip is over.
  private func vehicleLocation(_ plan: TripPlan, phaseIndex: Int, at seconds: Double) -> VehicleLocation {
    let storage = plan.storage
    let phase = storage.phases[phaseIndex]
    let state: (point: LatLng, heading: Int32, speed: Double)
    var reportedAt = seconds
    switch phase.status {
    case .canceled:
      // Where it was when the trip was canceled, stopped.
      let before = storage.phases[max(phaseIndex - 1, 0)]
      reportedAt = phase.start
      let moving = Self.state(storage, phase: before, at: phase.start)
      state = (moving.point, moving.heading, 0)
    case .complete:
      reportedAt = phase.start
      state = Self.state(storage, phase: phase, at: phase.start)
    default:
      state = Self.state(storage, phase: phase, at: seconds)
    }
    var location = VehicleLocation()
    location.location = state.point
    location.heading = Int32Value(state.heading)
    location.speed = DoubleValue(state.speed)
    location.speedKmph = Int32Value(Int32((state.speed * 3.6).rounded()))
    let time = timestamp(reportedAt)
    location.updateTime = time
    location.serverTime = time
    location.locationSensor = .roadSnappedLocationProvider
    location.isRoadSnapped = BoolValue(true)
    return location
  }

  private static func state(
    _ storage: TripPlan.Storage, phase: TripPlan.Phase, at seconds: Double
  ) -> (point: LatLng, heading: Int32, speed: Double) {
    let leg = storage.legs[phase.stopIndex]
    switch phase.status {
    case .new:
      return (leg.path[0], leg.headings[0], 0)
    case .enrouteToPickup, .enrouteToIntermediateDestination, .enrouteToDropoff:
      let position = leg.position(atElapsed: seconds - leg.departure)
      return (position.point, leg.headings[position.edge], position.speed)
    default:
      return (leg.path[leg.path.count - 1], leg.headings[leg.headings.count - 1], 0)
    }
  }
}

// MARK: - Moving along a leg

extension TripPlan.Leg {
  /// Where the vehicle is `elapsed` seconds after starting the leg (clamped to the leg): the point, the
  /// edge it is on, the distance driven and the speed on that edge.
  func position(atElapsed elapsed: Double) -> (point: LatLng, edge: Int, distance: Double, speed: Double) {
    let lastEdge = speeds.count - 1
    guard elapsed > 0 else { return (path[0], 0, 0, speeds[0]) }
    guard elapsed < duration else { return (path[path.count - 1], lastEdge, distance, speeds[lastEdge]) }
    // The edge whose time span holds `elapsed`: the last k with cumulativeTimes[k] <= elapsed.
    var low = 0
    var high = lastEdge
    while low < high {
      let mid = (low + high + 1) / 2
      if cumulativeTimes[mid] <= elapsed { low = mid } else { high = mid - 1 }
    }
    let edge = low
    let span = cumulativeTimes[edge + 1] - cumulativeTimes[edge]
    let t = span > 0 ? min(max((elapsed - cumulativeTimes[edge]) / span, 0), 1) : 1
    let a = path[edge]
    let b = path[edge + 1]
    let point = LatLng(
      latitude: a.latitude + (b.latitude - a.latitude) * t, longitude: a.longitude + (b.longitude - a.longitude) * t)
    let distance = cumulativeDistances[edge] + (cumulativeDistances[edge + 1] - cumulativeDistances[edge]) * t
    return (point, edge, distance, speeds[edge])
  }
}

// MARK: - Plan cache

/// A direct-mapped cache of plans: slot `index % capacity` holds the plan last made for such an index.
/// Planning happens outside the lock; two threads racing on one index both plan, and either result is
/// the same plan.
final class PlanCache: Sendable {
  private let slots: Locked<[TripPlan?]>
  private let capacity: Int

  init(capacity: Int) {
    self.capacity = capacity
    self.slots = Locked([TripPlan?](repeating: nil, count: capacity))
  }

  func plan(index: Int, make: () -> TripPlan) -> TripPlan {
    guard capacity > 0 else { return make() }
    let slot = index % capacity
    if let cached = slots.withLock({ $0[slot] }), cached.index == index { return cached }
    let plan = make()
    slots.withLock { $0[slot] = plan }
    return plan
  }
}
