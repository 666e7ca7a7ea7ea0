// Sources/tripwatch/RelayDemo.swift - `tripwatch relay demo`: two relays on an embedded FleetSim, watched both ways

import ArgumentParser
import CLinuxSystem
import FleetEngineMessages
import FleetSim
import HTTP2Transport
import JourneySharing
import Logging
import NATSClient
import Primitives
import ToolSupport
import TripRelay

struct RelayDemo: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "demo",
    abstract: "Two relays in this process follow an embedded FleetSim's trips; watch them over gRPC and JetStream.",
    discussion: """
      Needs a NATS server with JetStream (`make demo-relay` starts one). Enqueues every trip on FOLLOW, runs two \
      relays that share the work, follows every trip over gRPC through the second relay with the consumer API, \
      and reads TRIPS with a JetStream consumer. Prints one line per trip status seen each way; exits 0 once \
      every trip's final state arrived both ways, 6 at --duration. \(ToolExit.helpText)
      """)

  @OptionGroup var nats: NATSOptions

  @Option(help: "The relay cluster's name.")
  var cluster = "demo"

  @Option(help: "Number of simulated trips.")
  var trips = 8

  @Option(help: "Simulated seconds per real second.")
  var speedup = 120.0

  @Option(help: "Give up after this many seconds.")
  var duration = 120.0

  func validate() throws {
    guard trips >= 1 && trips <= 1_000 else { throw ValidationError("--trips must be 1…1000") }
    guard speedup > 0, duration > 0 else { throw ValidationError("--speedup and --duration must be > 0") }
  }

  func run() async throws {
    cls_line_buffer_stdout()
    var simulation = SimulationConfiguration()
    simulation.tripCount = trips
    simulation.speedup = speedup
    simulation.provider = "demo"
    let sim = try FleetSim(
      configuration: FleetSimConfiguration(simulation: simulation, updateInterval: .milliseconds(250)),
      logger: Logger(label: "journeysharing.fleetsim"))
    let simPort = try sim.start()
    var logger = Logger(label: "tripwatch.relay.demo")
    // Closing the NATS connections at the end logs disconnects as warnings; only errors matter here.
    logger.logLevel = .error
    var upstream = JourneySharingConfiguration(
      host: "127.0.0.1", port: simPort, security: .plaintext, providerID: "demo", fetchMode: .stream, logger: logger)
    upstream.deliveryThreads = 2
    let names = (0..<trips).compactMap { TripName(parsing: sim.simulator.tripName(index: $0)) }
    let streamNames: RelayNames
    do {
      streamNames = try RelayNames(cluster: cluster, providerID: "demo")
    } catch {
      throw ValidationError(error.description)
    }

    // Two relays sharing the work. The demo's watchers are in this process: no authorization (the relays
    // warn about it).
    var relays: [TripRelay] = []
    var runners: [Task<Void, Never>] = []
    for index in 1...2 {
      let configuration = RelayConfiguration(
        relayID: "demo-relay-\(index)", nats: try nats.connection(name: "demo relay \(index)"), names: streamNames,
        upstream: upstream, authorization: .insecureNoAuthorization, maxTrips: 100, ackWait: .seconds(10),
        logger: logger)
      let relay: TripRelay
      do {
        relay = try await TripRelay.start(configuration) { event in
          if case .followStarted(let trip, _, _) = event { print("relay \(index): following \(trip)") }
        }
      } catch {
        await sim.shutdown()
        throw ToolFailure(.unavailable, "cannot start a relay on NATS \(nats.redactedServers): \(error)")
      }
      relays.append(relay)
      runners.append(Task { await relay.run() })
    }
    let relayPort = relays[1].downstreamPort ?? 0
    print("relays serve gRPC on 127.0.0.1:\(relays[0].downstreamPort ?? 0) and 127.0.0.1:\(relayPort)")
    // The relays make the streams once NATS answers.
    var readyWait = 0
    while !relays.allSatisfy(\.isReady) && readyWait < 300 {
      try? await Task.sleep(for: .milliseconds(100))
      readyWait += 1
    }
    let (submitted, _) = try await TripRelay.submit(names, names: streamNames, to: relays[0].jetStream)
    print("submitted \(submitted) follow requests")

    // Consuming it over JetStream: a plain consumer of TRIPS.
    let finalsOverNATS = Locked<Set<String>>([])
    let jetStream = relays[0].jetStream
    let tripsStream = streamNames.tripsStream(partition: 0)
    let reader = Task {
      guard let consumer = try? await jetStream.orderedConsumer(stream: tripsStream, filterSubject: ">") else {
        return
      }
      while !Task.isCancelled {
        guard let message = try? await consumer.next(timeout: .seconds(1)) else { continue }
        let trip = message.headers[RelayNaming.tripNameHeader] ?? message.subject
        if message.headers[RelayNaming.finalHeader] == "true" {
          let status = (try? TripUpdate(serializedBytes: message.data))?.trip?.tripStatus
          print("nats: \(message.subject) final \(status?.protoName ?? "?")")
          finalsOverNATS.withLock { _ = $0.insert(trip) }
        }
      }
    }

    // Consuming it over gRPC: the consumer API, pointed at the second relay.
    var downstream = JourneySharingConfiguration(
      host: "127.0.0.1", port: relayPort, security: .plaintext, providerID: "demo", fetchMode: .stream, logger: logger)
    downstream.deliveryThreads = 2
    let services = try JourneySharingServices(configuration: downstream)
    let finalsOverGRPC = Locked<Set<String>>([])
    let watchers = names.map { name in
      let model = services.tripService.tripModel(forTripName: name.description)
      return Task {
        var last: TripStatus?
        for await update in model.updates() {
          guard let snapshot = update.snapshot, snapshot.tripStatus != last else { continue }
          last = snapshot.tripStatus
          print("grpc: \(name) \(snapshot.tripStatus.protoName)")
          if snapshot.isFinal { finalsOverGRPC.withLock { _ = $0.insert(name.description) } }
        }
      }
    }

    let started = unixTime()
    var done = false
    while unixTime() - started < duration {
      try? await Task.sleep(for: .milliseconds(250))
      done = finalsOverNATS.withLock { $0.count } == trips && finalsOverGRPC.withLock { $0.count } == trips
      if done { break }
    }
    for watcher in watchers { watcher.cancel() }
    reader.cancel()
    await services.shutdown()
    for relay in relays { await relay.shutdown() }
    for runner in runners { await runner.value }
    let published = relays.reduce(0) { $0 + $1.statistics().published }
    await sim.shutdown()
    let nats = finalsOverNATS.withLock { $0.count }
    let grpc = finalsOverGRPC.withLock { $0.count }
    print(
      "relay demo: \(trips) trips, \(published) updates published, final states: \(nats) over JetStream, \(grpc) over gRPC"
    )
    guard done else { throw ToolFailure(.incomplete, "not every trip finished within \(duration) s") }
  }
}
