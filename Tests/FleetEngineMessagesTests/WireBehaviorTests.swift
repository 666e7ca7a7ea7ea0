// Tests/FleetEngineMessagesTests/WireBehaviorTests.swift - unknown fields and enum values, merging, oneofs, field order

import FleetEngineMessages
import ProtoWire
import Testing

@Suite("Unknown fields")
struct UnknownFieldTests {
  @Test func unknownFieldsAreReemittedByteExactAfterKnownFields() throws {
    let unknown9: [UInt8] = [0x4A, 0x02, 0x68, 0x69]  // field 9, length-delimited "hi"
    let unknown1000: [UInt8] = [0xC0, 0x3E, 0x01]  // field 1000 (two-byte tag), varint 1
    let unknownGroup: [UInt8] = [0x93, 0x03, 0x08, 0x01, 0x94, 0x03]  // group 50 { field 1: 1 }
    let unknown7: [UInt8] = [0x3D, 0x01, 0x02, 0x03, 0x04]  // field 7, fixed32
    let unknown8: [UInt8] = [0x41, 1, 2, 3, 4, 5, 6, 7, 8]  // field 8, fixed64
    let sequence: [UInt8] = [0x20, 0x07]  // field 4 (sequence) = 7
    let trip: [UInt8] = [0x0A, 0x02, 0x18, 0x02]  // field 1 (trip) { trip_status: ENROUTE_TO_PICKUP }

    let input = unknown9 + sequence + unknown1000 + trip + unknownGroup + unknown7 + unknown8
    let update = try TripUpdate(serializedBytes: input)
    #expect(update.sequence == 7)
    #expect(update.trip?.tripStatus == .enrouteToPickup)
    // Kept in arrival order, tags included.
    #expect(update.unknownFields.bytes == unknown9 + unknown1000 + unknownGroup + unknown7 + unknown8)
    // Known fields in field-number order first, then the unknown ones verbatim.
    #expect(update.serializedBytes() == trip + sequence + unknown9 + unknown1000 + unknownGroup + unknown7 + unknown8)
  }

  @Test func unknownFieldsInNestedMessagesStayInThem() throws {
    // Trip { pickup_point { point {} <field 9: varint 5> } <field 18 (reserved): varint 1> }
    let input: [UInt8] = [
      0x2A, 0x04,  // field 5 (pickup_point), 4 bytes
      0x0A, 0x00,  //   field 1 (point), empty LatLng
      0x48, 0x05,  //   field 9: unknown to TerminalLocation
      0x90, 0x01, 0x01,  // field 18 (reserved in Trip), varint 1
    ]
    let trip = try Trip(serializedBytes: input)
    #expect(trip.unknownFields.bytes == [0x90, 0x01, 0x01])
    #expect(trip.pickupPoint?.unknownFields.bytes == [0x48, 0x05])
    #expect(trip.pickupPoint?.point == LatLng())
    #expect(trip.serializedBytes() == input)
  }

  @Test func messageWithOnlyUnknownFieldsIsNotEmpty() throws {
    let trip = try Trip(serializedBytes: [0xF8, 0x06, 0x01])  // field 111, varint 1
    #expect(!trip.isEmpty)
    #expect(trip.encodedSize() == 3)
    #expect(trip.serializedBytes() == [0xF8, 0x06, 0x01])
  }
}

@Suite("Unknown enum values")
struct UnknownEnumTests {
  @Test func unrecognizedTripStatusSurvivesARoundTrip() throws {
    let input: [UInt8] = [0x18, 0x2A]  // Trip { trip_status: 42 }
    let trip = try Trip(serializedBytes: input)
    #expect(trip.tripStatus == .unrecognized(42))
    #expect(trip.tripStatus.rawValue == 42)
    #expect(trip.tripStatus.protoName == "42")
    #expect(trip.serializedBytes() == input)
  }

  @Test func negativeEnumValueTakesTenBytes() throws {
    // Trip { view: -1 }: enums are int32 on the wire, so -1 is sign-extended to ten bytes.
    let input: [UInt8] = [0xF8, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]
    let trip = try Trip(serializedBytes: input)
    #expect(trip.view == .unrecognized(-1))
    #expect(trip.serializedBytes() == input)
  }

