// Tests/JourneySharingTests/VirtualFollowFixture.swift - FleetSim and the services in memory, on a virtual clock
//
// The consumer tests run FleetSim's real service (the same code `fleetsim` serves over sockets) behind an
// in-memory transport, on a virtual clock: simulated trips play out in virtual seconds, so a test waits
// for virtual time to pass, never for the wall clock. Subscriber callbacks still run on the library's
// real delivery threads; between steps of virtual time the fixture lets them finish what the step gave
// them, so a condition is checked on a settled state. A test named "(in memory)" runs here; the ones kept
// over real sockets use FollowFixture.

import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
@testable import JourneySharing
import Logging
import Testing
import TransportTestSupport
import UpdatePipeline

#if canImport(Glibc)
  import Glibc
#endif

/// FleetSim's service and JourneySharingServices on one in-memory transport and virtual clock.
struct VirtualFollowFixture: Sendable {
  let scheduler: VirtualScheduler
  let transport: InMemoryTransport
  let service: FleetSimService
  let services: JourneySharingServices
  var simulator: TripSimulator { service.simulator }

  func model(_ index: Int) -> TripModel {
    services.tripService.tripModel(forTripName: simulator.tripName(index: index))
  }

  /// The virtual clock's Unix time.
  var now: Double { scheduler.unixTime }

  /// Runs `body` against FleetSim made by `simulation` (given the virtual clock's Unix time, to start its
  /// trips from) and services configured by `client` (given the tests' usual client configuration).
  static func with<R>(
    _ simulation: (Double) -> FleetSimConfiguration,
    client: (JourneySharingConfiguration) -> JourneySharingConfiguration = { $0 },
    _ body: (VirtualFollowFixture) async throws -> R
  ) async throws -> R {
    let scheduler = VirtualScheduler()
    let service = FleetSimService(configuration: simulation(scheduler.unixTime), logger: quietLogger("fleetsim.memory"))
    let transport = InMemoryTransport(service: service, scheduler: scheduler)
    let services = JourneySharingServices(
      configuration: client(followClientConfiguration(port: 0)), transport: transport)
    let fixture = VirtualFollowFixture(scheduler: scheduler, transport: transport, service: service, services: services)
    do {
      let result = try await body(fixture)
      await fixture.close()
      return result
    } catch {
      await fixture.close()
      throw error
    }
  }

  private func close() async {
    await services.shutdown()
    scheduler.waitUntilIdle()
    scheduler.shutdown()
  }

  /// Lets the scheduler and the delivery threads finish what is queued (real time, briefly; virtual time
  /// does not move).
  func settle() async {
    // Deliveries take microseconds: look often. A callback that blocks (a slow subscriber) holds this for
    // as long as it blocks, up to a bound.
    let executor = services.core.executor
    for _ in 0..<3 {
      scheduler.waitUntilIdle()
      let end = followWallClock() + 30
      while executor.hasPendingWork && followWallClock() < end { usleep(50) }
    }
    scheduler.waitUntilIdle()
  }

  /// Advances virtual time in `step`s until `condition` holds (true) or `limit` of virtual time passed
  /// (false), settling before each check.
  func advance(
    until condition: () async -> Bool, step: Duration = .milliseconds(20), limit: Duration = .seconds(600)
  ) async -> Bool {
    var elapsed = Duration.zero
    while true {
      await settle()
      if await condition() { return true }
      if elapsed >= limit { return false }
      scheduler.advance(by: step)
      elapsed += step
    }
  }

  /// Advances virtual time by `duration`, in `step`s, settling after each.
  func advance(by duration: Duration, step: Duration = .milliseconds(20)) async {
    var left = duration
    while left > .zero {
      let next = min(step, left)
      scheduler.advance(by: next)
      await settle()
      left -= next
    }
  }

  /// FleetSim's counters (read with the scheduler idle).
  func stats() async -> FleetSimStats {
    await settle()
    return service.stats
  }
}

// MARK: - One test body, two ways to run it

/// Where a test's FleetSim runs: in memory on a virtual clock (fast, deterministic, under ThreadSanitizer
/// in `make test`), or as a real server on 127.0.0.1 over sockets in wall-clock time (end to end).
enum FixtureTransport: String, Sendable, CaseIterable, CustomStringConvertible {
  case inMemory = "in memory"
  case sockets = "over sockets"
  var description: String { rawValue }
}

/// What a following test needs from its fixture, whichever way it runs.
protocol TripFollowingFixture: Sendable {
  var simulator: TripSimulator { get }
  var services: JourneySharingServices { get }
  func model(_ index: Int) -> TripModel
  /// Waits until `condition` holds or `timeout` passed (virtual time in memory, wall time over sockets).
  func wait(timeout: Duration, until condition: @escaping () async -> Bool) async -> Bool
  /// Lets `duration` pass (virtual or wall).
  func pass(_ duration: Duration) async
  /// FleetSim's counters.
  func fleetStats() async -> FleetSimStats
  /// The calls the server has seen start, and those open now.
  func serverCalls() async -> (started: Int, open: Int)
  /// Changes the faults FleetSim injects from now on.
  func setFaults(_ faults: FaultInjection) async
  /// The clock the simulation runs on, in Unix seconds.
  var now: Double { get }
}

extension TripFollowingFixture {
  func wait(until condition: @escaping () async -> Bool) async -> Bool {
    await wait(timeout: .seconds(20), until: condition)
  }
}

extension VirtualFollowFixture: TripFollowingFixture {
  func wait(timeout: Duration, until condition: @escaping () async -> Bool) async -> Bool {
    // Virtual time is cheap: allow several times the wall-clock budget a socket test has.
    await advance(until: condition, limit: timeout * 5)
  }

  func pass(_ duration: Duration) async { await advance(by: duration) }

  func fleetStats() async -> FleetSimStats { await stats() }

  func serverCalls() async -> (started: Int, open: Int) {
    await settle()
    return (transport.callsStarted(), transport.activeCalls)
  }

  func setFaults(_ faults: FaultInjection) async {
    scheduler.execute { [service] in service.faults = faults }
    await settle()
  }
}

extension FollowFixture: TripFollowingFixture {
  func wait(timeout: Duration, until condition: @escaping () async -> Bool) async -> Bool {
    await waitUntil(timeout: timeout, condition)
  }

  func pass(_ duration: Duration) async { try? await Task.sleep(for: duration) }

  func fleetStats() async -> FleetSimStats { await sim.stats() }

  func serverCalls() async -> (started: Int, open: Int) {
    let stats = await sim.serverStats()
    return (stats.callsStarted, stats.openCalls)
  }

  func setFaults(_ faults: FaultInjection) async { sim.setFaults(faults) }

  var now: Double { followWallClock() }
}

/// Runs `body` against FleetSim made by `simulation` (given the fixture clock's Unix time) and services
/// configured by `client` (given the tests' usual client configuration for the fixture's server), over
/// `transport`.
func withFollowFixture<R>(
  _ transport: FixtureTransport,
  simulation: @escaping (Double) -> FleetSimConfiguration,
  client: @escaping (JourneySharingConfiguration) -> JourneySharingConfiguration = { $0 },
  _ body: (any TripFollowingFixture) async throws -> R
) async throws -> R {
  switch transport {
  case .inMemory:
    return try await VirtualFollowFixture.with(simulation, client: client) { try await body($0) }
  case .sockets:
    return try await FollowFixture.with(
      simulation(followWallClock()), client: { client(followClientConfiguration(port: $0)) }
    ) { try await body($0) }
  }
}
