// Tests/JourneySharingTests/TripStateTests.swift - merging updates incrementally gives what deriving afresh gives
//
// TripState reuses derived values whose inputs an update did not touch, and reuses a snapshot's storage when
// nothing else holds it. Both are checked against a snapshot derived from scratch from the same trip, over the
// updates FleetSim would send for whole simulated trips (computed here, without a server).

import FleetEngineMessages
import FleetSim
import HTTP2Transport
import Primitives
import TestSupport
import Testing

@_spi(Benchmarks) @testable import JourneySharing

/// The updates FleetSim's streaming GetTrip sends for trip `index` sampled every `step` simulated seconds:
/// the full trip, then the changed fields.
private func streamUpdates(_ simulator: TripSimulator, index: Int, step: Double) -> [(TripUpdate, Trip)] {
  let plan = simulator.plan(index: index)
  var last = simulator.trip(index: index, atSimulatedSeconds: -60)
  var first = TripUpdate()
  first.trip = last
  first.fullTrip = true
  first.sequence = 1
  var updates = [(first, last)]
  var seconds = -60.0
  while seconds < plan.finishTime + step {
    seconds += step
    let trip = simulator.trip(index: index, atSimulatedSeconds: seconds)
    let changed = trip.changedFields(from: last)
    guard !changed.isEmpty else { continue }
    var update = TripUpdate()
    update.trip = trip.projected(onto: changed)
    update.updatedFields = changed
    update.sequence = UInt64(updates.count + 1)
    update.sendTime = Timestamp(unixTime: 1_750_000_000 + seconds)
    updates.append((update, trip))
    last = trip
  }
  return updates
}

/// Every stored value of two snapshots, compared (floats by value; the simulation has no NaN).
private func expectSameValues(_ a: TripSnapshot, _ b: TripSnapshot, _ comment: Comment) {
  #expect(a.trip == b.trip, comment)
  #expect(a.pickupLocation == b.pickupLocation, comment)
  #expect(a.dropoffLocation == b.dropoffLocation, comment)
  #expect(a.activeRoute == b.activeRoute, comment)
  #expect(a.activeRouteTraffic == b.activeRouteTraffic, comment)
  #expect(a.activeRouteRemainingDistance == b.activeRouteRemainingDistance, comment)
  #expect(a.remainingRoute == b.remainingRoute, comment)
  #expect(a.remainingRouteTraffic == b.remainingRouteTraffic, comment)
  #expect(a.remainingRouteDistance == b.remainingRouteDistance, comment)
  #expect(a.etaToNextWaypoint == b.etaToNextWaypoint, comment)
  #expect(a.pickupETA == b.pickupETA, comment)
  #expect(a.dropoffETA == b.dropoffETA, comment)
}

@Suite("Trip state: incremental merge and snapshot reuse")
struct TripStateTests {
  let simulator = TripSimulator(configuration: SimulationConfiguration(provider: "state", tripCount: 12, seed: 5))

