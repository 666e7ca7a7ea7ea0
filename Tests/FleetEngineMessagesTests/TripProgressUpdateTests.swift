// Tests/FleetEngineMessagesTests/TripProgressUpdateTests.swift - the flat decoder of a vehicle's progress

import FleetEngineMessages
import ProtoWire
import Testing

/// A progress update as FleetSim's load mode sends it: location, remaining distance, ETA.
private func progressUpdate(sequence: UInt64 = 7) -> TripUpdate {
  var location = VehicleLocation()
  location.location = LatLng(latitude: 52.371, longitude: 4.893)
  location.heading = Int32Value(90)
  location.updateTime = Timestamp(seconds: 1_750_000_000, nanos: 5)
  var trip = Trip()
  trip.lastLocation = location
  trip.remainingDistanceMeters = Int32Value(1234)
  trip.etaToFirstWaypoint = Timestamp(seconds: 1_750_000_300)
  var update = TripUpdate()
  update.trip = trip
  update.updatedFields = [11, 12, 13]
  update.sequence = sequence
  update.sendTime = Timestamp(seconds: 1_750_000_001, nanos: 42)
  return update
}

private func flat(_ bytes: [UInt8], options: WireDecodingOptions = .init()) -> TripProgressUpdate? {
  bytes.withUnsafeBytes { TripProgressUpdate.decode($0, options: options) }
}

@Suite("TripProgressUpdate: a progress update decoded flat")
struct TripProgressUpdateTests {
  @Test func aProgressUpdateDecodesFlatWithWhatTheWholeDecodeHas() throws {
    let update = progressUpdate()
    let decoded = try #require(flat(update.serializedBytes()))
    #expect(decoded.updatedFields == 1 << 11 | 1 << 12 | 1 << 13)
    #expect(decoded.lastLocation == update.trip?.lastLocation)
    #expect(decoded.remainingDistanceMeters == Int32Value(1234))
    #expect(decoded.etaToFirstWaypoint == Timestamp(seconds: 1_750_000_300))
    #expect(decoded.sequence == 7)
    #expect(decoded.sendTime == Timestamp(seconds: 1_750_000_001, nanos: 42))
    #expect(decoded == TripProgressUpdate(update))
    // Its equivalent update encodes to the same bytes (the fields listed in ascending order).
    #expect(decoded.tripUpdate.serializedBytes() == update.serializedBytes())
  }

  @Test func updatedFieldsMayComeUnpackedAndInAnyOrder() throws {
    var writer = [UInt8]()
    var update = progressUpdate()
    update.updatedFields = []
    writer += update.serializedBytes()
    for number: UInt8 in [13, 11] { writer += [3 << 3 | 0, number] }  // field 3, varint, unpacked
    let decoded = try #require(flat(writer))
    #expect(decoded.updatedFields == 1 << 11 | 1 << 13)
    #expect(!decoded.names(12))
  }

  /// Updates that are not a vehicle's progress alone.
  enum NotProgress: String, CaseIterable, Sendable {
    case fullTrip, routeNamed, numberPast63, statusNamed, otherTripField, unknownFields

    func apply(to update: inout TripUpdate) {
      switch self {
      case .fullTrip: update.fullTrip = true
      case .routeNamed: update.updatedFields.append(9)
      case .numberPast63: update.updatedFields.append(70)
      case .statusNamed: update.updatedFields.append(3)
      case .otherTripField: update.trip?.name = "providers/p/trips/t"
      case .unknownFields: update.unknownFields = UnknownFields(bytes: [0x78, 0x01])
      }
    }
  }

  @Test(arguments: NotProgress.allCases)
  func otherUpdatesAreLeftToTheWholeDecoder(_ change: NotProgress) throws {
    var update = progressUpdate()
    change.apply(to: &update)
    let bytes = update.serializedBytes()
    #expect(flat(bytes) == nil, "\(change)")
    #expect(throws: Never.self) { try TripUpdate(serializedBytes: bytes) }
  }

  @Test func malformedBytesAreLeftToTheWholeDecoderWhichRejectsThem() throws {
    let bytes = progressUpdate().serializedBytes()
    var rejected = 0
    // Every truncation of a valid update: the flat decoder never takes what the whole one refuses.
    for length in 0..<bytes.count {
      let prefix = Array(bytes[..<length])
      if (try? TripUpdate(serializedBytes: prefix)) == nil {
        rejected += 1
        #expect(flat(prefix) == nil, "prefix of \(length) bytes")
      }
    }
    #expect(rejected > 0)
    #expect(flat(bytes, options: WireDecodingOptions(maxMessageSize: bytes.count - 1)) == nil)
  }

  @Test func aTripFieldSeenTwiceIsLeftToTheWholeDecoderWhichMergesIt() throws {
    var second = Trip()
    var heading = VehicleLocation()
    heading.heading = Int32Value(180)
    second.lastLocation = heading
    var extra = TripUpdate()
    extra.trip = second
    let bytes = progressUpdate().serializedBytes() + extra.serializedBytes()
    #expect(flat(bytes) == nil)
    let whole = try TripUpdate(serializedBytes: bytes)
    #expect(whole.trip?.lastLocation?.heading == Int32Value(180))
    #expect(whole.trip?.lastLocation?.location == LatLng(latitude: 52.371, longitude: 4.893))
  }
}
