// Sources/tripwatch/Demo.swift - `tripwatch demo`: follow trips on an embedded FleetSim

import ArgumentParser
import CLinuxSystem
import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Logging
import Primitives
import ServiceLifecycle
import ToolSupport

#if canImport(Glibc)
  import Glibc
#endif

struct Demo: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "demo",
    abstract: "Start a simulated Fleet Engine in process and follow its trips to the end.",
    discussion: """
      Shows one row per trip (status, vehicle position, ETAs to pickup and dropoff, remaining distance, \
      progress) redrawn in place on a terminal, or plain lines otherwise, then a summary. Exits 0 when every \
      followed trip reached its final state (COMPLETE or CANCELED), 6 when --duration ran out first. SIGTERM \
      or SIGINT stops it gracefully: the summary, then exit 0.
      """)

  @Option(help: "Number of trips to follow.")
  var trips = 5

  @Option(help: "Simulated seconds per real second.")
  var speedup = 60.0

  @Option(help: "Give up after this many seconds.")
  var duration = 120.0

  @Option(name: .customLong("update-interval"), help: "Seconds between updates from the simulator.")
  var updateInterval = 0.5

  @Option(help: "Seed of the simulation.")
  var seed: UInt64 = 1

  @Flag(help: "Print plain lines even on a terminal.")
  var plain = false

  func validate() throws {
    guard trips >= 1 else { throw ValidationError("--trips must be ≥ 1") }
    guard speedup > 0, duration > 0, updateInterval > 0 else {
      throw ValidationError("--speedup, --duration and --update-interval must be > 0")
    }
  }

  func run() async throws {
    cls_line_buffer_stdout()
    var simulation = SimulationConfiguration()
    simulation.tripCount = trips
    simulation.seed = seed
    simulation.speedup = speedup
    let sim = try FleetSim(
      configuration: FleetSimConfiguration(
        simulation: simulation, updateInterval: .nanoseconds(Int64(updateInterval * 1e9))),
      logger: Logger(label: "journeysharing.fleetsim"))
    let port = try sim.start()
    // Following goes through the public consumer API only, as an application would.
    var configuration = JourneySharingConfiguration(
      host: "127.0.0.1", port: port, security: .plaintext, providerID: sim.simulator.configuration.provider,
      fetchMode: .stream)
    // The library is silent by default: the demo shows its warnings.
    configuration.logger = Logger(label: "tripwatch")
    configuration.logger.logLevel = .warning
    let services = try JourneySharingServices(configuration: configuration)
    let followers = (0..<trips).map { index in
      DemoFollower(model: services.tripService.tripModel(forTripName: sim.simulator.tripName(index: index)))
    }
    for follower in followers { follower.follow() }

    // The services and the view in a ServiceGroup: the view returns when every trip is final or --duration ran
    // out (which shuts the group down gracefully), or on SIGTERM or SIGINT; the services shut down after it.
    let view = DemoViewService(
      followers: followers, interactive: !plain && isatty(1) == 1, duration: duration)
    try await runUntilDoneOrSignalled(services, then: view, named: "demo")
    for follower in followers { follower.stop() }
    await services.shutdown()
    await sim.shutdown()

    let rows = followers.map { $0.row }
    let completed = rows.filter { $0.status == .complete }.count
    let canceled = rows.filter { $0.status == .canceled }.count
    let updates = rows.reduce(0) { $0 + $1.updates }
    let errors = rows.reduce(0) { $0 + $1.errors }
    print(
      "summary: \(rows.count) trips followed, \(completed) completed, \(canceled) canceled, "
        + "\(rows.count - completed - canceled) unfinished, \(updates) updates received, \(errors) errors")
    // On a signal the run succeeds, as `tripwatch follow`'s does.
    if completed + canceled < rows.count, !view.interrupted {
      throw ToolFailure(.incomplete, "\(rows.count - completed - canceled) trip(s) unfinished after \(duration) s")
    }
  }

}

/// The terminal's height in rows (24 when standard output is no terminal).
func terminalRows() -> Int {
  var size = winsize()
  if ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 { return Int(size.ws_row) }
  return 24
}

/// The demo's view: redraws the rows (or prints changed ones) until every trip is final, --duration ran out,
/// or the group shuts down gracefully (SIGTERM, SIGINT).
final class DemoViewService: Service, Sendable {
  let followers: [DemoFollower]
  let interactive: Bool
  let duration: Double
  private let stoppedBySignal = Locked(false)

  init(followers: [DemoFollower], interactive: Bool, duration: Double) {
    self.followers = followers
    self.interactive = interactive
    self.duration = duration
  }

  /// Whether a signal stopped it before every trip was final (read after ``run()`` returned).
  var interrupted: Bool { stoppedBySignal.withLock { $0 } }

