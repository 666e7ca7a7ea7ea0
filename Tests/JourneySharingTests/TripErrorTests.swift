// Tests/JourneySharingTests/TripErrorTests.swift - errors, recovery, auth and invalid names
//
// Errors reach subscribers as GRPCError (NSError domain io.grpc, code the status code) and following
// retries with backoff while the model stays active; a server that heals is followed to the end.

import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("Errors and recovery")
struct TripErrorTests {
  static let codes: [GRPCStatusCode] = [
    .invalidArgument, .notFound, .permissionDenied, .resourceExhausted, .unauthenticated, .aborted, .cancelled,
    .deadlineExceeded, .unavailable,
  ]

  @Test(
    "Every failure reaches the subscriber as io.grpc/code, again and again, and the model stays active",
    arguments: codes, [JourneySharingConfiguration.FetchMode.stream, .poll])
  func everyErrorClassIsReportedAndRetried(code: GRPCStatusCode, mode: JourneySharingConfiguration.FetchMode)
    async throws
  {
    let faults = FaultInjection(failureRate: 1, failureCode: code)
    try await FollowFixture.with(
      followSimConfiguration(faults: faults), client: { followClientConfiguration(port: $0, mode: mode) }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(0)
      model.register(recorder)
      let retried = await waitUntil { recorder.errors().count >= 3 }
      #expect(retried, "\(code.name) \(mode): \(recorder.errors().count) errors")
      let errors = recorder.errors()
      #expect(!errors.isEmpty)
      for error in errors {
        #expect(error.isGRPCError, "\(error.description)")
        #expect(error.domain == "io.grpc", "\(error.description)")
        #expect(error.code == code.rawValue, "\(code.name) \(mode): \(error.description)")
      }
      #expect(await model.modelState() == .active)
      #expect(recorder.modelStates() == [.active])
      #expect(recorder.trips().isEmpty)
      let stats = await fixture.sim.stats()
      #expect(stats.injectedFailures >= 3)
      if mode == .poll {
        #expect(stats.streamsStarted == 0)
      } else {
        #expect(stats.unaryCalls == 0)
      }
      model.unregisterSubscriber(recorder)
      #expect(await model.modelState() == .inactive)
    }
  }

  @Test("A server that fails, then is replaced by a healthy one on the same port: updates resume to the end")
  func followingRecoversWhenTheServerHeals() async throws {
    let index = 6  // the longest trip: still under way after the outage
    let startTime = followWallClock() + followLeadTime
    let failing = try FleetSim(
      configuration: followSimConfiguration(
        speedup: 300, faults: FaultInjection(failureRate: 1, failureCode: .unavailable), startTime: startTime),
      logger: quietLogger("fleetsim.failing"))
    let port = try failing.start()
    let services = try JourneySharingServices(configuration: followClientConfiguration(port: port))
    let recorder = RecordingSubscriber()
    let name = failing.simulator.tripName(index: index)
    let model = services.tripService.tripModel(forTripName: name)
    model.register(recorder)
    #expect(await waitUntil { recorder.errors().count >= 3 })
    #expect(recorder.trips().isEmpty)
    await failing.shutdown()

    // The same simulation (seed and start time) without faults, on the same port.
    let healthy = try FleetSim(
      configuration: followSimConfiguration(speedup: 300, startTime: startTime),
      listen: GRPCServerConfiguration(port: port), logger: quietLogger("fleetsim.healthy"))
    let restarted = try healthy.start()
    #expect(restarted == port)
    let done = await waitUntil(timeout: .seconds(30)) { recorder.stopped(name) }
    #expect(done)
    let errors = recorder.errors()
    #expect(errors.count >= 3)
    #expect(errors.allSatisfy { $0.domain == "io.grpc" && $0.code == GRPCStatusCode.unavailable.rawValue }, "\(errors)")
    #expect(recorder.modelStates() == [.active, .inactive])
    #expect(recorder.statuses().count { isFinal($0) } == 1)
    #expect(deliveries(recorder.events()).last?.trip == finalTrip(of: healthy.simulator, index: index))
    #expect(await healthy.stats().streamsStarted >= 1)
    model.unregisterSubscriber(recorder)
    await services.shutdown()
    await healthy.shutdown()
  }

