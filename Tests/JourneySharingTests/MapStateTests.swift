// Tests/JourneySharingTests/MapStateTests.swift - the headless map state computed from Trip snapshots

import FleetEngineMessages
import JourneySharing
import Testing

@Suite("Map state: traffic segments")
struct MapTrafficSegmentTests {
  /// 11 points north, intervals [0,3] NORMAL, [3,7] SLOW, [7,10] TRAFFIC_JAM.
  let route = mapTestNorthRoute(count: 11)
  let intervals = [
    mapTestInterval(0, 3, .normal), mapTestInterval(3, 7, .slow), mapTestInterval(7, 10, .trafficJam),
  ]

  @Test("Intervals cut the whole route; neighbours share their boundary point")
  func wholeRoute() {
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: mapTestTrip(route: route, traffic: intervals), at: 1_000)
    let segments = map.state.trafficSegments
    #expect(segments.map(\.speed) == [.normal, .slow, .trafficJam])
    #expect(segments.map(\.points.count) == [4, 5, 4])
    #expect(segments.map(\.pointRange) == [0...3, 3...7, 7...10])
    #expect(segments[0].points == Array(route[0...3]))
    #expect(segments[1].points == Array(route[3...7]))
    #expect(segments[2].points == Array(route[7...10]))
    #expect(map.state.remainingRoute == route)
  }

  @Test("A vehicle between points 4 and 5 trims the route; the intervals shift with it")
  func trimmedMidSegment() throws {
    let vehicle = mapTestPoint(3_700_450, -12_200_000)
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(
      with: mapTestTrip(route: route, vehicle: mapTestLocation(vehicle, time: 1_000), traffic: intervals), at: 1_000)
    let state = map.state
    #expect(state.remainingRoute.count == 7)
    let start = try #require(state.remainingRoute.first)
    #expect(mapTestDistance(start, vehicle) < 0.01)
    #expect(Array(state.remainingRoute.dropFirst()) == Array(route[5...10]))
    #expect(state.trafficSegments.map(\.speed) == [.slow, .trafficJam])
    #expect(state.trafficSegments.map(\.points.count) == [4, 4])
    #expect(state.trafficSegments.map(\.pointRange) == [0...3, 3...6])
    #expect(state.trafficSegments[0].points.first == start)
    #expect(state.trafficSegments[1].points == Array(route[7...10]))
  }

  @Test("A vehicle exactly on point 3 drops the NORMAL interval that ends there")
  func trimmedAtVertex() {
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(
      with: mapTestTrip(route: route, vehicle: mapTestLocation(route[3], time: 1_000), traffic: intervals), at: 1_000)
    let state = map.state
    #expect(state.remainingRoute == Array(route[3...10]))
    #expect(state.trafficSegments.map(\.speed) == [.slow, .trafficJam])
    #expect(state.trafficSegments.map(\.points.count) == [5, 4])
    #expect(state.trafficSegments.map(\.pointRange) == [0...4, 4...7])
  }

  @Test("Gaps become NO_DATA, and a route without traffic is one NO_DATA segment")
  func gapsAndNoTraffic() {
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: mapTestTrip(route: route, traffic: [mapTestInterval(2, 4, .slow)]), at: 1_000)
    #expect(map.state.trafficSegments.map(\.speed) == [.noData, .slow, .noData])
    #expect(map.state.trafficSegments.map(\.points.count) == [3, 3, 7])

    var plain = MapStateBuilder(tripName: mapTestTripName)
    plain.update(with: mapTestTrip(route: route), at: 1_000)
    #expect(plain.state.trafficSegments == [TrafficSegment(points: route, speed: .noData, pointRange: 0...10)])
  }

  @Test("Unsorted, overlapping, out-of-range and unknown readings stay within the route")
  func hostileIntervals() {
    var map = MapStateBuilder(tripName: mapTestTripName)
    let hostile = [
      mapTestInterval(5, 1_000, .trafficJam), mapTestInterval(-3, 6, .slow), mapTestInterval(9, 2, .normal),
      mapTestInterval(8, 9, .unrecognized(42)),
    ]
    map.update(with: mapTestTrip(route: route, traffic: hostile), at: 1_000)
    // SLOW starts first and wins edges 0..<6; the jam takes the rest; the reversed interval is empty.
    #expect(map.state.trafficSegments.map(\.speed) == [.slow, .trafficJam])
    #expect(map.state.trafficSegments.map(\.points.count) == [7, 5])
    #expect(map.state.trafficSegments.last?.points.last == route[10])
  }
}

