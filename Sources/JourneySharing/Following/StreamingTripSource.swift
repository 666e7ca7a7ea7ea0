// Sources/JourneySharing/Following/StreamingTripSource.swift - a trip pushed over a server stream
//
// One StreamTripRequest, then TripUpdates: the whole trip first, then what changed. The stream's
// messages are decoded here, with the decode limits, and handed to the coordinator one by one, on the
// scheduler that runs the call's callbacks (no hop, no copy of the bytes). A watchdog notices a stream
// that goes silent: a server that stopped answering (its connection may look alive) is UNAVAILABLE
// after a few update intervals, and the coordinator reconnects.

import FleetEngineMessages
import GRPCProtocol
import Logging
import Primitives
import Tracing

/// When a silent stream counts as dead: after `multiple` times the usual gap between its messages (an
/// average of the gaps between updates), but never sooner than `minimum` nor later than `maximum`; before
/// two updates have followed the whole trip, after `initial`.
///
/// Silent streams are ended at most `endingBurst` at once and `endingsPerSecond` after that, for all the
/// trips of a ``JourneySharingServices`` together; the others stay open and wait their turn, first come
/// first served (with no turn free within `maximum`, they ask again then), and the ones a message reaches
/// meanwhile live on. A server that falls behind leaves thousands of streams silent at the same moment: ending them
/// all sends as many RST_STREAM frames on a few connections, which servers take for the rapid-reset
/// attack (CVE-2023-44487) and answer by closing the whole connection (nghttp2's default allows 1,000 at
/// once and 33 a second). A stream that alone went silent is still ended after its timeout.
public struct StreamWatchdog: Sendable, Hashable {
  /// How many usual gaps of silence end the stream. Default 4.
  public var multiple: Double
  /// The shortest silence that ends it. Default 5 s.
  public var minimum: Duration
  /// The longest silence tolerated however slow the stream was. Default 120 s.
  public var maximum: Duration
  /// The silence tolerated before the gap is known (until two updates followed the whole trip). Default 30 s.
  public var initial: Duration
  /// How many silent streams may be ended at once. Default 100.
  public var endingBurst: Int
  /// How many silent streams may be ended per second once the burst is spent. Default 25.
  public var endingsPerSecond: Double

  /// A watchdog; every parameter defaults as its property says.
  public init(
    multiple: Double = 4, minimum: Duration = .seconds(5), maximum: Duration = .seconds(120),
    initial: Duration = .seconds(30), endingBurst: Int = 100, endingsPerSecond: Double = 25
  ) {
    self.multiple = max(1, multiple)
    self.minimum = minimum
    self.maximum = max(maximum, minimum)
    self.initial = initial
    self.endingBurst = max(1, endingBurst)
    self.endingsPerSecond = endingsPerSecond > 0 && endingsPerSecond.isFinite ? endingsPerSecond : 25
  }

  /// The silence that ends a stream whose messages came `averageGap` apart (nil: not known yet).
  func timeout(averageGap: Double?) -> Duration {
    guard let averageGap else { return initial }
    return min(max(.clampedSeconds(averageGap * multiple), minimum), maximum)
  }
}

/// The rate of ``StreamWatchdog/endingBurst`` and ``StreamWatchdog/endingsPerSecond``, shared by every
/// streaming trip of one services object: each silent stream reserves a time to be ended, first come
/// first served (a generic cell rate algorithm: a token bucket whose requests queue), so a stream silent
/// for long is not starved by others that go silent again and again. Thread-safe: trips on every
/// scheduler share it.
final class WatchdogEndings: Sendable {
  private let logger: Logger
  private let state: Locked<State>

  private struct State {
    /// The endings' rate: reservations queue behind it.
    var limit: RateLimit
    /// Endings put off since the last log line, and when that was.
    var deferred = 0
    var loggedAt: UInt64?
  }

  init(watchdog: StreamWatchdog?, logger: Logger) {
    let watchdog = watchdog ?? StreamWatchdog()
    state = Locked(State(limit: RateLimit(burst: watchdog.endingBurst, perSecond: watchdog.endingsPerSecond)))
    self.logger = logger
  }

  /// Reserves a time, `now` or later (monotonic nanoseconds), at which a stream silent at `now` may be
  /// ended; nil when none is free before `now + horizon` (nothing is reserved then: ask again later).
  func reserve(at now: UInt64, horizon: UInt64) -> UInt64? {
    let (slot, logDeferred, spacing): (UInt64?, Int, UInt64) = state.withLock { state in
      let slot = state.limit.reserve(at: now, horizon: horizon)
      guard slot != now else { return (slot, 0, state.limit.spacing) }
      state.deferred += 1
      guard state.loggedAt.map({ now &- $0 >= 60_000_000_000 }) ?? true else { return (slot, 0, state.limit.spacing) }
      state.loggedAt = now
      defer { state.deferred = 0 }
      return (slot, state.deferred, state.limit.spacing)
    }
    if logDeferred > 0 {
      logger.notice(
        "streams go silent faster than the watchdog may end them (the server fell behind?): the others wait",
        metadata: ["endings_per_second": "\(1e9 / Double(spacing))", "put_off": "\(logDeferred)"])
    }
    return slot
  }
}

