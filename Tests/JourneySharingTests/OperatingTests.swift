// Tests/JourneySharingTests/OperatingTests.swift - metrics, tracing and the lifecycle of JourneySharingServices
//
// Metrics go to a TestMetrics factory of the test's own (never the global MetricsSystem), spans to an
// InMemoryTracer of its own (never the global InstrumentationSystem), so tests run in parallel. The figures
// are checked against what the server (FleetSim, in memory or over sockets) says it did.

import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import InMemoryTracing
import Logging
import MetricsTestKit
import Primitives
import ServiceLifecycle
import TestSupport
import Testing
import Tracing

@testable import JourneySharing

private let streamMethod = [("method", "journeysharing.v1.TripStreamService/GetTrip")]
private let unaryMethod = [("method", "maps.fleetengine.v1.TripService/GetTrip")]

/// Trips that end within a few virtual seconds at the tests' speedup.
private let shortTrips = [4, 10, 20]

/// The sum of every `calls_ended_total` series of `method`.
private func endedCalls(_ metrics: TestMetrics, _ method: [(String, String)]) -> Int64 {
  metrics.counters(label: "journeysharing_calls_ended_total").filter { counter in
    counter.dimensions.contains { $0 == method[0] }
  }.reduce(0) { $0 + $1.totalValue }
}

private func gaugeLast(_ metrics: TestMetrics, _ label: String) throws -> Double? {
  try metrics.expectGauge(label).lastValue
}

@Suite("Metrics")
struct MetricsTests {
  @Test("streamed trips: updates, calls, gauges and timers match FleetSim's own counts (in memory)")
  func streamedTripsInMemory() async throws {
    try await Self.streamedTrips(.inMemory)
  }

  static func streamedTrips(_ transport: FixtureTransport) async throws {
    let metrics = TestMetrics()
    try await withFollowFixture(
      transport, simulation: { followSimConfiguration(speedup: 400, now: $0) },
      client: { configuration in
        var configuration = configuration
        configuration.metricsFactory = metrics
        return configuration
      }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let models = shortTrips.map { fixture.model($0) }
      for model in models { model.register(recorder) }
      let done = await fixture.wait(timeout: .seconds(40)) {
        shortTrips.allSatisfy { recorder.stopped(fixture.simulator.tripName(index: $0)) }
      }
      #expect(done)
      await fixture.services.flushMetrics()
      let fleet = await fixture.fleetStats()
      let calls = await fixture.serverCalls()

      // Every update FleetSim sent was received, counted once.
      let received = try metrics.expectCounter("journeysharing_updates_received_total", streamMethod).totalValue
      #expect(received == Int64(fleet.updatesSent))
      #expect(received >= Int64(shortTrips.count))
      // Calls: as many started as the server saw, each ended once.
      let started = try metrics.expectCounter("journeysharing_calls_started_total", streamMethod).totalValue
      #expect(started == Int64(calls.started))
      #expect(endedCalls(metrics, streamMethod) == started)
      // Deliveries: at least one per delivered trip update, at most one per callback made.
      var tripDeliveries = 0
      var callbacks = 0
      for index in shortTrips {
        let events = recorder.events(fixture.simulator.tripName(index: index))
        tripDeliveries += deliveries(events).count
        callbacks += events.count
      }
      let delivered = try metrics.expectCounter("journeysharing_updates_delivered_total").totalValue
      #expect(delivered >= Int64(tripDeliveries))
      #expect(delivered <= Int64(callbacks))
      // Gauges: every trip ended (following stopped); the subscriber is still registered with each.
      #expect(try gaugeLast(metrics, "journeysharing_trips_followed") == 0)
      #expect(try gaugeLast(metrics, "journeysharing_subscribers") == Double(shortTrips.count))
      #expect(try gaugeLast(metrics, "journeysharing_streams_open") == 0)
      // Timers: one time to first update per trip; a latency per delivery run with a send time, none negative.
      let firstUpdate = try metrics.expectTimer("journeysharing_time_to_first_update_seconds").values
      #expect(firstUpdate.count == shortTrips.count)
      #expect(firstUpdate.allSatisfy { $0 >= 0 })
      let latency = try metrics.expectTimer("journeysharing_delivery_latency_seconds").values
      #expect(!latency.isEmpty)
      #expect(latency.count <= Int(delivered))
      #expect(latency.allSatisfy { $0 >= 0 })
      // No trip name anywhere in a label or a dimension.
      let labels = metrics.counters.map(\.label) + metrics.counters.flatMap { $0.dimensions.map(\.1) }
      #expect(!labels.contains { $0.contains("trips/") })

      for model in models { model.unregisterSubscriber(recorder) }
      #expect(try gaugeLast(metrics, "journeysharing_subscribers") == 0)
      if transport == .sockets {
        // Connection figures from the transport's statistics.
        #expect(try metrics.expectCounter("journeysharing_connection_attempts_total").totalValue >= 1)
        #expect(try gaugeLast(metrics, "journeysharing_connections_open").map { $0 >= 1 } == true)
      }
    }
  }

