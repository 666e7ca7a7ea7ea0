// Tests/JourneySharingTests/TripLimitTests.swift - TripLimits against a server sending trips above them, and the defaults
//
// Against ScriptedFleetEngine (a server whose answers the test writes, in memory on a virtual clock): a trip
// above TripLimits is refused with RESOURCE_EXHAUSTED and never replaces the state held, and following goes
// on; the configuration's defaults are the safe ones (the default transport is the real HTTP/2 one).

import FleetEngineMessages
import Foundation
import GRPCProtocol
import HTTP2Session
import HTTP2Transport
import Logging
import TestSupport
import Testing

@testable import JourneySharing

/// A way for a trip to go over the default limits (20,000 route points; 100 entries per list of stops).
enum TripExcess: String, CaseIterable, Sendable, CustomTestStringConvertible {
  case routeList, encodedCurrentSegment, waypointPathsTogether, segmentTraffic
  case remainingWaypoints, vehicleWaypoints, intermediateDestinations

  var testDescription: String { rawValue }

  /// `trip`, changed to go over the limit this way.
  func applied(to trip: Trip) -> Trip {
    var trip = trip
    switch self {
    case .routeList:
      trip.route = LatLngPath(linePoints(20_001))
    case .encodedCurrentSegment:
      trip.currentRouteSegment = EncodedPolyline.encode(linePoints(20_001))
    case .waypointPathsTogether:
      // Three paths of 7,000 points: each below the limit, together above it.
      let waypoint = trip.remainingWaypoints[0]
      trip.remainingWaypoints = (0..<3).map { index in
        var copy = waypoint
        copy.pathToWaypoint = LatLngPath(linePoints(7_000, start: Double(index * 7_000)))
        return copy
      }
    case .segmentTraffic:
      var traffic = ConsumableTrafficPolyline()
      traffic.speedReadingInterval = (0..<20_001).map { index in
        var interval = SpeedReadingInterval()
        interval.startPolylinePointIndex = Int32(index)
        interval.endPolylinePointIndex = Int32(index + 1)
        interval.speed = .normal
        return interval
      }
      trip.currentRouteSegmentTraffic = traffic
    case .remainingWaypoints:
      trip.remainingWaypoints = Array(repeating: trip.remainingWaypoints[0], count: 101)
    case .vehicleWaypoints:
      trip.vehicleWaypoints = Array(repeating: trip.remainingWaypoints[0], count: 101)
    case .intermediateDestinations:
      trip.intermediateDestinations = Array(repeating: trip.pickupPoint!, count: 101)
    }
    return trip
  }

  /// The streamed update that turns `from` into `to`: only the changed fields.
  static func delta(from: Trip, to: Trip, sequence: UInt64) -> TripUpdate {
    var update = TripUpdate()
    let changed = to.changedFields(from: from)
    update.trip = to.projected(onto: changed)
    update.updatedFields = changed
    update.sequence = sequence
    return update
  }
}

