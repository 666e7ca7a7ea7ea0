// Tests/JourneySharingTests/TripModelLifecycleTests.swift - stopping, slow subscribers, many trips,
// updates(), the journey-sharing session and refresh()
//
// FleetSim's service (or a misbehaving server) in memory on a virtual clock; the 500 trips over at most 8
// connections, a test about connections, stay end to end over sockets.

import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Primitives
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("Stopping (in memory)", .timeLimit(.minutes(5)))
struct TripStopTests {
  @Test(
    "After unregisterSubscriber returns no callback reaches the subscriber, and the stream is cancelled on the wire")
  func unregisterStopsCallbacksAndTheStream() async throws {
    // The trip stays NEW (with updates on every tick) for as long as the test runs. A delivery held by a
    // subscriber does not hold virtual time: each step waits at most 5 ms for the delivery threads, so updates
    // keep coming while a callback sleeps, as they do over sockets.
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(speedup: 200, simulatedNow: followNeverStarts, now: $0) },
      deliveryPatience: .milliseconds(5)
    ) { fixture in
      let model = fixture.model(6)
      // Several subscribers leave one after another while updates keep coming, each in the middle of a
      // delivery: once armed, a subscriber's next `didUpdate trip` says so and holds its delivery for 50 ms,
      // and the test unregisters it then. Each counts the callbacks it gets after unregisterSubscriber returned.
      let count = 4
      let armed = SharedCounter()
      let inside = SharedCounter()
      let unregistered = SharedCounter()
      let late = SharedCounter()
      let subscribers = (0..<count).map { number in
        RecordingSubscriber { _, event in
          if unregistered.hasBit(number) { late.increment() }
          if event.isTrip, armed.hasBit(number), !inside.hasBit(number) {
            inside.setBit(number)
            usleep(50_000)
          }
        }
      }
      for subscriber in subscribers { model.register(subscriber) }
      #expect(await fixture.wait { await fixture.fleetStats().streamsOpen == 1 })
      for (number, subscriber) in subscribers.enumerated() {
        #expect(await fixture.wait { subscriber.trips().count >= 2 }, "subscriber \(number) got no updates")
        armed.setBit(number)
        #expect(await fixture.wait { inside.hasBit(number) }, "subscriber \(number) got no more updates")
        model.unregisterSubscriber(subscriber)
        unregistered.setBit(number)
        if number < count - 1 {
          #expect(await model.modelState() == .active)
        }
      }
      #expect(model.subscriberCount == 0)
      // The last one gone, following stops: the server sees the stream cancelled.
      #expect(await fixture.wait { await fixture.fleetStats().streamsOpen == 0 })
      #expect(await fixture.wait { await fixture.serverCalls().cancelledByClient >= 1 })
      #expect(await model.modelState() == .inactive)
      let deliveredBefore = subscribers.map(\.count)
      // Updates would have come every 20 ms.
      await fixture.pass(.milliseconds(200))
      #expect(late.value == 0, "callbacks after unregisterSubscriber returned")
      #expect(subscribers.map(\.count) == deliveredBefore)
      #expect(subscribers.allSatisfy { !$0.finished() && $0.errors().isEmpty })
      #expect(await fixture.fleetStats().streamsStarted == 1)
    }
  }

  @Test("Unregistering from inside a callback returns (no deadlock), and following stops")
  func unregisterFromInsideACallback() async throws {
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(speedup: 200, simulatedNow: followNeverStarts, now: $0) }
    ) { fixture in
      let model = fixture.model(6)
      let returned = SharedCounter()
      let deliveriesAtUnregister = SharedCounter(-1)
      let subscriber = RecordingSubscriber()
      subscriber.hook = { [unowned subscriber] model, event in
        guard event.isTrip, returned.value == 0 else { return }
        let trips = subscriber.trips().count
        guard trips >= 3 else { return }
        model.unregisterSubscriber(subscriber)
        deliveriesAtUnregister.store(trips)
        returned.store(1)
      }
      model.register(subscriber)
      #expect(await fixture.wait { returned.value == 1 }, "unregisterSubscriber did not return")
      #expect(await fixture.wait { await fixture.fleetStats().streamsOpen == 0 })
      #expect(await model.modelState() == .inactive)
      #expect(model.subscriberCount == 0)
      await fixture.pass(.milliseconds(200))
      // The delivery that unregistered may finish its own callbacks, but no later delivery comes.
      #expect(subscriber.trips().count == deliveriesAtUnregister.value)
      #expect(subscriber.modelStates() == [.active])

      // The model can be followed again afterwards.
      let again = RecordingSubscriber()
      model.register(again)
      #expect(await fixture.wait { !again.trips().isEmpty })
      model.unregisterSubscriber(again)
      #expect(await fixture.wait { await fixture.fleetStats().streamsOpen == 0 })
    }
  }
}