  @Test("A server failing its first three calls: three errors, then polling follows the trip to the end")
  func followingRecoversAfterScriptedFailures() async throws {
    let index = 10
    let simulator = TripSimulator(
      configuration: SimulationConfiguration(
        provider: followProvider, tripCount: followTripCount, seed: followSeed,
        startTime: followWallClock() + followLeadTime, speedup: 300))
    let fake = UnaryOnlyFleetEngine(simulator: simulator, failFirst: 3, failureCode: .unavailable)
    let server = try GRPCServer(configuration: GRPCServerConfiguration(), service: fake, logger: quietLogger("fake"))
    let port = try server.start()
    let services = try JourneySharingServices(
      configuration: followClientConfiguration(port: port, mode: .auto, pollInterval: .milliseconds(20)))
    let recorder = RecordingSubscriber()
    let name = simulator.tripName(index: index)
    let model = services.tripService.tripModel(forTripName: name)
    model.register(recorder)
    #expect(await waitUntil(timeout: .seconds(30)) { recorder.stopped(name) })
    // UNIMPLEMENTED (the stream) is not reported; the three scripted UNAVAILABLEs are.
    let errors = recorder.errors(name)
    #expect(errors.map(\.code) == [14, 14, 14], "\(errors)")
    #expect(errors.allSatisfy { $0.domain == "io.grpc" })
    checkWholeTrip(recorderWithoutErrors(recorder, name: name), index: index, simulator: simulator)
    model.unregisterSubscriber(recorder)
    await services.shutdown()
    await server.shutdown(graceful: false)
  }
}

/// A copy of `recorder`'s log of `name` without its errors (for the whole-trip check after expected errors).
private func recorderWithoutErrors(_ recorder: RecordingSubscriber, name: String) -> RecordingSubscriber {
  let copy = RecordingSubscriber()
  copy.replay(recorder.events(name).filter { if case .error = $0 { false } else { true } }, tripName: name)
  return copy
}

@Suite("Authorization")
struct TripAuthorizationTests {
  @Test("Short-lived tokens are fetched again before they expire, and never show up in errors")
  func tokensAreRefreshedBeforeExpiry() async throws {
    let index = 6
    let provider = CountingTokenProvider { _, context in try followToken(tripID: context.tripID, expiresIn: 3) }
    try await FollowFixture.with(
      followSimConfiguration(speedup: 200, simulatedNow: followNeverStarts, auth: .hs256(secret: followSecret)),
      client: { port in
        var configuration = followClientConfiguration(port: port, mode: .poll, authorization: provider)
        configuration.tokenRefreshMargin = 2
        return configuration
      }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(index)
      model.register(recorder)
      // Each token is good for one second (3 s to exp, refreshed 2 s before): following for a while fetches more.
      #expect(await waitUntil { provider.calls >= 2 }, "tokens fetched: \(provider.calls)")
      #expect(!recorder.trips().isEmpty)
      #expect(recorder.errors().isEmpty, "\(recorder.errors())")
      #expect(Set(provider.tokens).count == provider.calls)
      // Fetched because the token was about to expire, not for every call: calls outnumber fetches.
      #expect(await waitUntil { await fixture.sim.stats().unaryCalls > provider.calls })
      #expect(await fixture.sim.stats().unauthenticated == 0)
      model.unregisterSubscriber(recorder)
    }
  }

  @Test("A token for another trip: PERMISSION_DENIED, retried, and the token is not in the error")
  func aTokenForAnotherTripIsRefused() async throws {
    let provider = CountingTokenProvider { _, _ in try followToken(tripID: "trip-999") }
    try await FollowFixture.with(
      followSimConfiguration(auth: .hs256(secret: followSecret)),
      client: { followClientConfiguration(port: $0, authorization: provider) }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(3)
      model.register(recorder)
      #expect(await waitUntil { recorder.errors().count >= 3 })
      let errors = recorder.errors()
      #expect(
        errors.allSatisfy { $0.domain == "io.grpc" && $0.code == GRPCStatusCode.permissionDenied.rawValue }, "\(errors)"
      )
      for error in errors {
        for token in provider.tokens {
          #expect(!error.description.contains(token) && !error.message.contains(token))
        }
      }
      #expect(await model.modelState() == .active)
      // A token that is accepted but does not grant the trip is kept: one fetch for every retry is not needed.
      #expect(provider.calls >= 1)
      #expect(await fixture.sim.stats().permissionDenied >= 3)
      model.unregisterSubscriber(recorder)
    }
  }

  @Test(
    "A first token the server refuses: UNAUTHENTICATED, the token is dropped, a new one is fetched, following proceeds",
    arguments: ["expired", "wrongKey"])
  func aRefusedTokenIsFetchedAgain(kind: String) async throws {
    let provider = CountingTokenProvider { number, context in
      guard number == 1 else { return try followToken(tripID: context.tripID) }
      // An expired token (the client sees that too), or one that looks fine but is signed with another key
      // (only the server's UNAUTHENTICATED tells).
      return kind == "expired"
        ? try followToken(tripID: context.tripID, expiresIn: -3_600)
        : try followToken(tripID: context.tripID, secret: Array("another-secret-another-secret-0123456789".utf8))
    }
    try await FollowFixture.with(
      followSimConfiguration(auth: .hs256(secret: followSecret)),
      client: { followClientConfiguration(port: $0, authorization: provider) }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(6)
      model.register(recorder)
      #expect(await waitUntil { !recorder.trips().isEmpty }, "following never proceeded: \(recorder.errors())")
      let errors = recorder.errors()
      #expect(errors.count == 1, "\(errors)")
      #expect(errors.first?.code == GRPCStatusCode.unauthenticated.rawValue)
      #expect(errors.first?.domain == "io.grpc")
      for token in provider.tokens {
        #expect(!(errors.first?.description.contains(token) ?? false))
      }
      #expect(provider.calls >= 2)
      #expect(await fixture.sim.stats().unauthenticated == 1)
      model.unregisterSubscriber(recorder)
    }
  }
}

