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
    let message = try await unaryCall(
      path: FleetEngineMethods.unaryGetTrip, request: request.serializedBytes(), options: options)
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

  /// One unary call through the services' transport, on the scheduler of the trip; returns the response
  /// message or throws the call's status.
  private func unaryCall(path: String, request: [UInt8], options: CallOptions) async throws(GRPCError) -> [UInt8] {
    let scheduler = core.scheduler(forTrip: path)
    let collector = UnaryResponseCollector()
    let result: Result<[UInt8], GRPCError> = await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        collector.setContinuation(continuation)
        collector.setHandle(
          core.transport.startCall(
            path: path, request: request, kind: .unary, options: options, on: scheduler, handler: collector))
      }
    } onCancel: {
      collector.cancel()
    }
    return try result.get()
  }
}

/// Collects one unary response and resumes the awaiting task. `@unchecked Sendable`: the fields are guarded
/// by `state`'s lock.
private final class UnaryResponseCollector: GRPCCallHandler, @unchecked Sendable {
  private struct State {
    var continuation: CheckedContinuation<Result<[UInt8], GRPCError>, Never>?
    var handle: GRPCCallHandle?
    var cancelRequested = false
    var message: [UInt8]?
  }
  private let state = Locked(State())

  func setContinuation(_ continuation: CheckedContinuation<Result<[UInt8], GRPCError>, Never>) {
    state.withLock { $0.continuation = continuation }
  }

  func setHandle(_ handle: GRPCCallHandle) {
    let cancel = state.withLock { state -> Bool in
      state.handle = handle
      return state.cancelRequested
    }
    if cancel { handle.cancel() }
  }

  func cancel() {
    state.withLock { state -> GRPCCallHandle? in
      state.cancelRequested = true
      return state.handle
    }?.cancel()
  }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    let copy = [UInt8](message)
    state.withLock { $0.message = copy }
  }

  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    let (continuation, message) = state.withLock { state in
      let taken = state.continuation
      state.continuation = nil
      return (taken, state.message)
    }
    guard let continuation else { return }
    if status.code == .ok {
      continuation.resume(returning: .success(message ?? []))
    } else {
      continuation.resume(returning: .failure(GRPCError(status: status, trailers: trailers)))
    }
  }
}