@Suite("Slow subscribers (in memory)", .timeLimit(.minutes(5)))
struct SlowSubscriberFollowingTests {
  @Test("A subscriber sleeping 200 ms per callback delays no other trip, and gets the final state once, merged")
  func aSlowSubscriberGetsMergedUpdates() async throws {
    // The slow subscriber holds its delivery thread for 200 ms of the fixture's clock (virtual time in memory)
    // per callback. Virtual time does not wait for it: each step waits at most 5 ms for the delivery threads, so
    // the trips go on while it sleeps, as they do in wall time over sockets.
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(speedup: 200, now: $0) }, deliveryPatience: .milliseconds(5)
    ) { fixture in
      let slowName = fixture.simulator.tripName(index: 10)
      let fastName = fixture.simulator.tripName(index: 11)
      let slow = RecordingSubscriber { _, _ in fixture.sleepOnClock(.milliseconds(200)) }
      let fast = RecordingSubscriber()
      fixture.model(10).register(slow)
      fixture.model(11).register(fast)
      #expect(await fixture.wait(timeout: .seconds(30)) { fast.stopped(fastName) })
      let slowDeliveriesThen = slow.trips(slowName).count
      #expect(fast.trips(fastName).count >= 10)
      #expect(
        fast.trips(fastName).count >= 4 * max(slowDeliveriesThen, 1),
        "fast \(fast.trips(fastName).count) vs slow \(slowDeliveriesThen)")
      checkWholeTrip(fast, index: 11, simulator: fixture.simulator)

      #expect(await fixture.wait(timeout: .seconds(40)) { slow.stopped(slowName) })
      #expect(slow.modelStates(slowName) == [.active, .inactive])
      let statuses = slow.statuses(slowName)
      #expect(statuses.count { isFinal($0) } == 1)
      let delivered = deliveries(slow.events(slowName))
      #expect(delivered.count < fast.trips(fastName).count)
      let last = try #require(delivered.last)
      #expect(last.trip == finalTrip(of: fixture.simulator, index: 10))
      // What changed while it slept arrives merged into one delivery.
      #expect(last.fields.isSuperset(of: [.tripStatus, .routeLastVehicleLocation]), "\(last.fields)")
      #expect(
        Set(last.callbacks)
          == expectedCallbacks(for: last.fields, in: TripSnapshot(trip: last.trip!, tripID: "trip-10")))
      #expect(slow.overlapCount == 0 && fast.overlapCount == 0)
    }
  }
}

/// Counts, per trip, the final statuses and the model becoming inactive.
private final class FinalCounter: TripModelSubscriber {
  private let finals = Locked<[String: Int]>([:])
  private let inactive = Locked<Set<String>>([])
  private let errorCount = Atomic<Int>(0)

  func tripModel(_ tripModel: TripModel, didUpdate tripStatus: TripStatus) {
    guard isFinal(tripStatus) else { return }
    finals.withLock { $0[tripModel.tripName, default: 0] += 1 }
  }

  func tripModel(_ tripModel: TripModel, didUpdate modelState: TripModelState) {
    guard modelState == .inactive else { return }
    _ = inactive.withLock { $0.insert(tripModel.tripName) }
  }

  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {
    errorCount.add(1, ordering: .relaxed)
  }

  var finalCounts: [String: Int] { finals.withLock { $0 } }
  var inactiveCount: Int { inactive.withLock { $0.count } }
  var errors: Int { errorCount.load(ordering: .relaxed) }
}

