// Tests/FleetSimTests/FleetSimLifecycleTests.swift - health, graceful shutdown and metrics of FleetSim
//
// FleetSim on 127.0.0.1 (port 0) over real sockets, called through a plaintext GRPCChannel: the
// grpc.health.v1 messages and service, FleetSim as a Service in a ServiceGroup (graceful shutdown
// drains it: NOT_SERVING, GOAWAY, a grace period, UNAVAILABLE for the calls left), and the metrics it
// records, read from swift-metrics' TestMetrics factory.

import CoreMetrics
import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import Logging
import MetricsTestKit
import Primitives
import ProtoWire
import ServiceLifecycle
import Testing

#if canImport(Glibc)
  import Glibc
#endif

// MARK: - Helpers

private let quiet = Logger(label: "fleetsim.lifecycle-tests", factory: { _ in SwiftLogNoOpLogHandler() })

private let tripCount = 20
private let seed: UInt64 = 3

/// Trips in real time (speed-up 1) whose simulated clock reads 30 s now: most of them take many
/// minutes more, so their streams stay open for a whole test.
private func configuration(
  grace: Duration = .seconds(5), faults: FaultInjection = FaultInjection()
) -> FleetSimConfiguration {
  FleetSimConfiguration(
    simulation: SimulationConfiguration(tripCount: tripCount, seed: seed, startTime: unixTime() - 30, speedup: 1),
    updateInterval: .milliseconds(50), faults: faults, shutdownGracePeriod: grace)
}

/// A trip that is still under way 10 simulated minutes from now.
private func longTrip(_ sim: FleetSim) throws -> String {
  let simulator = sim.simulator
  let now = simulator.simulatedSeconds(atUnixTime: unixTime())
  let index = try #require((0..<tripCount).first { !simulator.isFinished(index: $0, atSimulatedSeconds: now + 600) })
  return simulator.tripName(index: index)
}

private func channel(to sim: FleetSim) throws -> GRPCChannel {
  try GRPCChannel(
    host: "127.0.0.1", port: sim.localPort, configuration: GRPCChannelConfiguration(security: .plaintext))
}

private let callOptions = CallOptions(timeout: .seconds(30))

private func check(_ channel: GRPCChannel, _ service: String) async -> Result<HealthCheckResponse, GRPCError> {
  do {
    let response = try await channel.unary(
      path: HealthMethods.check, request: HealthCheckRequest(service: service).serializedBytes(),
      options: callOptions)
    return .success(try HealthCheckResponse(serializedBytes: response.message))
  } catch let error as GRPCError {
    return .failure(error)
  } catch {
    return .failure(GRPCError(code: .internalError, message: "\(error)"))
  }
}

private func watch(_ channel: GRPCChannel, _ service: String) -> GRPCServerStreamingResponse.Iterator {
  channel.serverStreaming(
    path: HealthMethods.watch, request: HealthCheckRequest(service: service).serializedBytes(), options: callOptions
  ).makeAsyncIterator()
}

private func nextStatus(_ iterator: inout GRPCServerStreamingResponse.Iterator) async throws
  -> HealthCheckResponse.ServingStatus?
{
  guard let message = try await iterator.next() else { return nil }
  return try HealthCheckResponse(serializedBytes: message).status
}

private func followStream(_ channel: GRPCChannel, _ name: String) -> GRPCServerStreamingResponse.Iterator {
  var request = StreamTripRequest()
  request.name = name
  return channel.serverStreaming(
    path: FleetEngineMethods.streamingGetTrip, request: request.serializedBytes(), options: callOptions
  ).makeAsyncIterator()
}

