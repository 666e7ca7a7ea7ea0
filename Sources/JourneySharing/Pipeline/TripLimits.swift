// Sources/JourneySharing/TripLimits.swift - how much route and how many stops a server's trip may hold
//
// The gRPC message size limit (4 MiB by default) bounds what is decoded, but not what it
// becomes: an encoded polyline spends about 2 bytes per point and decodes to 16, and every
// snapshot derives routes from it. These limits bound what a trip may hold before it enters
// the per-trip state; a trip above them is rejected whole and the state held stays as it was.

import FleetEngineMessages

/// Bounds on the trips a server may send, checked before a trip enters the state a model holds.
///
/// A trip (a polled `Trip`, or the trip a streamed `TripUpdate` would produce) above a limit is
/// not applied: subscribers get a `GRPCError` with code `RESOURCE_EXHAUSTED`
/// (NSError domain `io.grpc`, code 8) whose message names the limit, the snapshot they hold stays
/// the last one accepted, and following goes on with backoff (a stream is cancelled and started
/// again, so the server's next full trip replaces what was refused).
///
/// The defaults are far above what a trip needs (a 200 km route at one point per 10 m is 20,000
/// points; a shared ride has a handful of stops) and keep one hostile trip to a few megabytes.
public struct TripLimits: Sendable, Hashable {
  /// The most route points a trip may hold, over all its paths together: `route`, the points of
  /// the encoded `current_route_segment`, every remaining and vehicle waypoint's path (listed or
  /// encoded) and the current segment's end point's, and the traffic of each (its encoded path's
  /// points and its speed-reading intervals). Default 20,000.
  public var maxRoutePoints: Int
  /// The most entries each of the trip's lists of stops may hold: `remaining_waypoints`,
  /// `vehicle_waypoints` and `intermediate_destinations`, each on its own. Default 100.
  public var maxWaypoints: Int

  /// Limits; every parameter has the default described on its property.
  public init(maxRoutePoints: Int = 20_000, maxWaypoints: Int = 100) {
    self.maxRoutePoints = maxRoutePoints
    self.maxWaypoints = maxWaypoints
  }

  /// The defaults: 20,000 route points and 100 entries per list of stops.
  public static let `default` = TripLimits()

  /// Why `trip` exceeds these limits, or `nil` when it does not.
  func violation(in trip: Trip) -> TripLimitViolation? {
    for (name, count) in [
      ("remaining_waypoints", trip.remainingWaypoints.count), ("vehicle_waypoints", trip.vehicleWaypoints.count),
      ("intermediate_destinations", trip.intermediateDestinations.count),
    ] where count > maxWaypoints {
      return TripLimitViolation(
        message: "the server's trip has \(count) \(name), more than TripLimits.maxWaypoints (\(maxWaypoints))")
    }
    let points = Self.routePoints(in: trip, stoppingAbove: maxRoutePoints)
    if points > maxRoutePoints {
      return TripLimitViolation(
        message:
          "the server's trip has at least \(points) route points, more than TripLimits.maxRoutePoints (\(maxRoutePoints))"
      )
    }
    return nil
  }

  /// Whether `update` names only progress fields (location, distance, ETA, passengers), which cannot
  /// change what is limited: the common update then costs a pass over its field mask and no count.
  static func cannotConcern(_ update: TripUpdate) -> Bool {
    !update.fullTrip
      && update.updatedFields.allSatisfy { number in
        number > 0 && number < 64 && TripSnapshot.progressFields & (1 << UInt64(number)) != 0
      }
  }

  /// The route points of `trip` as ``maxRoutePoints`` counts them; once the count passes `limit`
  /// the rest is not looked at (the count returned is then a lower bound, still above `limit`).
  static func routePoints(in trip: Trip, stoppingAbove limit: Int) -> Int {
    var total = 0
    // Sums that cannot overflow: each term is bounded by the message size, and counting stops past the limit.
    func add(_ count: Int) -> Bool {
      total += count
      return total > limit
    }
    func add(_ traffic: ConsumableTrafficPolyline?) -> Bool {
      guard let traffic else { return false }
      return add(EncodedPolyline.pointCount(traffic.encodedPathToWaypoint) + traffic.speedReadingInterval.count)
    }
    func add(_ waypoint: TripWaypoint) -> Bool {
      add(waypoint.pathToWaypoint.count) || add(EncodedPolyline.pointCount(waypoint.encodedPathToWaypoint))
        || add(waypoint.trafficToWaypoint)
    }
    if add(trip.route.count) || add(EncodedPolyline.pointCount(trip.currentRouteSegment))
      || add(trip.currentRouteSegmentTraffic)
    {
      return total
    }
    if let end = trip.currentRouteSegmentEndPoint, add(end) { return total }
    for waypoint in trip.remainingWaypoints where add(waypoint) { return total }
    for waypoint in trip.vehicleWaypoints where add(waypoint) { return total }
    return total
  }
}

/// Why a server's trip was refused by ``TripLimits``.
struct TripLimitViolation: Error {
  /// Names the limit and the count found.
  var message: String
}
