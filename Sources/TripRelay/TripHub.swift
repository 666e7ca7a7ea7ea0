// Sources/TripRelay/TripHub.swift - one watched trip on one relay: its state folded from TRIPS, sent to its watchers
//
// A hub is made when a trip gets its first watcher on the relay and goes with its last. It catches up once:
// the trip's latest state and the few updates stored after it (TripsStore.swift); meanwhile new updates wait
// in it (the feed brings every update stored after the feed started reading, and stream sequences drop what
// both brought). Then it is live: each new update is folded into the trip and sent, as stored, to every
// watcher, numbered by its stream sequence.
//
// A watcher gets, once the hub is live:
// - `after_sequence` 0: the whole trip as folded, numbered with the last sequence folded, then the updates;
// - `after_sequence` N: the updates after N only, from the hub's recent updates or read from `TRIPS`; when
//   those are no longer all stored (or too many), the whole trip with `discontinuity`;
// - a refused trip's status, at once; a trip nobody has published yet: nothing until its first state, or
//   UNAVAILABLE after `firstStateTimeout` (watch again);
// - at the trip's end, the final state, then OK.
// A watcher whose responses pile up unsent (it does not read) is skipped and marked behind; once it drains it
// gets the whole trip as it is then, and one behind for `watcherStallTimeout` is ended.
//
// No I/O here: reads go through the `TripsStore`, sends through the calls; everything runs on the server's
// event loop (the reads' results hop there), so the hub runs as well on the in-memory transport's virtual
// clock as on a real server.

internal import CoreMetrics
internal import FleetEngineMessages
internal import GRPCProtocol
internal import JourneySharing
internal import Primitives

/// One watched trip on one relay (see the file comment). `@unchecked Sendable`: confined to the server's
/// event loop; its reads' results hop there with `execute`.
final class TripHub: @unchecked Sendable {
  final class Watcher {
    let call: any GRPCServerCallContext
    let principal: String
    let after: UInt64
    /// Waiting for the hub, or for its resume read; live once it gets updates as they come.
    var phase: Phase = .waiting
    /// Updates that arrived while its resume read ran.
    var queued: [TripsMessage] = []
    /// The last sequence sent to it.
    var sent: UInt64 = 0
    /// Since when (monotonic) its unsent responses have been over the limit; nil when it keeps up.
    var behindSince: UInt64?
    var firstStateTimer: GRPCTimerID?

    enum Phase { case waiting, resuming, live }

    init(call: any GRPCServerCallContext, principal: String, after: UInt64) {
      self.call = call
      self.principal = principal
      self.after = after
    }
  }

  let name: TripName
  let partition: Int
  private unowned let service: RelayWatchService
  private let scheduler: any GRPCScheduler
  private var configuration: RelayConfiguration { service.configuration }

  private enum Phase { case waitingForFeed, queued, catchingUp, live, ended }
  private var phase: Phase = .waitingForFeed
  private var trip: Trip?
  /// The last sequence folded into `trip`.
  private var last: UInt64 = 0
  private var isFinal = false
  private var refusal: GRPCStatus?
  /// The latest updates folded (for watchers that resume), and the sequence after which they are complete.
  /// The latest updates folded, as stored (no decoded copy: a hub keeps its trip once), for watchers that
  /// resume; complete after `recentFloor`.
  private var recent: [(sequence: UInt64, body: [UInt8])] = []
  private var recentFloor: UInt64 = 0
  private static let recentLimit = 32
  /// Updates the feed brought while catching up.
  private var pendingLive: [TripsMessage] = []
  private var watchers: [ObjectIdentifier: Watcher] = [:]
  private var catchUp: Task<Void, Never>?
  private var behindTimer: GRPCTimerID?
  /// A follow request was asked for (or found pending) since the hub was made.
  private var submitted = false
  /// The caller whose watch made the hub: its catch-up counts against that caller's joins in progress.
  let creator: String
  /// The hub still counts as one of its creator's joins in progress (until its catch-up ended).
  var holdsJoin = true

  init(name: TripName, partition: Int, creator: String, service: RelayWatchService, scheduler: any GRPCScheduler) {
    self.name = name
    self.partition = partition
    self.creator = creator
    self.service = service
    self.scheduler = scheduler
  }

  var watcherCount: Int { watchers.count }
  var isEnded: Bool { phase == .ended }

  // MARK: - Watchers

