// Tests/JourneySharingTests/TripErrorTests.swift - errors, recovery, auth and invalid names
//
// Errors reach subscribers as GRPCError (NSError domain io.grpc, code the status code) and following
// retries with backoff while the model stays active; a server that heals is followed to the end. The servers
// (FleetSim's service, a unary-only Fleet Engine) run in memory on a virtual clock; the one check that needs a
// real server (no connection is made for an invalid name) also runs end to end over sockets.

import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("Errors and recovery (in memory)", .timeLimit(.minutes(5)))
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
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(faults: faults, now: $0) },
      client: configured { $0.fetchMode = mode }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(0)
      model.register(recorder)
      let retried = await fixture.wait { recorder.errors().count >= 3 }
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
      let stats = await fixture.fleetStats()
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
    // In memory the server is replaced in place: it fails every call, then is gone (every call fails as a
    // refused connection does), then the same simulation (seed and start time) answers without faults at the
    // same address (the same transport).
    try await VirtualFollowFixture.with({
      followSimConfiguration(speedup: 300, faults: FaultInjection(failureRate: 1, failureCode: .unavailable), now: $0)
    }) { fixture in
      await Self.followThroughAnOutage(fixture, index: index)
    }
  }

  /// Follows trip `index` of `fixture` (whose FleetSim fails every call) while the server fails, is gone, and
  /// then answers without faults.
  private static func followThroughAnOutage(_ fixture: VirtualFollowFixture, index: Int) async {
    let recorder = RecordingSubscriber()
    let name = fixture.simulator.tripName(index: index)
    let model = fixture.services.tripService.tripModel(forTripName: name)
    model.register(recorder)
    #expect(await fixture.wait { recorder.errors().count >= 3 })
    #expect(recorder.trips().isEmpty)
    // The failing server shuts down.
    fixture.transport.setUnreachable(GRPCStatus(code: .unavailable, message: "connection refused"))
    await fixture.pass(.milliseconds(200))

    // The healthy one starts: FleetSim's counters from here on are the healthy server's.
    let failing = await fixture.fleetStats()
    await fixture.setFaults(FaultInjection())
    fixture.transport.setUnreachable(nil)
    let done = await fixture.wait(timeout: .seconds(30)) { recorder.stopped(name) }
    #expect(done)
    let errors = recorder.errors()
    #expect(errors.count >= 3)
    #expect(errors.allSatisfy { $0.domain == "io.grpc" && $0.code == GRPCStatusCode.unavailable.rawValue }, "\(errors)")
    #expect(recorder.modelStates() == [.active, .inactive])
    #expect(recorder.statuses().count { isFinal($0) } == 1)
    #expect(deliveries(recorder.events()).last?.trip == finalTrip(of: fixture.simulator, index: index))
    let healthy = await fixture.fleetStats()
    #expect(healthy.streamsStarted - failing.streamsStarted >= 1)
    #expect(healthy.injectedFailures == failing.injectedFailures, "the healthy server injected failures")
    model.unregisterSubscriber(recorder)
  }

  @Test("A server failing its first three calls: three errors, then polling follows the trip to the end")
  func followingRecoversAfterScriptedFailures() async throws {
    let index = 10
    try await withServiceFixture(
      .inMemory,
      service: { now in
        let simulator = TripSimulator(
          configuration: SimulationConfiguration(
            provider: followProvider, tripCount: followTripCount, seed: followSeed, startTime: now + followLeadTime,
            speedup: 300))
        return UnaryOnlyFleetEngine(simulator: simulator, failFirst: 3, failureCode: .unavailable)
      },
      client: configured {
        $0.fetchMode = .auto
        $0.pollInterval = .milliseconds(20)
      }
    ) { fake, fixture in
      let simulator = fake.simulator
      let recorder = RecordingSubscriber()
      let name = simulator.tripName(index: index)
      let model = fixture.services.tripService.tripModel(forTripName: name)
      model.register(recorder)
      #expect(await fixture.wait(timeout: .seconds(30)) { recorder.stopped(name) })
      // UNIMPLEMENTED (the stream) is not reported; the three scripted UNAVAILABLEs are, in order. Errors that
      // come while an earlier one waits in the subscriber's mailbox merge into the latest (a slow subscriber
      // gets the latest state, as documented): under ThreadSanitizer CI saw failures 2 and 3 only, twice.
      let errors = recorder.errors(name)
      #expect(fake.counters.injectedFailures == 3)
      #expect(!errors.isEmpty && errors.count <= 3, "\(errors)")
      #expect(errors.allSatisfy { $0.domain == "io.grpc" && $0.code == 14 }, "\(errors)")
      let numbers = errors.compactMap { $0.message.split(separator: " ").last.flatMap { Int($0) } }
      #expect(numbers.count == errors.count && numbers == numbers.sorted() && Set(numbers).count == numbers.count)
      #expect(numbers.last == 3, "the latest error is always delivered: \(errors)")
      checkWholeTrip(recorderWithoutErrors(recorder, name: name), index: index, simulator: simulator)
      model.unregisterSubscriber(recorder)
    }
  }
}