@Suite("Many trips end to end (FleetSim over sockets)")
struct ManyTripsEndToEndTests {
  @Test("500 trips followed to the end over at most 8 connections (100 streams each)")
  func fiveHundredTripsOverFewConnections() async throws {
    let tripCount = 500
    try await FollowFixture.with(
      followSimConfiguration(tripCount: tripCount, speedup: 1_000, updateInterval: .milliseconds(50)),
      listen: GRPCServerConfiguration(maxConcurrentStreams: 100)
    ) { fixture in
      let counter = FinalCounter()
      let models = (0..<tripCount).map { fixture.model($0) }
      for model in models { model.register(counter) }
      let done = await eventually(timeout: .seconds(60)) { counter.inactiveCount == tripCount }
      #expect(done, "\(counter.inactiveCount) of \(tripCount) trips finished")
      let finals = counter.finalCounts
      #expect(finals.count == tripCount)
      #expect(finals.values.allSatisfy { $0 == 1 }, "a final status was delivered more than once")
      #expect(counter.errors == 0)
      let server = await fixture.sim.serverStats()
      #expect(server.connectionsAccepted >= 1 && server.connectionsAccepted <= 8, "\(server)")
      let stats = await fixture.sim.stats()
      #expect(stats.streamsCompleted == tripCount, "\(stats)")
      #expect(stats.streamsOpen == 0)
      for model in models { model.unregisterSubscriber(counter) }
    }
  }
}