@Suite("Map state: routes and stops")
struct MapRouteAndStopTests {
  @Test("A LatLng route and waypoint paths give the same state as the encoded ones")
  func encodedEqualsLatLng() {
    let route = mapTestNorthRoute(count: 6)
    let later = [route[5], mapTestPoint(3_700_500, -12_199_900), mapTestPoint(3_700_600, -12_199_900)]
    let vehicle = mapTestLocation(mapTestPoint(3_700_150, -12_200_000), time: 1_000, speed: 8, heading: 0)
    var plain = mapTestTrip(
      route: route, vehicle: vehicle,
      waypoints: [
        mapTestWaypoint(type: .pickupWaypointType, at: route[5], path: route, distance: 555, eta: 1_060),
        mapTestWaypoint(type: .dropOffWaypointType, at: later[2], path: later, distance: 200, eta: 1_100),
      ],
      traffic: [mapTestInterval(0, 2, .slow), mapTestInterval(2, 5, .normal)])
    plain.remainingDistanceMeters = Int32Value(390)

    var encoded = plain
    encoded.route = []
    encoded.currentRouteSegment = EncodedPolyline.encode(route)
    for index in encoded.remainingWaypoints.indices {
      encoded.remainingWaypoints[index].encodedPathToWaypoint =
        EncodedPolyline.encode(encoded.remainingWaypoints[index].pathToWaypoint)
      encoded.remainingWaypoints[index].pathToWaypoint = []
    }

    var a = MapStateBuilder(tripName: mapTestTripName)
    var b = MapStateBuilder(tripName: mapTestTripName)
    a.update(with: plain, at: 1_000)
    b.update(with: encoded, at: 1_000)
    #expect(a.state == b.state)
    #expect(a.state(at: 1_010) == b.state(at: 1_010))
    #expect(a.geoJSON(at: 1_005) == b.geoJSON(at: 1_005))
    #expect(a.state.remainingRoute.count == 5)
    #expect(a.state.remainingRouteAfterNextWaypoint == later)
    #expect(a.state.trafficSegments.map(\.speed) == [.slow, .normal])
  }

  @Test("Without route and current segment, the first waypoint's encoded path is the active route")
  func firstWaypointPathFallback() {
    let route = mapTestNorthRoute(count: 4)
    var trip = mapTestTrip(route: route)
    trip.route = []
    trip.remainingWaypoints[0].pathToWaypoint = []
    trip.remainingWaypoints[0].encodedPathToWaypoint = EncodedPolyline.encode(route)
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: trip, at: 1_000)
    #expect(map.state.remainingRoute == route)