  @Test("polled trips: polls, round trips and the waits for the request budget (in memory)")
  func polledTrips() async throws {
    let metrics = TestMetrics()
    try await VirtualFollowFixture.with(
      { followSimConfiguration(speedup: 100, now: $0) },
      client: { configuration in
        var configuration = configuration
        configuration.fetchMode = .poll
        configuration.pollInterval = .milliseconds(200)
        configuration.maxRequestsPerSecond = 5
        configuration.metricsFactory = metrics
        configuration.metricsLabelPrefix = "consumer_"
        return configuration
      }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let models = (0..<4).map { fixture.model($0) }
      for model in models { model.register(recorder) }
      await fixture.advance(by: .seconds(5))
      for model in models { model.unregisterSubscriber(recorder) }
      await fixture.settle()
      await fixture.services.flushMetrics()
      let statistics = await fixture.services.statistics()
      let fleet = await fixture.stats()

      #expect(metrics.counters(label: "journeysharing_calls_started_total").isEmpty, "the prefix was not used")
      let started = try metrics.expectCounter("consumer_calls_started_total", unaryMethod).totalValue
      #expect(started == Int64(fleet.unaryCalls))
      // Each poll sent had reserved its time from the budget (a reservation still waiting when following
      // stopped was never sent).
      #expect(started <= Int64(statistics.requestBudget.requests))
      let ended = metrics.counters(label: "consumer_calls_ended_total").reduce(0) { $0 + $1.totalValue }
      #expect(ended == started)
      let answered = try metrics.expectCounter("consumer_updates_received_total", unaryMethod).totalValue
      #expect(answered >= 4)
      #expect(answered <= started)
      // Four trips polled every 0.2 s under a budget of 5 a second: polls waited, and each wait was counted.
      #expect(statistics.requestBudget.waitedRequests > 0)
      #expect(
        try metrics.expectCounter("consumer_polls_waited_for_budget_total").totalValue
          == Int64(statistics.requestBudget.waitedRequests))
      // One round trip per poll that ended.
      #expect(try metrics.expectTimer("consumer_poll_round_trip_seconds").values.count == Int(ended))
      #expect(try gaugeLast(metrics, "consumer_trips_followed") == 0)
    }
  }

  @Test("a send time from nowhere is clamped, not trapped on")
  func latencyClamp() throws {
    let metrics = TestMetrics()
    let recorder = JourneySharingMetrics(factory: metrics, prefix: "x_")
    recorder.recordDeliveryLatency(seconds: 1e300)
    recorder.recordDeliveryLatency(seconds: -5)
    recorder.recordDeliveryLatency(seconds: .nan)
    recorder.recordDeliveryLatency(seconds: 0.25)
    #expect(try metrics.expectTimer("x_delivery_latency_seconds").values == [86_400_000_000_000, 0, 0, 250_000_000])
  }
}

@Suite("Metrics end to end")
struct MetricsEndToEndTests {
  @Test("streamed trips: updates, calls, gauges, timers and connections match FleetSim's own counts (over sockets)")
  func streamedTripsOverSockets() async throws {
    try await MetricsTests.streamedTrips(.sockets)
  }

  @Test("GOAWAYs the server sends are counted (over sockets)")
  func goAways() async throws {
    let metrics = TestMetrics()
    try await FollowFixture.with(
      followSimConfiguration(speedup: 50, faults: FaultInjection(goAwayInterval: .milliseconds(300))),
      client: { port in
        var configuration = followClientConfiguration(port: port)
        configuration.metricsFactory = metrics
        return configuration
      }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(0)
      model.register(recorder)
      let sent = await eventually(timeout: .seconds(20)) { await fixture.sim.stats().injectedGoAways >= 2 }
      #expect(sent)
      let counted = await eventually(timeout: .seconds(20)) {
        await fixture.services.flushMetrics()
        return ((try? metrics.expectCounter("journeysharing_goaways_received_total").totalValue) ?? 0) >= 2
      }
      #expect(counted)
      model.unregisterSubscriber(recorder)
      let stats = await fixture.services.statistics().connections
      #expect(stats.goAwaysReceived >= 2)
      let attempts = try metrics.expectCounter("journeysharing_connection_attempts_total").totalValue
      #expect(attempts >= 1)
    }
  }
}

