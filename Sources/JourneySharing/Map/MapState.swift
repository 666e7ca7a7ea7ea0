// Sources/JourneySharing/Map/MapState.swift - what a journey-sharing map would show, without a map
//
// The headless counterpart of GMTCJourneySharingSession on a GMTCMapView (iOS),
// JourneySharingSession on a ConsumerMapView (Android) and JourneySharingMapView
// (JS): the vehicle and stop markers, the traveled / active / remaining
// polylines, the traffic colouring of the active route and the camera
// rectangle, as plain values. ``MapStateBuilder`` computes them from Trip
// snapshots; ``JourneySharingMapState/geoJSON()`` hands them to any renderer.

public import FleetEngineMessages

/// Everything a journey-sharing map shows for one trip at one moment, as a value.
///
/// Built by ``MapStateBuilder`` from the trip snapshots it is fed. Routes are `[LatLng]` in driving order; a
/// route with fewer than two points is empty.
public struct JourneySharingMapState: Sendable, Hashable {
  /// The vehicle's marker; `nil` before a vehicle reports a location (or when the trip has no `last_location`).
  public var vehicle: VehicleMarker?
  /// The pickup marker while the pickup is still ahead; `nil` once the rider is aboard, and when the trip is over.
  public var pickup: StopMarker?
  /// The drop-off marker; `nil` when the trip is over (complete or canceled).
  public var dropoff: StopMarker?
  /// The intermediate destinations still ahead, in driving order.
  public var intermediateDestinations: [StopMarker]
  /// The path the vehicle was seen to drive (the SDKs' "taken" polyline), oldest point first.
  public var traveledRoute: [LatLng]
  /// The active route: from the vehicle to the next waypoint (the SDKs' "active" polyline).
  public var remainingRoute: [LatLng]
  /// The route after the next waypoint, through the later waypoints to this trip's last stop (the SDKs'
  /// "remaining" polyline).
  public var remainingRouteAfterNextWaypoint: [LatLng]
  /// ``remainingRoute`` cut into runs of one traffic speed; consecutive segments share their boundary point and
  /// together cover the whole route. Empty when the route is.
  public var trafficSegments: [TrafficSegment]
  /// The rectangle a camera should fit: the vehicle, the stops and the routes ahead, padded; `nil` when there is
  /// nothing to show.
  public var cameraBounds: CoordinateBounds?
  /// The trip's status in the snapshot the state was computed from.
  public var tripStatus: TripStatus

  /// A state; by default the empty one (nothing to show, status unknown).
  public init(
    vehicle: VehicleMarker? = nil,
    pickup: StopMarker? = nil,
    dropoff: StopMarker? = nil,
    intermediateDestinations: [StopMarker] = [],
    traveledRoute: [LatLng] = [],
    remainingRoute: [LatLng] = [],
    remainingRouteAfterNextWaypoint: [LatLng] = [],
    trafficSegments: [TrafficSegment] = [],
    cameraBounds: CoordinateBounds? = nil,
    tripStatus: TripStatus = .unknownTripStatus
  ) {
    self.vehicle = vehicle
    self.pickup = pickup
    self.dropoff = dropoff
    self.intermediateDestinations = intermediateDestinations
    self.traveledRoute = traveledRoute
    self.remainingRoute = remainingRoute
    self.remainingRouteAfterNextWaypoint = remainingRouteAfterNextWaypoint
    self.trafficSegments = trafficSegments
    self.cameraBounds = cameraBounds
    self.tripStatus = tripStatus
  }

  /// The stops still ahead in driving order: pickup, intermediate destinations, drop-off (those that are set).
  public var stops: [StopMarker] {
    var result: [StopMarker] = []
    if let pickup { result.append(pickup) }
    result.append(contentsOf: intermediateDestinations)
    if let dropoff { result.append(dropoff) }
    return result
  }
}

