// Sources/FleetSim/FleetSimService.swift - the gRPC surface of the simulated Fleet Engine
//
// Serves maps.fleetengine.v1.TripService/GetTrip (unary, as Fleet Engine defines
// it, honouring the *_version fields and route_format_type) and the project's
// journeysharing.v1.TripStreamService/GetTrip (server streaming: the whole trip,
// then the changed fields). Runs on the server's event loop; no locks.

import CoreMetrics
import FleetEngineMessages
package import GRPCProtocol
import HTTP2Transport
import JSONWebToken
package import Logging
import Primitives
import ProtoWire

#if canImport(Glibc)
  import Glibc
#endif

/// The service. `@unchecked Sendable`: every method runs on the server's single
/// event loop thread (GRPCService's contract), which is the only thread touching its state.
package final class FleetSimService: GRPCService, @unchecked Sendable {
  private final class FollowedStream {
    let call: any GRPCServerCallContext
    let index: Int
    let routeFormat: PolylineFormatType
    /// What the stream sent: the trip first, then the fields that changed.
    var writer = TripStreamWriter.Stream()

    init(call: any GRPCServerCallContext, index: Int, routeFormat: PolylineFormatType) {
      self.call = call
      self.index = index
      self.routeFormat = routeFormat
    }
  }

  let configuration: FleetSimConfiguration
  /// The faults in force: the configuration's, until ``FleetSim/setFaults(_:)`` changes them. Loop only.
  package var faults: FaultInjection
  package let simulator: TripSimulator
  let logger: Logger
  let metrics: FleetSimMetrics
  private var counters = FleetSimStats()
  /// The synthetic streams, in load-generation mode.
  private let load: LoadGenerator?
  /// The counters, the load generator's updates included.
  package var stats: FleetSimStats {
    var stats = counters
    stats.updatesSent += load?.sent ?? 0
    return stats
  }
  private var streams: [ObjectIdentifier: FollowedStream] = [:]
  /// Load generation's streams, until they end.
  private var loadStreams: [ObjectIdentifier: any GRPCServerCallContext] = [:]
  /// Load mode: the simulated trips the streams' first messages are made from (``loadFirstTrip``).
  private var loadTemplates: [Int: Trip] = [:]
  private var tickerRunning = false
  private var random: SplitMix64

  /// A service for `configuration`, logging to `logger`, recording to `metrics` (nowhere by default).
  package init(configuration: FleetSimConfiguration, logger: Logger, metrics: FleetSimMetrics = .disabled()) {
    self.configuration = configuration
    self.simulator = TripSimulator(
      configuration: configuration.simulation, planCacheCapacity: configuration.planCacheCapacity)
    self.logger = logger
    self.metrics = metrics
    self.faults = configuration.faults
    self.random = SplitMix64(seed: configuration.faults.seed)
    self.load = configuration.load.map { LoadGenerator(profile: $0, updatesSent: metrics.updatesSent) }
  }

  func countGoAway() {
    counters.injectedGoAways += 1
    metrics.countFault(.goaway)
  }

  func countDrop() {
    counters.injectedDrops += 1
    metrics.countFault(.drop)
  }

  /// One more (or, negative, fewer) stream open.
  private func streamsOpenChanged(by delta: Int) {
    counters.streamsOpen += delta
    metrics.streamsOpen.record(counters.streamsOpen)
  }

  /// Ends every open stream (the simulated trips' and load generation's) with `status`: the end of a
  /// graceful shutdown whose streams did not finish in time.
  package func endStreams(_ status: GRPCStatus) {
    let open = streams.values.map(\.call) + Array(loadStreams.values)
    streams.removeAll()
    loadStreams.removeAll()
    for call in open {
      streamsOpenChanged(by: -1)
      call.finish(status)
    }
  }

  // MARK: - Dispatch

  package func handle(_ call: any GRPCServerCallContext) {
    let latency = faults.addedLatency
    if latency > .zero {
      counters.delayedCalls += 1
      metrics.countFault(.latency)
      call.schedule(after: latency) { [self] in
        if !call.isClosed { dispatch(call) }
      }
    } else {
      dispatch(call)
    }
  }

  private func dispatch(_ call: any GRPCServerCallContext) {
    switch call.path {
    case FleetEngineMethods.unaryGetTrip:
      counters.unaryCalls += 1
      unaryGetTrip(call)
    case FleetEngineMethods.streamingGetTrip:
      counters.streamsStarted += 1
      streamingGetTrip(call)
    default:
      call.finish(GRPCStatus(code: .unimplemented, message: "method \(call.path) is not implemented"))
    }
  }

  /// The checks every call goes through, in the order Fleet Engine applies them:
  /// injected faults, the token, the name's form, the token's trip, the trip's existence.
  private func admit(_ call: any GRPCServerCallContext, name: String) -> Int? {
    if faults.failureRate > 0, Double.random(in: 0..<1, using: &random) < faults.failureRate {
      counters.injectedFailures += 1
      metrics.countFault(.status)
      call.finish(GRPCStatus(code: faults.failureCode, message: "injected failure"))
      return nil
    }
    var tokenTripID: String?
    if let auth = configuration.auth {
      switch authenticate(call, auth) {
      case .granted(let tripID): tokenTripID = tripID
      case .refused(let status):
        counters.unauthenticated += 1
        call.finish(status)
        return nil
      }
    }
    guard let tripName = TripName(parsing: name) else {
      counters.invalidArgument += 1
      call.finish(
        GRPCStatus(
          code: .invalidArgument,
          message: "trip name must be in the format providers/{provider_id}/trips/{trip_id}"))
      return nil
    }
    if let tokenTripID, tokenTripID != "*", tokenTripID != tripName.tripID {
      counters.permissionDenied += 1
      call.finish(GRPCStatus(code: .permissionDenied, message: "the token does not grant access to this trip"))
      return nil
    }
    guard let index = simulator.tripIndex(forName: name) else {
      counters.notFound += 1
      call.finish(GRPCStatus(code: .notFound, message: "trip \(name) not found"))
      return nil
    }
    return index
  }

  private enum AuthOutcome {
    case granted(tripID: String)
    case refused(GRPCStatus)
  }

  /// Checks `authorization: Bearer <JWT>` as ``FleetSimConfiguration/Auth`` describes (the package's one
  /// consumer-token check, `ConsumerTokenVerifier`); returns the token's trip ID claim.
  private func authenticate(_ call: any GRPCServerCallContext, _ auth: FleetSimConfiguration.Auth) -> AuthOutcome {
    switch auth.verifier.verify(
      authorizationHeader: call.requestMetadata.first("authorization"), now: call.scheduler.unixTime)
    {
    case .success(let grant): return .granted(tripID: grant.tripID)
    case .failure(let refusal): return .refused(GRPCStatus(code: .unauthenticated, message: refusal.message))
    }
  }

  // MARK: - Unary GetTrip

  private func unaryGetTrip(_ call: any GRPCServerCallContext) {
    let request: GetTripRequest
    do {
      request = try GetTripRequest(serializedBytes: call.request)
    } catch {
      call.finish(GRPCStatus(code: .invalidArgument, message: "malformed GetTripRequest: \(error)"))
      return
    }
    guard let index = admit(call, name: request.name) else { return }
    let seconds = simulator.simulatedSeconds(atUnixTime: call.scheduler.unixTime)
    var trip = simulator.trip(index: index, atSimulatedSeconds: seconds, routeFormat: request.routeFormatType)
    // Leave out what the caller already has, as Fleet Engine does with the *_version fields.
    if Self.isCurrent(request.currentRouteSegmentVersion, trip.currentRouteSegmentVersion) {
      trip.route = []
      trip.currentRouteSegment = ""
    }
    if Self.isCurrent(request.currentRouteSegmentTrafficVersion, trip.currentRouteSegmentTrafficVersion) {
      trip.currentRouteSegmentTraffic = nil
    }
    // The waypoints' paths (and their distances and durations) are part of remaining_waypoints but have
    // their own version, which moves without remaining_waypoints_version (at an arrival, the first
    // waypoint loses its path): the list is unchanged for the caller only if its paths are too.
    let pathsCurrent = Self.isCurrent(request.remainingWaypointsRouteVersion, trip.remainingWaypointsRouteVersion)
    if Self.isCurrent(request.remainingWaypointsVersion, trip.remainingWaypointsVersion),
      pathsCurrent || Self.isCurrent(request.remainingWaypointsVersion, trip.remainingWaypointsRouteVersion)
    {
      trip.remainingWaypoints = []
    } else if pathsCurrent {
      for index in trip.remainingWaypoints.indices {
        trip.remainingWaypoints[index].pathToWaypoint = []
        trip.remainingWaypoints[index].encodedPathToWaypoint = ""
        trip.remainingWaypoints[index].trafficToWaypoint = nil
      }
    }
    call.send(trip.serializedBytes())
    call.finish(.ok)
  }

  /// Whether the caller's version is at least the trip's (so the data is unchanged for it).
  static func isCurrent(_ requested: Timestamp?, _ current: Timestamp?) -> Bool {
    guard let requested, let current else { return false }
    return (requested.seconds, requested.nanos) >= (current.seconds, current.nanos)
  }

  // MARK: - Streaming GetTrip

  private func streamingGetTrip(_ call: any GRPCServerCallContext) {
    let request: StreamTripRequest
    do {
      request = try StreamTripRequest(serializedBytes: call.request)
    } catch {
      call.finish(GRPCStatus(code: .invalidArgument, message: "malformed StreamTripRequest: \(error)"))
      return
    }
    guard let index = admit(call, name: request.name) else { return }
    let now = call.scheduler.unixTime
    let trip =
      load == nil
      ? simulator.trip(
        index: index, atSimulatedSeconds: simulator.simulatedSeconds(atUnixTime: now),
        routeFormat: request.routeFormatType)
      : loadFirstTrip(index: index, name: request.name, routeFormat: request.routeFormatType, now: now)
    // A simulator keeps no history: a request to resume (`after_sequence`) gets the whole trip too.
    let stream = FollowedStream(call: call, index: index, routeFormat: request.routeFormatType)
    send(trip, on: stream, now: now)
    if let load {
      // Load generation: small updates until the client cancels.
      let key = ObjectIdentifier(call as AnyObject)
      loadStreams[key] = call
      streamsOpenChanged(by: 1)
      call.onCancel { [weak self] in
        guard let self, self.loadStreams.removeValue(forKey: key) != nil else { return }
        self.streamsOpenChanged(by: -1)
      }
      load.add(call, trip: trip, sequence: stream.writer.sequence)
      return
    }
    if trip.isFinal {
      counters.streamsCompleted += 1
      call.finish(.ok)
      return
    }
    let key = ObjectIdentifier(call as AnyObject)
    streams[key] = stream
    streamsOpenChanged(by: 1)
    call.onCancel { [weak self] in
      guard let self, self.streams.removeValue(forKey: key) != nil else { return }
      self.streamsOpenChanged(by: -1)
    }
    startTicker(using: call)
  }

  /// Load mode: how many distinct simulated trips the streams' first messages are made from.
  static let loadTemplateCount = 1_024

  /// Load mode: the first message of trip `index`'s stream, the simulated trip of `index % loadTemplateCount`
  /// (made once, when first asked for) renamed `name`, its waypoints given this trip's ID. Routing a plan
  /// for each of a million trips kept the server busy for minutes before any load started; the small
  /// updates that follow are synthetic anyway.
  private func loadFirstTrip(index: Int, name: String, routeFormat: PolylineFormatType, now: Double) -> Trip {
    let slot = index % Self.loadTemplateCount
    let key = slot * 8 + Int(routeFormat.rawValue & 7)
    let template: Trip
    if let cached = loadTemplates[key] {
      template = cached
    } else {
      template = simulator.trip(
        index: slot, atSimulatedSeconds: simulator.simulatedSeconds(atUnixTime: now), routeFormat: routeFormat)
      loadTemplates[key] = template
    }
    guard slot != index else { return template }
    var trip = template
    let tripID = String(name.split(separator: "/").last ?? "")
    trip.name = name
    for waypoint in trip.remainingWaypoints.indices {
      if !trip.remainingWaypoints[waypoint].tripId.isEmpty { trip.remainingWaypoints[waypoint].tripId = tripID }
      if trip.remainingWaypoints[waypoint].location?.tripId.isEmpty == false {
        trip.remainingWaypoints[waypoint].location?.tripId = tripID
      }
    }
    if trip.currentRouteSegmentEndPoint?.tripId.isEmpty == false { trip.currentRouteSegmentEndPoint?.tripId = tripID }
    return trip
  }

  /// Sends what changed in `trip` since the stream's last message (the whole trip first); nothing when
  /// nothing did.
  private func send(_ trip: Trip, on stream: FollowedStream, now: Double) {
    guard let message = stream.writer.next(trip, sendTime: Timestamp(unixTime: now)) else { return }
    sent(message, on: stream)
  }

  private func sent(_ message: [UInt8], on stream: FollowedStream) {
    stream.call.send(message)
    counters.updatesSent += 1
    metrics.updatesSent.increment()
  }

  /// Unsent bytes of a stream past which its updates are merged into the next one it can take.
  static let maxStreamBacklog = 64 << 10

  private func startTicker(using call: any GRPCServerCallContext) {
    guard !tickerRunning else { return }
    tickerRunning = true
    scheduleTick(using: call)
  }

  private func scheduleTick(using call: any GRPCServerCallContext) {
    call.schedule(after: configuration.updateInterval) { [weak self] in
      self?.tick()
    }
  }

  /// Streams advanced per loop turn: a tick over thousands of streams goes in parts, and the loop serves
  /// other connections (a new client's call) between them.
  static let streamsPerTurn = 256

  /// Advances every open stream: computes the trip now, sends what changed, ends finished trips; in parts of
  /// ``streamsPerTurn`` streams.
  private func tick() {
    guard !streams.isEmpty else {
      tickerRunning = false
      return
    }
    // The streams' scheduler's clock: the wall clock, or a test's virtual one.
    let now = streams.values.first?.call.scheduler.unixTime ?? unixTime()
    advance(Array(streams.keys), from: 0, now: now, seconds: simulator.simulatedSeconds(atUnixTime: now))
  }

  /// Advances the streams of `keys` from `start`, up to ``streamsPerTurn`` of them; the rest on the next turn,
  /// and after the last, the next tick.
  private func advance(_ keys: [ObjectIdentifier], from start: Int, now: Double, seconds: Double) {
    let end = min(keys.count, start + Self.streamsPerTurn)
    for key in keys[start..<end] {
      guard let stream = streams[key] else { continue }
      if stream.call.isClosed {
        streams[key] = nil
        streamsOpenChanged(by: -1)
        continue
      }
      if stream.call.outboundBufferedBytes > Self.maxStreamBacklog {
        // The client is not reading: skip this tick, before computing anything. The writer sends what
        // changed since its last message, so the next one the client gets carries everything it missed
        // (the final state included); a client that never reads costs at most this backlog.
        continue
      }
      let trip = simulator.trip(index: stream.index, atSimulatedSeconds: seconds, routeFormat: stream.routeFormat)
      if let message = stream.writer.next(trip, sendTime: Timestamp(unixTime: now)) {
        if faults.streamResetRate > 0, Double.random(in: 0..<1, using: &random) < faults.streamResetRate {
          counters.injectedResets += 1
          metrics.countFault(.reset)
          streams[key] = nil
          streamsOpenChanged(by: -1)
          stream.call.reset(errorCode: .cancel)  // CANCEL: the client sees CANCELLED and follows again.
          continue
        }
        sent(message, on: stream)
      }
      if trip.isFinal {
        streams[key] = nil
        streamsOpenChanged(by: -1)
        counters.streamsCompleted += 1
        stream.call.finish(.ok)
      }
    }
    // Timers go through an open stream's call (the service has no scheduler of its own).
    guard let anchor = streams.values.first(where: { !$0.call.isClosed })?.call else {
      // Every stream left has ended: none to advance, none to count open.
      for (key, _) in streams {
        streams[key] = nil
        streamsOpenChanged(by: -1)
      }
      tickerRunning = false
      return
    }
    if end < keys.count {
      anchor.schedule(after: .zero) { [weak self] in self?.advance(keys, from: end, now: now, seconds: seconds) }
    } else {
      scheduleTick(using: anchor)
    }
  }
}