@Suite("Tracing")
struct TracingTests {
  @Test("a span per stream, child of the caller's span, with gRPC attributes; its context injected (in memory)")
  func streamSpans() async throws {
    let tracer = InMemoryTracer()
    try await VirtualFollowFixture.with(
      { followSimConfiguration(speedup: 400, now: $0) },
      client: { configuration in
        var configuration = configuration
        configuration.tracer = tracer
        return configuration
      }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(shortTrips[0])
      let caller = tracer.startSpan("caller")
      ServiceContext.withValue(caller.context) { model.register(recorder) }
      let done = await fixture.advance(until: { recorder.stopped(fixture.simulator.tripName(index: shortTrips[0])) })
      #expect(done)
      caller.end()
      let spans = tracer.finishedSpans.filter { $0.operationName == "journeysharing.v1.TripStreamService/GetTrip" }
      try #require(spans.count == 1)
      let span = spans[0]
      #expect(span.kind == .client)
      #expect(span.attributes["rpc.system"]?.toSpanAttribute() == "grpc")
      #expect(span.attributes["rpc.service"]?.toSpanAttribute() == "journeysharing.v1.TripStreamService")
      #expect(span.attributes["rpc.method"]?.toSpanAttribute() == "GetTrip")
      #expect(span.attributes["journeysharing.attempt"]?.toSpanAttribute() == 1)
      let status = span.attributes["rpc.grpc.status_code"]?.toSpanAttribute()
      #expect(
        status == .int64(Int64(GRPCStatusCode.ok.rawValue))
          || status == .int64(Int64(GRPCStatusCode.cancelled.rawValue)))
      #expect(span.traceID == caller.context.inMemorySpanContext?.traceID)
      #expect(span.parentSpanID == caller.context.inMemorySpanContext?.spanID)
      // The stream's own context went into its request metadata.
      let injected = tracer.performedContextInjections.map(\.values)
      #expect(
        injected.contains {
          $0[InMemoryTracer.spanIDKey] == span.spanID && $0[InMemoryTracer.traceIDKey] == span.traceID
        })
    }
  }

  @Test("failed polls: each attempt a span with its status code and attempt number (in memory)")
  func pollSpans() async throws {
    let tracer = InMemoryTracer()
    try await VirtualFollowFixture.with(
      {
        followSimConfiguration(
          speedup: 100, faults: FaultInjection(failureRate: 1, failureCode: .unavailable), now: $0)
      },
      client: { configuration in
        var configuration = configuration
        configuration.fetchMode = .poll
        configuration.tracer = tracer
        return configuration
      }
    ) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(0)
      model.register(recorder)
      let three = await fixture.advance(until: {
        tracer.finishedSpans.filter { $0.operationName == "maps.fleetengine.v1.TripService/GetTrip" }.count >= 3
      })
      #expect(three)
      model.unregisterSubscriber(recorder)
      let spans = tracer.finishedSpans.filter { $0.operationName == "maps.fleetengine.v1.TripService/GetTrip" }
      let attempts = spans.prefix(3).map { $0.attributes["journeysharing.attempt"]?.toSpanAttribute() }
      #expect(attempts == [.int64(1), .int64(2), .int64(3)])
      for span in spans.prefix(3) {
        #expect(
          span.attributes["rpc.grpc.status_code"]?.toSpanAttribute()
            == .int64(Int64(GRPCStatusCode.unavailable.rawValue)))
        #expect(span.status?.code == .error)
        // No caller context: each poll is a trace of its own.
        #expect(span.parentSpanID == nil)
      }
    }
  }

  @Test("the span's context is written into the call's metadata by the tracer's injector")
  func injection() throws {
    let tracer = InMemoryTracer()
    let tracing = CallTracing(tracer: tracer)
    let parent = tracer.startSpan("parent")
    var options = CallOptions(token: "t", timeout: nil)
    let span = try #require(tracing.startSpan(.unary, parent: parent.context, attempt: 2, options: &options))
    let context = try #require(span.context.inMemorySpanContext)
    #expect(options.metadata.first(InMemoryTracer.traceIDKey) == context.traceID)
    #expect(options.metadata.first(InMemoryTracer.spanIDKey) == context.spanID)
    #expect(options.metadata.first("authorization") == "Bearer t")
    CallTracing.end(span, status: GRPCStatus(code: .ok, message: ""))
    // Without a tracer (InstrumentationSystem's no-op), nothing is started and nothing written.
    var plain = CallOptions(token: nil, timeout: nil)
    #expect(CallTracing(tracer: nil).startSpan(.unary, parent: nil, attempt: 1, options: &plain) == nil)
    #expect(plain.metadata.first(InMemoryTracer.traceIDKey) == nil)
  }
}

/// Follows trips until the test is done, then returns: a service next to the JourneySharingServices in a group.
private struct FollowUntilShutdown: Service {
  let models: [TripModel]
  let recorder: RecordingSubscriber

  func run() async throws {
    for model in models { model.register(recorder) }
    try? await gracefulShutdown()
    for model in models { model.unregisterSubscriber(recorder) }
  }
}

