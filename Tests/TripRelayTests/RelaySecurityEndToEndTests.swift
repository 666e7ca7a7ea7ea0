// Tests/TripRelayTests/RelaySecurityEndToEndTests.swift - who may watch, who may write, and what is never logged
//
// Real sockets throughout: a nats-server with the documented permissions (or TLS, or none at all), FleetSim,
// relays in this process, watchers through the consumer API with TLS and tokens.

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

/// A consumer token for `tripID` signed with `key` (RS256 or HS256).
private func token(_ tripID: String, key: JWTSigningKey, subject: String = "watcher@test") throws -> String {
  let now = unixTime()
  var claims = JWTClaims(
    issuer: subject, subject: subject, audience: [ConsumerTokenVerifier.fleetEngineAudience], expiresAt: now + 600,
    issuedAt: now - 10)
  claims.tripID = tripID
  return try JSONWebToken.sign(claims: claims, key: key)
}

@Suite("Relay security end to end (nats-server, TLS, tokens, permissions)", .serialized)
struct RelaySecurityEndToEndTests {
  @Test("over TLS: a token for trip A watches A, not B; no token is UNAUTHENTICATED; RS256 and HS256 keys both verify")
  func tokensOverTLS() async throws {
    let pki = try TestPKI()
    defer { pki.remove() }
    try await withNATSServer { server in
      let (sim, simPort) = try RelayE2E.sim(trips: 2)
      let publicKey = try String(contentsOfFile: pki.rsaPublicKeyFile, encoding: .utf8)
      let verifier = ConsumerTokenVerifier(keys: [
        ConsumerTokenVerifier.Key(.rs256(publicKeyPEM: publicKey)),
        ConsumerTokenVerifier.Key(.hs256(secret: relayTestSecret)),
      ])
      var configuration = try RelayE2E.configuration(
        "a", nats: RelayE2E.nats(server.url), simPort: simPort, authorization: .verified(verifier))
      configuration.downstream = GRPCServerConfiguration(
        host: "127.0.0.1", port: 0,
        tls: TLSServerConfiguration(certificateChainFile: pki.serverCertificateFile, privateKeyFile: pki.serverKeyFile))
      let relay = try await RelayE2E.start(configuration)
      let port = try #require(relay.0.downstreamPort)
      let tls = JourneySharingConfiguration.TLS(trustRoots: .caFile(pki.caFile))
      let tripA = sim.simulator.tripName(index: 0)
      let tripB = sim.simulator.tripName(index: 1)
      let idA = String(tripA.split(separator: "/").last!)
      let rsa = try RelayE2E.watcher(
        port: port, token: try token(idA, key: .rs256(privateKeyPEM: pki.rsaPrivateKeyPEM)), tls: tls)
      let (statuses, error) = await RelayE2E.follow(rsa, tripA)
      #expect(error == nil && statuses.last?.isFinal == true, "\(statuses) \(String(describing: error))")
      let (_, denied) = await RelayE2E.follow(rsa, tripB, stopOnError: true)
      #expect(denied?.code == .permissionDenied)
      let anonymous = try RelayE2E.watcher(port: port, tls: tls)
      let (_, unauthenticated) = await RelayE2E.follow(anonymous, tripB, stopOnError: true)
      #expect(unauthenticated?.code == .unauthenticated)
      let hs = try RelayE2E.watcher(port: port, token: try token("*", key: .hs256(secret: relayTestSecret)), tls: tls)
      let (hsStatuses, hsError) = await RelayE2E.follow(hs, tripB)
      #expect(hsError == nil && hsStatuses.last?.isFinal == true)
      // Only the authorized watch made the cluster follow: two trips, two follows.
      #expect(relay.0.statistics().followsStarted == 2)
      for services in [rsa, anonymous, hs] { await services.shutdown() }
      await RelayE2E.stop([relay])
      await sim.shutdown()
    }
  }

