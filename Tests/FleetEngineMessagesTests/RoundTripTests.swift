// Tests/FleetEngineMessagesTests/RoundTripTests.swift - fully populated messages survive encode → decode

import FleetEngineMessages
import ProtoWire
import Testing

@Suite("Round trips of fully populated messages")
struct RoundTripTests {
  @Test func fullTripRoundTrips() throws {
    let trip = makeFullTrip()
    let bytes = trip.serializedBytes()
    #expect(bytes.count == trip.encodedSize())

    let decoded = try Trip(serializedBytes: bytes)
    #expect(decoded == trip)
    #expect(decoded.serializedBytes() == bytes)

    // Spot checks that would catch a field decoded into the wrong property.
    #expect(decoded.intermediateDestinationIndex == -1)
    #expect(decoded.remainingDistanceMeters == Int32Value(0))
    #expect(decoded.dropoffPoint?.terminalPointId?.id == .generatedId(""))
    #expect(
      decoded.attributes.map(\.tripAttributeValue) == [.stringValue("premium"), .boolValue(false), .numberValue(12.5)])
    #expect(decoded.lastLocation?.isGpsSensorEnabled == BoolValue(false))
    #expect(decoded.remainingWaypoints.map(\.tripId) == ["trip-1", "trip-2"])
    #expect(decoded.view == .journeySharingV1S)
  }

  @Test func fullTripWritesEveryFieldOnceInAscendingOrder() throws {
    let numbers = try topLevelFieldNumbers(makeFullTrip().serializedBytes())
    // Every declared field is present, so none was left at its default.
    #expect(Set(numbers) == tripFieldNumbers)
    #expect(isAscending(numbers))
    // Repeated fields repeat; singular ones appear once.
    let counts = Dictionary(numbers.map { ($0, 1) }, uniquingKeysWith: +)
    #expect(counts[9] == 2)  // route
    #expect(counts[16] == 2)  // remaining_waypoints
    #expect(counts[33] == 2)  // actual_intermediate_destination_arrival_points
    #expect(counts[35] == 3)  // attributes
    #expect(counts[11] == 1)  // last_location
  }

  @Test func fullVehicleLocationRoundTrips() throws {
    let location = makeFullVehicleLocation()
    let bytes = location.serializedBytes()
    let numbers = try topLevelFieldNumbers(bytes)
    #expect(numbers == Array(1...32))  // all 32 fields, in field-number order
    let decoded = try VehicleLocation(serializedBytes: bytes)
    #expect(decoded == location)
    #expect(decoded.serializedBytes() == bytes)
    #expect(decoded.flpHeadingDegrees?.value == 268)
    #expect(decoded.supplementalLocationSensor == .customerSuppliedLocation)
  }

  @Test func fullTripWaypointOrdersFieldTenAfterEight() throws {
    let waypoint = makeWaypoint(tripID: "t", type: .pickupWaypointType, latitude: 1)
    let bytes = waypoint.serializedBytes()
    // traffic_to_waypoint (10) is declared before distance_meters (6) in the .proto.
    #expect(try topLevelFieldNumbers(bytes) == [1, 2, 3, 4, 4, 5, 6, 7, 8, 10])
    #expect(try TripWaypoint(serializedBytes: bytes) == waypoint)
  }

  @Test func defaultMessagesEncodeToNothing() {
    #expect(Trip().serializedBytes().isEmpty)
    #expect(VehicleLocation().serializedBytes().isEmpty)
    #expect(TripUpdate().serializedBytes().isEmpty)
    #expect(GetTripRequest().serializedBytes().isEmpty)
    #expect(RequestHeader().serializedBytes().isEmpty)
    #expect(Trip().isEmpty)
    #expect(!makeFullTrip().isEmpty)
  }

  @Test func fullTripInsideTripUpdateRoundTrips() throws {
    var update = TripUpdate()
    update.trip = makeFullTrip()
    update.fullTrip = true
    update.sequence = 1
    update.sendTime = Timestamp(seconds: 1_700_000_000)
    let bytes = update.serializedBytes()
    #expect(try TripUpdate(serializedBytes: bytes) == update)
    #expect(try topLevelFieldNumbers(bytes) == [1, 2, 4, 5])
  }
}