@Suite("Lifecycle")
struct LifecycleTests {
  @Test("shutdown() called directly ends run(); a second shutdown() waits for the first (in memory)")
  func shutdownEndsRun() async throws {
    try await VirtualFollowFixture.with({ followSimConfiguration(speedup: 100, now: $0) }) { fixture in
      let recorder = RecordingSubscriber()
      let model = fixture.model(0)
      model.register(recorder)
      let following = await fixture.advance(until: { !recorder.events(fixture.simulator.tripName(index: 0)).isEmpty })
      #expect(following)
      let services = fixture.services
      try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await services.run() }
        tasks.addTask { await services.shutdown() }
        tasks.addTask { await services.shutdown() }
        try await tasks.waitForAll()
      }
      #expect(!model.isActive)
      #expect(fixture.transport.activeCalls == 0)
      model.unregisterSubscriber(recorder)
    }
  }

  @Test("cancelling run()'s task shuts the services down (in memory)")
  func cancelledRun() async throws {
    try await VirtualFollowFixture.with({ followSimConfiguration(speedup: 100, now: $0) }) { fixture in
      let services = fixture.services
      let task = Task { try await services.run() }
      task.cancel()
      try await task.value
      #expect(services.core.lifecycle.isShuttingDown)
    }
  }

  @Test("the default logger is silent")
  func silentLogger() {
    let configuration = JourneySharingConfiguration(host: "127.0.0.1", port: 1, providerID: "p")
    #expect(configuration.logger.handler is SwiftLogNoOpLogHandler)
  }
}

@Suite("Lifecycle end to end")
struct LifecycleEndToEndTests {
  @Test("in a ServiceGroup: graceful shutdown stops following, closes the connection, and run() returns (over sockets)")
  func serviceGroup() async throws {
    try await FollowFixture.with(followSimConfiguration(speedup: 5)) { fixture in
      let recorder = RecordingSubscriber()
      let models = [0, 1, 2].map { fixture.model($0) }
      let group = ServiceGroup(
        configuration: ServiceGroupConfiguration(
          services: [
            .init(service: fixture.services),
            .init(service: FollowUntilShutdown(models: models, recorder: recorder)),
          ],
          logger: quietLogger("group")))
      try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        let streaming = await eventually(timeout: .seconds(20)) { await fixture.sim.serverStats().openCalls == 3 }
        #expect(streaming)
        await group.triggerGracefulShutdown()
        try await tasks.next()
      }
      // run() returned after the shutdown: nothing open on the server, no model following.
      let closed = await eventually(timeout: .seconds(10)) {
        let stats = await fixture.sim.serverStats()
        return stats.openCalls == 0 && stats.openConnections == 0
      }
      #expect(closed)
      #expect(models.allSatisfy { !$0.isActive })
      let stats = await fixture.services.statistics().connections
      #expect(stats.openConnections == 0)
      // Nothing is delivered after the shutdown.
      let callbacks = [0, 1, 2].map { recorder.events(fixture.simulator.tripName(index: $0)).count }
      #expect(callbacks.allSatisfy { $0 > 0 })
      try await Task.sleep(for: .milliseconds(300))
      #expect([0, 1, 2].map { recorder.events(fixture.simulator.tripName(index: $0)).count } == callbacks)
    }
  }

  @Test("withJourneySharingServices shuts down when its body returns, and when it throws (over sockets)")
  func scoped() async throws {
    try await FollowFixture.with(followSimConfiguration(speedup: 400)) { fixture in
      let name = fixture.simulator.tripName(index: shortTrips[0])
      let configuration = followClientConfiguration(port: fixture.port)
      // The README's pattern: follow one trip to its final state inside the scope.
      let (status, model) = try await withJourneySharingServices(configuration: configuration) { services in
        let model = services.tripService.tripModel(forTripName: name)
        for await update in model.updates() where update.snapshot?.isFinal == true {
          return (update.snapshot?.tripStatus, model)
        }
        return (nil, model)
      }
      #expect(status == finalTrip(of: fixture.simulator, index: shortTrips[0]).tripStatus)
      #expect(!model.isActive)

      struct Failure: Error {}
      let recorder = RecordingSubscriber()
      let held = Locked<TripModel?>(nil)
      await #expect(throws: Failure.self) {
        try await withJourneySharingServices(configuration: configuration) { services in
          let model = services.tripService.tripModel(forTripName: fixture.simulator.tripName(index: 1))
          held.withLock { $0 = model }
          model.register(recorder)
          _ = await eventually(timeout: .seconds(20)) { model.isActive }
          throw Failure()
        }
      }
      let closed = await eventually(timeout: .seconds(10)) { await fixture.sim.serverStats().openCalls == 0 }
      #expect(closed)
      #expect(held.withLock { $0?.isActive } == false)
      held.withLock { $0?.unregisterSubscriber(recorder) }
    }
  }
}
