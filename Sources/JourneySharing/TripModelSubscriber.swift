// Sources/JourneySharing/TripModelSubscriber.swift - the callbacks a subscriber receives

public import FleetEngineMessages
import GRPCProtocol
import UpdatePipeline

/// Receives a trip model's updates: the Swift counterpart of the Consumer SDK's
/// `GMTCTripModelSubscriber`. Every method has a default that does nothing, so a
/// subscriber implements only what it needs.
///
/// Callbacks run on one of the library's delivery threads (never on the network
/// thread), one at a time per subscriber, in this order for each delivery: the model
/// becoming active, the error if one happened, ``tripModel(_:didUpdate:updatedPropertyFields:)``,
/// one callback per changed property, and last the model becoming inactive. Each fires only when its data changed.
/// A subscriber that is slow gets the latest state, with the property sets of the
/// updates it missed merged, rather than a backlog.
///
/// Statuses are proto enum values (``TripStatus``), not the SDK's renumbered order.
public protocol TripModelSubscriber: AnyObject, Sendable {
  /// Following started or stopped.
  func tripModel(_ tripModel: TripModel, didUpdate modelState: TripModelState)
  /// The trip changed; `updatedPropertyFields` names exactly what.
  func tripModel(_ tripModel: TripModel, didUpdate trip: Trip?, updatedPropertyFields: TripPropertyFields)
  /// The trip changed, as a whole ``TripSnapshot`` (the trip and every derived value, plus the
  /// server's send time of the update); called just before
  /// ``tripModel(_:didUpdate:updatedPropertyFields:)``. A Swift addition: the SDK has no such callback.
  func tripModel(
    _ tripModel: TripModel, didUpdateSnapshot snapshot: TripSnapshot, updatedPropertyFields: TripPropertyFields)
  /// The trip status changed.
  func tripModel(_ tripModel: TripModel, didUpdate tripStatus: TripStatus)
  /// The distance from the vehicle to the next waypoint changed (meters).
  func tripModel(_ tripModel: TripModel, didUpdateActiveRouteRemainingDistance activeRouteRemainingDistance: Int32)
  /// The route from the vehicle to the next waypoint changed.
  func tripModel(_ tripModel: TripModel, didUpdateActiveRoute activeRoute: [LatLng]?)
  /// The vehicle moved.
  func tripModel(_ tripModel: TripModel, didUpdate vehicleLocation: VehicleLocation?)
  /// The pickup location changed (nil when the trip is canceled).
  func tripModel(_ tripModel: TripModel, didUpdatePickupLocation pickupLocation: TerminalLocation?)
  /// The dropoff location changed (nil when the trip is canceled).
  func tripModel(_ tripModel: TripModel, didUpdateDropoffLocation dropoffLocation: TerminalLocation?)
  /// The pickup ETA changed (Unix seconds).
  func tripModel(_ tripModel: TripModel, didUpdatePickupETA pickupETA: Double)
  /// The dropoff ETA changed (Unix seconds).
  func tripModel(_ tripModel: TripModel, didUpdateDropoffETA dropoffETA: Double)
  /// The remaining waypoints (pickup, intermediate destinations, dropoff) changed.
  func tripModel(_ tripModel: TripModel, didUpdateRemaining remainingWaypoints: [TripWaypoint]?)
  /// An update failed. `error` is a `GRPCError`: bridged to `NSError`, its domain is `io.grpc`
  /// and its code the gRPC status code. Following goes on (see ``TripModel``).
  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?)
  /// The intermediate destinations changed.
  func tripModel(
    _ tripModel: TripModel, didUpdateIntermediateDestinations intermediateDestinations: [TerminalLocation]?)
  /// The traffic on the active route changed.
  func tripModel(_ tripModel: TripModel, didUpdateActiveRouteTraffic activeRouteTraffic: ConsumableTrafficPolyline?)
  /// The ETA to the next waypoint changed (Unix seconds).
  func tripModel(_ tripModel: TripModel, didUpdateETAToNextWaypoint nextWaypointETA: Double)
  /// The distance to the last waypoint changed (meters).
  func tripModel(_ tripModel: TripModel, didUpdateRemainingRouteDistance remainingRouteDistance: Int32)
  /// The route after the next waypoint changed.
  func tripModel(_ tripModel: TripModel, didUpdateRemainingRoute remainingRoute: [LatLng]?)
  /// The traffic on the route after the next waypoint changed.
  func tripModel(
    _ tripModel: TripModel, didUpdateRemainingRouteTraffic remainingRouteTraffic: ConsumableTrafficPolyline?)
}

