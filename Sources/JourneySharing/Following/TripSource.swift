// Sources/JourneySharing/Following/TripSource.swift - where a followed trip's updates come from
//
// Two sources feed a trip's coordinator: a server stream (the project's streaming GetTrip, which FleetSim
// serves) and polling (Fleet Engine's unary GetTrip, with the *_version fields). Each fetches, decodes
// and reports what happened; the coordinator decides what it means (apply, retry, fall back) and owns
// the trip's state. A source is confined to its trip's scheduler and is thrown away when following
// stops or switches to the other kind.

import FleetEngineMessages
import GRPCProtocol
import Instrumentation

/// Fetches one trip and reports to its coordinator.
protocol TripSource: AnyObject {
  /// Starts fetching, or fetches again after a failure. Does nothing while a fetch is under way.
  func start()
  /// Stops: cancels the call in flight and any timer; nothing is reported after this.
  func stop()
  /// Fetches once now, outside the rhythm (a unary GetTrip); does nothing while a fetch is in flight.
  func refresh()
}

/// What sources need from the coordinator of their trip. Called on the trip's scheduler.
protocol TripSourceOwner: AnyObject {
  /// The request header, view and route format to send, and the trip's name.
  var requestParameters: TripRequestParameters { get }
  /// The trip held now (empty before the first fetch), for the polls' `*_version` fields.
  var heldTrip: Trip { get }
  /// The decode limits of answers (``TripLimits``' budgets).
  var limits: TripLimits { get }
  /// The `sequence` of the last streamed update held, for a new stream to resume after (0: start whole).
  var resumeSequence: UInt64 { get }
  /// How many streamed updates have been applied so far (a refresh's answer older than the last one is
  /// not applied).
  var appliedUpdates: Int { get }
  /// Where calls and their round trips are counted.
  var metrics: JourneySharingMetrics { get }
  /// Where calls' spans start.
  var tracing: CallTracing { get }
  /// The parent context of the calls' spans (the caller that started following), or nil.
  var traceContext: ServiceContext? { get }
  /// The number of the next fetch since the trip's last success (1: the first try).
  var attempt: Int { get }
  /// Calls `body` with the token to send (see ``TokenCache``).
  func withToken(_ body: @escaping (Result<String?, GRPCError>) -> Void)

  /// A streamed update arrived (decoded); returns false when it was refused and the stream must be
  /// dropped (its input not applied).
  func source(_ source: any TripSource, received update: StreamedTripUpdate) -> Bool
  /// A poll answered with `trip` for `request`; `sentAfterUpdates` is the count of streamed updates
  /// applied when it was sent (a refresh beside a stream must not undo newer ones).
  func source(_ source: any TripSource, polled trip: Trip, request: GetTripRequest, sentAfterUpdates: Int)
  /// A stream ended: its status, how long it was up and how many messages it carried.
  func source(
    _ source: any TripSource, streamEnded status: GRPCStatus, trailers: GRPCMetadata, lifetime: Duration, messages: Int)
  /// A fetch failed with `error` (a poll's status, an answer that did not decode, a token).
  func source(_ source: any TripSource, failed error: GRPCError, isRefresh: Bool)
}

/// What every request for a trip carries.
struct TripRequestParameters {
  var name: String
  var header: RequestHeader
  var view: TripView
  var routeFormat: PolylineFormatType
  var callTimeout: Duration
}

extension CallOptions {
  /// The options of a trip's call: `authorization: Bearer <token>` when there is a token.
  init(token: String?, timeout: Duration?) {
    self.init(timeout: timeout)
    if let token { metadata.add("authorization", "Bearer " + token) }
  }
}