  @Test("mTLS: a watcher without a client certificate of the relay's client CA is refused; with one it watches")
  func mutualTLS() async throws {
    let pki = try TestPKI()
    defer { pki.remove() }
    try await withNATSServer { server in
      let (sim, simPort) = try RelayE2E.sim(trips: 1)
      var configuration = try RelayE2E.configuration("a", nats: RelayE2E.nats(server.url), simPort: simPort)
      configuration.downstream = GRPCServerConfiguration(
        host: "127.0.0.1", port: 0,
        tls: TLSServerConfiguration(
          certificateChainFile: pki.serverCertificateFile, privateKeyFile: pki.serverKeyFile, clientCAFile: pki.caFile))
      let relay = try await RelayE2E.start(configuration)
      let port = try #require(relay.0.downstreamPort)
      let trip = sim.simulator.tripName(index: 0)
      let without = try RelayE2E.watcher(
        port: port, tls: JourneySharingConfiguration.TLS(trustRoots: .caFile(pki.caFile)))
      let (_, refused) = await RelayE2E.follow(without, trip, stopOnError: true)
      #expect(refused?.code == .unavailable, "\(String(describing: refused))")
      let with = try RelayE2E.watcher(
        port: port,
        tls: JourneySharingConfiguration.TLS(
          trustRoots: .caFile(pki.caFile), clientCertificateChainFile: pki.clientCertificateFile,
          clientPrivateKeyFile: pki.clientKeyFile))
      let (statuses, error) = await RelayE2E.follow(with, trip)
      #expect(error == nil && statuses.last?.isFinal == true)
      await without.shutdown()
      await with.shutdown()
      await RelayE2E.stop([relay])
      await sim.shutdown()
    }
  }

