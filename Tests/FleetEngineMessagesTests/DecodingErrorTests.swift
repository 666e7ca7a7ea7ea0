// Tests/FleetEngineMessagesTests/DecodingErrorTests.swift - malformed input fails with the right kind and offset

import FleetEngineMessages
import ProtoWire
import Testing

@Suite("Malformed input")
struct DecodingErrorTests {
  struct Malformed: Sendable, CustomTestStringConvertible {
    var testDescription: String
    var bytes: [UInt8]
    var kind: WireDecodingError.Kind
    var offset: Int
  }

  static let tripCases: [Malformed] = [
    Malformed(
      testDescription: "string longer than the input",
      bytes: [0x0A, 0x05, 0x61, 0x62],  // name: claims 5 bytes, 2 follow
      kind: .lengthPastEnd(length: 5), offset: 1),
    Malformed(
      testDescription: "tag without its value",
      bytes: [0x18],  // trip_status, then nothing
      kind: .truncated, offset: 1),
    Malformed(
      testDescription: "varint cut short",
      bytes: [0x50, 0x80],  // number_of_passengers: continuation bit set on the last byte
      kind: .truncated, offset: 2),
    Malformed(
      testDescription: "invalid UTF-8 in name",
      bytes: [0x0A, 0x02, 0xC3, 0x28],  // name: C3 must be followed by a continuation byte
      kind: .invalidUTF8(field: 1), offset: 0),
    Malformed(
      testDescription: "invalid UTF-8 after a valid field",
      bytes: [0x0A, 0x01, 0x61, 0x12, 0x01, 0xFF],  // name: "a", vehicle_id: FF
      kind: .invalidUTF8(field: 2), offset: 3),
    Malformed(
      testDescription: "invalid UTF-8 in a nested waypoint",
      bytes: [0x82, 0x01, 0x03, 0x12, 0x01, 0xFF],  // remaining_waypoints { trip_id: FF }
      kind: .invalidUTF8(field: 2), offset: 3),
    Malformed(
      testDescription: "nested length past the nested message's end",
      bytes: [0x5A, 0x02, 0x0A, 0x05],  // last_location (2 bytes) { location: claims 5 bytes }
      kind: .lengthPastEnd(length: 5), offset: 3),
    Malformed(
      testDescription: "enum sent length-delimited",
      bytes: [0x1A, 0x00],  // trip_status with wire type 2
      kind: .wrongWireType(field: 3, wireType: .lengthDelimited), offset: 0),
    Malformed(
      testDescription: "message sent as a varint",
      bytes: [0x0A, 0x00, 0x28, 0x01],  // name: "", pickup_point with wire type 0
      kind: .wrongWireType(field: 5, wireType: .varint), offset: 2),
    Malformed(
      testDescription: "fixed64 cut short in a nested LatLng",
      bytes: [0x4A, 0x05, 0x09, 0x00, 0x00, 0x00, 0x00],  // route { latitude: 4 of 8 bytes }
      kind: .truncated, offset: 3),
    Malformed(
      testDescription: "field number 0",
      bytes: [0x18, 0x01, 0x00],
      kind: .invalidFieldNumber, offset: 2),
    Malformed(
      testDescription: "wire type 7",
      bytes: [0x1F],
      kind: .invalidWireType(7), offset: 0),
  ]

  @Test(arguments: tripCases)
  func tripRejects(_ input: Malformed) {
    let error = #expect(throws: WireDecodingError.self) {
      try Trip(serializedBytes: input.bytes)
    }
    #expect(error?.kind == input.kind)
    #expect(error?.offset == input.offset)
  }

  @Test func everyCutInsideTheLastFieldThrows() throws {
    // The last field of a full Trip is attributes { key: "fare" number_value: 12.5 }; cutting
    // the input anywhere inside it leaves a length, tag or value unfinished.
    let trip = makeFullTrip()
    let bytes = trip.serializedBytes()
    var onlyLast = Trip()
    onlyLast.attributes = [try #require(trip.attributes.last)]
    let lastFieldSize = onlyLast.encodedSize()
    #expect(lastFieldSize > 2)
    for cut in (bytes.count - lastFieldSize + 1)..<bytes.count {
      #expect(throws: WireDecodingError.self) { try Trip(serializedBytes: bytes[..<cut]) }
    }
    // Cut at the field boundary instead, the prefix is a valid Trip without that attribute.
    let prefix = try Trip(serializedBytes: bytes[..<(bytes.count - lastFieldSize)])
    #expect(prefix.attributes.count == trip.attributes.count - 1)
  }

  @Test func recursionLimitAppliesToNestedMessages() {
    // TripUpdate { trip { last_location { location {} } } }: three levels of nesting.
    let input: [UInt8] = [0x0A, 0x04, 0x5A, 0x02, 0x0A, 0x00]
    let error = #expect(throws: WireDecodingError.self) {
      try TripUpdate(serializedBytes: input, options: WireDecodingOptions(recursionLimit: 2))
    }
    #expect(error?.kind == .recursionLimitExceeded(limit: 2))
    #expect(error?.offset == 4)
    #expect(throws: Never.self) {
      try TripUpdate(serializedBytes: input, options: WireDecodingOptions(recursionLimit: 3))
    }
  }

  @Test func oversizedInputIsRejectedBeforeDecoding() {
    let input = makeFullTrip().serializedBytes()
    let error = #expect(throws: WireDecodingError.self) {
      try Trip(serializedBytes: input, options: WireDecodingOptions(maxMessageSize: 16))
    }
    #expect(error?.kind == .messageTooLarge(size: input.count, limit: 16))
    #expect(error?.offset == 0)
  }
}
