// Sources/tripwatch/Follow.swift - `tripwatch follow`: follow trips with the consumer API

import ArgumentParser
import CLinuxSystem
import CoreMetrics
import FleetEngineMessages
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Logging
import Primitives
import Prometheus
import ServiceLifecycle
import ToolSupport
import UnixSignals

#if canImport(Glibc)
  import Glibc
#endif

struct Follow: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "follow",
    abstract: "Follow trips and print every callback a subscriber receives, until each reaches its final state.",
    discussion: """
      With --json each callback is one line {"trip":NAME,"event":E,…}; E is one of trip, tripStatus, \
      activeRouteRemainingDistance, activeRoute, vehicleLocation, pickupLocation, dropoffLocation, pickupETA, \
      dropoffETA, remainingWaypoints, intermediateDestinations, activeRouteTraffic, modelState, etaToNextWaypoint, \
      remainingRouteDistance, remainingRoute, remainingRouteTraffic, error. Coordinates are degrees, times Unix \
      seconds, distances meters. With --summary only a summary line is printed, every --summary-interval \
      seconds and at the end. Following stops by itself once every trip reached its final state (COMPLETE or \
      CANCELED); a trip with no success for --give-up-after seconds while errors come back is given up, and \
      the run fails with its last error.

      SIGTERM or SIGINT stop following gracefully: the streams are cancelled, deliveries under way finish, the \
      connections close with GOAWAY, the summary line is printed (also without --summary) and tripwatch exits 0. \
      With --metrics-listen HOST:PORT, `GET /metrics` there answers the library's metrics in Prometheus' text \
      format (journeysharing_*); the address is printed to standard error as `metrics on HOST:PORT`. \
      \(ToolExit.helpText)
      """)

  @Argument(help: "Trip names, providers/{provider}/trips/{trip}; - reads names from standard input.")
  var tripNames: [String] = []

  @Option(
    name: .customLong("trips-file"),
    help: "Read trip names from this file (- for standard input), one per line; # starts a comment.")
  var tripsFile: String?

  @OptionGroup var server: ServerOptions

  @Option(help: "stream, poll or auto.")
  var mode: JourneySharingConfiguration.FetchMode = .auto

  @Option(name: .customLong("poll-interval"), help: "Seconds between polls.")
  var pollInterval = 5.0

  @Option(help: "Stop after this many seconds (success if updates arrived, failure if only errors did).")
  var duration: Double?

  @Flag(name: .customLong("until-complete"), help: "With --duration: fail (exit 6) unless every trip finished.")
  var untilComplete = false

  @Option(name: .customLong("give-up-after"), help: "Give a trip up after this many seconds without success.")
  var giveUpAfter = 60.0

  @Option(
    name: .customLong("max-requests-per-second"),
    help: "The most GetTrip requests per second over every polled trip (Fleet Engine's quota); 0: no cap.")
  var maxRequestsPerSecond = 100.0

  @Flag(help: "One JSON object per line.")
  var json = false

  @Flag(help: "Print only summary lines, not every callback (for many trips).")
  var summary = false

  @Option(name: .customLong("summary-interval"), help: "Seconds between summary lines with --summary.")
  var summaryInterval = 10.0

  @Option(
    name: .customLong("metrics-listen"),
    help: "Serve metrics in Prometheus' text format on HOST:PORT at /metrics (port 0 picks one).")
  var metricsListen: String?

  func validate() throws {
    guard pollInterval > 0 else { throw ValidationError("--poll-interval must be > 0") }
    if let duration, !(duration > 0) { throw ValidationError("--duration must be > 0") }
    guard giveUpAfter > 0 else { throw ValidationError("--give-up-after must be > 0") }
    guard maxRequestsPerSecond >= 0 else { throw ValidationError("--max-requests-per-second must be ≥ 0") }
    guard summaryInterval > 0 else { throw ValidationError("--summary-interval must be > 0") }
    guard tripNames.filter({ $0 == "-" }).count + (tripsFile == "-" ? 1 : 0) <= 1 else {
      throw ValidationError("standard input can be read once: give - or --trips-file - once")
    }
    if let metricsListen, ListenAddress.parse(metricsListen) == nil {
      throw ValidationError("--metrics-listen must be HOST:PORT")
    }
  }

  func run() async throws {
    cls_line_buffer_stdout()
    let names = try gatherNames()
    guard !names.isEmpty else {
      throw ValidationError("give at least one trip name (as arguments, with --trips-file, or - for standard input)")
    }
    let output = FollowOutput(json: json, callbacks: !summary)
    // Every name is checked before anything is followed: a malformed one ends the run at once.
    var provider: String?
    for name in names {
      guard let parsed = TripName(parsing: name) else {
        let message = "malformed trip name \(name.debugDescription): must be providers/{provider}/trips/{trip}"
        output.error(trip: name, GRPCError(code: .invalidArgument, message: message), always: true)
        throw ToolFailure(.invalidInput, message)
      }
      if let provider, parsed.providerID != provider {
        let message =
          "trip names of more than one provider (\(provider), \(parsed.providerID)): follow one provider per run"
        output.error(trip: name, GRPCError(code: .invalidArgument, message: message), always: true)
        throw ToolFailure(.invalidInput, message)
      }
      provider = parsed.providerID
    }
    var configuration = try server.configuration(providerID: provider ?? "")
    configuration.fetchMode = mode
    configuration.pollInterval = .nanoseconds(Int64(pollInterval * 1e9))
    configuration.maxRequestsPerSecond = maxRequestsPerSecond > 0 ? maxRequestsPerSecond : nil
    configuration.deliveryThreads = 2
    signal(SIGPIPE, SIG_IGN)
    // Metrics go to a registry of this run's own, which the endpoint serves (nothing is recorded without one).
    var metricsServer: MetricsHTTPServer?
    if let metricsListen {
      let registry = PrometheusCollectorRegistry()
      configuration.metricsFactory = PrometheusMetricsFactory(registry: registry)
      metricsServer = try MetricsHTTPServer(listen: metricsListen) { registry.emitToBuffer() }
      StandardError.write("metrics on \(metricsServer?.address ?? metricsListen)\n")
    }
    defer { metricsServer?.stop() }
    let services: JourneySharingServices
    do {
      services = try JourneySharingServices(configuration: configuration)
    } catch {
      throw ToolFailure(.invalidInput, error.message)
    }
    let tracker = FollowTracker(names: names, output: output, started: unixTime())
    let following = FollowService(
      services: services, names: names, tracker: tracker, giveUpAfter: giveUpAfter,
      summaryInterval: summary ? summaryInterval : nil, duration: duration)
    try await runUntilDoneOrSignalled(services, then: following, named: "follow")
    let outcome = following.outcome
    let counts = tracker.counts()
    // On a signal the summary is printed whatever the output mode, and the run succeeds.
    if summary || outcome == .interrupted { output.summary(counts, always: true) }
    if outcome == .interrupted { return }
    let timedOut = outcome == .timedOut

    if counts.gaveUp > 0, let (trip, error) = tracker.lastGiveUp {
      throw ToolFailure(
        ToolExit.gaveUp(after: error.code),
        "gave up on \(counts.gaveUp) of \(counts.trips) trip(s) after \(giveUpAfter) s without success; "
          + "last error (\(trip)): \(server.explained(error.description))")
    }
    if timedOut {
      if counts.updates == 0, let (trip, error) = tracker.lastError {
        throw ToolFailure(
          ToolExit.gaveUp(after: error.code),
          "no update in \(duration ?? 0) s, only errors; last error (\(trip)): \(server.explained(error.description))")
      }
      if untilComplete && counts.final < counts.trips {
        throw ToolFailure(
          .incomplete, "--duration ran out with \(counts.trips - counts.final) of \(counts.trips) trip(s) unfinished")
      }
    }
  }

  /// The trip names from the arguments, the file and standard input, in that order, without repeats.
  private func gatherNames() throws -> [String] {
    var names: [String] = []
    var seen = Set<String>()
    func add(_ name: String) {
      if seen.insert(name).inserted { names.append(name) }
    }
    func addLines(of path: String, what: String) throws {
      guard let text = readText(path: path) else { throw ToolFailure(.invalidInput, "cannot read \(what)") }
      for line in text.split(whereSeparator: \.isNewline) {
        let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let name = trimmed(content)
        if !name.isEmpty { add(name) }
      }
    }
    for argument in tripNames {
      if argument == "-" {
        try addLines(of: "-", what: "trip names from standard input")
      } else {
        add(argument)
      }
    }
    if let tripsFile { try addLines(of: tripsFile, what: "--trips-file \(tripsFile)") }
    return names
  }
}

