// Tests/JourneySharingTests/FollowTestSupport.swift - FleetSim fixtures, a recording subscriber, a unary-only fake
//
// Every following test runs its own FleetSim at a high speed-up with a short update interval, in memory on a
// virtual clock (VirtualFollowFixture) or on 127.0.0.1 (port 0, h2c) over sockets (FollowFixture), and its own
// JourneySharingServices with a small retry backoff. Tests run in parallel on few cores, so conditions are
// awaited by polling with a bound, never by asserting how long something took.

import FleetEngineMessages
import FleetSim
import Foundation
import GRPCProtocol
import HTTP2Transport
import JSONWebToken
import JourneySharing
import Logging
import Primitives
import ProtoWire
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

// MARK: - Time and waiting

/// How many wall-clock seconds after its server starts a test's trips begin: time to set up and subscribe
/// first, so the whole trip is seen from NEW (longer under ThreadSanitizer).
let followLeadTime: Double = underThreadSanitizer ? 8 : 3

/// A simulated "now" long before every trip starts: the trips stay NEW (still moving their location's
/// timestamps on every update) for hours. For tests that need a trip under way for as long as they run.
let followNeverStarts = -10_000_000.0

// MARK: - Simulations

/// The seed of the following tests' simulations.
let followSeed: UInt64 = 23
/// How many trips the following tests' simulations have (except the many-trips test).
let followTripCount = 40
/// The provider of the simulated trips.
let followProvider = "demo"
/// The HS256 secret of the auth tests (at least 32 bytes).
let followSecret = Array("journeysharing-follow-tests-hs256-secret-0123456789".utf8)

/// The plans of the test seed: they fix what every trip does, whatever the start time and speed-up.
let followPlanner = TripSimulator(
  configuration: SimulationConfiguration(provider: followProvider, tripCount: followTripCount, seed: followSeed))

/// A FleetSim configuration whose simulated clock reads `simulatedNow` seconds right now (by default, the
/// trips begin ``followLeadTime`` seconds from now).
func followSimConfiguration(
  tripCount: Int = followTripCount, speedup: Double = 300, simulatedNow: Double? = nil,
  updateInterval: Duration = .milliseconds(20), auth: FleetSimConfiguration.Auth? = nil,
  faults: FaultInjection = FaultInjection(), startTime: Double? = nil, now: Double = unixTime()
) -> FleetSimConfiguration {
  FleetSimConfiguration(
    simulation: SimulationConfiguration(
      provider: followProvider, tripCount: tripCount, seed: followSeed,
      startTime: startTime ?? (now - (simulatedNow ?? -followLeadTime * speedup) / speedup),
      speedup: speedup),
    updateInterval: updateInterval, auth: auth, faults: faults)
}

/// A logger that keeps quiet unless something is wrong.
func quietLogger(_ label: String) -> Logger {
  var logger = Logger(label: label)
  logger.logLevel = .error
  return logger
}

/// The retry backoff of the tests: 20 ms, growing to 200 ms.
let followBackoff = RetryBackoff(initial: .milliseconds(20), multiplier: 1.6, jitter: 0.2, maximum: .milliseconds(200))

/// A plaintext client configuration for `127.0.0.1:port` with the tests' small backoffs.
func followClientConfiguration(
  port: Int, mode: JourneySharingConfiguration.FetchMode = .stream, pollInterval: Duration = .milliseconds(50),
  authorization: (any AuthorizationProvider)? = nil
) -> JourneySharingConfiguration {
  var configuration = JourneySharingConfiguration(
    host: "127.0.0.1", port: port, security: .plaintext, providerID: followProvider, authorization: authorization,
    fetchMode: mode, pollInterval: pollInterval, logger: quietLogger("journeysharing.tests"))
  configuration.retryBackoff = followBackoff
  configuration.connection.reconnectBackoff = followBackoff
  configuration.connection.connectTimeout = .seconds(5)
  configuration.callTimeout = .seconds(10)
  return configuration
}

