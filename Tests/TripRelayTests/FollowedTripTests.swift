// Tests/TripRelayTests/FollowedTripTests.swift - following a trip into a recording sink (in memory, virtual clock)
//
// The relay's following part without NATS: FleetSim's service on the in-memory transport, the relay's
// JourneySharingServices on it, a `RecordingSink` standing in for JetStream and a `RecordingLeaseKeeper` for the
// work queue. What each record carries, and what the follow does with each outcome the sink can give.

import CoreMetrics
import FleetEngineMessages
import FleetSim
import Foundation
import GRPCProtocol
import InMemoryTracing
import JSONWebToken
import JourneySharing
import Logging
import NATSClient
import Primitives
import TestSupport
import Testing
import Tracing

@testable import TripRelay

private final class FollowFixture: Sendable {
  let scheduler = VirtualScheduler()
  let sink = RecordingSink()
  let keeper = RecordingLeaseKeeper()
  let following: TripFollowing
  let simulator: TripSimulator
  let events = Locked<[RelayEvent]>([])
  /// The virtual time in which every simulated trip ends.
  let runTime: Duration

  init(
    auth: FleetSimConfiguration.Auth? = nil, token: String? = nil,
    configure: (inout RelayConfiguration) -> Void = { _ in }
  )
    throws
  {
    let silent = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    var simulation = SimulationConfiguration()
    simulation.provider = "p"
    simulation.tripCount = 3
    simulation.seed = 5
    let planner = TripSimulator(configuration: simulation)
    let longest = (0..<3).map { planner.plan(index: $0).finishTime }.max() ?? 1
    simulation.speedup = longest / 20
    simulation.startTime = scheduler.unixTime
    runTime = .seconds(30)
    let service = FleetSimService(
      configuration: FleetSimConfiguration(simulation: simulation, updateInterval: .milliseconds(500), auth: auth),
      logger: silent)
    simulator = service.simulator
    let transport = InMemoryTransport(service: service, scheduler: scheduler)
    var upstream = JourneySharingConfiguration(
      host: "in-memory", port: 1, security: .plaintext, providerID: "p", fetchMode: .stream, logger: silent)
    if let token { upstream.authorization = StaticTokenProvider(token: token) }
    let services = JourneySharingServices(configuration: upstream, transport: transport)
    var configuration = RelayConfiguration(
      relayID: "r", nats: NATSConnectionConfiguration(servers: ["nats://127.0.0.1:1"]),
      names: try RelayNames(cluster: "test", providerID: "p"), upstream: upstream,
      authorization: .insecureNoAuthorization, logger: silent)
    configuration.checkpointInterval = 8
    configure(&configuration)
    let events = events
    following = TripFollowing(
      configuration: configuration, sink: sink, services: services, queue: keeper,
      metrics: RelayMetrics(factory: NOOPMetricsHandler.instance)
    ) { event in events.withLock { $0.append(event) } }
  }

  /// Takes a lease of trip `index` (delivery `delivery`) and follows it.
  func follow(_ index: Int, delivery: UInt64 = 1) -> TripName {
    let name = TripName(parsing: simulator.tripName(index: index))!
    keeper.took()
    following.acquired(FollowLease(name: name, message: nil, delivery: delivery, takenAt: 0))
    return name
  }

  func run(for duration: Duration) async {
    // The upstream's tasks (tokens) and the sink's hops run off the scheduler: let them in between steps.
    let steps = Int(duration / .milliseconds(250))
    for _ in 0..<steps {
      scheduler.advance(by: .milliseconds(250))
      try? await Task.sleep(for: .milliseconds(1))
    }
  }

  /// Advances the virtual clock 250 ms a step, for at most 100 virtual seconds, until `condition` holds. Bounded
  /// by virtual time, not the wall clock: when the whole suite keeps the cooperative pool busy, the steps (and
  /// the off-scheduler hops between them) take longer, and nothing else changes.
  func until(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<400 {
      scheduler.advance(by: .milliseconds(250))
      if condition() { return true }
      try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
  }

  var stops: [RelayEvent.StopReason] {
    events.withLock { events in
      events.compactMap { if case .followStopped(_, let reason, _) = $0 { reason } else { nil } }
    }
  }
}

@Suite("Followed trip (in memory, virtual clock, recording sink)", .serialized)
struct FollowedTripTests {
  @Test("one record at a time: the whole trip first, then changed fields expecting the last position; acked at the end")
  func records() async throws {
    let fixture = try FollowFixture()
    let name = fixture.follow(0)
    #expect(await fixture.until { fixture.keeper.released.count == 1 })
    let records = fixture.sink.published
    try #require(records.count >= 3)
    #expect(records[0].kind == .update(full: true, final: false) && records[0].expectedPosition == nil)
    #expect(records[0].checkpoint != nil)
    for (index, record) in records.enumerated().dropFirst() {
      #expect(
        record.expectedPosition == UInt64(index),
        "record \(index) expects \(String(describing: record.expectedPosition))")
      #expect(record.sequence == UInt64(index + 1) && record.delivery == 1)
    }
    #expect(records.last?.isFinal == true)
    #expect(records.last?.checkpoint != nil)
    // A checkpoint at least every 8 records.
    var since = 0
    for record in records {
      since = record.checkpoint == nil ? since + 1 : 0
      #expect(since < 8)
    }
    // The records fold into the simulator's final trip.
    var folded = Trip()
    for record in records { folded.apply(try TripUpdate(serializedBytes: record.body)) }
    let expected = fixture.simulator.trip(index: 0, atSimulatedSeconds: fixture.simulator.plan(index: 0).finishTime + 1)
    #expect(folded.tripStatus == expected.tripStatus && folded.name == name.description)
    #expect(fixture.keeper.released.map(\.how.kind) == ["ack"])
    #expect(fixture.stops == [.final])
  }

