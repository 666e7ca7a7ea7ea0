// Benchmarks/Sources/BenchmarkFixtures/Fixtures.swift - the payloads the benchmarks share
//
// Two payloads, built with the project's own message types and encoded once:
// - the small streaming update: a TripUpdate carrying the vehicle's location, the ETA to
//   the next waypoint and the remaining distance (tens of bytes on the wire);
// - the full trip: a Trip with a 200-point route, three waypoints with their paths and
//   traffic, pickup and dropoff (kilobytes on the wire).
// Both are deterministic, so every run measures the same bytes.

public import FleetEngineMessages

/// The benchmark payloads.
public enum Fixtures {
  /// The Trip field numbers a small update changes: last_location (11), remaining_distance_meters (12),
  /// eta_to_first_waypoint (13).
  public static let smallUpdateFields: [Int32] = [11, 12, 13]

  /// A small streaming update for step `step` of a trip (the location moves, the ETA and distance shrink).
  public static func smallUpdate(step: Int, sendTime: Double = 1_750_000_000.25) -> TripUpdate {
    var location = VehicleLocation()
    let t = Double(step)
    location.location = LatLng(latitude: 52.3676 + t * 1e-5, longitude: 4.9041 + t * 1.3e-5)
    location.heading = Int32Value(Int32(step % 360))
    location.speed = DoubleValue(8.5)
    location.updateTime = Timestamp(seconds: 1_750_000_000 + Int64(step), nanos: 125_000_000)
    var trip = Trip()
    trip.lastLocation = location
    trip.remainingDistanceMeters = Int32Value(Int32(max(0, 4200 - step)))
    trip.etaToFirstWaypoint = Timestamp(seconds: 1_750_000_600 - Int64(step % 600), nanos: 0)
    var update = TripUpdate()
    update.trip = trip
    update.updatedFields = smallUpdateFields
    update.sequence = UInt64(step + 1)
    update.sendTime = Timestamp(unixTime: sendTime)
    return update
  }

  /// The small update's bytes (step 17).
  public static let smallUpdateBytes: [UInt8] = smallUpdate(step: 17).serializedBytes()

  /// A path of `count` points starting near (latitude, longitude).
  public static func path(count: Int, latitude: Double, longitude: Double) -> [LatLng] {
    (0..<count).map { i in
      let t = Double(i)
      return LatLng(latitude: latitude + t * 2.1e-4 + (i % 3 == 0 ? 1e-6 : 0), longitude: longitude + t * 1.7e-4)
    }
  }

  /// Traffic over a path of `points` points: alternating NORMAL, SLOW and TRAFFIC_JAM intervals.
  public static func traffic(points: Int, intervals: Int) -> ConsumableTrafficPolyline {
    var traffic = ConsumableTrafficPolyline()
    let step = max(1, points / intervals)
    var start = 0
    var k = 0
    while start < points - 1 {
      var interval = SpeedReadingInterval()
      interval.startPolylinePointIndex = Int32(start)
      interval.endPolylinePointIndex = Int32(min(points - 1, start + step))
      interval.speed = [.normal, .slow, .trafficJam][k % 3]
      traffic.speedReadingInterval.append(interval)
      start += step
      k += 1
    }
    return traffic
  }

  /// A full trip: 200-point route with traffic, pickup, dropoff, three remaining waypoints with paths.
  public static func fullTrip() -> Trip {
    var trip = Trip()
    trip.name = "providers/bench/trips/trip-42"
    trip.vehicleId = "vehicle-42"
    trip.tripStatus = .enrouteToPickup
    trip.tripType = .exclusive
    var pickup = TerminalLocation()
    pickup.point = LatLng(latitude: 52.3702, longitude: 4.8952)
    pickup.tripId = "trip-42"
    pickup.terminalLocationType = .pickupWaypointType
    var dropoff = TerminalLocation()
    dropoff.point = LatLng(latitude: 52.3584, longitude: 4.8811)
    dropoff.tripId = "trip-42"
    dropoff.terminalLocationType = .dropOffWaypointType
    trip.pickupPoint = pickup
    trip.dropoffPoint = dropoff
    trip.pickupTime = Timestamp(seconds: 1_750_000_300)
    trip.dropoffTime = Timestamp(seconds: 1_750_001_200)
    trip.route = LatLngPath(path(count: 200, latitude: 52.3601, longitude: 4.8803))
    trip.currentRouteSegmentVersion = Timestamp(seconds: 1_750_000_010, nanos: 5)
    trip.currentRouteSegmentTraffic = traffic(points: 200, intervals: 12)
    trip.currentRouteSegmentTrafficVersion = Timestamp(seconds: 1_750_000_010, nanos: 5)
    var waypoints: [TripWaypoint] = []
    for (k, location) in [pickup, dropoff, dropoff].enumerated() {
      var waypoint = TripWaypoint()
      waypoint.location = location
      waypoint.tripId = "trip-42"
      waypoint.waypointType = location.terminalLocationType
      if k > 0 {
        waypoint.pathToWaypoint = LatLngPath(path(count: 60, latitude: 52.37 - Double(k) * 0.004, longitude: 4.89))
        waypoint.trafficToWaypoint = traffic(points: 60, intervals: 4)
      }
      waypoint.distanceMeters = Int32Value(Int32(1500 + 900 * k))
      waypoint.eta = Timestamp(seconds: 1_750_000_300 + Int64(600 * k))
      waypoint.duration = ProtobufDuration(seconds: Int64(300 + 600 * k))
      waypoints.append(waypoint)
    }
    trip.remainingWaypoints = waypoints
    trip.remainingWaypointsVersion = Timestamp(seconds: 1_750_000_010)
    trip.remainingWaypointsRouteVersion = Timestamp(seconds: 1_750_000_010)
    trip.remainingDistanceMeters = Int32Value(4200)
    trip.etaToFirstWaypoint = Timestamp(seconds: 1_750_000_300)
    trip.remainingTimeToFirstWaypoint = ProtobufDuration(seconds: 300)
    trip.numberOfPassengers = 1
    trip.lastLocation = smallUpdate(step: 0).trip?.lastLocation
    trip.view = .journeySharingV1S
    return trip
  }

  /// The full trip's bytes.
  public static let fullTripBytes: [UInt8] = fullTrip().serializedBytes()

  /// The full trip as the first message of a stream (`full_trip` set).
  public static func fullTripUpdate(sendTime: Double = 1_750_000_000.25) -> TripUpdate {
    var update = TripUpdate()
    update.trip = fullTrip()
    update.fullTrip = true
    update.sequence = 1
    update.sendTime = Timestamp(unixTime: sendTime)
    return update
  }
}

#if canImport(Glibc)
  import Glibc
#endif

/// How long each micro benchmark runs, in milliseconds: `JOURNEYSHARING_BENCH_SECONDS` × 1000 when set
/// (`make bench-full` sets 10), else `value`.
public func benchmarkMilliseconds(default value: Int) -> Int {
  guard let text = getenv("JOURNEYSHARING_BENCH_SECONDS"), let seconds = Int(String(cString: text)), seconds > 0
  else { return value }
  return seconds * 1000
}
