// Tests/FleetEngineMessagesTests/TripFieldsTests.swift - Trip fields by number: diff, project, apply

import FleetEngineMessages
import Primitives
import ProtoWire
import Testing

/// A Trip whose every one of the 34 fields is set and differs from `makeFullTrip()`'s.
private func makeOtherTrip() -> Trip {
  var trip = Trip()
  trip.name = "providers/acme/trips/trip-2"
  trip.vehicleId = "vehicle-8"
  trip.tripStatus = .complete
  trip.tripType = .exclusive
  trip.pickupPoint = {
    var p = TerminalLocation()
    p.point = LatLng(latitude: 37.391, longitude: -122.08)
    return p
  }()
  trip.pickupTime = Timestamp(seconds: 1_700_000_101)
  trip.dropoffPoint = {
    var p = TerminalLocation()
    p.point = LatLng(latitude: 37.77, longitude: -122.421)
    return p
  }()
  trip.dropoffTime = Timestamp(seconds: 1_700_002_001)
  trip.route = [LatLng(latitude: 37.4, longitude: -122.1)]
  trip.numberOfPassengers = 3
  trip.lastLocation = {
    var v = makeFullVehicleLocation()
    v.speed = DoubleValue(11)
    return v
  }()
  trip.remainingDistanceMeters = Int32Value(1)
  trip.etaToFirstWaypoint = Timestamp(seconds: 1_700_000_701)
  trip.intermediateDestinations = [
    {
      var p = TerminalLocation()
      p.point = LatLng(latitude: 37.6, longitude: -122.31)
      return p
    }()
  ]
  trip.intermediateDestinationIndex = 1
  trip.remainingWaypoints = [makeWaypoint(tripID: "trip-1", type: .dropOffWaypointType, latitude: 37.78)]
  trip.currentRouteSegmentVersion = Timestamp(seconds: 1_700_000_060)
  trip.remainingWaypointsVersion = Timestamp(seconds: 1_700_000_061)
  trip.vehicleWaypoints = [makeWaypoint(tripID: "trip-1", type: .pickupWaypointType, latitude: 37.6)]
  trip.currentRouteSegment = "_p~iF~ps|U"
  trip.actualPickupPoint = makeStop(1_700_000_111)
  trip.actualDropoffPoint = makeStop(1_700_002_011)
  trip.currentRouteSegmentEndPoint = makeWaypoint(tripID: "trip-1", type: .pickupWaypointType, latitude: 37.77)
  trip.intermediateDestinationsVersion = Timestamp(seconds: 1_700_000_062)
  trip.lastLocationSnappable = true  // a bool has one non-default value: `baseTrip()` clears it instead
  trip.remainingTimeToFirstWaypoint = ProtobufDuration(seconds: 601)
  trip.currentRouteSegmentTraffic = {
    var traffic = ConsumableTrafficPolyline()
    traffic.encodedPathToWaypoint = "_p~iF~ps|U"
    return traffic
  }()
  trip.remainingWaypointsRouteVersion = Timestamp(seconds: 1_700_000_063)
  trip.currentRouteSegmentTrafficVersion = Timestamp(seconds: 1_700_000_064)
  trip.view = .sdk
  trip.actualPickupArrivalPoint = makeStop(1_700_000_091)
  trip.actualIntermediateDestinationArrivalPoints = [makeStop(1_700_001_000)]
  trip.actualIntermediateDestinations = [makeStop(1_700_001_011)]
  trip.attributes = [
    {
      var a = TripAttribute()
      a.key = "fare"
      a.tripAttributeValue = .numberValue(13)
      return a
    }()
  ]
  return trip
}

@Suite("Trip fields by number")
struct TripFieldsTests {
  /// The full fixture trip, with field 26 (a bool, which has only one non-default value) cleared, so
  /// that every field of `makeOtherTrip()` differs from it.
  static func baseTrip() -> Trip {
    var trip = makeFullTrip()
    trip.lastLocationSnappable = false
    return trip
  }

  @Test func fieldNumbersAreTheDeclaredOnes() {
    #expect(Trip.fieldNumbers.count == 34)
    #expect(Set(Trip.fieldNumbers.map(Int.init)) == tripFieldNumbers)
    #expect(Trip.fieldNumbers == Trip.fieldNumbers.sorted())
  }

