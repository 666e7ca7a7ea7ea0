// Sources/TripRelay/FollowedTrip.swift - one trip the relay follows: its updates, written on to the sink
//
// A followed trip is an observer of the trip's model (the consumer API's own following: streaming or polling,
// retries, tokens), called on the trip's event loop as each update is merged, with the trip's fields that
// update replaced. It writes them on to the sink one record at a time: while one is unacknowledged, later
// changes only add their fields to what the next record will carry, so a trip publishes at most one record
// per round trip to JetStream, however fast upstream goes, and never falls behind. The first record of a
// delivery carries the whole trip; every `checkpointInterval` records the whole state goes with a record, to
// be kept as the trip's latest state.
//
// Upstream errors decide how the follow ends: NOT_FOUND and INVALID_ARGUMENT are refusals (published, so
// that every watcher of every relay learns it, and the request terminated); PERMISSION_DENIED or
// UNAUTHENTICATED that last `permissionGrace` release the request with a delay (the relay's credentials may be
// fixed meanwhile), and refuse the trip after `maxPermissionReleases` deliveries. Every error is counted by
// code and logged at most once per code and interval.
//
// Confined to the trip's scheduler; the sink's outcomes and the queue's verdicts hop there.

internal import CoreMetrics
internal import FleetEngineMessages
internal import GRPCProtocol
internal import JourneySharing
internal import Logging
internal import Primitives
internal import Synchronization
internal import Tracing

/// One trip the relay follows (see the file comment). `@unchecked Sendable`: confined to `scheduler`.
final class FollowedTrip: TripObserver, @unchecked Sendable {
  let name: TripName
  let lease: FollowLease
  let model: TripModel
  let scheduler: any GRPCScheduler
  /// The follow's span (`relay.follow`), when tracing is on: from taking the request to letting it go.
  let span: (any Span)?
  private unowned let following: TripFollowing
  private var configuration: RelayConfiguration { following.configuration }

  // Scheduler state
  private var inFlight: RelayRecord?
  private var pendingFields: UInt64 = 0
  /// The next record carries the whole trip (the first of a delivery, or after a rebase).
  private var pendingFull = true
  private var pendingRefusal: (code: GRPCStatusCode, message: String)?
  /// The position of the trip's last record stored (nil before this delivery stored one).
  private var expected: UInt64?
  private var sequence: UInt64 = 0
  private var sinceCheckpoint = 0
  private var failures = 0
  private var retryTimer: GRPCTimerID?
  private var permissionErrorSince: UInt64?
  private var stopped = false
  private var generator = SystemRandomNumberGenerator()

  init(lease: FollowLease, model: TripModel, following: TripFollowing, span: (any Span)? = nil) {
    self.name = lease.name
    self.lease = lease
    self.model = model
    self.scheduler = model.scheduler
    self.following = following
    self.span = span
  }

  // MARK: - From the trip's pipeline (on the scheduler)

  func trip(_ snapshot: TripSnapshot, changedFields fields: UInt64, full: Bool) {
    guard !stopped else { return }
    following.upstreamUpdates.add(1, ordering: .relaxed)
    permissionErrorSince = nil
    pendingFields |= fields
    if full { pendingFull = true }
    // The pipeline is in the middle of its step: the trip is the snapshot's (the model's may not be read now).
    publishIfIdle(snapshot.trip)
  }

  func offer(_ event: TripModelEvent, changes: UInt64) -> Bool {
    guard !stopped else { return false }
    if changes & TripModelEvent.errorBit != 0, let error = event.error {
      failed(error)
    } else if let snapshot = event.snapshot, sequence == 0 {
      // A model that held the trip before this observer came (it had followed it to its end in this
      // process): nothing was merged for us, so publish what it holds.
      publishIfIdle(snapshot.trip)
    }
    return false
  }

  func reclaimPending() -> Bool { false }

  // MARK: - Publishing