/// The vehicle's marker: where it is, which way it points and how fresh that is.
public struct VehicleMarker: Sendable, Hashable {
  /// Where the marker is.
  public var position: LatLng
  /// The direction of travel in degrees clockwise from north, in [0, 360); `nil` when unknown.
  public var heading: Double?
  /// The speed in meters per second (`speed`, else `speed_kmph` converted); `nil` when unknown.
  public var speed: Double?
  /// Unix time of the location fix: its `update_time`, else its `server_time`, else when the snapshot holding it
  /// was fed to the builder.
  public var lastFix: Double
  /// Whether the location is snapped to a road (`is_road_snapped`).
  public var isRoadSnapped: Bool
  /// Whether the fix is older than the builder's staleness threshold at the state's time; renderers typically
  /// grey out or hide a stale vehicle.
  public var isStale: Bool

  /// A marker.
  public init(
    position: LatLng, heading: Double? = nil, speed: Double? = nil, lastFix: Double, isRoadSnapped: Bool = false,
    isStale: Bool = false
  ) {
    self.position = position
    self.heading = heading
    self.speed = speed
    self.lastFix = lastFix
    self.isRoadSnapped = isRoadSnapped
    self.isStale = isStale
  }
}

/// A stop's marker: pickup, intermediate destination or drop-off.
public struct StopMarker: Sendable, Hashable {
  /// What the stop is to the rider.
  public enum Kind: String, Sendable, Hashable, CaseIterable {
    /// Where the rider is picked up.
    case pickup
    /// A stop between pickup and drop-off.
    case intermediateDestination
    /// Where the rider is dropped off.
    case dropoff
  }

  /// What the stop is.
  public var kind: Kind
  /// Where it is.
  public var position: LatLng
  /// The estimated (or actual) arrival, as Unix time; `nil` when unknown.
  public var eta: Double?
  /// The driving distance from the vehicle to the stop in meters, through any stops before it (other riders'
  /// included); `nil` when unknown.
  public var distanceMeters: Double?
  /// For an intermediate destination, its index in the trip's `intermediate_destinations`; otherwise `nil`.
  public var intermediateDestinationIndex: Int?

  /// A marker.
  public init(
    kind: Kind, position: LatLng, eta: Double? = nil, distanceMeters: Double? = nil,
    intermediateDestinationIndex: Int? = nil
  ) {
    self.kind = kind
    self.position = position
    self.eta = eta
    self.distanceMeters = distanceMeters
    self.intermediateDestinationIndex = intermediateDestinationIndex
  }
}

/// A run of the active route with one traffic speed, for traffic-coloured drawing (Android's `TrafficStyle`,
/// JS's `TRAFFIC_AWARE_ACTIVE_POLYLINE_CUSTOMIZATION_FUNCTION`).
public struct TrafficSegment: Sendable, Hashable {
  /// How fast traffic moves on a segment.
  public enum Speed: String, Sendable, Hashable, CaseIterable {
    /// `NORMAL`: no slowdown.
    case normal = "NORMAL"
    /// `SLOW`: a slowdown, no jam.
    case slow = "SLOW"
    /// `TRAFFIC_JAM`: a traffic jam.
    case trafficJam = "TRAFFIC_JAM"
    /// No reading covers this part of the route (or the reading was unspecified or unknown).
    case noData = "NO_DATA"

    /// The speed of a Fleet Engine reading: unspecified and unrecognized values are ``noData``.
    public init(_ speed: SpeedReadingInterval.Speed) {
      switch speed {
      case .normal: self = .normal
      case .slow: self = .slow
      case .trafficJam: self = .trafficJam
      default: self = .noData
      }
    }
  }

  /// The segment's points: ``JourneySharingMapState/remainingRoute``'s points in ``pointRange``.
  public var points: [LatLng]
  /// The traffic speed on it.
  public var speed: Speed
  /// Which points of the remaining route it covers (both ends included, so at least two).
  public var pointRange: ClosedRange<Int>

  /// A segment.
  public init(points: [LatLng], speed: Speed, pointRange: ClosedRange<Int>) {
    self.points = points
    self.speed = speed
    self.pointRange = pointRange
  }
}