/// `text` without white space at either end.
private func trimmed(_ text: Substring) -> String {
  var slice = text
  while let first = slice.first, first.isWhitespace { slice.removeFirst() }
  while let last = slice.last, last.isWhitespace { slice.removeLast() }
  return String(slice)
}

/// What a trip has done so far, for giving up and for the summary.
struct TripProgress {
  var status: TripStatus = .unknownTripStatus
  var isFinal = false
  var gaveUp = false
  var lastSuccess: Double
  var lastError: GRPCError?
  var errorSinceSuccess = false
  var updates = 0
  var errors = 0
}

/// Counts over every followed trip.
struct FollowCounts {
  var trips = 0
  var final = 0
  var completed = 0
  var canceled = 0
  var gaveUp = 0
  var updates = 0
  var errors = 0
  var following: Int { trips - final - gaveUp }
}

/// The one subscriber of every followed trip: tracks progress, and prints callbacks through `output`.
final class FollowTracker: TripModelSubscriber {
  private struct State {
    var trips: [String: TripProgress] = [:]
    var lastGiveUp: (String, GRPCError)?
    var lastError: (String, GRPCError)?
  }

  let output: FollowOutput
  private let state: Locked<State>

  init(names: [String], output: FollowOutput, started: Double) {
    self.output = output
    var state = State()
    for name in names { state.trips[name] = TripProgress(lastSuccess: started) }
    self.state = Locked(state)
  }