  @Test(arguments: [PolylineFormatType.latLngListType, .encodedPolylineType])
  func incrementalSnapshotsEqualSnapshotsDerivedFromScratch(format: PolylineFormatType) {
    var checked = 0
    var mergedInPlace = 0
    for index in 0..<12 {
      let tripID = simulator.plan(index: index).tripID
      var state = TripState(tripID: tripID)
      var previous: TripSnapshot?
      for (update, trip) in streamUpdates(simulator, index: index, step: 7) {
        var update = update
        if format == .encodedPolylineType, var projected = update.trip {
          // Send the route as an encoded polyline, as a server asked for that format would.
          if !projected.route.isEmpty {
            projected.currentRouteSegment = EncodedPolyline.encode(projected.route)
            projected.route = []
          }
          update.trip = projected
          if update.updatedFields.contains(9) && !update.updatedFields.contains(21) {
            update.updatedFields.append(21)  // current_route_segment now carries the route
          }
        }
        let before = state.snapshot.map(ObjectIdentifier.init)
        let changes = state.apply(update)
        if before != nil && before == state.snapshot.map(ObjectIdentifier.init) { mergedInPlace += 1 }
        var expectedTrip = trip
        if format == .encodedPolylineType, !expectedTrip.route.isEmpty {
          expectedTrip.currentRouteSegment = EncodedPolyline.encode(expectedTrip.route)
          expectedTrip.route = []
        }
        let fresh = TripSnapshot(trip: expectedTrip, tripID: tripID)
        guard let snapshot = state.snapshot else {
          Issue.record("no snapshot after an update")
          return
        }
        expectSameValues(snapshot, fresh, "trip \(index), update \(update.sequence)")
        #expect(changes == fresh.changedProperties(from: previous), "trip \(index), update \(update.sequence)")
        #expect(snapshot.updateSequence == update.sequence)
        #expect(snapshot.updateSendTime == update.sendTime?.unixTime)
        previous = fresh
        checked += 1
      }
    }
    #expect(checked > 100)
    // The vehicle's progress between stops merges into the snapshot's own storage.
    #expect(mergedInPlace > checked / 4, "\(mergedInPlace) of \(checked) merged in place")
  }

  @Test func aSnapshotSomeoneHoldsNeverChangesAndAReleasedOneIsReused() throws {
    let updates = streamUpdates(simulator, index: 3, step: 5)
    try #require(updates.count > 6)
    var state = TripState(tripID: simulator.plan(index: 3).tripID)
    _ = state.apply(updates[0].0)
    _ = state.apply(updates[1].0)

    // Held outside (as a subscriber holds one during its callbacks): the next update goes elsewhere.
    let held = try #require(state.snapshot)
    let heldTrip = held.trip
    let heldRemaining = held.remainingRouteDistance
    _ = state.apply(updates[2].0)
    #expect(state.snapshot !== held)
    #expect(held.trip == heldTrip)
    #expect(held.remainingRouteDistance == heldRemaining)
    #expect(held.updateSequence == updates[1].0.sequence)

    // Nobody else holds the current one: the next update reuses its storage.
    let identity = state.snapshot.map(ObjectIdentifier.init)
    _ = state.apply(updates[3].0)
    #expect(state.snapshot.map(ObjectIdentifier.init) == identity)
    #expect(state.snapshot?.updateSequence == updates[3].0.sequence)
  }

  @Test func otherTripsWaypointsStayFilteredAcrossPartialUpdates() throws {
    var full = simulator.trip(index: 1, atSimulatedSeconds: 30)
    let tripID = simulator.plan(index: 1).tripID
    var stranger = TripWaypoint()
    stranger.tripId = "someone-else"
    stranger.waypointType = .pickupWaypointType
    full.remainingWaypoints.insert(stranger, at: min(1, full.remainingWaypoints.count))
    var first = TripUpdate()
    first.trip = full
    first.fullTrip = true
    var state = TripState(tripID: tripID)
    _ = state.apply(first)
    #expect(state.snapshot?.remainingWaypoints.contains { $0.tripId == "someone-else" } == false)

    var small = TripUpdate()
    var moved = Trip()
    var location = VehicleLocation()
    location.location = LatLng(latitude: 1, longitude: 2)
    moved.lastLocation = location
    small.trip = moved
    small.updatedFields = [11]
    let changes = state.apply(small)
    #expect(changes == [.routeLastVehicleLocation])
    #expect(state.snapshot?.remainingWaypoints.contains { $0.tripId == "someone-else" } == false)
    #expect(state.snapshot?.remainingWaypoints == TripSnapshot(trip: full, tripID: tripID).remainingWaypoints)
  }