/// Reads a stream to its end; the error that ended it, nil for OK.
private func readToTheEnd(_ iterator: inout GRPCServerStreamingResponse.Iterator) async -> GRPCError? {
  do {
    while try await iterator.next() != nil {}
    return nil
  } catch {
    return error
  }
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes; whether it held.
private func pollUntil(timeout: Duration = .seconds(20), _ condition: () async -> Bool) async -> Bool {
  let clock = ContinuousClock()
  let end = clock.now.advanced(by: timeout)
  while true {
    if await condition() { return true }
    if clock.now >= end { return false }
    try? await Task.sleep(for: .milliseconds(10))
  }
}

/// Whether a TCP connection to 127.0.0.1:`port` is accepted.
private func acceptsConnections(port: Int) -> Bool {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { return false }
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = UInt16(port).bigEndian
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  return withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
    }
  }
}

// MARK: - Messages

@Suite("grpc.health.v1 messages")
struct HealthMessageTests {
  @Test func requestAndResponseRoundTripWithTheWireBytesProtocWrites() throws {
    // protoc's encoding: field 1, length-delimited "ab"; field 1, varint 2.
    #expect(HealthCheckRequest(service: "ab").serializedBytes() == [0x0A, 0x02, 0x61, 0x62])
    #expect(HealthCheckRequest().serializedBytes() == [])
    #expect(HealthCheckResponse(status: .notServing).serializedBytes() == [0x08, 0x02])
    #expect(HealthCheckResponse(status: .unknown).serializedBytes() == [])
    for status in HealthCheckResponse.ServingStatus.allCases {
      let bytes = HealthCheckResponse(status: status).serializedBytes()
      #expect(try HealthCheckResponse(serializedBytes: bytes).status == status)
    }
    #expect(try HealthCheckRequest(serializedBytes: [0x0A, 0x02, 0x61, 0x62]).service == "ab")
  }

  @Test func unknownStatusesAndFieldsArePreserved() throws {
    // status 9 (not named), then field 2 (varint 1), which this version does not know.
    let bytes: [UInt8] = [0x08, 0x09, 0x10, 0x01]
    let response = try HealthCheckResponse(serializedBytes: bytes)
    #expect(response.status == .unrecognized(9))
    #expect(response.serializedBytes() == bytes)
  }

  @Test func malformedBytesAreAnError() {
    #expect(throws: WireDecodingError.self) { try HealthCheckRequest(serializedBytes: [0x0A, 0x05, 0x61]) }
  }
}

// MARK: - Health

@Suite("FleetSim health, lifecycle and metrics", .timeLimit(.minutes(2)))
struct FleetSimLifecycleTests {
  @Test func checkKnowsTheServerAndBothTripServicesAndNothingElse() async throws {
    let sim = try FleetSim(configuration: configuration(), logger: quiet)
    try sim.start()
    let channel = try channel(to: sim)
    for service in ["", "maps.fleetengine.v1.TripService", "journeysharing.v1.TripStreamService"] {
      #expect(try await check(channel, service).get().status == .serving, "\(service)")
    }
    for service in ["grpc.health.v1.Health", "maps.fleetengine.v1.VehicleService", "nope"] {
      switch await check(channel, service) {
      case .success(let response): Issue.record("\(service): \(response.status.protoName), expected NOT_FOUND")
      case .failure(let error): #expect(error.code == .notFound, "\(service): \(error)")
      }
    }
    channel.close()
    await sim.shutdown()
  }

  @Test func watchSendsTheStatusThenEveryChangeAndServiceUnknownForAnUnknownName() async throws {
    let sim = try FleetSim(configuration: configuration(), logger: quiet)
    try sim.start()
    let channel = try channel(to: sim)
    var server = watch(channel, "")
    var unknown = watch(channel, "nope")
    #expect(try await nextStatus(&server) == .serving)
    #expect(try await nextStatus(&unknown) == .serviceUnknown)
    sim.setHealthStatus(.notServing)
    #expect(try await nextStatus(&server) == .notServing)
    sim.setHealthStatus(.serving)
    #expect(try await nextStatus(&server) == .serving)
    // Registering the unknown name is a change its watcher sees.
    sim.setHealthStatus(.serving, forService: "nope")
    #expect(try await nextStatus(&unknown) == .serving)
    channel.close()
    await sim.shutdown()
  }

