// Sources/JourneySharing/TripPipelineHarness.swift - the per-update path without the network, for benchmarks
//
// SPI, not API: `@_spi(Benchmarks) import JourneySharing` reaches it. It runs exactly what
// a followed trip runs for each streaming message after decoding (TripState.apply: merge,
// derive, diff; then the hand-off to each subscriber's mailbox and the delivery threads'
// callbacks), driven by the caller's thread instead of the event loop.

public import FleetEngineMessages
import HTTP2Transport
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
  private var states: [TripState]

  /// `tripCount` trips named `providers/bench/trips/trip-{i}`, each with `subscriber` registered
  /// (without following anything), and `deliveryThreads` delivery threads.
  public init(tripCount: Int, subscriber: any TripModelSubscriber, deliveryThreads: Int = 1) throws {
    var configuration = JourneySharingConfiguration(
      host: "127.0.0.1", port: 9, security: .plaintext, providerID: "bench")
    configuration.deliveryThreads = deliveryThreads
    services = try JourneySharingServices(configuration: configuration)
    var models: [TripModel] = []
    var jobs: [SubscriberJob] = []
    var states: [TripState] = []
    models.reserveCapacity(tripCount)
    for index in 0..<tripCount {
      let model = services.tripService.tripModel(forTripName: "providers/bench/trips/trip-\(index)")
      models.append(model)
      jobs.append(SubscriberJob(model: model, subscriber: subscriber, executor: services.core.executor))
      states.append(TripState(tripID: "trip-\(index)"))
    }
    self.models = models
    self.jobs = jobs
    self.states = states
  }

  /// The number of trips.
  public var tripCount: Int { states.count }

  /// Runs one update through trip `index`'s pipeline: merge, derive, diff, and (when something
  /// changed) hand-off to the subscriber's mailbox, scheduling a delivery if none is pending.
  /// Returns the changed property bits.
  @discardableResult
  public func push(_ update: TripUpdate, toTrip index: Int) -> TripPropertyFields {
    // As the follower does: take back an undelivered event so the snapshot can be updated in place.
    let reclaimed = jobs[index].reclaimPending()
    let changes = states[index].apply(update)
    if !changes.isEmpty || reclaimed {
      let event = TripModelEvent(snapshot: states[index].snapshot, error: nil, modelState: .active)
      // As the follower does: queue without waking; the delivery threads wake once per batch.
      jobs[index].offer(event, changes: changes.rawValue)
    }
    return changes
  }

  /// Wakes the delivery threads for what was queued (the follower does this at the end of each socket
  /// read); call after a batch of pushes.
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
