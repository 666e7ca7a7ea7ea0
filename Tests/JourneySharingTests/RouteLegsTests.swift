// Tests/JourneySharingTests/RouteLegsTests.swift - the remaining route read in place from the waypoints' paths

import FleetEngineMessages
import JourneySharingCore
import Testing

private func leg(_ count: Int, from start: Double) -> LatLngPath {
  LatLngPath((0..<count).map { LatLng(latitude: start + Double($0), longitude: -start) })
}

@Suite("RouteLegs: the remaining route as a view of the legs")
struct RouteLegsTests {
  @Test func pointsReadAcrossLegsAsOneRouteSkippingEmptyLegs() {
    let legs = [leg(3, from: 0), LatLngPath(), leg(1, from: 10), leg(4, from: 20)]
    let route = RouteLegs(legs: legs)
    let joined = legs.flatMap { Array($0) }
    #expect(route.count == 8)
    #expect(Array(route) == joined)
    for index in joined.indices { #expect(route[index] == joined[index], "point \(index)") }
    #expect(route.legs.count == 3)
    // However the points are cut into legs, the same points are the same route.
    #expect(route == RouteLegs(legs: [LatLngPath(joined)]))
    #expect(route != RouteLegs(legs: [leg(3, from: 0)]))
    #expect(RouteLegs().isEmpty)
  }

  @Test func theSnapshotsRemainingRouteSharesTheWaypointsPaths() throws {
    var trip = Trip()
    trip.name = "providers/p/trips/t"
    trip.tripStatus = .enrouteToPickup
    for (index, count) in [4, 6, 5].enumerated() {
      var waypoint = TripWaypoint()
      waypoint.tripId = "t"
      waypoint.waypointType = index == 2 ? .dropOffWaypointType : .pickupWaypointType
      waypoint.pathToWaypoint = leg(count, from: Double(index * 100))
      trip.remainingWaypoints.append(waypoint)
    }
    let snapshot = TripSnapshot(trip: trip, tripID: "t")
    let remaining = snapshot.remainingRoute
    #expect(remaining.count == 11)
    #expect(remaining.legs.count == 2)
    #expect(remaining.legs[0].sharesStorage(with: snapshot.trip.remainingWaypoints[1].pathToWaypoint))
    #expect(remaining.legs[1].sharesStorage(with: snapshot.trip.remainingWaypoints[2].pathToWaypoint))
    #expect(
      Array(remaining) == Array(trip.remainingWaypoints[1].pathToWaypoint)
        + Array(trip.remainingWaypoints[2].pathToWaypoint))
  }
}