@Suite("updates() sequence (in memory)", .timeLimit(.minutes(5)))
struct TripUpdatesSequenceTests {
  @Test("A slow consumer gets the changes merged, the final state once, and then the sequence ends")
  func updatesMergeAndEndAfterTheFinalState() async throws {
    // Slow enough (a trip takes seconds) that the first element comes before the trip ends, and the
    // trips begin 8 s after the server starts, so a slow start of the test cannot miss them. (In memory the
    // first elements come without virtual time moving: subscribing, the stream's start and its first message
    // need no timer.)
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(speedup: 100, simulatedNow: -8 * 100, now: $0) }
    ) { fixture in
      let model = fixture.model(10)
      var iterator = model.updates().makeAsyncIterator()
      // The first elements: the model becoming active, then the first trip.
      var first: TripModelUpdate?
      while let update = await iterator.next() {
        #expect(update.error == nil)
        if update.snapshot != nil {
          first = update
          break
        }
        #expect(update.modelState == .active)
      }
      let firstUpdate = try #require(first)
      #expect(firstUpdate.updatedPropertyFields.isSuperset(of: [.tripName, .tripStatus, .routeLastVehicleLocation]))
      #expect(firstUpdate.snapshot?.isFinal == false)

      // Consume nothing until the trip is over: the rest comes as one element.
      #expect(await fixture.wait(timeout: .seconds(30)) { await model.modelState() == .inactive })
      let merged = try #require(await iterator.next())
      let snapshot = try #require(merged.snapshot)
      #expect(snapshot.isFinal)
      #expect(snapshot.trip == finalTrip(of: fixture.simulator, index: 10))
      #expect(
        merged.updatedPropertyFields.isSuperset(of: [.tripStatus, .routeLastVehicleLocation, .activeRoute]),
        "\(merged.updatedPropertyFields)")
      #expect(await iterator.next() == nil)
      #expect(await iterator.next() == nil)
      #expect(model.subscriberCount == 0)
      #expect(await fixture.fleetStats().streamsCompleted == 1)
    }
  }

  @Test("Every element of a fast consumer has fields; the sequence ends by itself after the final state")
  func updatesForAFastConsumer() async throws {
    try await withFollowFixture(.inMemory, simulation: { followSimConfiguration(speedup: 100, now: $0) }) { fixture in
      let model = fixture.model(16)  // canceled
      // The consumer runs beside the test, which moves virtual time until the sequence has ended.
      let ended = SharedCounter()
      let consumer = Task {
        var updates: [TripModelUpdate] = []
        for await update in model.updates() { updates.append(update) }
        ended.store(1)
        return updates
      }
      let done = await fixture.wait(timeout: .seconds(40)) { ended.value == 1 }
      #expect(done, "the sequence did not end after the final state")
      if !done { consumer.cancel() }
      let updates = await consumer.value
      let withTrips = updates.filter { $0.snapshot != nil }
      // Trip 16 is canceled early; on a loaded machine the first element may already be final.
      #expect(withTrips.count >= 1)
      #expect(withTrips.allSatisfy { !$0.updatedPropertyFields.isEmpty })
      #expect(withTrips.count { $0.snapshot!.isFinal && $0.updatedPropertyFields.contains(.tripStatus) } == 1)
      #expect(updates.last?.snapshot?.tripStatus == .canceled)
      #expect(updates.last?.snapshot?.trip == finalTrip(of: fixture.simulator, index: 16))
      #expect(await model.modelState() == .inactive)
    }
  }

  @Test("A sequence dropped without being iterated does not keep following")
  func aDroppedSequenceDoesNotKeepFollowing() async throws {
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(speedup: 200, simulatedNow: followNeverStarts, now: $0) }
    ) { fixture in
      let model = fixture.model(0)
      do {
        // Made and dropped: "Iterating starts following; … when the sequence [is] dropped, [it] stops
        // following if nothing else subscribes" (TripModel.updates()).
        let updates = model.updates()
        _ = updates
      }
      // Give a stream (wrongly) started time to show.
      _ = await fixture.wait(timeout: .seconds(1)) { await fixture.fleetStats().streamsStarted > 0 }
      #expect(await fixture.fleetStats().streamsStarted == 0)
      #expect(await fixture.fleetStats().streamsOpen == 0)
      #expect(model.subscriberCount == 0)
      #expect(await model.modelState() == .inactive)
    }
  }

  @Test("Cancelling the consuming task stops following: the stream is cancelled on the wire")
  func cancellingTheConsumerStopsFollowing() async throws {
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(speedup: 200, simulatedNow: followNeverStarts, now: $0) }
    ) { fixture in
      let model = fixture.model(6)
      let received = SharedCounter()
      let ended = SharedCounter()
      let consumer = Task {
        for await update in model.updates() where update.snapshot != nil {
          received.increment()
        }
        ended.store(1)
      }
      #expect(await fixture.wait { received.value >= 3 })
      #expect(await fixture.fleetStats().streamsOpen == 1)
      consumer.cancel()
      #expect(await fixture.wait { ended.value == 1 }, "the sequence did not end when its task was cancelled")
      #expect(await fixture.wait { await fixture.fleetStats().streamsOpen == 0 })
      #expect(await model.modelState() == .inactive)
      #expect(model.subscriberCount == 0)
      if ended.value == 1 { await consumer.value }
    }
  }
}

@Suite("Journey-sharing session (in memory)", .timeLimit(.minutes(5)))
struct JourneySharingSessionFollowingTests {
  @Test("A session following a trip has a vehicle, the route ahead and GeoJSON; stop unsubscribes")
  func sessionFollowsATrip() async throws {
    // The session stamps what it receives with the process's wall clock, so frames are asked at wall time; the
    // virtual clock (the server's) starts at the wall clock's time, so the trip's own times are close to it.
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(speedup: 200, simulatedNow: followNeverStarts, now: $0) },
      startsAtWallTime: true
    ) { fixture in
      let model = fixture.model(6)
      let session = JourneySharingSession(tripModel: model)
      session.start()
      let ready = await fixture.wait {
        let state = session.state(at: unixTime())
        return state.vehicle != nil && !state.remainingRoute.isEmpty
      }
      #expect(ready)
      let state = session.state(at: unixTime())
      #expect(state.vehicle != nil)
      #expect(!state.remainingRoute.isEmpty)
      #expect(state.pickup != nil && state.dropoff != nil)
      #expect(state.cameraBounds != nil)
      #expect(state.tripStatus != .unknownTripStatus)
      #expect(session.interpolatedVehicle(at: unixTime()) != nil)
      let geoJSON = session.geoJSON(at: unixTime())
      #expect(geoJSON.contains("\"FeatureCollection\""))
      #expect(session.geoJSON().contains("FeatureCollection"))
      session.stop()
      #expect(model.subscriberCount == 0)
      #expect(await fixture.wait { await fixture.fleetStats().streamsOpen == 0 })
      #expect(await model.modelState() == .inactive)
    }
  }
}