    // Waiting at the pickup, the path that led there is not a route ahead.
    trip.tripStatus = .arrivedAtPickup
    map.update(with: trip, at: 1_001)
    #expect(map.state.remainingRoute.isEmpty)
    #expect(map.state.pickup?.position == route[3])
  }

  @Test("A shared pool's other riders' stops are filtered out, and distances run through them")
  func sharedPool() throws {
    let route = mapTestNorthRoute(count: 3)
    let stops = (3...6).map { mapTestPoint(3_700_000 + 100 * $0, -12_200_000) }
    let vehicle = mapTestLocation(route[0], time: 1_000)
    let trip = mapTestTrip(
      route: route, vehicle: vehicle,
      waypoints: [
        mapTestWaypoint(tripID: "trip-2", type: .pickupWaypointType, at: route[2], path: route, eta: 1_030),
        mapTestWaypoint(
          type: .pickupWaypointType, at: stops[0], path: [route[2], stops[0]], distance: 100, eta: 1_050),
        mapTestWaypoint(tripID: "trip-2", type: .dropOffWaypointType, at: stops[1], path: [stops[0], stops[1]]),
        mapTestWaypoint(type: .dropOffWaypointType, at: stops[2], path: [stops[1], stops[2]], distance: 120),
        mapTestWaypoint(tripID: "trip-3", type: .pickupWaypointType, at: stops[3], path: [stops[2], stops[3]]),
      ])
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: trip, at: 1_000)
    let state = map.state
    let pickup = try #require(state.pickup)
    let dropoff = try #require(state.dropoff)
    #expect(pickup.position == stops[0])
    #expect(pickup.eta == 1_050)
    #expect(dropoff.position == stops[2])
    #expect(state.intermediateDestinations.isEmpty)
    #expect(state.stops.count == 2)
    // First leg: the active route's length (no remaining_distance_meters); then 100 m; then trip-2's leg by its
    // path's length (no distance_meters); then 120 m.
    let firstLeg = 2 * 0.001 * mapTestMetersPerDegree
    let otherLeg = 0.001 * mapTestMetersPerDegree
    #expect(abs(try #require(pickup.distanceMeters) - (firstLeg + 100)) < 0.01)
    #expect(abs(try #require(dropoff.distanceMeters) - (firstLeg + 100 + otherLeg + 120)) < 0.01)
    // The later route stops at this trip's drop-off: trip-3's pickup is not this rider's business.
    #expect(state.remainingRouteAfterNextWaypoint == [route[2], stops[0], stops[1], stops[2]])
    #expect(!state.remainingRouteAfterNextWaypoint.contains(stops[3]))
  }

  @Test("Intermediate destinations ahead keep their index in the trip's list")
  func intermediateDestinations() {
    let route = mapTestNorthRoute(count: 3)
    let stopB = mapTestPoint(3_700_300, -12_200_000)
    let stopC = mapTestPoint(3_700_400, -12_200_000)
    var trip = mapTestTrip(
      route: route, status: .enrouteToIntermediateDestination,
      waypoints: [
        mapTestWaypoint(type: .intermediateDestinationWaypointType, at: route[2], path: route),
        mapTestWaypoint(type: .intermediateDestinationWaypointType, at: stopB, path: [route[2], stopB]),
        mapTestWaypoint(type: .dropOffWaypointType, at: stopC, path: [stopB, stopC]),
      ])
    trip.intermediateDestinations = [route[1], route[2], stopB].map { point in
      var location = TerminalLocation()
      location.point = point
      return location
    }
    trip.intermediateDestinationIndex = 1
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: trip, at: 1_000)
    #expect(map.state.pickup == nil)
    #expect(map.state.intermediateDestinations.map(\.position) == [route[2], stopB])
    #expect(map.state.intermediateDestinations.map(\.intermediateDestinationIndex) == [1, 2])
    #expect(map.state.stops.map(\.kind) == [.intermediateDestination, .intermediateDestination, .dropoff])
  }

  @Test("Without remaining waypoints, the trip's own points give the stops, by status")
  func stopsFromTripPoints() {
    var trip = Trip()
    trip.name = mapTestTripName
    trip.tripStatus = .new
    var pickup = TerminalLocation()
    pickup.point = mapTestPoint(3_700_000, -12_200_000)
    var dropoff = TerminalLocation()
    dropoff.point = mapTestPoint(3_701_000, -12_200_000)
    trip.pickupPoint = pickup
    trip.dropoffPoint = dropoff
    trip.pickupTime = Timestamp(seconds: 1_100)
    var map = MapStateBuilder(tripName: "trip-1")
    map.update(with: trip, at: 1_000)
    #expect(map.state.pickup?.position == pickup.point)
    #expect(map.state.pickup?.eta == 1_100)
    #expect(map.state.dropoff?.position == dropoff.point)
    #expect(map.state.vehicle == nil)
    #expect(map.state.cameraBounds?.contains(all: [pickup.point!, dropoff.point!]) == true)

    trip.tripStatus = .enrouteToDropoff
    map.update(with: trip, at: 1_010)
    #expect(map.state.pickup == nil)
    #expect(map.state.dropoff?.position == dropoff.point)
  }

  @Test("CANCELED and COMPLETE clear the stops and the route ahead, keep the vehicle and the traveled path")
  func terminalStates() throws {
    let route = mapTestNorthRoute(count: 5)
    var trip = mapTestTrip(
      route: route,
      waypoints: [
        mapTestWaypoint(type: .pickupWaypointType, at: route[4], path: route),
        mapTestWaypoint(type: .dropOffWaypointType, at: route[0], path: [route[4], route[0]]),
      ], traffic: [mapTestInterval(0, 4, .slow)])
    for status in [TripStatus.canceled, .complete] {
      trip.tripStatus = .enrouteToPickup
      trip.lastLocation = mapTestLocation(route[1], time: 1_000)
      var map = MapStateBuilder(tripName: mapTestTripName)
      map.update(with: trip, at: 1_000)
      #expect(map.state.pickup != nil && map.state.dropoff != nil)
      #expect(!map.state.remainingRoute.isEmpty)
      trip.tripStatus = status
      trip.lastLocation = mapTestLocation(route[2], time: 1_010, speed: 10)
      // The merged trip may still hold the old route and waypoints; the status wins.
      map.update(with: trip, at: 1_010)
      let state = map.state
      #expect(state.tripStatus == status)
      #expect(state.pickup == nil)
      #expect(state.dropoff == nil)
      #expect(state.intermediateDestinations.isEmpty)
      #expect(state.remainingRoute.isEmpty)
      #expect(state.remainingRouteAfterNextWaypoint.isEmpty)
      #expect(state.trafficSegments.isEmpty)
      #expect(state.vehicle?.position == route[2])
      #expect(state.traveledRoute == [route[1], route[2]])
      // No route: no dead reckoning, whatever the speed.
      #expect(map.interpolatedVehicle(at: 1_030)?.position == route[2])
    }
  }

  @Test("A missing last_location gives no vehicle; the route is shown whole")
  func missingLastLocation() throws {
    let route = mapTestNorthRoute(count: 4)
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: mapTestTrip(route: route), at: 1_000)
    #expect(map.state.vehicle == nil)
    #expect(map.interpolatedVehicle(at: 1_010) == nil)
    #expect(map.state.remainingRoute == route)
    #expect(map.state.traveledRoute.isEmpty)
    let bounds = try #require(map.state.cameraBounds)
    #expect(bounds.contains(all: route))
  }

  @Test("Snapshots of another trip are ignored")
  func otherTripIgnored() {
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: mapTestTrip(route: mapTestNorthRoute(count: 3)), at: 1_000)
    let before = map.state
    var other = mapTestTrip(route: mapTestNorthRoute(count: 5), status: .canceled)
    other.name = "providers/acme/trips/trip-2"
    map.update(with: other, at: 1_001)
    #expect(map.state == before)
  }

  @Test("Camera bounds hold every marker and route ahead, with padding")
  func cameraBounds() throws {
    let route = [
      mapTestPoint(3_700_000, -12_200_000), mapTestPoint(3_700_500, -12_200_000),
      mapTestPoint(3_700_500, -12_199_400),
    ]
    let later = [route[2], mapTestPoint(3_699_800, -12_199_000), mapTestPoint(3_699_600, -12_201_000)]
    let trip = mapTestTrip(
      route: route, vehicle: mapTestLocation(mapTestPoint(3_700_200, -12_200_000), time: 1_000, speed: 10),
      waypoints: [
        mapTestWaypoint(type: .pickupWaypointType, at: route[2], path: route),
        mapTestWaypoint(type: .intermediateDestinationWaypointType, at: later[1], path: Array(later[0...1])),
        mapTestWaypoint(type: .dropOffWaypointType, at: later[2], path: Array(later[1...2])),
      ])
    var map = MapStateBuilder(tripName: mapTestTripName, cameraPadding: 0.2)
    map.update(with: trip, at: 1_000)
    for state in [map.state, map.state(at: 1_020)] {
      let bounds = try #require(state.cameraBounds)
      var points = state.remainingRoute + state.remainingRouteAfterNextWaypoint + state.stops.map(\.position)
      points.append(try #require(state.vehicle?.position))
      #expect(bounds.contains(all: points))
      #expect(state.stops.count == 3)
      let tight = try #require(CoordinateBounds.fitting(points))
      // Padded by 20 % of the fitted height on the south (and every other) side.
      let height = tight.northeast.latitude - tight.southwest.latitude
      #expect(abs((tight.southwest.latitude - bounds.southwest.latitude) - 0.2 * height) < 1e-9)
      #expect(bounds.northeast.longitude > tight.northeast.longitude)
      #expect(!bounds.contains(mapTestPoint(3_702_000, -12_200_000)))
    }
  }
}

