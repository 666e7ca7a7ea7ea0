// Tests/JourneySharingTests/VirtualFollowFixture.swift - services in memory, on a virtual clock
//
// The consumer tests run FleetSim's real service (the same code `fleetsim` serves over sockets), or a test's
// own GRPCService, behind an in-memory transport, on a virtual clock: simulated trips play out in virtual
// seconds, so a test waits for virtual time to pass, never for the wall clock. Subscriber callbacks still
// run on the library's real delivery threads; between steps of virtual time the fixture lets them finish
// what the step gave them, so a condition is checked on a settled state. A suite named "(in memory)" runs
// here; the ones kept over real sockets (type names ending in `EndToEndTests`) use FollowFixture or a
// GRPCServer.

import Dispatch
import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import Logging
import Primitives
import Synchronization
import TestSupport
import Testing
import UpdatePipeline

@testable import JourneySharing

#if canImport(Glibc)
  import Glibc
#endif

// MARK: - Clocks

/// The clock a test mints its tokens on: the fixture's (virtual in memory, the wall clock over sockets),
/// known once the fixture exists. A token provider made before the fixture reads it when it is asked.
final class FixtureClock: Sendable {
  private let source = Locked<(@Sendable () -> Double)?>(nil)

  init() {}

  /// The fixture's clock in Unix seconds (the wall clock until a fixture set it).
  var now: Double { (source.withLock { $0 })?() ?? unixTime() }

  /// Reads `clock` from now on.
  func use(_ clock: @escaping @Sendable () -> Double) { source.withLock { $0 = clock } }
}

// MARK: - Any service in memory

/// Where an in-memory fixture does its blocking work (moving the virtual clock, waiting for the scheduler and
/// the delivery threads): a serial queue of its own, off Swift's cooperative pool, so that tests running in
/// parallel never hold the pool's few threads while they wait (a token provider's task, a consumer of
/// `updates()`, another suite's calls need them).
final class FixtureDriver: Sendable {
  private let queue = DispatchQueue(label: "journeysharing-tests.virtual-fixture")
  private let closingFlag = Atomic<Bool>(false)

  /// Runs `body` on the driver's queue and returns its result.
  func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
      queue.async { continuation.resume(returning: body()) }
    }
  }

  /// Set once the fixture closes: a subscriber waiting for virtual time stops waiting.
  var isClosing: Bool { closingFlag.load(ordering: .acquiring) }
  func close() { closingFlag.store(true, ordering: .releasing) }
}

/// JourneySharingServices on an in-memory transport whose calls a `GRPCService` answers, on a virtual clock.
struct VirtualServiceFixture: Sendable {
  let scheduler: VirtualScheduler
  let transport: InMemoryTransport
  let services: JourneySharingServices
  /// How long (real time) one step of virtual time waits for the delivery threads to finish what the step gave
  /// them. Subscribers that block on purpose (sleeping in a callback) get a short one, so that virtual time moves
  /// on while a callback sleeps, as wall time does over sockets; otherwise each step would wait out every sleep.
  let deliveryPatience: Duration
  let driver = FixtureDriver()

  /// The virtual clock's Unix time.
  var now: Double { scheduler.unixTime }

  /// Runs `body` against services configured by `client` (given the tests' usual client configuration) whose
  /// calls `service` (made for the virtual clock's Unix time) answers in memory. The virtual clock starts at
  /// `startTime` (Unix seconds; default a fixed time, so every run sees the same times).
  static func with<S: GRPCService, R>(
    service: (Double) -> S,
    client: (JourneySharingConfiguration) -> JourneySharingConfiguration = { $0 },
    startTime: Double? = nil,
    clock: FixtureClock? = nil,
    deliveryPatience: Duration = .seconds(30),
    _ body: (S, VirtualServiceFixture) async throws -> R
  ) async throws -> R {
    let scheduler = startTime.map { VirtualScheduler(unixTime: $0) } ?? VirtualScheduler()
    clock?.use { [scheduler] in scheduler.unixTime }
    let served = service(scheduler.unixTime)
    let transport = InMemoryTransport(service: served, scheduler: scheduler)
    let services = JourneySharingServices(
      configuration: client(followClientConfiguration(port: 0)), transport: transport)
    let fixture = VirtualServiceFixture(
      scheduler: scheduler, transport: transport, services: services, deliveryPatience: deliveryPatience)
    do {
      let result = try await body(served, fixture)
      await fixture.close()
      return result
    } catch {
      await fixture.close()
      throw error
    }
  }