/// Trip `index`'s final snapshot as the simulator has it: the trip a follower must end with.
func finalTrip(of simulator: TripSimulator, index: Int) -> Trip {
  let plan = simulator.plan(index: index)
  let trip = simulator.trip(index: index, atSimulatedSeconds: plan.finishTime + 1_000)
  return TripSnapshot(trip: trip, tripID: plan.tripID).trip
}

func isFinal(_ status: TripStatus) -> Bool { status == .complete || status == .canceled }

/// A started FleetSim and services following trips on it.
struct FollowFixture: Sendable {
  let sim: FleetSim
  let services: JourneySharingServices
  let port: Int
  var simulator: TripSimulator { sim.simulator }

  func model(_ index: Int) -> TripModel {
    services.tripService.tripModel(forTripName: simulator.tripName(index: index))
  }

  /// Runs `body` against a fresh FleetSim and services, then shuts both down.
  ///
  /// The configuration is made just before the server starts, so a start time computed from the wall clock
  /// is not stale when the test got to run late.
  static func with<R>(
    _ configuration: @autoclosure () -> FleetSimConfiguration,
    listen: GRPCServerConfiguration = GRPCServerConfiguration(),
    client: (Int) -> JourneySharingConfiguration = { followClientConfiguration(port: $0) },
    _ body: (FollowFixture) async throws -> R
  ) async throws -> R {
    let sim = try FleetSim(configuration: configuration(), listen: listen, logger: quietLogger("fleetsim.tests"))
    let services: JourneySharingServices
    let port: Int
    do {
      port = try sim.start()
      services = try JourneySharingServices(configuration: client(port))
    } catch {
      await sim.shutdown()
      throw error
    }
    let fixture = FollowFixture(sim: sim, services: services, port: port)
    // The server goes first: it cuts whatever a failed test left open, so the services' graceful shutdown
    // (which waits for open calls) cannot hang on it. Tests check for leaked streams themselves.
    do {
      let result = try await body(fixture)
      await sim.shutdown()
      await services.shutdown()
      return result
    } catch {
      await sim.shutdown()
      await services.shutdown()
      throw error
    }
  }
}

// MARK: - Recording subscriber

/// The per-property callbacks of ``TripModelSubscriber``.
enum FieldCallback: String, Sendable, Hashable, CaseIterable {
  case tripStatus, activeRouteRemainingDistance, activeRoute, vehicleLocation, pickupLocation, dropoffLocation
  case pickupETA, dropoffETA, remainingWaypoints, intermediateDestinations, activeRouteTraffic
  case etaToNextWaypoint, remainingRouteDistance, remainingRoute, remainingRouteTraffic
}

/// An error as a subscriber saw it, through the NSError bridge.
struct RecordedError: Sendable, Hashable {
  var domain: String
  var code: Int
  var message: String
  var isGRPCError: Bool
  var description: String

  init(_ error: (any Error)?) {
    guard let error else {
      self.init(domain: "", code: -1, message: "nil error", isGRPCError: false, description: "nil")
      return
    }
    let bridged = error as NSError
    let grpc = error as? GRPCError
    self.init(
      domain: bridged.domain, code: bridged.code, message: grpc?.message ?? "", isGRPCError: grpc != nil,
      description: "\(error) | \(bridged.localizedDescription)")
  }

  init(domain: String, code: Int, message: String, isGRPCError: Bool, description: String) {
    self.domain = domain
    self.code = code
    self.message = message
    self.isGRPCError = isGRPCError
    self.description = description
  }
}

/// One callback a subscriber received.
enum Recorded: Sendable {
  case modelState(TripModelState)
  case trip(Trip?, TripPropertyFields)
  case status(TripStatus)
  case field(FieldCallback, Double?)
  case error(RecordedError)

  var isTrip: Bool {
    if case .trip = self { return true }
    return false
  }
}

