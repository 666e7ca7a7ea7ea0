// Sources/JourneySharing/TripModel.swift - one followed trip and its subscribers

public import FleetEngineMessages
public import GRPCProtocol
import Primitives
import Synchronization
import UpdatePipeline

/// One trip to follow: the counterpart of the SDK's `GMTCTripModel`.
///
/// Get it from ``TripService/tripModel(forTripName:)`` (the same name gives the
/// same model while the model is held or has subscribers). Following starts when the first subscriber registers
/// (or the first ``updates()`` sequence is iterated) and stops when the last one
/// leaves, or once the trip reaches its final state (COMPLETE or CANCELED), which
/// every subscriber receives exactly once.
///
/// Errors reach subscribers through `tripModel(_:didFailUpdateTripWithError:)`
/// as ``GRPCError`` (NSError domain `io.grpc`). ABORTED, CANCELLED,
/// DEADLINE_EXCEEDED and UNAVAILABLE are recovered from by reconnecting with
/// backoff; INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED and
/// UNAUTHENTICATED are reported and retried with backoff until following stops.
/// A trip name that is not `providers/{provider_id}/trips/{trip_id}` fails at once
/// with INVALID_ARGUMENT and nothing is sent.
///
/// Memory per followed trip: the merged `Trip` and one derived ``TripSnapshot``
/// (a few KiB for a trip with a 200-point route), one small mailbox per subscriber
/// holding a pointer to the latest event (never a queue), and the stream's state
/// in the channel (tens of bytes plus nghttp2's per-stream state).
public final class TripModel: Sendable {
  /// The trip's resource name.
  public let tripName: String
  /// The parsed name, or nil when the name is invalid (then every fetch fails INVALID_ARGUMENT).
  public let parsedName: TripName?
  let follower: TripCoordinator
  private let registrations = Locked<Registrations>(Registrations())
  private let optionsStore: Locked<TripModelOptions>
  /// Health figures the coordinator writes and anyone may read.
  let healthCell = TripHealthCell()

  /// The subscribers and update streams, and the model's hold on itself while it has any.
  private struct Registrations {
    var jobs: [ObjectIdentifier: SubscriberJob] = [:]
    var streams: [ObjectIdentifier: StreamSubscription] = [:]
    var observers: [ObjectIdentifier: any TripObserver] = [:]
    /// The model itself while anything is registered: update streams reach it through unowned references,
    /// and ``TripService`` keeps unused models only weakly, so a registered model must not go away when
    /// its caller drops it. Cleared with the last registration, which breaks the cycle.
    var retainer: TripModel?

    var count: Int { jobs.count + streams.count + observers.count }

    mutating func retain(_ model: TripModel) { retainer = count > 0 ? model : nil }
  }

  init(tripName: String, services: ServicesCore, options: TripModelOptions) {
    self.tripName = tripName
    self.parsedName = TripName(parsing: tripName)
    self.optionsStore = Locked(options)
    self.follower = TripCoordinator(
      tripName: tripName, parsedName: parsedName, services: services, health: healthCell)
    follower.model = self
  }

  // MARK: - Options and health

  /// This trip's own settings: poll interval, request header and trace id (each nil: the services'
  /// configuration). A change applies from the next request.
  public var options: TripModelOptions {
    get { optionsStore.withLock { $0 } }
    set { optionsStore.withLock { $0 = newValue } }
  }

  /// How fetching this trip is going: the last success, the failures since, and since when the data is stale.
  public var health: TripModelHealth { healthCell.snapshot }

  /// Whether the model is following its trip now (it has subscribers and the trip has not ended).
  public var isActive: Bool { healthCell.isActive }

  // MARK: - Subscribers

  /// Registers `subscriber` (once; registering again does nothing) and starts following
  /// if it is the first. A subscriber that joins later gets the current state first.
  /// The model stays alive while anything is registered, even when the caller drops it.
  public func register(_ subscriber: any TripModelSubscriber) {
    let key = ObjectIdentifier(subscriber)
    registrations.withLock { registrations in
      guard registrations.jobs[key] == nil else { return }
      let job = SubscriberJob(model: self, subscriber: subscriber, services: follower.services)
      registrations.jobs[key] = job
      follower.services.metrics.subscribersChanged(by: 1)
      registrations.retain(self)
      // Queued while the lock is held: the follower sees registrations and removals in the order they
      // happened here, however many threads race (a removal overtaking its registration would leave a
      // follow running for nobody).
      follower.add(job)
    }
  }

