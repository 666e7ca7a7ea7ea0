// Tests/FleetSimTests/SimulationTestSupport.swift - helpers for the trip simulation tests

import FleetEngineMessages
import FleetSim

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The simulation start used throughout: an arbitrary fixed Unix time.
let simulationStart = 1_700_000_000.0

/// A simulator of `tripCount` trips with `seed`, starting at `simulationStart`.
func makeSimulator(tripCount: Int = 500, seed: UInt64 = 1, speedup: Double = 1) -> TripSimulator {
  TripSimulator(
    configuration: SimulationConfiguration(
      tripCount: tripCount, seed: seed, startTime: simulationStart, speedup: speedup))
}

/// Metres per degree of latitude (mean Earth radius), as the simulator projects.
let metersPerDegree = 6_371_008.8 * Double.pi / 180

/// The (east, north) offset in metres from `a` to `b` (flat Earth: exact enough within a city).
func offset(from a: LatLng, to b: LatLng) -> (east: Double, north: Double) {
  let east = (b.longitude - a.longitude) * metersPerDegree * cos(a.latitude * Double.pi / 180)
  let north = (b.latitude - a.latitude) * metersPerDegree
  return (east, north)
}

/// The distance in metres between two nearby points.
func distance(_ a: LatLng, _ b: LatLng) -> Double {
  let (east, north) = offset(from: a, to: b)
  return (east * east + north * north).squareRoot()
}

/// The compass bearing in degrees [0, 360) from `a` to `b`.
func bearing(from a: LatLng, to b: LatLng) -> Double {
  let (east, north) = offset(from: a, to: b)
  let degrees = atan2(east, north) * 180 / Double.pi
  return degrees < 0 ? degrees + 360 : degrees
}

/// The smallest difference between two compass angles, in degrees.
func angleDifference(_ a: Double, _ b: Double) -> Double {
  let difference = abs(a - b).truncatingRemainder(dividingBy: 360)
  return min(difference, 360 - difference)
}

/// A duration or timestamp as seconds.
func seconds(_ duration: ProtobufDuration?) -> Double? { duration.map(\.timeInterval) }
func seconds(_ timestamp: Timestamp?) -> Double? { timestamp.map(\.unixTime) }

/// Whether the status is one of the driving ones.
func isEnroute(_ status: TripStatus) -> Bool {
  status == .enrouteToPickup || status == .enrouteToIntermediateDestination || status == .enrouteToDropoff
}

/// The statuses a trip may move to from `status`, given whether it has intermediate destinations left.
func allowedNext(_ status: TripStatus) -> Set<TripStatus> {
  switch status {
  case .new: [.enrouteToPickup, .canceled]
  case .enrouteToPickup: [.arrivedAtPickup, .canceled]
  case .arrivedAtPickup: [.enrouteToIntermediateDestination, .enrouteToDropoff, .canceled]
  case .enrouteToIntermediateDestination: [.arrivedAtIntermediateDestination]
  case .arrivedAtIntermediateDestination: [.enrouteToIntermediateDestination, .enrouteToDropoff]
  case .enrouteToDropoff: [.complete]
  default: []
  }
}

/// Snapshots of trip `index` every `step` simulated seconds from `from` until a little after it finishes.
func trace(
  _ simulator: TripSimulator, index: Int, step: Double = 1, from start: Double = -5,
  routeFormat: PolylineFormatType = .latLngListType
) -> [(seconds: Double, trip: Trip)] {
  let end = simulator.plan(index: index).finishTime + 3
  var result: [(seconds: Double, trip: Trip)] = []
  var time = start
  while time <= end {
    result.append((time, simulator.trip(index: index, atSimulatedSeconds: time, routeFormat: routeFormat)))
    time += step
  }
  return result
}
