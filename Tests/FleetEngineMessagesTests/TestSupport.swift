// Tests/FleetEngineMessagesTests/TestSupport.swift - fixtures shared by the message tests

import FleetEngineMessages
import ProtoWire

/// The field numbers of the top-level fields in `bytes`, in the order they appear.
func topLevelFieldNumbers(_ bytes: [UInt8]) throws -> [Int] {
  try WireReader.withReader(over: bytes) { (reader) throws(WireDecodingError) -> [Int] in
    var numbers: [Int] = []
    var skipped = UnknownFields()
    while let tag = try reader.nextTag() {
      numbers.append(tag.fieldNumber)
      try reader.skipField(tag, into: &skipped)
    }
    return numbers
  }
}

/// Whether `numbers` never decreases.
func isAscending(_ numbers: [Int]) -> Bool {
  zip(numbers, numbers.dropFirst()).allSatisfy { $0 <= $1 }
}

/// The field numbers Trip declares (18 is reserved in trips.proto).
let tripFieldNumbers: Set<Int> = Set(1...35).subtracting([18])

/// A VehicleLocation with every one of its 32 fields set to a non-default value.
func makeFullVehicleLocation() -> VehicleLocation {
  var v = VehicleLocation()
  v.location = LatLng(latitude: 37.422, longitude: -122.084)
  v.heading = Int32Value(270)
  v.speedKmph = Int32Value(36)
  v.updateTime = Timestamp(seconds: 1_700_000_000, nanos: 250_000_000)
  v.altitude = DoubleValue(12.25)
  v.speed = DoubleValue(10)
  v.speedAccuracy = DoubleValue(0.5)
  v.horizontalAccuracy = DoubleValue(5)
  v.verticalAccuracy = DoubleValue(3)
  v.bearingAccuracy = DoubleValue(10)
  v.locationSensor = .gps
  v.isGpsSensorEnabled = BoolValue(false)  // present although it holds the default
  v.serverTime = Timestamp(seconds: 1_700_000_001)
  v.timeSinceUpdate = Int32Value(3)
  v.numStaleUpdates = Int32Value(1)
  v.rawLocation = LatLng(latitude: 37.4221, longitude: -122.0841)
  v.rawLocationTime = Timestamp(seconds: 1_699_999_999)
  v.supplementalLocation = LatLng(latitude: 37.4222, longitude: -122.0842)
  v.supplementalLocationTime = Timestamp(seconds: 1_699_999_998)
  v.supplementalLocationSensor = .customerSuppliedLocation
  v.supplementalLocationAccuracy = DoubleValue(15)
  v.latlngAccuracy = DoubleValue(4.5)
  v.headingAccuracy = DoubleValue(9.5)
  v.altitudeAccuracy = DoubleValue(2.5)
  v.rawLocationAccuracy = DoubleValue(8)
  v.roadSnapped = true
  v.isRoadSnapped = BoolValue(true)
  v.rawLocationSensor = .network
  v.flpLocation = LatLng(latitude: 37.4223, longitude: -122.0843)
  v.flpUpdateTime = Timestamp(seconds: 1_699_999_997, nanos: 1)
  v.flpLatlngAccuracyMeters = DoubleValue(6)
  v.flpHeadingDegrees = Int32Value(268)
  return v
}

/// A TripWaypoint with every field set.
func makeWaypoint(tripID: String, type: WaypointType, latitude: Double) -> TripWaypoint {
  var w = TripWaypoint()
  var location = TerminalLocation()
  location.point = LatLng(latitude: latitude, longitude: -122.1)
  location.terminalPointId = {
    var id = TerminalPointId()
    id.id = .placeId("ChIJ-\(tripID)")
    id.value = "legacy"
    return id
  }()
  location.accessPointId = "ap-1"
  location.tripId = tripID
  location.terminalLocationType = type
  w.location = location
  w.tripId = tripID
  w.waypointType = type
  w.pathToWaypoint = [
    LatLng(latitude: latitude - 0.01, longitude: -122.1), LatLng(latitude: latitude, longitude: -122.1),
  ]
  w.encodedPathToWaypoint = "_p~iF~ps|U_ulLnnqC"
  w.trafficToWaypoint = {
    var traffic = ConsumableTrafficPolyline()
    var interval = SpeedReadingInterval()
    interval.startPolylinePointIndex = 0
    interval.endPolylinePointIndex = 1
    interval.speed = .slow
    traffic.speedReadingInterval = [interval]
    traffic.encodedPathToWaypoint = "_p~iF~ps|U"
    return traffic
  }()
  w.distanceMeters = Int32Value(1_250)
  w.eta = Timestamp(seconds: 1_700_000_600)
  w.duration = ProtobufDuration(seconds: 300, nanos: 5)
  return w
}

