// Tests/FleetSimTests/FleetSimServiceTests.swift - FleetSim over real sockets: GetTrip, streaming, auth, faults
//
// Every test starts its own FleetSim on 127.0.0.1 (port 0) with a high speed-up and a
// short update interval, and talks to it through a plaintext GRPCChannel. The trips'
// plans do not depend on the start time or speed-up, so a test picks the moment of a
// trip it wants (en route, waiting at the pickup, long over) by choosing the start time.

import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import JSONWebToken
import Primitives
import ProtoWire
import Testing

#if canImport(Glibc)
  import Glibc
#endif

// MARK: - Helpers

/// The wall clock in Unix seconds.

/// The seed of the service tests' simulations.
private let serviceSeed: UInt64 = 11
/// How many trips the service tests' simulations have.
private let serviceTripCount = 40
/// The HS256 secret of the auth tests (at least 32 bytes).
private let serviceSecret = Array("fleetsim-service-tests-hs256-secret-0123456789".utf8)

/// The plans of the test seed: they fix what every trip does, whatever the start time and speed-up.
private let planner = TripSimulator(
  configuration: SimulationConfiguration(tripCount: serviceTripCount, seed: serviceSeed))

/// A configuration whose simulated clock reads `simulatedNow` seconds right now.
private func simConfiguration(
  seed: UInt64 = serviceSeed, speedup: Double = 300, simulatedNow: Double = 0,
  updateInterval: Duration = .milliseconds(50), auth: FleetSimConfiguration.Auth? = nil,
  faults: FaultInjection = FaultInjection()
) -> FleetSimConfiguration {
  FleetSimConfiguration(
    simulation: SimulationConfiguration(
      tripCount: serviceTripCount, seed: seed, startTime: unixTime() - simulatedNow / speedup, speedup: speedup),
    updateInterval: updateInterval, auth: auth, faults: faults)
}

/// An HS256 token with the given `authorization.tripid` (none when `nil`), expiring `expiresIn` seconds from now,
/// with the claims FleetSim checks as Fleet Engine does: its audience, `iss` = `sub` (a service account), and
/// at most an hour between `iat` and `exp` (issued a minute before the earlier of now and `exp`, or an hour
/// before `exp`, whichever is later).
private func hs256Token(tripID: String?, secret: [UInt8] = serviceSecret, expiresIn: Double = 3600) throws -> String {
  let now = unixTime()
  let account = "fleetsim-tests@example.iam.gserviceaccount.com"
  var claims = JWTClaims(
    issuer: account, subject: account, audience: ["https://fleetengine.googleapis.com/"],
    expiresAt: now + expiresIn, issuedAt: max(now + expiresIn - 3_600, min(now, now + expiresIn) - 60))
  if let tripID {
    claims.tripID = tripID
  } else {
    claims.vehicleID = "vehicle-1"  // an authorization claim, but not for a trip
  }
  return try JSONWebToken.sign(claims: claims, key: .hs256(secret: secret))
}

private func bearer(_ token: String) -> String { "Bearer \(token)" }

private func isFinal(_ status: TripStatus) -> Bool { status == .complete || status == .canceled }

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
private func pollUntil(timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
  let clock = ContinuousClock()
  let end = clock.now.advanced(by: timeout)
  while true {
    if await condition() { return true }
    if clock.now >= end { return false }
    try? await Task.sleep(for: .milliseconds(10))
  }
}

/// Reads a stream's remaining messages; returns the error that ended it (`nil`: OK).
private func readToTheEnd(_ iterator: inout GRPCServerStreamingResponse.Iterator) async -> GRPCError? {
  do {
    while try await iterator.next() != nil {}
    return nil
  } catch {
    return error
  }
}

/// A trip followed to the end of its stream: the updates, and the error that ended it (`nil`: OK).
private struct Followed {
  var updates: [TripUpdate]
  var error: GRPCError?
}

/// A started FleetSim and a plaintext channel to it.
private struct SimFixture {
  let sim: FleetSim
  let channel: GRPCChannel
  var simulator: TripSimulator { sim.simulator }

  /// Runs `body` against a fresh FleetSim and channel, then closes both.
  ///
  /// The configuration is made just before the server starts, so that a start time it computes from the wall
  /// clock is not stale when the test got to run late (tests run in parallel, on few cores).
  static func with<R>(
    _ configuration: @autoclosure () -> FleetSimConfiguration, _ body: (SimFixture) async throws -> R
  ) async throws -> R {
    let sim = try FleetSim(configuration: configuration())
    let channel: GRPCChannel
    do {
      let port = try sim.start()
      channel = try GRPCChannel(
        host: "127.0.0.1", port: port, configuration: GRPCChannelConfiguration(security: .plaintext))
    } catch {
      await sim.shutdown()
      throw error
    }
    let fixture = SimFixture(sim: sim, channel: channel)
    do {
      let result = try await body(fixture)
      channel.close()
      await sim.shutdown()
      return result
    } catch {
      channel.close()
      await sim.shutdown()
      throw error
    }
  }

