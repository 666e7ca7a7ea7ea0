// Sources/tripwatch/Follow.swift - `tripwatch follow`: follow trips with the consumer API

import ArgumentParser
import CLinuxSystem
import FleetEngineMessages
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

struct Follow: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "follow",
    abstract: "Follow trips and print every callback a subscriber receives.",
    discussion: """
      With --json each callback is one line {"trip":NAME,"event":E,…}; E is one of trip, tripStatus, \
      activeRouteRemainingDistance, activeRoute, vehicleLocation, pickupLocation, dropoffLocation, pickupETA, \
      dropoffETA, remainingWaypoints, intermediateDestinations, activeRouteTraffic, modelState, etaToNextWaypoint, \
      remainingRouteDistance, remainingRoute, remainingRouteTraffic, error. Coordinates are degrees, times Unix \
      seconds, distances meters. Exit 0, or 1 when --until-complete and a trip had not finished when following \
      stopped, 2 for a usage error.
      """)

  @Argument(help: "Trip names, providers/{provider}/trips/{trip}.")
  var tripNames: [String]

  @Option(help: "The server, HOST:PORT.")
  var target: String

  @Flag(help: "Use cleartext HTTP/2 (h2c) instead of TLS.")
  var plaintext = false

  @Option(name: .customLong("ca-file"), help: "Trust only the CA certificates in this PEM file.")
  var caFile: String?

  @Option(help: "A bearer token (JWT) to send.")
  var token: String?

  @Option(name: .customLong("token-file"), help: "Read the bearer token from this file.")
  var tokenFile: String?

  @Option(help: "stream, poll or auto.")
  var mode: JourneySharingConfiguration.FetchMode = .auto

  @Option(name: .customLong("poll-interval"), help: "Seconds between polls.")
  var pollInterval = 5.0

  @Flag(name: .customLong("until-complete"), help: "Stop when every trip reached its final state.")
  var untilComplete = false

  @Option(help: "Stop after this many seconds.")
  var duration: Double?

  @Flag(help: "One JSON object per callback.")
  var json = false

  func validate() throws {
    guard !tripNames.isEmpty else { throw ValidationError("give at least one trip name") }
    _ = try Target(parsing: target)
    guard token == nil || tokenFile == nil else { throw ValidationError("give --token or --token-file, not both") }
    guard pollInterval > 0 else { throw ValidationError("--poll-interval must be > 0") }
    if let duration, !(duration > 0) { throw ValidationError("--duration must be > 0") }
    if plaintext && caFile != nil { throw ValidationError("--ca-file needs TLS; drop --plaintext") }
  }

  func run() async throws {
    cls_line_buffer_stdout()
    let target = try Target(parsing: target)
    var tokenValue = token
    if let tokenFile {
      guard let contents = readWholeFile(tokenFile) else { throw ValidationError("cannot read --token-file \(tokenFile)") }
      tokenValue = String(contents.filter { !$0.isWhitespace })
    }
    var tls = TLSConfiguration()
    if let caFile { tls.trustRoots = .caFile(caFile) }
    // The provider ID of the first name; every model checks its own name anyway.
    let provider = TripName(parsing: tripNames[0])?.providerID ?? ""
    var configuration = JourneySharingConfiguration(
      host: target.host, port: target.port, security: plaintext ? .plaintext : .tls(tls), providerID: provider,
      authorization: tokenValue.map { StaticTokenProvider(token: $0) }, fetchMode: mode,
      pollInterval: .nanoseconds(Int64(pollInterval * 1e9)))
    configuration.deliveryThreads = 2
    let services: JourneySharingServices
    do {
      services = try JourneySharingServices(configuration: configuration)
    } catch {
      FileHandleStderr.write("tripwatch: \(error.message)\n")
      throw ExitCode(2)
    }
    let printer = CallbackPrinter(json: json)
    let models = tripNames.map { services.tripService.tripModel(forTripName: $0) }
    for model in models { model.register(printer) }
    let started = unixNow()
    while true {
      try? await Task.sleep(for: .milliseconds(100))
      if let duration, unixNow() - started >= duration { break }
      if untilComplete, printer.finishedCount(of: models) == models.count { break }
    }
    for model in models { model.unregisterSubscriber(printer) }
    await services.shutdown()
    if untilComplete, printer.finishedCount(of: models) < models.count { throw ExitCode(1) }
  }
}

extension JourneySharingConfiguration.FetchMode: ExpressibleByArgument {}

func readWholeFile(_ path: String) -> String? {
  guard let file = fopen(path, "rb") else { return nil }
  defer { fclose(file) }
  var bytes: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 4096)
  while true {
    let n = fread(&buffer, 1, buffer.count, file)
    if n <= 0 { break }
    bytes.append(contentsOf: buffer[0..<n])
  }
  return String(decoding: bytes, as: UTF8.self)
}

/// Prints each callback, as JSON or as a readable line.
final class CallbackPrinter: TripModelSubscriber {
  let json: Bool
  private let finished = Mutex<Set<String>>([])

  init(json: Bool) { self.json = json }

  func finishedCount(of models: [TripModel]) -> Int {
    finished.withLock { $0.count }
  }

