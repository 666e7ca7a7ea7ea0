// Tests/JourneySharingTests/TripFollowingTests.swift - whole trips through the callbacks: stream, poll, auto
//
// Each test follows trips of its own FleetSim (or of a server without the streaming method) from start to
// end and checks every callback a recording subscriber got against the simulator, which knows each trip's
// plan and final state.

import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Primitives
import TestSupport
import Testing

/// Checks everything one subscriber recorded while following trip `index` from start to end.
///
/// - The model became active first and inactive last, once each; no error.
/// - The statuses follow the trip's planned phases in order, without repeats, and the final one comes once.
/// - Every `didUpdate trip` has a non-empty property set and is followed by exactly the per-property
///   callbacks its bits call for; a status callback carries the trip's status.
/// - The last trip is the simulator's final trip.
/// - ETAs are Unix times within the simulated run.
func checkWholeTrip(
  _ recorder: RecordingSubscriber, index: Int, simulator: TripSimulator,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  let plan = simulator.plan(index: index)
  let name = simulator.tripName(index: index)
  let events = recorder.events(name)
  let label = "\(name)"

  // Model state: active first, inactive last.
  #expect(recorder.modelStates(name) == [.active, .inactive], "\(label)", sourceLocation: sourceLocation)
  if case .modelState(.active)? = events.first {
  } else {
    Issue.record("\(label): the first callback is not the model becoming active", sourceLocation: sourceLocation)
  }
  if case .modelState(.inactive)? = events.last {
  } else {
    Issue.record("\(label): the last callback is not the model becoming inactive", sourceLocation: sourceLocation)
  }
  #expect(recorder.errors(name).isEmpty, "\(label): \(recorder.errors(name))", sourceLocation: sourceLocation)

  // Statuses.
  let statuses = recorder.statuses(name)
  let finalStatus = plan.phases[plan.phases.count - 1].status
  #expect(statuses.last == finalStatus, "\(label): \(statuses.map(\.protoName))", sourceLocation: sourceLocation)
  #expect(statuses.count { isFinal($0) } == 1, "\(label): \(statuses.map(\.protoName))", sourceLocation: sourceLocation)
  #expect(
    zip(statuses, statuses.dropFirst()).allSatisfy { $0 != $1 },
    "\(label): a status repeated: \(statuses.map(\.protoName))",
    sourceLocation: sourceLocation)
  #expect(
    isInPlannedOrder(statuses, plan: plan),
    "\(label): \(statuses.map(\.protoName)) is not in the order of \(plan.phases.map(\.status.protoName))",
    sourceLocation: sourceLocation)
  #expect(
    statuses.first == .new || statuses.first == .enrouteToPickup || statuses.first == .canceled,
    "\(label): began with \(statuses.first?.protoName ?? "nothing")", sourceLocation: sourceLocation)

  // Deliveries: fields and the callbacks they call for.
  let delivered = deliveries(events)
  #expect(!delivered.isEmpty, "\(label)", sourceLocation: sourceLocation)
  for (number, delivery) in delivered.enumerated() {
    #expect(!delivery.fields.isEmpty, "\(label) delivery \(number): no fields", sourceLocation: sourceLocation)
    guard let trip = delivery.trip else {
      Issue.record("\(label) delivery \(number): didUpdate trip with a nil trip", sourceLocation: sourceLocation)
      continue
    }
    #expect(trip.name == name, sourceLocation: sourceLocation)
    let snapshot = TripSnapshot(trip: trip, tripID: plan.tripID)
    let expected = expectedCallbacks(for: delivery.fields, in: snapshot)
    let got = delivery.callbacks.map(\.rawValue)
    #expect(
      Set(delivery.callbacks) == expected && delivery.callbacks.count == expected.count,
      "\(label) delivery \(number) \(delivery.fields): callbacks \(got), expected \(expected.map(\.rawValue).sorted())",
      sourceLocation: sourceLocation)
    if let status = delivery.status {
      #expect(status == trip.tripStatus, sourceLocation: sourceLocation)
    }
    if number == 0 {
      #expect(delivery.fields.isSuperset(of: [.tripName, .tripStatus]), sourceLocation: sourceLocation)
    }
  }

  // The final state.
  let last = delivered.last?.trip
  let expectedFinal = finalTrip(of: simulator, index: index)
  #expect(
    last == expectedFinal, "\(label): the last trip delivered is not the simulator's final trip",
    sourceLocation: sourceLocation)
  #expect(last.map { isFinal($0.tripStatus) } == true, sourceLocation: sourceLocation)
  #expect(delivered.last?.fields.contains(.tripStatus) == true, sourceLocation: sourceLocation)

  // ETAs: Unix times within the run (simulated seconds from the booking to the planned dropoff, which a
  // canceled trip never reaches, mapped to wall time).
  let start = simulator.configuration.startTime
  let speedup = simulator.configuration.speedup
  let earliest = start + (plan.createdAt - 1) / speedup
  let latest = start + (max(plan.finishTime, plan.stops[plan.stops.count - 1].arrival) + 1) / speedup
  for event in events {
    guard case .field(let callback, let value?) = event,
      [.pickupETA, .dropoffETA, .etaToNextWaypoint].contains(callback)
    else { continue }
    #expect(value > 1_600_000_000, "\(label): \(callback) \(value) is not a Unix time", sourceLocation: sourceLocation)
    #expect(
      value >= earliest && value <= latest,
      "\(label): \(callback) \(value) outside [\(earliest), \(latest)]", sourceLocation: sourceLocation)
  }
  #expect(recorder.overlapCount == 0, "callbacks of one model overlapped", sourceLocation: sourceLocation)
}