@Suite("refresh() (in memory)", .timeLimit(.minutes(5)))
struct TripRefreshTests {
  @Test("refresh() fetches at once while polling slowly, and never runs two fetches at a time")
  func refreshFetchesPromptlyAndOnlyOnce() async throws {
    // Long before any trip starts (NEW throughout), every call held 300 ms by the server.
    try await withFollowFixture(
      .inMemory,
      simulation: {
        followSimConfiguration(
          speedup: 200, simulatedNow: followNeverStarts, faults: FaultInjection(addedLatency: .milliseconds(300)),
          now: $0)
      },
      // Polls a minute apart: no scheduled poll falls within the test, however slowly it runs.
      client: configured {
        $0.fetchMode = .poll
        $0.pollInterval = .seconds(60)
      }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(0)
      model.register(recorder)
      // The first poll.
      #expect(await fixture.wait { recorder.trips().count == 1 })
      #expect(await fixture.serverCalls().started == 1)

      // One refresh: a call now, not in a minute.
      model.refresh()
      #expect(await fixture.wait(timeout: .seconds(5)) { await fixture.serverCalls().started == 2 })
      #expect(await fixture.wait { await fixture.serverCalls().open == 0 })

      // Twenty at once: one fetch in flight absorbs the rest.
      let before = await fixture.serverCalls().started
      for _ in 0..<20 { model.refresh() }
      #expect(await fixture.wait(timeout: .seconds(5)) { await fixture.serverCalls().started > before })
      #expect(await fixture.wait { await fixture.serverCalls().open == 0 })
      await fixture.pass(.milliseconds(400))
      let after = await fixture.serverCalls().started
      #expect(after - before <= 3, "\(after - before) calls for 20 refreshes")
      #expect(after - before >= 1)
      #expect(await fixture.fleetStats().streamsStarted == 0)
      #expect(recorder.errors().isEmpty)
      model.unregisterSubscriber(recorder)
    }
  }

  @Test("A refresh() that fails while the stream is healthy starts no second stream")
  func aFailedRefreshWhileStreamingKeepsOneStream() async throws {
    // Every call is held 300 ms by the server, and the client gives a unary GetTrip 100 ms: the refresh
    // fails DEADLINE_EXCEEDED while the stream (no deadline) is open and fine.
    try await withFollowFixture(
      .inMemory,
      simulation: {
        followSimConfiguration(
          speedup: 200, simulatedNow: followNeverStarts, faults: FaultInjection(addedLatency: .milliseconds(300)),
          now: $0)
      },
      client: configured {
        $0.fetchMode = .stream
        $0.callTimeout = .milliseconds(100)
      }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(0)
      model.register(recorder)
      #expect(await fixture.wait { await fixture.fleetStats().streamsOpen == 1 && !recorder.trips().isEmpty })
      model.refresh()
      #expect(await fixture.wait { !recorder.errors().isEmpty })
      #expect(recorder.errors().map(\.code) == [GRPCStatusCode.deadlineExceeded.rawValue])
      // The retry after the backoff (20 ms) plus the server's 300 ms would have opened a second stream.
      await fixture.pass(.milliseconds(600))
      let streams = await fixture.fleetStats()
      #expect(streams.streamsStarted == 1, "a second stream was opened next to the healthy one: \(streams)")
      model.unregisterSubscriber(recorder)
      // Stopping must leave no stream open on the wire.
      let closed = await fixture.wait(timeout: .seconds(5)) { await fixture.fleetStats().streamsOpen == 0 }
      let after = await fixture.fleetStats()
      #expect(closed, "a stream stayed open after following stopped: \(after)")
    }
  }

