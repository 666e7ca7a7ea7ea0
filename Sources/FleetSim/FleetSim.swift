// Sources/FleetSim/FleetSim.swift - the simulated Fleet Engine server

public import CoreMetrics
public import GRPCProtocol
public import HTTP2Transport
public import Logging
import Primitives
public import ServiceLifecycle
import Synchronization

/// A simulated Fleet Engine: trips moving on road-like routes, served over gRPC
/// (h2c or TLS) through the unary `maps.fleetengine.v1.TripService/GetTrip` and
/// the project's streaming `journeysharing.v1.TripStreamService/GetTrip`, with
/// optional JWT auth and fault injection, gRPC's standard health service
/// (`grpc.health.v1.Health`), and metrics through swift-metrics.
///
/// Start and stop it by hand:
///
/// ```swift
/// let sim = try FleetSim(configuration: FleetSimConfiguration(
///   simulation: SimulationConfiguration(tripCount: 5, startTime: now, speedup: 30)))
/// let port = try sim.start()
/// // follow providers/demo/trips/trip-0 … trip-4 on 127.0.0.1:port
/// await sim.shutdown()
/// ```
///
/// or run it as a `Service` in a `ServiceGroup`, which drains it on graceful shutdown:
///
/// ```swift
/// let group = ServiceGroup(services: [sim], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// try await group.run()
/// ```
///
/// ### Health
/// `Check` and `Watch` know the server (`""`), `maps.fleetengine.v1.TripService` and
/// `journeysharing.v1.TripStreamService`, SERVING from the start; another name is NOT_FOUND for
/// `Check` and SERVICE_UNKNOWN for `Watch`. From the start of a graceful shutdown they are all
/// NOT_SERVING, for good.
///
/// ### Graceful shutdown
/// ``shutdownGracefully(gracePeriod:)`` (what ``run()`` does once graceful shutdown is triggered):
/// 1. every health status becomes NOT_SERVING, and open `Watch` streams are told;
/// 2. the listener closes and every connection gets GOAWAY (NO_ERROR, the last stream the server
///    processed), so clients open no new calls on it;
/// 3. open calls get ``FleetSimConfiguration/shutdownGracePeriod`` to finish (health watches
///    are not waited for);
/// 4. the calls still open then end with UNAVAILABLE "server shutting down";
/// 5. connections close once their last stream's end is written (at most a second more), and any left is cut.
///
/// ### Metrics
/// Recorded through the `MetricsFactory` given to ``init(configuration:listen:logger:metricsFactory:)``
/// (by default the process's bootstrapped one). Labels are low-cardinality: a `method` is one of the
/// four served methods (`maps.fleetengine.v1.TripService/GetTrip`, …) or `unknown`, never a trip name.
///
/// | name | type | labels | what |
/// |---|---|---|---|
/// | `fleetsim_calls_started_total` | counter | `method` | calls that reached the service |
/// | `fleetsim_calls_total` | counter | `method`, `code` | calls ended, by the status the client sees (`CANCELLED` for a reset or the client's cancel) |
/// | `fleetsim_updates_sent_total` | counter | — | stream messages sent (load generation's counted once per pass) |
/// | `fleetsim_faults_injected_total` | counter | `fault`: `status`, `reset`, `goaway`, `drop`, `latency` | injected faults |
/// | `fleetsim_connections_open` | gauge | — | connections open, sampled every second |
/// | `fleetsim_streams_open` | gauge | — | streaming `GetTrip` calls open |
public final class FleetSim: Sendable {
  /// The configuration it runs with.
  public let configuration: FleetSimConfiguration
  /// The simulation, for callers that want to know what a trip will do.
  public var simulator: TripSimulator { service.simulator }
  private let service: FleetSimService
  private let router: FleetSimRouter
  private let metrics: FleetSimMetrics
  private let server: GRPCServer
  private let logger: Logger
  private let faultTasks = Locked<[Task<Void, Never>]>([])
  private let lifecycle = Locked(Lifecycle())

  private struct Lifecycle {
    var started = false
    var stopping = false
    var sampler: Task<Void, Never>?
  }

  /// The status every call still open at the end of a graceful shutdown's grace period ends with.
  public static let shutdownStatus = GRPCStatus(code: .unavailable, message: "server shutting down")
  /// How often the open-connections gauge is sampled.
  static let samplingInterval: Duration = .seconds(1)
  /// How long a graceful shutdown waits for connections to close after their last call ended.
  static let closeWait: Duration = .seconds(1)

  /// Creates the server on `listen` (default: 127.0.0.1, a free port, h2c).
  ///
  /// - Parameters:
  ///   - metricsFactory: where the metrics go; `nil` (the default) uses `MetricsSystem.factory`, the
  ///     process's bootstrapped one (no-op unless bootstrapped).
  /// - Throws: ``GRPCError`` (`INVALID_ARGUMENT`) for unusable TLS files.
  public init(
    configuration: FleetSimConfiguration,
    listen: GRPCServerConfiguration = GRPCServerConfiguration(),
    logger: Logger = Logger(label: "journeysharing.fleetsim", factory: { _ in SwiftLogNoOpLogHandler() }),
    metricsFactory: (any MetricsFactory)? = nil
  ) throws(GRPCError) {
    self.configuration = configuration
    self.logger = logger
    let metrics = FleetSimMetrics(factory: metricsFactory ?? MetricsSystem.factory)
    self.metrics = metrics
    let service = FleetSimService(configuration: configuration, logger: logger, metrics: metrics)
    self.service = service
    let router = FleetSimRouter(trips: service, metrics: metrics)
    self.router = router
    self.server = try GRPCServer(configuration: listen, service: router, logger: logger)
  }