  /// More services on the same transport (another client of the same server).
  func moreServices(configuration: JourneySharingConfiguration) -> JourneySharingServices {
    JourneySharingServices(configuration: configuration, transport: transport)
  }

  private func close() async {
    driver.close()
    await services.shutdown()
    let scheduler = scheduler
    await driver.run {
      scheduler.waitUntilIdle()
      scheduler.shutdown()
    }
  }

  /// Moves virtual time by `step` (none for zero), then lets the scheduler and the delivery threads finish what
  /// is queued, waiting at most `patience` (default ``deliveryPatience``) of real time for the delivery threads.
  /// On the driver's queue.
  private func step(_ step: Duration, patience: Duration? = nil) async {
    let scheduler = scheduler
    let executor = services.core.executor
    let patience = patience ?? deliveryPatience
    await driver.run {
      if step > .zero { scheduler.advance(by: step) }
      let clock = ContinuousClock()
      let end = clock.now.advanced(by: patience)
      // A delivery may queue work on the scheduler (a subscriber unregistering), which may queue deliveries.
      for _ in 0..<3 {
        scheduler.waitUntilIdle()
        // Deliveries take microseconds: look often at first, then less often.
        var looks = 0
        while executor.hasPendingWork && clock.now < end {
          usleep(looks < 20 ? 50 : 500)
          looks += 1
        }
      }
      scheduler.waitUntilIdle()
    }
  }

  /// Lets the scheduler and the delivery threads finish what is queued (real time, briefly; virtual time does
  /// not move), waiting at most `patience` (default ``deliveryPatience``) for the delivery threads.
  func settle(patience: Duration? = nil) async {
    await step(.zero, patience: patience)
  }

  /// Advances virtual time in `step`s until `condition` holds (true) or `limit` of virtual time passed
  /// (false), settling before each check.
  func advance(
    until condition: () async -> Bool, step: Duration = .milliseconds(20), limit: Duration = .seconds(600)
  ) async -> Bool {
    var elapsed = Duration.zero
    await settle()
    while true {
      if await condition() { return true }
      if elapsed >= limit { return false }
      await self.step(step)
      elapsed += step
    }
  }

  /// Advances virtual time by `duration`, in `step`s, settling after each (the last step waits for the delivery
  /// threads as long as they need, up to 30 s).
  func advance(by duration: Duration, step: Duration = .milliseconds(20)) async {
    var left = duration
    while left > .zero {
      let next = min(step, left)
      left -= next
      await self.step(next, patience: left > .zero ? nil : max(deliveryPatience, .seconds(30)))
    }
  }

  /// Blocks the calling thread (a subscriber's callback) until `duration` of virtual time has passed. Virtual
  /// time moves only while the test waits with a short ``deliveryPatience``; the wait also ends when the fixture
  /// closes, and after a minute of real time.
  func sleepOnClock(_ duration: Duration) {
    let target = scheduler.elapsed + duration
    let clock = ContinuousClock()
    let giveUp = clock.now.advanced(by: .seconds(60))
    while scheduler.elapsed < target && !driver.isClosing && clock.now < giveUp { usleep(200) }
  }
}

// MARK: - FleetSim in memory

/// FleetSim's service and JourneySharingServices on one in-memory transport and virtual clock.
struct VirtualFollowFixture: Sendable {
  let base: VirtualServiceFixture
  let service: FleetSimService
  var scheduler: VirtualScheduler { base.scheduler }
  var transport: InMemoryTransport { base.transport }
  var services: JourneySharingServices { base.services }
  var simulator: TripSimulator { service.simulator }