  func add(_ call: any GRPCServerCallContext, principal: String, after: UInt64) {
    let watcher = Watcher(call: call, principal: principal, after: after)
    let key = ObjectIdentifier(call as AnyObject)
    watchers[key] = watcher
    service.watcherAdded()
    call.onCancel { [weak self] in
      guard let self, let gone = self.watchers.removeValue(forKey: key) else { return }
      self.cancelTimer(of: gone)
      self.service.watcherRemoved()
      if self.watchers.isEmpty && self.phase != .ended { self.service.remove(self) }
    }
    if phase == .live { start(watcher) }
  }

  private func finish(_ watcher: Watcher, _ status: GRPCStatus) {
    guard watchers.removeValue(forKey: ObjectIdentifier(watcher.call as AnyObject)) != nil else { return }
    cancelTimer(of: watcher)
    service.watcherRemoved()
    watcher.call.finish(status)
    if watchers.isEmpty && phase != .ended { service.remove(self) }
  }

  /// Ends a watcher that does not read (see ``checkBehind()``).
  private func drop(_ watcher: Watcher) {
    guard watchers.removeValue(forKey: ObjectIdentifier(watcher.call as AnyObject)) != nil else { return }
    cancelTimer(of: watcher)
    service.watcherRemoved()
    service.watcherDropped()
    watcher.call.reset(errorCode: HTTP2ErrorCode.enhanceYourCalm)
    if watchers.isEmpty && phase != .ended { service.remove(self) }
  }

  private func cancelTimer(of watcher: Watcher) {
    if let timer = watcher.firstStateTimer { scheduler.cancelTimer(timer) }
    watcher.firstStateTimer = nil
  }

  /// Ends the hub: every watcher gets `status`.
  func end(_ status: GRPCStatus) {
    guard phase != .ended else { return }
    phase = .ended
    catchUp?.cancel()
    catchUp = nil
    pendingLive = []
    if let behindTimer { scheduler.cancelTimer(behindTimer) }
    behindTimer = nil
    let all = Array(watchers.values)
    watchers.removeAll()
    for watcher in all {
      cancelTimer(of: watcher)
      service.watcherRemoved()
      watcher.call.finish(status)
    }
    service.remove(self)
  }

  // MARK: - Catching up

  /// The feed of the hub's partition reads: the hub may catch up, when the service gives it its turn.
  func feedReads() {
    guard phase == .waitingForFeed else { return }
    phase = .queued
    service.queueCatchUp(self)
  }

  /// The service's turn: catch up (state, then the updates after it); ends with
  /// ``RelayWatchService/catchUpEnded(_:)`` whatever happens, exactly once.
  func startCatchUp() {
    guard phase == .queued else {
      service.catchUpEnded(self)
      return
    }
    phase = .catchingUp
    let store = service.store
    let name = name
    let attempts = max(1, configuration.historyReadAttempts)
    let scheduler = scheduler
    catchUp = Task { [self] in
      var failure: (any Error)?
      for attempt in 1...attempts where !Task.isCancelled {
        do {
          let state = try await store.latestState(of: name)
          scheduler.execute { self.caughtUpState(state) }
          let after = state?.sequence ?? 0
          let read = try await store.updates(of: name, after: after, limit: Int.max) { batch in
            scheduler.execute { self.foldHistory(batch) }
          }
          _ = read
          failure = nil
          break
        } catch {
          failure = error
          if Task.isCancelled { break }
          try? await Task.sleep(for: .milliseconds(250 << min(attempt - 1, 4)))
        }
      }
      let failed = failure.map { "\($0)" }
      scheduler.execute {
        self.catchUp = nil
        if let failed { self.historyFailed(failed) } else { self.caughtUp() }
        self.service.catchUpEnded(self)
      }
    }
  }

  private func caughtUpState(_ state: StoredTripState?) {
    guard phase == .catchingUp, let state else { return }
    if let refusal = state.refusal {
      // A refusal is the cluster's negative cache: it holds for `refusalTTL`, then the trip is asked for again.
      if unixTime() - state.storedAt < configuration.refusalTTL.inSeconds {
        self.refusal = refusal
      }
      return
    }
    guard state.sequence > last, let whole = state.trip else { return }
    trip = whole
    last = state.sequence
    isFinal = state.isFinal
    recentFloor = state.sequence
    recent.removeAll()
  }

  private func foldHistory(_ batch: [TripsMessage]) {
    guard phase == .catchingUp else { return }
    for message in batch { fold(message) }
  }

