// Sources/FleetSim/FleetSimRouter.swift - every call FleetSim serves, counted and held for draining
//
// The one GRPCService the server hosts: it sends health calls to HealthService and the rest to
// FleetSimService, counts each call (started by method, ended by method and status), and keeps the
// calls still open so that a graceful shutdown can wait for them and end those left at its deadline.
// Runs on the server's event loop; no locks.

import FleetEngineMessages
import GRPCHealth
import GRPCProtocol

/// A call as the services see it: the server's call, with its end recorded.
///
/// `@unchecked Sendable`: like the call it wraps, it is used only on the call's scheduler.
final class MeteredCall: GRPCServerCallContext, @unchecked Sendable {
  let base: any GRPCServerCallContext
  let method: String
  let isHealth: Bool
  private weak var router: FleetSimRouter?
  private var ended = false

  init(base: any GRPCServerCallContext, method: String, isHealth: Bool, router: FleetSimRouter) {
    self.base = base
    self.method = method
    self.isHealth = isHealth
    self.router = router
  }

  var path: String { base.path }
  var requestMetadata: GRPCMetadata { base.requestMetadata }
  var authority: String { base.authority }
  var request: [UInt8] { base.request }
  var timeout: Duration? { base.timeout }
  var peerAddress: String { base.peerAddress }
  var isClosed: Bool { base.isClosed }
  var scheduler: any GRPCScheduler { base.scheduler }
  var outboundBufferedBytes: Int { base.outboundBufferedBytes }

  func sendHeaders(_ metadata: GRPCMetadata) { base.sendHeaders(metadata) }
  func send(_ message: [UInt8]) { base.send(message) }
  func send(bytes message: UnsafeRawBufferPointer) { base.send(bytes: message) }

  func finish(_ status: GRPCStatus, trailers: GRPCMetadata) {
    guard !base.isClosed else { return }
    base.finish(status, trailers: trailers)
    end(status.code)
  }

  /// A reset stream is CANCELLED for the client.
  func reset(errorCode: HTTP2ErrorCode) {
    guard !base.isClosed else { return }
    base.reset(errorCode: errorCode)
    end(.cancelled)
  }

  func onCancel(_ handler: @escaping () -> Void) { base.onCancel(handler) }
  func schedule(after delay: Duration, _ body: @escaping () -> Void) { base.schedule(after: delay, body) }

  /// Watches the base call for the client's cancel (registered before any of the services' handlers).
  func watchForCancel() {
    base.onCancel { [weak self] in self?.end(.cancelled) }
  }

  private func end(_ code: GRPCStatusCode) {
    guard !ended else { return }
    ended = true
    router?.callEnded(self, code: code)
  }
}

/// Routes, counts and holds FleetSim's calls. `@unchecked Sendable`: every method runs on the
/// server's event loop (GRPCService's contract).
final class FleetSimRouter: GRPCService, @unchecked Sendable {
  /// The services whose health is reported besides the server's own (""): the two trip services.
  static let healthServices = ["", "maps.fleetengine.v1.TripService", "journeysharing.v1.TripStreamService"]

  let trips: FleetSimService
  let health: HealthService
  let metrics: FleetSimMetrics
  private var open: [ObjectIdentifier: MeteredCall] = [:]
  /// Open calls that are not health watches: what a graceful shutdown waits for.
  private(set) var openWorkCalls = 0

  init(trips: FleetSimService, metrics: FleetSimMetrics) {
    self.trips = trips
    self.health = HealthService(services: Self.healthServices)
    self.metrics = metrics
  }

  func handle(_ call: any GRPCServerCallContext) {
    let isHealth = call.path.hasPrefix("/\(HealthMethods.serviceName)/")
    let method = FleetSimMetrics.methodLabel(call.path)
    let metered = MeteredCall(base: call, method: method, isHealth: isHealth, router: self)
    metrics.callStarted(method: method)
    open[ObjectIdentifier(metered)] = metered
    if !(isHealth && call.path == HealthMethods.watch) { openWorkCalls += 1 }
    metered.watchForCancel()
    if isHealth {
      health.handle(metered)
    } else {
      trips.handle(metered)
    }
  }

  /// The largest GetTrip request taken (either service's): a real one is under 200 bytes (a name and a
  /// few enums); 4 KiB leaves room for a request header's strings. Health requests name a service.
  static let maxGetTripRequestSize = 4 << 10

  /// GetTrip's and health's small requests; nil (the server's limit) for paths FleetSim does not serve,
  /// which are answered UNIMPLEMENTED anyway.
  func maxRequestMessageSize(forMethod path: String) -> Int? {
    switch path {
    case FleetEngineMethods.unaryGetTrip, FleetEngineMethods.streamingGetTrip: Self.maxGetTripRequestSize
    case HealthMethods.check, HealthMethods.watch: 1 << 10
    default: nil
    }
  }

  fileprivate func callEnded(_ call: MeteredCall, code: GRPCStatusCode) {
    metrics.callEnded(method: call.method, code: code)
    guard open.removeValue(forKey: ObjectIdentifier(call)) != nil else { return }
    if !(call.isHealth && call.path == HealthMethods.watch) { openWorkCalls -= 1 }
  }

  // MARK: - Draining

  /// The start of a graceful shutdown: every health status becomes NOT_SERVING, and watchers are told.
  func beginDraining() {
    health.shutDown()
  }

  /// The end of a graceful shutdown: the trip streams, then every other call still open (calls
  /// delayed by injected latency, health watches), end with `status`.
  func endOpenCalls(_ status: GRPCStatus) {
    trips.endStreams(status)
    health.endWatches(status)
    for call in Array(open.values) { call.finish(status) }
  }
}
