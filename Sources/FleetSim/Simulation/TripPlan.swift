// Sources/FleetSim/Simulation/TripPlan.swift - one trip's precomputed scenario
//
// Everything random about a trip is decided here, once, from (seed, index): its
// stops, the routes between them, the speed along every metre, and the status
// timeline. A snapshot at any time is then a lookup (which phase, where on the
// leg) plus assembling a message, so a server can take thousands per second.
// Times in a plan are simulated seconds; the simulator turns them into wall-clock
// timestamps.

public import FleetEngineMessages
import Primitives

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The precomputed scenario of one trip: stops, routes with speed profiles, and the status timeline.
///
/// A plan depends only on the seed, the trip's index and the city centre, never on the
/// start time or speed-up, so it can be cached across both. It is immutable and cheap
/// to copy (one reference).
public struct TripPlan: Sendable {
  /// A stop of the trip: the pickup, an intermediate destination or the drop-off.
  public struct Stop: Sendable, Hashable {
    /// What the stop is.
    public var type: WaypointType
    /// Where it is, on a street.
    public var location: LatLng
    /// When the vehicle arrives (simulated seconds), as planned.
    public var arrival: Double
    /// When it leaves again, as planned; equal to `arrival` for the drop-off.
    public var departure: Double
  }

  /// The drive to one stop: a dense polyline with a speed for every edge.
  public struct Leg: Sendable {
    /// The route, from where the vehicle starts the leg to the stop; a point every 20–35 m and at every corner.
    public let path: LatLngPath
    /// The driving distance (m) from `path[0]` to `path[k]`.
    public let cumulativeDistances: [Double]
    /// The driving time (s) from `path[0]` to `path[k]`, from the speed profile.
    public let cumulativeTimes: [Double]
    /// The speed (m/s) on edge `k`, from `path[k]` to `path[k + 1]`.
    public let speeds: [Double]
    /// The compass heading (degrees, 0–359) on edge `k`.
    public let headings: [Int32]
    /// Traffic along the path, as intervals of point indices covering it end to end.
    public let traffic: [SpeedReadingInterval]
    /// When the vehicle starts driving the leg (simulated seconds).
    public let departure: Double
    /// When the leg's route was computed (simulated seconds): the trip's creation for the first leg,
    /// the departure for the others. The route and traffic versions of the leg.
    public let routeComputedAt: Double
    /// `path` as an encoded polyline (precision 5).
    public let encodedPath: String
    /// `traffic` and `encodedPath` as Fleet Engine sends them.
    let trafficPolyline: ConsumableTrafficPolyline

    /// The leg's driving distance (m).
    public var distance: Double { cumulativeDistances[cumulativeDistances.count - 1] }
    /// The leg's driving time (s).
    public var duration: Double { cumulativeTimes[cumulativeTimes.count - 1] }
    /// When the vehicle reaches the stop (simulated seconds).
    public var arrival: Double { departure + duration }
  }

  /// A stretch of the status timeline.
  public struct Phase: Sendable, Hashable {
    /// The trip's status during the phase.
    public var status: TripStatus
    /// When it begins (simulated seconds); the first phase, `NEW`, also covers all earlier times.
    public var start: Double
    /// When it ends; `infinity` for the final `COMPLETE` or `CANCELED`.
    public var end: Double
    /// The stop the vehicle heads to or waits at (for `NEW`, the pickup; once final, the last one reached
    /// or headed to).
    public var stopIndex: Int
  }

  final class Storage: Sendable {
    let index: Int
    let name: String
    let tripID: String
    let vehicleID: String
    let tripType: TripType
    let numberOfPassengers: Int32
    let createdAt: Double
    let stops: [Stop]
    let stopLocations: [TerminalLocation]
    let intermediateLocations: [TerminalLocation]
    let legs: [Leg]
    let phases: [Phase]
    let canceledAt: Double?

    init(
      index: Int, name: String, tripID: String, tripType: TripType, numberOfPassengers: Int32,
      createdAt: Double, stops: [Stop], legs: [Leg], phases: [Phase], canceledAt: Double?
    ) {
      self.index = index
      self.name = name
      self.tripID = tripID
      self.vehicleID = "vehicle-\(index)"
      self.tripType = tripType
      self.numberOfPassengers = numberOfPassengers
      self.createdAt = createdAt
      self.stops = stops
      self.stopLocations = stops.map { stop in
        var location = TerminalLocation()
        location.point = stop.location
        return location
      }
      self.intermediateLocations = Array(stopLocations.dropFirst().dropLast())
      self.legs = legs
      self.phases = phases
      self.canceledAt = canceledAt
    }
  }

