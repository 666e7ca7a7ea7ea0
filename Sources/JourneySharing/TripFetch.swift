// Sources/JourneySharing/TripFetch.swift - one GetTrip, outside following

import FleetEngineMessages
import GRPCProtocol
import Primitives

extension TripService {
  /// Fetches `tripName` once with Fleet Engine's unary GetTrip, outside any following: no model,
  /// no subscribers, no retries. The request is the one polling sends (the configuration's request
  /// header, view and route format, a token from its ``JourneySharingConfiguration/authorization``
  /// for the trip, and its ``JourneySharingConfiguration/callTimeout``), without `*_version` fields,
  /// so the answer is the whole trip.
  ///
  /// - Throws: ``GRPCError``: INVALID_ARGUMENT for a malformed name or another provider's (nothing
  ///   is sent); UNAUTHENTICATED when the token provider throws; the server's status; INTERNAL when
  ///   the answer does not decode; RESOURCE_EXHAUSTED when it is above
  ///   ``JourneySharingConfiguration/limits``.
  public func fetchTrip(forTripName tripName: String) async throws(GRPCError) -> Trip {
    let configuration = core.configuration
    let parsed = TripName(parsing: tripName)
    if let error = tripNameError(tripName, parsed: parsed, providerID: configuration.providerID) { throw error }
    var options = CallOptions(timeout: configuration.callTimeout)
    if let provider = configuration.authorization, let parsed {
      let token: String
      do {
        token = try await provider.fetchToken(with: AuthorizationContext(tripID: parsed.tripID, tripName: tripName))
      } catch {
        throw GRPCError(code: .unauthenticated, message: "fetching an authorization token failed: \(error)")
      }
      options.metadata.add("authorization", "Bearer " + token)
    }
    var request = GetTripRequest()
    request.header = configuration.requestHeader
    request.name = tripName
    request.view = configuration.view
    request.routeFormatType = configuration.routeFormat
    let message = try await core.transport.unary(
      path: FleetEngineMethods.unaryGetTrip, request: request.serializedBytes(), options: options,
      on: core.scheduler(forTrip: tripName)
    ).message
    let trip: Trip
    do {
      trip = try Trip(serializedBytes: message, options: configuration.limits.decodingOptions)
    } catch {
      throw configuration.limits.decodeError(error, what: "Trip")
    }
    if let violation = configuration.limits.violation(in: trip) {
      throw GRPCError(code: .resourceExhausted, message: violation.message)
    }
    return trip
  }
}