  private func emit(_ model: TripModel, _ event: String, _ fields: [(String, JSONValue)]) {
    if json {
      print(JSONValue.object([("trip", .string(model.tripName)), ("event", .string(event))] + fields).rendered)
    } else {
      let values = fields.map { "\($0.0)=\($0.1.rendered)" }.joined(separator: " ")
      print("\(model.tripName) \(event) \(values)")
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

  func tripModel(_ tripModel: TripModel, didUpdate modelState: TripModelState) {
    emit(tripModel, "modelState", [("state", .string(modelState == .active ? "active" : "inactive"))])
  }

  func tripModel(_ tripModel: TripModel, didUpdate trip: Trip?, updatedPropertyFields: TripPropertyFields) {
    emit(
      tripModel, "trip",
      [
        ("status", .string(trip?.tripStatus.protoName ?? "UNKNOWN_TRIP_STATUS")),
        ("updatedPropertyFields", .array(updatedPropertyFields.memberNames.map { .string($0) })),
      ])
  }

  func tripModel(_ tripModel: TripModel, didUpdate tripStatus: TripStatus) {
    emit(tripModel, "tripStatus", [("status", .string(tripStatus.protoName))])
    if tripStatus == .complete || tripStatus == .canceled {
      _ = finished.withLock { $0.insert(tripModel.tripName) }
    }
  }

  func tripModel(_ tripModel: TripModel, didUpdateActiveRouteRemainingDistance activeRouteRemainingDistance: Int32) {
    emit(tripModel, "activeRouteRemainingDistance", [("meters", .int(Int(activeRouteRemainingDistance)))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateActiveRoute activeRoute: [LatLng]?) {
    emit(tripModel, "activeRoute", [("points", Self.points(activeRoute))])
  }

  func tripModel(_ tripModel: TripModel, didUpdate vehicleLocation: VehicleLocation?) {
    var fields: [(String, JSONValue)] = [("location", Self.point(vehicleLocation?.location))]
    if let heading = vehicleLocation?.heading?.value { fields.append(("heading", .int(Int(heading)))) }
    if let speed = vehicleLocation?.speed?.value { fields.append(("speed", .double(speed))) }
    if let time = vehicleLocation?.updateTime?.unixTime { fields.append(("updateTime", .double(time))) }
    emit(tripModel, "vehicleLocation", fields)
  }

  func tripModel(_ tripModel: TripModel, didUpdatePickupLocation pickupLocation: TerminalLocation?) {
    emit(tripModel, "pickupLocation", [("location", Self.location(pickupLocation))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateDropoffLocation dropoffLocation: TerminalLocation?) {
    emit(tripModel, "dropoffLocation", [("location", Self.location(dropoffLocation))])
  }

  func tripModel(_ tripModel: TripModel, didUpdatePickupETA pickupETA: Double) {
    emit(tripModel, "pickupETA", [("eta", .double(pickupETA))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateDropoffETA dropoffETA: Double) {
    emit(tripModel, "dropoffETA", [("eta", .double(dropoffETA))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateRemaining remainingWaypoints: [TripWaypoint]?) {
    let waypoints: [JSONValue] = (remainingWaypoints ?? []).map { waypoint in
      var fields: [(String, JSONValue)] = [
        ("type", .string(waypoint.waypointType.protoName)), ("tripId", .string(waypoint.tripId)),
        ("location", Self.location(waypoint.location)),
      ]
      if let meters = waypoint.distanceMeters?.value { fields.append(("distanceMeters", .int(Int(meters)))) }
      if let eta = waypoint.eta?.unixTime { fields.append(("eta", .double(eta))) }
      return .object(fields)
    }
    emit(tripModel, "remainingWaypoints", [("waypoints", .array(waypoints))])
  }

  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {
    let grpc = error as? GRPCError
    emit(
      tripModel, "error",
      [
        ("domain", .string(GRPCError.errorDomain)), ("code", .int(grpc?.code.rawValue ?? 2)),
        ("name", .string(grpc?.code.name ?? "UNKNOWN")),
        ("message", .string(grpc?.message ?? error.map { "\($0)" } ?? "")),
      ])
  }

  func tripModel(_ tripModel: TripModel, didUpdateIntermediateDestinations intermediateDestinations: [TerminalLocation]?) {
    emit(
      tripModel, "intermediateDestinations",
      [("locations", .array((intermediateDestinations ?? []).map { Self.location($0) }))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateActiveRouteTraffic activeRouteTraffic: ConsumableTrafficPolyline?) {
    emit(tripModel, "activeRouteTraffic", [("intervals", Self.traffic(activeRouteTraffic))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateETAToNextWaypoint nextWaypointETA: Double) {
    emit(tripModel, "etaToNextWaypoint", [("eta", .double(nextWaypointETA))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateRemainingRouteDistance remainingRouteDistance: Int32) {
    emit(tripModel, "remainingRouteDistance", [("meters", .int(Int(remainingRouteDistance)))])
  }

  func tripModel(_ tripModel: TripModel, didUpdateRemainingRoute remainingRoute: [LatLng]?) {
    emit(tripModel, "remainingRoute", [("points", Self.points(remainingRoute))])
  }

  func tripModel(
    _ tripModel: TripModel, didUpdateRemainingRouteTraffic remainingRouteTraffic: ConsumableTrafficPolyline?
  ) {
    emit(tripModel, "remainingRouteTraffic", [("intervals", Self.traffic(remainingRouteTraffic))])
  }
}
