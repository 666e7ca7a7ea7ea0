// Tests/TripRelayTests/RelayEndToEndTests.swift - relays on a real nats-server, FleetSim and watchers on real sockets
//
// One nats-server process on 127.0.0.1 (JetStream; accounts, permissions and TLS where a test needs them),
// FleetSim in this process on a real socket, relays in this process; watchers use the public consumer API (or
// raw gRPC calls) against a relay's port.

import FleetEngineMessages
import FleetSim
import Foundation
import GRPCHealth
import GRPCProtocol
import HTTP2Transport
import JSONWebToken
import JourneySharing
import Logging
import NATSClient
import NATSTestSupport
import Primitives
import TestSupport
import Testing

@testable import TripRelay

/// What the end-to-end tests share: FleetSim, relays, watchers.
enum RelayE2E {
  static let provider = "rt"

  /// A FleetSim on a real socket with `trips` short trips (they end within about 20 s).
  static func sim(
    trips: Int, auth: FleetSimConfiguration.Auth? = nil, load: LoadGeneration? = nil, seconds: Double = 6
  ) throws -> (FleetSim, Int) {
    var simulation = SimulationConfiguration()
    simulation.provider = provider
    simulation.tripCount = trips
    simulation.seed = 3
    let planner = TripSimulator(configuration: simulation)
    let longest = (0..<trips).map { planner.plan(index: $0).finishTime }.max() ?? 1
    simulation.speedup = longest / seconds
    simulation.startTime = unixTime()
    let sim = try FleetSim(
      configuration: FleetSimConfiguration(
        simulation: simulation, updateInterval: .milliseconds(250), auth: auth, load: load),
      logger: silentLogger())
    return (sim, try sim.start())
  }

  static func names(cluster: String = "e2e", provider: String = provider, partitions: Int = 1) throws -> RelayNames {
    try RelayNames(cluster: cluster, providerID: provider, tripPartitions: partitions)
  }

  static func configuration(
    _ id: String, nats: NATSConnectionConfiguration, simPort: Int, names: RelayNames? = nil,
    authorization: DownstreamAuthorization = .insecureNoAuthorization, logger: Logger = silentLogger()
  ) throws -> RelayConfiguration {
    let names = try names ?? Self.names()
    var upstream = JourneySharingConfiguration(
      host: "127.0.0.1", port: simPort, security: .plaintext, providerID: names.providerID, fetchMode: .stream,
      logger: silentLogger())
    upstream.deliveryThreads = 2
    return RelayConfiguration(
      relayID: id, nats: nats, names: names, upstream: upstream, authorization: authorization, maxTrips: 100,
      ackWait: .seconds(5), logger: logger)
  }

  static func nats(_ url: String) -> NATSConnectionConfiguration { NATSConnectionConfiguration(servers: [url]) }

  /// Starts `configuration`'s relay and its run loop; waits until it is ready.
  static func start(
    _ configuration: RelayConfiguration, onEvent: (@Sendable (RelayEvent) -> Void)? = nil
  ) async throws -> (TripRelay, Task<Void, Never>) {
    let relay = try await TripRelay.start(configuration, onEvent: onEvent)
    let runner = Task { await relay.run() }
    let ready = await eventually(timeout: .seconds(30)) { relay.isReady }
    try #require(ready, "relay \(configuration.relayID) did not become ready")
    return (relay, runner)
  }

  static func stop(_ relays: [(TripRelay, Task<Void, Never>)]) async {
    for (relay, _) in relays { await relay.shutdown() }
    for (_, runner) in relays { await runner.value }
  }

  /// Streaming consumer API pointed at a relay.
  static func watcher(
    port: Int, token: String? = nil, tls: JourneySharingConfiguration.TLS? = nil, provider: String = provider
  ) throws -> JourneySharingServices {
    var configuration = JourneySharingConfiguration(
      host: tls == nil ? "127.0.0.1" : "localhost", port: port, security: tls.map { .tls($0) } ?? .plaintext,
      providerID: provider, fetchMode: .stream, logger: silentLogger())
    configuration.deliveryThreads = 2
    configuration.maxRequestsPerSecond = nil
    if let token { configuration.authorization = StaticTokenProvider(token: token) }
    return try JourneySharingServices(configuration: configuration)
  }

