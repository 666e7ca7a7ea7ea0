// Tests/FleetEngineMessagesTests/ProtoJSONTests.swift - proto3 JSON against hand-written expectations
//
// The expected texts are worked out by hand from the proto3 JSON mapping and
// from what Python's json_format prints (Tests/Differential/test_json.py
// compares the two runtimes on random messages).

import FleetEngineMessages
import ProtoWire
import Testing

@Suite("Proto3 JSON")
struct ProtoJSONTests {
  /// A trip touching every kind of value: strings to escape, enums (one unnamed), a timestamp with
  /// each fraction length, a duration, present wrappers holding defaults, NaN, -0.0 and 1e-07.
  static func sampleTrip() -> Trip {
    var trip = Trip()
    trip.name = "providers/demo/trips/t-1"
    trip.vehicleId = #"v"1\"#
    trip.tripStatus = .enrouteToPickup
    trip.tripType = .exclusive
    var pickup = TerminalLocation()
    pickup.point = LatLng(latitude: 37.422, longitude: -122.084)
    trip.pickupPoint = pickup
    trip.pickupTime = Timestamp(seconds: 1_700_000_000, nanos: 250_000_000)
    trip.route = [LatLng(latitude: 37.422, longitude: -122.084), LatLng(latitude: 0, longitude: -0.0)]
    trip.numberOfPassengers = 2
    var location = VehicleLocation()
    location.location = LatLng(latitude: 1e-7, longitude: 180)
    location.heading = Int32Value(-1)
    location.updateTime = Timestamp(seconds: 1_700_000_000, nanos: 1)
    location.speed = DoubleValue(.nan)
    location.locationSensor = .fusedLocationProvider
    location.isRoadSnapped = BoolValue(false)
    location.rawLocationSensor = .unrecognized(7)
    trip.lastLocation = location
    trip.remainingDistanceMeters = Int32Value(0)
    trip.etaToFirstWaypoint = Timestamp(seconds: 1_700_000_090, nanos: 123_456_000)
    trip.remainingTimeToFirstWaypoint = ProtobufDuration(seconds: 90, nanos: 123_456_000)
    trip.view = .journeySharingV1S
    var fare = TripAttribute()
    fare.key = "fare"
    fare.tripAttributeValue = .numberValue(12.5)
    var vip = TripAttribute()
    vip.key = "vip"
    vip.tripAttributeValue = .boolValue(false)
    var blank = TripAttribute()
    blank.tripAttributeValue = .stringValue("")
    trip.attributes = [fare, vip, blank]
    return trip
  }

