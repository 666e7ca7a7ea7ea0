// Tests/JourneySharingTests/DecodeBudgetTests.swift - a 4 MiB trip of 1.4 million empty waypoints
//
// Against ScriptedFleetEngine (a server whose answers the test writes): the first answer is the hostile
// message of issue 13, a trip holding nothing but empty remaining_waypoints, as many as 4 MiB holds.
// TripLimits apply while it is decoded, so the follower stops at the 101st waypoint: subscribers get
// RESOURCE_EXHAUSTED and the next answer is followed (in memory, and over a real socket); over the socket,
// in a pass of its own, the process's peak memory stays far below the ~360 MiB that decoding all of them took.

import FleetEngineMessages
import Foundation
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// As many empty `remaining_waypoints` (field 16: 82 01 00) as fit in `size` bytes, encoded as a Trip, or as a
/// TripUpdate with `full_trip` set holding that trip when `update` is set.
private func emptyWaypointsMessage(update: Bool, size: Int = 4 << 20) -> [UInt8] {
  let waypoints = (size - 8) / 3
  var trip: [UInt8] = []
  trip.reserveCapacity(waypoints * 3)
  for _ in 0..<waypoints { trip += [0x82, 0x01, 0x00] }
  guard update else { return trip }
  var header: [UInt8] = [0x10, 0x01, 0x0A]  // TripUpdate.full_trip = true (field 2); trip (field 1), then its length
  var length = trip.count
  while length >= 0x80 {
    header.append(UInt8(truncatingIfNeeded: length) | 0x80)
    length >>= 7
  }
  header.append(UInt8(length))
  return header + trip
}

/// VmHWM (peak resident memory, KiB) from /proc/self/status.
private func peakMemoryKiB() -> Int? {
  guard let file = fopen("/proc/self/status", "r") else { return nil }
  defer { fclose(file) }
  var line = [CChar](repeating: 0, count: 256)
  while fgets(&line, Int32(line.count), file) != nil {
    let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if text.hasPrefix("VmHWM:") { return Int(text.dropFirst(6).filter(\.isNumber)) }
  }
  return nil
}

/// Resets VmHWM to the memory resident now (writes 5 to /proc/self/clear_refs); whether it could.
private func resetPeakMemory() -> Bool {
  guard let file = fopen("/proc/self/clear_refs", "w") else { return false }
  defer { fclose(file) }
  return fputs("5", file) >= 0
}

/// The hostile-waypoints check, written once for both fixtures.
enum DecodeBudgetChecks {
  /// Follows a trip whose first answer is 4 MiB of empty waypoints, in `mode`, over `transport`; with
  /// `measuringMemory`, also checks that the process's peak memory stayed bounded.
  static func hostileWaypoints(
    _ transport: FixtureTransport, mode: JourneySharingConfiguration.FetchMode, measuringMemory: Bool
  ) async throws {
    let valid = scriptedTrip()
    let hostile = emptyWaypointsMessage(update: mode == .stream)
    #expect(hostile.count <= 4 << 20)
    try await ScriptedFleetEngine.with(
      transport,
      script: { path, number in
        let streaming = path == FleetEngineMethods.streamingGetTrip
        if number == 1 { return ScriptedReply(messages: [hostile], status: streaming ? nil : .ok) }
        return streaming ? .stream(valid) : .trip(valid)
      },
      client: { scriptedClient($0, mode: mode) }
    ) { engine, fixture in
      let reset = measuringMemory ? resetPeakMemory() : false
      let before = measuringMemory ? try #require(peakMemoryKiB()) : 0
      let recorder = RecordingSubscriber()
      let model = fixture.services.tripService.tripModel(forTripName: scriptedTripName)
      model.register(recorder)
      #expect(await fixture.wait { !recorder.trips().isEmpty })
      let growth = measuringMemory ? try #require(peakMemoryKiB()) - before : 0
      let errors = recorder.errors()
      #expect(errors.count == 1, "\(errors)")
      #expect(errors.first?.domain == "io.grpc")
      #expect(errors.first?.code == GRPCStatusCode.resourceExhausted.rawValue, "\(errors)")
      // Named by the limit, and stopped at it: the count is the limit's, not the 1.4 million the message holds.
      #expect(
        errors.first?.message.contains("more than 100 remaining_waypoints, more than TripLimits.maxWaypoints") == true,
        "\(errors)")
      #expect(recorder.trips().map(\.trip) == [heldTrip(valid)])
      #expect(await model.modelState() == .active)
      let path = mode == .stream ? FleetEngineMethods.streamingGetTrip : FleetEngineMethods.unaryGetTrip
      #expect(engine.calls(path) >= 2)
      if measuringMemory {
        // The 4 MiB message is held by the server and the client while it is sent; decoding all of it cost ~360 MiB.
        #expect(growth < 128 << 10, "peak memory grew by \(growth) KiB (peak reset: \(reset))")
      }
      model.unregisterSubscriber(recorder)
    }
  }
}

@Suite("Decode budgets (in memory)", .timeLimit(.minutes(2)))
struct DecodeBudgetTests {
  @Test(
    "4 MiB of empty waypoints: RESOURCE_EXHAUSTED while decoding, the next answer followed",
    arguments: [JourneySharingConfiguration.FetchMode.stream, .poll])
  func hostileWaypoints(mode: JourneySharingConfiguration.FetchMode) async throws {
    try await DecodeBudgetChecks.hostileWaypoints(.inMemory, mode: mode, measuringMemory: false)
  }
}

/// Measures the process's peak memory (VmHWM), which every test running at the same time adds to: `make test`
/// runs this suite in a pass of its own.
@Suite("Decode budgets over a socket, peak memory (a pass of its own)", .serialized, .timeLimit(.minutes(2)))
struct DecodeBudgetPeakMemoryTests {
  @Test(
    "4 MiB of empty waypoints: RESOURCE_EXHAUSTED while decoding, peak memory bounded, the next answer followed",
    arguments: [JourneySharingConfiguration.FetchMode.stream, .poll])
  func hostileWaypoints(mode: JourneySharingConfiguration.FetchMode) async throws {
    try await DecodeBudgetChecks.hostileWaypoints(.sockets, mode: mode, measuringMemory: true)
  }
}