  /// Whether every trip reached its final state or was given up.
  var isDone: Bool {
    state.withLock { $0.trips.values.allSatisfy { $0.isFinal || $0.gaveUp } }
  }

  var lastGiveUp: (String, GRPCError)? { state.withLock { $0.lastGiveUp } }
  var lastError: (String, GRPCError)? { state.withLock { $0.lastError } }

  /// Marks as given up, and returns, the trips still following whose last success (or the start) is
  /// `after` seconds old while errors came back since.
  func tripsToGiveUp(now: Double, after: Double) -> [String] {
    state.withLock { state in
      var names: [String] = []
      for (name, progress) in state.trips
      where !progress.isFinal && !progress.gaveUp && progress.errorSinceSuccess && now - progress.lastSuccess >= after {
        state.trips[name]!.gaveUp = true
        if let error = progress.lastError { state.lastGiveUp = (name, error) }
        names.append(name)
      }
      return names.sorted()
    }
  }

  func counts() -> FollowCounts {
    state.withLock { state in
      var counts = FollowCounts()
      for progress in state.trips.values {
        counts.trips += 1
        if progress.isFinal { counts.final += 1 }
        if progress.status == .complete { counts.completed += 1 }
        if progress.status == .canceled { counts.canceled += 1 }
        if progress.gaveUp { counts.gaveUp += 1 }
        counts.updates += progress.updates
        counts.errors += progress.errors
      }
      return counts
    }
  }

