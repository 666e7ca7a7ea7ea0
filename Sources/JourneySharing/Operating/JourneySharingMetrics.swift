// Sources/JourneySharing/Operating/JourneySharingMetrics.swift - what JourneySharing records through swift-metrics
//
// Every metric is made once from one MetricsFactory (the global MetricsSystem's unless the configuration
// names another). What happens per update is not recorded per update: the event loop counts updates
// received into a per-scheduler tally flushed once per event (a socket read with any number of messages),
// the delivery threads count deliveries into an atomic tally flushed by the sampler. Connection figures
// come from the transport's statistics, sampled every `metricsInterval` (and when `flushMetrics()` is
// called); gauges of followed trips and subscribers from counts kept as they change. Labels are
// low-cardinality: `method` is one of the two GetTrip methods, `code` one of the 17 status names; never a
// trip name.

import CoreMetrics
import GRPCProtocol
import Primitives
import Synchronization

/// JourneySharing's metrics (names in the README's "Operating it" section).
final class JourneySharingMetrics: Sendable {
  /// The `method` label values.
  enum Method: String, Sendable, CaseIterable {
    /// The streaming GetTrip (`journeysharing.v1.TripStreamService/GetTrip`).
    case stream = "journeysharing.v1.TripStreamService/GetTrip"
    /// Fleet Engine's unary GetTrip (`maps.fleetengine.v1.TripService/GetTrip`).
    case unary = "maps.fleetengine.v1.TripService/GetTrip"
  }

  private let factory: any MetricsFactory
  private let prefix: String
  /// Whether anything is recorded (false with the no-op factory: the hot paths skip their work).
  let enabled: Bool

  private let updatesReceived: [Method: Counter]
  private let updatesDelivered: Counter
  private let callsStarted: [Method: Counter]
  private let callsEnded: Locked<[CallKey: Counter]>
  private let connectionAttempts: Counter
  private let connectionFailures: Counter
  private let goAwaysReceived: Counter
  private let pollsWaited: Counter
  private let openConnections: Gauge
  private let openStreams: Gauge
  private let followedTrips: Gauge
  private let subscriberGauge: Gauge
  let deliveryLatency: Timer
  let pollRoundTrip: Timer
  let timeToFirstUpdate: Timer

  /// Deliveries made since the last flush (delivery threads add, the sampler takes).
  private let deliveredTally = Atomic<Int>(0)
  /// Trips followed now, and subscribers registered now. Counted and recorded under a lock: trips start and
  /// stop on several event loops at once, and a count recorded out of order would leave the gauge wrong.
  private let following = Locked(0)
  private let subscribers = Locked(0)
  /// The transport's and the budget's figures at the last sample, for the counters' increments.
  private let lastSample = Locked<Sample>(Sample())

  private struct Sample {
    var connectAttempts = 0
    var connectFailures = 0
    var goAways = 0
    var waitedPolls = 0
  }

  private struct CallKey: Hashable {
    var method: Method
    var code: GRPCStatusCode
  }

  /// The metrics, made from `factory`, each label prefixed with `prefix` (`journeysharing_` by default).
  init(factory: any MetricsFactory, prefix: String) {
    self.factory = factory
    self.prefix = prefix
    enabled = !(factory is NOOPMetricsHandler)
    var received: [Method: Counter] = [:]
    var started: [Method: Counter] = [:]
    for method in Method.allCases {
      received[method] = Counter(
        label: prefix + "updates_received_total", dimensions: [("method", method.rawValue)], factory: factory)
      started[method] = Counter(
        label: prefix + "calls_started_total", dimensions: [("method", method.rawValue)], factory: factory)
    }
    updatesReceived = received
    callsStarted = started
    callsEnded = Locked([:])
    updatesDelivered = Counter(label: prefix + "updates_delivered_total", factory: factory)
    connectionAttempts = Counter(label: prefix + "connection_attempts_total", factory: factory)
    connectionFailures = Counter(label: prefix + "connection_failures_total", factory: factory)
    goAwaysReceived = Counter(label: prefix + "goaways_received_total", factory: factory)
    pollsWaited = Counter(label: prefix + "polls_waited_for_budget_total", factory: factory)
    openConnections = Gauge(label: prefix + "connections_open", factory: factory)
    openStreams = Gauge(label: prefix + "streams_open", factory: factory)
    followedTrips = Gauge(label: prefix + "trips_followed", factory: factory)
    subscriberGauge = Gauge(label: prefix + "subscribers", factory: factory)
    deliveryLatency = Timer(
      label: prefix + "delivery_latency_seconds", preferredDisplayUnit: .seconds, factory: factory)
    pollRoundTrip = Timer(label: prefix + "poll_round_trip_seconds", preferredDisplayUnit: .seconds, factory: factory)
    timeToFirstUpdate = Timer(
      label: prefix + "time_to_first_update_seconds", preferredDisplayUnit: .seconds, factory: factory)
    for gauge in [openConnections, openStreams, followedTrips, subscriberGauge] { gauge.record(0) }
  }