  /// Found by the trip-merge fuzzer's checks (Tests/Fuzz/corpus/trip-merge/traffic-index-overflow.bin):
  /// a later leg's traffic indices are shifted by the earlier legs' points, which trapped on overflow.
  @Test func remainingRouteTrafficIndicesFromTheServerSaturateInsteadOfTrapping() throws {
    func leg(points: Int, traffic: [(Int32, Int32)]) -> TripWaypoint {
      var waypoint = TripWaypoint()
      waypoint.tripId = "t"
      waypoint.pathToWaypoint = LatLngPath((0..<points).map { LatLng(latitude: Double($0), longitude: 1) })
      var polyline = ConsumableTrafficPolyline()
      polyline.speedReadingInterval = traffic.map { start, end in
        var interval = SpeedReadingInterval()
        interval.startPolylinePointIndex = start
        interval.endPolylinePointIndex = end
        return interval
      }
      waypoint.trafficToWaypoint = polyline
      return waypoint
    }
    var trip = Trip()
    trip.remainingWaypoints = [
      leg(points: 2, traffic: []),  // the active route's leg: not part of the remaining route
      leg(points: 3, traffic: [(0, 2)]),
      leg(points: 2, traffic: [(.max - 1, .max), (.min, .min + 1), (0, 1)]),
    ]
    var update = TripUpdate()
    update.trip = trip
    update.fullTrip = true
    var state = TripState(tripID: "t")
    _ = state.apply(update)

    let intervals = try #require(state.snapshot?.remainingRouteTraffic?.speedReadingInterval)
    let indices = intervals.map { [$0.startPolylinePointIndex, $0.endPolylinePointIndex] }
    #expect(indices == [[0, 2], [.max, .max], [.min + 3, .min + 4], [3, 4]])
    #expect(state.snapshot?.remainingRoute.count == 5)
  }
}

/// Records, per trip, the last sequence and send time seen in the whole-snapshot callback, and the order
/// of the snapshot callback relative to the trip callback.
private final class SnapshotRecorder: TripModelSubscriber, @unchecked Sendable {
  let lock = Locked<[String: (sequence: UInt64, sent: Double?, snapshotFirst: Bool)]>([:])
  let pendingSnapshot = Locked<Set<String>>([])

  func tripModel(
    _ tripModel: TripModel, didUpdateSnapshot snapshot: TripSnapshot, updatedPropertyFields: TripPropertyFields
  ) {
    pendingSnapshot.withLock { _ = $0.insert(tripModel.tripName) }
    lock.withLock { $0[tripModel.tripName] = (snapshot.updateSequence, snapshot.updateSendTime, false) }
  }

  func tripModel(_ tripModel: TripModel, didUpdate trip: Trip?, updatedPropertyFields: TripPropertyFields) {
    let first = pendingSnapshot.withLock { $0.remove(tripModel.tripName) != nil }
    lock.withLock { $0[tripModel.tripName]?.snapshotFirst = first }
  }
}

