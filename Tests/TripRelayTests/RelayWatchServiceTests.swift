// Tests/TripRelayTests/RelayWatchServiceTests.swift - the relay's gRPC side on the in-memory transport and a fake store
//
// RelayWatchService and TripHub, driven through the in-memory transport on a virtual clock, reading an
// in-memory `TRIPS`/`TRIPSTATE` (RelayFakes.swift): who may watch, what a late joiner and a resuming watcher
// get, refusals, limits. The same service runs against a real nats-server in RelayEndToEndTests.

import FleetEngineMessages
import GRPCHealth
import GRPCProtocol
import JSONWebToken
import JourneySharing
import Logging
import MetricsTestKit
import NATSClient
import Primitives
import TestSupport
import Testing

@testable import TripRelay

/// One watch service on the in-memory transport.
private final class WatchFixture: Sendable {
  let scheduler = VirtualScheduler()
  let store = InMemoryTripsStore()
  let metrics = TestMetrics()
  let service: RelayWatchService
  let transport: InMemoryTransport
  let names: RelayNames

  init(authorization: DownstreamAuthorization? = nil, configure: (inout RelayConfiguration) -> Void = { _ in })
    throws
  {
    names = try RelayNames(cluster: "test", providerID: "p")
    var configuration = RelayConfiguration(
      relayID: "r", nats: NATSConnectionConfiguration(servers: ["nats://127.0.0.1:1"]), names: names,
      upstream: JourneySharingConfiguration(host: "unused", port: 1, providerID: "p"),
      authorization: authorization
        ?? .verified(ConsumerTokenVerifier(keys: [ConsumerTokenVerifier.Key(.hs256(secret: relayTestSecret))])))
    configure(&configuration)
    service = RelayWatchService(
      configuration: configuration, store: store, metrics: RelayMetrics(factory: metrics))
    transport = InMemoryTransport(service: service, scheduler: scheduler)
    let service = service
    scheduler.execute { service.setReady(true) }
    scheduler.waitUntilIdle()
  }

  var now: Double { scheduler.unixTime }

  func name(_ trip: String) -> TripName { TripName(providerID: "p", tripID: trip)! }

  /// Starts a watch of `trip` with `token` (none: no authorization header), resuming after `after`.
  @discardableResult
  func watch(_ trip: String, provider: String = "p", token: String?, after: UInt64 = 0) -> CallCollector {
    var request = StreamTripRequest()
    request.name = "providers/\(provider)/trips/\(trip)"
    request.afterSequence = after
    var options = CallOptions(timeout: nil)
    if let token { options.metadata.add("authorization", "Bearer " + token) }
    let collector = CallCollector()
    _ = transport.startCall(
      path: FleetEngineMethods.streamingGetTrip, request: request.serializedBytes(), kind: .serverStreaming,
      options: options, on: scheduler, handler: collector)
    return collector
  }

  func token(_ trip: String, subject: String = "watcher@test") throws -> String {
    try consumerToken(tripID: trip, subject: subject, now: now)
  }

  /// Lets the store's tasks and the scheduler's queue run until `condition` holds.
  func settle(until condition: () -> Bool) async -> Bool {
    await eventually {
      scheduler.waitUntilIdle()
      return condition()
    }
  }

  func counter(_ label: String, _ dimensions: [(String, String)]) -> Int64 {
    (try? metrics.expectCounter(label, dimensions).totalValue) ?? 0
  }
}