@Suite("Map state: coordinate bounds")
struct MapCoordinateBoundsTests {
  @Test("Fitting, containment, padding and the minimum camera span")
  func bounds() throws {
    #expect(CoordinateBounds.fitting([LatLng]()) == nil)
    let points = [mapTestPoint(3_700_000, -12_200_000), mapTestPoint(3_701_000, -12_198_000)]
    let bounds = try #require(CoordinateBounds.fitting(points))
    #expect(bounds.southwest == points[0] && bounds.northeast == points[1])
    #expect(bounds.contains(all: points) && bounds.contains(bounds.center))
    #expect(!bounds.contains(mapTestPoint(3_701_001, -12_199_000)))
    let padded = bounds.padded(by: 0.5)
    #expect(abs(padded.northeast.latitude - 37.015) < 1e-9 && abs(padded.southwest.longitude - -122.01) < 1e-9)
    #expect(bounds.padded(by: -1) == bounds && bounds.padded(by: .nan) == bounds)
    #expect(
      CoordinateBounds.fitting([LatLng(latitude: 89.9, longitude: 179.9)])?.padded(by: 10).northeast.latitude
        == 89.9)

    // A vehicle alone (a finished trip) still gets a camera rectangle about 200 m across.
    var map = MapStateBuilder(tripName: mapTestTripName, cameraPadding: 0)
    map.update(
      with: mapTestTrip(route: [], vehicle: mapTestLocation(points[0], time: 1_000), status: .complete), at: 1_000)
    let camera = try #require(map.state.cameraBounds)
    #expect(camera.contains(points[0]))
    #expect(abs(camera.northeast.latitude - camera.southwest.latitude - 0.002) < 1e-12)
    #expect(abs(camera.northeast.longitude - camera.southwest.longitude - 0.002) < 1e-12)
  }
}

@Suite("Map state: vehicle motion")
struct MapMotionTests {
  /// Two points 0.01° apart along a meridian: about 1,111.95 m due north.
  let segment = [mapTestPoint(3_700_000, -12_200_000), mapTestPoint(3_701_000, -12_200_000)]

