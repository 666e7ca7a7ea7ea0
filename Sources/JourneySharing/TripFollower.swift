// Sources/JourneySharing/TripFollower.swift - fetching one trip, on the channel's event loop
//
// Single writer: every field below `// Loop state` is touched only on the
// channel's event loop thread, which also runs the gRPC call callbacks. It
// merges updates into the trip, derives the snapshot, diffs it against the
// previous one and offers the result to each subscriber's mailbox; delivery
// threads do the rest. Calls from other threads hop onto the loop.

import FleetEngineMessages
import GRPCProtocol
import HTTP2Transport
import Logging
import ProtoWire

#if canImport(Glibc)
  import Glibc
#endif

/// gRPC method paths the library calls.
public enum TripServiceMethods {
  /// Fleet Engine's unary GetTrip.
  public static let unaryGetTrip = "/maps.fleetengine.v1.TripService/GetTrip"
  /// The project's server-streaming GetTrip.
  public static let streamingGetTrip = "/journeysharing.v1.TripStreamService/GetTrip"
}

/// Why `name` cannot be fetched by services configured for `providerID`: INVALID_ARGUMENT when it is
/// not `providers/{provider_id}/trips/{trip_id}` or names another provider; nil when it can.
func tripNameError(_ name: String, parsed: TripName?, providerID: String) -> GRPCError? {
  guard let parsed else {
    return GRPCError(
      code: .invalidArgument,
      message: "invalid trip name \(name.debugDescription): must be providers/{provider_id}/trips/{trip_id}")
  }
  guard parsed.providerID == providerID else {
    return GRPCError(
      code: .invalidArgument,
      message:
        "trip name \(name.debugDescription) is of provider \(parsed.providerID.debugDescription), not of the configured providerID \(providerID.debugDescription)"
    )
  }
  return nil
}

func currentUnixTime() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_REALTIME, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// `@unchecked Sendable`: its mutable state is confined to the channel's event loop
/// (every entry point from another thread hops there with `loop.execute`).
final class TripFollower: @unchecked Sendable {
  private enum Fetch {
    case stream
    case poll
  }

  weak var model: TripModel?
  let tripName: String
  let parsedName: TripName?
  let services: ServicesCore
  private var loop: EventLoop { services.channel.loop }
  private var configuration: JourneySharingConfiguration { services.configuration }

  // Loop state
  private var targets: [ObjectIdentifier: any Deliverable] = [:]
  private var following = false
  private var generation = 0
  private var fetch: Fetch = .stream
  private var call: GRPCCallHandle?
  /// The sink of the stream `call` carries, if it is a stream.
  private var streamSink: StreamSink?
  private var fetchInFlight = false
  private var timer: EventLoop.TimerID?
  private var state: TripState
  private var snapshot: TripSnapshot? { state.snapshot }
  private var trip: Trip { state.trip }
  private var lastError: GRPCError?
  private var modelState: TripModelState = .inactive
  private var finished = false
  private var failures = 0
  private var token: CachedToken?
  private var random = SystemRandomNumberGenerator()

  /// Why nothing is fetched for this name (malformed, or another provider's), or nil.
  let nameError: GRPCError?

  init(tripName: String, parsedName: TripName?, services: ServicesCore) {
    self.tripName = tripName
    self.nameError = tripNameError(tripName, parsed: parsedName, providerID: services.configuration.providerID)
    // Only a name that may be fetched counts as parsed here: everything below checks `parsedName`.
    self.parsedName = nameError == nil ? parsedName : nil
    self.services = services
    self.state = TripState(tripID: parsedName?.tripID ?? "")
  }

  // MARK: - Entry points (any thread)

  func add(_ target: any Deliverable) {
    loop.execute { self.addOnLoop(target) }
  }

  func remove(_ target: any Deliverable) {
    loop.execute { self.removeOnLoop(target) }
  }

  func refresh() {
    loop.execute { self.refreshOnLoop() }
  }

  func stopAll() {
    loop.execute {
      self.targets.removeAll()
      self.stopFollowing()
    }
  }

  func currentSnapshot() async -> TripSnapshot? {
    await withCheckedContinuation { continuation in
      loop.execute { continuation.resume(returning: self.snapshot) }
    }
  }

  func currentModelState() async -> TripModelState {
    await withCheckedContinuation { continuation in
      loop.execute { continuation.resume(returning: self.modelState) }
    }
  }

  // MARK: - Subscribers

  private func addOnLoop(_ target: any Deliverable) {
    targets[ObjectIdentifier(target)] = target
    if !following && !finished {
      startFollowing()
    }
    // A newcomer gets the current state: model state, and the trip if one arrived.
    var changes = TripModelEvent.stateBit
    if let snapshot { changes |= snapshot.presentProperties.rawValue }
    if target.offer(currentEvent(), changes: changes) { services.requestDeliveryWake() }
  }

