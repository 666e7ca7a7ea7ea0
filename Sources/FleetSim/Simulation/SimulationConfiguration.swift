// Sources/FleetSim/Simulation/SimulationConfiguration.swift - what a simulation run is made of

public import FleetEngineMessages
import Primitives

/// The inputs of a trip simulation. Together with a trip's index they fix
/// everything about the trip: two simulators with equal configurations produce
/// byte-identical trips at equal times, so a server restarted with the same
/// flags continues the same trips where they were.
public struct SimulationConfiguration: Sendable, Hashable {
  /// The provider (project) ID in trip names, `providers/{provider}/trips/trip-{i}`.
  public var provider: String = "demo"
  /// How many trips exist: `trip-0` … `trip-{tripCount - 1}`.
  public var tripCount: Int = 10
  /// Seeds the city's street grid and every trip's scenario.
  public var seed: UInt64 = 1
  /// The Unix time, in seconds, at which simulated time 0 happens. Default: when the configuration was
  /// made, so an embedded simulator's trips start when it does. Give an earlier time to join trips under
  /// way, or the same time to a restarted server so it continues the same trips.
  public var startTime: Double = unixTime()
  /// Simulated seconds per wall-clock second (2 plays trips at double speed). Must be positive.
  public var speedup: Double = 1
  /// The middle of the simulated city; trips stay within about 4 km of it.
  public var cityCenter: LatLng = LatLng(latitude: 52.3676, longitude: 4.9041)

  /// A configuration; `startTime` `nil` (the default) means now.
  public init(
    provider: String = "demo",
    tripCount: Int = 10,
    seed: UInt64 = 1,
    startTime: Double? = nil,
    speedup: Double = 1,
    cityCenter: LatLng = LatLng(latitude: 52.3676, longitude: 4.9041)
  ) {
    self.provider = provider
    self.tripCount = tripCount
    self.seed = seed
    self.startTime = startTime ?? unixTime()
    self.speedup = speedup
    self.cityCenter = cityCenter
  }
}