  func model(_ index: Int) -> TripModel {
    services.tripService.tripModel(forTripName: simulator.tripName(index: index))
  }

  /// The virtual clock's Unix time.
  var now: Double { base.now }

  /// Runs `body` against FleetSim made by `simulation` (given the virtual clock's Unix time, to start its
  /// trips from) and services configured by `client` (given the tests' usual client configuration).
  static func with<R>(
    _ simulation: (Double) -> FleetSimConfiguration,
    client: (JourneySharingConfiguration) -> JourneySharingConfiguration = { $0 },
    startTime: Double? = nil,
    clock: FixtureClock? = nil,
    deliveryPatience: Duration = .seconds(30),
    logger: Logger = quietLogger("fleetsim.memory"),
    _ body: (VirtualFollowFixture) async throws -> R
  ) async throws -> R {
    try await VirtualServiceFixture.with(
      service: { FleetSimService(configuration: simulation($0), logger: logger) }, client: client,
      startTime: startTime, clock: clock, deliveryPatience: deliveryPatience
    ) { service, base in
      try await body(VirtualFollowFixture(base: base, service: service))
    }
  }

  func settle() async { await base.settle() }

  func advance(
    until condition: () async -> Bool, step: Duration = .milliseconds(20), limit: Duration = .seconds(600)
  ) async -> Bool {
    await base.advance(until: condition, step: step, limit: limit)
  }

  func advance(by duration: Duration, step: Duration = .milliseconds(20)) async {
    await base.advance(by: duration, step: step)
  }

  /// FleetSim's counters (read on the scheduler once it is idle).
  func stats() async -> FleetSimStats {
    await settle()
    let service = service
    return await withCheckedContinuation { continuation in
      scheduler.execute { continuation.resume(returning: service.stats) }
    }
  }
}

/// Blocks the calling thread for `duration` of wall time.
func blockingWallSleep(_ duration: Duration) {
  let microseconds = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
  usleep(UInt32(clamping: max(0, microseconds)))
}

// MARK: - One test body, two ways to run it

/// Where a test's server runs: in memory on a virtual clock (fast, deterministic, under ThreadSanitizer in
/// `make test`), or as a real server on 127.0.0.1 over sockets in wall-clock time (end to end).
enum FixtureTransport: String, Sendable, CaseIterable, CustomStringConvertible {
  case inMemory = "in memory"
  case sockets = "over sockets"
  var description: String { rawValue }
}

/// What the server saw of the calls.
struct ServerCalls: Sendable, Hashable {
  /// Calls started.
  var started: Int
  /// Calls open now.
  var open: Int
  /// Calls the client cancelled while they were open (RST_STREAM over sockets).
  var cancelledByClient: Int
  /// Connections accepted (over sockets; nil in memory, where there are none).
  var connectionsAccepted: Int?
}

/// What a test needs from its fixture, whichever way its server runs.
protocol ServiceFixture: Sendable {
  var transportKind: FixtureTransport { get }
  var services: JourneySharingServices { get }
  /// Waits until `condition` holds or `timeout` passed (virtual time in memory, wall time over sockets).
  func wait(timeout: Duration, until condition: @escaping () async -> Bool) async -> Bool
  /// Lets `duration` pass (virtual or wall).
  func pass(_ duration: Duration) async
  /// The calls the server has seen.
  func serverCalls() async -> ServerCalls
  /// The fixture's clock (virtual in memory, wall over sockets), in Unix seconds.
  var now: Double { get }
  /// More services, configured by `client` (given the tests' usual client configuration), reaching the same
  /// server; the caller shuts them down.
  func moreServices(client: (JourneySharingConfiguration) -> JourneySharingConfiguration) throws
    -> JourneySharingServices
  /// Blocks the calling thread (a subscriber's callback) for `duration` of the fixture's clock (in memory: of
  /// virtual time, which moves while the test waits, if its fixture has a short delivery patience).
  func sleepOnClock(_ duration: Duration)
}