  private func removeOnLoop(_ target: any Deliverable) {
    targets[ObjectIdentifier(target)] = nil
    if targets.isEmpty { stopFollowing() }
  }

  private func currentEvent() -> TripModelEvent {
    TripModelEvent(snapshot: snapshot, error: lastError, modelState: modelState)
  }

  private func publish(_ changes: UInt64, force: Bool = false) {
    guard changes != 0 || force else { return }
    let event = currentEvent()
    var queued = false
    for target in targets.values where target.offer(event, changes: changes) { queued = true }
    if queued { services.requestDeliveryWake() }
  }

  // MARK: - Following

  private func startFollowing() {
    following = true
    generation += 1
    modelState = .active
    failures = 0
    configuration.logger.debug("following", metadata: ["trip": "\(tripName)"])
    if let nameError {
      // Checked locally: nothing is sent for a name the server would refuse.
      lastError = nameError
      publish(TripModelEvent.errorBit)
      return
    }
    fetch = configuration.fetchMode == .poll ? .poll : .stream
    attempt()
  }

  private func stopFollowing() {
    guard following else { return }
    following = false
    generation += 1
    call?.cancel()
    call = nil
    streamSink = nil
    fetchInFlight = false
    if let timer { loop.cancelTimer(timer) }
    timer = nil
    modelState = .inactive
    configuration.logger.debug("stopped following", metadata: ["trip": "\(tripName)"])
  }

  /// Starts the next fetch (stream or poll) once a token is at hand.
  private func attempt() {
    guard following, !finished else { return }
    timer = nil
    let generation = generation
    withToken(generation: generation) { token in
      switch self.fetch {
      case .stream: self.startStream(token: token, generation: generation)
      case .poll: self.poll(token: token, generation: generation, scheduleNext: true)
      }
    }
  }

  private func schedule(after delay: Duration, _ body: @escaping () -> Void) {
    if let timer { loop.cancelTimer(timer) }
    timer = loop.scheduleTimer(after: delay) { [weak self] in
      self?.timer = nil
      body()
    }
  }

  // MARK: - Tokens

  private func withToken(generation: Int, _ body: @escaping (String?) -> Void) {
    guard let provider = configuration.authorization, let parsedName else {
      body(nil)
      return
    }
    if let token, token.isUsable(at: currentUnixTime()) {
      body(token.value)
      return
    }
    let context = AuthorizationContext(tripID: parsedName.tripID, tripName: tripName)
    let margin = configuration.tokenRefreshMargin
    // The continuation runs back on the loop, where `body` belongs.
    let continuation = LoopBound(unchecked: body, loop: loop)
    Task {
      let outcome: Result<String, any Error>
      do {
        outcome = .success(try await provider.fetchToken(with: context))
      } catch {
        outcome = .failure(error)
      }
      self.loop.execute {
        guard generation == self.generation, self.following else { return }
        switch outcome {
        case .success(let value):
          self.token = CachedToken(value: value, refreshMargin: margin)
          continuation.value(value)
        case .failure(let error):
          self.failed(GRPCError(code: .unauthenticated, message: "fetching an authorization token failed: \(error)"))
        }
      }
    }
  }

  private func callOptions(token: String?, timeout: Duration?) -> CallOptions {
    var options = CallOptions()
    options.timeout = timeout
    if let token { options.metadata.add("authorization", "Bearer " + token) }
    return options
  }

  // MARK: - Streaming

  private func startStream(token: String?, generation: Int) {
    // One stream at a time: the retry scheduled after a failed refresh() (a unary fetch next to the
    // stream) finds the stream still open and healthy. A second one would replace `call`, so stopping
    // would cancel only the newer and leave the older open on the wire.
    guard call == nil else { return }
    var request = StreamTripRequest()
    request.header = configuration.requestHeader
    request.name = tripName
    request.view = configuration.view
    request.routeFormatType = configuration.routeFormat
    let sink = StreamSink(follower: self, generation: generation)
    streamSink = sink
    call = services.channel.startCall(
      path: TripServiceMethods.streamingGetTrip, request: request.serializedBytes(), kind: .serverStreaming,
      options: callOptions(token: token, timeout: nil), handler: sink)
  }