  @Test func fixturesDifferInEveryField() {
    let base = Self.baseTrip()
    let other = makeOtherTrip()
    #expect(other.changedFields(from: base) == Trip.fieldNumbers)
    #expect(base.changedFields(from: other) == Trip.fieldNumbers)
    #expect(other.changedFields(from: Trip()) == Trip.fieldNumbers)
    #expect(Trip().changedFields(from: other) == Trip.fieldNumbers)
    #expect(base.changedFields(from: base) == [])
    #expect(Trip().changedFields(from: Trip()) == [])
  }

  @Test("every field round-trips through projected and apply", arguments: Trip.fieldNumbers)
  func fieldRoundTrips(number: Int32) throws {
    let full = makeFullTrip()
    #expect(full.hasField(number))

    // The projection holds that field alone, and encodes to that field number only.
    let projection = full.projected(onto: [number])
    for other in Trip.fieldNumbers {
      #expect(projection.hasField(other) == (other == number), "field \(other) in the projection onto \(number)")
    }
    let numbers = try topLevelFieldNumbers(projection.serializedBytes())
    #expect(!numbers.isEmpty && numbers.allSatisfy { $0 == Int(number) })
    #expect(projection.changedFields(from: Trip()) == [number])

    // It survives the wire, and applying it to a trip lacking the field restores the full trip.
    let decoded = try Trip(serializedBytes: projection.serializedBytes())
    var cleared = full
    cleared.copyField(number, from: Trip())
    #expect(!cleared.hasField(number))
    #expect(cleared.changedFields(from: full) == [number])

    var update = TripUpdate()
    update.trip = decoded
    update.updatedFields = [number]
    let updateBytes = update.serializedBytes()
    var applied = cleared
    applied.apply(try TripUpdate(serializedBytes: updateBytes))
    #expect(applied == full)
    #expect(applied.serializedBytes() == full.serializedBytes())

    // And the other way: a listed field absent from the update's trip is cleared.
    var clearing = TripUpdate()
    clearing.trip = Trip()
    clearing.updatedFields = [number]
    var target = full
    target.apply(clearing)
    #expect(target == cleared)
  }

  @Test func changedFieldsOnRandomEdits() throws {
    var random = SplitMix64(seed: 0x5EED)
    let base = Self.baseTrip()
    let other = makeOtherTrip()
    for _ in 0..<300 {
      var edited = base
      var expected: [Int32] = []
      for number in Trip.fieldNumbers where Bool.random(using: &random) {
        // Half of the edits set a different value, half clear the field; both differ from the base,
        // except for the bool (26), which the base holds cleared.
        let clears = Bool.random(using: &random) && number != 26
        edited.copyField(number, from: clears ? Trip() : other)
        expected.append(number)
      }
      let changed = edited.changedFields(from: base)
      #expect(changed == expected)
      #expect(base.changedFields(from: edited) == expected)

      // The partial update built from the diff, sent over the wire, turns the old trip into the new one.
      var update = TripUpdate()
      update.trip = edited.projected(onto: changed)
      update.updatedFields = changed
      var client = base
      client.apply(try TripUpdate(serializedBytes: update.serializedBytes()))
      #expect(client == edited)
      #expect(client.changedFields(from: edited) == [])
    }
  }

  @Test func floatingPointComparesByBitPattern() {
    var trip = Self.baseTrip()
    trip.lastLocation?.speed = DoubleValue(.nan)
    trip.route.append(LatLng(latitude: .nan, longitude: 4.9))
    trip.attributes[2].tripAttributeValue = .numberValue(.nan)
    let copy = trip
    // `==` says a NaN differs from itself; the diff must not, or the field would be resent forever.
    #expect(copy != trip)
    #expect(copy.changedFields(from: trip) == [])

    // -0.0 == 0.0, but they encode differently, so a change between them is a change.
    var zero = Self.baseTrip()
    zero.route = [LatLng(latitude: 0.0, longitude: 1)]
    var negativeZero = zero
    negativeZero.route = [LatLng(latitude: -0.0, longitude: 1)]
    #expect(zero == negativeZero)
    #expect(negativeZero.changedFields(from: zero) == [9])
    #expect(zero.serializedBytes() != negativeZero.serializedBytes())

    // A different NaN payload is a different value.
    var otherNaN = trip
    otherNaN.lastLocation?.speed = DoubleValue(Double(nan: 7, signaling: false))
    #expect(otherNaN.changedFields(from: trip) == [11])
  }