  /// Starts listening; returns the bound port. Once started, returns the same port again.
  ///
  /// - Throws: ``GRPCError`` (`UNAVAILABLE`) when the address cannot be bound.
  @discardableResult
  public func start() throws(GRPCError) -> Int {
    let alreadyStarted = lifecycle.withLock { state in
      defer { state.started = true }
      return state.started
    }
    if alreadyStarted { return localPort }
    let port: Int
    do {
      port = try server.start()
    } catch {
      lifecycle.withLock { $0.started = false }
      throw error
    }
    startFaultTimers(configuration.faults)
    startSampler()
    return port
  }

  /// Sets the health status `Check` and `Watch` report for `service` (`""`: the server as a
  /// whole), registering a service it did not know; ignored once a graceful shutdown has begun.
  public func setHealthStatus(_ status: HealthCheckResponse.ServingStatus, forService service: String = "") {
    let health = router.health
    server.execute { health.setStatus(status, for: service) }
  }

  /// Replaces the faults in force (initially the configuration's) while serving: status failures
  /// and resets apply to the calls and updates that follow; the GOAWAY and drop timers restart.
  public func setFaults(_ faults: FaultInjection) {
    let service = service
    server.execute { service.faults = faults }
    startFaultTimers(faults)
  }

  /// Samples the server's open connections into their gauge, every ``samplingInterval``.
  private func startSampler() {
    // Holds the server weakly: a FleetSim let go without a shutdown still stops its server.
    let task = Task.detached { [weak server, metrics] in
      while !Task.isCancelled {
        guard let stats = await server?.stats() else { return }
        metrics.connectionsOpen.record(stats.openConnections)
        try? await Task.sleep(for: Self.samplingInterval)
      }
    }
    lifecycle.withLock { $0.sampler = task }
  }

  private func stopTimers() {
    for task in faultTasks.withLock({ $0 }) { task.cancel() }
    lifecycle.withLock { $0.sampler }?.cancel()
  }

  private func startFaultTimers(_ faults: FaultInjection) {
    var tasks: [Task<Void, Never>] = []
    if let interval = faults.goAwayInterval {
      tasks.append(
        repeating(every: interval) { [server, service] in
          server.sendGoAway()
          server.execute { service.countGoAway() }
        })
    }
    if let interval = faults.dropInterval {
      tasks.append(
        repeating(every: interval) { [server, service] in
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

  /// Stops the fault timers and the server at once (open streams are cut).
  public func shutdown() async {
    lifecycle.withLock { $0.stopping = true }
    stopTimers()
    await server.shutdown(graceful: false)
    metrics.connectionsOpen.record(0)
  }

  /// Drains and stops the server, as the type's documentation describes: health NOT_SERVING,
  /// GOAWAY, `gracePeriod` (default ``FleetSimConfiguration/shutdownGracePeriod``) for open calls to
  /// finish, the rest ended with ``shutdownStatus``, then the connections closed. Returns when they
  /// are; cancelling the calling task cuts the waiting short. A second call returns at once.
  public func shutdownGracefully(gracePeriod: Duration? = nil) async {
    let first = lifecycle.withLock { state in
      defer { state.stopping = true }
      return !state.stopping
    }
    guard first else { return }
    let grace = gracePeriod ?? configuration.shutdownGracePeriod
    stopTimers()
    let router = router
    let open = await onLoop { () -> Int in
      router.beginDraining()
      return router.openWorkCalls
    }
    logger.debug("draining", metadata: ["open_calls": "\(open)", "grace_period": "\(grace)"])
    // After the health updates are queued (tasks run in order): stop accepting, GOAWAY everywhere.
    await server.shutdown(graceful: true)
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: grace)
    var left = open
    while left > 0, clock.now < deadline, !Task.isCancelled {
      try? await Task.sleep(for: .milliseconds(20))
      left = await onLoop { router.openWorkCalls }
    }
    if left > 0 {
      logger.debug("grace period over: ending the calls still open", metadata: ["open_calls": "\(left)"])
    }
    await onLoop { router.endOpenCalls(Self.shutdownStatus) }
    // A connection closes by itself once the end of its last stream is written (GOAWAY was sent).
    let closeDeadline = clock.now.advanced(by: Self.closeWait)
    while clock.now < closeDeadline, !Task.isCancelled {
      if await server.stats().openConnections == 0 { break }
      try? await Task.sleep(for: .milliseconds(20))
    }
    await server.shutdown(graceful: false)
    metrics.connectionsOpen.record(0)
    logger.debug("drained")
  }

  /// Runs `body` on the server's event loop and returns its result.
  private func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
      server.execute { continuation.resume(returning: body()) }
    }
  }
}

extension FleetSim: Service {
  /// Serves (starting first if ``start()`` was not called) until graceful shutdown is triggered,
  /// then drains with ``shutdownGracefully(gracePeriod:)`` and returns. Cancelled, it stops at once
  /// with ``shutdown()``. Outside a `ServiceGroup` only cancellation ends it.
  ///
  /// - Throws: ``GRPCError`` (`UNAVAILABLE`) when the address cannot be bound.
  public func run() async throws {
    try start()
    do {
      try await gracefulShutdown()
    } catch {
      await shutdown()
      return
    }
    await shutdownGracefully()
  }
}