extension ServiceFixture {
  func wait(until condition: @escaping () async -> Bool) async -> Bool {
    await wait(timeout: .seconds(20), until: condition)
  }
}

/// What a following test needs from its FleetSim fixture, whichever way it runs.
protocol TripFollowingFixture: ServiceFixture {
  var simulator: TripSimulator { get }
  func model(_ index: Int) -> TripModel
  /// FleetSim's counters.
  func fleetStats() async -> FleetSimStats
  /// Changes the faults FleetSim injects from now on.
  func setFaults(_ faults: FaultInjection) async
}

extension VirtualServiceFixture: ServiceFixture {
  var transportKind: FixtureTransport { .inMemory }

  func wait(timeout: Duration, until condition: @escaping () async -> Bool) async -> Bool {
    // Virtual time is cheap: allow several times the wall-clock budget a socket test has.
    await advance(until: condition, limit: timeout * 5)
  }

  func pass(_ duration: Duration) async { await advance(by: duration) }

  func serverCalls() async -> ServerCalls {
    await settle()
    return ServerCalls(
      started: transport.callsStarted(), open: transport.activeCalls,
      cancelledByClient: transport.callsCancelledByClient, connectionsAccepted: nil)
  }

  func moreServices(client: (JourneySharingConfiguration) -> JourneySharingConfiguration) throws
    -> JourneySharingServices
  {
    moreServices(configuration: client(followClientConfiguration(port: 0)))
  }
}

extension VirtualFollowFixture: TripFollowingFixture {
  var transportKind: FixtureTransport { .inMemory }

  func sleepOnClock(_ duration: Duration) { base.sleepOnClock(duration) }

  func wait(timeout: Duration, until condition: @escaping () async -> Bool) async -> Bool {
    await base.wait(timeout: timeout, until: condition)
  }

  func pass(_ duration: Duration) async { await base.pass(duration) }

  func fleetStats() async -> FleetSimStats { await stats() }

  func serverCalls() async -> ServerCalls { await base.serverCalls() }

  func setFaults(_ faults: FaultInjection) async {
    scheduler.execute { [service] in service.faults = faults }
    await settle()
  }

  func moreServices(client: (JourneySharingConfiguration) -> JourneySharingConfiguration) throws
    -> JourneySharingServices
  {
    try base.moreServices(client: client)
  }
}

extension FollowFixture: TripFollowingFixture {
  var transportKind: FixtureTransport { .sockets }

  func sleepOnClock(_ duration: Duration) { blockingWallSleep(duration) }

  func wait(timeout: Duration, until condition: @escaping () async -> Bool) async -> Bool {
    await eventually(timeout: timeout, condition)
  }

  func pass(_ duration: Duration) async { try? await Task.sleep(for: duration) }

  func fleetStats() async -> FleetSimStats { await sim.stats() }

  func serverCalls() async -> ServerCalls {
    let stats = await sim.serverStats()
    return ServerCalls(
      started: stats.callsStarted, open: stats.openCalls, cancelledByClient: stats.callsCancelledByClient,
      connectionsAccepted: stats.connectionsAccepted)
  }

  func setFaults(_ faults: FaultInjection) async { sim.setFaults(faults) }

  var now: Double { unixTime() }

  func moreServices(client: (JourneySharingConfiguration) -> JourneySharingConfiguration) throws
    -> JourneySharingServices
  {
    try JourneySharingServices(configuration: client(followClientConfiguration(port: port)))
  }
}

/// A test's GRPCService served by a real GRPCServer on 127.0.0.1, and services following trips on it.
struct SocketServiceFixture: ServiceFixture {
  let server: GRPCServer
  let services: JourneySharingServices
  let port: Int
  var transportKind: FixtureTransport { .sockets }