/// Records every callback, in order, with the model it came from; optionally runs a hook on each.
final class RecordingSubscriber: TripModelSubscriber, @unchecked Sendable {
  // @unchecked: `hook` is set before registering and only read afterwards; the log is under a lock.
  private let log = Locked<[(trip: String, event: Recorded)]>([])
  private let inCallback = Locked<Set<String>>([])
  private let overlaps = Atomic<Int>(0)
  /// Called after each callback is recorded, on the delivery thread.
  var hook: (@Sendable (TripModel, Recorded) -> Void)?

  init(hook: (@Sendable (TripModel, Recorded) -> Void)? = nil) { self.hook = hook }

  private func record(_ model: TripModel, _ event: Recorded) {
    // Callbacks of one model to one subscriber never overlap; count it if they do.
    let name = model.tripName
    if !inCallback.withLock({ $0.insert(name).inserted }) { overlaps.add(1, ordering: .relaxed) }
    log.withLock { $0.append((name, event)) }
    hook?(model, event)
    _ = inCallback.withLock { $0.remove(name) }
  }

  /// Every callback so far of trip `name` (all trips when nil).
  func events(_ name: String? = nil) -> [Recorded] {
    log.withLock { log in log.filter { name == nil || $0.trip == name }.map(\.event) }
  }

  var count: Int { log.withLock { $0.count } }

  /// Appends `events` as if received from trip `tripName` (to check a filtered copy of a log).
  func replay(_ events: [Recorded], tripName: String) {
    log.withLock { $0.append(contentsOf: events.map { (tripName, $0) }) }
  }

  /// How often two callbacks of one model ran at once (never, if deliveries are serial).
  var overlapCount: Int { overlaps.load(ordering: .relaxed) }

  func errors(_ name: String? = nil) -> [RecordedError] {
    events(name).compactMap { if case .error(let error) = $0 { error } else { nil } }
  }

  func statuses(_ name: String? = nil) -> [TripStatus] {
    events(name).compactMap { if case .status(let status) = $0 { status } else { nil } }
  }

  func modelStates(_ name: String? = nil) -> [TripModelState] {
    events(name).compactMap { if case .modelState(let state) = $0 { state } else { nil } }
  }

  func trips(_ name: String? = nil) -> [(trip: Trip?, fields: TripPropertyFields)] {
    events(name).compactMap { if case .trip(let trip, let fields) = $0 { (trip, fields) } else { nil } }
  }

  func fieldCount(_ callback: FieldCallback, _ name: String? = nil) -> Int {
    events(name).count { if case .field(callback, _) = $0 { true } else { false } }
  }

  /// Whether the final status (COMPLETE or CANCELED) arrived for `name`.
  func finished(_ name: String? = nil) -> Bool { statuses(name).contains(where: isFinal) }

  /// Whether the model became inactive after being active.
  func stopped(_ name: String? = nil) -> Bool { modelStates(name).last == .inactive }

