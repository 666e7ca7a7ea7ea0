// Sources/TripRelay/RelayWatchService.swift - the relay's gRPC side: who may watch what, and the hubs that serve it
//
// The relay serves `journeysharing.v1.TripStreamService/GetTrip`, the contract FleetSim serves (the whole
// trip, then the changed fields, until the trip ends), and gRPC's health service. A watch is checked before
// it costs anything:
// 1. the relay is ready (NATS reachable, streams there), else UNAVAILABLE;
// 2. the request decodes and is small (a StreamTripRequest is well under 4 KiB), else INVALID_ARGUMENT;
// 3. the name is a trip of the relay's provider, else INVALID_ARGUMENT at once;
// 4. the caller's consumer token verifies (UNAUTHENTICATED) and grants the trip (PERMISSION_DENIED), unless
//    the relay runs with `--insecure-no-auth`;
// 5. a trip refused upstream lately gets that status at once (the negative cache, shared by the cluster
//    through `TRIPSTATE`).
// Then the watcher joins its trip's hub (TripHub.swift). Only a watch that passed all of these may enqueue a
// follow request, and each caller (the token's subject, else the client's address) only so many.
//
// Reading `TRIPS` costs the same however many trips are watched: one feed per partition reads every new
// message while the relay has hubs of that partition, and hands each batch to the event loop, where each
// message goes to its trip's hub (or nowhere). A new hub catches up only once its partition's feed reads,
// so every later message reaches it through the feed.
//
// Everything but the counters read from other threads runs on the server's event loop.

internal import CoreMetrics
internal import FleetEngineMessages
internal import GRPCHealth
internal import GRPCProtocol
internal import JSONWebToken
internal import JourneySharing
internal import Logging
internal import Primitives
internal import Tracing

/// Serves the streaming GetTrip and health from the relay's store. `@unchecked Sendable`: confined to the
/// server's event loop, where every ``handle(_:)`` runs; `watchers` is a lock-guarded count.
final class RelayWatchService: GRPCService, @unchecked Sendable {
  /// The largest StreamTripRequest taken.
  static let maxRequestBytes = 4_096
  /// How long a partition's feed keeps reading after its last hub ended.
  static let feedLinger: Duration = .seconds(30)
  /// The most refusals remembered.
  static let maxRefusals = 100_000
  /// How many hubs read their state and tail at once; the others wait their turn.
  static let maxCatchUps = 32

  let configuration: RelayConfiguration
  let store: any TripsStore
  let metrics: RelayMetrics
  let limits: TripLimits
  let health = HealthService(services: ["", FleetEngineMethods.streamingServiceName], initial: .notServing)
  /// Watchers open now (read from any thread).
  let watchers = Locked(0)
  private let logger: Logger
  private let enqueueLimiter: KeyedRateLimiter<String>
  private let overLimitsLog: RateLimitedLog

  private struct Feed {
    var handle: any TripsFeedHandle
    var reading = false
    var lingerTimer: GRPCTimerID?
  }

  private var hubs: [String: TripHub] = [:]
  private var feeds: [Int: Feed] = [:]
  private var refusals: [String: (status: GRPCStatus, until: UInt64)] = [:]
  private var ready = false
  private var stopped = false
  private var scheduler: (any GRPCScheduler)?
  /// Hubs waiting for their turn to catch up, and how many catch up now.
  private var catchUpQueue: [TripHub] = []
  private var catchUpQueueHead = 0
  private var catchUpsRunning = 0
  /// Hubs each caller made that have not caught up yet.
  private var joinsInProgress: [String: Int] = [:]

  init(configuration: RelayConfiguration, store: any TripsStore, metrics: RelayMetrics) {
    self.configuration = configuration
    self.store = store
    self.metrics = metrics
    self.limits = configuration.upstream.limits
    self.logger = configuration.logger
    enqueueLimiter = KeyedRateLimiter(
      burst: configuration.submitBurstPerCaller, perSecond: configuration.submitsPerSecondPerCaller)
    overLimitsLog = RateLimitedLog(logger: configuration.logger, interval: .seconds(60))
  }

  // MARK: - Readiness (loop only)

  /// Loop only: whether watches are served (NATS reachable, the streams there).
  func setReady(_ ready: Bool) {
    guard !stopped, ready != self.ready else { return }
    self.ready = ready
    let status: HealthCheckResponse.ServingStatus = ready ? .serving : .notServing
    health.setStatus(status, for: "")
    health.setStatus(status, for: FleetEngineMethods.streamingServiceName)
  }

  /// Loop only, after the server stopped: hubs end, feeds stop, health says NOT_SERVING for good.
  func stop() {
    stopped = true
    health.shutDown()
    health.endWatches(GRPCStatus(code: .unavailable, message: "the relay is stopping"))
    for hub in Array(hubs.values) { hub.end(GRPCStatus(code: .unavailable, message: "the relay is stopping")) }
    hubs.removeAll()
    for (partition, feed) in feeds {
      feed.handle.stop()
      if let timer = feed.lingerTimer { scheduler?.cancelTimer(timer) }
      feeds[partition] = nil
    }
  }

