// Sources/FleetEngineMessages/Trip+Polling.swift - polling GetTrip with the *_version fields
//
// Each `*_version` of a GetTripRequest is an exclusive minimum timestamp: when the part of the trip
// it versions has not changed since, the server leaves that part out of its answer. A poller sends
// the versions of what it holds, and puts the parts left out back from what it holds.

extension GetTripRequest {
  /// Sets the `*_version` fields from `held`, the trip the caller holds: only for parts it holds, so a
  /// part the caller never received is always sent.
  public mutating func setVersions(holding held: Trip) {
    if !held.route.isEmpty || !held.currentRouteSegment.isEmpty {
      currentRouteSegmentVersion = held.currentRouteSegmentVersion
    }
    if held.currentRouteSegmentTraffic != nil {
      currentRouteSegmentTrafficVersion = held.currentRouteSegmentTrafficVersion
    }
    if !held.remainingWaypoints.isEmpty {
      remainingWaypointsVersion = held.remainingWaypointsVersion
      remainingWaypointsRouteVersion = held.remainingWaypointsRouteVersion
    }
  }
}

extension Trip {
  /// The trip a poll answered with, with the parts the server left out, because `request`'s versions
  /// said they were unchanged, taken from `held`.
  public func merged(intoHeld held: Trip, request: GetTripRequest) -> Trip {
    var merged = self
    func unchanged(_ requested: Timestamp?, _ answered: Timestamp?) -> Bool {
      guard let requested else { return false }
      return answered == nil || answered == requested
    }
    if route.isEmpty && currentRouteSegment.isEmpty
      && unchanged(request.currentRouteSegmentVersion, currentRouteSegmentVersion)
    {
      merged.route = held.route
      merged.currentRouteSegment = held.currentRouteSegment
      merged.currentRouteSegmentVersion = held.currentRouteSegmentVersion
    }
    if currentRouteSegmentTraffic == nil
      && unchanged(request.currentRouteSegmentTrafficVersion, currentRouteSegmentTrafficVersion)
    {
      merged.currentRouteSegmentTraffic = held.currentRouteSegmentTraffic
      merged.currentRouteSegmentTrafficVersion = held.currentRouteSegmentTrafficVersion
    }
    if remainingWaypoints.isEmpty && unchanged(request.remainingWaypointsVersion, remainingWaypointsVersion) {
      merged.remainingWaypoints = held.remainingWaypoints
      merged.remainingWaypointsVersion = held.remainingWaypointsVersion
    } else if unchanged(request.remainingWaypointsRouteVersion, remainingWaypointsRouteVersion),
      merged.remainingWaypoints.count == held.remainingWaypoints.count
    {
      for index in merged.remainingWaypoints.indices {
        var waypoint = merged.remainingWaypoints[index]
        let old = held.remainingWaypoints[index]
        if waypoint.pathToWaypoint.isEmpty && waypoint.encodedPathToWaypoint.isEmpty {
          waypoint.pathToWaypoint = old.pathToWaypoint
          waypoint.encodedPathToWaypoint = old.encodedPathToWaypoint
        }
        if waypoint.trafficToWaypoint == nil { waypoint.trafficToWaypoint = old.trafficToWaypoint }
        merged.remainingWaypoints[index] = waypoint
      }
    }
    return merged
  }
}