  // MARK: Graceful shutdown

  @Test func gracefulShutdownInAServiceGroupTurnsHealthNotServingThenEndsTheStreamsLeftAtTheGracePeriod()
    async throws
  {
    let sim = try FleetSim(configuration: configuration(grace: .milliseconds(800)), logger: quiet)
    try sim.start()
    let name = try longTrip(sim)
    let channel = try channel(to: sim)
    let group = ServiceGroup(services: [sim], logger: quiet)
    try await withThrowingTaskGroup(of: Void.self) { tasks in
      tasks.addTask { try await group.run() }
      var health = watch(channel, "journeysharing.v1.TripStreamService")
      #expect(try await nextStatus(&health) == .serving)
      var trip = followStream(channel, name)
      #expect(try await trip.next() != nil)
      await group.triggerGracefulShutdown()
      #expect(try await nextStatus(&health) == .notServing)
      // The trip stream stays open through the grace period (it gets updates), then ends UNAVAILABLE.
      let tripEnd = await readToTheEnd(&trip)
      #expect(tripEnd?.code == .unavailable)
      #expect(tripEnd?.status.message == "server shutting down")
      let healthEnd = await readToTheEnd(&health)
      #expect(healthEnd?.code == .unavailable)
      // run() returns once the connections are closed.
      try await tasks.next()
    }
    let stats = await sim.serverStats()
    #expect(stats.openConnections == 0)
    #expect(await sim.stats().streamsOpen == 0)
    channel.close()
  }

  @Test func aCallInFlightFinishesDuringTheDrainAndTheDrainEndsWithoutWaitingOutItsGracePeriod() async throws {
    // Every call is answered 1 s late; the grace period is far longer.
    let sim = try FleetSim(
      configuration: configuration(grace: .seconds(60), faults: FaultInjection(addedLatency: .seconds(1))),
      logger: quiet)
    try sim.start()
    let channel = try channel(to: sim)
    var request = GetTripRequest()
    request.name = sim.simulator.tripName(index: 0)
    let call = Task {
      try await channel.unary(
        path: FleetEngineMethods.unaryGetTrip, request: request.serializedBytes(), options: callOptions)
    }
    // The call has reached the service (it is being delayed) before the drain starts.
    #expect(await pollUntil { await sim.stats().delayedCalls == 1 })
    let drained = Task { await sim.shutdownGracefully() }
    let response = try await call.value
    #expect(try Trip(serializedBytes: response.message).name == request.name)
    // With nothing left open the drain is over long before its 60 s (the suite's time limit is 2 min).
    await drained.value
    #expect(await sim.serverStats().openConnections == 0)
    channel.close()
  }

  @Test func cancellingRunStopsAtOnce() async throws {
    let sim = try FleetSim(configuration: configuration(grace: .seconds(60)), logger: quiet)
    let run = Task { try await sim.run() }
    #expect(await pollUntil { sim.localPort != 0 })
    let channel = try channel(to: sim)
    var trip = followStream(channel, try longTrip(sim))
    #expect(try await trip.next() != nil)
    run.cancel()
    try await run.value
    // Cut, not drained: the client sees the connection go, not a status from the server.
    let end = await readToTheEnd(&trip)
    #expect(end != nil)
    #expect(end?.status.message != "server shutting down")
    channel.close()
  }

  @Test func aFleetSimLetGoWithoutAShutdownStillStopsItsServer() async throws {
    weak var released: FleetSim?
    var port = 0
    do {
      let sim = try FleetSim(configuration: configuration(), logger: quiet)
      port = try sim.start()
      released = sim
      // One sample of the connections gauge has been taken (the sampler holds the server only weakly).
      try await Task.sleep(for: .milliseconds(50))
    }
    #expect(await pollUntil { released == nil })
    #expect(await pollUntil { !acceptsConnections(port: port) }, "127.0.0.1:\(port) still accepts connections")
  }

  // MARK: Metrics

