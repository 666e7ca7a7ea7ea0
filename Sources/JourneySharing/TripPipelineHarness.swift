// Sources/JourneySharing/TripPipelineHarness.swift - the per-update path without the network, for benchmarks
//
// SPI, not API: `@_spi(Benchmarks) import JourneySharing` reaches it. It runs exactly what a followed
// trip runs for each streaming message after decoding (``TripPipeline``: merge, derive, diff, offer to
// each subscriber's mailbox; then the delivery threads' callbacks), driven by the caller's thread
// instead of a transport's scheduler.

public import CoreMetrics
public import FleetEngineMessages
import UpdatePipeline

/// Trips fed by the caller instead of a server, each with one registered subscriber: what
/// `Benchmarks/` measures as the update pipeline.
///
/// Single writer: call ``push(_:toTrip:)`` from one thread at a time.
@_spi(Benchmarks)
public final class TripPipelineHarness: @unchecked Sendable {
  private let services: JourneySharingServices
  private let models: [TripModel]
  private let jobs: [SubscriberJob]
  private var pipelines: [TripPipeline]

  /// `tripCount` trips named `providers/bench/trips/trip-{i}`, each with `subscriber` registered
  /// (without following anything), and `deliveryThreads` delivery threads; deliveries are counted (and
  /// their latency timed) through `metricsFactory` as a followed trip's are (nil: the global factory).
  public init(
    tripCount: Int, subscriber: any TripModelSubscriber, deliveryThreads: Int = 1,
    metricsFactory: (any MetricsFactory)? = nil
  ) throws {
    var configuration = JourneySharingConfiguration(
      host: "127.0.0.1", port: 9, security: .plaintext, providerID: "bench")
    configuration.deliveryThreads = deliveryThreads
    configuration.metricsFactory = metricsFactory
    services = try JourneySharingServices(configuration: configuration)
    var models: [TripModel] = []
    var jobs: [SubscriberJob] = []
    var pipelines: [TripPipeline] = []
    models.reserveCapacity(tripCount)
    for index in 0..<tripCount {
      let model = services.tripService.tripModel(forTripName: "providers/bench/trips/trip-\(index)")
      let job = SubscriberJob(model: model, subscriber: subscriber, services: services.core)
      var pipeline = TripPipeline(tripID: "trip-\(index)")
      pipeline.add(job)
      models.append(model)
      jobs.append(job)
      pipelines.append(pipeline)
    }
    self.models = models
    self.jobs = jobs
    self.pipelines = pipelines
  }

  /// The number of trips.
  public var tripCount: Int { pipelines.count }

  /// Runs one update through trip `index`'s pipeline: merge, derive, diff, and (when something changed)
  /// hand-off to the subscriber's mailbox, scheduling a delivery if none is pending. Returns the changed
  /// property bits.
  @discardableResult
  public func push(_ update: TripUpdate, toTrip index: Int) -> TripPropertyFields {
    let outcome = pipelines[index].apply(update, within: nil) {
      TripModelEvent(snapshot: $0, error: nil, modelState: .active, sendTime: update.sendTime.map { $0.unixTime })
    }
    guard case .applied(let changes, _) = outcome else { return [] }
    return changes
  }

  /// Runs one encoded update through trip `index`'s pipeline as a followed trip's stream does with the
  /// message's bytes: decoded flat when it is a vehicle's progress (`TripProgressUpdate`), whole otherwise,
  /// then merged, derived, diffed and handed off as ``push(_:toTrip:)`` does. Returns the changed property
  /// bits; nothing changes for bytes that do not decode.
  @discardableResult
  public func push(encoded bytes: UnsafeRawBufferPointer, toTrip index: Int) -> TripPropertyFields {
    guard let update = try? StreamedTripUpdate.decode(bytes) else { return [] }
    let sendTime = update.sendTime.map { $0.unixTime }
    let outcome = pipelines[index].apply(update, within: nil) {
      TripModelEvent(snapshot: $0, error: nil, modelState: .active, sendTime: sendTime)
    }
    guard case .applied(let changes, _) = outcome else { return [] }
    return changes
  }

  /// Wakes the delivery threads for what was queued (a scheduler does this after each socket read); call
  /// after a batch of pushes.
  public func flush() {
    services.core.executor.wakeIfNeeded()
  }

  /// Whether any trip's mailbox still holds an update its subscriber has not taken.
  public var hasPendingDeliveries: Bool {
    jobs.contains { $0.mailbox.hasPending }
  }

  /// Closes the mailboxes and stops the delivery threads.
  public func shutdown() async {
    for job in jobs { job.close() }
    await services.shutdown()
  }
}
