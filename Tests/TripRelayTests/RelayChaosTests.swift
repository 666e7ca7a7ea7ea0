// Tests/TripRelayTests/RelayChaosTests.swift - three relays, a 3-node NATS cluster, 2,000 trips, and faults
//
// Real processes only, set up as a deployment would be: three nats-server processes clustered on 127.0.0.1
// (JetStream, replicas 3, TLS to clients, users with the documented permissions, `TRIPS` split into two
// partitions by the servers' subject mapping), one fleetsim process with 2,000 trips, three `tripwatch relay
// run` processes (each a NATS user with its nkey, serving TLS downstream to watchers with consumer tokens);
// the test enqueues the trips with `tripwatch relay submit` (a submitter user), watches some trips over gRPC
// through two relays (the public consumer API in streaming mode, with TLS and a server token), and reads the
// `TRIPS` partitions as a reader user. Meanwhile one relay gets SIGKILL, one NATS node is killed and
// restarted, and fleetsim sends GOAWAY every 10 s.
//
// It asserts that every trip's final state is in TRIPS exactly once and is the simulator's; that every
// follow request ends acked (FOLLOW empty, the consumer with nothing pending or un-acked); that no trip was
// followed upstream by two live relays at once for longer than AckWait (from the relays' follow-start and
// follow-stop lines, the killed relay's follows ending at its kill); and that the gRPC watchers saw the same
// final states. It prints `relay-chaos:` lines: the takeover time after the kill, messages published,
// duplicates suppressed.

import FleetEngineMessages
import FleetSim
import Foundation
import JSONWebToken
import JourneySharing
import Logging
import NATSClient
import NATSTestSupport
import Primitives
import TestSupport
import Testing
import TripRelay