  @Test func unrecognizedValuesInNestedAndRepeatedMessages() throws {
    var update = TripUpdate()
    var trip = Trip()
    trip.tripType = .unrecognized(42)
    var location = VehicleLocation()
    location.locationSensor = .unrecognized(150)
    trip.lastLocation = location
    var waypoint = TripWaypoint()
    waypoint.waypointType = .unrecognized(9)
    trip.remainingWaypoints = [waypoint]
    update.trip = trip
    let decoded = try TripUpdate(serializedBytes: update.serializedBytes())
    #expect(decoded.trip?.tripType == .unrecognized(42))
    #expect(decoded.trip?.lastLocation?.locationSensor == .unrecognized(150))
    #expect(decoded.trip?.remainingWaypoints.first?.waypointType == .unrecognized(9))
    #expect(decoded == update)
  }
}

@Suite("Repeated occurrences of a field")
struct MergeTests {
  @Test func twoLastLocationsMerge() throws {
    let input: [UInt8] = [
      // Trip { last_location { location { latitude: 1.0 } } }
      0x5A, 0x0B,  // field 11 (last_location), 11 bytes
      0x0A, 0x09,  //   field 1 (location), 9 bytes
      0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0x3F,  //     latitude (fixed64) 1.0
      // Trip { last_location { location { longitude: 2.0 } heading { value: 90 } } }
      0x5A, 0x0F,  // field 11 (last_location), 15 bytes
      0x0A, 0x09,  //   field 1 (location), 9 bytes
      0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40,  //     longitude (fixed64) 2.0
      0x12, 0x02, 0x08, 0x5A,  //   field 2 (heading) { value: 90 }
    ]
    let trip = try Trip(serializedBytes: input)
    let location = try #require(trip.lastLocation)
    // The second occurrence merges into the first, recursively: both coordinates survive.
    #expect(location.location == LatLng(latitude: 1, longitude: 2))
    #expect(location.heading == Int32Value(90))
    // Re-encoded as one field.
    #expect(
      trip.serializedBytes() == [
        0x5A, 0x18,  // last_location, 24 bytes
        0x0A, 0x12,  //   location, 18 bytes
        0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0x3F,  //     latitude 1.0
        0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40,  //     longitude 2.0
        0x12, 0x02, 0x08, 0x5A,  //   heading { value: 90 }
      ])
  }

  @Test func scalarsLastOneWinsAndRepeatedAppend() throws {
    let input: [UInt8] = [
      0x18, 0x01,  // trip_status: NEW
      0x4A, 0x00,  // route: LatLng {}
      0x18, 0x05,  // trip_status: COMPLETE
      0x12, 0x01, 0x61,  // vehicle_id: "a"
      0x4A, 0x09, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0x3F,  // route: LatLng { latitude: 1.0 }
      0x12, 0x01, 0x62,  // vehicle_id: "b"
    ]
    let trip = try Trip(serializedBytes: input)
    #expect(trip.tripStatus == .complete)
    #expect(trip.vehicleId == "b")
    #expect(trip.route == [LatLng(), LatLng(latitude: 1, longitude: 0)])
  }

  @Test func mergeIntoExistingMessage() throws {
    var trip = Trip()
    trip.name = "providers/p/trips/t"
    trip.tripStatus = .new
    // trip_status: ENROUTE_TO_PICKUP, number_of_passengers: 3
    try trip.merge(serializedBytes: [0x18, 0x02, 0x50, 0x03])
    #expect(trip.name == "providers/p/trips/t")
    #expect(trip.tripStatus == .enrouteToPickup)
    #expect(trip.numberOfPassengers == 3)
  }
}

@Suite("Oneofs")
struct OneofTests {
  @Test func tripAttributeLastMemberWins() throws {
    let input: [UInt8] = [
      0x0A, 0x01, 0x6B,  // key: "k"
      0x12, 0x01, 0x78,  // string_value: "x"
      0x18, 0x01,  // bool_value: true
    ]
    let attribute = try TripAttribute(serializedBytes: input)
    #expect(attribute.key == "k")
    #expect(attribute.tripAttributeValue == .boolValue(true))
    #expect(attribute.serializedBytes() == [0x0A, 0x01, 0x6B, 0x18, 0x01])
  }

  @Test func vehicleAttributeLastMemberWins() throws {
    let input: [UInt8] = [
      0x29, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F,  // number_value: 1.5
      0x12, 0x01, 0x76,  // value: "v" (not part of the oneof)
      0x1A, 0x02, 0x6F, 0x6B,  // string_value: "ok"
    ]
    let attribute = try VehicleAttribute(serializedBytes: input)
    #expect(attribute.value == "v")
    #expect(attribute.vehicleAttributeValue == .stringValue("ok"))
    #expect(attribute.serializedBytes() == [0x12, 0x01, 0x76, 0x1A, 0x02, 0x6F, 0x6B])
  }