/// Follows a trip over the streaming GetTrip. Confined to the trip's scheduler.
final class StreamingTripSource: TripSource {
  private unowned let owner: any TripSourceOwner
  private let transport: any GRPCClientTransport
  private let scheduler: any GRPCScheduler
  private let watchdog: StreamWatchdog?
  /// The poller that runs a `refresh()` beside the stream, made at the first one (most streams never
  /// refresh: a poller per stream was about 250 bytes a followed trip).
  private var refresher: PollingTripSource?
  private let budget: RequestBudget
  private var call: GRPCCallHandle?
  private var sink: StreamSink?
  /// The span of the stream under way (nil when tracing is off).
  private var span: (any Span)?
  /// Whether a stream was started and has not been counted as ended yet.
  private var callOpen = false
  private var stopped = false
  // The stream under way.
  private var startedAt: UInt64 = 0
  private var lastMessageAt: UInt64 = 0
  private var messages = 0
  private var averageGap: Double?
  private var watchdogTimer: GRPCTimerID?
  /// When the armed watchdog timer fires.
  private var watchdogDue: UInt64 = 0
  /// The services' rate of watchdog endings, and the time this silent stream reserved to be ended.
  private let endings: WatchdogEndings
  private var endingAt: UInt64?

  init(
    owner: any TripSourceOwner, transport: any GRPCClientTransport, scheduler: any GRPCScheduler,
    watchdog: StreamWatchdog?, endings: WatchdogEndings, budget: RequestBudget
  ) {
    self.owner = owner
    self.endings = endings
    self.transport = transport
    self.scheduler = scheduler
    self.watchdog = watchdog
    self.budget = budget
  }

  func start() {
    // One stream at a time: a retry scheduled after a failed refresh() finds the stream still open.
    guard call == nil, !stopped else { return }
    owner.withToken { [weak self] token in
      guard let self, !self.stopped, self.call == nil else { return }
      switch token {
      case .success(let token): self.open(token: token)
      case .failure(let error): self.owner.source(self, failed: error, isRefresh: false)
      }
    }
  }

  func stop() {
    stopped = true
    refresher?.stop()
    abandon()
  }

  func refresh() {
    guard !stopped else { return }
    if refresher == nil {
      refresher = PollingTripSource(
        owner: owner, transport: transport, scheduler: scheduler, budget: budget, interval: nil)
    }
    refresher?.start()
  }

  private func open(token: String?) {
    let parameters = owner.requestParameters
    var request = StreamTripRequest()
    request.header = parameters.header
    request.name = parameters.name
    request.view = parameters.view
    request.routeFormatType = parameters.routeFormat
    // A server that keeps the trip's history (a relay) sends only what came after; others send it whole.
    request.afterSequence = owner.resumeSequence
    let sink = StreamSink(source: self)
    self.sink = sink
    startedAt = scheduler.monotonicNanoseconds
    lastMessageAt = startedAt
    messages = 0
    endingAt = nil
    averageGap = nil
    var options = CallOptions(token: token, timeout: nil)
    span = owner.tracing.startSpan(.stream, parent: owner.traceContext, attempt: owner.attempt, options: &options)
    owner.metrics.callStarted(.stream)
    callOpen = true
    call = transport.startCall(
      path: FleetEngineMethods.streamingGetTrip, request: request.serializedBytes(), kind: .serverStreaming,
      options: options, on: scheduler, handler: sink)
    armWatchdog()
  }

  /// Cancels the stream without reporting it: its sink goes deaf first, so messages still queued behind a
  /// refused one (same socket read) are not applied and the CANCELLED status the cancel produces is not
  /// reported over the error that caused it.
  private func abandon(_ status: GRPCStatus = GRPCStatus(code: .cancelled, message: "cancelled by the client")) {
    sink?.abandoned = true
    sink = nil
    ended(status)
    call?.cancel()
    call = nil
    if let watchdogTimer { scheduler.cancelTimer(watchdogTimer) }
    watchdogTimer = nil
  }

