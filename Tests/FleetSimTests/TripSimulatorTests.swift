// Tests/FleetSimTests/TripSimulatorTests.swift - the deterministic trip simulation behaves like trips do

import FleetEngineMessages
import FleetSim
import ProtoWire
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("Trip simulation")
struct TripSimulatorTests {
  // MARK: - Status timeline

  @Test func statusesFollowTheAllowedOrderFor500Trips() {
    let simulator = makeSimulator(tripCount: 500)
    var canceled = 0
    for index in 0..<500 {
      let plan = simulator.plan(index: index)
      // Every second around each phase boundary, and every 10 s in between: no phase is skipped.
      var times = Set(stride(from: -5.0, through: plan.finishTime + 5, by: 10))
      for phase in plan.phases {
        for delta in [-1.0, -0.001, 0, 0.001, 1] { times.insert(phase.start + delta) }
      }
      var statuses: [TripStatus] = []
      var sawPickup = false
      for time in times.sorted() {
        let trip = simulator.trip(index: index, atSimulatedSeconds: time)
        if statuses.last != trip.tripStatus { statuses.append(trip.tripStatus) }
        if trip.actualPickupPoint != nil { sawPickup = true }
      }
      #expect(statuses.first == .new, "trip \(index) starts NEW")
      for (from, to) in zip(statuses, statuses.dropFirst()) {
        #expect(allowedNext(from).contains(to), "trip \(index): \(from.protoName) → \(to.protoName)")
      }
      #expect(
        statuses.filter { $0 == .enrouteToIntermediateDestination }.count == plan.intermediateDestinationCount
          || statuses.last == .canceled)
      if statuses.last == .canceled {
        canceled += 1
        #expect(!sawPickup, "trip \(index) canceled after the pickup")
        #expect(statuses.allSatisfy { [.new, .enrouteToPickup, .arrivedAtPickup, .canceled].contains($0) })
      } else {
        #expect(statuses.last == .complete, "trip \(index) ends \(statuses.last?.protoName ?? "-")")
        #expect(statuses.contains(.arrivedAtPickup) && statuses.contains(.enrouteToDropoff))
      }
      // Final states stay.
      let final = simulator.trip(index: index, atSimulatedSeconds: plan.finishTime + 1)
      let muchLater = simulator.trip(index: index, atSimulatedSeconds: plan.finishTime + 86_400)
      #expect(final.serializedBytes() == muchLater.serializedBytes())
      #expect(simulator.isFinished(index: index, atSimulatedSeconds: plan.finishTime))
      #expect(!simulator.isFinished(index: index, atSimulatedSeconds: plan.finishTime - 0.5))
    }
    // About one trip in ten is canceled.
    #expect((20...80).contains(canceled), "\(canceled) of 500 canceled")
  }

  @Test func tripShapesArePlausible() {
    let simulator = makeSimulator(tripCount: 500)
    var durations: [Double] = []
    var withIntermediates = 0
    var shared = 0
    for index in 0..<500 {
      let plan = simulator.plan(index: index)
      if plan.canceledAt == nil { durations.append(plan.finishTime / 60) }
      if plan.intermediateDestinationCount > 0 { withIntermediates += 1 }
      if plan.tripType == .shared { shared += 1 }
      #expect((-20..<0).contains(plan.createdAt), "booking time of trip \(index)")
      #expect((10..<80).contains(plan.legs[0].departure), "NEW phase of trip \(index)")
      #expect((0...2).contains(plan.intermediateDestinationCount))
      #expect((1...4).contains(plan.numberOfPassengers))
      #expect(plan.legs.count == plan.stops.count)
      for (k, leg) in plan.legs.enumerated() {
        #expect(leg.distance >= 250, "leg \(k) of trip \(index) is \(leg.distance) m")
        #expect(leg.path.last == plan.stops[k].location)
        if k > 0 { #expect(leg.path.first == plan.stops[k - 1].location) }
        // Points every 20–50 m, except short pieces between close corners.
        let spacing = leg.distance / Double(leg.path.count - 1)
        #expect((15...50).contains(spacing), "spacing \(spacing) m")
        #expect(leg.speeds.allSatisfy { $0 >= 1.5 && $0 <= 50 / 3.6 }, "speeds of trip \(index) leg \(k)")
      }
    }
    durations.sort()
    let median = durations[durations.count / 2]
    #expect((7...15).contains(median), "median trip takes \(median) min")
    #expect(durations.first! >= 3 && durations.last! <= 30)
    #expect((75...175).contains(withIntermediates), "\(withIntermediates) of 500 with intermediate destinations")
    #expect((20...80).contains(shared), "\(shared) of 500 shared")
  }

  // MARK: - Movement

  @Test func etaAndRemainingFiguresNeverGrowWithinALeg() {
    let simulator = makeSimulator(tripCount: 60)
    var checkedSteps = 0
    for index in 0..<60 {
      let steps = trace(simulator, index: index)
      for (previous, current) in zip(steps, steps.dropFirst()) {
        let a = previous.trip
        let b = current.trip
        guard a.tripStatus == b.tripStatus, isEnroute(b.tripStatus),
          a.intermediateDestinationIndex == b.intermediateDestinationIndex
        else { continue }
        checkedSteps += 1
        let remainingA = seconds(a.remainingTimeToFirstWaypoint)!
        let remainingB = seconds(b.remainingTimeToFirstWaypoint)!
        #expect(remainingB <= remainingA, "remaining time grew on trip \(index) at \(current.seconds)")
        #expect(abs((remainingA - remainingB) - 1) < 1e-6, "remaining time falls one second per second")
        #expect(seconds(b.etaToFirstWaypoint)! <= seconds(a.etaToFirstWaypoint)!)
        #expect(b.remainingDistanceMeters!.value <= a.remainingDistanceMeters!.value)
        // The ETA is the server time plus the remaining time.
        let serverTime = seconds(b.lastLocation?.serverTime)!
        #expect(abs(seconds(b.etaToFirstWaypoint)! - (serverTime + remainingB)) < 1e-3)
      }
    }
    #expect(checkedSteps > 20_000)
  }

  @Test func vehicleStaysInTheCityAndMovesAtCitySpeeds() {
    let simulator = makeSimulator(tripCount: 60)
    let center = LatLng(latitude: 52.3676, longitude: 4.9041)
    var maximumSpeed = 0.0
    var moving = 0
    for index in 0..<60 {
      let steps = trace(simulator, index: index)
      for (previous, current) in zip(steps, steps.dropFirst()) {
        let a = previous.trip.lastLocation!.location!
        let b = current.trip.lastLocation!.location!
        #expect(distance(center, b) < 5_000, "trip \(index) at \(distance(center, b)) m from the centre")
        let speed = distance(a, b) / (current.seconds - previous.seconds)
        maximumSpeed = max(maximumSpeed, speed)
        if speed > 0.5 { moving += 1 }
        #expect(speed < 60 / 3.6, "trip \(index) moved \(speed * 3.6) km/h at \(current.seconds)")
        let reported = current.trip.lastLocation!.speed!.value
        #expect(reported >= 0 && reported < 60 / 3.6)
        #expect(current.trip.lastLocation!.speedKmph!.value == Int32((reported * 3.6).rounded()))
        if !isEnroute(current.trip.tripStatus) { #expect(reported == 0) }
      }
    }
    // And it does move, at city speeds.
    #expect(maximumSpeed > 25 / 3.6)
    #expect(moving > 10_000)
  }

  @Test func headingIsTheDirectionOfTravel() {
    let simulator = makeSimulator(tripCount: 40)
    var checked = 0
    var headings = Set<Int32>()
    for index in 0..<40 {
      let plan = simulator.plan(index: index)
      var time = plan.legs[0].departure + 0.5
      while time < plan.finishTime {
        let now = simulator.trip(index: index, atSimulatedSeconds: time)
        let soon = simulator.trip(index: index, atSimulatedSeconds: time + 0.2)
        let heading = now.lastLocation!.heading!.value
        #expect((0..<360).contains(heading))
        // Within one straight run (not across a corner), the heading is where the vehicle goes.
        if isEnroute(now.tripStatus), soon.tripStatus == now.tripStatus,
          soon.lastLocation!.heading == now.lastLocation!.heading
        {
          let a = now.lastLocation!.location!
          let b = soon.lastLocation!.location!
          if distance(a, b) > 0.1 {
            let travel = bearing(from: a, to: b)
            #expect(angleDifference(travel, Double(heading)) <= 1, "trip \(index) at \(time): \(heading) vs \(travel)")
            checked += 1
            headings.insert(heading)
          }
        }
        time += 1.7
      }
    }
    #expect(checked > 5_000)
    // Rotated, gently bending streets: headings are not just four directions.
    #expect(headings.count >= 20)
  }

  // MARK: - Determinism

  @Test func sameConfigurationGivesIdenticalBytes() {
    let a = makeSimulator(tripCount: 200, seed: 42)
    let b = TripSimulator(
      configuration: SimulationConfiguration(tripCount: 200, seed: 42, startTime: simulationStart),
      planCacheCapacity: 0)  // no cache: every call plans afresh
    for index in stride(from: 0, to: 200, by: 7) {
      for time in stride(from: -10.0, through: 1_500, by: 37.3) {
        for format in [PolylineFormatType.latLngListType, .encodedPolylineType] {
          let x = a.trip(index: index, atSimulatedSeconds: time, routeFormat: format).serializedBytes()
          let y = b.trip(index: index, atSimulatedSeconds: time, routeFormat: format).serializedBytes()
          #expect(x == y, "trip \(index) at \(time)")
        }
      }
    }
    // Evaluation order does not matter: a fresh simulator asked in reverse agrees too.
    let c = makeSimulator(tripCount: 200, seed: 42)
    for index in stride(from: 199, through: 0, by: -13) {
      #expect(
        c.trip(index: index, atSimulatedSeconds: 400).serializedBytes()
          == a.trip(index: index, atSimulatedSeconds: 400).serializedBytes())
    }
  }

  @Test func differentSeedsGiveDifferentTrips() {
    let a = makeSimulator(tripCount: 50, seed: 1)
    let b = makeSimulator(tripCount: 50, seed: 2)
    var differing = 0
    for index in 0..<50 {
      let x = a.trip(index: index, atSimulatedSeconds: 300)
      let y = b.trip(index: index, atSimulatedSeconds: 300)
      if x.serializedBytes() != y.serializedBytes() { differing += 1 }
      #expect(x.pickupPoint != y.pickupPoint)
    }
    #expect(differing == 50)
    // And different trips of one seed differ from each other.
    #expect(a.plan(index: 0).stops != a.plan(index: 1).stops)
  }

  // MARK: - Versions

  @Test func versionsChangeOnlyWhenALegBeginsOrEnds() {
    let simulator = makeSimulator(tripCount: 60)
    var versionChanges = 0
    for index in 0..<60 {
      let steps = trace(simulator, index: index, step: 1, from: 0)
      let first = steps[0].trip
      for (previous, current) in zip(steps, steps.dropFirst()) {
        let a = previous.trip
        let b = current.trip
        let legChanged = a.tripStatus != b.tripStatus
        let versionsChanged =
          a.currentRouteSegmentVersion != b.currentRouteSegmentVersion
          || a.currentRouteSegmentTrafficVersion != b.currentRouteSegmentTrafficVersion
          || a.remainingWaypointsVersion != b.remainingWaypointsVersion
          || a.remainingWaypointsRouteVersion != b.remainingWaypointsRouteVersion
        if versionsChanged {
          versionChanges += 1
          #expect(legChanged, "trip \(index): a version changed at \(current.seconds) without a leg change")
        }
        // What the versions cover never changes without its version.
        if a.route != b.route { #expect(a.currentRouteSegmentVersion != b.currentRouteSegmentVersion) }
        if a.currentRouteSegmentTraffic != b.currentRouteSegmentTraffic {
          #expect(a.currentRouteSegmentTrafficVersion != b.currentRouteSegmentTrafficVersion)
        }
        if a.remainingWaypoints.map(\.tripId) != b.remainingWaypoints.map(\.tripId)
          || a.remainingWaypoints.map(\.waypointType) != b.remainingWaypoints.map(\.waypointType)
          || a.remainingWaypoints.count != b.remainingWaypoints.count
        {
          #expect(a.remainingWaypointsVersion != b.remainingWaypointsVersion)
        }
        if a.remainingWaypoints.map(\.pathToWaypoint) != b.remainingWaypoints.map(\.pathToWaypoint) {
          #expect(a.remainingWaypointsRouteVersion != b.remainingWaypointsRouteVersion)
        }
        // Versions move forward and are never later than the snapshot.
        if let version = seconds(b.currentRouteSegmentVersion), let before = seconds(a.currentRouteSegmentVersion) {
          #expect(version >= before)
          #expect(version <= simulationStart + current.seconds + 1e-6)
        }
        #expect(b.intermediateDestinationsVersion == first.intermediateDestinationsVersion)
      }
    }
    #expect(versionChanges > 60)
  }

  // MARK: - Route formats

  @Test func encodedAndLatLngRoutesAreTheSamePoints() throws {
    let simulator = makeSimulator(tripCount: 100)
    var compared = 0
    for index in 0..<100 {
      let plan = simulator.plan(index: index)
      for time in stride(from: 0, to: plan.finishTime + 10, by: 45.0) {
        let list = simulator.trip(index: index, atSimulatedSeconds: time, routeFormat: .latLngListType)
        let encoded = simulator.trip(index: index, atSimulatedSeconds: time, routeFormat: .encodedPolylineType)
        let unknown = simulator.trip(index: index, atSimulatedSeconds: time, routeFormat: .unknownFormatType)
        #expect(unknown == list, "an unspecified format means LatLng lists")
        #expect(list.currentRouteSegment.isEmpty && encoded.route.isEmpty)
        #expect(list.route.isEmpty == encoded.currentRouteSegment.isEmpty)
        let decoded = try #require(EncodedPolyline.decode(encoded.currentRouteSegment))
        try expectSamePoints(decoded, Array(list.route))
        if let traffic = list.currentRouteSegmentTraffic {
          // The traffic's path is the route, its intervals cover it end to end without gaps.
          try expectSamePoints(try #require(EncodedPolyline.decode(traffic.encodedPathToWaypoint)), Array(list.route))
          let intervals = traffic.speedReadingInterval
          #expect(intervals.first?.startPolylinePointIndex == 0)
          #expect(intervals.last.map { Int($0.endPolylinePointIndex) } == list.route.count - 1)
          for (x, y) in zip(intervals, intervals.dropFirst()) {
            #expect(x.endPolylinePointIndex == y.startPolylinePointIndex && x.speed != y.speed)
          }
        }
        #expect(list.remainingWaypoints.count == encoded.remainingWaypoints.count)
        for (w, e) in zip(list.remainingWaypoints, encoded.remainingWaypoints) {
          #expect(w.encodedPathToWaypoint.isEmpty && e.pathToWaypoint.isEmpty)
          try expectSamePoints(try #require(EncodedPolyline.decode(e.encodedPathToWaypoint)), Array(w.pathToWaypoint))
        }
        // Apart from the route's form, the two are the same trip.
        var a = list
        var b = encoded
        a.route = []
        b.currentRouteSegment = ""
        for k in a.remainingWaypoints.indices { a.remainingWaypoints[k].pathToWaypoint = [] }
        for k in b.remainingWaypoints.indices { b.remainingWaypoints[k].encodedPathToWaypoint = "" }
        #expect(a == b)
        compared += 1
      }
    }
    #expect(compared > 1_000)
  }

  private func expectSamePoints(_ decoded: [LatLng], _ points: [LatLng]) throws {
    try #require(decoded.count == points.count)
    for (x, y) in zip(decoded, points) {
      #expect(abs(x.latitude - y.latitude) <= 1e-5 && abs(x.longitude - y.longitude) <= 1e-5)
    }
  }

  // MARK: - Names and time

  @Test func tripNamesResolveExactly() {
    let simulator = makeSimulator(tripCount: 25)
    for index in 0..<25 {
      #expect(simulator.tripName(index: index) == "providers/demo/trips/trip-\(index)")
      #expect(simulator.tripIndex(forName: "providers/demo/trips/trip-\(index)") == index)
      #expect(simulator.trip(index: index, atSimulatedSeconds: 0).name == simulator.tripName(index: index))
    }
    let rejected = [
      "providers/demo/trips/trip-25", "providers/demo/trips/trip-100", "providers/demo/trips/trip--1",
      "providers/demo/trips/trip-01", "providers/demo/trips/trip-00", "providers/demo/trips/trip-+1",
      "providers/demo/trips/trip- 1", "providers/demo/trips/trip-1 ", "providers/demo/trips/trip-1/",
      "providers/demo/trips/trip-", "providers/demo/trips/trip", "providers/demo/trips/Trip-1",
      "providers/other/trips/trip-1", "providers/demo/trips/trip-1x", "providers/demo/trips/trip-\u{0661}",
      "providers/demo/trips/trip-99999999999999999999999", "providers/demo/trips/trip-9223372036854775807",
      "/providers/demo/trips/trip-1", "providers/demo/vehicles/trip-1", "", "trip-1",
    ]
    for name in rejected {
      #expect(simulator.tripIndex(forName: name) == nil, "\(name)")
    }
    let other = TripSimulator(
      configuration: SimulationConfiguration(provider: "acme-rides", tripCount: 3, startTime: simulationStart))
    #expect(other.tripIndex(forName: "providers/acme-rides/trips/trip-2") == 2)
    #expect(other.tripIndex(forName: "providers/demo/trips/trip-2") == nil)
    #expect(other.trip(index: 2, atSimulatedSeconds: 0).name == "providers/acme-rides/trips/trip-2")
    // A huge simulation plans nothing up front, and any trip of it can be asked for.
    let huge = makeSimulator(tripCount: 1_000_000)
    #expect(huge.tripIndex(forName: "providers/demo/trips/trip-999999") == 999_999)
    #expect(huge.trip(index: 999_999, atSimulatedSeconds: 100).vehicleId == "vehicle-999999")
  }

  @Test func timeScalesWithSpeedup() {
    let fast = makeSimulator(tripCount: 5, speedup: 4)
    #expect(fast.simulatedSeconds(atUnixTime: simulationStart + 10) == 40)
    #expect(fast.simulatedSeconds(atUnixTime: simulationStart - 1) == -4)
    #expect(fast.unixTime(atSimulatedSeconds: 40) == simulationStart + 10)
    let slow = makeSimulator(tripCount: 5, speedup: 1)
    for index in 0..<5 where fast.plan(index: index).canceledAt == nil {
      let plan = fast.plan(index: index)
      let time = plan.legs[0].departure + 30
      let a = fast.trip(index: index, atSimulatedSeconds: time)
      let b = slow.trip(index: index, atSimulatedSeconds: time)
      // The same place in the simulation, stamped on a four-times-faster wall clock.
      #expect(a.lastLocation?.location == b.lastLocation?.location)
      #expect(a.lastLocation?.speed == b.lastLocation?.speed)
      #expect(seconds(a.lastLocation?.serverTime)! == simulationStart + time / 4)
      #expect(abs(seconds(a.remainingTimeToFirstWaypoint)! * 4 - seconds(b.remainingTimeToFirstWaypoint)!) < 1e-6)
      #expect(abs(seconds(a.etaToFirstWaypoint)! - (simulationStart + plan.legs[0].arrival / 4)) < 1e-6)
    }
  }

  @Test func extremeTimesDoNotTrap() {
    let simulator = makeSimulator(tripCount: 3)
    for time in [Double.nan, .infinity, -.infinity, 1e300, -1e300, -1e6, 1e9] {
      let trip = simulator.trip(index: 1, atSimulatedSeconds: time)
      #expect(trip.name == "providers/demo/trips/trip-1")
    }
    #expect(simulator.trip(index: 1, atSimulatedSeconds: -1e6).tripStatus == .new)
    let forever = simulator.trip(index: 1, atSimulatedSeconds: .infinity)
    #expect(forever.tripStatus == simulator.trip(index: 1, atSimulatedSeconds: 1e9).tripStatus)
    #expect(simulator.isFinished(index: 1, atSimulatedSeconds: .infinity))
  }

  // MARK: - What a consumer sees

  @Test func snapshotsCarryWhatAConsumerShows() throws {
    let simulator = makeSimulator(tripCount: 200)
    let withStops = try #require((0..<200).first { simulator.plan(index: $0).intermediateDestinationCount == 2 })
    let plan = simulator.plan(index: withStops)
    #expect(plan.canceledAt == nil)

    // NEW: the vehicle waits at its start with the route to the pickup planned.
    let new = simulator.trip(index: withStops, atSimulatedSeconds: 5)
    #expect(new.tripStatus == .new && new.view == .journeySharingV1S && new.tripType != .unknownTripType)
    #expect(new.vehicleId == "vehicle-\(withStops)" && new.numberOfPassengers >= 1)
    #expect(new.lastLocation?.speed?.value == 0 && new.lastLocation?.location == plan.legs[0].path[0])
    #expect(
      new.remainingWaypoints.map(\.waypointType) == [
        .pickupWaypointType, .intermediateDestinationWaypointType, .intermediateDestinationWaypointType,
        .dropOffWaypointType,
      ])
    #expect(new.intermediateDestinations.count == 2 && new.intermediateDestinationsVersion != nil)
    #expect(new.actualPickupArrivalPoint == nil && new.actualPickupPoint == nil)

    // Driving to the second intermediate destination.
    let leg = plan.legs[2]
    let driving = simulator.trip(index: withStops, atSimulatedSeconds: leg.departure + leg.duration / 2)
    #expect(driving.tripStatus == .enrouteToIntermediateDestination && driving.intermediateDestinationIndex == 1)
    #expect(driving.route == leg.path)
    #expect(driving.currentRouteSegmentEndPoint?.waypointType == .intermediateDestinationWaypointType)
    #expect(driving.currentRouteSegmentEndPoint?.location?.point == plan.stops[2].location)
    #expect(driving.currentRouteSegmentEndPoint?.tripId == "trip-\(withStops)")
    #expect(driving.remainingWaypoints.count == 2)
    #expect(driving.remainingWaypoints[0].distanceMeters?.value == Int32(leg.distance.rounded()))
    #expect(seconds(driving.remainingWaypoints[1].eta) == simulationStart + plan.stops[3].arrival)
    let remaining = Double(driving.remainingDistanceMeters!.value)
    #expect(remaining > 0 && remaining < leg.distance)
    #expect(driving.lastLocation?.locationSensor == .roadSnappedLocationProvider)
    #expect(driving.lastLocation?.isRoadSnapped?.value == true && driving.lastLocationSnappable)
    #expect(driving.actualPickupPoint != nil && driving.actualPickupArrivalPoint != nil)
    #expect(driving.actualIntermediateDestinationArrivalPoints.count == 1)
    #expect(driving.actualIntermediateDestinations.count == 1)
    #expect(seconds(driving.pickupTime) == simulationStart + plan.stops[0].departure)  // actual by now
    #expect(driving.vehicleWaypoints.isEmpty)  // GetTrip never returns them

    // Waiting at it: no route, nothing left to drive.
    let waiting = simulator.trip(index: withStops, atSimulatedSeconds: leg.arrival + 1)
    #expect(waiting.tripStatus == .arrivedAtIntermediateDestination && waiting.intermediateDestinationIndex == 1)
    #expect(waiting.route.isEmpty && waiting.currentRouteSegmentTraffic == nil)
    #expect(waiting.remainingDistanceMeters?.value == 0 && seconds(waiting.remainingTimeToFirstWaypoint) == 0)
    #expect(waiting.remainingWaypoints.first?.pathToWaypoint.isEmpty == true)
    #expect(waiting.remainingWaypoints.count == 2)
    #expect(waiting.lastLocation?.location == plan.stops[2].location)

    // COMPLETE: where it ended, nothing left.
    let done = simulator.trip(index: withStops, atSimulatedSeconds: plan.finishTime + 60)
    #expect(done.tripStatus == .complete)
    #expect(done.route.isEmpty && done.currentRouteSegment.isEmpty && done.remainingWaypoints.isEmpty)
    #expect(done.currentRouteSegmentTraffic == nil && done.etaToFirstWaypoint == nil)
    #expect(done.lastLocation?.location == plan.stops[3].location)
    #expect(seconds(done.lastLocation?.updateTime) == simulationStart + plan.finishTime)
    #expect(seconds(done.actualDropoffPoint?.timestamp) == simulationStart + plan.finishTime)
    #expect(seconds(done.dropoffTime) == simulationStart + plan.finishTime)
    #expect(done.actualIntermediateDestinations.count == 2)
  }

  @Test func canceledTripsStopWhereTheyWere() throws {
    let simulator = makeSimulator(tripCount: 200)
    let index = try #require((0..<200).first { simulator.plan(index: $0).canceledAt != nil })
    let plan = simulator.plan(index: index)
    let canceledAt = try #require(plan.canceledAt)
    let before = simulator.trip(index: index, atSimulatedSeconds: canceledAt - 0.01)
    let after = simulator.trip(index: index, atSimulatedSeconds: canceledAt + 600)
    #expect(after.tripStatus == .canceled)
    #expect(after.remainingWaypoints.isEmpty && after.route.isEmpty && after.pickupTime == nil)
    #expect(after.dropoffTime == nil && after.actualPickupPoint == nil)
    #expect(distance(before.lastLocation!.location!, after.lastLocation!.location!) < 1)
    #expect(after.lastLocation?.speed?.value == 0)
    #expect(seconds(after.lastLocation?.updateTime)! == simulationStart + canceledAt)
    #expect(simulator.isFinished(index: index, atSimulatedSeconds: canceledAt))
  }

  @Test func streamingUpdatesRebuildTheSnapshots() throws {
    // What the server does with two snapshots, and what a client does with the update, agree.
    let simulator = makeSimulator(tripCount: 20)
    var sizes: [Int] = []
    for index in 0..<20 {
      var client = Trip()
      var last: Trip?
      for step in trace(simulator, index: index, step: 1, routeFormat: .encodedPolylineType) {
        var update = TripUpdate()
        if let last {
          let changed = step.trip.changedFields(from: last)
          if changed.isEmpty { continue }
          update.trip = step.trip.projected(onto: changed)
          update.updatedFields = changed
          sizes.append(update.serializedBytes().count)
        } else {
          update.trip = step.trip
          update.fullTrip = true
        }
        client.apply(try TripUpdate(serializedBytes: update.serializedBytes()))
        #expect(client == step.trip)
        last = step.trip
      }
    }
    // Most updates are a moving vehicle: small.
    sizes.sort()
    #expect(sizes[sizes.count / 2] < 200, "median update \(sizes[sizes.count / 2]) bytes")
  }
}

@Suite("Simulation defaults")
struct SimulationDefaultTests {
  @Test("An embedded simulator's trips start when its configuration is made, unless a start time is given")
  func startTimeDefaultsToNow() {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let wall = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    let configuration = SimulationConfiguration(tripCount: 1)
    #expect(abs(configuration.startTime - wall) < 5, "startTime \(configuration.startTime), now \(wall)")
    #expect(abs(SimulationConfiguration().startTime - wall) < 5)
    #expect(SimulationConfiguration(startTime: 1_000).startTime == 1_000)
    // So the first trip is NEW now, not long finished.
    let simulator = TripSimulator(configuration: configuration)
    let trip = simulator.trip(index: 0, atSimulatedSeconds: simulator.simulatedSeconds(atUnixTime: wall))
    #expect(trip.tripStatus != .complete && trip.tripStatus != .canceled, "\(trip.tripStatus)")
  }
}
