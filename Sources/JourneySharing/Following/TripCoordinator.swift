// Sources/JourneySharing/Following/TripCoordinator.swift - one followed trip: its state, subscribers and source
//
// Single writer: everything below `// Scheduler state` is touched only on the trip's scheduler (an event
// loop of the transport, or a test's virtual clock), which also runs the calls' callbacks. Entry points
// from other threads hop there. The coordinator owns the trip's pipeline (state and subscribers), starts
// and stops its source, and decides what each result means: apply it, finish, retry after a backoff,
// or fall back from streaming to polling.

import CoreMetrics
import FleetEngineMessages
import GRPCProtocol
import Instrumentation
import Logging

/// Follows one trip for its ``TripModel``.
///
/// `@unchecked Sendable`: its mutable state is confined to `scheduler` (every entry point from another thread
/// hops there with `execute`).
final class TripCoordinator: TripSourceOwner, @unchecked Sendable {
  private enum Fetch {
    case stream
    case poll
  }

  weak var model: TripModel?
  let tripName: String
  let parsedName: TripName?
  /// Why nothing is fetched for this name (malformed, or another provider's), or nil.
  let nameError: GRPCError?
  let services: ServicesCore
  let scheduler: any GRPCScheduler
  /// The model's health, written here and read from any thread.
  let health: TripHealthCell
  private var configuration: JourneySharingConfiguration { services.configuration }

  // Scheduler state
  private var pipeline: TripPipeline
  private var following = false
  private var finished = false
  private var fetch: Fetch = .stream
  private var source: (any TripSource)?
  private var retryTimer: GRPCTimerID?
  private var retry: RetryPolicy
  private var lastError: GRPCError?
  private var modelState: TripModelState = .inactive
  /// The trip's authorization tokens; nil without a provider (or for an invalid name): every token is nil, and
  /// a trip followed without authorization carries no cache (200 bytes a trip).
  private let tokens: TokenCache?
  private(set) var appliedUpdates = 0
  /// The ServiceContext of the caller whose subscriber started following: the parent of the calls' spans.
  private(set) var traceContext: ServiceContext?
  /// When following started (monotonic), until the first update arrived: for time to first update.
  private var awaitingFirstUpdateSince: UInt64?
  /// The `send_time` of the last update applied, carried by the events that follow it.
  private var lastSendTime: Double?
  private let tally: UpdateTally?
  /// The `sequence` of the last streamed update applied, which a new stream resumes after
  /// (`StreamTripRequest.after_sequence`); 0 after a poll, a refused update, or before any.
  private(set) var resumeSequence: UInt64 = 0

  init(tripName: String, parsedName: TripName?, services: ServicesCore, health: TripHealthCell) {
    self.tripName = tripName
    self.nameError = tripNameError(tripName, parsed: parsedName, providerID: services.configuration.providerID)
    // Only a name that may be fetched counts as parsed here: everything below checks `parsedName`.
    self.parsedName = nameError == nil ? parsedName : nil
    self.services = services
    self.health = health
    self.scheduler = services.scheduler(forTrip: tripName)
    self.pipeline = TripPipeline(tripID: parsedName?.tripID ?? "")
    self.retry = RetryPolicy(
      backoff: services.configuration.retryBackoff,
      healthyStreamLifetime: services.configuration.healthyStreamLifetime,
      seed: UInt64(truncatingIfNeeded: tripName.hashValue))
    if let provider = services.configuration.authorization, let name = self.parsedName {
      self.tokens = TokenCache(
        provider: provider, context: AuthorizationContext(tripID: name.tripID, tripName: tripName),
        refreshMargin: services.configuration.tokenRefreshMargin,
        fetchTimeout: services.configuration.tokenFetchTimeout, scheduler: scheduler)
    } else {
      self.tokens = nil
    }
    self.tally = services.tally(on: scheduler)
  }

  deinit {
    source?.stop()
  }

  // MARK: - Entry points (any thread)

  func add(_ target: any Deliverable) {
    // The caller's context (a task-local): the parent of the spans, should this subscriber start following.
    let context = services.tracing.tracer == nil ? nil : ServiceContext.current
    scheduler.execute { self.addOnScheduler(target, context: context) }
  }

  func remove(_ target: any Deliverable) {
    scheduler.execute { self.removeOnScheduler(target) }
  }

  func refresh() {
    scheduler.execute { self.refreshOnScheduler() }
  }

  func stopAll() {
    scheduler.execute {
      self.pipeline.removeAllTargets()
      self.stopFollowing()
    }
  }

  func currentSnapshot() async -> TripSnapshot? {
    await withCheckedContinuation { continuation in
      scheduler.execute { continuation.resume(returning: self.pipeline.snapshot) }
    }
  }

  func currentModelState() async -> TripModelState {
    await withCheckedContinuation { continuation in
      scheduler.execute { continuation.resume(returning: self.modelState) }
    }
  }