@Suite("Relay chaos", .serialized)
struct RelayChaosTests {
  @Test(
    "2,000 trips through three relays while a relay is SIGKILLed, a NATS node restarts and fleetsim sends GOAWAY",
    .timeLimit(.minutes(10)))
  func relayChaos() async throws {
    let tripwatch = try builtExecutable("tripwatch", variable: "TRIPWATCH")
    let fleetsim = try builtExecutable("fleetsim", variable: "FLEETSIM")
    let directory = try makeTemporaryDirectory(prefix: "relay-chaos")
    // RELAY_CHAOS_KEEP=1 keeps the processes' logs (the directory is printed).
    let keep = ProcessInfo.processInfo.environment["RELAY_CHAOS_KEEP"] == "1"
    defer { if keep { print("relay-chaos: logs kept in \(directory)") } else { removeDirectory(directory) } }
    let provider = "relaychaos"
    let names = try RelayNames(cluster: "chaos", providerID: provider, tripPartitions: 2)
    let pki = try TestPKI()
    defer { pki.remove() }
    // NATS users: the relays by their nkeys, a submitter and a reader by password, each with the documented
    // permissions.
    let relayKey = try NKey.generate(role: .user)
    let relaySeedFile = "\(directory)/relay.nk"
    try relayKey.seedText.write(toFile: relaySeedFile, atomically: true, encoding: .utf8)
    try "submit-pass".write(toFile: "\(directory)/submitter.pass", atomically: true, encoding: .utf8)
    let (mappingSource, mappingDestination) = RelayNames.partitionMapping(partitions: 2)
    let natsConfig = """
      tls {
        cert_file: "\(pki.serverCertificateFile)"
        key_file: "\(pki.serverKeyFile)"
        timeout: 5
      }
      authorization {
        users = [
          { nkey: \(relayKey.publicKey), permissions: \(RelayPermissions.relay(names).serverConfig) }
          { user: submitter, password: submit-pass, permissions: \(RelayPermissions.submitter(names).serverConfig) }
          { user: reader, password: read-pass, permissions: \(RelayPermissions.reader(names).serverConfig) }
          { user: admin, password: admin-pass }
        ]
      }
      mappings = { "\(mappingSource)": "\(mappingDestination)" }
      """
    let cluster = try await NATSTestCluster.start(nodes: 3, name: "relay-chaos", configText: natsConfig)
    defer { cluster.remove() }
    let tlsURLs = cluster.servers.map { "tls://127.0.0.1:\($0.configuration.port)" }
    let natsArguments = tlsURLs.flatMap { ["--nats", $0] } + ["--nats-ca", pki.caFile]
    // The relays check watchers' tokens with this secret; the test's watchers hold a server token.
    let secretFile = "\(directory)/jwt.secret"
    try String(decoding: relayTestSecret, as: UTF8.self).write(toFile: secretFile, atomically: true, encoding: .utf8)

    // The simulation: 2,000 trips, time-compressed so that the longest ends `runSeconds` after they begin.
    let tripCount = 2_000
    let seed: UInt64 = 17
    let planner = TripSimulator(
      configuration: SimulationConfiguration(provider: provider, tripCount: tripCount, seed: seed))
    let plans = (0..<tripCount).map { planner.plan(index: $0) }
    let longest = plans.map(\.finishTime).max() ?? 1
    let runSeconds = 50.0
    let speedup = longest / runSeconds
    let lead = 8.0
    let startTime = unixTime() + lead
    let simulator = TripSimulator(
      configuration: SimulationConfiguration(
        provider: provider, tripCount: tripCount, seed: seed, startTime: startTime, speedup: speedup))
    let tripNames = (0..<tripCount).map { simulator.tripName(index: $0) }
    var expectedFinal: [String: TripStatus] = [:]
    for plan in plans {
      expectedFinal[tripNames[plan.index]] =
        simulator.trip(index: plan.index, atSimulatedSeconds: plan.finishTime + 1_000).tripStatus
    }

    let sim = try ChildProcess(
      name: "fleetsim", executable: fleetsim,
      arguments: [
        "--listen", "127.0.0.1:0", "--trips", "\(tripCount)", "--provider", provider, "--seed", "\(seed)",
        "--start-time", "\(startTime)", "--speedup", "\(speedup)", "--update-interval", "1", "--goaway-every", "10",
        "--max-concurrent-streams", "1000", "--stats-interval", "0",
      ], directory: directory)
    let simPort = try await sim.waitUntilListening()

    // Three relays; each holds at most 1,000 trips, so two can carry all 2,000 after the third dies.
    let ackWait = 6.0
    var relays: [ChildProcess] = []
    for index in 1...3 {
      relays.append(
        try ChildProcess(
          name: "relay\(index)", executable: tripwatch,
          arguments: ["relay", "run"] + natsArguments + [
            "--nats-nkey", relaySeedFile, "--cluster", names.cluster, "--trips-partitions", "2",
            "--target", "127.0.0.1:\(simPort)", "--plaintext", "--provider", provider, "--mode", "stream",
            "--relay-id", "relay\(index)", "--events", "--ack-wait", "\(ackWait)", "--replicas", "3",
            "--max-trips", "1000", "--cluster-max-ack-pending", "3000", "--stats-interval", "1",
            "--listen-cert", pki.serverCertificateFile, "--listen-key", pki.serverKeyFile,
            "--jwt-secret-file", secretFile, "--log-level", "warning",
          ], directory: directory))
    }
    var relayPorts: [Int] = []
    for relay in relays { relayPorts.append(try await relay.waitUntilListening()) }

    // Enqueue every trip with the command line.
    let tripsFile = "\(directory)/trips.txt"
    try tripNames.joined(separator: "\n").write(toFile: tripsFile, atomically: true, encoding: .utf8)
    let submit = try ChildProcess(
      name: "submit", executable: tripwatch,
      arguments: [
        "relay", "submit", "--trips-file", tripsFile, "--replicas", "3", "--cluster", names.cluster,
        "--trips-partitions", "2", "--nats-user", "submitter", "--nats-password-file", "\(directory)/submitter.pass",
      ]
        + natsArguments,
      directory: directory)
    #expect(await submit.waitUntilExit(timeout: .seconds(120)) == 0, "submit failed: \(submit.errorTail())")
    let submitted = submit.lines.first { $0.hasPrefix("submitted") } ?? "(no output; stderr: \(submit.errorTail()))"
    #expect(submitted == "submitted \(tripCount), already pending 0")

    // JetStream consumers reading the TRIPS partitions as a reader user, as any NATS client would.
    var natsConfiguration = NATSConnectionConfiguration(servers: tlsURLs, name: "relay-chaos reader")
    natsConfiguration.reconnect = .forever(wait: .milliseconds(250))
    natsConfiguration.credentials = .userPassword(user: "reader", password: "read-pass")
    natsConfiguration.tls = NATSTLSConfiguration(caFile: pki.caFile)
    let connection = try await NATSConnection.connect(natsConfiguration, logger: silentLogger())
    let jetStream = try connection.jetStream()
    var adminConfiguration = natsConfiguration
    adminConfiguration.credentials = .userPassword(user: "admin", password: "admin-pass")
    let admin = try await NATSConnection.connect(adminConfiguration, logger: silentLogger())
    let adminStream = try admin.jetStream()
    let ledger = TripsLedger()
    let readers = names.tripsStreams.map { stream in
      Task {
        var consumer: JetStream.OrderedConsumer?
        while !Task.isCancelled {
          do {
            if consumer == nil {
              consumer = try await jetStream.orderedConsumer(stream: stream, filterSubject: ">")
            }
            guard let message = try await consumer?.next(timeout: .seconds(1)) else { continue }
            ledger.record(message, stream: stream)
          } catch {
            try? await Task.sleep(for: .milliseconds(250))
          }
        }
      }
    }
    defer { for reader in readers { reader.cancel() } }

    // gRPC watchers: 60 trips through relay 2 and 40 through relay 3, with the public consumer API over TLS,
    // with a server token.
    let watched = Locked<[String: TripStatus]>([:])
    var watchers: [JourneySharingServices] = []
    var watcherTasks: [Task<Void, Never>] = []
    let serverToken = try consumerToken(tripID: "*", subject: "chaos-watchers@test", now: unixTime())
    for (relayIndex, range) in [(1, 0..<60), (2, 60..<100)] {
      var configuration = JourneySharingConfiguration(
        host: "localhost", port: relayPorts[relayIndex],
        security: .tls(JourneySharingConfiguration.TLS(trustRoots: .caFile(pki.caFile))), providerID: provider,
        fetchMode: .stream, logger: silentLogger())
      configuration.maxRequestsPerSecond = nil
      configuration.authorization = StaticTokenProvider(token: serverToken)
      let services = try JourneySharingServices(configuration: configuration)
      watchers.append(services)
      for trip in range {
        let name = tripNames[trip * (tripCount / 100)]
        let model = services.tripService.tripModel(forTripName: name)
        watcherTasks.append(
          Task {
            var last: TripStatus?
            for await update in model.updates() {
              if let snapshot = update.snapshot { last = snapshot.tripStatus }
            }
            if let last { watched.withLock { $0[name] = last } }
          })
      }
    }

    // The faults, on the trips' clock.
    try await sleep(until: startTime + 10)
    let killedRelay = relays[0]
    let killTime = unixTime()
    killedRelay.kill()
    try await sleep(until: startTime + 20)
    let restartedNode = cluster.servers[2]
    restartedNode.kill()
    try await sleep(until: startTime + 28)
    try restartedNode.restart()
    // Healthy means its streams caught up, which can take a while under the relays' writes; the rest of the
    // test does not need it, only the node back.
    try? await restartedNode.waitUntilHealthy(timeout: .seconds(30))

    // Every trip's final state in TRIPS.
    let allFinal = await eventually(timeout: .seconds(runSeconds + 120)) {
      ledger.finalCount >= tripCount
    }
    #expect(allFinal, "\(tripCount - ledger.finalCount) trips without a final state in TRIPS")
    // Every follow request acked: FOLLOW empty, nothing pending or un-acked on the consumer.
    var followInfo: JetStream.StreamInfo?
    var consumerInfo: JetStream.ConsumerInfo?
    let drained = await eventually(timeout: .seconds(60)) {
      followInfo = try? await adminStream.streamInfo(names.followStream)
      consumerInfo = try? await adminStream.consumerInfo(stream: names.followStream, consumer: names.followConsumer)
      return followInfo?.state.messages == 0 && consumerInfo?.numAckPending == 0 && consumerInfo?.numPending == 0
    }
    #expect(
      drained,
      """
      follow requests not all acked: FOLLOW has \(followInfo?.state.messages ?? 0) messages, consumer \
      \(consumerInfo?.numAckPending ?? -1) un-acked, \(consumerInfo?.numPending ?? 0) pending
      """)
    // The watchers end with their trips.
    let watchersDone = await eventually(timeout: .seconds(60)) { watched.withLock { $0.count } >= 100 }
    for task in watcherTasks { task.cancel() }
    for services in watchers { await services.shutdown() }

