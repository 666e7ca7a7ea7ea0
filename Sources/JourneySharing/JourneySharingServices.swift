// Sources/JourneySharing/JourneySharingServices.swift - the entry point and the trip service

import CoreMetrics
public import GRPCProtocol
import Logging
import Primitives
import Synchronization
import UpdatePipeline

/// The library's entry point: the counterpart of the SDK's `GMTCServices`, made for
/// a server process rather than a shared singleton.
///
/// ```swift
/// let services = try JourneySharingServices(configuration: JourneySharingConfiguration(
///   host: "fleetengine.googleapis.com", port: 443, providerID: "my-project",
///   authorization: MyTokenProvider()))
/// let tripModel = services.tripService.tripModel(forTripName: "providers/my-project/trips/trip-7")
/// tripModel.register(self)
/// // … later
/// tripModel.unregisterSubscriber(self)
/// await services.shutdown()
/// ```
///
/// The services are a swift-service-lifecycle `Service`: run them in a `ServiceGroup` and ``run()``
/// returns after the group's graceful shutdown, once ``shutdown()`` has run. For a script,
/// ``withJourneySharingServices(configuration:isolation:_:)`` shuts them down when its body returns.
public final class JourneySharingServices: Sendable {
  /// Trip models by name.
  public let tripService: TripService
  let core: ServicesCore

  /// Creates the services; no connection is made until a trip is followed.
  ///
  /// - Throws: ``GRPCError`` (`INVALID_ARGUMENT`) when the TLS settings cannot be loaded.
  public convenience init(configuration: JourneySharingConfiguration) throws(GRPCError) {
    self.init(configuration: configuration, transport: try makeDefaultTransport(configuration))
  }

  /// Creates the services over `transport` (tests use an in-memory one).
  package init(configuration: JourneySharingConfiguration, transport: any GRPCClientTransport) {
    core = ServicesCore(configuration: configuration, transport: transport)
    tripService = TripService(core: core)
  }

  /// The transport's connections and calls, and the request budget's figures.
  public func statistics() async -> JourneySharingStatistics {
    JourneySharingStatistics(
      connections: await core.transport.statistics(), requestBudget: core.budget.statistics,
      tripModels: tripService.allTripModels.count, activeTripModels: tripService.activeTripModels.count)
  }

  /// Records the figures that are sampled (connections, streams, attempts, failures, GOAWAYs, polls that
  /// waited, updates delivered) into the metrics now, rather than at the next sample.
  public func flushMetrics() async {
    await core.sampleMetrics()
  }

  /// Shuts down gracefully, and returns when that is done; the same as a `ServiceGroup`'s graceful
  /// shutdown of ``run()``. Calling it again (or concurrently) waits for the first call to finish.
  ///
  /// In order: following stops for every trip (each stream is cancelled, each poll timer stopped, and no
  /// update is offered to a subscriber after this); deliveries already handed to the delivery threads are
  /// **delivered**, not dropped, before this returns (a subscriber may get callbacks until then, never
  /// after); calls still open end, and every connection is closed with GOAWAY; the metrics are sampled a
  /// last time. Trip models stay readable (their last snapshot), but follow nothing any more.
  public func shutdown() async {
    guard core.lifecycle.beginShutdown() else {
      await core.lifecycle.waitUntilShutDown()
      return
    }
    for model in tripService.allTripModels { model.follower.stopAll() }
    await core.transport.shutdown()
    core.executor.shutdown()
    core.stopMetricsSampler()
    await core.sampleMetrics()
    core.lifecycle.finishShutdown()
  }
}

/// A snapshot of what ``JourneySharingServices`` is doing.
public struct JourneySharingStatistics: Sendable, Hashable {
  /// Connections and calls.
  public var connections: GRPCTransportStatistics
  /// The GetTrip request budget (``JourneySharingConfiguration/maxRequestsPerSecond``): requests, and
  /// those that waited for it.
  public var requestBudget: RequestBudgetStatistics
  /// Models that exist.
  public var tripModels: Int
  /// Models following their trip now.
  public var activeTripModels: Int
}