  fileprivate func streamMessage(_ bytes: UnsafeRawBufferPointer, generation: Int) {
    guard generation == self.generation, following else { return }
    let update: TripUpdate
    do {
      update = try TripUpdate(serializedBuffer: bytes, options: configuration.limits.decodingOptions)
    } catch {
      abandonStream()
      if let violation = configuration.limits.violation(decoding: error) {
        rejected(violation.message)  // RESOURCE_EXHAUSTED, as for a trip above the limits after decoding
      } else {
        failed(GRPCError(code: .internalError, message: "malformed TripUpdate from the server: \(error)"))
      }
      return
    }
    // Events still waiting in mailboxes hold the current snapshot: take them back so the update can go
    // into its storage in place (their change bits go out with the next offer).
    var reclaimed = false
    for target in targets.values where target.reclaimPending() { reclaimed = true }
    let changes: TripPropertyFields
    switch state.apply(update, within: configuration.limits) {
    case .success(let applied):
      failures = 0
      changes = applied
    case .failure(let violation):
      // Not applied: the held state stays the last trip accepted. The stream is dropped, so the
      // next one starts from a whole trip rather than from deltas on top of a refused one. The error
      // published next carries any taken-back change bits with it.
      abandonStream()
      rejected(violation.message)
      return
    }
    if changes.isEmpty && reclaimed {
      publish(0, force: true)  // the taken-back bits are still owed
    } else {
      emit(changes)
    }
  }

  /// Cancels the stream after its input was refused. Its sink goes deaf first: messages still queued
  /// behind the refused one (same socket read) are not applied, and the CANCELLED status the cancel
  /// produces is not reported over the error that caused it.
  private func abandonStream() {
    streamSink?.abandoned = true
    streamSink = nil
    call?.cancel()
    call = nil
  }

  /// The stream ended; `delivered` says whether it carried any message.
  fileprivate func streamFinished(_ status: GRPCStatus, trailers: GRPCMetadata, delivered: Bool, generation: Int) {
    guard generation == self.generation, following else { return }
    call = nil
    streamSink = nil
    if finished { return }
    if status.code == .ok {
      if delivered {
        // The server ended the stream before the trip ended (GOAWAY, restart): follow again at once.
        schedule(after: .zero) { self.attempt() }
      } else {
        // Ended without a single message: following again at once could spin against such a server.
        failed(GRPCError(code: .unavailable, message: "the server ended the stream before sending the trip"))
      }
      return
    }
    failed(GRPCError(status: status, trailers: trailers))
  }

  // MARK: - Polling

  /// One unary GetTrip with the versions of what is held; never two in flight.
  private func poll(token: String?, generation: Int, scheduleNext: Bool) {
    guard !fetchInFlight else { return }
    fetchInFlight = true
    var request = GetTripRequest()
    request.header = configuration.requestHeader
    request.name = tripName
    request.view = configuration.view
    request.routeFormatType = configuration.routeFormat
    if !trip.route.isEmpty || !trip.currentRouteSegment.isEmpty {
      request.currentRouteSegmentVersion = trip.currentRouteSegmentVersion
    }
    if trip.currentRouteSegmentTraffic != nil {
      request.currentRouteSegmentTrafficVersion = trip.currentRouteSegmentTrafficVersion
    }
    if !trip.remainingWaypoints.isEmpty {
      request.remainingWaypointsVersion = trip.remainingWaypointsVersion
      request.remainingWaypointsRouteVersion = trip.remainingWaypointsRouteVersion
    }
    let sink = PollSink(follower: self, generation: generation, request: request, scheduleNext: scheduleNext)
    _ = services.channel.startCall(
      path: TripServiceMethods.unaryGetTrip, request: request.serializedBytes(), kind: .unary,
      options: callOptions(token: token, timeout: configuration.callTimeout), handler: sink)
  }

  fileprivate func pollFinished(
    _ status: GRPCStatus, trailers: GRPCMetadata, message: [UInt8]?, request: GetTripRequest, scheduleNext: Bool,
    generation: Int
  ) {
    guard generation == self.generation, following else { return }
    fetchInFlight = false
    if finished { return }
    guard status.code == .ok else {
      failed(GRPCError(status: status, trailers: trailers))
      return
    }
    let response: Trip
    do {
      response = try Trip(serializedBytes: message ?? [], options: configuration.limits.decodingOptions)
    } catch {
      if let violation = configuration.limits.violation(decoding: error) {
        rejected(violation.message)
      } else {
        failed(GRPCError(code: .internalError, message: "malformed Trip from the server: \(error)"))
      }
      return
    }
    let merged = Self.merge(response: response, into: trip, request: request)
    if let violation = configuration.limits.violation(in: merged) {
      rejected(violation.message)  // The held state stays the last trip accepted.
      return
    }
    failures = 0
    emit(state.replace(with: merged))
    if scheduleNext && fetch == .poll && !finished {
      schedule(after: configuration.pollInterval) { self.attempt() }
    }
  }