  let storage: Storage

  /// The trip's index.
  public var index: Int { storage.index }
  /// The trip's resource name, `providers/{provider}/trips/trip-{index}`.
  public var name: String { storage.name }
  /// The trip ID, `trip-{index}`.
  public var tripID: String { storage.tripID }
  /// The vehicle's ID, `vehicle-{index}`.
  public var vehicleID: String { storage.vehicleID }
  /// `EXCLUSIVE` for most trips, `SHARED` for about one in ten.
  public var tripType: TripType { storage.tripType }
  /// 1–4 passengers.
  public var numberOfPassengers: Int32 { storage.numberOfPassengers }
  /// When the trip was booked (simulated seconds): 0–20 s before the simulation starts, staggered per trip.
  public var createdAt: Double { storage.createdAt }
  /// The pickup, then 0–2 intermediate destinations, then the drop-off.
  public var stops: [Stop] { storage.stops }
  /// The drive to each stop: `legs[k]` ends at `stops[k]` (the first starts where the vehicle waits).
  public var legs: [Leg] { storage.legs }
  /// The status timeline, in order; the last phase, `COMPLETE` or `CANCELED`, never ends.
  public var phases: [Phase] { storage.phases }
  /// When the trip is canceled (simulated seconds), for the one in ten that are: after the start, before the
  /// rider is picked up.
  public var canceledAt: Double? { storage.canceledAt }
  /// When the trip reaches `COMPLETE` or `CANCELED` (simulated seconds).
  public var finishTime: Double { storage.phases[storage.phases.count - 1].start }
  /// The intermediate destinations' count.
  public var intermediateDestinationCount: Int { storage.stops.count - 2 }

  /// The index into `phases` of the phase at `seconds` (the first phase before it starts).
  public func phaseIndex(at seconds: Double) -> Int {
    let phases = storage.phases
    var index = phases.count - 1
    while index > 0, seconds < phases[index].start { index -= 1 }
    return index
  }
}

// MARK: - Planning