@Suite("Relay watch service (in memory, virtual clock)", .serialized)
struct RelayWatchServiceTests {
  @Test("no token is UNAUTHENTICATED, a token for another trip PERMISSION_DENIED, another provider INVALID_ARGUMENT")
  func authorization() async throws {
    let fixture = try WatchFixture()
    let none = fixture.watch("a", token: nil)
    let otherTrip = fixture.watch("b", token: try fixture.token("a"))
    let otherProvider = fixture.watch("a", provider: "q", token: try fixture.token("*"))
    let malformed = fixture.watch("a/b", token: try fixture.token("*"))
    var expired = JWTClaims(
      issuer: "w", subject: "w", audience: [ConsumerTokenVerifier.fleetEngineAudience], expiresAt: fixture.now - 100,
      issuedAt: fixture.now - 200)
    expired.tripID = "a"
    let stale = fixture.watch("a", token: try JSONWebToken.sign(claims: expired, key: .hs256(secret: relayTestSecret)))
    let forged = fixture.watch(
      "a",
      token: try JSONWebToken.sign(
        claims: expired, key: .hs256(secret: Array("another-secret-of-32-bytes-or-more".utf8))))
    #expect(
      await fixture.settle {
        [none, otherTrip, otherProvider, malformed, stale, forged].allSatisfy { $0.status != nil }
      })
    #expect(none.status?.code == .unauthenticated)
    #expect(none.status?.message == "missing authorization header")
    #expect(otherTrip.status?.code == .permissionDenied)
    #expect(otherProvider.status?.code == .invalidArgument)
    #expect(malformed.status?.code == .invalidArgument)
    #expect(stale.status?.code == .unauthenticated)
    #expect(stale.status?.message.contains("expired") == true)
    #expect(forged.status?.code == .unauthenticated)
    // None of them cost a read or a follow request.
    #expect(fixture.store.stateReads == 0 && fixture.store.submitted.isEmpty)
    #expect(fixture.counter("journeysharing_relay_watch_refusals_total", [("code", "UNAUTHENTICATED")]) == 3)
  }

  @Test("a request that does not decode, or is larger than a StreamTripRequest can be, is INVALID_ARGUMENT")
  func badRequests() async throws {
    let fixture = try WatchFixture()
    var collectors: [CallCollector] = []
    for request in [[0xFF, 0xFF, 0xFF], [UInt8](repeating: 0x0A, count: 5_000)] as [[UInt8]] {
      let collector = CallCollector()
      var options = CallOptions(timeout: nil)
      options.metadata.add("authorization", "Bearer " + (try fixture.token("*")))
      _ = fixture.transport.startCall(
        path: FleetEngineMethods.streamingGetTrip, request: request, kind: .serverStreaming, options: options,
        on: fixture.scheduler, handler: collector)
      collectors.append(collector)
    }
    let other = CallCollector()
    _ = fixture.transport.startCall(
      path: "/journeysharing.v1.TripStreamService/Other", request: [], kind: .serverStreaming,
      options: CallOptions(timeout: nil), on: fixture.scheduler, handler: other)
    #expect(await fixture.settle { collectors.allSatisfy { $0.status != nil } && other.status != nil })
    #expect(collectors.map { $0.status?.code } == [.invalidArgument, .invalidArgument])
    #expect(other.status?.code == .unimplemented)
    #expect(fixture.store.stateReads == 0)
  }

  @Test("a token for the trip (or *) watches it: the whole trip numbered with its stream position, then each update")
  func watching() async throws {
    let fixture = try WatchFixture()
    let name = fixture.name("a")
    let first = fixture.store.append("a", fullUpdate(testTrip(name)))
    let one = fixture.watch("a", token: try fixture.token("a"))
    let star = fixture.watch("a", token: try fixture.token("*", subject: "server@test"))
    #expect(await fixture.settle { one.updates.count == 1 && star.updates.count == 1 })
    #expect(one.updates[0].fullTrip && one.updates[0].sequence == first)
    #expect(one.updates[0].trip?.name == name.description)
    let second = fixture.store.append("a", moveUpdate(name, latitude: 52.1))
    let third = fixture.store.append("a", moveUpdate(name, latitude: 52.2))
    #expect(await fixture.settle { one.updates.count == 3 && star.updates.count == 3 })
    #expect(one.updates.map(\.sequence) == [first, second, third])
    #expect(one.updates[2].updatedFields == [11] && !one.updates[2].fullTrip)
    #expect(one.updates[2].trip?.lastLocation?.location?.latitude == 52.2)
    // The end: the final state, then OK.
    var done = TripUpdate()
    done.trip = testTrip(name, status: .complete).projected(onto: [3])
    done.updatedFields = [3]
    fixture.store.append("a", done)
    #expect(await fixture.settle { one.status != nil && star.status != nil })
    #expect(one.status?.code == .ok && one.updates.last?.trip?.tripStatus == .complete)
  }

  @Test("--insecure-no-auth: a watcher without a token watches")
  func insecure() async throws {
    let fixture = try WatchFixture(authorization: .insecureNoAuthorization)
    let name = fixture.name("a")
    fixture.store.append("a", fullUpdate(testTrip(name)))
    let watcher = fixture.watch("a", token: nil)
    #expect(await fixture.settle { watcher.updates.count == 1 })
    #expect(watcher.status == nil)
  }

  @Test("a late joiner of a trip with 10,000 updates reads its state and the short tail: one whole trip, then live")
  func lateJoiner() async throws {
    let fixture = try WatchFixture()
    let name = fixture.name("long")
    fixture.store.append("long", fullUpdate(testTrip(name)))
    var latitude = 52.0
    for _ in 0..<9_999 {
      latitude += 0.00001
      fixture.store.append("long", moveUpdate(name, latitude: latitude))
    }
    // The follower kept the state 20 updates ago; 20 updates came after it.
    var state = testTrip(name, latitude: latitude - 20 * 0.00001)
    state.name = name.description
    fixture.store.setState("long", state, sequence: 9_980)
    let watcher = fixture.watch("long", token: try fixture.token("long"))
    #expect(await fixture.settle { watcher.updates.count == 1 })
    #expect(watcher.updates[0].fullTrip && watcher.updates[0].sequence == 10_000)
    #expect(abs((watcher.updates[0].trip?.lastLocation?.location?.latitude ?? 0) - latitude) < 1e-9)
    #expect(fixture.store.stateReads == 1)
    #expect(fixture.store.messagesRead == 20, "read \(fixture.store.messagesRead) messages for a late join")
    fixture.store.append("long", moveUpdate(name, latitude: 53))
    #expect(await fixture.settle { watcher.updates.count == 2 })
    #expect(watcher.updates[1].sequence == 10_001 && !watcher.updates[1].fullTrip)
  }

  @Test(
    "after_sequence resumes with exactly the updates after it; before the history, the whole trip with discontinuity")
  func resume() async throws {
    let fixture = try WatchFixture()
    let name = fixture.name("a")
    let token = try fixture.token("a")
    fixture.store.append("a", fullUpdate(testTrip(name)))
    var sequences: [UInt64] = []
    for step in 1...300 {
      sequences.append(fixture.store.append("a", moveUpdate(name, latitude: 52 + Double(step) * 1e-4)))
    }
    // A hub is live (another watcher), and holds the latest 128 updates: a recent position resumes from them…
    let live = fixture.watch("a", token: token)
    #expect(await fixture.settle { live.updates.count == 1 })
    let recent = fixture.watch("a", token: token, after: sequences[289])
    #expect(await fixture.settle { recent.updates.count == 10 })
    #expect(recent.updates.map(\.sequence) == Array(sequences[290...]))
    #expect(recent.updates.allSatisfy { !$0.fullTrip && !$0.discontinuity })
    // …an older one reads them from the stream.
    let old = fixture.watch("a", token: token, after: sequences[9])
    #expect(await fixture.settle { old.updates.count == 290 })
    #expect(old.updates.map(\.sequence) == Array(sequences[10...]))
    // Its position is the last one: nothing until the next update, then it.
    let current = fixture.watch("a", token: token, after: sequences.last!)
    let next = fixture.store.append("a", moveUpdate(name, latitude: 54))
    #expect(await fixture.settle { current.updates.count == 1 && old.updates.count == 291 })
    #expect(current.updates.map(\.sequence) == [next])
    // The history expired before its position: the whole trip, flagged.
    fixture.store.expire(before: sequences[200])
    let expired = fixture.watch("a", token: token, after: sequences[5])
    #expect(await fixture.settle { expired.updates.count == 1 })
    #expect(expired.updates[0].fullTrip && expired.updates[0].discontinuity && expired.updates[0].sequence == next)
    #expect(expired.updates[0].trip?.lastLocation?.location?.latitude == 54)
  }

  @Test("a refused trip: its watchers get the status; later ones at once, without reading")
  func refusal() async throws {
    let fixture = try WatchFixture()
    let watcher = fixture.watch("ghost", token: try fixture.token("ghost"))
    #expect(await fixture.settle { fixture.store.submitted == ["ghost"] })
    fixture.store.appendRefusal("ghost", GRPCStatus(code: .notFound, message: "trip not found"))
    #expect(await fixture.settle { watcher.status != nil })
    #expect(watcher.status?.code == .notFound)
    let reads = fixture.store.stateReads
    let later = fixture.watch("ghost", token: try fixture.token("ghost"))
    #expect(await fixture.settle { later.status != nil })
    #expect(later.status?.code == .notFound)
    #expect(fixture.store.stateReads == reads)
  }

  @Test(
    "a caller past its follow-request burst gets RESOURCE_EXHAUSTED for trips nobody follows; others are unaffected")
  func followRequestLimit() async throws {
    let fixture = try WatchFixture { configuration in
      configuration.submitBurstPerCaller = 5
      configuration.submitsPerSecondPerCaller = 0.001
    }
    let token = try fixture.token("*", subject: "greedy@test")
    var watchers: [CallCollector] = []
    for index in 0..<50 { watchers.append(fixture.watch("unknown-\(index)", token: token)) }
    #expect(await fixture.settle { watchers.filter { $0.status != nil }.count == 45 })
    #expect(fixture.store.submitted.count == 5)
    #expect(watchers.compactMap(\.status).allSatisfy { $0.code == .resourceExhausted })
    // Another caller still may.
    let other = fixture.watch("unknown-x", token: try fixture.token("unknown-x", subject: "polite@test"))
    #expect(await fixture.settle { fixture.store.submitted.count == 6 })
    #expect(other.status == nil)
  }

  @Test(
    "10,000 names from one caller: a bounded number of joins at once, the rest RESOURCE_EXHAUSTED; reads 32 at a time")
  func manyNamesFromOneCaller() async throws {
    let fixture = try WatchFixture { $0.maxJoinsInProgressPerCaller = 100 }
    fixture.store.holdStateReads(true)
    let token = try fixture.token("*", subject: "flood@test")
    var watchers: [CallCollector] = []
    for index in 0..<10_000 { watchers.append(fixture.watch("flood-\(index)", token: token)) }
    #expect(await fixture.settle { watchers.filter { $0.status != nil }.count == 9_900 })
    #expect(watchers.compactMap(\.status).allSatisfy { $0.code == .resourceExhausted })
    #expect(await fixture.settle { fixture.store.mostReadsUnderWay == RelayWatchService.maxCatchUps })
    // Another caller is not held back by the flood's limit.
    let other = fixture.watch("other", token: try fixture.token("other", subject: "polite@test"))
    fixture.scheduler.waitUntilIdle()
    #expect(other.status == nil)
    fixture.store.holdStateReads(false)
    #expect(await fixture.settle { fixture.store.stateReads == 101 })
    #expect(fixture.store.mostReadsUnderWay <= RelayWatchService.maxCatchUps)
    // Once its joins are done, the caller may watch new trips again (one that exists: its burst of follow
    // requests went to the flood).
    fixture.store.setState("later", testTrip(fixture.name("later")), sequence: 1)
    let later = fixture.watch("later", token: token)
    #expect(await fixture.settle { later.updates.count == 1 })
    #expect(later.status == nil)
  }

  @Test("a watcher of a trip nobody publishes gets UNAVAILABLE after the first-state timeout (virtual clock)")
  func firstStateTimeout() async throws {
    let fixture = try WatchFixture { $0.firstStateTimeout = .seconds(60) }
    let watcher = fixture.watch("quiet", token: try fixture.token("quiet"))
    #expect(await fixture.settle { fixture.store.submitted == ["quiet"] })
    fixture.scheduler.advance(by: .seconds(59))
    #expect(watcher.status == nil)
    fixture.scheduler.advance(by: .seconds(2))
    #expect(await fixture.settle { watcher.status != nil })
    #expect(watcher.status?.code == .unavailable)
  }

  @Test("a relay that is not ready answers UNAVAILABLE, and its health says NOT_SERVING until it is")
  func readiness() async throws {
    let fixture = try WatchFixture()
    let service = fixture.service
    fixture.scheduler.execute { service.setReady(false) }
    let watcher = fixture.watch("a", token: try fixture.token("a"))
    let health = CallCollector()
    _ = fixture.transport.startCall(
      path: HealthMethods.check, request: HealthCheckRequest(service: "").serializedBytes(), kind: .unary,
      options: CallOptions(timeout: nil), on: fixture.scheduler, handler: HealthCollector(into: health))
    #expect(await fixture.settle { watcher.status != nil && health.status != nil })
    #expect(watcher.status?.code == .unavailable)
    #expect(HealthCollector.lastStatus(health) == .notServing)
    fixture.scheduler.execute { service.setReady(true) }
    let again = CallCollector()
    _ = fixture.transport.startCall(
      path: HealthMethods.check, request: HealthCheckRequest(service: "").serializedBytes(), kind: .unary,
      options: CallOptions(timeout: nil), on: fixture.scheduler, handler: HealthCollector(into: again))
    #expect(await fixture.settle { again.status != nil })
    #expect(HealthCollector.lastStatus(again) == .serving)
  }

  @Test(
    "messages of TRIPS that do not decode, break the limits or are on another cluster's subject are skipped, counted")
  func badMessages() async throws {
    let names = try RelayNames(cluster: "test", providerID: "p")
    let metrics = TestMetrics()
    var limits = TripLimits()
    limits.maxRoutePoints = 10
    let capture = LogCapture()
    let decoder = TripsMessageDecoder(
      names: names, limits: limits, metrics: RelayMetrics(factory: metrics), logger: capture.logger("decoder"))
    let name = TripName(providerID: "p", tripID: "a")!
    let good = fullUpdate(testTrip(name)).serializedBytes()
    #expect(
      decoder.decode(
        subject: names.storedTripSubject(name), sequence: 1, storedAt: 0, data: good, headers: NATSHeaders())
        != nil)
    #expect(
      decoder.decode(
        subject: names.storedTripSubject(name), sequence: 2, storedAt: 0, data: [0xFF, 0xFF, 0xFF],
        headers: NATSHeaders())
        == nil)
    var huge = testTrip(name)
    huge.route = LatLngPath(coordinates: (0..<100).map { .init(latitude: 52 + Double($0) * 1e-3, longitude: 4.9) })
    #expect(
      decoder.decode(
        subject: names.storedTripSubject(name), sequence: 3, storedAt: 0, data: fullUpdate(huge).serializedBytes(),
        headers: NATSHeaders()) == nil)
    #expect(
      decoder.decode(subject: "trips.other.p.a", sequence: 4, storedAt: 0, data: good, headers: NATSHeaders()) == nil)
    // A flood of garbage is counted one by one, and logged once a minute.
    for sequence in 5..<105 {
      _ = decoder.decode(
        subject: names.storedTripSubject(name), sequence: UInt64(sequence), storedAt: 0, data: [0x0A, 0xFF],
        headers: NATSHeaders())
    }
    #expect(capture.all.filter { $0.message.contains("does not decode") }.count == 1)
    // Whether a trip ended is its status's to say: a forged final header on a moving trip is not an end.
    var forged = NATSHeaders()
    forged[RelayNaming.finalHeader] = "true"
    let moving = decoder.decode(
      subject: names.storedTripSubject(name), sequence: 200, storedAt: 0, data: good, headers: forged)
    #expect(moving?.isFinal == false)
    // The garbage, and the trip above the limits, which the decode budgets stop before it is whole.
    #expect(
      try metrics.expectCounter("journeysharing_relay_trips_messages_skipped_total", [("reason", "undecodable")])
        .totalValue == 102)
    #expect(
      try metrics.expectCounter("journeysharing_relay_trips_messages_skipped_total", [("reason", "subject")]).totalValue
        == 1)
  }
}

/// Collects a health Check's answer into a `CallCollector`'s status (the message as its first update's
/// sequence: the serving status).
private final class HealthCollector: GRPCCallHandler, @unchecked Sendable {
  let target: CallCollector
  init(into target: CallCollector) { self.target = target }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    let response = (try? HealthCheckResponse(serializedBuffer: message)) ?? HealthCheckResponse()
    var update = TripUpdate()
    update.sequence = UInt64(response.status.rawValue)
    update.serializedBytes().withUnsafeBytes { target.callDidReceiveMessage($0) }
  }

  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    target.callDidFinish(status: status, trailers: trailers)
  }

  static func lastStatus(_ collector: CallCollector) -> HealthCheckResponse.ServingStatus? {
    collector.updates.last.map { HealthCheckResponse.ServingStatus(rawValue: Int32($0.sequence)) }
  }
}
