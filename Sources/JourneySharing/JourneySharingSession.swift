// Sources/JourneySharing/JourneySharingSession.swift - the map's state of a followed trip, without a map

public import FleetEngineMessages
import Primitives
import Synchronization

/// The state a journey-sharing map would show for one trip, kept up to date from
/// its ``TripModel``: the counterpart of the SDK's `GMTCJourneySharingSession`, for
/// a server that renders elsewhere (or sends GeoJSON to a client).
///
/// ```swift
/// let session = JourneySharingSession(tripModel: tripModel)
/// session.start()                       // the SDK's mapView.show(session)
/// let frame = session.state(at: now)    // vehicle interpolated for smooth animation
/// let geoJSON = session.geoJSON(at: now)
/// session.stop()                        // the SDK's mapView.hide(session)
/// ```
///
/// The vehicle marker is interpolated between fixes along the route at the frame
/// time the caller chooses; the route is split into travelled and remaining parts
/// and into traffic-coloured segments; markers cover pickup, dropoff and
/// intermediate destinations; camera bounds fit them all.
public final class JourneySharingSession: TripModelSubscriber {
  /// The model the session follows.
  public let tripModel: TripModel
  private let builder: Locked<MapStateBuilder>

  /// A session for `tripModel`; call ``start()`` to begin receiving its updates.
  public init(tripModel: TripModel, maxTraveledPoints: Int = 2_000) {
    self.tripModel = tripModel
    self.builder = Locked(MapStateBuilder(tripName: tripModel.tripName, maxTraveledPoints: maxTraveledPoints))
  }

  /// Subscribes to the model (which starts following if needed).
  public func start() { tripModel.register(self) }

  /// Unsubscribes; the state stays as it was.
  public func stop() { tripModel.unregisterSubscriber(self) }

  /// The map state with the vehicle at its last fix.
  public var state: JourneySharingMapState { builder.withLock { $0.state } }

  /// The map state at `unixTime`, the vehicle moved along the route for smooth animation.
  public func state(at unixTime: Double) -> JourneySharingMapState {
    builder.withLock { $0.state(at: unixTime) }
  }

  /// The vehicle marker at `unixTime` (interpolated between fixes).
  public func interpolatedVehicle(at unixTime: Double) -> VehicleMarker? {
    builder.withLock { $0.interpolatedVehicle(at: unixTime) }
  }

  /// The state as a GeoJSON FeatureCollection (RFC 7946), at `unixTime` if given.
  public func geoJSON(at unixTime: Double? = nil) -> String {
    builder.withLock { $0.geoJSON(at: unixTime) }
  }

  public func tripModel(_ tripModel: TripModel, didUpdate trip: Trip?, updatedPropertyFields: TripPropertyFields) {
    guard let trip else { return }
    let now = unixTime()
    builder.withLock { $0.update(with: trip, at: now) }
  }
}