extension TripPlan {
  /// Plans trip `index` of `seed` in `grid`'s city.
  init(index: Int, provider: String, seed: UInt64, grid: StreetGrid) {
    var random = SimulationRandom(seed: seed, stream: UInt64(truncatingIfNeeded: index))
    let tripType: TripType = random.chance(0.1) ? .shared : .exclusive
    let passengersRoll = random.unit()
    let passengers: Int32 = passengersRoll < 0.6 ? 1 : passengersRoll < 0.85 ? 2 : passengersRoll < 0.95 ? 3 : 4
    let intermediateCount = random.chance(0.25) ? (random.chance(0.7) ? 1 : 2) : 0
    let canceled = random.chance(0.1)
    let driverFactor = random.uniform(0.92, 1.06)

    // Stops: the pickup within 2.3 km of the centre, the vehicle 0.4–1.6 km from it (as the crow
    // flies), then the rest of the trip heading roughly one way for 0.9–3.2 km in total.
    let pickupAngle = random.uniform(0, 2 * Double.pi)
    let pickupRadius = 2_300 * random.unit().squareRoot()
    let pickup = grid.streetPoint(
      near: GridPoint(u: pickupRadius * cos(pickupAngle), v: pickupRadius * sin(pickupAngle)),
      horizontal: random.chance(0.5), random: &random)
    let (_, firstRuns) = Self.placeStop(
      from: pickup, reversed: true, grid: grid, random: &random
    ) { random in
      (random.uniform(0, 2 * Double.pi), random.uniform(400, 1_600))
    }
    var runsPerLeg = [firstRuns]
    var stopPoints = [pickup]
    let direction = random.uniform(0, 2 * Double.pi)
    let hop = random.uniform(900, 3_200) / Double(intermediateCount + 1)
    for _ in 0...intermediateCount {
      let (next, runs) = Self.placeStop(
        from: stopPoints[stopPoints.count - 1], reversed: false, grid: grid, random: &random
      ) { random in
        (direction + random.uniform(-1, 1), hop * random.uniform(0.7, 1.3))
      }
      stopPoints.append(next)
      runsPerLeg.append(runs)
    }

    // Timeline: booked shortly before the simulation starts (so version stamps are never in the future of
    // a snapshot taken after the start), NEW until 10–60 s past a per-trip stagger of 0–20 s (so trips do
    // not move in lockstep), then drive, wait, drive, …
    let stagger = random.uniform(0, 20)
    let createdAt = stagger - 20
    var departure = stagger + random.uniform(10, 60)
    var legs: [Leg] = []
    var stops: [Stop] = []
    for (k, runs) in runsPerLeg.enumerated() {
      let leg = Self.makeLeg(
        runs: runs, departure: departure, routeComputedAt: k == 0 ? createdAt : departure,
        driverFactor: driverFactor, grid: grid, random: &random)
      legs.append(leg)
      let isLast = k == runsPerLeg.count - 1
      let dwell = isLast ? 0 : (k == 0 ? random.uniform(20, 90) : random.uniform(20, 60))
      let type: WaypointType =
        k == 0 ? .pickupWaypointType : isLast ? .dropOffWaypointType : .intermediateDestinationWaypointType
      stops.append(
        Stop(
          type: type, location: leg.path[leg.path.count - 1], arrival: leg.arrival, departure: leg.arrival + dwell))
      departure = leg.arrival + dwell
    }

    var phases = [Phase(status: .new, start: createdAt, end: legs[0].departure, stopIndex: 0)]
    for (k, leg) in legs.enumerated() {
      let isLast = k == legs.count - 1
      let driving: TripStatus =
        k == 0 ? .enrouteToPickup : isLast ? .enrouteToDropoff : .enrouteToIntermediateDestination
      phases.append(Phase(status: driving, start: leg.departure, end: leg.arrival, stopIndex: k))
      if isLast {
        phases.append(Phase(status: .complete, start: leg.arrival, end: .infinity, stopIndex: k))
      } else {
        let waiting: TripStatus = k == 0 ? .arrivedAtPickup : .arrivedAtIntermediateDestination
        phases.append(Phase(status: waiting, start: leg.arrival, end: stops[k].departure, stopIndex: k))
      }
    }

    // One trip in ten is canceled before the rider is picked up: while new, on the way, or waiting.
    var canceledAt: Double?
    if canceled {
      let cancelTime = random.uniform(5, stops[0].departure - 1)
      phases = phases.filter { $0.start < cancelTime }
      phases[phases.count - 1].end = cancelTime
      phases.append(
        Phase(status: .canceled, start: cancelTime, end: .infinity, stopIndex: phases[phases.count - 1].stopIndex))
      canceledAt = cancelTime
    }

    let tripID = "trip-\(index)"
    self.storage = Storage(
      index: index, name: "providers/\(provider)/trips/\(tripID)", tripID: tripID, tripType: tripType,
      numberOfPassengers: passengers, createdAt: createdAt, stops: stops, legs: legs, phases: phases,
      canceledAt: canceledAt)
  }

  /// Shortest leg worth driving (m); closer stops are re-drawn.
  static let minimumLegDistance = 300.0

  /// Picks a stop at (angle, distance) from `anchor`, kept within ±3 km of the centre and at least
  /// `minimumLegDistance` of driving away, and routes between them (from the new stop to `anchor`
  /// when `reversed`).
  private static func placeStop(
    from anchor: StreetPoint, reversed: Bool, grid: StreetGrid, random: inout SimulationRandom,
    offset: (inout SimulationRandom) -> (angle: Double, distance: Double)
  ) -> (StreetPoint, [RouteRun]) {
    let origin = grid.point(anchor)
    var best: (StreetPoint, [RouteRun])?
    for _ in 0..<8 {
      let (angle, distance) = offset(&random)
      let target = GridPoint(
        u: min(max(origin.u + distance * cos(angle), -3_000), 3_000),
        v: min(max(origin.v + distance * sin(angle), -3_000), 3_000))
      let stop = grid.streetPoint(near: target, horizontal: random.chance(0.5), random: &random)
      let runs =
        reversed
        ? grid.route(from: stop, to: anchor, random: &random) : grid.route(from: anchor, to: stop, random: &random)
      let length = runs.reduce(0) { $0 + $1.length }
      if length >= minimumLegDistance { return (stop, runs) }
      if best == nil || length > best!.1.reduce(0, { $0 + $1.length }) { best = (stop, runs) }
    }
    return best!
  }