  func tripModel(_ tripModel: TripModel, didUpdate trip: Trip?, updatedPropertyFields: TripPropertyFields) {
    let now = unixTime()
    state.withLock { state in
      state.trips[tripModel.tripName]?.updates += 1
      state.trips[tripModel.tripName]?.lastSuccess = now
      state.trips[tripModel.tripName]?.errorSinceSuccess = false
    }
    output.trip(tripModel.tripName, trip, updatedPropertyFields)
  }

  func tripModel(_ tripModel: TripModel, didUpdate tripStatus: TripStatus) {
    state.withLock { state in
      state.trips[tripModel.tripName]?.status = tripStatus
      if tripStatus.isFinal { state.trips[tripModel.tripName]?.isFinal = true }
    }
    output.tripStatus(tripModel.tripName, tripStatus)
  }

  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {
    let grpc = error as? GRPCError ?? GRPCError(code: .unknown, message: error.map { "\($0)" } ?? "")
    state.withLock { state in
      state.trips[tripModel.tripName]?.errors += 1
      state.trips[tripModel.tripName]?.lastError = grpc
      state.trips[tripModel.tripName]?.errorSinceSuccess = true
      state.lastError = (tripModel.tripName, grpc)
    }
    output.error(trip: tripModel.tripName, grpc)
  }