extension TripModelSubscriber {
  public func tripModel(_ tripModel: TripModel, didUpdate modelState: TripModelState) {}
  public func tripModel(_ tripModel: TripModel, didUpdate trip: Trip?, updatedPropertyFields: TripPropertyFields) {}
  public func tripModel(
    _ tripModel: TripModel, didUpdateSnapshot snapshot: TripSnapshot, updatedPropertyFields: TripPropertyFields
  ) {}
  public func tripModel(_ tripModel: TripModel, didUpdate tripStatus: TripStatus) {}
  public func tripModel(
    _ tripModel: TripModel, didUpdateActiveRouteRemainingDistance activeRouteRemainingDistance: Int32
  ) {}
  public func tripModel(_ tripModel: TripModel, didUpdateActiveRoute activeRoute: [LatLng]?) {}
  public func tripModel(_ tripModel: TripModel, didUpdate vehicleLocation: VehicleLocation?) {}
  public func tripModel(_ tripModel: TripModel, didUpdatePickupLocation pickupLocation: TerminalLocation?) {}
  public func tripModel(_ tripModel: TripModel, didUpdateDropoffLocation dropoffLocation: TerminalLocation?) {}
  public func tripModel(_ tripModel: TripModel, didUpdatePickupETA pickupETA: Double) {}
  public func tripModel(_ tripModel: TripModel, didUpdateDropoffETA dropoffETA: Double) {}
  public func tripModel(_ tripModel: TripModel, didUpdateRemaining remainingWaypoints: [TripWaypoint]?) {}
  public func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {}
  public func tripModel(
    _ tripModel: TripModel, didUpdateIntermediateDestinations intermediateDestinations: [TerminalLocation]?
  ) {}
  public func tripModel(
    _ tripModel: TripModel, didUpdateActiveRouteTraffic activeRouteTraffic: ConsumableTrafficPolyline?
  ) {}
  public func tripModel(_ tripModel: TripModel, didUpdateETAToNextWaypoint nextWaypointETA: Double) {}
  public func tripModel(_ tripModel: TripModel, didUpdateRemainingRouteDistance remainingRouteDistance: Int32) {}
  public func tripModel(_ tripModel: TripModel, didUpdateRemainingRoute remainingRoute: [LatLng]?) {}
  public func tripModel(
    _ tripModel: TripModel, didUpdateRemainingRouteTraffic remainingRouteTraffic: ConsumableTrafficPolyline?
  ) {}
}

extension TripModelSubscriber {
  /// Calls the callbacks for one delivery, in the documented order, while `gate` stays open: a subscriber
  /// unregistered in the middle of a delivery (by itself, from one of these callbacks, or by another thread)
  /// gets no further callback of it.
  func deliver(_ model: TripModel, event: TripModelEvent, changes: UInt64, gate: DeliveryGate) {
    let stateChanged = changes & TripModelEvent.stateBit != 0
    // Becoming active is told first; becoming inactive last, after the final trip state.
    if stateChanged && event.modelState == .active { tripModel(model, didUpdate: event.modelState) }
    defer {
      if stateChanged && event.modelState == .inactive && gate.isOpen { tripModel(model, didUpdate: event.modelState) }
    }
    if changes & TripModelEvent.errorBit != 0, let error = event.error, gate.isOpen {
      tripModel(model, didFailUpdateTripWithError: error)
    }
    let fields = TripPropertyFields(rawValue: changes & TripPropertyFields.all.rawValue)
    guard !fields.isEmpty, let snapshot = event.snapshot, gate.isOpen else { return }
    tripModel(model, didUpdateSnapshot: snapshot, updatedPropertyFields: fields)
    guard gate.isOpen else { return }
    tripModel(model, didUpdate: snapshot.trip, updatedPropertyFields: fields)
    // One callback per changed property, each only while the subscriber is still registered.
    func each(_ field: TripPropertyFields, _ callback: () -> Void) -> Bool {
      guard gate.isOpen else { return false }
      if fields.contains(field) { callback() }
      return true
    }
    guard
      each(.tripStatus, { tripModel(model, didUpdate: snapshot.tripStatus) }),
      each(
        .remainingDistanceOfActiveRouteInMeters,
        {
          if let meters = snapshot.activeRouteRemainingDistance {
            tripModel(model, didUpdateActiveRouteRemainingDistance: meters)
          }
        }),
      each(.activeRoute, { tripModel(model, didUpdateActiveRoute: Array(snapshot.activeRoute)) }),
      each(.routeLastVehicleLocation, { tripModel(model, didUpdate: snapshot.vehicleLocation) }),
      each(.pickupLocation, { tripModel(model, didUpdatePickupLocation: snapshot.pickupLocation) }),
      each(.dropoffLocation, { tripModel(model, didUpdateDropoffLocation: snapshot.dropoffLocation) }),
      each(.pickupETA, { if let eta = snapshot.pickupETA { tripModel(model, didUpdatePickupETA: eta) } }),
      each(.dropoffETA, { if let eta = snapshot.dropoffETA { tripModel(model, didUpdateDropoffETA: eta) } }),
      each(.remainingWaypoints, { tripModel(model, didUpdateRemaining: snapshot.remainingWaypoints) }),
      each(
        .intermediateDestinations,
        {
          tripModel(model, didUpdateIntermediateDestinations: snapshot.intermediateDestinations)
        }),
      each(.activeRouteTraffic, { tripModel(model, didUpdateActiveRouteTraffic: snapshot.activeRouteTraffic) }),
      each(
        .etaToNextWaypoint,
        {
          if let eta = snapshot.etaToNextWaypoint { tripModel(model, didUpdateETAToNextWaypoint: eta) }
        }),
      each(
        .distanceOfRemainingRouteInMeters,
        {
          if let meters = snapshot.remainingRouteDistance { tripModel(model, didUpdateRemainingRouteDistance: meters) }
        }),
      each(.remainingRoute, { tripModel(model, didUpdateRemainingRoute: Array(snapshot.remainingRoute)) }),
      each(
        .remainingRouteTraffic,
        {
          tripModel(model, didUpdateRemainingRouteTraffic: snapshot.remainingRouteTraffic)
        })
    else { return }
  }
}