@Suite("Trip limits (in memory)", .timeLimit(.minutes(2)))
struct TripLimitTests {
  @Test(
    "A streamed update that takes the trip over a limit: RESOURCE_EXHAUSTED, the held trip stays, the stream is restarted",
    arguments: TripExcess.allCases)
  func streamedTripOverTheLimit(_ excess: TripExcess) async throws {
    let valid = scriptedTrip()
    let tooBig = excess.applied(to: valid)
    try await ScriptedFleetEngine.with(
      .inMemory,
      script: { _, number in
        // First stream: the valid trip, then the update that goes over the limit. Later: open, silent.
        number == 1
          ? .stream(valid, then: [TripExcess.delta(from: valid, to: tooBig, sequence: 2)])
          : ScriptedReply(messages: [], status: nil)
      },
      client: { scriptedClient($0, mode: .stream) }
    ) { engine, fixture in
      let services = fixture.services
      let recorder = RecordingSubscriber()
      let model = services.tripService.tripModel(forTripName: scriptedTripName)
      model.register(recorder)
      #expect(await fixture.wait { !recorder.errors().isEmpty })
      let error = try #require(recorder.errors().first)
      #expect(
        error.domain == "io.grpc" && error.code == GRPCStatusCode.resourceExhausted.rawValue, "\(error.description)")
      #expect(error.message.contains("TripLimits.max"), "\(error.message)")
      // Following goes on: the refused stream was cancelled and a new one started.
      #expect(await fixture.wait { engine.calls(FleetEngineMethods.streamingGetTrip) >= 2 })
      #expect(await fixture.wait { engine.cancellations >= 1 })
      // The held state is the last trip accepted; nothing of the refused one reached a subscriber.
      #expect(await model.currentSnapshot()?.trip == heldTrip(valid))
      #expect(recorder.trips().map(\.trip) == [heldTrip(valid)])
      #expect(await model.modelState() == .active)
      model.unregisterSubscriber(recorder)
    }
  }

  @Test(
    "A polled trip over a limit: RESOURCE_EXHAUSTED, never delivered; the next poll's trip is",
    arguments: TripExcess.allCases)
  func polledTripOverTheLimit(_ excess: TripExcess) async throws {
    let first = scriptedTrip(step: 0)
    let later = scriptedTrip(step: 1)
    let tooBig = excess.applied(to: first)
    try await ScriptedFleetEngine.with(
      .inMemory,
      script: { _, number in
        switch number {
        case 1: .trip(first)
        case 2: .trip(tooBig)
        default: .trip(later)
        }
      },
      client: { scriptedClient($0, mode: .poll) }
    ) { engine, fixture in
      let services = fixture.services
      let recorder = RecordingSubscriber()
      let model = services.tripService.tripModel(forTripName: scriptedTripName)
      model.register(recorder)
      #expect(await fixture.wait { recorder.trips().count >= 2 })
      let events = recorder.events().filter { if case .modelState = $0 { false } else { $0.isTrip || isError($0) } }
      // In order: the first trip, the refusal, the later trip.
      #expect(events.count == 3, "\(events)")
      if events.count == 3 {
        #expect(tripOf(events[0]) == heldTrip(first))
        #expect(errorOf(events[1])?.code == GRPCStatusCode.resourceExhausted.rawValue, "\(events[1])")
        #expect(errorOf(events[1])?.message.contains("TripLimits.max") == true, "\(events[1])")
        #expect(tripOf(events[2]) == heldTrip(later))
      }
      #expect(engine.calls(FleetEngineMethods.unaryGetTrip) >= 3)
      model.unregisterSubscriber(recorder)
    }
  }

  @Test("After a refused stream the next stream's whole trip is taken: trip, error, trip")
  func streamingRecoversAfterARefusal() async throws {
    let valid = scriptedTrip(step: 0)
    let later = scriptedTrip(step: 2)
    let tooBig = TripExcess.routeList.applied(to: valid)
    try await ScriptedFleetEngine.with(
      .inMemory,
      script: { _, number in
        number == 1 ? .stream(valid, then: [TripExcess.delta(from: valid, to: tooBig, sequence: 2)]) : .stream(later)
      },
      client: { scriptedClient($0, mode: .stream) }
    ) { _, fixture in
      let services = fixture.services
      let recorder = RecordingSubscriber()
      let model = services.tripService.tripModel(forTripName: scriptedTripName)
      model.register(recorder)
      #expect(await fixture.wait { recorder.trips().count >= 2 })
      #expect(recorder.trips().map(\.trip) == [heldTrip(valid), heldTrip(later)])
      #expect(recorder.errors().map(\.code) == [GRPCStatusCode.resourceExhausted.rawValue])
      model.unregisterSubscriber(recorder)
    }
  }

  @Test("Raised limits in JourneySharingConfiguration.limits let the same trips through")
  func raisedLimitsAcceptLargerTrips() async throws {
    let trips = TripExcess.allCases.map { $0.applied(to: scriptedTrip()) }
    try await ScriptedFleetEngine.with(
      .inMemory,
      script: { _, number in .trip(trips[min(number, trips.count) - 1]) },
      client: { base in
        var configuration = scriptedClient(base, mode: .poll)
        configuration.limits = TripLimits(maxRoutePoints: 50_000, maxWaypoints: 200)
        return configuration
      }
    ) { engine, fixture in
      let services = fixture.services
      let recorder = RecordingSubscriber()
      let model = services.tripService.tripModel(forTripName: scriptedTripName)
      model.register(recorder)
      #expect(await fixture.wait { engine.calls(FleetEngineMethods.unaryGetTrip) > trips.count })
      #expect(recorder.errors().isEmpty, "\(recorder.errors())")
      #expect(await model.currentSnapshot()?.trip == heldTrip(trips.last!))
      model.unregisterSubscriber(recorder)
    }
  }
}

@Suite("Safe defaults (the real HTTP/2 transport, no server)")
struct SafeConfigurationTests {
  @Test("The defaults: verified TLS, 4 MiB messages, 16 KiB header lists, 20,000 route points, 100 stops per list")
  func defaults() throws {
    let configuration = JourneySharingConfiguration(host: "fleetengine.googleapis.com", port: 443, providerID: "p")
    #expect(configuration.security == .tls(.default))
    // The transport the configuration makes: a verified TLS channel with the same limits.
    let channel = try #require(try makeDefaultTransport(configuration) as? GRPCChannel)
    #expect(channel.configuration.security == .tls(.default))
    #expect(channel.configuration.maxReceiveMessageSize == 4 << 20)
    #expect(channel.configuration.http2Settings.maxHeaderListSize == UInt32(16_384))
    channel.close()
    #expect(configuration.limits == .default)
    #expect(TripLimits.default.maxRoutePoints == 20_000)
    #expect(TripLimits.default.maxWaypoints == 100)
  }

  @Test("Services made with plaintext log one notice on the configured logger; with TLS, none")
  func plaintextServicesLogANotice() async throws {
    let capture = LogCapture()
    for (label, security) in [("plain", JourneySharingConfiguration.Security.plaintext), ("tls", .tls(.default))] {
      let configuration = JourneySharingConfiguration(
        host: "127.0.0.1", port: 1, security: security, providerID: "p", logger: capture.logger(label))
      let services = try JourneySharingServices(configuration: configuration)
      await services.shutdown()
    }
    let notices = capture.all.filter { $0.level >= .notice }
    #expect(notices.count == 1, "\(capture.all)")
    #expect(notices.first?.label == "plain")
    #expect(notices.first?.message.contains("plaintext") == true)
  }
}

private func isError(_ event: Recorded) -> Bool {
  if case .error = event { return true }
  return false
}

private func tripOf(_ event: Recorded) -> Trip? {
  if case .trip(let trip, _) = event { return trip }
  return nil
}

private func errorOf(_ event: Recorded) -> RecordedError? {
  if case .error(let error) = event { return error }
  return nil
}