/// Whether the route changed only when the leg did: after the first delivery, an activeRoute callback
/// comes only in a delivery whose trip has another route version than the trip before (the server moves
/// the version when a leg begins or ends, and only then). A route lost or re-sent while its version stayed
/// the same would show up as a change without a new version.
func routeChangesOnlyWithTheLeg(_ recorder: RecordingSubscriber, name: String) -> Bool {
  var previous: Timestamp?? = .none
  for delivery in deliveries(recorder.events(name)) {
    let version = delivery.trip?.currentRouteSegmentVersion
    if let previous, delivery.callbacks.contains(.activeRoute), version == previous { return false }
    previous = .some(version)
  }
  return true
}

/// The whole-trip tests, written once against ``TripFollowingFixture``.
enum WholeTripChecks {
  /// Trips with intermediate destinations (4, 6, 12, 15), one canceled (16), one shared (18), short ones.
  static let trips = [4, 6, 10, 11, 12, 15, 16, 18, 20, 36]

  static func tenTripsStreamedToTheEnd(
    _ transport: FixtureTransport,
    client: @escaping (JourneySharingConfiguration) -> JourneySharingConfiguration = { $0 }
  ) async throws {
    try #require(Self.trips.contains { followPlanner.plan(index: $0).canceledAt != nil })
    try #require(Self.trips.contains { followPlanner.plan(index: $0).intermediateDestinationCount > 0 })
    try await withFollowFixture(
      transport, simulation: { followSimConfiguration(speedup: 400, now: $0) }, client: client
    ) { fixture in
      let recorder = RecordingSubscriber()
      let models = Self.trips.map { fixture.model($0) }
      for model in models { model.register(recorder) }
      let done = await fixture.wait(timeout: .seconds(40)) {
        Self.trips.allSatisfy { recorder.stopped(fixture.simulator.tripName(index: $0)) }
      }
      let unfinished = Self.trips.filter { !recorder.finished(fixture.simulator.tripName(index: $0)) }
      #expect(done, "\(transport): not every trip reached its final state: \(unfinished)")
      for index in Self.trips {
        checkWholeTrip(recorder, index: index, simulator: fixture.simulator)
        let model = fixture.model(index)
        #expect(await model.modelState() == .inactive)
        #expect(await model.currentSnapshot()?.trip == finalTrip(of: fixture.simulator, index: index))
      }
      let stats = await fixture.fleetStats()
      #expect(stats.unaryCalls == 0)
      #expect(stats.streamsCompleted == Self.trips.count)
      #expect(stats.streamsOpen == 0)
      for model in models { model.unregisterSubscriber(recorder) }
    }
  }