/// A point of a trip's stops.
func makeStop(_ seconds: Int64) -> StopLocation {
  var stop = StopLocation()
  stop.point = LatLng(latitude: 37.0, longitude: -122.0)
  stop.timestamp = Timestamp(seconds: seconds)
  stop.stopTime = Timestamp(seconds: seconds + 30)
  return stop
}

/// A Trip with every one of its 34 fields set to a non-default value.
func makeFullTrip() -> Trip {
  var trip = Trip()
  trip.name = "providers/acme/trips/trip-1"
  trip.vehicleId = "vehicle-7"
  trip.tripStatus = .enrouteToDropoff
  trip.tripType = .shared
  trip.pickupPoint = {
    var p = TerminalLocation()
    p.point = LatLng(latitude: 37.39, longitude: -122.08)
    return p
  }()
  trip.pickupTime = Timestamp(seconds: 1_700_000_100)
  trip.dropoffPoint = {
    var p = TerminalLocation()
    p.point = LatLng(latitude: 37.77, longitude: -122.42)
    p.terminalPointId = {
      var id = TerminalPointId()
      id.id = .generatedId("")  // a set oneof member holding its default
      return id
    }()
    return p
  }()
  trip.dropoffTime = Timestamp(seconds: 1_700_002_000)
  trip.route = [LatLng(latitude: 37.4, longitude: -122.1), LatLng(latitude: 37.5, longitude: -122.2)]
  trip.numberOfPassengers = 2
  trip.lastLocation = makeFullVehicleLocation()
  trip.remainingDistanceMeters = Int32Value(0)  // present, holding the default
  trip.etaToFirstWaypoint = Timestamp(seconds: 1_700_000_700)
  trip.intermediateDestinations = [
    {
      var p = TerminalLocation()
      p.point = LatLng(latitude: 37.6, longitude: -122.3)
      return p
    }()
  ]
  trip.intermediateDestinationIndex = -1  // negative int32: ten bytes on the wire
  trip.remainingWaypoints = [
    makeWaypoint(tripID: "trip-1", type: .dropOffWaypointType, latitude: 37.77),
    makeWaypoint(tripID: "trip-2", type: .pickupWaypointType, latitude: 37.6),
  ]
  trip.currentRouteSegmentVersion = Timestamp(seconds: 1_700_000_050)
  trip.remainingWaypointsVersion = Timestamp(seconds: 1_700_000_051)
  trip.vehicleWaypoints = [makeWaypoint(tripID: "trip-1", type: .intermediateDestinationWaypointType, latitude: 37.6)]
  trip.currentRouteSegment = "_p~iF~ps|U_ulLnnqC_mqNvxq`@"
  trip.actualPickupPoint = makeStop(1_700_000_110)
  trip.actualDropoffPoint = makeStop(1_700_002_010)
  trip.currentRouteSegmentEndPoint = makeWaypoint(tripID: "trip-1", type: .dropOffWaypointType, latitude: 37.77)
  trip.intermediateDestinationsVersion = Timestamp(seconds: 1_700_000_052)
  trip.lastLocationSnappable = true
  trip.remainingTimeToFirstWaypoint = ProtobufDuration(seconds: 600)
  trip.currentRouteSegmentTraffic = {
    var traffic = ConsumableTrafficPolyline()
    var jam = SpeedReadingInterval()
    jam.startPolylinePointIndex = 3
    jam.endPolylinePointIndex = 9
    jam.speed = .trafficJam
    traffic.speedReadingInterval = [jam]
    return traffic
  }()
  trip.remainingWaypointsRouteVersion = Timestamp(seconds: 1_700_000_053)
  trip.currentRouteSegmentTrafficVersion = Timestamp(seconds: 1_700_000_054)
  trip.view = .journeySharingV1S
  trip.actualPickupArrivalPoint = makeStop(1_700_000_090)
  trip.actualIntermediateDestinationArrivalPoints = [makeStop(1_700_001_000), makeStop(1_700_001_500)]
  trip.actualIntermediateDestinations = [makeStop(1_700_001_010)]
  trip.attributes = [
    {
      var a = TripAttribute()
      a.key = "tier"
      a.tripAttributeValue = .stringValue("premium")
      return a
    }(),
    {
      var a = TripAttribute()
      a.key = "accessible"
      a.tripAttributeValue = .boolValue(false)
      return a
    }(),
    {
      var a = TripAttribute()
      a.key = "fare"
      a.tripAttributeValue = .numberValue(12.5)
      return a
    }(),
  ]
  return trip
}
