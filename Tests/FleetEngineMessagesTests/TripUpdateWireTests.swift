// Tests/FleetEngineMessagesTests/TripUpdateWireTests.swift - TripUpdate and StreamTripRequest against hand-written bytes

import FleetEngineMessages
import ProtoWire
import Testing

@Suite("TripUpdate wire format")
struct TripUpdateWireTests {
  /// TripUpdate {
  ///   trip { trip_status: ENROUTE_TO_PICKUP }
  ///   updated_fields: [3, 12]
  /// }
  static let expected: TripUpdate = {
    var update = TripUpdate()
    var trip = Trip()
    trip.tripStatus = .enrouteToPickup
    update.trip = trip
    update.updatedFields = [3, 12]
    return update
  }()

  static let packed: [UInt8] = [
    0x0A, 0x02,  // field 1 (trip), length-delimited, 2 bytes
    0x18, 0x02,  //   Trip field 3 (trip_status), varint 2 = ENROUTE_TO_PICKUP
    0x1A, 0x02,  // field 3 (updated_fields), length-delimited (packed), 2 bytes
    0x03, 0x0C,  //   3, 12
  ]

  static let unpacked: [UInt8] = [
    0x0A, 0x02,  // field 1 (trip), 2 bytes
    0x18, 0x02,  //   trip_status = ENROUTE_TO_PICKUP
    0x18, 0x03,  // field 3 (updated_fields), varint 3
    0x18, 0x0C,  // field 3 (updated_fields), varint 12
  ]

  @Test("packed and unpacked updated_fields decode to the same update", arguments: [packed, unpacked])
  func decodesEitherEncoding(bytes: [UInt8]) throws {
    let update = try TripUpdate(serializedBytes: bytes)
    #expect(update == Self.expected)
    #expect(update.trip?.tripStatus == .enrouteToPickup)
    #expect(update.updatedFields == [3, 12])
    #expect(update.unknownFields.isEmpty)
  }

  @Test func encodesPacked() {
    #expect(Self.expected.serializedBytes() == Self.packed)
    #expect(Self.expected.encodedSize() == Self.packed.count)
  }

  @Test func mixedPackedAndUnpackedRunsAppend() throws {
    let bytes: [UInt8] = [
      0x18, 0x01,  // updated_fields: 1 (unpacked)
      0x1A, 0x02, 0x03, 0x0C,  // updated_fields: [3, 12] (packed)
      0x18, 0x23,  // updated_fields: 35 (unpacked)
    ]
    let update = try TripUpdate(serializedBytes: bytes)
    #expect(update.updatedFields == [1, 3, 12, 35])
    #expect(update.serializedBytes() == [0x1A, 0x04, 0x01, 0x03, 0x0C, 0x23])
  }

  @Test func everyFieldExactBytes() throws {
    var update = TripUpdate()
    update.sendTime = Timestamp(seconds: 1_700_000_000, nanos: 250_000_000)
    update.sequence = 300
    update.updatedFields = [11, 300]
    update.fullTrip = true
    update.trip = {
      var trip = Trip()
      trip.name = "providers/p/trips/t"
      return trip
    }()
    // TripUpdate {
    //   trip { name: "providers/p/trips/t" }
    //   full_trip: true
    //   updated_fields: [11, 300]
    //   sequence: 300
    //   send_time { seconds: 1700000000 nanos: 250000000 }
    // }
    let expected: [UInt8] =
      [0x0A, 0x15]  // field 1 (trip), 21 bytes
      + [0x0A, 0x13] + Array("providers/p/trips/t".utf8)  //   Trip field 1 (name), 19 bytes
      + [0x10, 0x01]  // field 2 (full_trip) true
      + [0x1A, 0x03, 0x0B, 0xAC, 0x02]  // field 3 packed: 11, 300 (varint AC 02)
      + [0x20, 0xAC, 0x02]  // field 4 (sequence) 300
      + [0x2A, 0x0B]  // field 5 (send_time), 11 bytes
      + [0x08, 0x80, 0xE2, 0xCF, 0xAA, 0x06]  //   seconds 1700000000
      + [0x10, 0x80, 0xE5, 0x9A, 0x77]  //   nanos 250000000
    #expect(update.serializedBytes() == expected)
    #expect(try TripUpdate(serializedBytes: expected) == update)
  }

  @Test func emptyTripIsStillPresent() throws {
    // TripUpdate { trip {} }: a present but empty message is written as a zero-length field.
    var update = TripUpdate()
    update.trip = Trip()
    #expect(update.serializedBytes() == [0x0A, 0x00])
    let decoded = try TripUpdate(serializedBytes: [0x0A, 0x00])
    #expect(decoded.trip == Trip())
    #expect(try TripUpdate(serializedBytes: []).trip == nil)
  }

  @Test func decodesFromBorrowedBuffer() throws {
    let update = try Self.packed.withUnsafeBytes { buffer in
      try TripUpdate(serializedBuffer: buffer)
    }
    #expect(update == Self.expected)
  }

  @Test func streamTripRequestExactBytes() throws {
    var request = StreamTripRequest()
    request.routeFormatType = .encodedPolylineType
    request.view = .journeySharingV1S
    request.name = "providers/p/trips/t"
    var header = RequestHeader()
    header.sdkType = .consumer
    header.platform = .ios
    request.header = header
    // StreamTripRequest {
    //   header { sdk_type: CONSUMER platform: IOS }
    //   name: "providers/p/trips/t"
    //   view: JOURNEY_SHARING_V1S
    //   route_format_type: ENCODED_POLYLINE_TYPE
    // }
    let expected: [UInt8] =
      [0x0A, 0x04, 0x30, 0x01, 0x48, 0x02]  // field 1 (header): field 6 = 1, field 9 = 2
      + [0x12, 0x13] + Array("providers/p/trips/t".utf8)  // field 2 (name)
      + [0x18, 0x02]  // field 3 (view) = 2
      + [0x20, 0x02]  // field 4 (route_format_type) = 2
    #expect(request.serializedBytes() == expected)
    #expect(try StreamTripRequest(serializedBytes: expected) == request)
  }
}
