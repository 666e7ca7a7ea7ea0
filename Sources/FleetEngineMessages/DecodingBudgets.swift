// Sources/FleetEngineMessages/DecodingBudgets.swift - element budgets the trip messages draw on while decoding
//
// A trip's lists decode to much more memory than they take on the wire: an empty TripWaypoint is
// three bytes of input and a 272-byte struct, so 4 MiB of them is about 1.4 million waypoints and
// hundreds of megabytes. These budgets let a receiver bound the lists while they are decoded, not
// after (see WireDecodingOptions): nothing over a limit is ever built.

public import ProtoWire

extension WireElementBudget {
  /// Route points: the elements of `Trip.route`, of every `TripWaypoint.pathToWaypoint` and of every
  /// `ConsumableTrafficPolyline.speedReadingInterval`, counted together over the whole input.
  ///
  /// These are the listed points a trip's route-point limit counts (points of encoded polylines are
  /// strings on the wire, which decode to no more than their own bytes, and are counted after decoding).
  public static let routePoints = WireElementBudget(slot: 0, name: "route points", scope: .wholeInput)

  /// Stops: each of a trip's lists of stops on its own (`Trip.remainingWaypoints`,
  /// `Trip.vehicleWaypoints`, `Trip.intermediateDestinations`).
  public static let tripStops = WireElementBudget(slot: 1, name: "stops", scope: .eachField)
}

extension WireDecodingOptions {
  /// Options that bound a decoded trip (a `Trip`, or the trip in a `TripUpdate`) while it is decoded:
  /// at most `maxRoutePoints` listed route points (``WireElementBudget/routePoints``), at most
  /// `maxStops` entries in each list of stops (``WireElementBudget/tripStops``), and at most the
  /// larger of the two in any other repeated field (``maxRepeatedCount``).
  ///
  /// A decode over one of them fails with ``WireDecodingError/Kind/elementLimitExceeded(field:limit:budget:)``.
  public static func trip(maxRoutePoints: Int, maxStops: Int) -> WireDecodingOptions {
    var options = WireDecodingOptions(maxRepeatedCount: max(maxRoutePoints, maxStops))
    options.setLimit(maxRoutePoints, for: .routePoints)
    options.setLimit(maxStops, for: .tripStops)
    return options
  }
}