  func sleepOnClock(_ duration: Duration) { blockingWallSleep(duration) }

  func wait(timeout: Duration, until condition: @escaping () async -> Bool) async -> Bool {
    await eventually(timeout: timeout, condition)
  }

  func pass(_ duration: Duration) async { try? await Task.sleep(for: duration) }

  func serverCalls() async -> ServerCalls {
    let stats = await server.stats()
    return ServerCalls(
      started: stats.callsStarted, open: stats.openCalls, cancelledByClient: stats.callsCancelledByClient,
      connectionsAccepted: stats.connectionsAccepted)
  }

  var now: Double { unixTime() }

  func moreServices(client: (JourneySharingConfiguration) -> JourneySharingConfiguration) throws
    -> JourneySharingServices
  {
    try JourneySharingServices(configuration: client(followClientConfiguration(port: port)))
  }
}

/// Runs `body` against FleetSim made by `simulation` (given the fixture clock's Unix time) and services
/// configured by `client` (given the tests' usual client configuration for the fixture's server), over
/// `transport`. `clock`, if given, reads the fixture's clock; `deliveryPatience` is the in-memory fixture's
/// (see ``VirtualServiceFixture/deliveryPatience``); `startsAtWallTime` starts the virtual clock at the wall
/// clock's time, for parts that read the process's clock (a service-account token provider, a session).
func withFollowFixture<R>(
  _ transport: FixtureTransport,
  simulation: @escaping (Double) -> FleetSimConfiguration,
  client: @escaping (JourneySharingConfiguration) -> JourneySharingConfiguration = { $0 },
  clock: FixtureClock? = nil,
  deliveryPatience: Duration = .seconds(30),
  startsAtWallTime: Bool = false,
  _ body: (any TripFollowingFixture) async throws -> R
) async throws -> R {
  switch transport {
  case .inMemory:
    return try await VirtualFollowFixture.with(
      simulation, client: client, startTime: startsAtWallTime ? unixTime().rounded(.down) : nil,
      clock: clock, deliveryPatience: deliveryPatience
    ) { try await body($0) }
  case .sockets:
    clock?.use { unixTime() }
    return try await FollowFixture.with(
      simulation(unixTime()), client: { client(followClientConfiguration(port: $0)) }
    ) { try await body($0) }
  }
}

/// Runs `body` against a `GRPCService` made by `service` (given the fixture clock's Unix time) and services
/// configured by `client` (given the tests' usual client configuration for the fixture's server), over
/// `transport`: in memory on a virtual clock, or served by a real GRPCServer on 127.0.0.1.
func withServiceFixture<S: GRPCService, R>(
  _ transport: FixtureTransport,
  service: (Double) -> S,
  client: (JourneySharingConfiguration) -> JourneySharingConfiguration = { $0 },
  clock: FixtureClock? = nil,
  _ body: (S, any ServiceFixture) async throws -> R
) async throws -> R {
  switch transport {
  case .inMemory:
    return try await VirtualServiceFixture.with(service: service, client: client, clock: clock) {
      try await body($0, $1)
    }
  case .sockets:
    clock?.use { unixTime() }
    let served = service(unixTime())
    let server = try GRPCServer(
      configuration: GRPCServerConfiguration(), service: served, logger: quietLogger("served"))
    let services: JourneySharingServices
    let port: Int
    do {
      port = try server.start()
      services = try JourneySharingServices(configuration: client(followClientConfiguration(port: port)))
    } catch {
      await server.shutdown(graceful: false)
      throw error
    }
    let fixture = SocketServiceFixture(server: server, services: services, port: port)
    // The server goes first: it cuts whatever a failed test left open, so the services' graceful shutdown
    // cannot hang on it.
    do {
      let result = try await body(served, fixture)
      await server.shutdown(graceful: false)
      await services.shutdown()
      return result
    } catch {
      await server.shutdown(graceful: false)
      await services.shutdown()
      throw error
    }
  }
}