  @Test("At the fix's time the vehicle is the fix")
  func atFixTime() throws {
    let fixPoint = mapTestPoint(3_700_100, -12_200_003)  // 2.7 m off the route
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(
      with: mapTestTrip(route: segment, vehicle: mapTestLocation(fixPoint, time: 990, speed: 12, heading: 7)),
      at: 1_000)
    let vehicle = try #require(map.interpolatedVehicle(at: 990))
    #expect(vehicle.position == fixPoint)
    #expect(vehicle.heading == 7)
    #expect(vehicle.speed == 12)
    #expect(vehicle.lastFix == 990)
    #expect(vehicle.isRoadSnapped)
    #expect(map.state.vehicle?.position == fixPoint)
    // Before the fix: the fix, not a position extrapolated backwards.
    #expect(map.interpolatedVehicle(at: 900)?.position == fixPoint)
  }

  @Test("Halfway along a straight segment at a known speed")
  func halfway() throws {
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(
      with: mapTestTrip(route: segment, vehicle: mapTestLocation(segment[0], time: 1_000, speed: 10, heading: 0)),
      at: 1_000)
    let length = 0.01 * mapTestMetersPerDegree
    let vehicle = try #require(map.interpolatedVehicle(at: 1_000 + length / 2 / 10))
    #expect(mapTestDistance(vehicle.position, mapTestPoint(3_700_500, -12_200_000)) < 1)
    #expect(abs(try #require(vehicle.heading)) < 1e-6)
    // The animated state agrees: the route ahead starts at the vehicle, half of it is left.
    let state = map.state(at: 1_000 + length / 2 / 10)
    #expect(state.vehicle == vehicle)
    #expect(state.remainingRoute.count == 2)
    #expect(mapTestDistance(state.remainingRoute[0], vehicle.position) < 0.01)
    #expect(state.traveledRoute.count == 2)
    #expect(state.traveledRoute.last == vehicle.position)
  }

  @Test("Dead reckoning stops at the next waypoint and after maxExtrapolationSeconds")
  func neverBeyondNextWaypoint() throws {
    let trip = mapTestTrip(route: segment, vehicle: mapTestLocation(segment[0], time: 1_000, speed: 25))
    var unlimited = MapStateBuilder(tripName: mapTestTripName, maxExtrapolationSeconds: 1_000_000)
    unlimited.update(with: trip, at: 1_000)
    for time in [1_050.0, 1_100, 10_000, 1e9] {
      let vehicle = try #require(unlimited.interpolatedVehicle(at: time))
      #expect(vehicle.position == segment[1])
      #expect(unlimited.state(at: time).remainingRoute.isEmpty)
    }
    var capped = MapStateBuilder(tripName: mapTestTripName, maxExtrapolationSeconds: 20)
    capped.update(with: trip, at: 1_000)
    let vehicle = try #require(capped.interpolatedVehicle(at: 1_300))
    #expect(abs(mapTestNorthOffset(vehicle.position) - 500) < 1)
  }

  @Test("The heading follows the route segment the vehicle is on")
  func headingFollowsRoute() throws {
    // North 111 m, then east.
    let corner = [
      mapTestPoint(3_700_000, -12_200_000), mapTestPoint(3_700_100, -12_200_000),
      mapTestPoint(3_700_100, -12_199_800),
    ]
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(
      with: mapTestTrip(route: corner, vehicle: mapTestLocation(corner[0], time: 1_000, speed: 10, heading: 3)),
      at: 1_000)
    #expect(abs(try #require(map.interpolatedVehicle(at: 1_005)?.heading)) < 1e-6)
    let east = try #require(map.interpolatedVehicle(at: 1_015)?.heading)
    #expect(abs(east - 90) < 0.01)
  }