/// What every trip model shares: configuration, transport, delivery threads, request budget, metrics,
/// tracing and the lifecycle.
final class ServicesCore: Sendable {
  let configuration: JourneySharingConfiguration
  let transport: any GRPCClientTransport
  let executor: DeliveryExecutor
  let budget: RequestBudget
  /// How fast stream watchdogs may end silent streams, for all trips together.
  let watchdogEndings: WatchdogEndings
  let metrics: JourneySharingMetrics
  let tracing: CallTracing
  let lifecycle = ServicesLifecycle()
  private let schedulers: [any GRPCScheduler]
  private let wakers: [ObjectIdentifier: DeliveryWaker]
  private let tallies: [ObjectIdentifier: UpdateTally]
  private let samplerStopped = Atomic<Bool>(false)
  var logger: Logger { configuration.logger }

  init(configuration: JourneySharingConfiguration, transport: any GRPCClientTransport) {
    self.configuration = configuration
    self.transport = transport
    let executor = DeliveryExecutor(threads: max(1, configuration.deliveryThreads), name: "journeysharing-delivery")
    self.executor = executor
    self.budget = RequestBudget(requestsPerSecond: configuration.maxRequestsPerSecond)
    self.watchdogEndings = WatchdogEndings(watchdog: configuration.streamWatchdog, logger: configuration.logger)
    let schedulers = transport.schedulers
    precondition(!schedulers.isEmpty, "a transport has at least one scheduler")
    self.schedulers = schedulers
    let metrics = JourneySharingMetrics(
      factory: configuration.metricsFactory ?? MetricsSystem.factory, prefix: configuration.metricsLabelPrefix)
    self.metrics = metrics
    self.tracing = CallTracing(tracer: configuration.tracer)
    var wakers: [ObjectIdentifier: DeliveryWaker] = [:]
    var tallies: [ObjectIdentifier: UpdateTally] = [:]
    for scheduler in schedulers {
      wakers[ObjectIdentifier(scheduler)] = DeliveryWaker(scheduler: scheduler, executor: executor)
      tallies[ObjectIdentifier(scheduler)] = UpdateTally(scheduler: scheduler, metrics: metrics)
    }
    self.wakers = wakers
    self.tallies = tallies
    if metrics.enabled { startMetricsSampler() }
  }

  /// The tally of updates received on `scheduler` (one of the transport's).
  func tally(on scheduler: any GRPCScheduler) -> UpdateTally? {
    tallies[ObjectIdentifier(scheduler)]
  }

  /// Samples the transport and the request budget every ``JourneySharingConfiguration/metricsSampleInterval``
  /// on the first scheduler, until ``stopMetricsSampler()``. Holds the core weakly.
  private func startMetricsSampler() {
    let scheduler = schedulers[0]
    let interval = max(configuration.metricsSampleInterval, .milliseconds(10))
    scheduler.execute { [weak self] in self?.scheduleSample(on: scheduler, after: interval) }
  }

  private func scheduleSample(on scheduler: any GRPCScheduler, after interval: Duration) {
    guard !samplerStopped.load(ordering: .relaxed) else { return }
    _ = scheduler.scheduleTimer(after: interval) { [weak self] in
      guard let self, !self.samplerStopped.load(ordering: .relaxed) else { return }
      Task { await self.sampleMetrics() }
      self.scheduleSample(on: scheduler, after: interval)
    }
  }

  func stopMetricsSampler() {
    samplerStopped.store(true, ordering: .relaxed)
  }