  @Test("a relay.follow span per follow: the trip, the delivery, and why it stopped (an error for a refusal)")
  func followSpans() async throws {
    let tracer = InMemoryTracer()
    let fixture = try FollowFixture { $0.tracer = tracer }
    let name = fixture.follow(0)
    let unknown = TripName(providerID: "p", tripID: "nobody")!
    fixture.keeper.took()
    fixture.following.acquired(FollowLease(name: unknown, message: nil, delivery: 2, takenAt: 0))
    #expect(await fixture.until { fixture.keeper.released.count == 2 })
    let spans = tracer.finishedSpans.filter { $0.operationName == "relay.follow" }
    try #require(spans.count == 2)
    let followed = try #require(spans.first { $0.attributes["trip.name"]?.toSpanAttribute() == "\(name)" })
    #expect(followed.attributes["relay.delivery"]?.toSpanAttribute() == 1)
    #expect(followed.attributes["relay.takeover"]?.toSpanAttribute() == false)
    #expect(followed.attributes["relay.stop_reason"]?.toSpanAttribute() == "final")
    #expect(followed.status == nil)
    let refused = try #require(spans.first { $0.attributes["trip.name"]?.toSpanAttribute() == "\(unknown)" })
    #expect(refused.attributes["relay.takeover"]?.toSpanAttribute() == true)
    #expect(refused.attributes["relay.stop_reason"]?.toSpanAttribute() == "rejected")
    #expect(refused.status?.code == .error)
  }

  @Test("a failed publish is retried as it was; a rebase republishes the whole trip; a later delivery stops the follow")
  func outcomes() async throws {
    let fixture = try FollowFixture()
    _ = fixture.follow(1)
    #expect(await fixture.until { fixture.sink.published.count >= 1 })
    fixture.sink.script([.failed("no ack"), .rebase(position: 40), .superseded(byDelivery: 2)])
    #expect(await fixture.until { fixture.keeper.released.count == 1 })
    let records = fixture.sink.published
    // The first, the failed one, its retry, and the whole trip after the rebase (superseded: the last).
    try #require(records.count == 4)
    // The failed one, then the same again.
    #expect(records[2].sequence == records[1].sequence && records[2].body == records[1].body)
    // After the rebase: the whole trip, expecting what the sink said.
    #expect(records[3].kind == .update(full: true, final: records[3].isFinal) && records[3].expectedPosition == 40)
    #expect(fixture.keeper.released.map(\.how.kind) == ["abandon"])
    #expect(fixture.stops == [.takenOver])
  }

  @Test("a trip upstream does not know is refused: the refusal is published and the request terminated")
  func refused() async throws {
    let fixture = try FollowFixture()
    let name = TripName(providerID: "p", tripID: "nobody")!
    fixture.keeper.took()
    fixture.following.acquired(FollowLease(name: name, message: nil, delivery: 1, takenAt: 0))
    #expect(await fixture.until { fixture.keeper.released.count == 1 })
    #expect(fixture.sink.published.last?.kind == .refusal(code: .notFound, message: "trip \(name) not found"))
    #expect(fixture.keeper.released.map(\.how.kind) == ["term"])
    #expect(fixture.stops == [.rejected])
  }

  @Test(
    "upstream refusing the relay's credentials: released with a delay after the grace, refused after three deliveries")
  func permissionDenied() async throws {
    let secret = Array("fleetsim-secret-of-at-least-32-bytes!".utf8)
    var claims = JWTClaims(
      issuer: "relay@test", subject: "relay@test", audience: [ConsumerTokenVerifier.fleetEngineAudience],
      expiresAt: 1_800_003_000, issuedAt: 1_800_000_000 - 10)
    claims.tripID = "someone-else"
    let token = try JSONWebToken.sign(claims: claims, key: .hs256(secret: secret))
    let fixture = try FollowFixture(auth: .hs256(secret: secret), token: token) { $0.permissionGrace = .seconds(10) }
    _ = fixture.follow(0, delivery: 1)
    await fixture.run(for: .seconds(5))
    #expect(fixture.keeper.released.isEmpty)
    #expect(await fixture.until { fixture.keeper.released.count == 1 })
    #expect(fixture.keeper.released.map(\.how.kind) == ["nak"])
    #expect(fixture.sink.published.isEmpty)
    // The third delivery: refused for good.
    _ = fixture.follow(2, delivery: 3)
    #expect(await fixture.until { fixture.keeper.released.count == 2 })
    #expect(fixture.keeper.released.last?.how.kind == "term")
    if case .refusal(let code, _) = fixture.sink.published.last?.kind {
      #expect(code == .permissionDenied)
    } else {
      Issue.record("no refusal published: \(fixture.sink.published.map(\.kind))")
    }
    #expect(fixture.stops == [.released, .rejected])
  }
}