  struct DefaultMember: Sendable, CustomTestStringConvertible {
    var value: TripAttribute.TripAttributeValue
    var bytes: [UInt8]
    var testDescription: String { "\(value)" }
  }

  @Test(
    "a set member holding its default is still written",
    arguments: [
      DefaultMember(value: .stringValue(""), bytes: [0x12, 0x00]),
      DefaultMember(value: .boolValue(false), bytes: [0x18, 0x00]),
      DefaultMember(value: .numberValue(0), bytes: [0x21, 0, 0, 0, 0, 0, 0, 0, 0]),
    ])
  func defaultMemberIsPresent(member: DefaultMember) throws {
    var attribute = TripAttribute()
    attribute.tripAttributeValue = member.value
    #expect(attribute.serializedBytes() == member.bytes)
    let decoded = try TripAttribute(serializedBytes: member.bytes)
    #expect(decoded.tripAttributeValue == member.value)
    #expect(try TripAttribute(serializedBytes: []).tripAttributeValue == nil)
  }

  @Test func terminalPointIdOneofSwitchesMember() throws {
    // place_id: "a", then generated_id: "b"
    let id = try TerminalPointId(serializedBytes: [0x12, 0x01, 0x61, 0x1A, 0x01, 0x62])
    #expect(id.id == .generatedId("b"))
  }
}

@Suite("Field order")
struct FieldOrderTests {
  @Test func tripFieldsAreWrittenByNumberNotDeclaration() {
    var trip = Trip()
    // In trips.proto these are declared in the order 5, 22, 32, 31, 35; set here in yet another order.
    trip.attributes = [
      {
        var a = TripAttribute()
        a.key = "k"
        return a
      }()
    ]
    trip.view = .sdk
    trip.actualPickupArrivalPoint = StopLocation()
    trip.actualPickupPoint = StopLocation()
    trip.pickupPoint = TerminalLocation()
    trip.name = "n"
    #expect(
      trip.serializedBytes() == [
        0x0A, 0x01, 0x6E,  // 1 name: "n"
        0x2A, 0x00,  // 5 pickup_point {}
        0xB2, 0x01, 0x00,  // 22 actual_pickup_point {}
        0xF8, 0x01, 0x01,  // 31 view: SDK
        0x82, 0x02, 0x00,  // 32 actual_pickup_arrival_point {}
        0x9A, 0x02, 0x03, 0x0A, 0x01, 0x6B,  // 35 attributes { key: "k" }
      ])
  }

  @Test func vehicleLocationFieldsAreWrittenByNumber() {
    var location = VehicleLocation()
    location.roadSnapped = true  // 26, declared last
    location.locationSensor = .gps  // 11
    location.heading = Int32Value(5)  // 2
    location.latlngAccuracy = DoubleValue(0)  // 22, present but empty
    #expect(
      location.serializedBytes() == [
        0x12, 0x02, 0x08, 0x05,  // 2 heading { value: 5 }
        0x58, 0x01,  // 11 location_sensor: GPS
        0xB2, 0x01, 0x00,  // 22 latlng_accuracy {}
        0xD0, 0x01, 0x01,  // 26 road_snapped: true
      ])
  }

  @Test func getTripRequestExactBytes() throws {
    var request = GetTripRequest()
    request.view = .sdk  // 11
    request.routeFormatType = .encodedPolylineType  // 8
    request.currentRouteSegmentVersion = Timestamp(seconds: 5)  // 6
    request.name = "providers/p/trips/t"  // 3
    var header = RequestHeader()
    header.sdkType = .consumer
    request.header = header  // 1
    let expected: [UInt8] =
      [0x0A, 0x02, 0x30, 0x01]  // 1 header { sdk_type: CONSUMER }
      + [0x1A, 0x13] + Array("providers/p/trips/t".utf8)  // 3 name
      + [0x32, 0x02, 0x08, 0x05]  // 6 current_route_segment_version { seconds: 5 }
      + [0x40, 0x02]  // 8 route_format_type: ENCODED_POLYLINE_TYPE
      + [0x58, 0x01]  // 11 view: SDK
    #expect(request.serializedBytes() == expected)
    #expect(try GetTripRequest(serializedBytes: expected) == request)
  }
}