  func run() async throws {
    let started = unixTime()
    var drawnLines = 0
    var lastPlain: [String] = []
    while true {
      try? await Task.sleep(for: .milliseconds(interactive ? 200 : 500))
      let rows = followers.map { $0.row }
      let elapsed = unixTime() - started
      let finished = rows.allSatisfy(\.isFinal)
      if interactive {
        let lines = DemoView.screen(rows, elapsed: elapsed, maxRows: max(5, terminalRows() - 4))
        var output = drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : ""
        for line in lines { output += "\u{1B}[2K" + line + "\n" }
        print(output, terminator: "")
        drawnLines = lines.count
      } else {
        // Plain lines: one per trip whose status changed, so logs stay readable.
        let lines = rows.map { DemoView.row($0) }
        for (index, row) in rows.enumerated()
        where lastPlain.count != rows.count
          || !lastPlain[index].hasPrefix(
            DemoView.padded(row.name, 12) + " " + DemoView.padded(row.status.protoName, 36))
        {
          print(lines[index])
        }
        lastPlain = lines
      }
      if finished || elapsed >= duration { break }
      if Task.isShuttingDownGracefully || Task.isCancelled {
        stoppedBySignal.withLock { $0 = true }
        break
      }
    }
  }
}

/// Follows one trip through its ``TripModel`` and keeps its row up to date. Callbacks run
/// on the library's delivery threads; the row is read by the render loop.
final class DemoFollower: TripModelSubscriber {
  private struct State {
    var trip = Trip()
    var row: TripRow
    var legStart: (status: TripStatus, index: Int, meters: Int)?
  }

  let model: TripModel
  private let state: Locked<State>

  init(model: TripModel) {
    self.model = model
    self.state = Locked(State(row: TripRow(name: String(model.tripName.split(separator: "/").last ?? ""))))
  }

  var row: TripRow { state.withLock { $0.row } }

  func follow() { model.register(self) }

  func stop() { model.unregisterSubscriber(self) }

  func tripModel(_ tripModel: TripModel, didUpdate trip: Trip?, updatedPropertyFields: TripPropertyFields) {
    guard let trip else { return }
    state.withLock { state in
      state.trip = trip
      state.row.updates += 1
      Self.refresh(&state)
    }
  }

  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {
    state.withLock { state in
      state.row.errors += 1
      state.row.lastError = error.map { "\($0)" }
    }
  }

  private static func refresh(_ state: inout State) {
    let trip = state.trip
    let now = unixTime()
    state.row.status = trip.tripStatus
    state.row.position = trip.lastLocation?.location
    state.row.remainingMeters = trip.remainingDistanceMeters.map { Int($0.value) }
    // A waypoint's `eta` is when the vehicle gets there (its `duration` covers only the leg
    // from the previous waypoint), so ETAs are read from `eta`.
    state.row.pickupETA = nil
    state.row.dropoffETA = nil
    for waypoint in trip.remainingWaypoints {
      let seconds = waypoint.eta.map { $0.unixTime - now }
      switch waypoint.waypointType {
      case .pickupWaypointType: state.row.pickupETA = state.row.pickupETA ?? seconds
      case .dropOffWaypointType: state.row.dropoffETA = seconds
      default: break
      }
    }
    // Progress counts legs: to pickup, to each intermediate destination, to dropoff; within
    // a leg, the share of its distance already driven.
    let intermediates = trip.intermediateDestinations.count
    let legs = Double(2 + intermediates)
    let index = Int(trip.intermediateDestinationIndex)
    let legsDone: Int
    var driving = false
    switch trip.tripStatus {
    case .new, .unknownTripStatus, .unrecognized: legsDone = 0
    case .enrouteToPickup: legsDone = 0; driving = true
    case .arrivedAtPickup: legsDone = 1
    case .enrouteToIntermediateDestination: legsDone = 1 + index; driving = true
    case .arrivedAtIntermediateDestination: legsDone = 2 + index
    case .enrouteToDropoff: legsDone = 1 + intermediates; driving = true
    case .complete: legsDone = 2 + intermediates
    case .canceled: return  // Progress stays where it was.
    }
    var fraction = 0.0
    if driving, let meters = state.row.remainingMeters {
      let leg = (trip.tripStatus, index)
      if state.legStart == nil || state.legStart!.status != leg.0 || state.legStart!.index != leg.1 {
        state.legStart = (leg.0, leg.1, meters)
      } else if meters > state.legStart!.meters {
        state.legStart!.meters = meters  // The leg got longer (a new route): measure from there.
      }
      fraction = 1 - Double(meters) / Double(max(1, state.legStart!.meters))
    }
    state.row.progress = min(1, (Double(legsDone) + max(0, min(1, fraction))) / legs)
  }
}