  private func historyFailed(_ reason: String) {
    guard phase == .catchingUp else { return }
    end(
      GRPCStatus(
        code: .unavailable,
        message: "the relay cannot read the trip's state from \(configuration.names.stateStream): \(reason)"))
  }

  private func caughtUp() {
    guard phase == .catchingUp else { return }
    phase = .live
    let waiting = pendingLive
    pendingLive = []
    for message in waiting where phase == .live { apply(message) }
    guard phase == .live else { return }
    if refusal == nil, !isFinal, configuration.submitOnWatch { submitFollow() }
    for watcher in Array(watchers.values) where watcher.phase == .waiting { start(watcher) }
  }

  /// Enqueues a follow request for the trip (once per hub), charged to the first watcher's caller (given back
  /// when one was pending already); refused when that caller has none left.
  private func submitFollow() {
    guard !submitted, let first = watchers.values.first else { return }
    submitted = true
    let principal = first.principal
    guard service.mayEnqueue(for: principal) else {
      // Over the caller's limit: no follow request. A watcher with nothing to watch is told so.
      if trip == nil {
        for watcher in Array(watchers.values) where watcher.principal == principal {
          finish(
            watcher,
            GRPCStatus(
              code: .resourceExhausted,
              message: "too many follow requests from this caller: the trip is not followed; watch again later"))
        }
      }
      return
    }
    let store = service.store
    let name = name
    Task {
      let enqueued = (try? await store.submitFollow(name)) ?? false
      if !enqueued { self.service.notEnqueued(for: principal) }
    }
  }

  // MARK: - Live

  /// A message the feed read (any trip of the partition reaches only its own hub).
  func receiveLive(_ message: TripsMessage) {
    switch phase {
    case .waitingForFeed, .ended: return
    case .queued, .catchingUp: pendingLive.append(message)
    case .live: apply(message)
    }
  }

  private func apply(_ message: TripsMessage) {
    guard message.sequence > last else { return }
    if let refusal = message.refusal {
      service.refused(name, status: refusal)
      end(refusal)
      return
    }
    guard fold(message) else { return }
    service.delivered(storedAtNanoseconds: message.storedAtNanoseconds)
    let stamped = TripStreamWriter.stamped(message.body, sequence: message.sequence, sendTime: now)
    for watcher in watchers.values {
      switch watcher.phase {
      case .waiting: start(watcher)
      case .resuming: watcher.queued.append(message)
      case .live: send(stamped, sequence: message.sequence, to: watcher)
      }
    }
    guard isFinal else { return }
    // The end: a watcher behind or still resuming gets the final state whole, whatever its buffer holds.
    if let trip {
      for watcher in watchers.values where watcher.sent < last {
        watcher.queued = []
        sendWhole(trip, to: watcher, discontinuity: false)
      }
    }
    end(.ok)
  }

  /// Folds `message` into the trip; false when it is not used (already folded, or not applicable).
  @discardableResult
  private func fold(_ message: TripsMessage) -> Bool {
    guard message.sequence > last else { return false }
    if let refusal = message.refusal {
      self.refusal = refusal
      last = message.sequence
      return false
    }
    guard let update = message.update else { return false }
    var folded = trip ?? Trip()
    folded.apply(update)
    if let violation = service.limits.violation(in: folded) {
      service.skippedOverLimits(violation)
      last = message.sequence
      return false
    }
    trip = folded
    last = message.sequence
    isFinal = folded.isFinal
    recent.append((message.sequence, message.body))
    if recent.count > Self.recentLimit {
      recentFloor = recent.removeFirst().sequence
    }
    return true
  }

  private var now: Timestamp { Timestamp(unixTime: scheduler.unixTime) }

  // MARK: - Serving one watcher

  /// The hub is live: give `watcher` what it asked for.
  private func start(_ watcher: Watcher) {
    if let refusal {
      finish(watcher, refusal)
      return
    }
    guard let trip else {
      // Nobody has published the trip yet: wait for its first state, for a while.
      if watcher.firstStateTimer == nil {
        watcher.firstStateTimer = scheduler.scheduleTimer(after: configuration.firstStateTimeout) {
          [weak self, weak watcher] in
          guard let self, let watcher, watcher.phase == .waiting else { return }
          watcher.firstStateTimer = nil
          self.finish(
            watcher,
            GRPCStatus(
              code: .unavailable,
              message: "no relay has published the trip yet (is one following the provider's trips?): watch again"))
        }
      }
      return
    }
    cancelTimer(of: watcher)
    if watcher.after == 0 {
      sendWhole(trip, to: watcher, discontinuity: false)
    } else if watcher.after == last {
      watcher.phase = .live
      watcher.sent = last
    } else if watcher.after > last {
      // A position this cluster never gave this trip: start over.
      sendWhole(trip, to: watcher, discontinuity: true)
    } else if watcher.after >= recentFloor {
      watcher.phase = .live
      for message in recent where message.sequence > watcher.after {
        send(
          TripStreamWriter.stamped(message.body, sequence: message.sequence, sendTime: now), sequence: message.sequence,
          to: watcher)
      }
    } else {
      resume(watcher)
    }
    if isFinal && watcher.phase == .live { finish(watcher, .ok) }
  }