  static func pollingReachesTheSameFinalState(_ transport: FixtureTransport) async throws {
    let trips = [4, 16, 23]
    try await withFollowFixture(
      transport, simulation: { followSimConfiguration(speedup: 300, now: $0) },
      client: { configuration in
        var configuration = configuration
        configuration.fetchMode = .poll
        configuration.pollInterval = .milliseconds(20)
        return configuration
      }
    ) { fixture in
      let recorder = RecordingSubscriber()
      for index in trips { fixture.model(index).register(recorder) }
      let done = await fixture.wait(timeout: .seconds(40)) {
        trips.allSatisfy { recorder.stopped(fixture.simulator.tripName(index: $0)) }
      }
      #expect(done)
      for index in trips {
        let name = fixture.simulator.tripName(index: index)
        checkWholeTrip(recorder, index: index, simulator: fixture.simulator)
        // The route (left out of most answers, its version being current) is kept: it changes only with
        // the leg, not on every poll.
        let plan = fixture.simulator.plan(index: index)
        let routeCallbacks = recorder.fieldCount(.activeRoute, name)
        #expect(routeCallbacks <= 2 * plan.legs.count + 1, "\(name): \(routeCallbacks) activeRoute callbacks")
        #expect(routeChangesOnlyWithTheLeg(recorder, name: name), "\(name): the route changed within a leg")
        #expect(recorder.trips(name).count > routeCallbacks, "\(name): too few deliveries to tell")
      }
      let stats = await fixture.fleetStats()
      #expect(stats.streamsStarted == 0)
      #expect(stats.unaryCalls >= 10)
    }
  }
}

@Suite("Following whole trips (in memory)")
struct TripFollowingTests {
  @Test("Ten trips streamed to the end: statuses in order, fields match callbacks, final state exact")
  func tenTripsStreamedToTheEnd() async throws {
    try await WholeTripChecks.tenTripsStreamedToTheEnd(.inMemory)
  }

  @Test("Polling the unary GetTrip reaches the same final state; the route is kept between legs")
  func pollingReachesTheSameFinalState() async throws {
    try await WholeTripChecks.pollingReachesTheSameFinalState(.inMemory)
  }
}

@Suite("Following whole trips end to end (FleetSim or a unary-only server over sockets)")
struct TripFollowingEndToEndTests {
  @Test("Ten trips streamed to the end over sockets: statuses in order, fields match callbacks, final state exact")
  func tenTripsStreamedToTheEnd() async throws {
    try await WholeTripChecks.tenTripsStreamedToTheEnd(.sockets)
  }

  @Test("Ten trips streamed to the end over sockets on event loops that coalesce reads: the same final states")
  func tenTripsStreamedToTheEndWithReadCoalescing() async throws {
    let loops = JourneySharingEventLoops(loopCount: 2, readCoalescing: .milliseconds(2))
    defer { loops.shutdown() }
    try await WholeTripChecks.tenTripsStreamedToTheEnd(.sockets) { configuration in
      var configuration = configuration
      configuration.connection.eventLoops = loops
      return configuration
    }
  }

  @Test("Polling over sockets reaches the same final state; the route is kept between legs")
  func pollingReachesTheSameFinalState() async throws {
    try await WholeTripChecks.pollingReachesTheSameFinalState(.sockets)
  }

  @Test("Auto mode against a server without streaming falls back to polling, with versions, and follows to the end")
  func autoModeFallsBackToPolling() async throws {
    let index = 4  // two intermediate destinations: four legs
    let simulator = TripSimulator(
      configuration: SimulationConfiguration(
        provider: followProvider, tripCount: followTripCount, seed: followSeed,
        startTime: unixTime() + followLeadTime, speedup: 300))
    let fake = UnaryOnlyFleetEngine(simulator: simulator)
    let server = try GRPCServer(configuration: GRPCServerConfiguration(), service: fake, logger: quietLogger("fake"))
    let port = try server.start()
    let services = try JourneySharingServices(
      configuration: followClientConfiguration(port: port, mode: .auto, pollInterval: .milliseconds(20)))
    let recorder = RecordingSubscriber()
    let name = simulator.tripName(index: index)
    let model = services.tripService.tripModel(forTripName: name)
    model.register(recorder)
    let done = await eventually(timeout: .seconds(30)) { recorder.stopped(name) }
    #expect(done)
    checkWholeTrip(recorder, index: index, simulator: simulator)
    // No UNIMPLEMENTED (nor any other error) reached the subscriber.
    #expect(recorder.errors(name).isEmpty)
    #expect(routeChangesOnlyWithTheLeg(recorder, name: name))
    let counters = fake.counters
    #expect(counters.otherCalls == 1, "the streaming method was tried once: \(counters)")
    #expect(counters.unaryCalls >= 10, "\(counters)")
    #expect(
      counters.versionedRequests >= counters.unaryCalls - 1 - 4, "requests after the first carry versions: \(counters)")
    #expect(counters.routeOmitted >= 1, "\(counters)")
    #expect(counters.waypointsOmitted >= 1, "\(counters)")
    model.unregisterSubscriber(recorder)
    await services.shutdown()
    await server.shutdown(graceful: false)
  }
}