  func tripModel(_ tripModel: TripModel, didUpdate modelState: TripModelState) {
    output.emit(tripModel.tripName, "modelState", [("state", .string(modelState == .active ? "active" : "inactive"))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateActiveRouteRemainingDistance activeRouteRemainingDistance: Int32) {
    output.emit(
      tripModel.tripName, "activeRouteRemainingDistance", [("meters", .int(Int(activeRouteRemainingDistance)))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateActiveRoute activeRoute: [LatLng]?) {
    output.emit(tripModel.tripName, "activeRoute", [("points", FollowOutput.points(activeRoute))])
  }

  func tripModel(_ tripModel: TripModel, didUpdate vehicleLocation: VehicleLocation?) {
    var fields: [(String, JSONValue)] = [("location", FollowOutput.point(vehicleLocation?.location))]
    if let heading = vehicleLocation?.heading?.value { fields.append(("heading", .int(Int(heading)))) }
    if let speed = vehicleLocation?.speed?.value { fields.append(("speed", .double(speed))) }
    if let time = vehicleLocation?.updateTime?.unixTime { fields.append(("updateTime", .double(time))) }
    output.emit(tripModel.tripName, "vehicleLocation", fields)
  }

  func tripModel(_ tripModel: TripModel, didUpdatePickupLocation pickupLocation: TerminalLocation?) {
    output.emit(tripModel.tripName, "pickupLocation", [("location", FollowOutput.location(pickupLocation))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateDropoffLocation dropoffLocation: TerminalLocation?) {
    output.emit(tripModel.tripName, "dropoffLocation", [("location", FollowOutput.location(dropoffLocation))])
  }

  func tripModel(_ tripModel: TripModel, didUpdatePickupETA pickupETA: Double) {
    output.emit(tripModel.tripName, "pickupETA", [("eta", .double(pickupETA))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateDropoffETA dropoffETA: Double) {
    output.emit(tripModel.tripName, "dropoffETA", [("eta", .double(dropoffETA))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateRemaining remainingWaypoints: [TripWaypoint]?) {
    let waypoints: [JSONValue] = (remainingWaypoints ?? []).map { waypoint in
      var fields: [(String, JSONValue)] = [
        ("type", .string(waypoint.waypointType.protoName)), ("tripId", .string(waypoint.tripId)),
        ("location", FollowOutput.location(waypoint.location)),
      ]
      if let meters = waypoint.distanceMeters?.value { fields.append(("distanceMeters", .int(Int(meters)))) }
      if let eta = waypoint.eta?.unixTime { fields.append(("eta", .double(eta))) }
      return .object(fields)
    }
    output.emit(tripModel.tripName, "remainingWaypoints", [("waypoints", .array(waypoints))])
  }

  func tripModel(
    _ tripModel: TripModel, didUpdateIntermediateDestinations intermediateDestinations: [TerminalLocation]?
  ) {
    output.emit(
      tripModel.tripName, "intermediateDestinations",
      [("locations", .array((intermediateDestinations ?? []).map { FollowOutput.location($0) }))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateActiveRouteTraffic activeRouteTraffic: ConsumableTrafficPolyline?) {
    output.emit(tripModel.tripName, "activeRouteTraffic", [("intervals", FollowOutput.traffic(activeRouteTraffic))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateETAToNextWaypoint nextWaypointETA: Double) {
    output.emit(tripModel.tripName, "etaToNextWaypoint", [("eta", .double(nextWaypointETA))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateRemainingRouteDistance remainingRouteDistance: Int32) {
    output.emit(tripModel.tripName, "remainingRouteDistance", [("meters", .int(Int(remainingRouteDistance)))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateRemainingRoute remainingRoute: [LatLng]?) {
    output.emit(tripModel.tripName, "remainingRoute", [("points", FollowOutput.points(remainingRoute))])
  }

  func tripModel(
    _ tripModel: TripModel, didUpdateRemainingRouteTraffic remainingRouteTraffic: ConsumableTrafficPolyline?
  ) {
    output.emit(
      tripModel.tripName, "remainingRouteTraffic", [("intervals", FollowOutput.traffic(remainingRouteTraffic))])
  }
}

/// Prints callbacks (as JSON lines or readable lines) and summaries.
struct FollowOutput: Sendable {
  let json: Bool
  /// Whether callbacks are printed (not with --summary); errors that end the run always are.
  let callbacks: Bool

  func emit(_ trip: String, _ event: String, _ fields: [(String, JSONValue)], always: Bool = false) {
    guard callbacks || always else { return }
    if json {
      print(JSONValue.object([("trip", .string(trip)), ("event", .string(event))] + fields).rendered)
    } else {
      let values = fields.map { "\($0.0)=\($0.1.rendered)" }.joined(separator: " ")
      print("\(trip) \(event) \(values)")
    }
  }

  func trip(_ trip: String, _ value: Trip?, _ fields: TripPropertyFields) {
    emit(
      trip, "trip",
      [
        ("status", .string(value?.tripStatus.protoName ?? "UNKNOWN_TRIP_STATUS")),
        ("updatedPropertyFields", .array(fields.memberNames.map { .string($0) })),
      ])
  }

  func tripStatus(_ trip: String, _ status: TripStatus) {
    emit(trip, "tripStatus", [("status", .string(status.protoName))])
  }

  /// An error event; `always` (even with --summary) for the errors that end the run before following starts.
  func error(trip: String, _ error: GRPCError, always: Bool = false) {
    emit(
      trip, "error",
      [
        ("domain", .string(GRPCError.errorDomain)), ("code", .int(error.code.rawValue)),
        ("name", .string(error.code.name)), ("message", .string(error.message)),
      ], always: always)
  }

  /// A summary line; printed when summaries are wanted (the caller decides) whatever `callbacks` says.
  func summary(_ counts: FollowCounts, always: Bool = true) {
    if json {
      print(
        JSONValue.object([
          ("event", .string("summary")), ("trips", .int(counts.trips)), ("final", .int(counts.final)),
          ("completed", .int(counts.completed)), ("canceled", .int(counts.canceled)),
          ("following", .int(counts.following)), ("gaveUp", .int(counts.gaveUp)), ("updates", .int(counts.updates)),
          ("errors", .int(counts.errors)),
        ]).rendered)
    } else {
      print(
        "summary: \(counts.trips) trips, \(counts.final) final (\(counts.completed) completed, \(counts.canceled) "
          + "canceled), \(counts.following) following, \(counts.gaveUp) given up, \(counts.updates) updates, "
          + "\(counts.errors) errors")
    }
  }

  static func point(_ latLng: LatLng?) -> JSONValue {
    guard let latLng else { return .null }
    return .object([("lat", .double(latLng.latitude)), ("lng", .double(latLng.longitude))])
  }

  static func points(_ points: [LatLng]?) -> JSONValue { .array((points ?? []).map { point($0) }) }

  static func location(_ location: TerminalLocation?) -> JSONValue { point(location?.point) }

  static func traffic(_ traffic: ConsumableTrafficPolyline?) -> JSONValue {
    guard let traffic else { return .null }
    return .array(
      traffic.speedReadingInterval.map {
        .object([
          ("start", .int(Int($0.startPolylinePointIndex))), ("end", .int(Int($0.endPolylinePointIndex))),
          ("speed", .string($0.speed.protoName)),
        ])
      })
  }
}

/// Runs `services` and then `main` in a ServiceGroup until `main` returns (which shuts the group down
/// gracefully) or SIGTERM or SIGINT comes, which the group traps before it runs anything; the services shut
/// down after `main` (a group stops its services in reverse order).
func runUntilDoneOrSignalled(_ services: JourneySharingServices, then main: some Service, named name: String)
  async throws
{
  let group = ServiceGroup(
    configuration: ServiceGroupConfiguration(
      services: [
        ServiceGroupConfiguration.ServiceConfiguration(service: services, serviceName: "JourneySharingServices"),
        ServiceGroupConfiguration.ServiceConfiguration(
          service: main, successTerminationBehavior: .gracefullyShutdownGroup, serviceName: name),
      ],
      gracefulShutdownSignals: [.sigterm, .sigint],
      logger: Logger(label: "tripwatch", factory: { _ in SwiftLogNoOpLogHandler() })))
  try await group.run()
}

/// Follows the trips until each is final or given up, --duration runs out, or graceful shutdown (a
/// signal); prints the summary lines on the way.
final class FollowService: Service, Sendable {
  enum Outcome: Sendable {
    case done, timedOut, interrupted
  }

  let services: JourneySharingServices
  let names: [String]
  let tracker: FollowTracker
  let giveUpAfter: Double
  let summaryInterval: Double?
  let duration: Double?
  private let result = Locked<Outcome>(.done)

  init(
    services: JourneySharingServices, names: [String], tracker: FollowTracker, giveUpAfter: Double,
    summaryInterval: Double?, duration: Double?
  ) {
    self.services = services
    self.names = names
    self.tracker = tracker
    self.giveUpAfter = giveUpAfter
    self.summaryInterval = summaryInterval
    self.duration = duration
  }

  /// How following ended (read after ``run()`` returned).
  var outcome: Outcome { result.withLock { $0 } }

  func run() async throws {
    let started = unixTime()
    let models = names.map { services.tripService.tripModel(forTripName: $0) }
    for model in models { model.register(tracker) }
    var lastSummary = started
    var outcome = Outcome.done
    while true {
      try? await Task.sleep(for: .milliseconds(100))
      if Task.isShuttingDownGracefully || Task.isCancelled {
        outcome = .interrupted
        break
      }
      let now = unixTime()
      for name in tracker.tripsToGiveUp(now: now, after: giveUpAfter) {
        services.tripService.tripModel(forTripName: name).unregisterSubscriber(tracker)
      }
      if let summaryInterval, now - lastSummary >= summaryInterval {
        lastSummary = now
        tracker.output.summary(tracker.counts())
      }
      if tracker.isDone { break }
      if let duration, now - started >= duration {
        outcome = .timedOut
        break
      }
    }
    for model in models { model.unregisterSubscriber(tracker) }
    result.withLock { $0 = outcome }
  }
}