  func tripModel(_ tripModel: TripModel, didUpdate modelState: TripModelState) {
    record(tripModel, .modelState(modelState))
  }
  func tripModel(_ tripModel: TripModel, didUpdate trip: Trip?, updatedPropertyFields: TripPropertyFields) {
    record(tripModel, .trip(trip, updatedPropertyFields))
  }
  func tripModel(_ tripModel: TripModel, didUpdate tripStatus: TripStatus) {
    record(tripModel, .status(tripStatus))
  }
  func tripModel(_ tripModel: TripModel, didUpdateActiveRouteRemainingDistance activeRouteRemainingDistance: Int32) {
    record(tripModel, .field(.activeRouteRemainingDistance, Double(activeRouteRemainingDistance)))
  }
  func tripModel(_ tripModel: TripModel, didUpdateActiveRoute activeRoute: [LatLng]?) {
    record(tripModel, .field(.activeRoute, Double(activeRoute?.count ?? -1)))
  }
  func tripModel(_ tripModel: TripModel, didUpdate vehicleLocation: VehicleLocation?) {
    record(tripModel, .field(.vehicleLocation, nil))
  }
  func tripModel(_ tripModel: TripModel, didUpdatePickupLocation pickupLocation: TerminalLocation?) {
    record(tripModel, .field(.pickupLocation, nil))
  }
  func tripModel(_ tripModel: TripModel, didUpdateDropoffLocation dropoffLocation: TerminalLocation?) {
    record(tripModel, .field(.dropoffLocation, nil))
  }
  func tripModel(_ tripModel: TripModel, didUpdatePickupETA pickupETA: Double) {
    record(tripModel, .field(.pickupETA, pickupETA))
  }
  func tripModel(_ tripModel: TripModel, didUpdateDropoffETA dropoffETA: Double) {
    record(tripModel, .field(.dropoffETA, dropoffETA))
  }
  func tripModel(_ tripModel: TripModel, didUpdateRemaining remainingWaypoints: [TripWaypoint]?) {
    record(tripModel, .field(.remainingWaypoints, Double(remainingWaypoints?.count ?? -1)))
  }
  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {
    record(tripModel, .error(RecordedError(error)))
  }
  func tripModel(
    _ tripModel: TripModel, didUpdateIntermediateDestinations intermediateDestinations: [TerminalLocation]?
  ) {
    record(tripModel, .field(.intermediateDestinations, Double(intermediateDestinations?.count ?? -1)))
  }
  func tripModel(_ tripModel: TripModel, didUpdateActiveRouteTraffic activeRouteTraffic: ConsumableTrafficPolyline?) {
    record(tripModel, .field(.activeRouteTraffic, nil))
  }
  func tripModel(_ tripModel: TripModel, didUpdateETAToNextWaypoint nextWaypointETA: Double) {
    record(tripModel, .field(.etaToNextWaypoint, nextWaypointETA))
  }
  func tripModel(_ tripModel: TripModel, didUpdateRemainingRouteDistance remainingRouteDistance: Int32) {
    record(tripModel, .field(.remainingRouteDistance, Double(remainingRouteDistance)))
  }
  func tripModel(_ tripModel: TripModel, didUpdateRemainingRoute remainingRoute: [LatLng]?) {
    record(tripModel, .field(.remainingRoute, Double(remainingRoute?.count ?? -1)))
  }
  func tripModel(
    _ tripModel: TripModel, didUpdateRemainingRouteTraffic remainingRouteTraffic: ConsumableTrafficPolyline?
  ) {
    record(tripModel, .field(.remainingRouteTraffic, nil))
  }
}

// MARK: - Checking a recorded trip

/// The per-property callbacks that `fields` call for in `snapshot`: (always, only if the value exists).
func expectedCallbacks(for fields: TripPropertyFields, in snapshot: TripSnapshot) -> Set<FieldCallback> {
  var expected: Set<FieldCallback> = []
  if fields.contains(.tripStatus) { expected.insert(.tripStatus) }
  if fields.contains(.remainingDistanceOfActiveRouteInMeters), snapshot.activeRouteRemainingDistance != nil {
    expected.insert(.activeRouteRemainingDistance)
  }
  if fields.contains(.activeRoute) { expected.insert(.activeRoute) }
  if fields.contains(.routeLastVehicleLocation) { expected.insert(.vehicleLocation) }
  if fields.contains(.pickupLocation) { expected.insert(.pickupLocation) }
  if fields.contains(.dropoffLocation) { expected.insert(.dropoffLocation) }
  if fields.contains(.pickupETA), snapshot.pickupETA != nil { expected.insert(.pickupETA) }
  if fields.contains(.dropoffETA), snapshot.dropoffETA != nil { expected.insert(.dropoffETA) }
  if fields.contains(.remainingWaypoints) { expected.insert(.remainingWaypoints) }
  if fields.contains(.intermediateDestinations) { expected.insert(.intermediateDestinations) }
  if fields.contains(.activeRouteTraffic) { expected.insert(.activeRouteTraffic) }
  if fields.contains(.etaToNextWaypoint), snapshot.etaToNextWaypoint != nil { expected.insert(.etaToNextWaypoint) }
  if fields.contains(.distanceOfRemainingRouteInMeters), snapshot.remainingRouteDistance != nil {
    expected.insert(.remainingRouteDistance)
  }
  if fields.contains(.remainingRoute) { expected.insert(.remainingRoute) }
  if fields.contains(.remainingRouteTraffic) { expected.insert(.remainingRouteTraffic) }
  return expected
}