    // Stop the two live relays (they print their last stats line), then fleetsim.
    var stopTimes: [String: Double] = [:]
    for relay in relays[1...] {
      #expect(await relay.terminate() == 0, "\(relay.name) exited with an error: \(relay.errorTail())")
      stopTimes[relay.name] = unixTime()
    }
    await sim.terminate()
    var tripsHeld: UInt64 = 0
    for stream in names.tripsStreams { tripsHeld += try await adminStream.streamInfo(stream).state.messages }
    for reader in readers { reader.cancel() }
    await connection.close()
    await admin.close()

    // Final states: once each, the simulator's.
    let records = ledger.snapshot()
    let duplicated = records.filter { $0.value.finals > 1 }.map(\.key).sorted()
    #expect(duplicated.isEmpty, "trips with their final state in TRIPS more than once: \(duplicated.prefix(10))")
    let wrong = tripNames.filter { name in records[name]?.finalStatus.map { $0 != expectedFinal[name] } ?? false }
    #expect(wrong.isEmpty, "trips whose final state in TRIPS is not the simulator's: \(wrong.prefix(10))")

    // Watchers: the same final states as TRIPS.
    let seen = watched.withLock { $0 }
    #expect(watchersDone, "\(100 - seen.count) gRPC watchers did not see their trip end")
    let disagreeing = seen.filter { records[$0.key]?.finalStatus != $0.value }.map(\.key).sorted()
    #expect(disagreeing.isEmpty, "gRPC watchers whose final state differs from TRIPS: \(disagreeing.prefix(10))")

