// Sources/TripRelay/RelayMetrics.swift - what a relay counts, through swift-metrics
//
// Names (prefix `journeysharing_relay_`):
// - `trips_held` (gauge): trips this relay follows now.
// - `follow_requests_total{outcome}`: requests taken, acked, nakd, termed, lost (lease), handed_over.
// - `takeovers_total`: follows of a request another relay held before.
// - `heartbeat_failures_total`: lease rounds that did not count, the relay's heartbeat not stored by a quorum.
// - `publishes_total{result}`: updates stored, duplicate, conflict (another relay published), retried, failed.
// - `publish_latency_seconds` (timer): from handing an update to JetStream to its ack.
// - `state_publishes_total`: whole states written to `TRIPSTATE`.
// - `upstream_errors_total{code}`: errors following trips upstream, by gRPC code.
// - `watchers` (gauge), `watch_refusals_total{code}`: downstream watchers, and watches refused (auth, limits).
// - `deliveries_total`: messages sent to watchers.
// - `history_reads_total{kind}`: state reads, tail reads, resume reads; `history_messages_read_total`: the
//   messages those reads brought.
// - `downstream_lag_seconds` (timer): from a message's storage in `TRIPS` to its hand-off to the watchers.
// - `trips_messages_skipped_total{reason}`: messages of `TRIPS` the downstream could not use.
// Each is created once; none is touched per update beyond a counter increment and a timer record.

internal import CoreMetrics
internal import GRPCProtocol
internal import Primitives

/// A relay's metrics (see the file comment).
final class RelayMetrics: Sendable {
  let tripsHeld: Gauge
  let taken: Counter
  let acked: Counter
  let nakd: Counter
  let termed: Counter
  let lost: Counter
  let handedOver: Counter
  let takeovers: Counter
  let heartbeatFailures: Counter
  let stored: Counter
  let duplicates: Counter
  let conflicts: Counter
  let retried: Counter
  let failedPublishes: Counter
  let publishLatency: Timer
  let statePublishes: Counter
  let watchers: Gauge
  let deliveries: Counter
  let stateReads: Counter
  let tailReads: Counter
  let resumeReads: Counter
  let historyMessages: Counter
  let downstreamLag: Timer
  private let factory: any MetricsFactory
  private let prefix = "journeysharing_relay_"
  /// Counters made on first use, by label and code (few: gRPC codes and skip reasons).
  private let dynamic = Locked<[String: Counter]>([:])

  init(factory: any MetricsFactory) {
    self.factory = factory
    func counter(_ name: String, _ dimensions: [(String, String)] = []) -> Counter {
      Counter(label: "journeysharing_relay_" + name, dimensions: dimensions, factory: factory)
    }
    tripsHeld = Gauge(label: prefix + "trips_held", factory: factory)
    taken = counter("follow_requests_total", [("outcome", "taken")])
    acked = counter("follow_requests_total", [("outcome", "acked")])
    nakd = counter("follow_requests_total", [("outcome", "nakd")])
    termed = counter("follow_requests_total", [("outcome", "termed")])
    lost = counter("follow_requests_total", [("outcome", "lost")])
    handedOver = counter("follow_requests_total", [("outcome", "handed_over")])
    takeovers = counter("takeovers_total")
    heartbeatFailures = counter("heartbeat_failures_total")
    stored = counter("publishes_total", [("result", "stored")])
    duplicates = counter("publishes_total", [("result", "duplicate")])
    conflicts = counter("publishes_total", [("result", "conflict")])
    retried = counter("publishes_total", [("result", "retried")])
    failedPublishes = counter("publishes_total", [("result", "failed")])
    publishLatency = Timer(label: prefix + "publish_latency_seconds", preferredDisplayUnit: .seconds, factory: factory)
    statePublishes = counter("state_publishes_total")
    watchers = Gauge(label: prefix + "watchers", factory: factory)
    deliveries = counter("deliveries_total")
    stateReads = counter("history_reads_total", [("kind", "state")])
    tailReads = counter("history_reads_total", [("kind", "tail")])
    resumeReads = counter("history_reads_total", [("kind", "resume")])
    historyMessages = counter("history_messages_read_total")
    downstreamLag = Timer(label: prefix + "downstream_lag_seconds", preferredDisplayUnit: .seconds, factory: factory)
  }

  /// One more upstream error of `code`.
  func upstreamError(_ code: GRPCStatusCode) { dynamicCounter("upstream_errors_total", "code", code.name).increment() }

  /// One more watch refused with `code`.
  func watchRefused(_ code: GRPCStatusCode) { dynamicCounter("watch_refusals_total", "code", code.name).increment() }

  /// One more message of `TRIPS` skipped, for `reason` (a short fixed word).
  func skipped(_ reason: String) { dynamicCounter("trips_messages_skipped_total", "reason", reason).increment() }

  private func dynamicCounter(_ name: String, _ dimension: String, _ value: String) -> Counter {
    let key = "\(name)|\(value)"
    return dynamic.withLock { counters in
      if let counter = counters[key] { return counter }
      let counter = Counter(label: prefix + name, dimensions: [(dimension, value)], factory: factory)
      counters[key] = counter
      return counter
    }
  }
}
