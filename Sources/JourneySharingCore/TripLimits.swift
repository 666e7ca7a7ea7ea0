// Sources/JourneySharingCore/TripLimits.swift - how much route and how many stops a server's trip may hold
//
// The gRPC message size limit (4 MiB by default) bounds what is decoded, but not what it
// becomes: an encoded polyline spends about 2 bytes per point and decodes to 16, and every
// snapshot derives routes from it, and an empty waypoint is 3 bytes on the wire and a 272-byte
// struct decoded. These limits bound what a trip may hold: its lists while it is decoded (a
// decode over them stops at the first element too many), the rest before it enters the per-trip
// state; a trip above them is rejected whole and the state held stays as it was.

package import FleetEngineMessages
package import GRPCValues
package import ProtoWire

/// Bounds on the trips a server may send, checked while a trip is decoded and before it enters
/// the state a model holds.
///
/// The listed route points (`route`, the waypoints' `path_to_waypoint`, traffic intervals) and the
/// lists of stops are counted as they are decoded, so a message holding millions of them costs no
/// more than the limits allow; encoded polylines (strings on the wire) are counted after decoding.
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

  /// The options that apply these limits while a `Trip` or `TripUpdate` is decoded: listed route points
  /// and each list of stops, and any other repeated field at the larger of the two limits.
  package var decodingOptions: WireDecodingOptions {
    .trip(maxRoutePoints: maxRoutePoints, maxStops: maxWaypoints)
  }

  /// The violation a decode with ``decodingOptions`` stopped at, or `nil` when `error` is not one of
  /// its limits (the input is malformed).
  package func violation(decoding error: WireDecodingError) -> TripLimitViolation? {
    guard case .elementLimitExceeded(let field, let limit, let budget) = error.kind else { return nil }
    let message: String
    switch budget {
    case WireElementBudget.routePoints.name:
      message =
        "the server's trip has more than \(limit) listed route points, more than TripLimits.maxRoutePoints (\(limit))"
    case WireElementBudget.tripStops.name:
      let name =
        switch field {
        case 14: "intermediate_destinations"
        case 16: "remaining_waypoints"
        default: "vehicle_waypoints"
        }
      message = "the server's trip has more than \(limit) \(name), more than TripLimits.maxWaypoints (\(limit))"
    default:
      message =
        "the server's message has more than \(limit) elements in repeated field \(field), more than "
        + "TripLimits.maxRoutePoints and TripLimits.maxWaypoints allow any list (\(limit))"
    }
    return TripLimitViolation(message: message)
  }

  /// The error subscribers get when decoding a server's `what` (`Trip`, `TripUpdate`) failed: RESOURCE_EXHAUSTED
  /// when a decode limit stopped it, INTERNAL when the bytes are malformed.
  package func decodeError(_ error: WireDecodingError, what: String) -> GRPCError {
    if let violation = violation(decoding: error) {
      return GRPCError(code: .resourceExhausted, message: violation.message, cause: error)
    }
    return GRPCError(code: .internalError, message: "malformed \(what) from the server: \(error)", cause: error)
  }

  /// Why `trip` exceeds these limits, or `nil` when it does not.
  package func violation(in trip: Trip) -> TripLimitViolation? {
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
  package static func cannotConcern(_ update: TripUpdate) -> Bool {
    !update.fullTrip && update.updatedFields.allSatisfy(TripProgressUpdate.isProgressField)
  }

  /// The route points of `trip` as ``maxRoutePoints`` counts them; once the count passes `limit`
  /// the rest is not looked at (the count returned is then a lower bound, still above `limit`).
  package static func routePoints(in trip: Trip, stoppingAbove limit: Int) -> Int {
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
package struct TripLimitViolation: Error {
  /// Names the limit and the count found.
  package var message: String
}