  @Test("A trip, pretty-printed with JSON names")
  func tripPretty() {
    let expected = #"""
      {
        "name": "providers/demo/trips/t-1",
        "vehicleId": "v\"1\\",
        "tripStatus": "ENROUTE_TO_PICKUP",
        "tripType": "EXCLUSIVE",
        "pickupPoint": {
          "point": {
            "latitude": 37.422,
            "longitude": -122.084
          }
        },
        "pickupTime": "2023-11-14T22:13:20.250Z",
        "route": [
          {
            "latitude": 37.422,
            "longitude": -122.084
          },
          {
            "longitude": -0.0
          }
        ],
        "numberOfPassengers": 2,
        "lastLocation": {
          "location": {
            "latitude": 1e-07,
            "longitude": 180.0
          },
          "heading": -1,
          "updateTime": "2023-11-14T22:13:20.000000001Z",
          "speed": "NaN",
          "locationSensor": "FUSED_LOCATION_PROVIDER",
          "isRoadSnapped": false,
          "rawLocationSensor": 7
        },
        "remainingDistanceMeters": 0,
        "etaToFirstWaypoint": "2023-11-14T22:14:50.123456Z",
        "remainingTimeToFirstWaypoint": "90.123456s",
        "view": "JOURNEY_SHARING_V1S",
        "attributes": [
          {
            "key": "fare",
            "numberValue": 12.5
          },
          {
            "key": "vip",
            "boolValue": false
          },
          {
            "stringValue": ""
          }
        ]
      }
      """#
    #expect(Self.sampleTrip().jsonString() == expected)
  }

  @Test("A trip on one line with proto field names")
  func tripCompactProtoNames() throws {
    let expected =
      #"{"name":"providers/demo/trips/t-1","vehicle_id":"v\"1\\","trip_status":"ENROUTE_TO_PICKUP","#
      + #""trip_type":"EXCLUSIVE","pickup_point":{"point":{"latitude":37.422,"longitude":-122.084}},"#
      + #""pickup_time":"2023-11-14T22:13:20.250Z","route":[{"latitude":37.422,"longitude":-122.084},"#
      + #"{"longitude":-0.0}],"number_of_passengers":2,"last_location":{"location":{"latitude":1e-07,"#
      + #""longitude":180.0},"heading":-1,"update_time":"2023-11-14T22:13:20.000000001Z","speed":"NaN","#
      + #""location_sensor":"FUSED_LOCATION_PROVIDER","is_road_snapped":false,"raw_location_sensor":7},"#
      + #""remaining_distance_meters":0,"eta_to_first_waypoint":"2023-11-14T22:14:50.123456Z","#
      + #""remaining_time_to_first_waypoint":"90.123456s","view":"JOURNEY_SHARING_V1S","#
      + #""attributes":[{"key":"fare","number_value":12.5},{"key":"vip","bool_value":false},{"string_value":""}]}"#
    let options = ProtoJSONOptions(preservingProtoFieldNames: true, indent: 0)
    #expect(Self.sampleTrip().jsonString(options: options) == expected)
    #expect(try Self.sampleTrip().validatedJSONString(options: options) == expected)
  }

  @Test("A streaming update: uint64 as a string, a repeated int32, an empty trip")
  func tripUpdate() {
    var update = TripUpdate()
    update.trip = Trip()
    update.fullTrip = true
    update.updatedFields = [1, -2, 35]
    update.sequence = .max
    update.sendTime = Timestamp(seconds: -1, nanos: 999_000_000)
    #expect(
      update.jsonString(options: .init(indent: 0))
        == #"{"trip":{},"fullTrip":true,"updatedFields":[1,-2,35],"sequence":"18446744073709551615","#
        + #""sendTime":"1969-12-31T23:59:59.999Z"}"#)
    #expect(
      update.jsonString(options: .init(indent: 1))
        == "{\n \"trip\": {},\n \"fullTrip\": true,\n \"updatedFields\": [\n  1,\n  -2,\n  35\n ],\n"
        + " \"sequence\": \"18446744073709551615\",\n \"sendTime\": \"1969-12-31T23:59:59.999Z\"\n}")
  }

  @Test("Defaults are left out, unknown fields dropped, an unnamed enum value is its number")
  func presence() throws {
    #expect(Trip().jsonString() == "{}")
    #expect(VehicleLocation().jsonString(options: .init(indent: 4)) == "{}")
    var stop = StopLocation()
    stop.point = LatLng()
    #expect(stop.jsonString() == "{\n  \"point\": {}\n}")
    // name "t" (field 1), then an unknown varint field 99.
    let bytes: [UInt8] = [0x0A, 0x01, 0x74, 0x98, 0x06, 0x01]
    let decoded = try Trip(serializedBytes: bytes)
    #expect(decoded.unknownFields.count > 0)
    #expect(decoded.jsonString(options: .init(indent: 0)) == #"{"name":"t"}"#)
    var trip = Trip()
    trip.tripStatus = .unrecognized(-5)
    #expect(trip.jsonString(options: .init(indent: 0)) == #"{"tripStatus":-5}"#)
    #expect(trip.jsonString(options: .init(indent: -3)) == #"{"tripStatus":-5}"#)
  }

  @Test("Wrappers print their bare value")
  func wrappers() {
    #expect(Int64Value(.min).jsonString() == #""-9223372036854775808""#)
    #expect(UInt64Value(0).jsonString() == #""0""#)
    #expect(Int32Value(.min).jsonString() == "-2147483648")
    #expect(UInt32Value(.max).jsonString() == "4294967295")
    #expect(BoolValue(false).jsonString() == "false")
    #expect(StringValue("").jsonString() == #""""#)
    #expect(DoubleValue().jsonString() == "0.0")
    #expect(DoubleValue(1e16).jsonString() == "1e+16")
    #expect(DoubleValue(1234567890123456).jsonString() == "1234567890123456.0")
    #expect(DoubleValue(0.0001).jsonString() == "0.0001")
    #expect(DoubleValue(-Double.leastNonzeroMagnitude).jsonString() == "-5e-324")
    #expect(DoubleValue(.greatestFiniteMagnitude).jsonString() == "1.7976931348623157e+308")
    #expect(DoubleValue(-.infinity).jsonString() == #""-Infinity""#)
    #expect(DoubleValue(.infinity).jsonString() == #""Infinity""#)
    // Floats: the fewest digits (at least 6) that give the same float back.
    #expect(FloatValue(0.1).jsonString() == "0.1")
    #expect(FloatValue(0.9).jsonString() == "0.9")
    #expect(FloatValue(16_777_216).jsonString() == "16777216.0")
    #expect(FloatValue(1_234_567).jsonString() == "1234567.0")
    #expect(FloatValue(.greatestFiniteMagnitude).jsonString() == "3.4028235e+38")
    #expect(FloatValue(.leastNonzeroMagnitude).jsonString() == "1.4013e-45")
    #expect(FloatValue(-0.0).jsonString() == "-0.0")
    #expect(FloatValue(.nan).jsonString() == #""NaN""#)
    #expect(BytesValue([]).jsonString() == #""""#)
    #expect(BytesValue([0x66]).jsonString() == #""Zg==""#)
    #expect(BytesValue([0x66, 0x6F]).jsonString() == #""Zm8=""#)
    #expect(BytesValue([0xFB, 0xFF, 0xBF]).jsonString() == #""+/+/""#)
  }

  @Test("Strings: escapes as Python writes them, non-ASCII as UTF-8 or as \\u escapes")
  func strings() {
    let value = StringValue("\"\\\n\r\t\u{08}\u{0C}\u{01}\u{1F}\u{7F}é😀")
    #expect(value.jsonString() == "\"\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\u{7F}é😀\"")
    #expect(
      value.jsonString(options: .init(escapingNonASCII: true))
        == #""\"\\\n\r\t\b\f\u0001\u001f\u007f\u00e9\ud83d\ude00""#)
  }