  @Test("A new fix slightly behind the shown position holds the marker; it never moves back")
  func neverBackwards() throws {
    let route = mapTestNorthRoute(count: 11)
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(
      with: mapTestTrip(route: route, vehicle: mapTestLocation(route[0], time: 1_000, speed: 10)), at: 1_000)
    // Shown at 200 m at 1,020; the new fix (taken at 1,018) says 160 m at 10 m/s: 180 m by 1,020.
    let behind = mapTestPoint(3_700_000 + Int((160 / mapTestMetersPerDegree * 100_000).rounded()), -12_200_000)
    #expect(abs(mapTestNorthOffset(try #require(map.interpolatedVehicle(at: 1_020)).position) - 200) < 0.5)
    map.update(with: mapTestTrip(route: route, vehicle: mapTestLocation(behind, time: 1_018, speed: 10)), at: 1_020)

    var previous = -Double.infinity
    for step in 0...80 {
      let time = 1_020 + Double(step) * 0.25
      let offset = mapTestNorthOffset(try #require(map.interpolatedVehicle(at: time)).position)
      #expect(offset >= previous - 1e-6, "moved back at \(time)")
      previous = offset
    }
    // Held at 200 m until the new fix's extrapolation passes it (at 1,022), then it leads.
    #expect(abs(mapTestNorthOffset(try #require(map.interpolatedVehicle(at: 1_021)).position) - 200) < 0.5)
    #expect(abs(mapTestNorthOffset(try #require(map.interpolatedVehicle(at: 1_030)).position) - 280) < 0.5)
    // At the new fix's own time (before it arrived) the position is the fix.
    #expect(map.interpolatedVehicle(at: 1_018)?.position == behind)
  }

  @Test("A fix far behind the shown position is a correction: the marker jumps to it")
  func correctionJumps() throws {
    let route = mapTestNorthRoute(count: 11)
    var map = MapStateBuilder(tripName: mapTestTripName, maxHoldMeters: 50)
    map.update(
      with: mapTestTrip(route: route, vehicle: mapTestLocation(route[0], time: 1_000, speed: 10)), at: 1_000)
    map.update(with: mapTestTrip(route: route, vehicle: mapTestLocation(route[1], time: 1_030, speed: 0)), at: 1_030)
    // Shown at 300 m before; the fix says 111 m and stopped.
    #expect(map.interpolatedVehicle(at: 1_031)?.position == route[1])
  }

  @Test("A stale fix is flagged at the queried time; a replayed older fix does not replace a newer one")
  func staleness() throws {
    let route = mapTestNorthRoute(count: 4)
    var map = MapStateBuilder(tripName: mapTestTripName, staleThreshold: 20)
    map.update(with: mapTestTrip(route: route, vehicle: mapTestLocation(route[1], time: 1_000)), at: 1_005)
    #expect(map.state.vehicle?.isStale == false)
    #expect(map.interpolatedVehicle(at: 1_020)?.isStale == false)
    #expect(map.interpolatedVehicle(at: 1_021)?.isStale == true)
    #expect(map.state(at: 1_030).vehicle?.isStale == true)

    map.update(with: mapTestTrip(route: route, vehicle: mapTestLocation(route[0], time: 990)), at: 1_040)
    #expect(map.state.vehicle?.position == route[1])
    #expect(map.state.vehicle?.lastFix == 1_000)
    #expect(map.state.vehicle?.isStale == true)

    var defaults = MapStateBuilder(tripName: mapTestTripName)
    defaults.update(with: mapTestTrip(route: route, vehicle: mapTestLocation(route[1], time: 1_000)), at: 1_031)
    #expect(defaults.state.vehicle?.isStale == true)
  }
}

@Suite("Map state: traveled route")
struct MapTraveledRouteTests {
  @Test("The traveled path grows fix by fix and follows the route between fixes")
  func growsAlongRoute() throws {
    // North 333 m, then east: a fix before and one after the corner.
    let route = [
      mapTestPoint(3_700_000, -12_200_000), mapTestPoint(3_700_300, -12_200_000),
      mapTestPoint(3_700_300, -12_199_600),
    ]
    let before = mapTestPoint(3_700_100, -12_200_000)
    let after = mapTestPoint(3_700_300, -12_199_800)
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: mapTestTrip(route: route, vehicle: mapTestLocation(before, time: 1_000)), at: 1_000)
    #expect(map.state.traveledRoute == [before])
    map.update(with: mapTestTrip(route: route, vehicle: mapTestLocation(after, time: 1_030)), at: 1_030)
    // Through the corner, not across it.
    #expect(map.state.traveledRoute == [before, route[1], after])
    // Jitter slightly behind the path's end is not drawn.
    let jitter = mapTestPoint(3_700_300, -12_199_801)
    map.update(with: mapTestTrip(route: route, vehicle: mapTestLocation(jitter, time: 1_031)), at: 1_031)
    #expect(map.state.traveledRoute == [before, route[1], after])
    #expect(map.state.vehicle?.position == jitter)
  }

