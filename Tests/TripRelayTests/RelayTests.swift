// Tests/TripRelayTests/RelayTests.swift - the relay against a real nats-server and an in-process FleetSim
//
// One nats-server process on 127.0.0.1 (JetStream), FleetSim in this process on a real socket, relays in
// this process; watchers use the public consumer API in streaming mode against a relay's gRPC port.

import FleetEngineMessages
import FleetSim
import Foundation
import JourneySharing
import Logging
import NATSClient
import NATSTestSupport
import Primitives
import Testing
import TripRelay

@Suite("Relay", .serialized)
struct RelayTests {
  /// A FleetSim with `trips` short trips (they end within about 20 s).
  private func makeSim(trips: Int) throws -> (FleetSim, Int) {
    var simulation = SimulationConfiguration()
    simulation.provider = "rt"
    simulation.tripCount = trips
    simulation.seed = 3
    let planner = TripSimulator(configuration: simulation)
    let longest = (0..<trips).map { planner.plan(index: $0).finishTime }.max() ?? 1
    simulation.speedup = longest / 15
    simulation.startTime = unixTime()
    let sim = try FleetSim(
      configuration: FleetSimConfiguration(simulation: simulation, updateInterval: .milliseconds(250)),
      logger: silentLogger())
    return (sim, try sim.start())
  }

  private func relayConfiguration(_ id: String, nats: String, simPort: Int) -> RelayConfiguration {
    var upstream = JourneySharingConfiguration(
      host: "127.0.0.1", port: simPort, security: .plaintext, providerID: "rt", fetchMode: .stream,
      logger: silentLogger())
    upstream.deliveryThreads = 2
    return RelayConfiguration(
      relayID: id, natsServers: [nats], upstream: upstream, maxTrips: 100, ackWait: .seconds(5),
      logger: silentLogger())
  }

  /// A streaming client of a relay's gRPC port.
  private func watcherConfiguration(port: Int) -> JourneySharingConfiguration {
    var configuration = JourneySharingConfiguration(
      host: "127.0.0.1", port: port, security: .plaintext, providerID: "rt", fetchMode: .stream,
      logger: silentLogger())
    configuration.deliveryThreads = 2
    return configuration
  }