/// One `didUpdate trip` and the property callbacks that followed it in the same delivery.
struct RecordedDelivery {
  var trip: Trip?
  var fields: TripPropertyFields
  var callbacks: [FieldCallback]
  var status: TripStatus?
}

/// Splits a subscriber's log into deliveries (each starts with `didUpdate trip`).
func deliveries(_ events: [Recorded]) -> [RecordedDelivery] {
  var result: [RecordedDelivery] = []
  for event in events {
    switch event {
    case .trip(let trip, let fields):
      result.append(RecordedDelivery(trip: trip, fields: fields, callbacks: [], status: nil))
    case .status(let status):
      guard !result.isEmpty else { continue }
      result[result.count - 1].callbacks.append(.tripStatus)
      result[result.count - 1].status = status
    case .field(let callback, _):
      guard !result.isEmpty else { continue }
      result[result.count - 1].callbacks.append(callback)
    case .modelState, .error:
      continue
    }
  }
  return result
}

/// Whether `statuses` appear in `plan`'s phases in order (each one a later phase than the one before).
func isInPlannedOrder(_ statuses: [TripStatus], plan: TripPlan) -> Bool {
  let phases = plan.phases.map(\.status)
  var position = 0
  for status in statuses {
    guard let next = phases[position...].firstIndex(of: status) else { return false }
    position = next + 1
  }
  return true
}

// MARK: - Tokens

/// An HS256 token granting `tripID` (any trip for "*"), expiring `expiresIn` seconds after `now` (the fixture's
/// clock, Unix seconds), with the claims FleetSim checks as Fleet Engine does: its audience, `iss` = `sub` (a
/// service account), and at most an hour between `iat` and `exp`.
func followToken(
  tripID: String, expiresIn: Double = 3_600, secret: [UInt8] = followSecret, now: Double = unixTime()
) throws -> String {
  let account = "journeysharing-tests@example.iam.gserviceaccount.com"
  var claims = JWTClaims(
    issuer: account, subject: account, audience: ["https://fleetengine.googleapis.com/"],
    expiresAt: now + expiresIn, issuedAt: max(now + expiresIn - 3_600, min(now, now + expiresIn) - 60))
  claims.tripID = tripID
  return try JSONWebToken.sign(claims: claims, key: .hs256(secret: secret))
}

/// Mints a token per call from `mint` (given the call's number, from 1) and remembers every token handed out.
final class CountingTokenProvider: AuthorizationProvider {
  private let state = Locked<[String]>([])
  private let mint: @Sendable (Int, AuthorizationContext) throws -> String

  init(_ mint: @escaping @Sendable (Int, AuthorizationContext) throws -> String) { self.mint = mint }

  func fetchToken(with context: AuthorizationContext) async throws -> String {
    let number = state.withLock { $0.count + 1 }
    let token = try mint(number, context)
    state.withLock { $0.append(token) }
    return token
  }

  var calls: Int { state.withLock { $0.count } }
  var tokens: [String] { state.withLock { $0 } }
}

// MARK: - A Fleet Engine without streaming

/// A server that answers only Fleet Engine's unary GetTrip (from a ``TripSimulator``, honouring the route and
/// waypoint versions) and UNIMPLEMENTED for everything else, like the real Fleet Engine. It can fail the first
/// calls with a given code. Hosted by a real GRPCServer or by an in-memory transport.
final class UnaryOnlyFleetEngine: GRPCService, Sendable {
  struct Counters: Sendable, Hashable {
    var unaryCalls = 0
    var otherCalls = 0
    var injectedFailures = 0
    var versionedRequests = 0
    var routeOmitted = 0
    var waypointsOmitted = 0
  }

  let simulator: TripSimulator
  private let failFirst: Int
  private let failureCode: GRPCStatusCode
  private let state = Locked(Counters())

  init(simulator: TripSimulator, failFirst: Int = 0, failureCode: GRPCStatusCode = .unavailable) {
    self.simulator = simulator
    self.failFirst = failFirst
    self.failureCode = failureCode
  }

