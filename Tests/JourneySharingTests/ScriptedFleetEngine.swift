// Tests/JourneySharingTests/ScriptedFleetEngine.swift - a server answering GetTrip from a script
//
// A GRPCService whose answers the test writes, served in memory on a virtual clock or by a real GRPCServer on
// 127.0.0.1: for the n-th call of each GetTrip method, the response headers, the messages (encoded trips, or
// garbage bytes) and how the call ends (or that it stays open). It records the calls and the cancellations
// it sees.

import FleetEngineMessages
import Foundation
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Logging
import Primitives
import ProtoWire
import Testing

/// What the server answers one call with.
struct ScriptedReply: Sendable {
  /// Response headers (custom metadata), sent first.
  var headers: GRPCMetadata = [:]
  /// The response messages, as raw bytes.
  var messages: [[UInt8]]
  /// The status the call finishes with; `nil` keeps it open until the client cancels it.
  var status: GRPCStatus? = .ok

  /// One Trip (unary GetTrip), OK.
  static func trip(_ trip: Trip) -> ScriptedReply { ScriptedReply(messages: [trip.serializedBytes()]) }

  /// The whole trip as the first update of a stream, then `updates`; the stream stays open.
  static func stream(_ trip: Trip, then updates: [TripUpdate] = []) -> ScriptedReply {
    var first = TripUpdate()
    first.trip = trip
    first.fullTrip = true
    first.sequence = 1
    return ScriptedReply(messages: ([first] + updates).map { $0.serializedBytes() }, status: nil)
  }

  /// Bytes that do not decode as a Trip or a TripUpdate: field 1 announcing 5 bytes, then 1.
  static let malformed: [UInt8] = [0x0A, 0x05, 0x01]
}

/// Answers `/maps.fleetengine.v1.TripService/GetTrip` and `/journeysharing.v1.TripStreamService/GetTrip`
/// with `script(path, n)` for the n-th call (from 1) to that path.
final class ScriptedFleetEngine: GRPCService, Sendable {
  private struct State {
    var calls: [String: Int] = [:]
    var cancellations = 0
    var authorizations: [String] = []
  }

  private let script: @Sendable (String, Int) -> ScriptedReply
  private let state = Locked(State())

  init(_ script: @escaping @Sendable (_ path: String, _ number: Int) -> ScriptedReply) { self.script = script }

  func handle(_ call: any GRPCServerCallContext) {
    let number = state.withLock { state -> Int in
      state.calls[call.path, default: 0] += 1
      if let authorization = call.requestMetadata.first("authorization") { state.authorizations.append(authorization) }
      return state.calls[call.path]!
    }
    call.onCancel { self.state.withLock { $0.cancellations += 1 } }
    let reply = script(call.path, number)
    call.sendHeaders(reply.headers)
    for message in reply.messages { call.send(message) }
    if let status = reply.status { call.finish(status) }
  }

  /// Calls started on `path` so far.
  func calls(_ path: String) -> Int { state.withLock { $0.calls[path] ?? 0 } }

  /// Calls the client cancelled (or whose connection dropped) while they were open.
  var cancellations: Int { state.withLock { $0.cancellations } }

  /// `script` served over `transport` (in memory on a virtual clock, or by a real GRPCServer on 127.0.0.1), and
  /// services following trips on it, configured by `client` (given the tests' usual client configuration for
  /// that server: plaintext, quick backoff).
  static func with<R>(
    _ transport: FixtureTransport,
    script: @escaping @Sendable (_ path: String, _ number: Int) -> ScriptedReply,
    client: (JourneySharingConfiguration) -> JourneySharingConfiguration,
    _ body: (ScriptedFleetEngine, any ServiceFixture) async throws -> R
  ) async throws -> R {
    try await withServiceFixture(transport, service: { _ in ScriptedFleetEngine(script) }, client: client, body)
  }
}

/// A scripted-server client configuration: `configuration` (the tests' usual one for the server) in `mode`,
/// polling every 50 ms.
func scriptedClient(
  _ configuration: JourneySharingConfiguration, mode: JourneySharingConfiguration.FetchMode,
  logger: Logger = quietLogger("journeysharing.scripted")
) -> JourneySharingConfiguration {
  var configuration = configuration
  configuration.fetchMode = mode
  configuration.pollInterval = .milliseconds(50)
  configuration.logger = logger
  return configuration
}

// MARK: - Trips

/// The trip name of the scripted tests.
let scriptedTripName = "providers/\(followProvider)/trips/scripted-1"

/// `count` points on a line north-east from a point near the city centre.
func linePoints(_ count: Int, start: Double = 0) -> [LatLng] {
  (0..<count).map {
    LatLng(latitude: 52.5 + (start + Double($0)) * 1e-5, longitude: 13.4 + (start + Double($0)) * 1e-5)
  }
}

/// A small, valid trip under way: a 10-point route, the vehicle on its first point, one pickup ahead.
/// `step` moves the vehicle (and tells trips apart).
func scriptedTrip(step: Int = 0) -> Trip {
  var trip = Trip()
  trip.name = scriptedTripName
  trip.vehicleId = "vehicle-1"
  trip.tripStatus = .enrouteToPickup
  trip.route = LatLngPath(linePoints(10, start: Double(step)))
  var location = VehicleLocation()
  location.location = trip.route.first
  trip.lastLocation = location
  var pickup = TerminalLocation()
  pickup.point = trip.route.last
  trip.pickupPoint = pickup
  var waypoint = TripWaypoint()
  waypoint.tripId = "scripted-1"
  waypoint.waypointType = .pickupWaypointType
  waypoint.location = pickup
  waypoint.pathToWaypoint = trip.route
  trip.remainingWaypoints = [waypoint]
  return trip
}

/// The trip a model holds after receiving `trip`.
func heldTrip(_ trip: Trip) -> Trip { TripSnapshot(trip: trip, tripID: "scripted-1").trip }
