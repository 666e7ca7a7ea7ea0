// Sources/tripwatch/Get.swift - `tripwatch get`: one trip, as proto3 JSON

import ArgumentParser
import JourneySharing
import ToolSupport

struct Get: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "get",
    abstract: "Fetch one trip with Fleet Engine's unary GetTrip and print it as proto3 JSON.",
    discussion: ToolExit.helpText)

  @Argument(help: "The trip, providers/{provider}/trips/{trip}.")
  var tripName: String

  @OptionGroup var server: ServerOptions

  @Option(help: "Seconds the call may take.")
  var timeout = 15.0

  @Flag(help: "One line instead of indented JSON.")
  var compact = false

  func validate() throws {
    guard timeout > 0 else { throw ValidationError("--timeout must be > 0") }
  }

  func run() async throws {
    guard let name = TripName(parsing: tripName) else {
      throw ToolFailure(
        .invalidInput, "malformed trip name \(tripName.debugDescription): must be providers/{provider}/trips/{trip}")
    }
    var configuration = try server.configuration(providerID: name.providerID)
    configuration.callTimeout = .nanoseconds(Int64(timeout * 1e9))
    let services: JourneySharingServices
    do {
      services = try JourneySharingServices(configuration: configuration)
    } catch {
      throw ToolFailure(.invalidInput, error.message)
    }
    let result: Result<Trip, GRPCError>
    do {
      result = .success(try await services.tripService.fetchTrip(forTripName: tripName))
    } catch {
      result = .failure(error)
    }
    await services.shutdown()
    switch result {
    case .success(let trip):
      print(trip.jsonString(options: ProtoJSONOptions(indent: compact ? 0 : 2)))
    case .failure(let error):
      throw ToolFailure(.callFailed, "GetTrip failed: \(server.explained(error.description))")
    }
  }
}
