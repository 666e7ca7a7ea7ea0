// Sources/JourneySharingCore/TripPropertyFields.swift - which parts of a trip changed

/// The set of trip properties an update changed, passed with
/// ``TripModelSubscriber/tripModel(_:didUpdate:updatedPropertyFields:)``.
///
/// The first nineteen bits have the meaning and order of the iOS Consumer SDK's
/// `GMTSTripPropertyFields`; the ETA bits after them are this library's additions
/// (the SDK reports those through callbacks only). Like the SDK's, the set is the
/// result of comparing the previous and the new trip, field by field.
public struct TripPropertyFields: OptionSet, Sendable, Hashable, CustomStringConvertible {
  public let rawValue: UInt64
  public init(rawValue: UInt64) { self.rawValue = rawValue }

  /// The trip's resource name.
  public static let tripName = TripPropertyFields(rawValue: 1 << 0)
  /// The assigned vehicle.
  public static let vehicleID = TripPropertyFields(rawValue: 1 << 1)
  /// Shared or exclusive.
  public static let tripType = TripPropertyFields(rawValue: 1 << 2)
  /// The trip status.
  public static let tripStatus = TripPropertyFields(rawValue: 1 << 3)
  /// The pickup location.
  public static let pickupLocation = TripPropertyFields(rawValue: 1 << 4)
  /// The (estimated or actual) pickup time.
  public static let pickupTime = TripPropertyFields(rawValue: 1 << 5)
  /// The dropoff location.
  public static let dropoffLocation = TripPropertyFields(rawValue: 1 << 6)
  /// The (estimated or actual) dropoff time.
  public static let dropoffTime = TripPropertyFields(rawValue: 1 << 7)
  /// The vehicle's last location.
  public static let routeLastVehicleLocation = TripPropertyFields(rawValue: 1 << 8)
  /// The number of passengers.
  public static let numberOfPassengers = TripPropertyFields(rawValue: 1 << 9)
  /// The remaining waypoints (this trip's only, for shared trips).
  public static let remainingWaypoints = TripPropertyFields(rawValue: 1 << 10)
  /// The intermediate destinations.
  public static let intermediateDestinations = TripPropertyFields(rawValue: 1 << 11)
  /// The index of the current intermediate destination.
  public static let intermediateDestinationIndex = TripPropertyFields(rawValue: 1 << 12)
  /// The remaining distance of the active route (to the next waypoint).
  public static let remainingDistanceOfActiveRouteInMeters = TripPropertyFields(rawValue: 1 << 13)
  /// The distance of the whole remaining route.
  public static let distanceOfRemainingRouteInMeters = TripPropertyFields(rawValue: 1 << 14)
  /// The active route (vehicle to next waypoint).
  public static let activeRoute = TripPropertyFields(rawValue: 1 << 15)
  /// The traffic on the active route.
  public static let activeRouteTraffic = TripPropertyFields(rawValue: 1 << 16)
  /// The route after the next waypoint.
  public static let remainingRoute = TripPropertyFields(rawValue: 1 << 17)
  /// The traffic on the route after the next waypoint.
  public static let remainingRouteTraffic = TripPropertyFields(rawValue: 1 << 18)
  /// The ETA to the next waypoint (addition).
  public static let etaToNextWaypoint = TripPropertyFields(rawValue: 1 << 19)
  /// The pickup ETA (addition).
  public static let pickupETA = TripPropertyFields(rawValue: 1 << 20)
  /// The dropoff ETA (addition).
  public static let dropoffETA = TripPropertyFields(rawValue: 1 << 21)

  /// Every property.
  public static let all = TripPropertyFields(rawValue: (1 << 22) - 1)

  package static let names: [(TripPropertyFields, String)] = [
    (.tripName, "tripName"), (.vehicleID, "vehicleID"), (.tripType, "tripType"), (.tripStatus, "tripStatus"),
    (.pickupLocation, "pickupLocation"), (.pickupTime, "pickupTime"), (.dropoffLocation, "dropoffLocation"),
    (.dropoffTime, "dropoffTime"), (.routeLastVehicleLocation, "routeLastVehicleLocation"),
    (.numberOfPassengers, "numberOfPassengers"), (.remainingWaypoints, "remainingWaypoints"),
    (.intermediateDestinations, "intermediateDestinations"),
    (.intermediateDestinationIndex, "intermediateDestinationIndex"),
    (.remainingDistanceOfActiveRouteInMeters, "remainingDistanceOfActiveRouteInMeters"),
    (.distanceOfRemainingRouteInMeters, "distanceOfRemainingRouteInMeters"), (.activeRoute, "activeRoute"),
    (.activeRouteTraffic, "activeRouteTraffic"), (.remainingRoute, "remainingRoute"),
    (.remainingRouteTraffic, "remainingRouteTraffic"), (.etaToNextWaypoint, "etaToNextWaypoint"),
    (.pickupETA, "pickupETA"), (.dropoffETA, "dropoffETA"),
  ]

  /// The names of the members, for logs and JSON.
  public var memberNames: [String] { Self.names.filter { contains($0.0) }.map(\.1) }

  public var description: String { "[" + memberNames.joined(separator: ", ") + "]" }
}

/// Whether a trip model is following its trip.
public enum TripModelState: Sendable, Hashable {
  /// Not following: no subscriber, or the trip reached its final state.
  case inactive
  /// Following the trip.
  case active
}