  // MARK: - Calls

  /// The server refuses a larger StreamTripRequest (or health request) as soon as its length prefix arrives.
  func maxRequestMessageSize(forMethod path: String) -> Int? {
    switch path {
    case FleetEngineMethods.streamingGetTrip: Self.maxRequestBytes
    case HealthMethods.check, HealthMethods.watch: 1 << 10
    default: nil
    }
  }

  func handle(_ call: any GRPCServerCallContext) {
    scheduler = scheduler ?? call.scheduler
    if call.path.hasPrefix("/\(HealthMethods.serviceName)/") {
      health.handle(call)
      return
    }
    guard call.path == FleetEngineMethods.streamingGetTrip else {
      refuse(call, .unimplemented, "method \(call.path) is not implemented")
      return
    }
    guard !stopped else { return refuse(call, .unavailable, "the relay is stopping") }
    guard ready else {
      return refuse(call, .unavailable, "the relay is not ready: NATS is unreachable or its streams are missing")
    }
    guard call.request.count <= Self.maxRequestBytes else {
      return refuse(call, .invalidArgument, "the StreamTripRequest is larger than \(Self.maxRequestBytes) bytes")
    }
    let request: StreamTripRequest
    do {
      request = try StreamTripRequest(serializedBytes: call.request)
    } catch {
      return refuse(call, .invalidArgument, "malformed StreamTripRequest: \(error)")
    }
    guard let name = TripName(parsing: request.name) else {
      return refuse(call, .invalidArgument, "trip name must be in the format providers/{provider_id}/trips/{trip_id}")
    }
    guard name.providerID == configuration.names.providerID else {
      return refuse(
        call, .invalidArgument,
        "the relay serves the trips of provider \(configuration.names.providerID.debugDescription) only")
    }
    let principal: String
    switch configuration.authorization {
    case .insecureNoAuthorization:
      principal = "address:\(call.peerAddress)"
    case .verified(let verifier):
      switch verifier.verify(
        authorizationHeader: call.requestMetadata.first("authorization"), now: call.scheduler.unixTime)
      {
      case .failure(let refusal):
        return refuse(call, .unauthenticated, refusal.message)
      case .success(let grant):
        guard grant.allows(tripID: name.tripID) else {
          return refuse(call, .permissionDenied, "the token does not grant access to this trip")
        }
        principal = "subject:\(grant.subject)"
      }
    }
    let key = name.description
    if let refusal = refusals[key] {
      if refusal.until > call.scheduler.monotonicNanoseconds {
        metrics.watchRefused(refusal.status.code)
        call.finish(refusal.status)
        return
      }
      refusals[key] = nil
    }
    watch(name, key: key, call: call, principal: principal, after: request.afterSequence)
  }

  private func refuse(_ call: any GRPCServerCallContext, _ code: GRPCStatusCode, _ message: String) {
    metrics.watchRefused(code)
    call.finish(GRPCStatus(code: code, message: message))
  }

  private func watch(
    _ name: TripName, key: String, call: any GRPCServerCallContext, principal: String, after: UInt64
  ) {
    let span = startWatchSpan(name, principal: principal)
    if let span { call.onCancel { span.end() } }
    let hub: TripHub
    if let existing = hubs[key], !existing.isEnded {
      hub = existing
    } else {
      // A new hub costs reads: each caller has only so many joins in progress.
      guard joinsInProgress[principal, default: 0] < configuration.maxJoinsInProgressPerCaller else {
        return refuse(
          call, .resourceExhausted,
          "too many watches of new trips from this caller at once (\(configuration.maxJoinsInProgressPerCaller)): watch again later"
        )
      }
      joinsInProgress[principal, default: 0] += 1
      let partition = configuration.names.partition(of: name)
      hub = TripHub(name: name, partition: partition, creator: principal, service: self, scheduler: call.scheduler)
      hubs[key] = hub
      startFeed(partition: partition, scheduler: call.scheduler)
      if feeds[partition]?.reading == true { hub.feedReads() }
    }
    hub.add(call, principal: principal, after: after)
  }

  private func startWatchSpan(_ name: TripName, principal: String) -> (any Span)? {
    guard let tracer = configuration.activeTracer else { return nil }
    let span = tracer.startSpan("relay.watch", ofKind: .server)
    span.attributes["trip.name"] = name.description
    span.attributes["rpc.system"] = "grpc"
    span.attributes["rpc.service"] = "journeysharing.v1.TripStreamService"
    span.attributes["rpc.method"] = "GetTrip"
    return span
  }

  // MARK: - Hubs (loop only)

  /// `hub` has no watcher left, or ended.
  func remove(_ hub: TripHub) {
    let key = hub.name.description
    if hubs[key] === hub { hubs[key] = nil }
    releaseJoin(of: hub)
    if !hubs.values.contains(where: { $0.partition == hub.partition }) { scheduleFeedStop(partition: hub.partition) }
  }

