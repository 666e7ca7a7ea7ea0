// Tests/FleetEngineMessagesTests/DecodingBudgetTests.swift - trip limits enforced while a trip is decoded
//
// WireDecodingOptions.trip(maxRoutePoints:maxStops:) bounds a decoded trip's lists as they are decoded. The
// hostile input of issue 13 (one 4 MiB update of 1.4 million empty waypoints) used to cost about 280 MiB of
// peak memory before any limit was checked; decoded with the trip options it fails after the 100th waypoint.

import FleetEngineMessages
import ProtoWire
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The trip options with the consumer's default limits (TripLimits.default: 20,000 route points, 100 stops).
private let tripOptions = WireDecodingOptions.trip(maxRoutePoints: 20_000, maxStops: 100)

/// The varint encoding of `value`.
private func varintBytes(_ value: Int) -> [UInt8] {
  var bytes: [UInt8] = []
  var value = UInt64(value)
  while value >= 0x80 {
    bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
    value >>= 7
  }
  bytes.append(UInt8(value))
  return bytes
}

/// A TripUpdate of at most `size` bytes whose trip holds nothing but empty `remaining_waypoints`
/// (field 16: tag 82 01, length 00), as many as fit; and where the trip's payload starts.
func hostileWaypointUpdate(size: Int = 4 << 20) -> (bytes: [UInt8], payloadStart: Int, waypoints: Int) {
  let waypoints = (size - 6) / 3
  var bytes: [UInt8] = [0x0A] + varintBytes(waypoints * 3)  // TripUpdate.trip (field 1)
  let payloadStart = bytes.count
  bytes.reserveCapacity(payloadStart + waypoints * 3)
  for _ in 0..<waypoints { bytes += [0x82, 0x01, 0x00] }
  return (bytes, payloadStart, waypoints)
}

/// The process's peak resident memory in KiB since ``resetPeakMemory()``: VmHWM from /proc/self/status.
private func peakMemoryKiB() -> Int? {
  guard let file = fopen("/proc/self/status", "r") else { return nil }
  defer { fclose(file) }
  var line = [CChar](repeating: 0, count: 256)
  while fgets(&line, Int32(line.count), file) != nil {
    let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    if text.hasPrefix("VmHWM:") {
      return Int(text.dropFirst(6).filter(\.isNumber))
    }
  }
  return nil
}

/// Resets the peak (VmHWM) to the memory resident now, by writing 5 to /proc/self/clear_refs; whether it could.
private func resetPeakMemory() -> Bool {
  guard let file = fopen("/proc/self/clear_refs", "w") else { return false }
  defer { fclose(file) }
  return fputs("5", file) >= 0
}

@Suite("Decoding budgets", .serialized)
struct DecodingBudgetTests {
  @Test("4 MiB of empty waypoints: refused at the 101st, with a small fraction of the memory a full decode takes")
  func hostileWaypointsStopEarly() throws {
    let (bytes, payloadStart, waypoints) = hostileWaypointUpdate()
    #expect(bytes.count <= 4 << 20 && waypoints > 1_390_000)
    let reset = resetPeakMemory()
    let before = try #require(peakMemoryKiB())
    let expected = WireDecodingError(
      .elementLimitExceeded(field: 16, limit: 100, budget: "stops"), offset: payloadStart + 100 * 3)
    #expect(throws: expected) { try TripUpdate(serializedBytes: bytes, options: tripOptions) }
    let growth = try #require(peakMemoryKiB()) - before
    // Without the budgets the same decode built all 1.4 million waypoints (272 bytes each): a peak about
    // 280 MiB higher. Bounded, it builds 100; 64 MiB leaves room for whatever else the process does meanwhile.
    #expect(growth < 64 << 10, "peak memory grew by \(growth) KiB (peak reset: \(reset))")
  }

  @Test("Listed route points count together over route, waypoint paths and traffic intervals")
  func routePointsAddUp() throws {
    var point = LatLng(latitude: 1, longitude: 2)
    var trip = Trip()
    trip.route = LatLngPath(repeating: point, count: 10_000)
    var waypoint = TripWaypoint()
    waypoint.pathToWaypoint = LatLngPath(repeating: point, count: 5_000)
    var traffic = ConsumableTrafficPolyline()
    traffic.speedReadingInterval = Array(repeating: SpeedReadingInterval(), count: 5_000)
    waypoint.trafficToWaypoint = traffic
    trip.remainingWaypoints = [waypoint]
    // 10,000 + 5,000 + 5,000: exactly the limit.
    let decoded = try Trip(serializedBytes: trip.serializedBytes(), options: tripOptions)
    #expect(decoded == trip)
    // One more point anywhere is refused, naming the budget.
    point.latitude = 3
    trip.route.append(point)
    #expect {
      try Trip(serializedBytes: trip.serializedBytes(), options: tripOptions)
    } throws: { error in
      guard let error = error as? WireDecodingError,
        case .elementLimitExceeded(_, let limit, let budget) = error.kind
      else { return false }
      return limit == 20_000 && budget == "route points" && error.isResourceLimit
    }
  }

  @Test("Each list of stops has the stop limit on its own", arguments: [14, 16, 20])
  func stopsPerList(field: Int) throws {
    var trip = Trip()
    let stop = TripWaypoint()
    trip.remainingWaypoints = Array(repeating: stop, count: 100)
    trip.vehicleWaypoints = Array(repeating: stop, count: 100)
    trip.intermediateDestinations = Array(repeating: TerminalLocation(), count: 100)
    #expect(try Trip(serializedBytes: trip.serializedBytes(), options: tripOptions) == trip)
    switch field {
    case 14: trip.intermediateDestinations.append(TerminalLocation())
    case 16: trip.remainingWaypoints.append(stop)
    default: trip.vehicleWaypoints.append(stop)
    }
    #expect {
      try Trip(serializedBytes: trip.serializedBytes(), options: tripOptions)
    } throws: { error in
      guard let error = error as? WireDecodingError,
        case .elementLimitExceeded(let errorField, let limit, let budget) = error.kind
      else { return false }
      return errorField == field && limit == 100 && budget == "stops"
    }
  }

  @Test("Other repeated fields are capped at the larger limit")
  func otherListsCappedAtTheLargerLimit() throws {
    var trip = Trip()
    trip.attributes = Array(repeating: TripAttribute(), count: 20_000)
    #expect(try Trip(serializedBytes: trip.serializedBytes(), options: tripOptions).attributes.count == 20_000)
    trip.attributes.append(TripAttribute())
    #expect(throws: WireDecodingError.self) { try Trip(serializedBytes: trip.serializedBytes(), options: tripOptions) }
    // Without the trip options there is no limit.
    #expect(try Trip(serializedBytes: trip.serializedBytes()).attributes.count == 20_001)
  }
}