  @Test("two relays share the trips; each final state is in TRIPS once; every request ends acked")
  func twoRelays() async throws {
    try await withNATSServer { server in
      let (sim, simPort) = try makeSim(trips: 12)
      let events = Locked<[RelayEvent]>([])
      let relays = [
        try await TripRelay.start(relayConfiguration("a", nats: server.url, simPort: simPort)) { event in
          events.withLock { $0.append(event) }
        },
        try await TripRelay.start(relayConfiguration("b", nats: server.url, simPort: simPort)) { event in
          events.withLock { $0.append(event) }
        },
      ]
      let runners = relays.map { relay in Task { await relay.run() } }
      let names = (0..<12).compactMap { TripName(parsing: sim.simulator.tripName(index: $0)) }
      let first = try await TripRelay.submit(names, to: relays[0].jetStream)
      #expect(first.submitted == 12 && first.alreadyPending == 0)
      // Submitting again while the requests are pending enqueues nothing.
      let again = try await TripRelay.submit(Array(names.prefix(3)), to: relays[0].jetStream)
      #expect(again.submitted == 0 && again.alreadyPending == 3)

      let finished = await eventually(timeout: .seconds(60)) {
        relays.reduce(0) { $0 + $1.statistics().finished } == 12
      }
      #expect(finished, "trips finished: \(relays.map { $0.statistics().finished })")
      let messages = try await relays[0].jetStream.readStream("TRIPS")
      var finals: [String: Int] = [:]
      var firstIsFull: [String: Bool] = [:]
      for message in messages {
        let name = try #require(message.headers[RelayNaming.tripNameHeader])
        let update = try TripUpdate(serializedBytes: message.data)
        if firstIsFull[name] == nil { firstIsFull[name] = update.fullTrip }
        if message.headers[RelayNaming.finalHeader] == "true" {
          finals[name, default: 0] += 1
          let status = update.trip?.tripStatus
          #expect(
            status == .complete || status == .canceled, "\(name) final message has status \(String(describing: status))"
          )
        }
      }
      #expect(finals.count == 12 && finals.values.allSatisfy { $0 == 1 }, "finals per trip: \(finals)")
      #expect(firstIsFull.values.allSatisfy { $0 }, "every trip's first update holds the whole trip")
      let drained = await eventually(timeout: .seconds(20)) {
        let follow = try? await relays[0].jetStream.streamInfo("FOLLOW")
        let consumer = try? await relays[0].jetStream.consumerInfo(stream: "FOLLOW", consumer: "relays")
        return follow?.state.messages == 0 && consumer?.numAckPending == 0
      }
      #expect(drained, "FOLLOW still holds requests")
      // Both relays took a share (fetches are small and alternate).
      let started = events.withLock { $0 }.filter { if case .followStarted = $0 { true } else { false } }
      #expect(started.count == 12)
      for relay in relays { await relay.shutdown() }
      for runner in runners { await runner.value }
      await sim.shutdown()
    }
  }

  @Test("a follow request that is not a trip name of the provider is terminated, not retried")
  func malformedRequest() async throws {
    try await withNATSServer { server in
      let (sim, simPort) = try makeSim(trips: 1)
      let relay = try await TripRelay.start(relayConfiguration("a", nats: server.url, simPort: simPort))
      let runner = Task { await relay.run() }
      _ = try await relay.jetStream.publish(subject: "follow.rt.junk", data: Array("not a trip name".utf8))
      _ = try await relay.jetStream.publish(subject: "follow.rt.other", data: Array("providers/other/trips/x".utf8))
      let rejected = await eventually(timeout: .seconds(20)) { relay.statistics().rejected == 2 }
      #expect(rejected, "rejected: \(relay.statistics().rejected)")
      let drained = await eventually(timeout: .seconds(10)) {
        (try? await relay.jetStream.streamInfo("FOLLOW"))?.state.messages == 0
      }
      #expect(drained)
      #expect(relay.statistics().followsStarted == 0)
      await relay.shutdown()
      await runner.value
      await sim.shutdown()
    }
  }

  @Test("a gRPC watcher of a trip nobody follows enqueues it; a late joiner gets the whole trip, then the end")
  func watchers() async throws {
    try await withNATSServer { server in
      let (sim, simPort) = try makeSim(trips: 2)
      let relay = try await TripRelay.start(relayConfiguration("a", nats: server.url, simPort: simPort))
      let runner = Task { await relay.run() }
      let port = try #require(relay.downstreamPort)
      let configuration = watcherConfiguration(port: port)
      let services = try JourneySharingServices(configuration: configuration)
      let name = sim.simulator.tripName(index: 0)
      // Nobody submitted the trip: watching it through the relay makes the relay cluster follow it.
      var statuses: [TripStatus] = []
      for await update in services.tripService.tripModel(forTripName: name).updates() {
        if let status = update.snapshot?.tripStatus, statuses.last != status { statuses.append(status) }
      }
      #expect(statuses.last == .complete || statuses.last == .canceled, "statuses: \(statuses)")
      let acked = await eventually(timeout: .seconds(10)) { relay.statistics().finished == 1 }
      #expect(acked, "the relay did not finish the trip it followed")
      // A late joiner, after the end: the whole trip (its name and final status), then the stream ends.
      let late = try JourneySharingServices(configuration: configuration)
      var snapshots: [TripSnapshot] = []
      for await update in late.tripService.tripModel(forTripName: name).updates() {
        if let snapshot = update.snapshot { snapshots.append(snapshot) }
      }
      #expect(snapshots.count == 1)
      #expect(snapshots.first?.trip.name == name)
      #expect(snapshots.first?.isFinal == true)
      // Following it again enqueued nothing: one follow for the trip.
      #expect(relay.statistics().followsStarted == 1)
      await late.shutdown()
      await services.shutdown()
      await relay.shutdown()
      await runner.value
      await sim.shutdown()
    }
  }

  @Test(
    "a watcher whose trip's history cannot be read gets UNAVAILABLE from the relay, not an endless wait",
    .timeLimit(.minutes(1)))
  func historyReadFailureIsReported() async throws {
    try await withNATSServer { server in
      let (sim, simPort) = try makeSim(trips: 2)
      var relayConfiguration = relayConfiguration("a", nats: server.url, simPort: simPort)
      relayConfiguration.historyReadAttempts = 2
      let relay = try await TripRelay.start(relayConfiguration)
      let runner = Task { await relay.run() }
      let port = try #require(relay.downstreamPort)
      // A first watcher gets the relay's feed reading and sees its trip.
      let first = try JourneySharingServices(configuration: watcherConfiguration(port: port))
      var firstIterator = first.tripService.tripModel(forTripName: sim.simulator.tripName(index: 0)).updates()
        .makeAsyncIterator()
      var firstSnapshot: TripSnapshot?
      while firstSnapshot == nil, let update = await firstIterator.next() { firstSnapshot = update.snapshot }
      #expect(firstSnapshot != nil)
      // NATS goes away: the next watched trip's history cannot be read.
      server.server.stop()
      let second = try JourneySharingServices(configuration: watcherConfiguration(port: port))
      var error: GRPCError?
      for await update in second.tripService.tripModel(forTripName: sim.simulator.tripName(index: 1)).updates() {
        if let failure = update.error {
          error = failure
          break
        }
      }
      #expect(error?.code == .unavailable)
      #expect(error?.message.contains("cannot read") == true, "\(String(describing: error))")
      await second.shutdown()
      await first.shutdown()
      await relay.shutdown()
      await runner.value
      await sim.shutdown()
    }
  }

  @Test(
    "40 trips watched through one relay are read from TRIPS by one consumer, not one per trip; each watcher sees its end"
  )
  func oneFeedForManyTrips() async throws {
    try await withNATSServer { server in
      let tripCount = 40
      let (sim, simPort) = try makeSim(trips: tripCount)
      let relay = try await TripRelay.start(relayConfiguration("a", nats: server.url, simPort: simPort))
      let runner = Task { await relay.run() }
      let port = try #require(relay.downstreamPort)
      let configuration = watcherConfiguration(port: port)
      let services = try JourneySharingServices(configuration: configuration)
      let firstSeen = Locked(Set<String>())
      // Nobody submitted the trips: watching them enqueues them.
      let watching = Task {
        await withTaskGroup(of: (String, TripStatus?).self) { group in
          for index in 0..<tripCount {
            let name = sim.simulator.tripName(index: index)
            let model = services.tripService.tripModel(forTripName: name)
            group.addTask {
              var last: TripStatus?
              for await update in model.updates() {
                if let snapshot = update.snapshot {
                  last = snapshot.tripStatus
                  firstSeen.withLock { _ = $0.insert(name) }
                }
              }
              return (name, last)
            }
          }
          var finals: [String: TripStatus?] = [:]
          for await (name, status) in group { finals[name] = status }
          return finals
        }
      }
      // Every trip watched and under way: one consumer on TRIPS (the relay's feed; each trip's history read
      // was a consumer for a moment, deleted once read).
      var consumers: Int64 = -1
      let oneConsumer = await eventually(timeout: .seconds(15)) {
        guard firstSeen.withLock({ $0.count }) == tripCount, relay.statistics().watchers == tripCount else {
          return false
        }
        consumers = (try? await relay.jetStream.streamInfo("TRIPS").state.consumerCount) ?? -1
        return consumers == 1
      }
      #expect(
        oneConsumer,
        "watched \(firstSeen.withLock { $0.count }) of \(tripCount), watchers \(relay.statistics().watchers), consumers on TRIPS \(consumers)"
      )
      let finals = await watching.value
      #expect(finals.count == tripCount)
      let unfinished = finals.filter { $0.value != .complete && $0.value != .canceled }.map(\.key)
      #expect(unfinished.isEmpty, "watchers that did not see their trip end: \(unfinished.prefix(5))")
      await services.shutdown()
      await relay.shutdown()
      await runner.value
      await sim.shutdown()
    }
  }
}
