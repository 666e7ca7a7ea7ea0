// Sources/TripRelay/TripFollowing.swift - the trips a relay follows: a lease becomes a follow, a follow ends a lease
//
// The work queue hands over each new lease; a followed trip is made for it, observing the trip's model of the
// relay's own `JourneySharingServices` (upstream). When the follow ends, its lease ends as the follow says:
// acked (final state stored), terminated (refused), handed back (shutdown, the relay's credentials refused) or
// let go (taken over, lease lost). The counters, the events and the rate-limited logging of upstream errors
// live here too.

internal import CoreMetrics
internal import FleetEngineMessages
internal import GRPCProtocol
internal import JourneySharing
internal import Logging
internal import Primitives
internal import Synchronization
internal import Tracing

/// The trips a relay follows (see the file comment). Thread-safe.
final class TripFollowing: Sendable {
  let configuration: RelayConfiguration
  let sink: any UpdateSink
  let services: JourneySharingServices
  let metrics: RelayMetrics
  let logger: Logger
  /// The backoff of a record's publish retries.
  let publishBackoff = RetryBackoff(initial: .milliseconds(100), maximum: .seconds(2))
  private let queue: any LeaseKeeper
  private let onEvent: (@Sendable (RelayEvent) -> Void)?
  private let state = Locked(State())
  private let errorLog: RateLimitedLog
  /// Updates merged upstream, over every followed trip (counted on the trips' loops).
  let upstreamUpdates = Atomic<Int>(0)

  private struct State {
    var trips: [String: FollowedTrip] = [:]
    var statistics = RelayStatistics()
    var stopping = false
  }

  init(
    configuration: RelayConfiguration, sink: any UpdateSink, services: JourneySharingServices, queue: any LeaseKeeper,
    metrics: RelayMetrics, onEvent: (@Sendable (RelayEvent) -> Void)?
  ) {
    self.configuration = configuration
    self.sink = sink
    self.services = services
    self.queue = queue
    self.metrics = metrics
    self.logger = configuration.logger
    self.onEvent = onEvent
    errorLog = RateLimitedLog(logger: configuration.logger, interval: .seconds(30))
  }

  /// The counters now.
  var statistics: RelayStatistics {
    state.withLock { state in
      var statistics = state.statistics
      statistics.following = state.trips.count
      statistics.upstreamUpdates = upstreamUpdates.load(ordering: .relaxed)
      return statistics
    }
  }

  // MARK: - Leases in and out

  /// The queue took `lease`: follow its trip.
  func acquired(_ lease: FollowLease) {
    let key = lease.name.description
    let model = services.tripService.tripModel(forTripName: key)
    let trip = FollowedTrip(lease: lease, model: model, following: self, span: startFollowSpan(lease))
    let start = state.withLock { state -> Bool in
      guard !state.stopping, state.trips[key] == nil else { return false }
      state.trips[key] = trip
      state.statistics.followsStarted += 1
      if lease.delivery > 1 { state.statistics.takeovers += 1 }
      return true
    }
    guard start else {
      trip.span?.end()
      Task { await queue.release(lease, .nak(delay: nil)) }
      return
    }
    logger.debug("follow start", metadata: ["trip": "\(key)", "delivery": "\(lease.delivery)"])
    onEvent?(.followStarted(trip: key, delivery: lease.delivery, at: unixTime()))
    model.addObserver(trip)
  }

  /// A `relay.follow` span for `lease`'s follow, when a tracer is bootstrapped.
  private func startFollowSpan(_ lease: FollowLease) -> (any Span)? {
    guard let tracer = configuration.activeTracer else { return nil }
    let span = tracer.startSpan("relay.follow", ofKind: .internal)
    span.attributes["trip.name"] = lease.name.description
    span.attributes["relay.delivery"] = Int(clamping: lease.delivery)
    span.attributes["relay.takeover"] = lease.delivery > 1
    return span
  }

