// Sources/JourneySharingCore/TripPipeline.swift - the one per-update step: merge, derive, diff, offer
//
// Every update of a followed trip goes through here, whoever produced it: the follower (a streamed
// TripUpdate, a polled Trip), the benchmark harness and the trip-merge fuzzer. It takes back events still
// waiting in mailboxes (so the snapshot they hold can be updated in place), merges the update into the
// trip's state (refusing a trip above the limits, which leaves the state as it was), derives the new
// snapshot, diffs it against the previous one, and offers the result to every subscriber's mailbox.
// Single writer: one pipeline is driven from one thread at a time (its trip's scheduler).

package import FleetEngineMessages

/// What a pipeline hands events to: subscriber jobs and update streams.
package protocol Deliverable: AnyObject, Sendable {
  /// Hands `event` over; returns whether a delivery job was queued (that needs a wake, see
  /// ``ServicesCore/requestDeliveryWake()``).
  @discardableResult
  func offer(_ event: TripModelEvent, changes: UInt64) -> Bool
  /// Takes back an event offered but not delivered yet (its change bits stay owed and go with the next
  /// offer), so that the snapshot it holds can be updated in place. Returns whether one was taken back.
  func reclaimPending() -> Bool
}

/// A target that also hears which of the trip's own fields each update replaced, before the update is offered:
/// for a republisher of the trip (the relay), which writes those fields on, not the subscribers' properties.
/// Called on the pipeline's thread; it must not keep `snapshot` (the next update could not then go into its
/// storage in place).
package protocol TripFieldObserver: AnyObject {
  /// An update was merged: `fields` are the `Trip` fields it replaced (bit n: field n); `full` when it
  /// replaced the whole trip (a full update, or the first trip).
  func trip(_ snapshot: TripSnapshot, changedFields fields: UInt64, full: Bool)
}

/// One trip's state and its subscribers' mailboxes, and the step every update takes between them.
package struct TripPipeline {
  package private(set) var state: TripState
  /// The subscribers and update streams, in registration order.
  package private(set) var targets: [any Deliverable] = []
  /// The targets that are also ``TripFieldObserver``s (rare: most pipelines have none).
  package private(set) var observers: [any TripFieldObserver] = []

  /// The outcome of one update.
  package enum Outcome {
    /// Applied: `changes` is what subscribers were told changed (empty: nothing did); `queued` says whether a
    /// delivery job was queued, which needs a wake.
    case applied(changes: TripPropertyFields, queued: Bool)
    /// Refused because the trip would be above the limits; the state is unchanged. `owed` says whether
    /// events were taken back from mailboxes, whose change bits must go out with the next offer.
    case refused(TripLimitViolation, owed: Bool)
  }

  package init(tripID: String) {
    state = TripState(tripID: tripID)
  }

  package var snapshot: TripSnapshot? { state.snapshot }

  // MARK: Targets

  package mutating func add(_ target: any Deliverable) {
    targets.append(target)
    if let observer = target as? any TripFieldObserver { observers.append(observer) }
  }

  /// Removes `target`; returns whether it was there.
  @discardableResult
  package mutating func remove(_ target: any Deliverable) -> Bool {
    guard let index = targets.firstIndex(where: { $0 === target }) else { return false }
    targets.remove(at: index)
    observers.removeAll { $0 === target }
    return true
  }

  package mutating func removeAllTargets() {
    targets.removeAll()
    observers.removeAll()
  }

  // MARK: The step

  /// Merges a streamed update (unless the trip it makes is above `limits`), derives, diffs and offers the
  /// result; `event` makes the event to offer from the new snapshot.
  package mutating func apply(
    _ update: TripUpdate, within limits: TripLimits?, event: (TripSnapshot?) -> TripModelEvent
  ) -> Outcome {
    apply(.full(update), within: limits, event: event)
  }

  /// Merges a streamed update as the stream decoded it (see ``StreamedTripUpdate``), unless the trip it
  /// makes is above `limits`; derives, diffs and offers the result.
  package mutating func apply(
    _ update: StreamedTripUpdate, within limits: TripLimits?, event: (TripSnapshot?) -> TripModelEvent
  ) -> Outcome {
    let reclaimed = reclaimPending()
    let wasEmpty = state.snapshot == nil
    switch state.apply(update, within: limits) {
    case .success(let changes):
      if !observers.isEmpty, let snapshot = state.snapshot {
        let (fields, full): (UInt64, Bool)
        switch update {
        case .progress(let progress): (fields, full) = (progress.updatedFields & Trip.allFieldBits, false)
        case .full(let update):
          (fields, full) =
            update.fullTrip ? (Trip.allFieldBits, true) : (Trip.fieldBits(update.updatedFields), false)
        }
        for observer in observers { observer.trip(snapshot, changedFields: fields, full: full || wasEmpty) }
      }
      return .applied(changes: changes, queued: offer(changes, owed: reclaimed, event: event))
    case .failure(let violation):
      return .refused(violation, owed: reclaimed)
    }
  }

  /// Replaces the trip with a polled one (already merged with what was held, see
  /// `Trip.merged(intoHeld:request:)`), unless it is above `limits`; derives, diffs and offers.
  package mutating func replace(
    with trip: Trip, within limits: TripLimits?, event: (TripSnapshot?) -> TripModelEvent
  ) -> Outcome {
    if let limits, let violation = limits.violation(in: trip) { return .refused(violation, owed: false) }
    let reclaimed = reclaimPending()
    // What the poll changed, for observers only (a diff of the whole trip: not for every pipeline).
    let previous = observers.isEmpty ? nil : state.snapshot?.trip
    let changes = state.replace(with: trip)
    if !observers.isEmpty, let snapshot = state.snapshot {
      let fields = previous.map { trip.changedFieldBits(from: $0) } ?? Trip.allFieldBits
      for observer in observers { observer.trip(snapshot, changedFields: fields, full: previous == nil) }
    }
    return .applied(changes: changes, queued: offer(changes, owed: reclaimed, event: event))
  }

  /// Offers `event` with `changes` (not the trip's properties: error and state bits) to every target;
  /// returns whether a delivery was queued.
  package func publish(_ event: TripModelEvent, changes: UInt64) -> Bool {
    var queued = false
    for target in targets where target.offer(event, changes: changes) { queued = true }
    return queued
  }

  /// Events still waiting in mailboxes hold the current snapshot: take them back so the update can go into
  /// its storage in place (their change bits go out with the next offer).
  private func reclaimPending() -> Bool {
    var reclaimed = false
    for target in targets where target.reclaimPending() { reclaimed = true }
    return reclaimed
  }

  private func offer(_ changes: TripPropertyFields, owed: Bool, event: (TripSnapshot?) -> TripModelEvent) -> Bool {
    // Nothing changed and nothing was taken back: nobody needs a delivery.
    guard !changes.isEmpty || owed else { return false }
    return publish(event(state.snapshot), changes: changes.rawValue)
  }
}