  @Test("Across a leg change the path finishes the old leg and follows the new one", arguments: [false, true])
  func acrossLegChange(waitsAtPickup: Bool) throws {
    let first = mapTestNorthRoute(count: 4)
    let second = [first[3], mapTestPoint(3_700_300, -12_199_800), mapTestPoint(3_700_300, -12_199_600)]
    let onSecond = mapTestPoint(3_700_300, -12_199_700)
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: mapTestTrip(route: first, vehicle: mapTestLocation(first[1], time: 1_000)), at: 1_000)
    if waitsAtPickup {
      // At the pickup: no route ahead; the fix is the old route's end.
      var waiting = mapTestTrip(route: [], vehicle: mapTestLocation(first[3], time: 1_030), status: .arrivedAtPickup)
      waiting.remainingWaypoints = [
        mapTestWaypoint(type: .pickupWaypointType, at: first[3]),
        mapTestWaypoint(type: .dropOffWaypointType, at: second[2], path: second),
      ]
      map.update(with: waiting, at: 1_030)
      #expect(map.state.traveledRoute == [first[1], first[2], first[3]])
      #expect(map.state.remainingRoute.isEmpty)
      #expect(map.state.remainingRouteAfterNextWaypoint == second)
    }
    var next = mapTestTrip(
      route: second, vehicle: mapTestLocation(onSecond, time: 1_060), status: .enrouteToDropoff)
    next.remainingWaypoints = [mapTestWaypoint(type: .dropOffWaypointType, at: second[2], path: second)]
    map.update(with: next, at: 1_060)
    #expect(map.state.traveledRoute == [first[1], first[2], first[3], second[1], onSecond])
    #expect(map.state.pickup == nil)
    #expect(map.state.remainingRoute.first == onSecond)
  }

  @Test("The traveled path keeps only the newest maxTraveledPoints points")
  func bounded() {
    let route = mapTestNorthRoute(count: 40)
    var map = MapStateBuilder(tripName: mapTestTripName, maxTraveledPoints: 5)
    for index in 0..<30 {
      let trip = mapTestTrip(route: route, vehicle: mapTestLocation(route[index], time: 1_000 + Double(index)))
      map.update(with: trip, at: 1_000 + Double(index))
      #expect(map.state.traveledRoute.count == min(index + 1, 5))
      #expect(map.state.traveledRoute.last == route[index])
    }
    #expect(map.state.traveledRoute == Array(route[25...29]))
    #expect(map.state(at: 1_040).traveledRoute.count <= 5)
  }

  @Test("A new vehicle (reassignment) starts a new traveled path")
  func reassignment() {
    let route = mapTestNorthRoute(count: 5)
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: mapTestTrip(route: route, vehicle: mapTestLocation(route[1], time: 1_000)), at: 1_000)
    var trip = mapTestTrip(route: route, vehicle: mapTestLocation(route[0], time: 990))
    trip.vehicleId = "vehicle-2"
    map.update(with: trip, at: 1_010)
    #expect(map.state.traveledRoute == [route[0]])
    #expect(map.state.vehicle?.position == route[0])
  }
}

@Suite("Map state: GeoJSON")
struct MapGeoJSONTests {
  /// A vehicle at the start of a 3-point route to the pickup, then a leg to the drop-off.
  func smallTrip() -> Trip {
    let route = [
      LatLng(latitude: 37, longitude: -122), LatLng(latitude: 37.001, longitude: -122),
      LatLng(latitude: 37.002, longitude: -122),
    ]
    let dropoff = LatLng(latitude: 37.003, longitude: -122)
    var trip = mapTestTrip(
      route: route, vehicle: mapTestLocation(route[0], time: 1_700_000_000, speed: 5, heading: 0),
      waypoints: [
        mapTestWaypoint(type: .pickupWaypointType, at: route[2], path: route, eta: 1_700_000_100),
        mapTestWaypoint(
          type: .dropOffWaypointType, at: dropoff, path: [route[2], dropoff], distance: 111,
          eta: 1_700_000_200),
      ])
    trip.remainingDistanceMeters = Int32Value(222)
    return trip
  }