  // MARK: - Subscribers

  private func addOnScheduler(_ target: any Deliverable, context: ServiceContext?) {
    pipeline.add(target)
    if !following && !finished {
      traceContext = context
      startFollowing()
    }
    // A newcomer gets the current state: model state, and the trip if one arrived.
    var changes = TripModelEvent.stateBit
    if let snapshot = pipeline.snapshot { changes |= snapshot.presentProperties.rawValue }
    if target.offer(currentEvent(pipeline.snapshot), changes: changes) { services.requestDeliveryWake(on: scheduler) }
  }

  private func removeOnScheduler(_ target: any Deliverable) {
    pipeline.remove(target)
    if pipeline.targets.isEmpty { stopFollowing() }
  }

  private func currentEvent(_ snapshot: TripSnapshot?) -> TripModelEvent {
    TripModelEvent(snapshot: snapshot, error: lastError, modelState: modelState, sendTime: lastSendTime)
  }

  /// Offers the current event with `changes` (error and state bits) to every subscriber.
  private func publish(_ changes: UInt64) {
    if pipeline.publish(currentEvent(pipeline.snapshot), changes: changes) {
      services.requestDeliveryWake(on: scheduler)
    }
  }

  // MARK: - Following

  private func startFollowing() {
    following = true
    modelState = .active
    health.setActive(true)
    services.metrics.followingChanged(by: 1)
    awaitingFirstUpdateSince = scheduler.monotonicNanoseconds
    retry.succeeded()
    configuration.logger.debug("following", metadata: ["trip": "\(tripName)"])
    if let nameError {
      // Checked locally: nothing is sent for a name the server would refuse.
      lastError = nameError
      health.failed(at: scheduler.unixTime)
      publish(TripModelEvent.errorBit)
      return
    }
    fetch = configuration.fetchMode == .poll ? .poll : .stream
    startSource()
  }

  private func stopFollowing() {
    guard following else { return }
    following = false
    services.metrics.followingChanged(by: -1)
    awaitingFirstUpdateSince = nil
    source?.stop()
    source = nil
    if let retryTimer { scheduler.cancelTimer(retryTimer) }
    retryTimer = nil
    modelState = .inactive
    health.setActive(false)
    configuration.logger.debug("stopped following", metadata: ["trip": "\(tripName)"])
  }

  /// Makes the source of the current kind and starts it.
  private func startSource() {
    source?.stop()
    let transport = services.transport
    switch fetch {
    case .stream:
      source = StreamingTripSource(
        owner: self, transport: transport, scheduler: scheduler, watchdog: configuration.streamWatchdog,
        endings: services.watchdogEndings, budget: services.budget)
    case .poll:
      source = PollingTripSource(
        owner: self, transport: transport, scheduler: scheduler, budget: services.budget,
        interval: { [weak self] in self?.pollInterval ?? .seconds(5) })
    }
    source?.start()
  }

  private var pollInterval: Duration {
    model?.options.pollInterval ?? configuration.pollInterval
  }

  private func refreshOnScheduler() {
    guard following, !finished, nameError == nil else { return }
    source?.refresh()
  }

  // MARK: - TripSourceOwner

  var requestParameters: TripRequestParameters {
    let options = model?.options ?? TripModelOptions()
    var header = options.requestHeader ?? configuration.requestHeader
    if let traceID = options.traceID { header.traceId = traceID }
    return TripRequestParameters(
      name: tripName, header: header, view: configuration.view, routeFormat: configuration.routeFormat,
      callTimeout: configuration.callTimeout)
  }

  var heldTrip: Trip { pipeline.state.trip }

  var limits: TripLimits { configuration.limits }

  var metrics: JourneySharingMetrics { services.metrics }

  var tracing: CallTracing { services.tracing }

  /// The number of the next fetch since the last success (1: the first try).
  var attempt: Int { retry.consecutiveFailures + 1 }

  /// Counts an update received (per scheduler event), and the time to the first one.
  private func countReceived(_ method: JourneySharingMetrics.Method) {
    tally?.count(method)
    if let since = awaitingFirstUpdateSince {
      awaitingFirstUpdateSince = nil
      if metrics.enabled {
        metrics.timeToFirstUpdate.recordNanoseconds(Int64(clamping: scheduler.monotonicNanoseconds &- since))
      }
    }
  }

  func withToken(_ body: @escaping (Result<String?, GRPCError>) -> Void) {
    guard let tokens else { return body(.success(nil)) }
    tokens.withToken(body)
  }

