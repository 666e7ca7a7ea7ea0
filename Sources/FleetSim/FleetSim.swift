// Sources/FleetSim/FleetSim.swift - the simulated Fleet Engine server

import Primitives
public import GRPCProtocol
public import HTTP2Transport
public import Logging
import Synchronization

/// A simulated Fleet Engine: trips moving on road-like routes, served over gRPC
/// (h2c or TLS) through the unary `maps.fleetengine.v1.TripService/GetTrip` and
/// the project's streaming `journeysharing.v1.TripStreamService/GetTrip`, with
/// optional JWT auth and fault injection.
///
/// ```swift
/// let sim = try FleetSim(configuration: FleetSimConfiguration(
///   simulation: SimulationConfiguration(tripCount: 5, startTime: now, speedup: 30)))
/// let port = try sim.start()
/// // follow providers/demo/trips/trip-0 … trip-4 on 127.0.0.1:port
/// await sim.shutdown()
/// ```
public final class FleetSim: Sendable {
  /// The configuration it runs with.
  public let configuration: FleetSimConfiguration
  /// The simulation, for callers that want to know what a trip will do.
  public var simulator: TripSimulator { service.simulator }
  private let service: FleetSimService
  private let server: GRPCServer
  private let faultTasks = Locked<[Task<Void, Never>]>([])

  /// Creates the server on `listen` (default: 127.0.0.1, a free port, h2c).
  ///
  /// - Throws: ``GRPCError`` (`INVALID_ARGUMENT`) for unusable TLS files.
  public init(
    configuration: FleetSimConfiguration,
    listen: GRPCServerConfiguration = GRPCServerConfiguration(),
    logger: Logger = Logger(label: "journeysharing.fleetsim")
  ) throws(GRPCError) {
    self.configuration = configuration
    let service = FleetSimService(configuration: configuration, logger: logger)
    self.service = service
    self.server = try GRPCServer(configuration: listen, service: service, logger: logger)
  }

  /// Starts listening; returns the bound port.
  ///
  /// - Throws: ``GRPCError`` (`UNAVAILABLE`) when the address cannot be bound.
  @discardableResult
  public func start() throws(GRPCError) -> Int {
    let port = try server.start()
    startFaultTimers(configuration.faults)
    return port
  }

  /// Replaces the faults in force (initially the configuration's) while serving: status failures
  /// and resets apply to the calls and updates that follow; the GOAWAY and drop timers restart.
  public func setFaults(_ faults: FaultInjection) {
    let service = service
    server.execute { service.faults = faults }
    startFaultTimers(faults)
  }

  private func startFaultTimers(_ faults: FaultInjection) {
    var tasks: [Task<Void, Never>] = []
    if let interval = faults.goAwayInterval {
      tasks.append(repeating(every: interval) { [server, service] in
        server.sendGoAway()
        server.execute { service.countGoAway() }
      })
    }
    if let interval = faults.dropInterval {
      tasks.append(repeating(every: interval) { [server, service] in
        server.dropConnections()
        server.execute { service.countDrop() }
      })
    }
    let previous = faultTasks.withLock { current in
      defer { current = tasks }
      return current
    }
    for task in previous { task.cancel() }
  }

  private func repeating(every interval: Duration, _ body: @escaping @Sendable () -> Void) -> Task<Void, Never> {
    Task.detached {
      while !Task.isCancelled {
        try? await Task.sleep(for: interval)
        if Task.isCancelled { return }
        body()
      }
    }
  }

  /// The bound port.
  public var localPort: Int { server.localPort }

  /// The counters right now.
  public func stats() async -> FleetSimStats {
    let service = service
    return await withCheckedContinuation { continuation in
      server.execute { continuation.resume(returning: service.stats) }
    }
  }

  /// The underlying server's counters (connections accepted and open, calls, …).
  public func serverStats() async -> GRPCServerStats {
    await server.stats()
  }

  /// Sends GOAWAY on every connection now.
  public func sendGoAway() {
    server.sendGoAway()
    let service = service
    server.execute { service.countGoAway() }
  }

  /// Drops every connection now.
  public func dropConnections() {
    server.dropConnections()
    let service = service
    server.execute { service.countDrop() }
  }

  /// Stops the fault timers and the server (open streams are cut).
  public func shutdown() async {
    for task in faultTasks.withLock({ $0 }) { task.cancel() }
    await server.shutdown(graceful: false)
  }
}