  @Test("A small trip gives exactly this FeatureCollection")
  func exactString() {
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: smallTrip(), at: 1_700_000_000)
    let expected =
      #"{"type":"FeatureCollection","tripName":"providers/acme/trips/trip-1","tripStatus":"ENROUTE_TO_PICKUP","#
      + #""bbox":[-122,37,-122,37.003],"cameraBounds":[-122.001,36.9997,-121.999,37.0033],"features":["#
      + #"{"type":"Feature","id":"vehicle","geometry":{"type":"Point","coordinates":[-122,37]},"#
      + #""properties":{"kind":"vehicle","heading":0,"speed":5,"lastFix":1700000000,"isRoadSnapped":true,"#
      + #""isStale":false}},"#
      + #"{"type":"Feature","id":"pickup","geometry":{"type":"Point","coordinates":[-122,37.002]},"#
      + #""properties":{"kind":"pickup","eta":1700000100,"distanceMeters":222}},"#
      + #"{"type":"Feature","id":"dropoff","geometry":{"type":"Point","coordinates":[-122,37.003]},"#
      + #""properties":{"kind":"dropoff","eta":1700000200,"distanceMeters":333}},"#
      + #"{"type":"Feature","id":"remainingRoute","geometry":{"type":"LineString","#
      + #""coordinates":[[-122,37],[-122,37.001],[-122,37.002]]},"properties":{"kind":"remainingRoute"}},"#
      + #"{"type":"Feature","id":"remainingRouteAfterNextWaypoint","geometry":{"type":"LineString","#
      + #""coordinates":[[-122,37.002],[-122,37.003]]},"properties":{"kind":"remainingRouteAfterNextWaypoint"}},"#
      + #"{"type":"Feature","id":"traffic-0","geometry":{"type":"LineString","#
      + #""coordinates":[[-122,37],[-122,37.001],[-122,37.002]]},"properties":{"kind":"traffic","speed":"NO_DATA"}}"#
      + "]}"
    #expect(map.geoJSON() == expected)
  }

  @Test("Animated GeoJSON parses as JSON, with [longitude, latitude] positions and a bbox that holds them")
  func parsesWithLongitudeFirst() throws {
    let route = [
      mapTestPoint(3_700_000, -12_200_000), mapTestPoint(3_700_500, -12_200_000),
      mapTestPoint(3_700_500, -12_199_000),
    ]
    let trip = mapTestTrip(
      route: route, vehicle: mapTestLocation(route[0], time: 1_000, speed: 10, heading: 0),
      traffic: [mapTestInterval(0, 1, .slow), mapTestInterval(1, 2, .trafficJam)])
    var map = MapStateBuilder(tripName: mapTestTripName)
    map.update(with: trip, at: 1_000)
    let json = try #require(MapTestJSON.parse(map.geoJSON(at: 1_010)))
    #expect(json["type"] == .string("FeatureCollection"))
    let features = try #require(json["features"]?.elements)
    let ids = features.compactMap { $0["id"]?.string }
    #expect(ids == ["vehicle", "pickup", "traveledRoute", "remainingRoute", "traffic-0", "traffic-1"])
    for feature in features {
      #expect(feature.keys == ["type", "id", "geometry", "properties"])
      #expect(feature["properties"]?["kind"]?.string != nil)
    }

    // The vehicle, 100 m north of the start: longitude first.
    let vehicle = try #require(features.first { $0["id"] == .string("vehicle") })
    let position = try #require(vehicle["geometry"]?["coordinates"]?.numbers)
    #expect(position.count == 2)
    #expect(position[0] == -122)
    #expect(abs(position[1] - (37 + 100 / mapTestMetersPerDegree)) < 1e-7)
    // The pickup, the route's far end, is the only point east of -122.
    let pickup = try #require(features.first { $0["id"] == .string("pickup") })
    #expect(pickup["geometry"]?["coordinates"] == .array([.number(-121.99), .number(37.005)]))
    #expect(
      features.first { $0["id"] == .string("traffic-1") }?["properties"]?["speed"] == .string("TRAFFIC_JAM"))

    let bbox = try #require(json["bbox"]?.numbers)
    #expect(bbox == [-122, 37, -121.99, 37.005])
    for feature in features {
      guard let geometry = feature["geometry"], let coordinates = geometry["coordinates"] else { continue }
      let positions = geometry["type"] == .string("Point") ? [coordinates] : (coordinates.elements ?? [])
      for position in positions {
        let pair = try #require(position.numbers)
        #expect(pair.count == 2)
        #expect(pair[0] >= bbox[0] && pair[0] <= bbox[2] && pair[1] >= bbox[1] && pair[1] <= bbox[3])
      }
    }
  }

  @Test("Strings are escaped, non-finite numbers become null, decimals are bounded")
  func escapingAndNumbers() throws {
    let name = "providers/acme/trips/\"quoted\"\\back\nline\u{01}\u{2028}é😀"
    var map = MapStateBuilder(tripName: name)
    var trip = smallTrip()
    trip.name = ""
    map.update(with: trip, at: 1_700_000_000)
    let text = map.geoJSON()
    let json = try #require(MapTestJSON.parse(text))
    #expect(json["tripName"] == .string(name))
    #expect(!text.unicodeScalars.contains { $0.value < 0x20 })

    var state = JourneySharingMapState(tripStatus: .enrouteToPickup)
    state.vehicle = VehicleMarker(
      position: LatLng(latitude: -0.0, longitude: 12.345678949), heading: .nan, speed: .infinity, lastFix: 1.25)
    let vehicleText = state.geoJSON()
    #expect(vehicleText.contains(#""coordinates":[12.3456789,0]"#))
    #expect(vehicleText.contains(#""heading":null,"speed":null,"lastFix":1.25"#))
    #expect(MapTestJSON.parse(vehicleText) != nil)
    #expect(!vehicleText.contains("nan") && !vehicleText.contains("inf"))
    // Nothing to show: no bbox, no features.
    #expect(
      JourneySharingMapState().geoJSON()
        == #"{"type":"FeatureCollection","tripStatus":"UNKNOWN_TRIP_STATUS","features":[]}"#)
  }

  @Test("The JSON reader itself rejects what is not JSON")
  func readerRejects() {
    #expect(MapTestJSON.parse(#"{"a":[1,2,{"b":null}],"c":"\u00e9"}"#)?["c"] == .string("é"))
    for bad in [#"{"a":1,}"#, "[1 2]", #"{"a":1}{"#, "01", "1.", #""\x""#, "[NaN]", #"{"a":1,"a":2}"#, "\"\n\""] {
      #expect(MapTestJSON.parse(bad) == nil, "accepted \(bad)")
    }
  }
}