  /// Unregisters `subscriber`. When this returns, no callback to it will start, not even the rest of
  /// a delivery under way, and none is running, except where this is called from inside a subscriber
  /// callback: delivery threads never wait for each other, so a callback to `subscriber` already running
  /// on another delivery thread may still be finishing (it is the last). Following stops with the last
  /// subscriber, cancelling the stream on the wire.
  public func unregisterSubscriber(_ subscriber: any TripModelSubscriber) {
    // The hold on the model is released after the follower is told, so `self` outlives this call.
    let (job, retainer) = registrations.withLock { registrations -> (SubscriberJob?, TripModel?) in
      let job = registrations.jobs.removeValue(forKey: ObjectIdentifier(subscriber))
      if job != nil { follower.services.metrics.subscribersChanged(by: -1) }
      let retainer = registrations.retainer
      registrations.retain(self)
      if let job { follower.remove(job) }  // in registration order, as in register(_:)
      return (job, retainer)
    }
    // Outside the lock: closing waits for a delivery under way, whose callback may register again.
    job?.close()
    withExtendedLifetime(retainer) {}
  }

  /// How many subscribers and update sequences are registered.
  public var subscriberCount: Int {
    registrations.withLock { $0.count }
  }

  // MARK: - Observers (package API, for the relay)

  /// Follows the trip for `observer`, as for a subscriber: it is offered every event (the trip, errors, the
  /// model's state) on the trip's scheduler, and told which of the trip's fields each update replaced before
  /// that (``TripFieldObserver``). Nothing is delivered to it on a delivery thread: what it does with an
  /// event, it does on the scheduler, without blocking. A second add of the same observer does nothing.
  package func addObserver(_ observer: any TripObserver) {
    let key = ObjectIdentifier(observer)
    registrations.withLock { registrations in
      guard registrations.observers[key] == nil else { return }
      registrations.observers[key] = observer
      registrations.retain(self)
      follower.add(observer)
    }
  }

  /// The scheduler the trip is followed on, where observers are called.
  package var scheduler: any GRPCScheduler { follower.scheduler }

  /// The trip held now (empty before the first fetch). Call on ``scheduler`` only.
  package var heldTripOnScheduler: Trip { follower.heldTrip }

  /// Stops following for `observer`; nothing is offered to it once the trip's scheduler has run this.
  package func removeObserver(_ observer: any TripObserver) {
    let retainer = registrations.withLock { registrations -> TripModel? in
      let removed = registrations.observers.removeValue(forKey: ObjectIdentifier(observer))
      let retainer = registrations.retainer
      registrations.retain(self)
      if let removed { follower.remove(removed) }
      return retainer
    }
    withExtendedLifetime(retainer) {}
  }

  // MARK: - Swift-native updates

  /// The model's updates as an `AsyncSequence`: each element carries the latest
  /// snapshot and what changed since the previous element (a slow consumer gets the
  /// changes merged). Iterating starts following; the iteration ends when the trip
  /// reaches its final state (after delivering it), or when the task is cancelled or
  /// the iterator dropped, which stops following if nothing else subscribes.
  public func updates() -> TripModelUpdates {
    TripModelUpdates(model: self)
  }

  /// Registers a new update stream; called when a ``TripModelUpdates`` sequence is iterated.
  func beginStream() -> LatestValueStream<TripModelEvent> {
    let subscription = StreamSubscription(model: self)
    subscription.stream.onTermination = { [weak self, weak subscription] in
      guard let self, let subscription else { return }
      self.endStream(subscription)
    }
    registrations.withLock { registrations in
      registrations.streams[ObjectIdentifier(subscription)] = subscription
      follower.services.metrics.subscribersChanged(by: 1)
      registrations.retain(self)
      follower.add(subscription)
    }
    return subscription.stream
  }

  func endStream(_ subscription: StreamSubscription) {
    let retainer = registrations.withLock { registrations -> TripModel? in
      let removed = registrations.streams.removeValue(forKey: ObjectIdentifier(subscription)) != nil
      if removed { follower.services.metrics.subscribersChanged(by: -1) }
      let retainer = registrations.retainer
      registrations.retain(self)
      if removed { follower.remove(subscription) }
      return retainer
    }
    withExtendedLifetime(retainer) {}
  }

  // MARK: - Fetching

  /// Fetches the trip now (a unary GetTrip), outside the streaming or polling rhythm.
  /// Does nothing while not following or while a fetch is already in flight.
  public func refresh() {
    follower.refresh()
  }

  /// The latest snapshot, as the network thread has it (nil before the first fetch).
  public func currentSnapshot() async -> TripSnapshot? {
    await follower.currentSnapshot()
  }

  /// Whether following is on.
  public func modelState() async -> TripModelState {
    await follower.currentModelState()
  }
}

/// A registered ``TripModelSubscriber``: its mailbox, its gate and its delivery step.
/// What ``TripModel/addObserver(_:)`` takes: a pipeline target that also hears which trip fields changed.
package typealias TripObserver = Deliverable & TripFieldObserver

