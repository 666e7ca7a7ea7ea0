// Sources/FleetEngineMessages/Trip+JSON.swift - Trip and StopLocation as JSON
//
// Fields in field-number order, as protobuf's runtimes list them.

extension Trip: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.stringField("name", name)
    writer.stringField("vehicle_id", vehicleId)
    writer.enumField("trip_status", tripStatus)
    writer.enumField("trip_type", tripType)
    writer.messageField("pickup_point", pickupPoint)
    writer.messageField("pickup_time", pickupTime)
    writer.messageField("dropoff_point", dropoffPoint)
    writer.messageField("dropoff_time", dropoffTime)
    writer.repeatedMessageField("route", route)
    writer.int32Field("number_of_passengers", numberOfPassengers)
    writer.messageField("last_location", lastLocation)
    writer.messageField("remaining_distance_meters", remainingDistanceMeters)
    writer.messageField("eta_to_first_waypoint", etaToFirstWaypoint)
    writer.repeatedMessageField("intermediate_destinations", intermediateDestinations)
    writer.int32Field("intermediate_destination_index", intermediateDestinationIndex)
    writer.repeatedMessageField("remaining_waypoints", remainingWaypoints)
    writer.messageField("current_route_segment_version", currentRouteSegmentVersion)
    writer.messageField("remaining_waypoints_version", remainingWaypointsVersion)
    writer.repeatedMessageField("vehicle_waypoints", vehicleWaypoints)
    writer.stringField("current_route_segment", currentRouteSegment)
    writer.messageField("actual_pickup_point", actualPickupPoint)
    writer.messageField("actual_dropoff_point", actualDropoffPoint)
    writer.messageField("current_route_segment_end_point", currentRouteSegmentEndPoint)
    writer.messageField("intermediate_destinations_version", intermediateDestinationsVersion)
    writer.boolField("last_location_snappable", lastLocationSnappable)
    writer.messageField("remaining_time_to_first_waypoint", remainingTimeToFirstWaypoint)
    writer.messageField("current_route_segment_traffic", currentRouteSegmentTraffic)
    writer.messageField("remaining_waypoints_route_version", remainingWaypointsRouteVersion)
    writer.messageField("current_route_segment_traffic_version", currentRouteSegmentTrafficVersion)
    writer.enumField("view", view)
    writer.messageField("actual_pickup_arrival_point", actualPickupArrivalPoint)
    writer.repeatedMessageField(
      "actual_intermediate_destination_arrival_points", actualIntermediateDestinationArrivalPoints)
    writer.repeatedMessageField("actual_intermediate_destinations", actualIntermediateDestinations)
    writer.repeatedMessageField("attributes", attributes)
    writer.endObject()
  }
}

extension StopLocation: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.messageField("point", point)
    writer.messageField("timestamp", timestamp)
    writer.messageField("stop_time", stopTime)
    writer.endObject()
  }
}