  /// Sends the next record when none is in flight: the refusal, or what changed in `current` (nil: the trip
  /// the model holds now; only outside the pipeline's step).
  private func publishIfIdle(_ current: Trip? = nil) {
    guard !stopped, inFlight == nil, retryTimer == nil else { return }
    if let refusal = pendingRefusal {
      send(record(.refusal(code: refusal.code, message: refusal.message), body: [], checkpoint: nil))
      return
    }
    guard pendingFull || pendingFields != 0 else { return }
    let trip = current ?? model.heldTripOnScheduler
    guard !trip.name.isEmpty || trip.tripStatus.rawValue != 0 else { return }  // nothing fetched yet
    let full = pendingFull
    let final = trip.isFinal
    let body = TripStreamWriter.encode(trip, fields: full ? nil : pendingFields)
    sinceCheckpoint += 1
    var checkpoint: [UInt8]?
    if full || final || sinceCheckpoint >= configuration.checkpointInterval {
      checkpoint = full ? body : TripStreamWriter.encode(trip, fields: nil)
      sinceCheckpoint = 0
    }
    pendingFields = 0
    pendingFull = false
    send(record(.update(full: full, final: final), body: body, checkpoint: checkpoint))
  }

  private func record(_ kind: RelayRecord.Kind, body: [UInt8], checkpoint: [UInt8]?) -> RelayRecord {
    sequence += 1
    return RelayRecord(
      name: name, kind: kind, body: body, delivery: lease.delivery, sequence: sequence, expectedPosition: expected,
      checkpoint: checkpoint)
  }

  private func send(_ record: RelayRecord) {
    inFlight = record
    let scheduler = scheduler
    following.sink.publish(record) { [self] outcome in
      scheduler.execute { self.published(outcome) }
    }
  }

  private func published(_ outcome: SinkOutcome) {
    guard !stopped, let record = inFlight else { return }
    switch outcome {
    case .stored(let position, let duplicate):
      inFlight = nil
      failures = 0
      expected = position
      following.published(duplicate: duplicate)
      if case .refusal = record.kind {
        stop(.rejected, release: .term)
      } else if record.isFinal {
        stop(.final, release: .ack)
      } else {
        publishIfIdle()
      }
    case .superseded(let delivery):
      following.logger.debug(
        "another relay follows the trip under a later delivery; stopping",
        metadata: ["trip": "\(name)", "delivery": "\(lease.delivery)", "theirs": "\(delivery)"])
      stop(.takenOver, release: .abandon)
    case .rebase(let position):
      inFlight = nil
      expected = position
      pendingFull = true
      if case .refusal(let code, let message) = record.kind { pendingRefusal = (code, message) }
      publishIfIdle()
    case .failed(let reason):
      failures += 1
      following.publishFailed(reason)
      let delay = following.publishBackoff.delay(retry: failures, using: &generator)
      retryTimer = scheduler.scheduleTimer(after: delay) { [weak self] in
        guard let self, !self.stopped else { return }
        self.retryTimer = nil
        self.send(record)
      }
    }
  }

  // MARK: - Upstream errors

  private func failed(_ error: GRPCError) {
    following.upstreamError(error, trip: name)
    switch error.code {
    case .notFound, .invalidArgument:
      refuse(error.code, error.message)
    case .permissionDenied, .unauthenticated:
      let now = scheduler.monotonicNanoseconds
      guard let since = permissionErrorSince else {
        permissionErrorSince = now
        return
      }
      guard now &- since >= configuration.permissionGrace.nonNegativeNanoseconds else { return }
      if lease.delivery >= UInt64(max(1, configuration.maxPermissionReleases)) {
        refuse(.permissionDenied, "upstream refused the relay's credentials for the trip: \(error.message)")
      } else {
        stop(.released, release: .nak(delay: configuration.permissionGrace * 2))
      }
    default:
      break
    }
  }

  /// Publishes the refusal (after the record in flight, if any), then terminates the request.
  private func refuse(_ code: GRPCStatusCode, _ message: String) {
    guard pendingRefusal == nil else { return }
    pendingRefusal = (code, message)
    pendingFields = 0
    pendingFull = false
    publishIfIdle()
  }

  // MARK: - Stopping

  /// Stops following: no more records; the lease ends as `release` says.
  func stop(_ reason: RelayEvent.StopReason, release: LeaseRelease) {
    guard !stopped else { return }
    stopped = true
    if let retryTimer { scheduler.cancelTimer(retryTimer) }
    retryTimer = nil
    model.removeObserver(self)
    following.stopped(self, reason: reason, release: release)
  }
}