final class SubscriberJob: DeliveryJob, Deliverable {
  /// Strong, not unowned: a delivery passes the model to the callbacks straight from this constant, with no
  /// retain and release (the model has a weak-reference side table, so each of those took the slow path, 4 %
  /// of a delivery's time). The cycle it makes with the model is broken once the job is unregistered: the
  /// registrations drop it at once, the trip's coordinator when its loop next runs, a delivery queue when it
  /// takes the job (which returns at once, its gate closed).
  let model: TripModel
  let subscriber: any TripModelSubscriber
  let mailbox = LatestValueMailbox<TripModelEvent>()
  /// Open while registered; see ``DeliveryGate`` for what closing it guarantees.
  let gate = DeliveryGate()
  private let executor: DeliveryExecutor
  private let metrics: JourneySharingMetrics
  /// The trip's scheduler, whose clock the delivery latency is measured on (the server's send time is
  /// Unix time; so is the scheduler's).
  private let clock: any GRPCScheduler

  init(model: TripModel, subscriber: any TripModelSubscriber, services: ServicesCore) {
    self.model = model
    self.subscriber = subscriber
    self.executor = services.executor
    self.metrics = services.metrics
    self.clock = model.follower.scheduler
  }

  /// Writer side (the event loop): hands `event` over and queues a delivery if needed, without waking
  /// a worker: the follower wakes one per batch (``ServicesCore/requestDeliveryWake()``).
  @discardableResult
  func offer(_ event: TripModelEvent, changes: UInt64) -> Bool {
    guard mailbox.publish(event, changes: changes) else { return false }
    executor.submitWithoutWaking(self)
    return true
  }

  func runDelivery() {
    guard gate.enter() else { return }
    // Counted per run (a batch of events), not per event: one atomic add, one timer record at most.
    var delivered = 0
    var sendTime: Double?
    repeat {
      // Nothing is kept after the callbacks: the snapshot's storage can then be reused for the next update.
      let (value, changes) = mailbox.take()
      if changes != 0, let event = value {
        subscriber.deliver(model, event: event, changes: changes, gate: gate)
        delivered += 1
        if changes & TripPropertyFields.all.rawValue != 0, let time = event.sendTime { sendTime = time }
      }
      if !gate.isOpen { break }
    } while mailbox.finishDelivery()
    gate.leave()
    guard delivered > 0, metrics.enabled else { return }
    metrics.delivered(delivered)
    // The latest update's latency: from the server's send time to the end of its callbacks.
    if let sendTime { metrics.recordDeliveryLatency(seconds: clock.unixTime - sendTime) }
  }

  func reclaimPending() -> Bool {
    mailbox.reclaim() != nil
  }

  /// Stops deliveries: none starts after this, and none is under way once it returns, unless called on a
  /// delivery thread (see ``DeliveryGate/close()``).
  func close() {
    mailbox.close()
    gate.close()
  }
}

/// An ``TripModel/updates()`` sequence's link to the model.
final class StreamSubscription: Deliverable {
  let stream = LatestValueStream<TripModelEvent>()
  unowned let model: TripModel

  init(model: TripModel) { self.model = model }

  @discardableResult
  func offer(_ event: TripModelEvent, changes: UInt64) -> Bool {
    stream.publish(event, changes: changes)
    if changes & TripPropertyFields.tripStatus.rawValue != 0, event.snapshot?.isFinal == true {
      stream.finish()
    }
    return false
  }

  func reclaimPending() -> Bool { false }
}

/// One element of ``TripModel/updates()``.
public struct TripModelUpdate: Sendable {
  /// The trip as of this update (nil until the first fetch succeeded).
  public var snapshot: TripSnapshot?
  /// What changed since the previous element.
  public var updatedPropertyFields: TripPropertyFields
  /// The most recent error, when one happened since the previous element.
  public var error: GRPCError?
  /// Whether following is on.
  public var modelState: TripModelState
}

/// The ``TripModel/updates()`` sequence. Following starts when it is iterated (not when it
/// is made), and a sequence that is dropped without being iterated follows nothing.
public struct TripModelUpdates: AsyncSequence, Sendable {
  public typealias Element = TripModelUpdate
  let model: TripModel

  public func makeAsyncIterator() -> Iterator { Iterator(base: model.beginStream().makeAsyncIterator()) }

  /// Iterates the updates.
  public struct Iterator: AsyncIteratorProtocol {
    var base: LatestValueStream<TripModelEvent>.AsyncIterator

    public mutating func next() async -> TripModelUpdate? {
      guard let (event, changes) = await base.next() else { return nil }
      return TripModelUpdate(
        snapshot: event.snapshot,
        updatedPropertyFields: TripPropertyFields(rawValue: changes & TripPropertyFields.all.rawValue),
        error: changes & TripModelEvent.errorBit != 0 ? event.error : nil,
        modelState: event.modelState)
    }
  }
}