  static func options(_ authorization: String?, timeout: Duration = .seconds(20)) -> CallOptions {
    var metadata = GRPCMetadata()
    if let authorization { metadata.add("authorization", authorization) }
    return CallOptions(timeout: timeout, metadata: metadata)
  }

  /// A unary GetTrip's response bytes, or its error; `known`'s versions are sent back when given.
  func getTripBytes(
    _ name: String, format: PolylineFormatType = .latLngListType, versionsOf known: Trip? = nil,
    authorization: String? = nil
  ) async -> Result<[UInt8], GRPCError> {
    var request = GetTripRequest()
    request.name = name
    request.view = .journeySharingV1S
    request.routeFormatType = format
    if let known {
      request.currentRouteSegmentVersion = known.currentRouteSegmentVersion
      request.currentRouteSegmentTrafficVersion = known.currentRouteSegmentTrafficVersion
      request.remainingWaypointsVersion = known.remainingWaypointsVersion
      request.remainingWaypointsRouteVersion = known.remainingWaypointsRouteVersion
    }
    do {
      let response = try await channel.unary(
        path: FleetEngineMethods.unaryGetTrip, request: request.serializedBytes(),
        options: Self.options(authorization))
      return .success(response.message)
    } catch {
      return .failure(error)
    }
  }

  /// A unary GetTrip's trip, or its error.
  func getTrip(
    _ name: String, format: PolylineFormatType = .latLngListType, versionsOf known: Trip? = nil,
    authorization: String? = nil
  ) async throws -> Result<Trip, GRPCError> {
    switch await getTripBytes(name, format: format, versionsOf: known, authorization: authorization) {
    case .success(let bytes): return .success(try Trip(serializedBytes: bytes))
    case .failure(let error): return .failure(error)
    }
  }

  /// The status code a unary GetTrip ends with.
  func unaryCode(_ name: String, authorization: String? = nil) async -> GRPCStatusCode {
    switch await getTripBytes(name, authorization: authorization) {
    case .success: .ok
    case .failure(let error): error.code
    }
  }

  /// Starts a streaming GetTrip.
  func stream(
    _ name: String, format: PolylineFormatType = .latLngListType, authorization: String? = nil
  ) -> GRPCServerStreamingResponse {
    var request = StreamTripRequest()
    request.name = name
    request.view = .journeySharingV1S
    request.routeFormatType = format
    return channel.serverStreaming(
      path: FleetEngineMethods.streamingGetTrip, request: request.serializedBytes(),
      options: Self.options(authorization, timeout: .seconds(40)))
  }

  /// Follows a trip over the streaming GetTrip until the stream ends.
  func follow(
    _ name: String, format: PolylineFormatType = .latLngListType, authorization: String? = nil
  ) async throws -> Followed {
    try await Self.collect(stream(name, format: format, authorization: authorization))
  }

  /// Reads a streaming GetTrip to its end.
  static func collect(_ response: GRPCServerStreamingResponse) async throws -> Followed {
    var iterator = response.makeAsyncIterator()
    var updates: [TripUpdate] = []
    while true {
      let message: [UInt8]?
      do {
        message = try await iterator.next()
      } catch {
        return Followed(updates: updates, error: error)
      }
      guard let message else { return Followed(updates: updates, error: nil) }
      updates.append(try TripUpdate(serializedBytes: message))
    }
  }

  /// The status code a streaming GetTrip ends with (reading every message).
  func streamCode(_ name: String, authorization: String? = nil) async throws -> GRPCStatusCode {
    try await follow(name, authorization: authorization).error?.code ?? .ok
  }
}

// MARK: - Tests

@Suite("FleetSim service", .timeLimit(.minutes(1)))
struct FleetSimServiceTests {
  // MARK: Unary GetTrip