@Suite("Pipeline harness")
struct TripPipelineHarnessTests {
  /// `encoded`: pushed as bytes, decoded as a stream decodes them (the small updates flat).
  @Test(arguments: [false, true])
  func updatesPushedReachTheSubscriberWithTheirSequenceAndSendTime(encoded: Bool) async throws {
    let recorder = SnapshotRecorder()
    let harness = try TripPipelineHarness(tripCount: 20, subscriber: recorder, deliveryThreads: 2)
    func push(_ update: TripUpdate, toTrip trip: Int) -> TripPropertyFields {
      guard encoded else { return harness.push(update, toTrip: trip) }
      return update.serializedBytes().withUnsafeBytes { harness.push(encoded: $0, toTrip: trip) }
    }
    var full = TripUpdate()
    full.trip = TripSimulator(configuration: SimulationConfiguration(tripCount: 1, seed: 2)).trip(
      index: 0, atSimulatedSeconds: 10)
    full.fullTrip = true
    full.sequence = 1
    for trip in 0..<20 { #expect(!push(full, toTrip: trip).isEmpty) }
    harness.flush()
    for step in 2...50 {
      var small = TripUpdate()
      var moved = Trip()
      var location = VehicleLocation()
      location.location = LatLng(latitude: Double(step), longitude: 1)
      moved.lastLocation = location
      small.trip = moved
      small.updatedFields = [11]
      small.sequence = UInt64(step)
      small.sendTime = Timestamp(unixTime: 1_700_000_000 + Double(step))
      for trip in 0..<20 { #expect(push(small, toTrip: trip) == [.routeLastVehicleLocation]) }
      harness.flush()
    }
    let delivered = await eventually {
      recorder.lock.withLock { seen in
        seen.count == 20 && seen.values.allSatisfy { $0.sequence == 50 && $0.snapshotFirst }
      }
    }
    #expect(delivered)
    #expect(recorder.lock.withLock { $0.values.allSatisfy { $0.sent == 1_700_000_050 } })
    await harness.shutdown()
  }
}

@Suite("Trip state: progress updates decoded flat")
struct FlatProgressUpdateTests {
  let simulator = TripSimulator(configuration: SimulationConfiguration(provider: "flat", tripCount: 8, seed: 11))

  /// Each update goes through the wire: one state takes it as the stream decodes it (flat when it is a progress
  /// update), the other decoded whole; both must hold the same snapshot and report the same changes.
  @Test func flatDecodedUpdatesGiveWhatWholeOnesGive() throws {
    var flat = 0
    var checked = 0
    for index in 0..<8 {
      let tripID = simulator.plan(index: index).tripID
      var streamed = TripState(tripID: tripID)
      var whole = TripState(tripID: tripID)
      for (update, _) in streamUpdates(simulator, index: index, step: 7) {
        let bytes = update.serializedBytes()
        let decoded = try TripUpdate(serializedBytes: bytes)
        let progress = bytes.withUnsafeBytes { TripProgressUpdate.decode($0) }
        if progress != nil { flat += 1 }
        let input: StreamedTripUpdate = progress.map { .progress($0) } ?? .full(decoded)
        let streamedChanges = try streamed.apply(input, within: nil).get()
        let wholeChanges = try whole.apply(decoded, within: nil).get()
        let a = try #require(streamed.snapshot)
        let b = try #require(whole.snapshot)
        expectSameValues(a, b, "trip \(index), update \(update.sequence)")
        #expect(streamedChanges == wholeChanges, "trip \(index), update \(update.sequence)")
        #expect(a.updateSequence == b.updateSequence)
        #expect(a.updateSendTime == b.updateSendTime)
        checked += 1
      }
    }
    #expect(checked > 50)
    // The vehicle's progress between stops is most of a trip's updates, and those decode flat.
    #expect(flat > checked / 4, "\(flat) of \(checked) decoded flat")
  }

  /// A snapshot a subscriber holds is not merged into: a flat update then takes the whole update's path.
  @Test func aHeldSnapshotIsNotMergedIntoByAFlatUpdate() throws {
    let updates = streamUpdates(simulator, index: 2, step: 5)
    var state = TripState(tripID: simulator.plan(index: 2).tripID)
    _ = state.apply(updates[0].0)
    let progressUpdate = try #require(
      updates.dropFirst().lazy.compactMap { pair in
        pair.0.serializedBytes().withUnsafeBytes { TripProgressUpdate.decode($0) }
      }.first)
    let held = try #require(state.snapshot)
    let heldLocation = held.vehicleLocation
    let changes = try state.apply(.progress(progressUpdate), within: nil).get()
    #expect(state.snapshot !== held)
    #expect(held.vehicleLocation == heldLocation)
    #expect(state.snapshot?.vehicleLocation == progressUpdate.lastLocation)
    #expect(state.snapshot?.updateSequence == progressUpdate.sequence)
    #expect(changes.contains(.routeLastVehicleLocation))
  }
}