  @Test("the documented permissions: a relay writes; a reader reads TRIPS but its forged update is refused by NATS")
  func permissions() async throws {
    let names = try RelayE2E.names()
    let config = """
      authorization {
        users = [
          { user: relay, password: relay-pass, permissions: \(RelayPermissions.relay(names).serverConfig) }
          { user: reader, password: reader-pass, permissions: \(RelayPermissions.reader(names).serverConfig) }
          { user: submitter, password: submitter-pass, permissions: \(RelayPermissions.submitter(names).serverConfig) }
        ]
      }
      """
    try await withNATSServer(configText: config) { server in
      let (sim, simPort) = try RelayE2E.sim(trips: 2)
      var nats = RelayE2E.nats(server.url)
      nats.credentials = .userPassword(user: "relay", password: "relay-pass")
      let relay = try await RelayE2E.start(try RelayE2E.configuration("a", nats: nats, simPort: simPort))
      // The submitter enqueues.
      var submitterConfiguration = RelayE2E.nats(server.url)
      submitterConfiguration.credentials = .userPassword(user: "submitter", password: "submitter-pass")
      let submitter = try await NATSConnection.connect(submitterConfiguration, logger: silentLogger())
      let trips = (0..<2).compactMap { TripName(parsing: sim.simulator.tripName(index: $0)) }
      #expect(try await TripRelay.submit(trips, names: names, to: submitter.jetStream()).submitted == 2)
      let finished = await eventually(timeout: .seconds(60)) { relay.0.statistics().finished == 2 }
      #expect(finished)
      // The reader reads…
      var readerConfiguration = RelayE2E.nats(server.url)
      readerConfiguration.credentials = .userPassword(user: "reader", password: "reader-pass")
      let reader = try await NATSConnection.connect(readerConfiguration, logger: silentLogger())
      var readerJetStream = JetStream.Configuration()
      readerJetStream.requestTimeout = .seconds(2)
      let readerStream = try reader.jetStream(readerJetStream)
      let stored = try await RelayE2E.trips(readerStream, names)
      #expect(stored.count >= 4)
      let state = try await readerStream.lastMessage(stream: names.stateStream, subject: names.stateSubject(trips[0]))
      #expect(state?.headers[RelayNaming.finalHeader] == "true")
      // …but cannot write: a forged final state, a forged state, a forged follow request are all refused.
      var forged = JetStream.OutboundMessage(
        subject: names.tripSubject(trips[1]), data: fullUpdate(testTrip(trips[1], status: .canceled)).serializedBytes(),
        messageID: RelayNaming.finalMessageID(trips[1]))
      forged.headers[RelayNaming.finalHeader] = "true"
      await #expect(throws: NATSError.self) { try await readerStream.publish(forged) }
      await #expect(throws: NATSError.self) {
        try await readerStream.publish(subject: names.stateSubject(trips[1]), data: [1])
      }
      await #expect(throws: NATSError.self) {
        try await readerStream.publish(subject: names.followSubject(trips[0]), data: Array(trips[0].description.utf8))
      }
      let after = try await RelayE2E.trips(readerStream, names)
      #expect(after.count == stored.count, "a forged message reached TRIPS")
      #expect(
        after.filter { $0.headers[RelayNaming.finalHeader] == "true" }.allSatisfy {
          $0.headers[RelayNaming.relayHeader] == "a"
        })
      await reader.close()
      await submitter.close()
      await RelayE2E.stop([relay])
      await sim.shutdown()
    }
  }

  @Test("forged takeover announcements change nothing: the relay keeps following, each final state once")
  func forgedTakeover() async throws {
    try await withNATSServer { server in
      let (sim, simPort) = try RelayE2E.sim(trips: 3, seconds: 8)
      let events = Locked<[RelayEvent]>([])
      let relay = try await RelayE2E.start(
        try RelayE2E.configuration("a", nats: RelayE2E.nats(server.url), simPort: simPort)
      ) {
        event in events.withLock { $0.append(event) }
      }
      let names = try RelayE2E.names()
      let trips = (0..<3).compactMap { TripName(parsing: sim.simulator.tripName(index: $0)) }
      _ = try await TripRelay.submit(trips, names: names, to: relay.0.jetStream)
      _ = await eventually(timeout: .seconds(20)) { relay.0.statistics().following == 3 }
      // What an attacker on plain subjects can send: takeover announcements (the old fencing), a second follow
      // request for a followed trip, requests of other providers.
      let rogue = try await NATSConnection.connect(RelayE2E.nats(server.url), logger: silentLogger())
      for trip in trips {
        var headers = NATSHeaders()
        headers[RelayNaming.relayHeader] = "rogue"
        headers[RelayNaming.deliveryHeader] = "99"
        for subject in ["relay.takeover.FOLLOW.relays", "relay.takeover.\(names.followStream).relays"] {
          try await rogue.publish(subject: subject, data: Array(trip.description.utf8), headers: headers)
        }
      }
      let finished = await eventually(timeout: .seconds(60)) { relay.0.statistics().finished == 3 }
      #expect(finished, "\(relay.0.statistics())")
      let stops = events.withLock { $0 }.compactMap { event -> RelayEvent.StopReason? in
        if case .followStopped(_, let reason, _) = event { reason } else { nil }
      }
      #expect(stops == [.final, .final, .final], "\(stops)")
      let finals = try await RelayE2E.trips(relay.0.jetStream, names).filter {
        $0.headers[RelayNaming.finalHeader] == "true"
      }
      #expect(finals.count == 3)
      await rogue.close()
      await RelayE2E.stop([relay])
      await sim.shutdown()
    }
  }

  @Test("two providers on one NATS: each relay cluster has its own streams and consumer, and both progress")
  func twoProviders() async throws {
    try await withNATSServer { server in
      var simulations: [(FleetSim, Int)] = []
      var relays: [(TripRelay, Task<Void, Never>)] = []
      var names: [RelayNames] = []
      for provider in ["pa", "pb"] {
        var simulation = SimulationConfiguration()
        simulation.provider = provider
        simulation.tripCount = 2
        simulation.seed = 9
        let planner = TripSimulator(configuration: simulation)
        simulation.speedup = ((0..<2).map { planner.plan(index: $0).finishTime }.max() ?? 1) / 6
        let sim = try FleetSim(
          configuration: FleetSimConfiguration(simulation: simulation, updateInterval: .milliseconds(250)),
          logger: silentLogger())
        let port = try sim.start()
        simulations.append((sim, port))
        let streamNames = try RelayE2E.names(cluster: "shared", provider: provider)
        names.append(streamNames)
        relays.append(
          try await RelayE2E.start(
            try RelayE2E.configuration(
              "relay-\(provider)", nats: RelayE2E.nats(server.url), simPort: port, names: streamNames)))
      }
      for (index, (sim, _)) in simulations.enumerated() {
        let trips = (0..<2).compactMap { TripName(parsing: sim.simulator.tripName(index: $0)) }
        #expect(try await TripRelay.submit(trips, names: names[index], to: relays[index].0.jetStream).submitted == 2)
      }
      let finished = await eventually(timeout: .seconds(60)) { relays.allSatisfy { $0.0.statistics().finished == 2 } }
      #expect(finished, "\(relays.map { $0.0.statistics() })")
      #expect(Set(names.map(\.followStream)).count == 2)
      await RelayE2E.stop(relays)
      for (sim, _) in simulations { await sim.shutdown() }
    }
  }

  @Test("NATS down when the relay starts: it stays up, NOT_SERVING, and becomes ready once NATS is there")
  func natsDownAtStart() async throws {
    let port = try freeLocalPort()
    let (sim, simPort) = try RelayE2E.sim(trips: 1)
    let configuration = try RelayE2E.configuration(
      "late", nats: RelayE2E.nats("nats://127.0.0.1:\(port)"), simPort: simPort)
    let relay = try await TripRelay.start(configuration)
    let runner = Task { await relay.run() }
    let relayPort = try #require(relay.downstreamPort)
    let channel = try GRPCChannel(
      host: "127.0.0.1", port: relayPort, configuration: GRPCChannelConfiguration(security: .plaintext))
    func health() async -> HealthCheckResponse.ServingStatus? {
      guard
        let response = try? await channel.unary(
          path: HealthMethods.check, request: HealthCheckRequest(service: "").serializedBytes())
      else { return nil }
      return try? HealthCheckResponse(serializedBytes: response.message).status
    }
    try await Task.sleep(for: .seconds(2))
    #expect(!relay.isReady)
    #expect(await health() == .notServing)
    let server = try await NATSTestServer.start(name: "late", port: port)
    defer { server.remove() }
    let ready = await eventually(timeout: .seconds(30)) { relay.isReady }
    #expect(ready)
    #expect(await eventually(timeout: .seconds(5)) { await health() == .serving })
    let names = try RelayE2E.names()
    _ = try await TripRelay.submit(
      TripName(parsing: sim.simulator.tripName(index: 0))!, names: names, to: relay.jetStream)
    #expect(await eventually(timeout: .seconds(60)) { relay.statistics().finished == 1 })
    await channel.shutdown()
    await relay.shutdown()
    await runner.value
    await sim.shutdown()
  }

  @Test("no secret in any log line at trace: NATS password in the URL, watchers' tokens, a NATS restart on the way")
  func noSecretsInLogs() async throws {
    let password = "nats-Pa55word-0f-the-relay"
    let config = "authorization { users = [ { user: relay, password: \"\(password)\" } ] }"
    let capture = LogCapture()
    let server = try await NATSTestServer.start(configText: config)
    defer { server.remove() }
    let (sim, simPort) = try RelayE2E.sim(trips: 2)
    let url = "nats://relay:\(password)@127.0.0.1:\(server.server.configuration.port)"
    let verifier = ConsumerTokenVerifier(keys: [ConsumerTokenVerifier.Key(.hs256(secret: relayTestSecret))])
    let configuration = try RelayE2E.configuration(
      "a", nats: RelayE2E.nats(url), simPort: simPort, authorization: .verified(verifier),
      logger: capture.logger("relay"))
    let relay = try await RelayE2E.start(configuration)
    let port = try #require(relay.0.downstreamPort)
    let watcherToken = try token("*", key: .hs256(secret: relayTestSecret))
    let watcher = try RelayE2E.watcher(port: port, token: watcherToken)
    let refused = try RelayE2E.watcher(port: port, token: watcherToken + "x")
    let tripName = sim.simulator.tripName(index: 0)
    async let followed = RelayE2E.follow(watcher, tripName)
    let (_, refusal) = await RelayE2E.follow(refused, sim.simulator.tripName(index: 1), stopOnError: true)
    #expect(refusal?.code == .unauthenticated)
    try await Task.sleep(for: .seconds(2))
    try server.server.restart()
    try await server.server.waitUntilHealthy()
    let (statuses, _) = await followed
    #expect(statuses.last?.isFinal == true)
    await watcher.shutdown()
    await refused.shutdown()
    await RelayE2E.stop([relay])
    await sim.shutdown()
    let lines = capture.all.map(\.description)
    #expect(lines.count > 5, "the relay logged \(lines.count) lines at trace")
    let leaks = lines.filter { line in
      [password, "relay:" + password, watcherToken, String(decoding: relayTestSecret, as: UTF8.self)].contains {
        line.contains($0)
      }
        || line.contains("eyJ")
    }
    #expect(leaks.isEmpty, "lines with a secret: \(leaks.prefix(3))")
  }
}