  fileprivate func received(_ bytes: UnsafeRawBufferPointer) {
    let now = scheduler.monotonicNanoseconds
    // The usual gap: an exponentially weighted average, so one slow message does not stretch it. The first
    // gap, from the whole trip (sent when the stream opens) to the first update, says nothing of the
    // interval: a server updating every 10 s on its own clock may send that update a moment after the trip,
    // and a timeout of 5 s from it ended streams that were fine (a million trips at one update per 10 s).
    if messages > 1 {
      let gap = Double(now &- lastMessageAt) / 1e9
      averageGap = averageGap.map { $0 * 0.8 + gap * 0.2 } ?? gap
    }
    messages += 1
    lastMessageAt = now
    endingAt = nil
    // The timer waits out the timeout known when it was armed; re-arm when the silence tolerated now ends
    // sooner (the first gaps measured shrink it from the initial timeout).
    if let watchdog, watchdogTimer != nil,
      now &+ watchdog.timeout(averageGap: averageGap).nonNegativeNanoseconds < watchdogDue
    {
      scheduler.cancelTimer(watchdogTimer!)
      armWatchdog()
    }
    // One strong reference for the whole message: every use of the unowned `owner` takes and drops its own.
    let owner = self.owner
    let update: StreamedTripUpdate
    do {
      // The usual update only moves the vehicle: decoded flat, with no Trip built.
      update = try StreamedTripUpdate.decode(bytes, options: owner.limits.decodingOptions)
    } catch {
      abandon()
      owner.source(self, failed: owner.limits.decodeError(error, what: "TripUpdate"), isRefresh: false)
      return
    }
    if !owner.source(self, received: update) { abandon() }
  }

  fileprivate func finished(_ status: GRPCStatus, trailers: GRPCMetadata) {
    let lifetime = Duration.nanoseconds(Int64(clamping: scheduler.monotonicNanoseconds &- startedAt))
    let count = messages
    ended(status)
    call = nil
    sink = nil
    if let watchdogTimer { scheduler.cancelTimer(watchdogTimer) }
    watchdogTimer = nil
    owner.source(self, streamEnded: status, trailers: trailers, lifetime: lifetime, messages: count)
  }

  /// The stream under way ended with `status`: counted, and its span ended.
  private func ended(_ status: GRPCStatus) {
    guard callOpen else { return }
    callOpen = false
    owner.metrics.callEnded(.stream, code: status.code)
    CallTracing.end(span, status: status, messages: messages)
    span = nil
  }

  /// Checks for silence when the current timeout would run out after the last message (or at `due`, for a
  /// stream whose ending was put off); re-arms itself while messages keep coming, so a message costs no
  /// timer operation.
  private func armWatchdog(due explicitDue: UInt64? = nil) {
    guard let watchdog else { return }
    let due = explicitDue ?? lastMessageAt &+ watchdog.timeout(averageGap: averageGap).nonNegativeNanoseconds
    watchdogDue = due
    let now = scheduler.monotonicNanoseconds
    watchdogTimer = scheduler.scheduleTimer(after: .nanoseconds(Int64(clamping: due > now ? due - now : 0))) {
      [weak self] in
      guard let self, self.call != nil else { return }
      self.watchdogTimer = nil
      let silence = self.scheduler.monotonicNanoseconds &- self.lastMessageAt
      let limit = watchdog.timeout(averageGap: self.averageGap)
      if silence < limit.nonNegativeNanoseconds {
        self.armWatchdog()
        return
      }
      let now = self.scheduler.monotonicNanoseconds
      if self.endingAt.map({ now < $0 }) ?? true {
        // Many streams went silent at once (StreamWatchdog's rate of endings): this one waits its turn, or,
        // with none free within the longest silence tolerated, asks again then. A message meanwhile gives
        // its turn up and re-arms the timer as usual.
        let horizon = watchdog.maximum.nonNegativeNanoseconds
        let slot = self.endings.reserve(at: now, horizon: horizon)
        self.endingAt = slot
        if slot != now {
          self.armWatchdog(due: slot ?? now &+ horizon)
          return
        }
      }
      // Dead air: drop the stream and report it as the server being unavailable.
      let lifetime = Duration.nanoseconds(Int64(clamping: self.scheduler.monotonicNanoseconds &- self.startedAt))
      let count = self.messages
      let seconds = (Double(silence) / 1e9 * 10).rounded() / 10
      let status = GRPCStatus(
        code: .unavailable, message: "no update on the stream for \(seconds) s (watchdog: the server went silent)")
      self.abandon(status)
      self.owner.source(self, streamEnded: status, trailers: GRPCMetadata(), lifetime: lifetime, messages: count)
    }
  }
}

/// Receives one stream's callbacks on the trip's scheduler and forwards them, until the source abandons
/// the stream. `abandoned` is only touched on that scheduler, which runs every callback of the call and every
/// source method that sets it.
private final class StreamSink: GRPCCallHandler {
  let source: StreamingTripSource
  var abandoned = false

  init(source: StreamingTripSource) { self.source = source }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    guard !abandoned else { return }
    source.received(message)
  }

  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    guard !abandoned else { return }
    source.finished(status, trailers: trailers)
  }
}