  /// Upstream refused `name`: answer its watchers with `status` for a while.
  func refused(_ name: TripName, status: GRPCStatus) {
    guard let scheduler else { return }
    if refusals.count >= Self.maxRefusals {
      let now = scheduler.monotonicNanoseconds
      refusals = refusals.filter { $0.value.until > now }
      if refusals.count >= Self.maxRefusals { refusals.removeAll() }
    }
    refusals[name.description] = (
      status, scheduler.monotonicNanoseconds &+ configuration.refusalTTL.nonNegativeNanoseconds
    )
  }

  func watcherAdded() {
    let count = watchers.withLock { count -> Int in
      count += 1
      return count
    }
    metrics.watchers.record(count)
  }

  func watcherRemoved() {
    let count = watchers.withLock { count -> Int in
      count -= 1
      return count
    }
    metrics.watchers.record(count)
  }

  func sentToWatcher() { metrics.deliveries.increment() }

  /// A watcher that did not read was ended.
  func watcherDropped() { metrics.watchRefused(.resourceExhausted) }

  func resumeRead() { metrics.resumeReads.increment() }

  /// A message stored at `storedAtNanoseconds` (Unix) is handed to its watchers now.
  func delivered(storedAtNanoseconds: Int64) {
    guard storedAtNanoseconds > 0, let scheduler else { return }
    let lag = scheduler.unixTime - Double(storedAtNanoseconds) / 1e9
    metrics.downstreamLag.recordNanoseconds(Int64(max(0, lag) * 1e9))
  }

  func skippedOverLimits(_ violation: TripLimitViolation) {
    metrics.skipped("limits")
    overLimitsLog.log("an update of TRIPS makes a trip above the limits: skipped", key: "limits")
  }

  /// Takes one follow request of `principal`'s limit; false when it has none left.
  func mayEnqueue(for principal: String) -> Bool {
    enqueueLimiter.take(principal, at: monotonicNanoseconds())
  }

  /// The follow request `principal` took turned out to be pending already: it does not count.
  func notEnqueued(for principal: String) {
    enqueueLimiter.giveBack(principal)
  }

  // MARK: - Catch-ups (loop only)

  func queueCatchUp(_ hub: TripHub) {
    catchUpQueue.append(hub)
    startCatchUps()
  }

  private func startCatchUps() {
    while catchUpsRunning < Self.maxCatchUps && catchUpQueueHead < catchUpQueue.count {
      let hub = catchUpQueue[catchUpQueueHead]
      catchUpQueueHead += 1
      catchUpsRunning += 1
      hub.startCatchUp()
    }
    if catchUpQueueHead == catchUpQueue.count {
      catchUpQueue.removeAll(keepingCapacity: catchUpQueue.count <= 1_024)
      catchUpQueueHead = 0
    }
  }

  /// `hub`'s catch-up ended (read, failed, or the hub ended first): the next one may start.
  func catchUpEnded(_ hub: TripHub) {
    catchUpsRunning -= 1
    releaseJoin(of: hub)
    startCatchUps()
  }

  private func releaseJoin(of hub: TripHub) {
    guard hub.holdsJoin else { return }
    hub.holdsJoin = false
    let left = (joinsInProgress[hub.creator] ?? 1) - 1
    joinsInProgress[hub.creator] = left > 0 ? left : nil
  }

  // MARK: - Feeds (loop only)

  private func startFeed(partition: Int, scheduler: any GRPCScheduler) {
    if let timer = feeds[partition]?.lingerTimer {
      scheduler.cancelTimer(timer)
      feeds[partition]?.lingerTimer = nil
    }
    guard feeds[partition] == nil else { return }
    // The feed holds the service until it stops (when the partition's last hub has gone, or at stop()).
    let handle = store.startFeed(partition: partition) { event in
      scheduler.execute { self.feedEvent(event, partition: partition) }
    }
    feeds[partition] = Feed(handle: handle)
  }

  private func feedEvent(_ event: FeedEvent, partition: Int) {
    guard feeds[partition] != nil else { return }
    switch event {
    case .reading:
      guard feeds[partition]?.reading == false else { return }
      feeds[partition]?.reading = true
      for hub in hubs.values where hub.partition == partition { hub.feedReads() }
    case .messages(let messages):
      for message in messages {
        guard let name = TripName(providerID: configuration.names.providerID, tripID: message.tripID) else { continue }
        hubs[name.description]?.receiveLive(message)
        if let refusal = message.refusal { refused(name, status: refusal) }
      }
    }
  }

  private func scheduleFeedStop(partition: Int) {
    guard let scheduler, var feed = feeds[partition], feed.lingerTimer == nil else { return }
    feed.lingerTimer = scheduler.scheduleTimer(after: Self.feedLinger) { [weak self] in
      guard let self else { return }
      self.feeds[partition]?.lingerTimer = nil
      guard !self.hubs.values.contains(where: { $0.partition == partition }) else { return }
      self.feeds[partition]?.handle.stop()
      self.feeds[partition] = nil
    }
    feeds[partition] = feed
  }
}