    // No trip followed by two live relays at once for longer than AckWait.
    var intervals: [String: [(relay: String, start: Double, end: Double)]] = [:]
    var heldAtKill: Set<String> = []
    for relay in relays {
      let end = relay === killedRelay ? killTime : (stopTimes[relay.name] ?? unixTime())
      var open: [String: Double] = [:]
      for event in FollowEventLine.parse(relay.lines) {
        if event.event == "follow-start" {
          open[event.trip] = event.time
        } else if let start = open.removeValue(forKey: event.trip) {
          intervals[event.trip, default: []].append((relay.name, start, event.time))
        }
      }
      for (trip, start) in open {
        intervals[trip, default: []].append((relay.name, start, end))
        if relay === killedRelay { heldAtKill.insert(trip) }
      }
    }
    var longestOverlap = 0.0
    var overlapTrip = ""
    for (trip, list) in intervals {
      for (i, a) in list.enumerated() {
        for b in list[(i + 1)...] where a.relay != b.relay {
          let overlap = min(a.end, b.end) - max(a.start, b.start)
          if overlap > longestOverlap {
            longestOverlap = overlap
            overlapTrip = trip
          }
        }
      }
    }
    #expect(
      longestOverlap <= ackWait,
      "trip \(overlapTrip) was followed by two live relays at once for \(longestOverlap) s (AckWait \(ackWait) s)")

    // Takeover: when the trips the killed relay held were followed again by another relay. A trip another relay
    // already followed at the kill (a redelivery while a NATS node restarted: two relays at once, within AckWait,
    // as checked above) is taken over at once.
    var takeovers: [Double] = []
    for trip in heldAtKill {
      let resumed = (intervals[trip] ?? []).filter { $0.relay != killedRelay.name && $0.end >= killTime }
      if let first = resumed.map(\.start).min() { takeovers.append(max(0, first - killTime)) }
    }
    takeovers.sort()
    // A trip the killed relay had finished itself (its final state stored by it, the request acked) and was
    // killed before writing its follow-stop line looks held, but its request is gone: nobody takes it over.
    let finishedAtKill = heldAtKill.filter { trip in
      records[trip]?.finalRelay == killedRelay.name
        && !(intervals[trip] ?? []).contains { $0.relay != killedRelay.name && $0.end >= killTime }
    }
    #expect(!heldAtKill.isEmpty, "the killed relay held no trip")
    // Both partitions carry trips, each trip in the one its name hashes to.
    #expect(ledger.streamsSeen.count == 2, "partitions read: \(ledger.streamsSeen)")
    #expect(ledger.misplaced(names).isEmpty, "trips outside their partition: \(ledger.misplaced(names).prefix(5))")
    #expect(
      takeovers.count + finishedAtKill.count == heldAtKill.count,
      "\(heldAtKill.count - takeovers.count - finishedAtKill.count) trips never taken over")

    let stats = relays.map { lastCounters($0.lines, prefix: "relay-stats: ") }
    func total(_ key: String) -> Int { stats.reduce(0) { $0 + (Int($1[key] ?? "") ?? 0) } }
    let median = takeovers.isEmpty ? 0 : takeovers[takeovers.count / 2]
    print(
      """
      relay-chaos: trips=\(tripCount) relays=3 nats_nodes=3 replicas=3 partitions=2 tls=yes auth=jwt nats_users=yes \
      ack_wait=\(ackWait)s \
      speedup=\(String(format: "%.1f", speedup)) watchers=\(seen.count)
      relay-chaos: takeover after SIGKILL: \(takeovers.count) trips, median \(String(format: "%.1f", median)) s, \
      max \(String(format: "%.1f", takeovers.last ?? 0)) s; \(finishedAtKill.count) finished by the killed relay \
      before its follow-stop line
      relay-chaos: messages published=\(total("published")) (TRIPS partitions hold \(tripsHeld), \
      \(ledger.streamsSeen.count) partitions used; partition of each trip as computed: \(ledger.misplaced(names).isEmpty)) \
      duplicates suppressed=\(total("duplicates")) publish retries=\(total("publish_retries"))
      relay-chaos: finals in TRIPS=\(records.values.filter { $0.finals > 0 }.count) duplicated=\(duplicated.count) \
      takeovers=\(total("takeovers")) longest double follow=\(String(format: "%.2f", max(0, longestOverlap))) s
      """)
  }

  /// Sleeps until Unix time `time`.
  private func sleep(until time: Double) async throws {
    let remaining = time - unixTime()
    if remaining > 0 { try await Task.sleep(for: .milliseconds(Int(remaining * 1000))) }
  }
}