/// A copy of `recorder`'s log of `name` without its errors (for the whole-trip check after expected errors).
private func recorderWithoutErrors(_ recorder: RecordingSubscriber, name: String) -> RecordingSubscriber {
  let copy = RecordingSubscriber()
  copy.replay(recorder.events(name).filter { if case .error = $0 { false } else { true } }, tripName: name)
  return copy
}

@Suite("Authorization (in memory)", .timeLimit(.minutes(5)))
struct TripAuthorizationTests {
  @Test("Short-lived tokens are fetched again before they expire, and never show up in errors")
  func tokensAreRefreshedBeforeExpiry() async throws {
    let index = 6
    let clock = FixtureClock()
    let provider = CountingTokenProvider { _, context in
      try followToken(tripID: context.tripID, expiresIn: 3, now: clock.now)
    }
    try await withFollowFixture(
      .inMemory,
      simulation: {
        followSimConfiguration(
          speedup: 200, simulatedNow: followNeverStarts, auth: .hs256(secret: followSecret), now: $0)
      },
      client: configured {
        $0.fetchMode = .poll
        $0.authorization = provider
        $0.tokenRefreshMargin = 2
      },
      clock: clock
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(index)
      model.register(recorder)
      // Each token is good for one second (3 s to exp, refreshed 2 s before): following for a while fetches more.
      #expect(await fixture.wait { provider.calls >= 2 }, "tokens fetched: \(provider.calls)")
      #expect(!recorder.trips().isEmpty)
      #expect(recorder.errors().isEmpty, "\(recorder.errors())")
      #expect(Set(provider.tokens).count == provider.calls)
      // Fetched because the token was about to expire, not for every call: calls outnumber fetches.
      #expect(await fixture.wait { await fixture.fleetStats().unaryCalls > provider.calls })
      #expect(await fixture.fleetStats().unauthenticated == 0)
      model.unregisterSubscriber(recorder)
    }
  }