  /// Follows `name` until its end; returns the statuses seen (changes only) and the first error.
  static func follow(_ services: JourneySharingServices, _ name: String, stopOnError: Bool = false) async
    -> (statuses: [TripStatus], error: GRPCError?)
  {
    var statuses: [TripStatus] = []
    var firstError: GRPCError?
    for await update in services.tripService.tripModel(forTripName: name).updates() {
      if let status = update.snapshot?.tripStatus, statuses.last != status { statuses.append(status) }
      if let error = update.error, firstError == nil {
        firstError = error
        if stopOnError { break }
      }
    }
    return (statuses, firstError)
  }

  /// Every message of `names`' TRIPS streams.
  static func trips(_ jetStream: JetStream, _ names: RelayNames) async throws -> [JetStream.Message] {
    var all: [JetStream.Message] = []
    for stream in names.tripsStreams { all += try await jetStream.readStream(stream) }
    return all
  }
}

@Suite("Relay end to end (nats-server, FleetSim and watchers over real sockets)", .serialized)
struct RelayEndToEndTests {
  @Test("two relays share the trips; each final state is in TRIPS once; every request ends acked")
  func twoRelays() async throws {
    try await withNATSServer { server in
      let (sim, simPort) = try RelayE2E.sim(trips: 12)
      let events = Locked<[RelayEvent]>([])
      let relays = [
        try await RelayE2E.start(
          try RelayE2E.configuration("a", nats: RelayE2E.nats(server.url), simPort: simPort)
        ) { event in events.withLock { $0.append(event) } },
        try await RelayE2E.start(
          try RelayE2E.configuration("b", nats: RelayE2E.nats(server.url), simPort: simPort)
        ) { event in events.withLock { $0.append(event) } },
      ]
      let names = try RelayE2E.names()
      let jetStream = relays[0].0.jetStream
      let trips = (0..<12).compactMap { TripName(parsing: sim.simulator.tripName(index: $0)) }
      let first = try await TripRelay.submit(trips, names: names, to: jetStream)
      #expect(first.submitted == 12 && first.alreadyPending == 0)
      let again = try await TripRelay.submit(Array(trips.prefix(3)), names: names, to: jetStream)
      #expect(again.submitted == 0 && again.alreadyPending == 3)
      let finished = await eventually(timeout: .seconds(60)) {
        relays.reduce(0) { $0 + $1.0.statistics().finished } == 12
      }
      #expect(finished, "trips finished: \(relays.map { $0.0.statistics().finished })")
      var finals: [String: Int] = [:]
      var firstIsFull: [String: Bool] = [:]
      var positions: [String: [UInt64]] = [:]
      for message in try await RelayE2E.trips(jetStream, names) {
        let name = try #require(message.headers[RelayNaming.tripNameHeader])
        let update = try TripUpdate(serializedBytes: message.data)
        if firstIsFull[name] == nil { firstIsFull[name] = update.fullTrip }
        positions[name, default: []].append(message.metadata?.streamSequence ?? 0)
        #expect(update.sequence == 0 && update.sendTime == nil, "TRIPS holds updates without a position")
        if message.headers[RelayNaming.finalHeader] == "true" {
          finals[name, default: 0] += 1
          #expect(update.trip?.isFinal == true)
        }
      }
      #expect(finals.count == 12 && finals.values.allSatisfy { $0 == 1 }, "finals per trip: \(finals)")
      #expect(firstIsFull.values.allSatisfy { $0 }, "every trip's first update holds the whole trip")
      // Every trip has its state in TRIPSTATE: the final one.
      for trip in trips {
        let state = try await jetStream.lastMessage(stream: names.stateStream, subject: names.stateSubject(trip))
        #expect(state?.headers[RelayNaming.finalHeader] == "true", "\(trip): no final state kept")
        #expect(
          state?.headers[RelayNaming.tripsSequenceHeader].flatMap(UInt64.init) == positions[trip.description]?.last)
      }
      let drained = await eventually(timeout: .seconds(20)) {
        let follow = try? await jetStream.streamInfo(names.followStream)
        let consumer = try? await jetStream.consumerInfo(stream: names.followStream, consumer: names.followConsumer)
        return follow?.state.messages == 0 && consumer?.numAckPending == 0
      }
      #expect(drained, "FOLLOW still holds requests")
      let started = events.withLock { $0 }.filter { if case .followStarted = $0 { true } else { false } }
      #expect(started.count == 12)
      await RelayE2E.stop(relays)
      await sim.shutdown()
    }
  }

  @Test("a follow request that is not a trip name of the provider is terminated, not retried")
  func malformedRequest() async throws {
    try await withNATSServer { server in
      let (sim, simPort) = try RelayE2E.sim(trips: 1)
      let relay = try await RelayE2E.start(
        try RelayE2E.configuration("a", nats: RelayE2E.nats(server.url), simPort: simPort))
      let names = try RelayE2E.names()
      _ = try await relay.0.jetStream.publish(subject: "follow.e2e.rt.junk", data: Array("not a trip name".utf8))
      _ = try await relay.0.jetStream.publish(
        subject: "follow.e2e.rt.other", data: Array("providers/other/trips/x".utf8))
      // A request whose subject is not its trip's.
      _ = try await relay.0.jetStream.publish(subject: "follow.e2e.rt.a", data: Array("providers/rt/trips/b".utf8))
      let rejected = await eventually(timeout: .seconds(20)) { relay.0.statistics().rejected == 3 }
      #expect(rejected, "rejected: \(relay.0.statistics().rejected)")
      let drained = await eventually(timeout: .seconds(10)) {
        (try? await relay.0.jetStream.streamInfo(names.followStream))?.state.messages == 0
      }
      #expect(drained)
      #expect(relay.0.statistics().followsStarted == 0)
      await RelayE2E.stop([relay])
      await sim.shutdown()
    }
  }

  @Test("a watcher of a trip nobody follows enqueues it; a late joiner gets the whole trip, then the end")
  func watchers() async throws {
    try await withNATSServer { server in
      let (sim, simPort) = try RelayE2E.sim(trips: 2)
      let relay = try await RelayE2E.start(
        try RelayE2E.configuration("a", nats: RelayE2E.nats(server.url), simPort: simPort))
      let port = try #require(relay.0.downstreamPort)
      let services = try RelayE2E.watcher(port: port)
      let name = sim.simulator.tripName(index: 0)
      let (statuses, _) = await RelayE2E.follow(services, name)
      #expect(statuses.last?.isFinal == true, "statuses: \(statuses)")
      let acked = await eventually(timeout: .seconds(10)) { relay.0.statistics().finished == 1 }
      #expect(acked, "the relay did not finish the trip it followed")
      let late = try RelayE2E.watcher(port: port)
      var snapshots: [TripSnapshot] = []
      for await update in late.tripService.tripModel(forTripName: name).updates() {
        if let snapshot = update.snapshot { snapshots.append(snapshot) }
      }
      #expect(snapshots.count == 1)
      #expect(snapshots.first?.trip.name == name && snapshots.first?.isFinal == true)
      #expect(relay.0.statistics().followsStarted == 1)
      // A trip FleetSim does not know: the watchers get NOT_FOUND, not silence; later ones at once.
      let ghost = "providers/rt/trips/no-such-trip"
      let (_, error) = await RelayE2E.follow(services, ghost, stopOnError: true)
      #expect(error?.code == .notFound, "\(String(describing: error))")
      let (_, again) = await RelayE2E.follow(late, ghost, stopOnError: true)
      #expect(again?.code == .notFound)
      await late.shutdown()
      await services.shutdown()
      await RelayE2E.stop([relay])
      await sim.shutdown()
    }
  }
}