  // MARK: - Recorded where it happens (not per update)

  /// `count` updates of `method` received on one scheduler event (see ``UpdateTally``).
  func received(_ count: Int, method: Method) {
    updatesReceived[method]?.increment(by: Int64(count))
  }

  /// A delivery job handed `count` events to its subscriber (delivery threads; flushed by ``sample``).
  func delivered(_ count: Int) {
    // Relaxed: a tally; the flush reads whatever has been added.
    deliveredTally.add(count, ordering: .relaxed)
  }

  /// A delivery's latency, from the server's send time: a clock ahead of ours (or a send time from nowhere,
  /// it comes from the network) counts as 0, one more than a day behind as a day.
  func recordDeliveryLatency(seconds: Double) {
    let clamped = seconds.isFinite ? min(max(seconds, 0), 86_400) : 0
    deliveryLatency.recordNanoseconds(Int64(clamped * 1e9))
  }

  func callStarted(_ method: Method) {
    callsStarted[method]?.increment()
  }

  func callEnded(_ method: Method, code: GRPCStatusCode) {
    let key = CallKey(method: method, code: code)
    let counter = callsEnded.withLock { counters in
      if let counter = counters[key] { return counter }
      let counter = Counter(
        label: prefix + "calls_ended_total", dimensions: [("method", method.rawValue), ("code", code.name)],
        factory: factory)
      counters[key] = counter
      return counter
    }
    counter.increment()
  }

  /// A trip started (+1) or stopped (-1) following.
  func followingChanged(by delta: Int) {
    following.withLock { count in
      count += delta
      followedTrips.record(count)
    }
  }

  /// A subscriber or update sequence registered (+1) or left (-1).
  func subscribersChanged(by delta: Int) {
    subscribers.withLock { count in
      count += delta
      subscriberGauge.record(count)
    }
  }

  // MARK: - Sampled

  /// Records the transport's connection figures and the request budget's waits since the last sample,
  /// and the deliveries tallied since then.
  func sample(transport stats: GRPCTransportStatistics, budget: RequestBudgetStatistics) {
    let delivered = deliveredTally.exchange(0, ordering: .relaxed)
    if delivered > 0 { updatesDelivered.increment(by: Int64(delivered)) }
    openConnections.record(stats.openConnections)
    openStreams.record(stats.activeCalls)
    let (attempts, failures, goAways, waited) = lastSample.withLock { last in
      defer {
        last.connectAttempts = max(last.connectAttempts, stats.connectAttempts)
        last.connectFailures = max(last.connectFailures, stats.connectFailures)
        last.goAways = max(last.goAways, stats.goAwaysReceived)
        last.waitedPolls = max(last.waitedPolls, budget.waitedRequests)
      }
      return (
        stats.connectAttempts - last.connectAttempts, stats.connectFailures - last.connectFailures,
        stats.goAwaysReceived - last.goAways, budget.waitedRequests - last.waitedPolls
      )
    }
    if attempts > 0 { connectionAttempts.increment(by: Int64(attempts)) }
    if failures > 0 { connectionFailures.increment(by: Int64(failures)) }
    if goAways > 0 { goAwaysReceived.increment(by: Int64(goAways)) }
    if waited > 0 { pollsWaited.increment(by: Int64(waited)) }
  }
}

/// Updates received on one scheduler, counted per event: the first update of an event schedules one flush
/// for after the event (``GRPCScheduler/executeSoon(_:)``), so a socket read with many messages costs one
/// counter increment. `@unchecked Sendable`: the tallies are touched only on `scheduler`.
final class UpdateTally: @unchecked Sendable {
  private let scheduler: any GRPCScheduler
  private let metrics: JourneySharingMetrics
  private var streamed = 0
  private var polled = 0
  private var scheduled = false

  init(scheduler: any GRPCScheduler, metrics: JourneySharingMetrics) {
    self.scheduler = scheduler
    self.metrics = metrics
  }

  /// On the scheduler: one update of `method` received.
  func count(_ method: JourneySharingMetrics.Method) {
    guard metrics.enabled else { return }
    switch method {
    case .stream: streamed += 1
    case .unary: polled += 1
    }
    guard !scheduled else { return }
    scheduled = true
    scheduler.executeSoon { [self] in flush() }
  }

  /// On the scheduler: records what was tallied.
  func flush() {
    scheduled = false
    if streamed > 0 { metrics.received(streamed, method: .stream) }
    if polled > 0 { metrics.received(polled, method: .unary) }
    streamed = 0
    polled = 0
  }
}
