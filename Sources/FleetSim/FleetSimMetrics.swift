// Sources/FleetSim/FleetSimMetrics.swift - what FleetSim records through swift-metrics
//
// Counters and gauges made once from one MetricsFactory (the global one unless FleetSim is given
// another), recorded on the server's event loop. Labels are low-cardinality: a method label is one
// of the served methods or "unknown" (never a path a client made up), a code label one of the 17
// status names, a fault label one of five kinds; never a trip name.

package import CoreMetrics
import FleetEngineMessages
import GRPCHealth
import GRPCProtocol

/// FleetSim's metrics (the table is on ``FleetSim``).
///
/// `@unchecked Sendable`: created on any thread, then used only on the server's event loop (the
/// per-method counters are made there on first use); the metric objects themselves are Sendable.
package final class FleetSimMetrics: @unchecked Sendable {
  /// The kinds of injected fault, the values of the `fault` label.
  package enum Fault: String, CaseIterable, Sendable {
    case status, reset, goaway, drop, latency
  }

  /// The `method` label values: the served methods, and `unknown` for every other path.
  static let methods = [
    FleetEngineMethods.unaryGetTrip, FleetEngineMethods.streamingGetTrip, HealthMethods.check, HealthMethods.watch,
  ].map { String($0.dropFirst()) }
  static let unknownMethod = "unknown"

  private let factory: any MetricsFactory
  let updatesSent: Counter
  let streamsOpen: Gauge
  let connectionsOpen: Gauge
  private let faults: [Fault: Counter]
  private var started: [String: Counter] = [:]
  private var ended: [CallKey: Counter] = [:]

  private struct CallKey: Hashable {
    var method: String
    var code: GRPCStatusCode
  }

  /// The metrics, made from `factory`.
  package init(factory: any MetricsFactory) {
    self.factory = factory
    updatesSent = Counter(label: "fleetsim_updates_sent_total", factory: factory)
    streamsOpen = Gauge(label: "fleetsim_streams_open", factory: factory)
    connectionsOpen = Gauge(label: "fleetsim_connections_open", factory: factory)
    var faults: [Fault: Counter] = [:]
    for fault in Fault.allCases {
      faults[fault] = Counter(
        label: "fleetsim_faults_injected_total", dimensions: [("fault", fault.rawValue)], factory: factory)
    }
    self.faults = faults
    streamsOpen.record(0)
    connectionsOpen.record(0)
  }

  /// Metrics that go nowhere (an embedded service with no factory of its own, the in-memory tests).
  package static func disabled() -> FleetSimMetrics {
    FleetSimMetrics(factory: NOOPMetricsHandler.instance)
  }

  /// The `method` label for a call to `path`.
  static func methodLabel(_ path: String) -> String {
    let method = path.dropFirst()
    return methods.first { $0 == method } ?? unknownMethod
  }

  func countFault(_ fault: Fault) {
    faults[fault]?.increment()
  }

  func callStarted(method: String) {
    if let counter = started[method] {
      counter.increment()
      return
    }
    let counter = Counter(label: "fleetsim_calls_started_total", dimensions: [("method", method)], factory: factory)
    started[method] = counter
    counter.increment()
  }

  func callEnded(method: String, code: GRPCStatusCode) {
    let key = CallKey(method: method, code: code)
    if let counter = ended[key] {
      counter.increment()
      return
    }
    let counter = Counter(
      label: "fleetsim_calls_total", dimensions: [("method", method), ("code", code.name)], factory: factory)
    ended[key] = counter
    counter.increment()
  }
}
