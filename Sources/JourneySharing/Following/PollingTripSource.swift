// Sources/JourneySharing/Following/PollingTripSource.swift - a trip polled with Fleet Engine's unary GetTrip
//
// One GetTrip at a time, carrying the *_version fields of what is held so unchanged parts are not sent
// again. The first poll goes at once; the one after it at a random point of the next interval, so trips
// that started together spread over the interval; later ones one interval apart, varied by ±10 % so they
// do not fall back into lockstep. When a poll is due it takes its time from the services-wide request
// budget, so the whole process never sends more than the budget allows.

import CoreMetrics
import FleetEngineMessages
import GRPCProtocol
import Primitives
import Tracing

/// Polls a trip (or, with no interval, fetches it once per `start()`, for a refresh beside a stream).
/// Confined to the trip's scheduler.
final class PollingTripSource: TripSource {
  /// How much each interval varies, up or down, so polls spread over the interval.
  static let intervalJitter = 0.1

  private unowned let owner: any TripSourceOwner
  private let transport: any GRPCClientTransport
  private let scheduler: any GRPCScheduler
  private let budget: RequestBudget
  /// Time between polls; nil polls once per `start()`.
  private let interval: () -> Duration?
  private var random: SplitMix64
  private var call: GRPCCallHandle?
  /// The span of the poll in flight (nil when tracing is off), and when it was sent (monotonic).
  private var span: (any Span)?
  private var sentAt: UInt64 = 0
  /// Whether a call was started and has not been counted as ended yet.
  private var callOpen = false
  private var inFlight = false
  private var timer: GRPCTimerID?
  private var stopped = false
  /// Polls answered so far.
  private var polls = 0

  init(
    owner: any TripSourceOwner, transport: any GRPCClientTransport, scheduler: any GRPCScheduler,
    budget: RequestBudget, interval: (() -> Duration)?
  ) {
    self.owner = owner
    self.transport = transport
    self.scheduler = scheduler
    self.budget = budget
    self.interval = interval ?? { nil }
    self.random = SplitMix64(seed: UInt64(truncatingIfNeeded: ObjectIdentifier(owner).hashValue))
  }

  /// The grid the next polls' times are rounded up to: the polls of many trips that fall due within the same
  /// 5 ms fire in one loop turn, so their requests leave in one write per connection and their timers cost
  /// one wake-up, not one each (at 10,000 trips every 5 s, 2,000 polls a second). A poll is at most 5 ms
  /// later than its jittered time; the first poll of a trip, and a refresh, are not delayed. A request budget
  /// that spaces requests further apart (``JourneySharingConfiguration/maxRequestsPerSecond``, 100 a second by
  /// default: one every 10 ms) decides the times instead, and the grid then batches nothing.
  static let pollGridNanoseconds: UInt64 = 5_000_000

  /// `time` rounded up to the poll grid.
  static func alignedToGrid(_ time: UInt64) -> UInt64 {
    let remainder = time % pollGridNanoseconds
    return remainder == 0 ? time : time &+ (pollGridNanoseconds - remainder)
  }

  /// Polls as soon as the budget allows (cancelling a poll scheduled later).
  func start() {
    guard !stopped, !inFlight else { return }
    schedule(wanted: scheduler.monotonicNanoseconds)
  }

  func refresh() { start() }

  func stop() {
    stopped = true
    if let timer { scheduler.cancelTimer(timer) }
    timer = nil
    ended(GRPCStatus(code: .cancelled, message: "cancelled by the client"))
    call?.cancel()
    call = nil
  }

  /// The poll in flight ended with `status`: counted, its round trip timed, its span ended.
  private func ended(_ status: GRPCStatus) {
    guard callOpen else { return }
    callOpen = false
    let metrics = owner.metrics
    metrics.callEnded(.unary, code: status.code)
    if metrics.enabled {
      metrics.pollRoundTrip.recordNanoseconds(Int64(clamping: scheduler.monotonicNanoseconds &- sentAt))
    }
    CallTracing.end(span, status: status)
    span = nil
  }

