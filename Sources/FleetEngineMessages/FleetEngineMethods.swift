// Sources/FleetEngineMessages/FleetEngineMethods.swift - the gRPC methods that carry these messages
//
// One place for the method paths: the consumer calls them, FleetSim serves them, and the benchmarks
// and tests name them, all from here.

/// The gRPC method paths of the trip services.
public enum FleetEngineMethods {
  /// Fleet Engine's unary GetTrip (`maps.fleetengine.v1.TripService`): `GetTripRequest` → `Trip`.
  public static let unaryGetTrip = "/maps.fleetengine.v1.TripService/GetTrip"
  /// The project's server-streaming GetTrip (`journeysharing.v1.TripStreamService`, served by FleetSim):
  /// `StreamTripRequest` → a stream of `TripUpdate`.
  public static let streamingGetTrip = "/journeysharing.v1.TripStreamService/GetTrip"
  /// The service of ``streamingGetTrip``, as health checks name it.
  public static let streamingServiceName = "journeysharing.v1.TripStreamService"
}