  @Test func metricsCountCallsByMethodAndStatusUpdatesFaultsAndOpenStreams() async throws {
    let metrics = TestMetrics()
    let sim = try FleetSim(configuration: configuration(), logger: quiet, metricsFactory: metrics)
    try sim.start()
    let channel = try channel(to: sim)
    let unary = "maps.fleetengine.v1.TripService/GetTrip"
    let streaming = "journeysharing.v1.TripStreamService/GetTrip"
    for index in [0, 1, tripCount + 5] {
      var request = GetTripRequest()
      request.name = sim.simulator.tripName(index: index)
      _ = try? await channel.unary(
        path: FleetEngineMethods.unaryGetTrip, request: request.serializedBytes(), options: callOptions)
    }
    _ = try? await channel.unary(path: "/made.up.Service/GetTrip", request: [])
    _ = await check(channel, "")
    var trip = followStream(channel, try longTrip(sim))
    var received = 0
    while received < 3, try await trip.next() != nil { received += 1 }
    #expect(try metrics.expectGauge("fleetsim_streams_open").lastValue == 1)
    #expect(metrics.counterTotal(label: "fleetsim_updates_sent_total") >= 3)

    func ended(_ method: String, _ code: String) -> Int64 {
      metrics.counterTotal(label: "fleetsim_calls_total", dimensions: [("method", method), ("code", code)])
    }
    func started(_ method: String) -> Int64 {
      metrics.counterTotal(label: "fleetsim_calls_started_total", dimensions: [("method", method)])
    }
    #expect(started(unary) == 3)
    #expect(ended(unary, "OK") == 2)
    #expect(ended(unary, "NOT_FOUND") == 1)
    #expect(started("unknown") == 1)
    #expect(ended("unknown", "UNIMPLEMENTED") == 1)
    #expect(ended("grpc.health.v1.Health/Check", "OK") == 1)
    #expect(started(streaming) == 1)
    // The client cancels the stream: CANCELLED, and no stream open.
    channel.close()
    #expect(await pollUntil { ended(streaming, "CANCELLED") == 1 })
    #expect(try metrics.expectGauge("fleetsim_streams_open").lastValue == 0)
    // Connections open, sampled every second.
    #expect(await pollUntil { (try? metrics.expectGauge("fleetsim_connections_open").lastValue) == 0 })
    // No label carries a trip name or a path a client made up.
    for counter in metrics.counters {
      for (_, value) in counter.dimensions {
        #expect(!value.contains("providers/") && !value.contains("made.up"), "\(counter.label) \(counter.dimensions)")
      }
    }
    await sim.shutdown()
  }

  @Test func injectedFaultsAreCountedByKind() async throws {
    let metrics = TestMetrics()
    let sim = try FleetSim(
      configuration: configuration(faults: FaultInjection(failureRate: 1, failureCode: .unavailable)), logger: quiet,
      metricsFactory: metrics)
    try sim.start()
    let channel = try channel(to: sim)
    for _ in 0..<4 {
      var request = GetTripRequest()
      request.name = sim.simulator.tripName(index: 0)
      _ = try? await channel.unary(
        path: FleetEngineMethods.unaryGetTrip, request: request.serializedBytes(), options: callOptions)
    }
    sim.sendGoAway()
    #expect(
      await pollUntil {
        metrics.counterTotal(label: "fleetsim_faults_injected_total", dimensions: [("fault", "goaway")]) == 1
      })
    #expect(metrics.counterTotal(label: "fleetsim_faults_injected_total", dimensions: [("fault", "status")]) == 4)
    #expect(metrics.counterTotal(label: "fleetsim_faults_injected_total", dimensions: [("fault", "reset")]) == 0)
    #expect(
      metrics.counterTotal(
        label: "fleetsim_calls_total",
        dimensions: [("method", "maps.fleetengine.v1.TripService/GetTrip"), ("code", "UNAVAILABLE")]) == 4)
    channel.close()
    await sim.shutdown()
  }
}