  /// Densifies `runs` and gives every edge a speed: the street's cruising speed, slower near turns
  /// and stops (as if braking at 1 m/s²), and much slower inside 0–2 traffic zones.
  private static func makeLeg(
    runs: [RouteRun], departure: Double, routeComputedAt: Double, driverFactor: Double, grid: StreetGrid,
    random: inout SimulationRandom
  ) -> Leg {
    // Dense points on the straight grid; the corner at the end of every run but the last slows the vehicle.
    var gridPoints = [runs[0].from]
    var arterial: [Bool] = []
    var corners: [Int] = []
    for (r, run) in runs.enumerated() {
      let pieces = max(1, Int((run.length / 35).rounded(.up)))
      for piece in 1...pieces {
        let t = Double(piece) / Double(pieces)
        gridPoints.append(
          piece == pieces
            ? run.to
            : GridPoint(u: run.from.u + (run.to.u - run.from.u) * t, v: run.from.v + (run.to.v - run.from.v) * t))
        arterial.append(run.arterial)
      }
      if r < runs.count - 1 { corners.append(gridPoints.count - 1) }
    }
    // Then bent onto the city's streets; distances and headings are measured on the bent points.
    let points = gridPoints.map(grid.warped)
    var distances = [0.0]
    distances.reserveCapacity(points.count)
    for edge in 0..<(points.count - 1) {
      let du = points[edge + 1].u - points[edge].u
      let dv = points[edge + 1].v - points[edge].v
      distances.append(distances[edge] + (du * du + dv * dv).squareRoot())
    }
    let total = distances[distances.count - 1]
    var slowPoints: [(distance: Double, speed: Double)] = [(0, 2.5)]
    for corner in corners { slowPoints.append((distances[corner], random.uniform(4.2, 5.6))) }
    slowPoints.append((total, 2.5))

    // Traffic zones: none for about half the legs, SLOW or TRAFFIC_JAM stretches of 150–450 m otherwise.
    let zoneRoll = random.unit()
    let zoneCount = zoneRoll < 0.45 ? 0 : zoneRoll < 0.85 ? 1 : 2
    var zones: [(start: Double, end: Double, speed: SpeedReadingInterval.Speed)] = []
    for _ in 0..<zoneCount {
      let length = min(random.uniform(150, 450), total * 0.6)
      let start = random.uniform(0, total - length)
      zones.append((start, start + length, random.chance(0.65) ? .slow : .trafficJam))
    }

    var speeds: [Double] = []
    var classes: [SpeedReadingInterval.Speed] = []
    var headings: [Int32] = []
    speeds.reserveCapacity(points.count - 1)
    for edge in 0..<(points.count - 1) {
      let middle = (distances[edge] + distances[edge + 1]) / 2
      let cruise = (arterial[edge] ? 12.0 : 8.3) * driverFactor
      var speed = cruise
      for slow in slowPoints {
        speed = min(speed, (slow.speed * slow.speed + 2 * 1.0 * abs(middle - slow.distance)).squareRoot())
      }
      var trafficClass = SpeedReadingInterval.Speed.normal
      for zone in zones where middle >= zone.start && middle < zone.end {
        if zone.speed == .trafficJam || trafficClass == .normal { trafficClass = zone.speed }
      }
      switch trafficClass {
      case .slow: speed = max(min(speed, cruise * 0.5), 1.5)
      case .trafficJam: speed = max(min(speed, cruise * 0.22), 1.5)
      default: break
      }
      speeds.append(speed)
      classes.append(trafficClass)
      headings.append(grid.heading(from: points[edge], to: points[edge + 1]))
    }

    var times = [0.0]
    times.reserveCapacity(points.count)
    for edge in speeds.indices {
      times.append(times[edge] + (distances[edge + 1] - distances[edge]) / speeds[edge])
    }

    // Intervals over point indices: edge k spans points k...k+1; neighbours share their boundary point.
    var intervals: [SpeedReadingInterval] = []
    var runStart = 0
    for edge in 1...classes.count where edge == classes.count || classes[edge] != classes[runStart] {
      var interval = SpeedReadingInterval()
      interval.startPolylinePointIndex = Int32(runStart)
      interval.endPolylinePointIndex = Int32(edge)
      interval.speed = classes[runStart]
      intervals.append(interval)
      runStart = edge
    }

    let path = points.map(grid.latLng)
    let encoded = EncodedPolyline.encode(path)
    var trafficPolyline = ConsumableTrafficPolyline()
    trafficPolyline.speedReadingInterval = intervals
    trafficPolyline.encodedPathToWaypoint = encoded
    return Leg(
      path: LatLngPath(path), cumulativeDistances: distances, cumulativeTimes: times, speeds: speeds,
      headings: headings,
      traffic: intervals, departure: departure, routeComputedAt: routeComputedAt, encodedPath: encoded,
      trafficPolyline: trafficPolyline)
  }
}

extension RouteRun {
  /// The run's length (m); runs are axis-aligned.
  var length: Double { abs(to.u - from.u) + abs(to.v - from.v) }
}