  /// Flushes the update tallies (on their schedulers) and records the sampled figures.
  func sampleMetrics() async {
    guard metrics.enabled else { return }
    for scheduler in schedulers {
      guard let tally = tallies[ObjectIdentifier(scheduler)] else { continue }
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        scheduler.execute {
          tally.flush()
          continuation.resume()
        }
      }
    }
    metrics.sample(transport: await transport.statistics(), budget: budget.statistics)
  }

  /// The scheduler a trip's following runs on: the same for a name every time.
  func scheduler(forTrip name: String) -> any GRPCScheduler {
    schedulers.count == 1 ? schedulers[0] : schedulers[Int(UInt(bitPattern: name.hashValue) % UInt(schedulers.count))]
  }

  /// After delivery jobs were queued without waking: wakes the delivery threads once `scheduler` has
  /// handled its current event (a socket read with any number of messages) rather than once per queued
  /// delivery (the executor itself wakes one every ``DeliveryExecutor/wakeBatch`` jobs meanwhile).
  func requestDeliveryWake(on scheduler: any GRPCScheduler) {
    wakers[ObjectIdentifier(scheduler)]?.request()
  }
}

/// Wakes the delivery threads once per scheduler event. `@unchecked Sendable`: `scheduled` is touched only
/// on `scheduler`.
final class DeliveryWaker: @unchecked Sendable {
  private let scheduler: any GRPCScheduler
  private let executor: DeliveryExecutor
  private var scheduled = false

  init(scheduler: any GRPCScheduler, executor: DeliveryExecutor) {
    self.scheduler = scheduler
    self.executor = executor
  }

  /// On the scheduler: schedules one wake after the current event, unless one is scheduled.
  func request() {
    guard !scheduled else { return }
    scheduled = true
    scheduler.executeSoon { [self] in
      scheduled = false
      executor.wakeIfNeeded()
    }
  }
}

/// Hands out trip models: the counterpart of the SDK's `GMTCTripService`.
///
/// A model is kept while it is in use (a subscriber or an update sequence is registered) or while the
/// caller holds it; after that it is let go, with its trip state, so a process that follows trip after
/// trip for days holds only the trips it follows now. Asking again for such a name gives a new model.
public final class TripService: Sendable {
  let core: ServicesCore
  private let models = Locked<Models>(Models())

  /// The models by name, held weakly (a registered model holds itself, see ``TripModel/register(_:)``).
  private struct Models {
    struct Entry {
      weak var model: TripModel?
    }
    var byName: [String: Entry] = [:]
    /// Entries whose models are gone are swept when the table has doubled since the last sweep.
    var sweepAt = 64

    mutating func sweepIfDue() {
      guard byName.count >= sweepAt else { return }
      byName = byName.filter { $0.value.model != nil }
      sweepAt = max(64, byName.count * 2)
    }
  }

  init(core: ServicesCore) { self.core = core }

  /// The model of `tripName`, `providers/{provider_id}/trips/{trip_id}`: the same name gives the same
  /// model for as long as that model is held or has subscribers. An invalid name still gives a model,
  /// whose subscribers get INVALID_ARGUMENT at once (nothing is sent).
  public func tripModel(forTripName tripName: String) -> TripModel {
    tripModel(forTripName: tripName, options: nil)
  }

  /// The model of `tripName`, made with `options` if it does not exist yet (an existing model keeps its
  /// own; set ``TripModel/options`` to change them).
  public func tripModel(forTripName tripName: String, options: TripModelOptions?) -> TripModel {
    models.withLock { models in
      if let model = models.byName[tripName]?.model { return model }
      models.sweepIfDue()
      let model = TripModel(tripName: tripName, services: core, options: options ?? TripModelOptions())
      models.byName[tripName] = Models.Entry(model: model)
      return model
    }
  }

  /// Whether a model for `tripName` exists (is held or has subscribers).
  public func hasTripModel(forTripName tripName: String) -> Bool {
    models.withLock { $0.byName[tripName]?.model != nil }
  }

  /// Every model that exists now.
  public var allTripModels: [TripModel] {
    models.withLock { $0.byName.values.compactMap(\.model) }
  }

  /// The models following their trip now (the SDK's `activeTripModels`).
  public var activeTripModels: [TripModel] {
    allTripModels.filter(\.isActive)
  }
}