  @Test(
    "A token provider that never answers: the fetch times out UNAVAILABLE, is cancelled, counts as a failure and is retried",
    arguments: FixtureTransport.allCases)
  func aHangingTokenProviderTimesOut(transport: FixtureTransport) async throws {
    let provider = HangingTokenProvider()
    try await withFollowFixture(
      transport, simulation: { followSimConfiguration(auth: .hs256(secret: followSecret), now: $0) },
      client: configured {
        $0.authorization = provider
        $0.tokenFetchTimeout = .milliseconds(500)
      }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(2)
      model.register(recorder)
      #expect(await fixture.wait { recorder.errors().count >= 2 })
      let errors = recorder.errors()
      #expect(
        errors.allSatisfy {
          $0.code == GRPCStatusCode.unavailable.rawValue && $0.message.contains("did not answer within")
        }, "\(errors)")
      #expect(model.health.consecutiveFailures >= 1, "\(model.health)")
      #expect(recorder.trips().isEmpty)
      #expect(await model.modelState() == .active)
      // Each fetch given up on was cancelled, and the next attempt asked again.
      #expect(await fixture.wait { provider.cancelled >= 1 && provider.calls >= 2 })
      model.unregisterSubscriber(recorder)
    }
  }

  @Test("A token for another trip: PERMISSION_DENIED, retried, and the token is not in the error")
  func aTokenForAnotherTripIsRefused() async throws {
    let clock = FixtureClock()
    let provider = CountingTokenProvider { _, _ in try followToken(tripID: "trip-999", now: clock.now) }
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(auth: .hs256(secret: followSecret), now: $0) },
      client: configured { $0.authorization = provider }, clock: clock
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(3)
      model.register(recorder)
      #expect(await fixture.wait { recorder.errors().count >= 3 })
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
      #expect(await fixture.fleetStats().permissionDenied >= 3)
      model.unregisterSubscriber(recorder)
    }
  }

  @Test(
    "A first token the server refuses: UNAUTHENTICATED, the token is dropped, a new one is fetched, following proceeds",
    arguments: ["expired", "wrongKey"])
  func aRefusedTokenIsFetchedAgain(kind: String) async throws {
    let clock = FixtureClock()
    let provider = CountingTokenProvider { number, context in
      guard number == 1 else { return try followToken(tripID: context.tripID, now: clock.now) }
      // An expired token (the client sees that too), or one that looks fine but is signed with another key
      // (only the server's UNAUTHENTICATED tells).
      return kind == "expired"
        ? try followToken(tripID: context.tripID, expiresIn: -3_600, now: clock.now)
        : try followToken(
          tripID: context.tripID, secret: Array("another-secret-another-secret-0123456789".utf8), now: clock.now)
    }
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(auth: .hs256(secret: followSecret), now: $0) },
      client: configured { $0.authorization = provider }, clock: clock
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(6)
      model.register(recorder)
      #expect(await fixture.wait { !recorder.trips().isEmpty }, "following never proceeded: \(recorder.errors())")
      let errors = recorder.errors()
      #expect(errors.count == 1, "\(errors)")
      #expect(errors.first?.code == GRPCStatusCode.unauthenticated.rawValue)
      #expect(errors.first?.domain == "io.grpc")
      for token in provider.tokens {
        #expect(!(errors.first?.description.contains(token) ?? false))
      }
      #expect(provider.calls >= 2)
      #expect(await fixture.fleetStats().unauthenticated == 1)
      model.unregisterSubscriber(recorder)
    }
  }
}

/// The trip-name checks, written once against ``TripFollowingFixture``.
enum TripNameChecks {
  static func invalidNamesFailLocally(_ transport: FixtureTransport) async throws {
    let names = ["trip-7", "providers/demo/trips/a:b", "", "providers/demo/trips/", "providers/Demo/trips/trip-1"]
    try await withFollowFixture(transport, simulation: { followSimConfiguration(now: $0) }) { fixture in
      let recorder = RecordingSubscriber()
      let models = names.map { fixture.services.tripService.tripModel(forTripName: $0) }
      for model in models { model.register(recorder) }
      #expect(await fixture.wait { names.allSatisfy { !recorder.errors($0).isEmpty } })
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
      await fixture.pass(.milliseconds(300))
      let stats = await fixture.fleetStats()
      #expect(stats.unaryCalls == 0 && stats.streamsStarted == 0 && stats.invalidArgument == 0, "\(stats)")
      let server = await fixture.serverCalls()
      #expect(server.started == 0, "\(server)")
      // Over sockets: not even a connection (in memory there are none to count).
      if transport == .sockets {
        #expect(server.connectionsAccepted == 0, "\(server)")
      }
      for model in models { model.unregisterSubscriber(recorder) }

      // A valid name gives the same model every time, and a different one for a different name.
      let valid = fixture.simulator.tripName(index: 1)
      let model = fixture.services.tripService.tripModel(forTripName: valid)
      #expect(fixture.services.tripService.tripModel(forTripName: valid) === model)
      #expect(fixture.services.tripService.tripModel(forTripName: fixture.simulator.tripName(index: 2)) !== model)
      #expect(model.parsedName?.tripID == "trip-1")
    }
  }
}