  @Test(
    "Timestamps: RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits",
    arguments: [
      (Int64(0), Int32(0), "1970-01-01T00:00:00Z"),
      (0, 10_000_000, "1970-01-01T00:00:00.010Z"),
      (0, 10_000, "1970-01-01T00:00:00.000010Z"),
      (0, 10, "1970-01-01T00:00:00.000000010Z"),
      (951_782_400, 0, "2000-02-29T00:00:00Z"),
      (-1, 0, "1969-12-31T23:59:59Z"),
      (-62_135_596_800, 0, "0001-01-01T00:00:00Z"),
      (253_402_300_799, 999_999_999, "9999-12-31T23:59:59.999999999Z"),
    ])
  func timestamps(seconds: Int64, nanos: Int32, expected: String) throws {
    let timestamp = Timestamp(seconds: seconds, nanos: nanos)
    #expect(timestamp.jsonString() == "\"\(expected)\"")
    #expect(try timestamp.validatedJSONString() == "\"\(expected)\"")
  }

  @Test(
    "Durations: signed seconds with 0, 3, 6 or 9 fractional digits",
    arguments: [
      (Int64(0), Int32(0), "0s"),
      (1, 0, "1s"),
      (1, 10_000_000, "1.010s"),
      (-3, -100_000_000, "-3.100s"),
      (0, -5000, "-0.000005s"),
      (0, 1, "0.000000001s"),
      (315_576_000_000, 999_999_999, "315576000000.999999999s"),
      (-315_576_000_000, 0, "-315576000000s"),
    ])
  func durations(seconds: Int64, nanos: Int32, expected: String) throws {
    let duration = ProtobufDuration(seconds: seconds, nanos: nanos)
    #expect(duration.jsonString() == "\"\(expected)\"")
    #expect(try duration.validatedJSONString() == "\"\(expected)\"")
  }

  @Test(
    "Timestamps the mapping cannot represent: refused, and printed as the instant they denote",
    arguments: [
      (Int64(253_402_300_800), Int32(0), "+010000-01-01T00:00:00Z"),
      (-62_135_596_801, 0, "0000-12-31T23:59:59Z"),
      (5, -1, "1970-01-01T00:00:04.999999999Z"),
      (0, 1_000_000_000, "1970-01-01T00:00:01Z"),
      (.max, 0, "+292277026596-12-04T15:30:07Z"),
      (.min, 0, "-292277022657-01-27T08:29:52Z"),
      (.max, .max, "+292277026596-12-04T15:30:09.147483647Z"),
      (.min, .min, "-292277022657-01-27T08:29:49.852516352Z"),
    ])
  func invalidTimestamps(seconds: Int64, nanos: Int32, lenient: String) {
    var stop = StopLocation()
    stop.timestamp = Timestamp(seconds: seconds, nanos: nanos)
    #expect(stop.jsonString(options: .init(indent: 0)) == #"{"timestamp":"\#(lenient)"}"#)
    #expect(throws: ProtoJSONEncodingError.timestampOutOfRange(seconds: seconds, nanos: nanos)) {
      try stop.validatedJSONString()
    }
  }

  @Test(
    "Durations the mapping cannot represent: refused, and printed as their exact value",
    arguments: [
      (Int64(1), Int32(-1), "0.999999999s"),
      (-1, 1, "-0.999999999s"),
      (0, 1_500_000_000, "1.500s"),
      (315_576_000_001, 0, "315576000001s"),
      (.min, .min, "-9223372036854775810.147483648s"),
      (.max, .max, "9223372036854775809.147483647s"),
    ])
  func invalidDurations(seconds: Int64, nanos: Int32, lenient: String) {
    let duration = ProtobufDuration(seconds: seconds, nanos: nanos)
    #expect(duration.jsonString() == "\"\(lenient)\"")
    #expect(throws: ProtoJSONEncodingError.durationOutOfRange(seconds: seconds, nanos: nanos)) {
      try duration.validatedJSONString()
    }
  }

  @Test("Field masks: lowerCamelCase paths joined by commas; paths that cannot convert are refused")
  func fieldMasks() throws {
    let mask = FieldMask(paths: ["trip_status", "last_location.raw_location_sensor", "straße_ß", "µ_µ"])
    #expect(try mask.validatedJSONString() == #""tripStatus,lastLocation.rawLocationSensor,straßeSS,µΜ""#)
    #expect(FieldMask().jsonString() == #""""#)
    for (path, lenient) in [("a_B", "a_B"), ("trailing_", "trailing_"), ("x__y", "x_Y"), ("Upper", "Upper")] {
      let bad = FieldMask(paths: ["ok_path", path])
      #expect(bad.jsonString() == #""okPath,\#(lenient)""#)
      #expect(throws: ProtoJSONEncodingError.fieldMaskPathNotConvertible(path)) {
        try bad.validatedJSONString()
      }
    }
  }
}