  private func sendWhole(_ trip: Trip, to watcher: Watcher, discontinuity: Bool) {
    watcher.phase = .live
    watcher.behindSince = nil
    let message = TripStreamWriter.encode(
      trip, fields: nil, sequence: last, sendTime: now, discontinuity: discontinuity)
    watcher.call.send(message)
    watcher.sent = last
    service.sentToWatcher()
  }

  private func send(_ stamped: [UInt8], sequence: UInt64, to watcher: Watcher) {
    guard sequence > watcher.sent else { return }
    if watcher.behindSince != nil { return }
    if watcher.call.outboundBufferedBytes > configuration.watcherBufferLimit {
      watcher.behindSince = scheduler.monotonicNanoseconds
      armBehindTimer()
      return
    }
    watcher.call.send(stamped)
    watcher.sent = sequence
    service.sentToWatcher()
  }

  /// Reads the updates after the watcher's position from `TRIPS`; meanwhile new ones wait for it.
  private func resume(_ watcher: Watcher) {
    watcher.phase = .resuming
    let store = service.store
    let name = name
    let after = watcher.after
    let limit = configuration.maxResumeUpdates
    let scheduler = scheduler
    service.resumeRead()
    let key = ObjectIdentifier(watcher.call as AnyObject)
    Task { [self] in
      let collected = Locked<[TripsMessage]>([])
      let read = try? await store.updates(of: name, after: after, limit: limit) { batch in
        collected.withLock { $0.append(contentsOf: batch) }
      }
      let messages = collected.withLock { $0 }
      scheduler.execute {
        guard self.phase == .live, let watcher = self.watchers[key], watcher.phase == .resuming else { return }
        self.resumed(watcher, messages: messages, read: read)
      }
    }
  }

  private func resumed(_ watcher: Watcher, messages: [TripsMessage], read: UpdatesRead?) {
    let queued = watcher.queued
    watcher.queued = []
    guard let read, !read.truncated, !read.historyMissing else {
      if let trip { sendWhole(trip, to: watcher, discontinuity: true) }
      if isFinal { finish(watcher, .ok) }
      return
    }
    watcher.phase = .live
    for message in messages + queued where message.refusal == nil && message.sequence > watcher.sent {
      send(
        TripStreamWriter.stamped(message.body, sequence: message.sequence, sendTime: now), sequence: message.sequence,
        to: watcher)
    }
    if isFinal { finish(watcher, .ok) }
  }

  // MARK: - Watchers that do not read

  private func armBehindTimer() {
    guard behindTimer == nil else { return }
    behindTimer = scheduler.scheduleTimer(after: .milliseconds(500)) { [weak self] in
      guard let self else { return }
      self.behindTimer = nil
      self.checkBehind()
    }
  }

  /// A watcher that drained gets the whole trip as it is now; one behind too long is ended.
  private func checkBehind() {
    guard phase != .ended else { return }
    let now = scheduler.monotonicNanoseconds
    let stall = configuration.watcherStallTimeout.nonNegativeNanoseconds
    var stillBehind = false
    for watcher in Array(watchers.values) {
      guard let since = watcher.behindSince else { continue }
      if watcher.call.outboundBufferedBytes <= configuration.watcherBufferLimit / 2 {
        watcher.behindSince = nil
        if let trip, watcher.sent < last { sendWhole(trip, to: watcher, discontinuity: false) }
      } else if now &- since >= stall {
        // Its status could not reach it (trailers wait behind the data it does not take): the stream is reset
        // with ENHANCE_YOUR_CALM, which gRPC clients read as RESOURCE_EXHAUSTED.
        drop(watcher)
      } else {
        stillBehind = true
      }
    }
    if stillBehind { armBehindTimer() }
  }
}