  var counters: Counters { state.withLock { $0 } }

  func handle(_ call: any GRPCServerCallContext) {
    guard call.path == "/maps.fleetengine.v1.TripService/GetTrip" else {
      state.withLock { $0.otherCalls += 1 }
      call.finish(GRPCStatus(code: .unimplemented, message: "unknown method \(call.path)"))
      return
    }
    let number = state.withLock { counters -> Int in
      counters.unaryCalls += 1
      return counters.unaryCalls
    }
    if number <= failFirst {
      state.withLock { $0.injectedFailures += 1 }
      call.finish(GRPCStatus(code: failureCode, message: "scripted failure \(number)"))
      return
    }
    guard let request = try? GetTripRequest(serializedBytes: call.request) else {
      call.finish(GRPCStatus(code: .invalidArgument, message: "malformed GetTripRequest"))
      return
    }
    guard let index = simulator.tripIndex(forName: request.name) else {
      call.finish(GRPCStatus(code: .notFound, message: "no such trip"))
      return
    }
    // The call's clock: the wall clock over sockets, a test's virtual clock in memory.
    var trip = simulator.trip(
      index: index, atSimulatedSeconds: simulator.simulatedSeconds(atUnixTime: call.scheduler.unixTime),
      routeFormat: request.routeFormatType)
    func current(_ requested: Timestamp?, _ version: Timestamp?) -> Bool {
      guard let requested, let version else { return false }
      return (requested.seconds, requested.nanos) >= (version.seconds, version.nanos)
    }
    let versioned =
      request.currentRouteSegmentVersion != nil || request.remainingWaypointsVersion != nil
      || request.remainingWaypointsRouteVersion != nil || request.currentRouteSegmentTrafficVersion != nil
    var routeOmitted = false
    var waypointsOmitted = false
    if current(request.currentRouteSegmentVersion, trip.currentRouteSegmentVersion) {
      routeOmitted = !trip.route.isEmpty || !trip.currentRouteSegment.isEmpty
      trip.route = []
      trip.currentRouteSegment = ""
    }
    if current(request.currentRouteSegmentTrafficVersion, trip.currentRouteSegmentTrafficVersion) {
      trip.currentRouteSegmentTraffic = nil
    }
    if current(request.remainingWaypointsVersion, trip.remainingWaypointsVersion),
      current(request.remainingWaypointsRouteVersion, trip.remainingWaypointsRouteVersion)
    {
      waypointsOmitted = !trip.remainingWaypoints.isEmpty
      trip.remainingWaypoints = []
    }
    state.withLock {
      if versioned { $0.versionedRequests += 1 }
      if routeOmitted { $0.routeOmitted += 1 }
      if waypointsOmitted { $0.waypointsOmitted += 1 }
    }
    call.send(trip.serializedBytes())
    call.finish(.ok)
  }
}

// MARK: - Locks and shared counters

/// An atomic integer in a class, so escaping closures can share it.
final class SharedCounter: Sendable {
  private let storage: Atomic<Int>

  init(_ value: Int = 0) { storage = Atomic(value) }

  var value: Int { storage.load(ordering: .sequentiallyConsistent) }
  func store(_ value: Int) { storage.store(value, ordering: .sequentiallyConsistent) }
  func increment() { storage.add(1, ordering: .sequentiallyConsistent) }
  /// Sets bit `bit`.
  func setBit(_ bit: Int) { storage.bitwiseOr(1 << bit, ordering: .sequentiallyConsistent) }
  func hasBit(_ bit: Int) -> Bool { value & (1 << bit) != 0 }
}

// MARK: - Client configurations

/// A `client:` closure for the fixtures: the configuration they give, changed by `change`.
func configured(
  _ change: @escaping (inout JourneySharingConfiguration) -> Void
) -> (JourneySharingConfiguration) -> JourneySharingConfiguration {
  { configuration in
    var configuration = configuration
    change(&configuration)
    return configuration
  }
}