  /// The polled trip, with the parts the server left out because the request's version
  /// said they were unchanged taken from what is held.
  static func merge(response: Trip, into held: Trip, request: GetTripRequest) -> Trip {
    var merged = response
    func unchanged(_ requested: Timestamp?, _ answered: Timestamp?) -> Bool {
      guard let requested else { return false }
      return answered == nil || answered == requested
    }
    if response.route.isEmpty && response.currentRouteSegment.isEmpty
      && unchanged(request.currentRouteSegmentVersion, response.currentRouteSegmentVersion)
    {
      merged.route = held.route
      merged.currentRouteSegment = held.currentRouteSegment
      merged.currentRouteSegmentVersion = held.currentRouteSegmentVersion
    }
    if response.currentRouteSegmentTraffic == nil
      && unchanged(request.currentRouteSegmentTrafficVersion, response.currentRouteSegmentTrafficVersion)
    {
      merged.currentRouteSegmentTraffic = held.currentRouteSegmentTraffic
      merged.currentRouteSegmentTrafficVersion = held.currentRouteSegmentTrafficVersion
    }
    if response.remainingWaypoints.isEmpty
      && unchanged(request.remainingWaypointsVersion, response.remainingWaypointsVersion)
    {
      merged.remainingWaypoints = held.remainingWaypoints
      merged.remainingWaypointsVersion = held.remainingWaypointsVersion
    } else if unchanged(request.remainingWaypointsRouteVersion, response.remainingWaypointsRouteVersion),
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

  private func refreshOnLoop() {
    guard following, !finished, parsedName != nil, !fetchInFlight else { return }
    let generation = generation
    let scheduleNext = fetch == .poll
    if scheduleNext, let timer {
      loop.cancelTimer(timer)
      self.timer = nil
    }
    withToken(generation: generation) { token in
      self.poll(token: token, generation: generation, scheduleNext: scheduleNext)
    }
  }

  // MARK: - Results

  /// Offers the new snapshot to every subscriber, with what changed.
  private func emit(_ changes: TripPropertyFields) {
    guard !changes.isEmpty, let snapshot else { return }
    publish(changes.rawValue)
    if snapshot.isFinal && !finished {
      // The final state has been handed over: following ends here.
      finished = true
      stopFollowing()
      publish(TripModelEvent.stateBit)
    }
  }

  /// A trip above ``JourneySharingConfiguration/limits`` was refused: RESOURCE_EXHAUSTED, retried.
  private func rejected(_ violation: String) {
    configuration.logger.warning("refused a trip above the limits", metadata: ["trip": "\(tripName)", "reason": "\(violation)"])
    failed(GRPCError(code: .resourceExhausted, message: violation))
  }

  /// Reports `error` and tries again after the backoff delay.
  private func failed(_ error: GRPCError) {
    if error.code == .unimplemented && fetch == .stream && configuration.fetchMode == .auto {
      configuration.logger.info(
        "the server has no streaming GetTrip; polling instead", metadata: ["trip": "\(tripName)"])
      fetch = .poll
      attempt()
      return
    }
    if error.code == .unauthenticated { token = nil }
    lastError = error
    publish(TripModelEvent.errorBit)
    failures += 1
    let delay = configuration.retryBackoff.delay(retry: failures, using: &random)
    configuration.logger.debug(
      "fetching failed",
      metadata: ["trip": "\(tripName)", "code": "\(error.code.name)", "retry_in": "\(delay)"])
    schedule(after: delay) { self.attempt() }
  }
}

/// Receives one stream's callbacks on the event loop and forwards them with its generation, until
/// the follower abandons the stream. `@unchecked Sendable`: `abandoned` and `delivered` are only touched
/// on the event loop, which runs every callback of the call and every follower method that sets them.
private final class StreamSink: GRPCCallHandler, @unchecked Sendable {
  let follower: TripFollower
  let generation: Int
  /// Set (on the loop) when the follower refused this stream's input and cancelled it.
  var abandoned = false
  /// Whether a message arrived on this stream.
  private var delivered = false

  init(follower: TripFollower, generation: Int) {
    self.follower = follower
    self.generation = generation
  }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    guard !abandoned else { return }
    delivered = true
    follower.streamMessage(message, generation: generation)
  }

  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    guard !abandoned else { return }
    follower.streamFinished(status, trailers: trailers, delivered: delivered, generation: generation)
  }
}

/// Receives one poll's callbacks. `@unchecked Sendable`: `message` is only touched on the
/// event loop, which runs every callback of the call.
private final class PollSink: GRPCCallHandler, @unchecked Sendable {
  let follower: TripFollower
  let generation: Int
  let request: GetTripRequest
  let scheduleNext: Bool
  private var message: [UInt8]?

  init(follower: TripFollower, generation: Int, request: GetTripRequest, scheduleNext: Bool) {
    self.follower = follower
    self.generation = generation
    self.request = request
    self.scheduleNext = scheduleNext
  }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    self.message = [UInt8](message)
  }

  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    follower.pollFinished(
      status, trailers: trailers, message: message, request: request, scheduleNext: scheduleNext,
      generation: generation)
  }
}