  @Test func enumsCompareByWireValue() {
    var a = Trip()
    a.tripStatus = .complete
    var b = Trip()
    b.tripStatus = .unrecognized(5)
    #expect(a != b)
    #expect(a.changedFields(from: b) == [])
    b.tripStatus = .unrecognized(99)
    #expect(a.changedFields(from: b) == [3])
  }

  @Test func applyFullTripReplacesEverything() throws {
    var client = Self.baseTrip()
    client.unknownFields = UnknownFields(bytes: [0xC8, 0x3E, 0x01])  // field 1001 = 1
    var newer = Trip()
    newer.name = "providers/acme/trips/trip-9"
    newer.tripStatus = .new
    newer.unknownFields = UnknownFields(bytes: [0xD0, 0x3E, 0x02])  // field 1002 = 2

    var update = TripUpdate()
    update.trip = newer
    update.fullTrip = true
    update.updatedFields = [1, 2, 3]  // ignored when full_trip is set
    client.apply(try TripUpdate(serializedBytes: update.serializedBytes()))
    #expect(client == newer)
    #expect(client.unknownFields.bytes == [0xD0, 0x3E, 0x02])
    #expect(!client.hasField(11))

    // A full update without a trip empties the state.
    var empty = TripUpdate()
    empty.fullTrip = true
    client.apply(empty)
    #expect(client == Trip())
  }

  @Test func applyPartialWithAClearedField() throws {
    var client = Self.baseTrip()
    client.unknownFields = UnknownFields(bytes: [0xC8, 0x3E, 0x01])
    var changes = Trip()
    changes.tripStatus = .complete  // set: replaces
    changes.numberOfPassengers = 4  // set but not listed: must not be applied
    // last_location (11) and route (9) are listed but absent: cleared.
    var update = TripUpdate()
    update.trip = changes
    update.updatedFields = [3, 11, 9, 18, 0, -1, 99, 3]  // with unknown numbers and a duplicate, all ignored
    update.unknownFields = UnknownFields()
    client.apply(try TripUpdate(serializedBytes: update.serializedBytes()))

    var expected = Self.baseTrip()
    expected.tripStatus = .complete
    expected.lastLocation = nil
    expected.route = []
    expected.unknownFields = UnknownFields(bytes: [0xC8, 0x3E, 0x01])  // partial updates leave unknown fields
    #expect(client == expected)
    #expect(client.numberOfPassengers == 2)
    #expect(client.changedFields(from: Self.baseTrip()) == [3, 9, 11])

    // A partial update without a trip clears what it lists.
    var bare = TripUpdate()
    bare.updatedFields = [1, 2]
    client.apply(bare)
    #expect(client.name.isEmpty && client.vehicleId.isEmpty)
    #expect(client.tripStatus == .complete)

    // And one listing nothing changes nothing.
    let before = client
    client.apply(TripUpdate())
    #expect(client == before)
  }

  @Test func unknownFieldNumbers() {
    let full = makeFullTrip()
    for number: Int32 in [0, 18, 36, -1, 1000, .max, .min] {
      #expect(!full.hasField(number))
      var copy = full
      copy.copyField(number, from: Trip())
      #expect(copy == full)
    }
    #expect(full.projected(onto: [18, 36]) == Trip())
  }

  @Test func projectionDropsUnknownFieldsAndKeepsListedOnes() {
    var trip = makeFullTrip()
    trip.unknownFields = UnknownFields(bytes: [0xC8, 0x3E, 0x01])
    let projection = trip.projected(onto: [3, 11])
    #expect(projection.unknownFields.isEmpty)
    #expect(projection.tripStatus == trip.tripStatus)
    #expect(projection.lastLocation == trip.lastLocation)
    #expect(projection.changedFields(from: Trip()) == [3, 11])
  }
}