  @Test func unaryGetTripReturnsTheNamedTripWithTheSimulatedStatus() async throws {
    try await SimFixture.with(simConfiguration(simulatedNow: 400)) { fixture in
      let simulator = fixture.simulator
      for index in 0..<12 {
        let name = simulator.tripName(index: index)
        let before = simulator.simulatedSeconds(atUnixTime: unixTime())
        let trip = try await fixture.getTrip(name).get()
        let after = simulator.simulatedSeconds(atUnixTime: unixTime())
        let early = simulator.trip(index: index, atSimulatedSeconds: before)
        let late = simulator.trip(index: index, atSimulatedSeconds: after)
        #expect(trip.name == name)
        #expect(trip.vehicleId == "vehicle-\(index)")
        #expect(trip.view == .journeySharingV1S)
        #expect(
          trip.tripStatus == early.tripStatus || trip.tripStatus == late.tripStatus,
          "trip \(index): \(trip.tripStatus.protoName), simulated \(early.tripStatus.protoName)…\(late.tripStatus.protoName)"
        )
        // What does not depend on the moment is exactly the simulator's.
        #expect(trip.pickupPoint == early.pickupPoint)
        #expect(trip.dropoffPoint == early.dropoffPoint)
        #expect(trip.intermediateDestinations == early.intermediateDestinations)
        #expect(trip.tripType == early.tripType)
        #expect(trip.numberOfPassengers == early.numberOfPassengers)
        // The snapshot was taken during the call (a finished trip's location stays where it ended).
        let serverTime = try #require(trip.lastLocation?.serverTime).unixTime
        if !isFinal(trip.tripStatus) {
          #expect(serverTime >= simulator.unixTime(atSimulatedSeconds: before) - 1e-3)
        }
        #expect(serverTime <= simulator.unixTime(atSimulatedSeconds: after) + 1e-3)
      }
      let stats = await fixture.sim.stats()
      #expect(stats.unaryCalls == 12)
      #expect(stats.notFound == 0 && stats.invalidArgument == 0 && stats.unauthenticated == 0)
    }
  }

  @Test func aFinishedTripIsExactlyTheSimulatorsFinalState() async throws {
    try await SimFixture.with(simConfiguration(speedup: 1, simulatedNow: 100_000)) { fixture in
      for index in [0, 3, 7] {
        for format in [PolylineFormatType.latLngListType, .encodedPolylineType] {
          let bytes = try await fixture.getTripBytes(fixture.simulator.tripName(index: index), format: format).get()
          let final = fixture.simulator.trip(index: index, atSimulatedSeconds: 1e9, routeFormat: format)
          #expect(isFinal(final.tripStatus))
          #expect(bytes == final.serializedBytes(), "trip \(index) in \(format.protoName)")
        }
      }
    }
  }

  @Test func routeFormatsFillRouteOrCurrentRouteSegment() async throws {
    // A trip en route to its pickup, two simulated minutes before it arrives.
    let index = try #require(
      (0..<serviceTripCount).first {
        let plan = planner.plan(index: $0)
        return plan.canceledAt == nil && plan.legs[0].duration > 240
      })
    let plan = planner.plan(index: index)
    try await SimFixture.with(simConfiguration(speedup: 1, simulatedNow: plan.stops[0].arrival - 120)) { fixture in
      let name = fixture.simulator.tripName(index: index)
      let list = try await fixture.getTrip(name, format: .latLngListType).get()
      let encoded = try await fixture.getTrip(name, format: .encodedPolylineType).get()
      let unspecified = try await fixture.getTrip(name, format: .unknownFormatType).get()
      for trip in [list, encoded, unspecified] { #expect(trip.tripStatus == .enrouteToPickup) }

      #expect(!list.route.isEmpty)
      #expect(list.currentRouteSegment.isEmpty)
      #expect(!list.remainingWaypoints.isEmpty)
      #expect(list.remainingWaypoints.allSatisfy { !$0.pathToWaypoint.isEmpty && $0.encodedPathToWaypoint.isEmpty })

      #expect(encoded.route.isEmpty)
      #expect(!encoded.currentRouteSegment.isEmpty)
      #expect(encoded.remainingWaypoints.allSatisfy { $0.pathToWaypoint.isEmpty && !$0.encodedPathToWaypoint.isEmpty })

      // The two formats carry the same leg (to polyline precision) and versions.
      let decoded = try #require(EncodedPolyline.decode(encoded.currentRouteSegment))
      #expect(decoded.count == list.route.count)
      for (a, b) in zip(decoded, list.route) {
        #expect(abs(a.latitude - b.latitude) <= 1e-5 && abs(a.longitude - b.longitude) <= 1e-5)
      }
      #expect(encoded.currentRouteSegmentVersion == list.currentRouteSegmentVersion)
      #expect(encoded.currentRouteSegmentTraffic != nil)

      // No format asked: a LatLng list, as Fleet Engine does.
      #expect(!unspecified.route.isEmpty && unspecified.currentRouteSegment.isEmpty)
    }
  }

  // The version tests run at speed-up 1 with half a minute or more to either side of every phase
  // boundary, so that all calls of a test fall within one leg however late it runs. What a client held
  // from an earlier leg is the simulator's snapshot then: byte for byte what GetTrip returned at that time
  // (see twoServersWithTheSameSeedAndStartTimeServeTheSameTrips and aFinishedTripIsExactlyTheSimulatorsFinalState).

  @Test func versionsSentBackLeaveOutWhatIsUnchanged() async throws {
    // A trip on its way to the pickup, a minute before it arrives.
    let index = try #require(
      (0..<serviceTripCount).first {
        let plan = planner.plan(index: $0)
        return plan.canceledAt == nil && plan.legs[0].duration > 150
      })
    let plan = planner.plan(index: index)
    try await SimFixture.with(simConfiguration(speedup: 1, simulatedNow: plan.stops[0].arrival - 60)) { fixture in
      let name = fixture.simulator.tripName(index: index)
      let first = try await fixture.getTrip(name).get()
      #expect(first.tripStatus == .enrouteToPickup)
      #expect(!first.route.isEmpty && first.currentRouteSegmentTraffic != nil && !first.remainingWaypoints.isEmpty)

      // Sending back the versions just received: the route, its traffic and the waypoints are left out…
      let unchanged = try await fixture.getTrip(name, versionsOf: first).get()
      #expect(unchanged.tripStatus == .enrouteToPickup)
      #expect(unchanged.route.isEmpty)
      #expect(unchanged.currentRouteSegmentTraffic == nil)
      #expect(unchanged.remainingWaypoints.isEmpty)
      // …while the versions and the live figures are still there.
      #expect(unchanged.currentRouteSegmentVersion == first.currentRouteSegmentVersion)
      #expect(unchanged.currentRouteSegmentTrafficVersion == first.currentRouteSegmentTrafficVersion)
      #expect(unchanged.remainingWaypointsVersion == first.remainingWaypointsVersion)
      #expect(unchanged.remainingWaypointsRouteVersion == first.remainingWaypointsRouteVersion)
      #expect(unchanged.lastLocation != nil && unchanged.remainingDistanceMeters != nil)
      #expect(unchanged.etaToFirstWaypoint == first.etaToFirstWaypoint)
      #expect(unchanged.currentRouteSegmentEndPoint == first.currentRouteSegmentEndPoint)

      // The same with the encoded route format, and with the versions of a snapshot from earlier in the leg.
      let unchangedEncoded = try await fixture.getTrip(name, format: .encodedPolylineType, versionsOf: first).get()
      #expect(unchangedEncoded.currentRouteSegment.isEmpty && unchangedEncoded.route.isEmpty)
      #expect(unchangedEncoded.remainingWaypoints.isEmpty && unchangedEncoded.currentRouteSegmentTraffic == nil)
      let earlier = fixture.simulator.trip(index: index, atSimulatedSeconds: plan.legs[0].departure + 1)
      #expect(earlier.tripStatus == .enrouteToPickup)
      let sinceEarlier = try await fixture.getTrip(name, versionsOf: earlier).get()
      #expect(sinceEarlier.route.isEmpty && sinceEarlier.remainingWaypoints.isEmpty)

      // Each version on its own: only what it covers is left out.
      var routeOnly = Trip()
      routeOnly.currentRouteSegmentVersion = first.currentRouteSegmentVersion
      let withoutRoute = try await fixture.getTrip(name, versionsOf: routeOnly).get()
      #expect(withoutRoute.route.isEmpty)
      #expect(withoutRoute.currentRouteSegmentTraffic == first.currentRouteSegmentTraffic)
      #expect(withoutRoute.remainingWaypoints == first.remainingWaypoints)

      var trafficOnly = Trip()
      trafficOnly.currentRouteSegmentTrafficVersion = first.currentRouteSegmentTrafficVersion
      let withoutTraffic = try await fixture.getTrip(name, versionsOf: trafficOnly).get()
      #expect(withoutTraffic.route == first.route)
      #expect(withoutTraffic.currentRouteSegmentTraffic == nil)

      // Only the waypoints' paths current: the waypoints come without paths or traffic.
      var pathsOnly = Trip()
      pathsOnly.remainingWaypointsRouteVersion = first.remainingWaypointsRouteVersion
      let pathless = try await fixture.getTrip(name, versionsOf: pathsOnly).get()
      #expect(pathless.route == first.route)
      #expect(pathless.remainingWaypoints.count == first.remainingWaypoints.count)
      #expect(
        pathless.remainingWaypoints.allSatisfy {
          $0.pathToWaypoint.isEmpty && $0.encodedPathToWaypoint.isEmpty && $0.trafficToWaypoint == nil
        })
      #expect(pathless.remainingWaypoints.map(\.location) == first.remainingWaypoints.map(\.location))
      #expect(pathless.remainingWaypoints.map(\.eta) == first.remainingWaypoints.map(\.eta))
    }
  }

  @Test func versionsFromAnEarlierLegBringBackWhatChanged() async throws {
    // A completed trip that waits at its pickup for at least 50 s and drives the next leg for over 3 minutes.
    let index = try #require(
      (0..<serviceTripCount).first {
        let plan = planner.plan(index: $0)
        return plan.canceledAt == nil && plan.stops[0].departure - plan.stops[0].arrival >= 50
          && plan.legs[1].duration > 180
      })
    let plan = planner.plan(index: index)
    /// What the client holds: the response of 30 s before the vehicle reached the pickup.
    func held(_ fixture: SimFixture, _ format: PolylineFormatType = .latLngListType) -> Trip {
      let held = fixture.simulator.trip(
        index: index, atSimulatedSeconds: plan.stops[0].arrival - 30, routeFormat: format)
      #expect(held.tripStatus == .enrouteToPickup && !held.remainingWaypoints.isEmpty)
      return held
    }

    // Waiting at the pickup: no route any more, and the waiting stop's path is gone, so the waypoints come
    // back (their stops are the same, but their paths changed).
    let waiting = (plan.stops[0].arrival + plan.stops[0].departure) / 2
    try await SimFixture.with(simConfiguration(speedup: 1, simulatedNow: waiting)) { fixture in
      let name = fixture.simulator.tripName(index: index)
      let held = held(fixture)
      let trip = try await fixture.getTrip(name, versionsOf: held).get()
      let fresh = try await fixture.getTrip(name).get()
      #expect(trip.tripStatus == .arrivedAtPickup)
      #expect(trip.route.isEmpty && trip.currentRouteSegmentTraffic == nil)
      #expect(trip.remainingWaypointsRouteVersion != held.remainingWaypointsRouteVersion)
      #expect(
        trip.remainingWaypoints.count == held.remainingWaypoints.count,
        "the waypoints' paths changed at the arrival, but the waypoints were left out")
      let sameAsFresh = trip.remainingWaypoints == fresh.remainingWaypoints
      #expect(sameAsFresh, "the waypoints differ from those of a GetTrip without versions")
      let stop = try #require(trip.remainingWaypoints.first)
      #expect(stop.distanceMeters?.value == 0 && stop.pathToWaypoint.isEmpty && stop.trafficToWaypoint == nil)
      #expect(trip.remainingWaypoints.dropFirst().allSatisfy { !$0.pathToWaypoint.isEmpty })
      // With the waiting trip's versions sent back, they are left out again.
      let again = try await fixture.getTrip(name, versionsOf: trip).get()
      #expect(again.tripStatus == .arrivedAtPickup && again.remainingWaypoints.isEmpty)
    }

    // On the next leg: the new route, its traffic and the waypoints all come back, with newer versions.
    let driving = plan.stops[0].departure + 60
    try await SimFixture.with(simConfiguration(speedup: 1, simulatedNow: driving)) { fixture in
      let name = fixture.simulator.tripName(index: index)
      for format in [PolylineFormatType.latLngListType, .encodedPolylineType] {
        let held = held(fixture, format)
        let trip = try await fixture.getTrip(name, format: format, versionsOf: held).get()
        let fresh = try await fixture.getTrip(name, format: format).get()
        #expect(isEnroute(trip.tripStatus) && trip.tripStatus != .enrouteToPickup, "\(trip.tripStatus.protoName)")
        let sameRoute = trip.route == fresh.route && trip.currentRouteSegment == fresh.currentRouteSegment
        #expect(sameRoute, "the route differs from that of a GetTrip without versions")
        #expect(!trip.route.isEmpty || !trip.currentRouteSegment.isEmpty)
        #expect(trip.currentRouteSegmentTraffic != nil)
        #expect(trip.currentRouteSegmentTraffic == fresh.currentRouteSegmentTraffic)
        let sameWaypoints = trip.remainingWaypoints == fresh.remainingWaypoints
        #expect(!trip.remainingWaypoints.isEmpty && sameWaypoints)
        #expect(seconds(trip.currentRouteSegmentVersion)! > seconds(held.currentRouteSegmentVersion)!)
        #expect(seconds(trip.currentRouteSegmentTrafficVersion)! > seconds(held.currentRouteSegmentTrafficVersion)!)
        #expect(seconds(trip.remainingWaypointsVersion)! > seconds(held.remainingWaypointsVersion)!)
        #expect(seconds(trip.remainingWaypointsRouteVersion)! > seconds(held.remainingWaypointsRouteVersion)!)
        // The new leg's versions sent back leave them out again.
        let again = try await fixture.getTrip(name, format: format, versionsOf: trip).get()
        #expect(again.route.isEmpty && again.currentRouteSegment.isEmpty)
        #expect(again.currentRouteSegmentTraffic == nil && again.remainingWaypoints.isEmpty)
      }
    }
  }

  // MARK: Streaming GetTrip

  @Test func streamsStartFullThenCarryChangesAndEndOKAtTheFinalState() async throws {
    // The completed trip with the shortest way from the pickup to the end; follow it from its arrival at the
    // pickup (half a second of wall-clock time before it gets there), so the streams see legs change, for about
    // 3 s of wall-clock time.
    let index = try #require(
      (0..<serviceTripCount).filter { planner.plan(index: $0).canceledAt == nil }.min {
        let a = planner.plan(index: $0)
        let b = planner.plan(index: $1)
        return a.finishTime - a.stops[0].arrival < b.finishTime - b.stops[0].arrival
      })
    let plan = planner.plan(index: index)
    let speedup = max((plan.finishTime - plan.stops[0].arrival) / 2.5, 60)
    let start = plan.stops[0].arrival - 0.5 * speedup
    try await SimFixture.with(simConfiguration(speedup: speedup, simulatedNow: start)) { fixture in
      let name = fixture.simulator.tripName(index: index)
      // Both calls go out at once, whenever this task next gets a thread.
      let listStream = fixture.stream(name, format: .latLngListType)
      let encodedStream = fixture.stream(name, format: .encodedPolylineType)
      async let list = SimFixture.collect(listStream)
      async let encoded = SimFixture.collect(encodedStream)
      let streams = try await [(PolylineFormatType.latLngListType, list), (.encodedPolylineType, encoded)]
      var received = 0
      for (format, followed) in streams {
        let updates = followed.updates
        received += updates.count
        #expect(followed.error == nil, "the \(format.protoName) stream ended \(String(describing: followed.error))")
        #expect(updates.count >= 5, "\(updates.count) updates")
        #expect(updates.map(\.sequence) == (0..<updates.count).map { UInt64($0 + 1) })
        guard let first = updates.first else { continue }
        #expect(first.fullTrip && first.updatedFields.isEmpty)
        #expect(first.trip?.name == name)
        var state = Trip()
        var statuses: [TripStatus] = []
        var lastSendTime = 0.0
        for (position, update) in updates.enumerated() {
          let sendTime = try #require(update.sendTime).unixTime
          #expect(sendTime >= lastSendTime)
          lastSendTime = sendTime
          let previous = state
          state.apply(update)
          if position > 0 {
            #expect(!update.fullTrip)
            #expect(!update.updatedFields.isEmpty)
            #expect(update.updatedFields == update.updatedFields.sorted())
            #expect(Set(update.updatedFields).count == update.updatedFields.count)
            // The partial trip holds the listed fields only, and they are exactly the ones that changed.
            let partial = update.trip ?? Trip()
            #expect(partial == partial.projected(onto: update.updatedFields))
            #expect(state.changedFields(from: previous) == update.updatedFields)
          }
          if statuses.last != state.tripStatus { statuses.append(state.tripStatus) }
          // The stream ends with the final state, not before and not after.
          #expect(isFinal(state.tripStatus) == (position == updates.count - 1), "update \(position + 1)")
        }
        #expect(statuses.count >= 3, "statuses seen: \(statuses.map(\.protoName))")
        let final = fixture.simulator.trip(index: index, atSimulatedSeconds: 1e9, routeFormat: format)
        #expect(state.serializedBytes() == final.serializedBytes(), "\(format.protoName) state at the end")
      }
      #expect(
        await pollUntil {
          let stats = await fixture.sim.stats()
          return stats.streamsOpen == 0 && stats.streamsCompleted == 2
        })
      let stats = await fixture.sim.stats()
      #expect(stats.streamsStarted == 2)
      #expect(stats.updatesSent == received)
      #expect(stats.unaryCalls == 0)
    }
  }

  @Test func aStreamOfAFinishedTripIsOneFullUpdate() async throws {
    try await SimFixture.with(simConfiguration(speedup: 1, simulatedNow: 100_000)) { fixture in
      let followed = try await fixture.follow(fixture.simulator.tripName(index: 5))
      #expect(followed.error == nil)
      #expect(followed.updates.count == 1)
      let update = try #require(followed.updates.first)
      #expect(update.fullTrip && update.sequence == 1)
      #expect(update.trip == fixture.simulator.trip(index: 5, atSimulatedSeconds: 1e9))
      let stats = await fixture.sim.stats()
      #expect(stats.streamsStarted == 1 && stats.streamsCompleted == 1 && stats.updatesSent == 1)
      #expect(stats.streamsOpen == 0)
    }
  }

  @Test func aCancelledStreamIsNoLongerOpen() async throws {
    try await SimFixture.with(simConfiguration(speedup: 1, simulatedNow: 100)) { fixture in
      let response = fixture.stream(fixture.simulator.tripName(index: 2))
      var iterator = response.makeAsyncIterator()
      let first = try #require(try await iterator.next())
      #expect(try TripUpdate(serializedBytes: first).fullTrip)
      #expect(await pollUntil { await fixture.sim.stats().streamsOpen == 1 })
      response.cancel()
      #expect(await pollUntil { await fixture.sim.stats().streamsOpen == 0 })
      let stats = await fixture.sim.stats()
      #expect(stats.streamsStarted == 1 && stats.streamsCompleted == 0)
      // The server keeps serving.
      #expect(await fixture.unaryCode(fixture.simulator.tripName(index: 2)) == .ok)
    }
  }

  // MARK: Auth

  @Test func everyAuthErrorClassGetsItsStatusAndIsCounted() async throws {
    let configuration = simConfiguration(simulatedNow: 200, auth: .hs256(secret: serviceSecret))
    try await SimFixture.with(configuration) { fixture in
      let trip1 = fixture.simulator.tripName(index: 1)
      let unknown = "providers/demo/trips/trip-\(serviceTripCount)"
      let otherProvider = "providers/other/trips/trip-1"
      let malformed = "providers/demo/trip-1"
      let forTrip1 = bearer(try hs256Token(tripID: "trip-1"))
      let forTrip2 = bearer(try hs256Token(tripID: "trip-2"))
      let forAll = bearer(try hs256Token(tripID: "*"))
      let wrongSecretToken = try hs256Token(
        tripID: "trip-1", secret: Array("another-secret-of-at-least-32-bytes!!".utf8))
      let expired = bearer(try hs256Token(tripID: "trip-1", expiresIn: -3600))
      let noTripClaim = bearer(try hs256Token(tripID: nil))

      let cases: [(String, String, String?, GRPCStatusCode)] = [
        ("missing header", trip1, nil, .unauthenticated),
        ("not a Bearer token", trip1, "Basic dXNlcjpwYXNz", .unauthenticated),
        ("garbage token", trip1, "Bearer not.a.jwt", .unauthenticated),
        ("wrong secret", trip1, bearer(wrongSecretToken), .unauthenticated),
        ("expired", trip1, expired, .unauthenticated),
        ("no tripid claim", trip1, noTripClaim, .unauthenticated),
        ("another trip's token", trip1, forTrip2, .permissionDenied),
        ("the trip's token", trip1, forTrip1, .ok),
        ("a token for every trip", trip1, forAll, .ok),
        ("malformed name", malformed, forAll, .invalidArgument),
        ("unknown trip", unknown, forAll, .notFound),
        ("other provider", otherProvider, forTrip1, .notFound),
        // The order of the checks: token, then the name's form, then the token's trip, then existence.
        ("malformed name without a token", malformed, nil, .unauthenticated),
        ("malformed name with another trip's token", malformed, forTrip2, .invalidArgument),
        ("unknown trip with another trip's token", unknown, forTrip2, .permissionDenied),
        ("unknown trip with an expired token", unknown, expired, .unauthenticated),
      ]
      for (label, name, authorization, expected) in cases {
        #expect(await fixture.unaryCode(name, authorization: authorization) == expected, "unary: \(label)")
      }
      // The streaming GetTrip goes through the same checks.
      let streamCases: [(String, String, String?, GRPCStatusCode)] = [
        ("missing header", trip1, nil, .unauthenticated),
        ("wrong secret", trip1, bearer(wrongSecretToken), .unauthenticated),
        ("another trip's token", trip1, forTrip2, .permissionDenied),
        ("malformed name", malformed, forAll, .invalidArgument),
        ("unknown trip", unknown, forTrip1, .permissionDenied),
        ("unknown trip", unknown, forAll, .notFound),
      ]
      for (label, name, authorization, expected) in streamCases {
        #expect(try await fixture.streamCode(name, authorization: authorization) == expected, "stream: \(label)")
      }
      // A granted stream delivers the trip.
      var iterator = fixture.stream(trip1, authorization: forTrip1).makeAsyncIterator()
      let first = try #require(try await iterator.next())
      #expect(try TripUpdate(serializedBytes: first).trip?.name == trip1)

      // The error texts never carry the token.
      if case .failure(let error) = await fixture.getTripBytes(trip1, authorization: bearer(wrongSecretToken)) {
        #expect(!error.message.contains(wrongSecretToken))
        #expect(!error.message.isEmpty)
      }

      let stats = await fixture.sim.stats()
      #expect(stats.unauthenticated == 8 + 2 + 1)
      #expect(stats.permissionDenied == 2 + 2)
      #expect(stats.invalidArgument == 2 + 1)
      #expect(stats.notFound == 2 + 1)
      #expect(stats.unaryCalls == cases.count + 1)
      #expect(stats.streamsStarted == streamCases.count + 1)
      #expect(stats.injectedFailures == 0)
    }
  }

  @Test func withoutAuthEveryCallIsAdmittedButNamesAreStillChecked() async throws {
    try await SimFixture.with(simConfiguration(simulatedNow: 200)) { fixture in
      #expect(await fixture.unaryCode("providers/demo/trips/trip-1") == .ok)
      #expect(await fixture.unaryCode("providers/demo/trips/trip-1", authorization: "Bearer garbage") == .ok)
      #expect(await fixture.unaryCode("trips/trip-1") == .invalidArgument)
      #expect(await fixture.unaryCode("providers/demo/trips/trip-01") == .notFound)
      #expect(await fixture.unaryCode("providers/demo/trips/trip-\(serviceTripCount)") == .notFound)
      #expect(await fixture.unaryCode("providers/other/trips/trip-1") == .notFound)
      let stats = await fixture.sim.stats()
      #expect(stats.unaryCalls == 6 && stats.invalidArgument == 1 && stats.notFound == 3)
      #expect(stats.unauthenticated == 0 && stats.permissionDenied == 0)
    }
  }

  // MARK: Faults

  @Test func injectedFailuresComeBeforeAuthAndAreCounted() async throws {
    let faults = FaultInjection(failureRate: 1, failureCode: .resourceExhausted)
    let configuration = simConfiguration(simulatedNow: 200, auth: .hs256(secret: serviceSecret), faults: faults)
    try await SimFixture.with(configuration) { fixture in
      let name = fixture.simulator.tripName(index: 1)
      let token = bearer(try hs256Token(tripID: "*"))
      #expect(await fixture.unaryCode(name, authorization: token) == .resourceExhausted)
      #expect(await fixture.unaryCode(name) == .resourceExhausted)
      #expect(await fixture.unaryCode("not a name", authorization: token) == .resourceExhausted)
      let followed = try await fixture.follow(name, authorization: token)
      #expect(followed.updates.isEmpty)
      #expect(followed.error?.code == .resourceExhausted)
      #expect(followed.error?.message == "injected failure")
      #expect(try await fixture.streamCode(name) == .resourceExhausted)
      let stats = await fixture.sim.stats()
      #expect(stats.injectedFailures == 5)
      #expect(stats.unaryCalls == 3 && stats.streamsStarted == 2)
      #expect(stats.unauthenticated == 0 && stats.invalidArgument == 0 && stats.updatesSent == 0)
    }
  }

  @Test func streamResetsCancelStreamsAfterTheFirstUpdate() async throws {
    // Two trips under way for minutes yet: every tick changes them.
    let indexes = (0..<serviceTripCount).filter { !planner.isFinished(index: $0, atSimulatedSeconds: 400) }.prefix(2)
    try #require(indexes.count == 2)
    let configuration = simConfiguration(speedup: 1, simulatedNow: 200, faults: FaultInjection(streamResetRate: 1))
    try await SimFixture.with(configuration) { fixture in
      let first = fixture.stream(fixture.simulator.tripName(index: indexes.first!))
      let second = fixture.stream(fixture.simulator.tripName(index: indexes.last!))
      async let a = SimFixture.collect(first)
      async let b = SimFixture.collect(second)
      for followed in try await [a, b] {
        #expect(followed.updates.count == 1)
        #expect(followed.updates.first?.fullTrip == true)
        #expect(followed.error?.code == .cancelled)
      }
      // Unary calls are not reset.
      #expect(await fixture.unaryCode(fixture.simulator.tripName(index: indexes.first!)) == .ok)
      #expect(await pollUntil { await fixture.sim.stats().streamsOpen == 0 })
      let stats = await fixture.sim.stats()
      #expect(stats.injectedResets == 2)
      #expect(stats.streamsStarted == 2 && stats.streamsCompleted == 0 && stats.updatesSent == 2)
    }
  }

  @Test func goAwayAndDropsAreCountedAndClientsComeBack() async throws {
    try await SimFixture.with(simConfiguration(speedup: 1, simulatedNow: 200)) { fixture in
      let name = fixture.simulator.tripName(index: 1)
      #expect(await fixture.unaryCode(name) == .ok)
      fixture.sim.sendGoAway()
      #expect(await pollUntil { await fixture.unaryCode(name) == .ok })
      #expect(await fixture.sim.stats().injectedGoAways == 1)

      // A stream open while the connections are dropped ends with an error; the channel reconnects.
      var iterator = fixture.stream(name).makeAsyncIterator()
      _ = try #require(try await iterator.next())
      #expect(await pollUntil { await fixture.sim.stats().streamsOpen == 1 })
      fixture.sim.dropConnections()
      let ending = await readToTheEnd(&iterator)
      #expect(ending?.code == .unavailable, "the stream ended \(String(describing: ending))")
      #expect(await pollUntil { await fixture.sim.stats().streamsOpen == 0 })
      #expect(await pollUntil { await fixture.unaryCode(name) == .ok })
      let stats = await fixture.sim.stats()
      #expect(stats.injectedDrops == 1)
      #expect(stats.injectedGoAways == 1)
    }
  }

  @Test func periodicGoAwaysAndDropsAreCounted() async throws {
    let faults = FaultInjection(goAwayInterval: .milliseconds(60), dropInterval: .milliseconds(90))
    try await SimFixture.with(simConfiguration(faults: faults)) { fixture in
      #expect(
        await pollUntil(timeout: .seconds(30)) {
          let stats = await fixture.sim.stats()
          return stats.injectedGoAways >= 2 && stats.injectedDrops >= 2
        })
    }
  }

  @Test func addedLatencyDelaysAndCountsEveryCall() async throws {
    let configuration = simConfiguration(faults: FaultInjection(addedLatency: .milliseconds(200)))
    try await SimFixture.with(configuration) { fixture in
      let clock = ContinuousClock()
      let started = clock.now
      #expect(await fixture.unaryCode(fixture.simulator.tripName(index: 1)) == .ok)
      #expect(clock.now - started >= .milliseconds(200))
      #expect(await fixture.unaryCode("providers/demo/trips/nope") == .notFound)
      let stats = await fixture.sim.stats()
      #expect(stats.delayedCalls == 2)
      #expect(stats.unaryCalls == 2 && stats.notFound == 1)
    }
  }

  // MARK: Determinism

  @Test func twoServersWithTheSameSeedAndStartTimeServeTheSameTrips() async throws {
    let configuration = simConfiguration(speedup: 1, simulatedNow: 100_000)
    let (first, second) = try await SimFixture.with(configuration) { a in
      try await SimFixture.with(configuration) { b in
        var first: [[UInt8]] = []
        var second: [[UInt8]] = []
        for index in [0, 3, 9] {
          let name = a.simulator.tripName(index: index)
          first.append(try await a.getTripBytes(name).get())
          second.append(try await b.getTripBytes(name).get())
          #expect(
            try Trip(serializedBytes: first.last!).tripStatus
              == a.simulator.trip(index: index, atSimulatedSeconds: 1e9).tripStatus)
        }
        // The simulations agree at any time, not only once trips are over.
        for time in [-5.0, 45, 333.3, 1234.5] {
          #expect(
            a.simulator.trip(index: 3, atSimulatedSeconds: time).serializedBytes()
              == b.simulator.trip(index: 3, atSimulatedSeconds: time).serializedBytes())
        }
        return (first, second)
      }
    }
    #expect(first == second)
    // A later server with the same flags serves them too; another seed serves other trips.
    let third = try await SimFixture.with(configuration) { c in
      try await c.getTripBytes(c.simulator.tripName(index: 3)).get()
    }
    #expect(third == first[1])
    var reseeded = configuration
    reseeded.simulation.seed = serviceSeed + 1
    let other = try await SimFixture.with(reseeded) { c in
      try await c.getTripBytes(c.simulator.tripName(index: 3)).get()
    }
    #expect(other != first[1])
  }
}