  @Test("refresh() while streaming adds a unary fetch; without following it does nothing")
  func refreshWhileStreamingAndWhileStopped() async throws {
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(speedup: 200, simulatedNow: followNeverStarts, now: $0) }
    ) { fixture in
      let model = fixture.model(0)
      model.refresh()  // not following: nothing
      let recorder = RecordingSubscriber()
      model.register(recorder)
      #expect(await fixture.wait { await fixture.fleetStats().streamsOpen == 1 })
      #expect(await fixture.fleetStats().unaryCalls == 0)
      model.refresh()
      #expect(await fixture.wait { await fixture.fleetStats().unaryCalls == 1 })
      #expect(recorder.errors().isEmpty)
      model.unregisterSubscriber(recorder)
      #expect(await fixture.wait { await fixture.fleetStats().streamsOpen == 0 })
      model.refresh()
      await fixture.pass(.milliseconds(100))
      #expect(await fixture.fleetStats().unaryCalls == 1)
    }
  }
}

/// Ends every call OK at once, without a message: a stream that is over before it began.
private final class EmptyStreamServer: GRPCService, Sendable {
  private let calls = Atomic<Int>(0)
  var callCount: Int { calls.load(ordering: .relaxed) }

  func handle(_ call: any GRPCServerCallContext) {
    calls.add(1, ordering: .relaxed)
    call.finish(.ok)
  }
}

@Suite("Model lifetime and misbehaving servers (in memory)", .timeLimit(.minutes(5)))
struct ModelLifetimeTests {
  @Test("A model nobody holds or follows is let go with its trip; a registered one lives on until unregistered")
  func unusedModelsAreLetGo() async throws {
    try await withFollowFixture(.inMemory, simulation: { followSimConfiguration(now: $0) }) { fixture in
      let service = fixture.services.tripService
      let name = fixture.simulator.tripName(index: 3)
      weak var dropped: TripModel?
      do {
        let model = service.tripModel(forTripName: name)
        dropped = model
        #expect(service.hasTripModel(forTripName: name))
      }
      #expect(dropped == nil)
      #expect(!service.hasTripModel(forTripName: name))

      let recorder = RecordingSubscriber()
      weak var registered: TripModel?
      do {
        let model = service.tripModel(forTripName: name)
        registered = model
        model.register(recorder)
      }
      // Dropped by the caller, kept by its registration: it follows on and delivers.
      #expect(await fixture.wait { recorder.trips(name).count >= 2 })
      do {
        let model = try #require(registered)
        #expect(service.tripModel(forTripName: name) === model)
        model.unregisterSubscriber(recorder)
        #expect(await model.modelState() == .inactive)
      }
      // Unregistered and dropped, it is let go: its subscriber's delivery job, which holds it, went with the
      // registration.
      #expect(await eventually { registered == nil })
      #expect(!service.hasTripModel(forTripName: name))
      // Models made and dropped by the thousand do not pile up in the service.
      for index in 0..<5_000 { _ = service.tripModel(forTripName: "providers/demo/trips/t-\(index)") }
      #expect(service.allTripModels.isEmpty)
    }
  }

  @Test("A server that ends each stream OK before any message is retried with backoff, and reported UNAVAILABLE")
  func emptyStreamsAreRetriedWithBackoff() async throws {
    try await withServiceFixture(.inMemory, service: { _ in EmptyStreamServer() }) { fake, fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.services.tripService.tripModel(forTripName: "providers/demo/trips/trip-1")
      // The fixture's clock: virtual time, so the time that passed is exact.
      let registered = fixture.now
      model.register(recorder)
      #expect(await fixture.wait { recorder.errors().count >= 3 })
      await fixture.pass(.seconds(1))
      // No more calls than the tests' backoff (20 ms growing to 200 ms, ±20 %) allows in the time that
      // passed (about ten a second); retrying at once would make thousands.
      let calls = fake.callCount
      let allowed = maxAttempts(within: fixture.now - registered, backoff: followBackoff)
      #expect(calls >= 3 && calls <= allowed, "\(calls) calls; the backoff allows \(allowed)")
      #expect(recorder.errors().allSatisfy { $0.domain == "io.grpc" && $0.code == GRPCStatusCode.unavailable.rawValue })
      #expect(await model.modelState() == .active)
      model.unregisterSubscriber(recorder)
    }
  }
}
