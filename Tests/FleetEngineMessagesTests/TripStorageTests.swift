// Tests/FleetEngineMessagesTests/TripStorageTests.swift - Trip's copy-on-write storage

import FleetEngineMessages
import Testing

@Suite("Trip storage: copies share it until one changes")
struct TripStorageTests {
  @Test func aCopySharesStorageAndAChangeToItLeavesTheOriginalAlone() {
    var original = Trip()
    original.name = "providers/p/trips/t"
    original.route = [LatLng(latitude: 1, longitude: 2)]
    original.remainingWaypoints.append(TripWaypoint())
    var copy = original
    #expect(copy.sharesStorage(with: original))
    #expect(MemoryLayout<Trip>.size == MemoryLayout<Int>.size)
    copy.remainingWaypoints[0].tripId = "t"
    copy.tripStatus = .complete
    #expect(!copy.sharesStorage(with: original))
    #expect(original.remainingWaypoints[0].tripId.isEmpty)
    #expect(original.tripStatus == .unknownTripStatus)
    #expect(copy.name == original.name)
    #expect(copy != original)
    copy.remainingWaypoints[0].tripId = ""
    copy.tripStatus = .unknownTripStatus
    #expect(copy == original)
    #expect(copy.hashValue == original.hashValue)
  }

  @Test func emptyTripsShareOneStorageAndDecodingGivesATripItsOwn() throws {
    let a = Trip()
    let b = Trip()
    #expect(a.sharesStorage(with: b))
    var named = Trip()
    named.name = "providers/p/trips/x"
    let decoded = try Trip(serializedBytes: named.serializedBytes())
    #expect(!decoded.sharesStorage(with: a))
    #expect(decoded == named)
    #expect(a.name.isEmpty && b == Trip())
  }

  @Test func aTripChangedInsideAnUpdateIsChangedThereOnly() throws {
    var trip = Trip()
    trip.vehicleId = "v"
    var update = TripUpdate()
    update.trip = trip
    update.trip?.vehicleId = "w"
    #expect(trip.vehicleId == "v")
    #expect(update.trip?.vehicleId == "w")
    #expect(MemoryLayout<TripUpdate>.size < 100)
  }

  @Test func aVehicleLocationsRareFieldsAreCopiedOnWriteAndEmptyEqualsAbsent() throws {
    var original = VehicleLocation()
    original.location = LatLng(latitude: 52.37, longitude: 4.89)
    original.speed = DoubleValue(8.5)
    original.rawLocation = LatLng(latitude: 52.36, longitude: 4.88)
    original.rawLocationSensor = .gps
    var copy = original
    copy.rawLocation?.latitude = 52.35
    copy.speed?.value = 9
    #expect(original.rawLocation?.latitude == 52.36)
    #expect(original.speed == DoubleValue(8.5))
    #expect(copy != original)
    copy.rawLocation?.latitude = 52.36
    copy.speed = DoubleValue(8.5)
    #expect(copy == original)
    #expect(copy.hashValue == original.hashValue)
    // Rare fields set and cleared again equal a location that never had them.
    var cleared = copy
    cleared.rawLocation = nil
    cleared.rawLocationSensor = .unknownSensor
    var plain = VehicleLocation()
    plain.location = original.location
    plain.speed = original.speed
    #expect(cleared == plain)
    #expect(cleared.hashValue == plain.hashValue)
    // Decoding keeps every field, rare ones included.
    let decoded = try VehicleLocation(serializedBytes: original.serializedBytes())
    #expect(decoded == original)
    #expect(try VehicleLocation(serializedBytes: plain.serializedBytes()) == plain)
  }

  @Test func aUniquelyHeldValueChangesItsRareFieldsInPlaceAndACopyGetsItsOwn() throws {
    // VehicleLocation: the first rare field makes the box, later ones change it in place.
    var location = VehicleLocation()
    location.location = LatLng(latitude: 52.37, longitude: 4.89)
    #expect(location.rareFieldsIdentity == nil)
    location.rawLocation = LatLng(latitude: 52.36, longitude: 4.88)
    let box = try #require(location.rareFieldsIdentity)
    location.rawLocationSensor = .gps
    location.altitude = DoubleValue(3)
    #expect(location.rareFieldsIdentity == box)
    var copy = location
    copy.altitude = DoubleValue(4)
    #expect(copy.rareFieldsIdentity != box)
    #expect(location.rareFieldsIdentity == box && location.altitude == DoubleValue(3))

    // Trip: a followed trip without rare fields has no box, decoded or built; a rare field makes one.
    var trip = Trip()
    trip.name = "providers/p/trips/t"
    trip.pickupPoint = TerminalLocation()
    trip.pickupPoint?.point = LatLng(latitude: 1, longitude: 2)
    trip.actualPickupPoint = nil
    trip.vehicleWaypoints = []
    #expect(trip.rareFieldsIdentity == nil)
    #expect(try Trip(serializedBytes: trip.serializedBytes()).rareFieldsIdentity == nil)
    trip.actualPickupPoint = StopLocation()
    trip.actualPickupPoint?.point = LatLng(latitude: 1, longitude: 2)
    let tripBox = try #require(trip.rareFieldsIdentity)
    var attribute = TripAttribute()
    attribute.key = "k"
    trip.attributes = [attribute]
    trip.actualDropoffPoint = StopLocation()
    #expect(trip.rareFieldsIdentity == tripBox)
    let decoded = try Trip(serializedBytes: trip.serializedBytes())
    #expect(decoded == trip && decoded.hashValue == trip.hashValue)
    var tripCopy = trip
    tripCopy.actualPickupPoint = nil
    #expect(tripCopy.rareFieldsIdentity != tripBox)
    #expect(trip.actualPickupPoint != nil && trip.rareFieldsIdentity == tripBox)
    // Rare fields set and cleared again equal a trip that never had them.
    tripCopy.attributes = []
    tripCopy.actualDropoffPoint = nil
    var plain = Trip()
    plain.name = trip.name
    plain.pickupPoint = trip.pickupPoint
    #expect(tripCopy == plain && tripCopy.hashValue == plain.hashValue)
  }

  @Test func aTerminalLocationsDeprecatedFieldsAreBoxedCopiedOnWriteAndEmptyEqualsAbsent() throws {
    var location = TerminalLocation()
    location.point = LatLng(latitude: 52.37, longitude: 4.89)
    location.tripId = ""
    #expect(location.deprecatedFieldsIdentity == nil)
    #expect(MemoryLayout<TerminalLocation>.size < 48)
    location.tripId = "t"
    let box = try #require(location.deprecatedFieldsIdentity)
    location.accessPointId = "a"
    location.terminalLocationType = .pickupWaypointType
    #expect(location.deprecatedFieldsIdentity == box)
    var copy = location
    copy.tripId = "u"
    #expect(copy.deprecatedFieldsIdentity != box && location.tripId == "t" && copy != location)
    let decoded = try TerminalLocation(serializedBytes: location.serializedBytes())
    #expect(decoded == location && decoded.hashValue == location.hashValue)
    copy.tripId = ""
    copy.accessPointId = ""
    copy.terminalLocationType = .unknownWaypointType
    var plain = TerminalLocation()
    plain.point = location.point
    #expect(copy == plain && copy.hashValue == plain.hashValue)
    #expect(try TerminalLocation(serializedBytes: plain.serializedBytes()).deprecatedFieldsIdentity == nil)
  }
}