  func source(_ source: any TripSource, received update: StreamedTripUpdate) -> Bool {
    guard source === self.source, following, !finished else { return false }
    countReceived(.stream)
    let previousSendTime = lastSendTime
    lastSendTime = update.sendTime.map { $0.unixTime }
    let outcome = pipeline.apply(update, within: configuration.limits) { currentEvent($0) }
    switch outcome {
    case .applied(let changes, let queued):
      appliedUpdates &+= 1
      resumeSequence = pipeline.snapshot?.updateSequence ?? 0
      health.succeeded(at: scheduler.unixTime)
      finish(changes, queued: queued)
      return true
    case .refused(let violation, let owed):
      lastSendTime = previousSendTime
      resumeSequence = 0
      // Not applied: the held state stays the last trip accepted. The stream is dropped, so the next one
      // starts from a whole trip rather than from deltas on top of a refused one. The error published
      // next carries any taken-back change bits with it.
      rejected(violation, owed: owed)
      return false
    }
  }

  func source(_ source: any TripSource, polled trip: Trip, request: GetTripRequest, sentAfterUpdates: Int) {
    guard source === self.source || (self.source != nil && fetch == .stream), following, !finished else { return }
    // A refresh beside a stream sent before the last streamed update is older than what is held.
    guard fetch == .poll || sentAfterUpdates == appliedUpdates else {
      configuration.logger.debug(
        "dropped a refresh answer older than the streamed state", metadata: ["trip": "\(tripName)"])
      return
    }
    countReceived(.unary)
    // A poll's answer carries no send time: the events after it have none.
    lastSendTime = nil
    let merged = trip.merged(intoHeld: pipeline.state.trip, request: request)
    switch pipeline.replace(with: merged, within: configuration.limits, event: { currentEvent($0) }) {
    case .applied(let changes, let queued):
      resumeSequence = 0
      if fetch == .poll { retry.succeeded() }
      health.succeeded(at: scheduler.unixTime)
      finish(changes, queued: queued)
    case .refused(let violation, let owed):
      rejected(violation, owed: owed)
    }
  }

  func source(
    _ source: any TripSource, streamEnded status: GRPCStatus, trailers: GRPCMetadata, lifetime: Duration, messages: Int
  ) {
    guard source === self.source, following, !finished else { return }
    if retry.isHealthy(streamLifetime: lifetime, messages: messages) { retry.succeeded() }
    if status.code == .ok {
      // The server ended the stream before the trip ended (GOAWAY, a restart, a misbehaving server): a
      // failure like any other, so a server that does it again and again meets a growing backoff.
      let message =
        messages == 0
        ? "the server ended the stream before sending the trip"
        : "the server ended the stream before the trip's final state"
      failed(GRPCError(code: .unavailable, message: message))
    } else {
      failed(GRPCError(status: status, trailers: trailers))
    }
  }

  func source(_ source: any TripSource, failed error: GRPCError, isRefresh: Bool) {
    guard following, !finished else { return }
    if isRefresh && fetch == .stream {
      // A refresh beside a healthy stream failed: report it; the stream goes on.
      if error.code == .unauthenticated { tokens?.invalidate() }
      lastError = error
      publish(TripModelEvent.errorBit)
      return
    }
    guard source === self.source else { return }
    failed(error)
  }

  // MARK: - Results

  /// After an update was offered: wakes the delivery threads, and ends following at the final state.
  private func finish(_ changes: TripPropertyFields, queued: Bool) {
    if queued { services.requestDeliveryWake(on: scheduler) }
    guard !changes.isEmpty, let snapshot = pipeline.snapshot, snapshot.isFinal, !finished else { return }
    // The final state has been handed over: following ends here.
    finished = true
    stopFollowing()
    publish(TripModelEvent.stateBit)
  }

  /// A trip above ``JourneySharingConfiguration/limits`` was refused: RESOURCE_EXHAUSTED, retried.
  private func rejected(_ violation: TripLimitViolation, owed: Bool) {
    configuration.logger.debug(
      "refused a trip above the limits", metadata: ["trip": "\(tripName)", "reason": "\(violation.message)"])
    source?.stop()
    source = nil
    failed(GRPCError(code: .resourceExhausted, message: violation.message))
  }

  /// Reports `error` and fetches again after the backoff delay (or at once when falling back to polling).
  private func failed(_ error: GRPCError) {
    if error.code == .unimplemented && fetch == .stream && configuration.fetchMode == .auto {
      configuration.logger.debug(
        "the server has no streaming GetTrip; polling instead", metadata: ["trip": "\(tripName)"])
      fetch = .poll
      startSource()
      return
    }
    if error.code == .unauthenticated { tokens?.invalidate() }
    lastError = error
    health.failed(at: scheduler.unixTime)
    publish(TripModelEvent.errorBit)
    let delay = retry.failed()
    configuration.logger.debug(
      "fetching failed", metadata: ["trip": "\(tripName)", "code": "\(error.code.name)", "retry_in": "\(delay)"])
    if let retryTimer { scheduler.cancelTimer(retryTimer) }
    retryTimer = scheduler.scheduleTimer(after: delay) { [weak self] in
      guard let self, self.following, !self.finished else { return }
      self.retryTimer = nil
      if let source = self.source {
        source.start()
      } else {
        self.startSource()
      }
    }
  }
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