@Suite("Trip names (in memory)", .timeLimit(.minutes(5)))
struct TripNameTests {
  @Test("Invalid names fail at once with INVALID_ARGUMENT and nothing is sent; a name always gives the same model")
  func invalidNamesFailLocally() async throws {
    try await TripNameChecks.invalidNamesFailLocally(.inMemory)
  }

  @Test(
    "A name of another provider fails at once with INVALID_ARGUMENT naming the configured providerID; nothing is sent")
  func otherProviderFailsLocally() async throws {
    let name = "providers/another-project/trips/trip-1"
    try await withFollowFixture(.inMemory, simulation: { followSimConfiguration(now: $0) }) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.services.tripService.tripModel(forTripName: name)
      model.register(recorder)
      #expect(await fixture.wait { !recorder.errors(name).isEmpty })
      let error = try #require(recorder.errors(name).first)
      #expect(
        error.domain == "io.grpc" && error.code == GRPCStatusCode.invalidArgument.rawValue, "\(error.description)")
      #expect(error.message.contains("another-project") && error.message.contains(followProvider), "\(error.message)")
      await #expect(throws: GRPCError.self) { _ = try await fixture.services.tripService.fetchTrip(forTripName: name) }
      await fixture.pass(.milliseconds(300))
      let stats = await fixture.fleetStats()
      #expect(stats.unaryCalls == 0 && stats.streamsStarted == 0, "\(stats)")
      model.unregisterSubscriber(recorder)
    }
  }

  @Test("fetchTrip: one unary GetTrip returns the whole trip; an unknown trip is NOT_FOUND")
  func fetchTrip() async throws {
    try await withFollowFixture(.inMemory, simulation: { followSimConfiguration(simulatedNow: 600, now: $0) }) {
      fixture in
      let name = fixture.simulator.tripName(index: 3)
      let trip = try await fixture.services.tripService.fetchTrip(forTripName: name)
      #expect(trip.name == name)
      #expect(trip.tripStatus != .unknownTripStatus)
      #expect(!trip.remainingWaypoints.isEmpty || isFinal(trip.tripStatus))
      do {
        _ = try await fixture.services.tripService.fetchTrip(
          forTripName: "providers/\(followProvider)/trips/no-such-trip")
        Issue.record("an unknown trip was fetched")
      } catch {
        #expect((error as? GRPCError)?.code == .notFound, "\(error)")
      }
      let stats = await fixture.fleetStats()
      #expect(stats.unaryCalls == 2 && stats.streamsStarted == 0, "\(stats)")
    }
  }
}

@Suite("Trip names end to end (FleetSim over sockets)", .timeLimit(.minutes(5)))
struct TripNameEndToEndTests {
  @Test("Invalid names over sockets: INVALID_ARGUMENT at once, no call and no connection reach the server")
  func invalidNamesFailLocally() async throws {
    try await TripNameChecks.invalidNamesFailLocally(.sockets)
  }
}

/// A token provider that never answers until its task is cancelled; counts its calls and cancellations.
final class HangingTokenProvider: AuthorizationProvider {
  private let counts = Mutex((calls: 0, cancelled: 0))

  func fetchToken(with context: AuthorizationContext) async throws -> String {
    counts.withLock { $0.calls += 1 }
    do {
      try await Task.sleep(for: .seconds(3_600))
    } catch {
      counts.withLock { $0.cancelled += 1 }
      throw error
    }
    return "never"
  }

  var calls: Int { counts.withLock { $0.calls } }
  var cancelled: Int { counts.withLock { $0.cancelled } }
}