@Suite("Trip names")
struct TripNameTests {
  @Test("Invalid names fail at once with INVALID_ARGUMENT and nothing is sent; a name always gives the same model")
  func invalidNamesFailLocally() async throws {
    let names = ["trip-7", "providers/demo/trips/a:b", "", "providers/demo/trips/", "providers/Demo/trips/trip-1"]
    try await FollowFixture.with(followSimConfiguration()) { fixture in
      let recorder = RecordingSubscriber()
      let models = names.map { fixture.services.tripService.tripModel(forTripName: $0) }
      for model in models { model.register(recorder) }
      #expect(await waitUntil { names.allSatisfy { !recorder.errors($0).isEmpty } })
      for (name, model) in zip(names, models) {
        #expect(model.parsedName == nil, "\(name)")
        #expect(fixture.services.tripService.tripModel(forTripName: name) === model)
        #expect(fixture.services.tripService.hasTripModel(forTripName: name))
        let errors = recorder.errors(name)
        #expect(!errors.isEmpty, "\(name)")
        for error in errors {
          #expect(
            error.domain == "io.grpc" && error.code == GRPCStatusCode.invalidArgument.rawValue, "\(error.description)")
        }
        #expect(recorder.trips(name).isEmpty)
      }
      // Give a (wrongly) sent call time to arrive; nothing may reach the server.
      try await Task.sleep(for: .milliseconds(300))
      let stats = await fixture.sim.stats()
      #expect(stats.unaryCalls == 0 && stats.streamsStarted == 0 && stats.invalidArgument == 0, "\(stats)")
      let server = await fixture.sim.serverStats()
      #expect(server.connectionsAccepted == 0 && server.callsStarted == 0, "\(server)")
      for model in models { model.unregisterSubscriber(recorder) }

      // A valid name gives the same model every time, and a different one for a different name.
      let valid = fixture.simulator.tripName(index: 1)
      let model = fixture.services.tripService.tripModel(forTripName: valid)
      #expect(fixture.services.tripService.tripModel(forTripName: valid) === model)
      #expect(fixture.services.tripService.tripModel(forTripName: fixture.simulator.tripName(index: 2)) !== model)
      #expect(model.parsedName?.tripID == "trip-1")
    }
  }

  @Test("A name of another provider fails at once with INVALID_ARGUMENT naming the configured providerID; nothing is sent")
  func otherProviderFailsLocally() async throws {
    let name = "providers/another-project/trips/trip-1"
    try await FollowFixture.with(followSimConfiguration()) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.services.tripService.tripModel(forTripName: name)
      model.register(recorder)
      #expect(await waitUntil { !recorder.errors(name).isEmpty })
      let error = try #require(recorder.errors(name).first)
      #expect(error.domain == "io.grpc" && error.code == GRPCStatusCode.invalidArgument.rawValue, "\(error.description)")
      #expect(error.message.contains("another-project") && error.message.contains(followProvider), "\(error.message)")
      await #expect(throws: GRPCError.self) { _ = try await fixture.services.tripService.fetchTrip(forTripName: name) }
      try await Task.sleep(for: .milliseconds(300))
      let stats = await fixture.sim.stats()
      #expect(stats.unaryCalls == 0 && stats.streamsStarted == 0, "\(stats)")
      model.unregisterSubscriber(recorder)
    }
  }

  @Test("fetchTrip: one unary GetTrip returns the whole trip; an unknown trip is NOT_FOUND")
  func fetchTrip() async throws {
    try await FollowFixture.with(followSimConfiguration(simulatedNow: 600)) { fixture in
      let name = fixture.simulator.tripName(index: 3)
      let trip = try await fixture.services.tripService.fetchTrip(forTripName: name)
      #expect(trip.name == name)
      #expect(trip.tripStatus != .unknownTripStatus)
      #expect(!trip.remainingWaypoints.isEmpty || isFinal(trip.tripStatus))
      do {
        _ = try await fixture.services.tripService.fetchTrip(forTripName: "providers/\(followProvider)/trips/no-such-trip")
        Issue.record("an unknown trip was fetched")
      } catch {
        #expect((error as? GRPCError)?.code == .notFound, "\(error)")
      }
      let stats = await fixture.sim.stats()
      #expect(stats.unaryCalls == 2 && stats.streamsStarted == 0, "\(stats)")
    }
  }
}