  /// Polls at `wanted`, or later when the budget is used up then. The budget is asked when the time comes,
  /// never ahead: a poll due in a minute holds back no other request meanwhile.
  private func schedule(wanted: UInt64) {
    if let timer { scheduler.cancelTimer(timer) }
    timer = scheduler.scheduleTimer(
      after: .nanoseconds(Int64(clamping: wanted &- min(wanted, scheduler.monotonicNanoseconds)))
    ) {
      [weak self] in
      guard let self else { return }
      self.timer = nil
      let now = self.scheduler.monotonicNanoseconds
      let time = self.budget.reserve(at: now)
      guard time > now else {
        self.poll()
        return
      }
      // The budget's slot is later: wait for it (it is ours now).
      self.timer = self.scheduler.scheduleTimer(after: .nanoseconds(Int64(clamping: time - now))) { [weak self] in
        guard let self else { return }
        self.timer = nil
        self.poll()
      }
    }
  }

  private func poll() {
    guard !stopped, !inFlight else { return }
    inFlight = true
    owner.withToken { [weak self] token in
      guard let self, !self.stopped else { return }
      switch token {
      case .success(let token): self.send(token: token)
      case .failure(let error):
        self.inFlight = false
        self.owner.source(self, failed: error, isRefresh: self.isRefresher)
      }
    }
  }

  private var isRefresher: Bool { interval() == nil }

  private func send(token: String?) {
    let parameters = owner.requestParameters
    var request = GetTripRequest()
    request.header = parameters.header
    request.name = parameters.name
    request.view = parameters.view
    request.routeFormatType = parameters.routeFormat
    request.setVersions(holding: owner.heldTrip)
    let handler = PollSink(source: self, request: request, sentAfterUpdates: owner.appliedUpdates)
    var options = CallOptions(token: token, timeout: parameters.callTimeout)
    span = owner.tracing.startSpan(.unary, parent: owner.traceContext, attempt: owner.attempt, options: &options)
    owner.metrics.callStarted(.unary)
    sentAt = scheduler.monotonicNanoseconds
    callOpen = true
    call = transport.startCall(
      path: FleetEngineMethods.unaryGetTrip, request: request.serializedBytes(), kind: .unary,
      options: options, on: scheduler, handler: handler)
  }

  fileprivate func answered(
    _ status: GRPCStatus, trailers: GRPCMetadata, message: [UInt8]?, request: GetTripRequest, sentAfterUpdates: Int
  ) {
    ended(status)
    call = nil
    inFlight = false
    guard !stopped else { return }
    guard status.code == .ok else {
      owner.source(self, failed: GRPCError(status: status, trailers: trailers), isRefresh: isRefresher)
      return
    }
    let trip: Trip
    do {
      trip = try Trip(serializedBytes: message ?? [], options: owner.limits.decodingOptions)
    } catch {
      owner.source(self, failed: owner.limits.decodeError(error, what: "Trip"), isRefresh: isRefresher)
      return
    }
    owner.source(self, polled: trip, request: request, sentAfterUpdates: sentAfterUpdates)
    // The next poll: one interval from now, varied so trips drift apart. The poll after the first lands at
    // a random point of the next interval (half an interval to one and a half): trips that started
    // together, and polled first in one burst, then spread evenly over the interval.
    if let interval = interval(), !stopped {
      polls += 1
      let spread = polls == 1 ? 0.5 : Self.intervalJitter
      let factor = Double.random(in: (1 - spread)...(1 + spread), using: &random)
      let wanted =
        scheduler.monotonicNanoseconds &+ Duration.clampedSeconds(interval.inSeconds * factor).nonNegativeNanoseconds
      schedule(wanted: Self.alignedToGrid(wanted))
    }
  }
}

/// Receives one poll's callbacks on the trip's scheduler; `message` is only touched there, by the call's callbacks.
private final class PollSink: GRPCCallHandler {
  let source: PollingTripSource
  let request: GetTripRequest
  let sentAfterUpdates: Int
  private var message: [UInt8]?

  init(source: PollingTripSource, request: GetTripRequest, sentAfterUpdates: Int) {
    self.source = source
    self.request = request
    self.sentAfterUpdates = sentAfterUpdates
  }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    self.message = [UInt8](message)
  }

  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    source.answered(status, trailers: trailers, message: message, request: request, sentAfterUpdates: sentAfterUpdates)
  }
}