/// What the test's JetStream consumer read from TRIPS, per trip.
final class TripsLedger: Sendable {
  struct Record {
    var messages = 0
    var finals = 0
    var finalStatus: TripStatus?
    /// The relay that stored the final state (its `Relay-ID` header).
    var finalRelay: String?
  }

  private let records = Locked<[String: Record]>([:])
  private let finals = Locked(0)
  private let streams = Locked<[String: Set<String>]>([:])

  var finalCount: Int { finals.withLock { $0 } }

  /// The streams any update was read from.
  var streamsSeen: Set<String> { streams.withLock { Set($0.values.flatMap { $0 }) } }

  /// Trips read from another stream than their computed partition's (or from several).
  func misplaced(_ names: RelayNames) -> [String] {
    streams.withLock { streams in
      streams.filter { trip, seen in
        guard let name = TripName(parsing: trip) else { return true }
        return seen != [names.tripsStream(for: name)]
      }.map(\.key)
    }
  }

  func record(_ message: JetStream.Message, stream: String) {
    guard let name = message.headers[RelayNaming.tripNameHeader] else { return }
    streams.withLock { _ = $0[name, default: []].insert(stream) }
    let isFinal = message.headers[RelayNaming.finalHeader] == "true"
    let status = isFinal ? (try? TripUpdate(serializedBytes: message.data))?.trip?.tripStatus : nil
    let first = records.withLock { records -> Bool in
      var record = records[name, default: Record()]
      record.messages += 1
      let first = isFinal && record.finals == 0
      if isFinal {
        record.finals += 1
        record.finalStatus = status
        record.finalRelay = message.headers[RelayNaming.relayHeader]
      }
      records[name] = record
      return first
    }
    if first { finals.withLock { $0 += 1 } }
  }

  func snapshot() -> [String: Record] { records.withLock { $0 } }
}