  /// The queue could not confirm `lease` in time (already abandoned): stop following.
  func lost(_ lease: FollowLease) {
    guard let trip = state.withLock({ $0.trips[lease.name.description] }), trip.lease === lease else { return }
    trip.scheduler.execute { trip.stop(.leaseLost, release: .abandon) }
  }

  /// A malformed follow request was terminated.
  func rejectedRequest() { state.withLock { $0.statistics.rejected += 1 } }

  /// On `trip`'s scheduler: its follow ended for `reason`; its lease ends as `release` says.
  func stopped(_ trip: FollowedTrip, reason: RelayEvent.StopReason, release: LeaseRelease) {
    let key = trip.name.description
    state.withLock { state in
      if state.trips[key] === trip { state.trips[key] = nil }
      switch reason {
      case .final: state.statistics.finished += 1
      case .rejected: state.statistics.rejected += 1
      case .takenOver: state.statistics.handedOver += 1
      case .leaseLost: state.statistics.leasesLost += 1
      case .released: state.statistics.released += 1
      case .shutdown: break
      }
    }
    if reason == .takenOver { metrics.handedOver.increment() }
    let queue = queue
    let lease = trip.lease
    Task { await queue.release(lease, release) }
    if let span = trip.span {
      span.attributes["relay.stop_reason"] = reason.rawValue
      if reason == .rejected || reason == .leaseLost || reason == .released {
        span.setStatus(SpanStatus(code: .error, message: reason.rawValue))
      }
      span.end()
    }
    logger.debug("follow stop", metadata: ["trip": "\(key)", "reason": "\(reason.rawValue)"])
    onEvent?(.followStopped(trip: key, reason: reason, at: unixTime()))
  }

  // MARK: - Counting and logging

  func published(duplicate: Bool) {
    state.withLock { state in
      if duplicate { state.statistics.duplicates += 1 } else { state.statistics.published += 1 }
    }
  }

  func publishFailed(_ reason: String) {
    state.withLock { $0.statistics.publishRetries += 1 }
    errorLog.log("publishing to JetStream failed; retrying", key: "publish", metadata: ["error": "\(reason)"])
  }

  func upstreamError(_ error: GRPCError, trip: TripName) {
    metrics.upstreamError(error.code)
    errorLog.log(
      "following a trip upstream failed", key: "upstream-\(error.code.name)",
      metadata: ["code": "\(error.code.name)", "error": "\(error.message)", "trip": "\(trip)"])
  }

  // MARK: - Stopping

  /// Stops every follow, handing each request back (nak) for another relay; returns once each lease ended.
  func shutdown() async {
    let trips = state.withLock { state -> [FollowedTrip] in
      state.stopping = true
      return Array(state.trips.values)
    }
    for trip in trips { trip.scheduler.execute { trip.stop(.shutdown, release: .nak(delay: nil)) } }
    for _ in 0..<100 where queue.heldCount > 0 { try? await Task.sleep(for: .milliseconds(50)) }
  }
}

/// Logs a line per key at most once per interval, with the count of lines it held back since.
final class RateLimitedLog: Sendable {
  private let logger: Logger
  private let interval: UInt64
  private let state = Locked([String: (last: UInt64, suppressed: Int)]())

  init(logger: Logger, interval: Duration) {
    self.logger = logger
    self.interval = interval.nonNegativeNanoseconds
  }

  func log(_ message: Logger.Message, level: Logger.Level = .warning, key: String, metadata: Logger.Metadata = [:]) {
    let now = monotonicNanoseconds()
    let suppressed = state.withLock { state -> Int? in
      if let entry = state[key], now &- entry.last < interval {
        state[key] = (entry.last, entry.suppressed + 1)
        return nil
      }
      let suppressed = state[key]?.suppressed ?? 0
      state[key] = (now, 0)
      return suppressed
    }
    guard let suppressed else { return }
    var metadata = metadata
    if suppressed > 0 { metadata["suppressed_since_last"] = "\(suppressed)" }
    logger.log(level: level, message, metadata: metadata)
  }
}
