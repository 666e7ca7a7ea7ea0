// Sources/TripRelay/FollowWorkQueue.swift - follow requests: taken from FOLLOW, held by leases, acked or handed back
//
// Follow requests wait in the work-queue stream `FOLLOW`; every relay of the cluster pulls them through one
// durable consumer. A relay takes requests only while it holds fewer than `maxTrips`, and holds each one
// un-acked while it follows the trip: a lease.
//
// A lease lasts as long as the relay can prove it: every `inProgressInterval` it sends an in-progress ack
// for each request it holds, as a request the server answers. An answered one reset the request's AckWait on
// the server no earlier than it was sent, so the server will not hand the request to another relay before
// that time plus AckWait. When no answer has come for a request for almost AckWait (NATS unreachable: a
// network partition, a NATS node cut off from its cluster), the relay stops following the trip on its own,
// before another relay can have it: no trip is followed by two relays across a partition.
//
// The delivery count JetStream gives each delivery of a request is the fencing token of its follower: the
// follower writes it into every update it publishes, and the sink refuses an update once a later delivery has
// published (see UpdateSink.swift). A request redelivered to the relay that follows it (its acks were lost)
// only replaces the message the lease acks; a second request for a trip followed here is acked at once.

internal import CoreMetrics
internal import FleetEngineMessages
internal import JourneySharing
internal import Logging
internal import NATSClient
internal import Primitives
internal import Synchronization

/// One follow request the relay holds (see the file comment). Thread-safe.
final class FollowLease: Sendable {
  /// The trip.
  let name: TripName
  /// The request's sequence in `FOLLOW`.
  let streamSequence: UInt64
  /// JetStream's delivery count of the request when the relay took it: the fencing token.
  let delivery: UInt64

  private struct State {
    var message: JetStream.Message?
    var ended = false
  }

  private let state: Locked<State>
  /// The latest time (monotonic) at which the server is known to have had the request's AckWait restart; an
  /// atomic, as the expiry check reads every lease's several times a second.
  private let confirmedTime: Atomic<UInt64>

  /// The lease of `message`, delivered for the `delivery`th time, taken at `takenAt` (monotonic). A lease
  /// without a message (a test's) is released by whoever keeps it.
  init(name: TripName, message: JetStream.Message?, delivery: UInt64, takenAt: UInt64) {
    self.name = name
    self.streamSequence = message?.metadata?.streamSequence ?? 0
    self.delivery = delivery
    state = Locked(State(message: message))
    confirmedTime = Atomic(takenAt)
  }

  /// The newest delivery of the request (a redelivery to this relay replaces it).
  var message: JetStream.Message? { state.withLock { $0.message } }

  func replace(_ newer: JetStream.Message) { state.withLock { $0.message = newer } }

  func confirmed(at time: UInt64) { confirmedTime.max(time, ordering: .relaxed) }

  var confirmedAt: UInt64 { confirmedTime.load(ordering: .relaxed) }

  /// Marks the lease ended; false when it already was (each lease ends once).
  func end() -> Bool {
    state.withLock { state in
      defer { state.ended = true }
      return !state.ended
    }
  }
}

/// How a lease ends.
enum LeaseRelease: Sendable {
  /// Done: the request leaves the work queue (the trip's final state is stored).
  case ack
  /// Handed back: another relay (or this one) takes it after `delay` (at once when nil).
  case nak(delay: Duration?)
  /// Never to be followed: the request leaves the queue.
  case term
  /// Let go without a word: another relay holds it now, or the lease was lost.
  case abandon
}

/// Who ends leases: the work queue (and a test's stand-in).
protocol LeaseKeeper: Sendable {
  /// Leases held now.
  var heldCount: Int { get }
  /// Ends `lease` as `how` says, once.
  func release(_ lease: FollowLease, _ how: LeaseRelease) async
}

/// The relay's follow requests (see the file comment).
final class FollowWorkQueue: LeaseKeeper {
  private struct State {
    var leases: [String: FollowLease] = [:]
    var stopping = false
  }

  private let jetStream: JetStream
  private let configuration: RelayConfiguration
  private let metrics: RelayMetrics
  private let logger: Logger
  private let state = Locked(State())
  private let ready: @Sendable () -> Bool
  private let onAcquired: @Sendable (FollowLease) -> Void
  private let onLost: @Sendable (FollowLease) -> Void
  private let onRejected: @Sendable () -> Void

  /// A queue that takes requests while `ready()` says NATS and the streams are there; `onAcquired` is told of
  /// each new lease (follow it), `onLost` of each lease that could not be confirmed in time (stop following;
  /// the lease is already abandoned), `onRejected` of each malformed request terminated.
  init(
    jetStream: JetStream, configuration: RelayConfiguration, metrics: RelayMetrics, logger: Logger,
    ready: @escaping @Sendable () -> Bool, onAcquired: @escaping @Sendable (FollowLease) -> Void,
    onLost: @escaping @Sendable (FollowLease) -> Void, onRejected: @escaping @Sendable () -> Void
  ) {
    self.jetStream = jetStream
    self.configuration = configuration
    self.metrics = metrics
    self.logger = logger
    self.ready = ready
    self.onAcquired = onAcquired
    self.onLost = onLost
    self.onRejected = onRejected
  }

  /// Leases held now.
  var heldCount: Int { state.withLock { $0.leases.count } }

  /// The lease of `trip`, if held.
  func lease(of trip: String) -> FollowLease? { state.withLock { $0.leases[trip] } }

  /// Takes requests and keeps leases until ``stop()``.
  func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.fetchLoop() }
      group.addTask { await self.heartbeatLoop() }
      group.addTask { await self.expiryLoop() }
    }
  }

  /// Stops taking requests; leases stay until released.
  func stop() { state.withLock { $0.stopping = true } }

  private var stopping: Bool { state.withLock { $0.stopping } }

  /// Ends `lease` as `how` says, once; an ack waits for the server's confirmation (retried a few times).
  func release(_ lease: FollowLease, _ how: LeaseRelease) async {
    guard lease.end() else { return }
    state.withLock { state in
      if state.leases[lease.name.description] === lease { state.leases[lease.name.description] = nil }
    }
    metrics.tripsHeld.record(heldCount)
    guard let message = lease.message else { return }
    switch how {
    case .ack:
      metrics.acked.increment()
      for attempt in 1...10 {
        do throws(NATSError) {
          try await message.ackSync(timeout: .seconds(5))
          return
        } catch {
          // libnats refuses a second ack of a message it saw acked; the first one counts.
          if error.code == .illegalState { return }
          logger.debug("ack failed; retrying", metadata: ["trip": "\(lease.name)", "attempt": "\(attempt)"])
          try? await Task.sleep(for: .milliseconds(250 * attempt))
        }
      }
      logger.warning("could not ack a follow request; it will be redelivered", metadata: ["trip": "\(lease.name)"])
    case .nak(let delay):
      metrics.nakd.increment()
      try? await message.nak(delay: delay)
    case .term:
      metrics.termed.increment()
      try? await message.term()
    case .abandon:
      break
    }
  }

  // MARK: - Taking requests

  private func fetchLoop() async {
    var subscription: JetStream.PullSubscription?
    var failures = 0
    let backoff = RetryBackoff(initial: .milliseconds(250), maximum: .seconds(5))
    var generator = SystemRandomNumberGenerator()
    while !stopping && !Task.isCancelled {
      guard ready() else {
        subscription = nil
        try? await Task.sleep(for: .milliseconds(200))
        continue
      }
      let free = configuration.maxTrips - heldCount
      guard free > 0 else {
        try? await Task.sleep(for: .milliseconds(200))
        continue
      }
      do throws(NATSError) {
        if subscription == nil {
          subscription = try await jetStream.pullSubscription(
            stream: configuration.names.followStream, consumer: configuration.names.followConsumer)
        }
        let fetchedAt = monotonicNanoseconds()
        let messages = try await subscription!.fetch(
          batch: min(free, configuration.fetchBatch), timeout: .seconds(1))
        failures = 0
        for message in messages { accept(message, at: fetchedAt) }
      } catch {
        failures += 1
        if !error.isRetryable { subscription = nil }
        if !stopping, failures == 1 || failures % 20 == 0 {
          logger.debug("taking follow requests failed; retrying", metadata: ["error": "\(error)"])
        }
        try? await Task.sleep(for: backoff.delay(retry: failures, using: &generator))
      }
    }
  }

  private func accept(_ message: JetStream.Message, at fetchedAt: UInt64) {
    let text = String(decoding: message.data, as: UTF8.self)
    guard let name = TripName(parsing: text), name.providerID == configuration.names.providerID,
      message.subject == configuration.names.followSubject(name)
    else {
      logger.debug("a follow request that is not a trip name of the provider was terminated")
      metrics.termed.increment()
      onRejected()
      Task { try? await message.term() }
      return
    }
    let key = name.description
    let delivery = message.metadata?.numDelivered ?? 1
    enum Decision { case start(FollowLease), redelivered, duplicate, stopping }
    let decision = state.withLock { state -> Decision in
      if state.stopping { return .stopping }
      if let existing = state.leases[key] {
        if existing.streamSequence == message.metadata?.streamSequence {
          existing.replace(message)
          existing.confirmed(at: fetchedAt)
          return .redelivered
        }
        return .duplicate
      }
      let lease = FollowLease(name: name, message: message, delivery: delivery, takenAt: fetchedAt)
      state.leases[key] = lease
      return .start(lease)
    }
    switch decision {
    case .stopping:
      Task { try? await message.nak() }
    case .redelivered:
      logger.debug("follow request redelivered to the relay that follows it", metadata: ["trip": "\(key)"])
    case .duplicate:
      // A second request for a trip followed here: one follow serves both.
      Task { try? await message.ack() }
    case .start(let lease):
      metrics.taken.increment()
      if delivery > 1 { metrics.takeovers.increment() }
      metrics.tripsHeld.record(heldCount)
      onAcquired(lease)
    }
  }

  // MARK: - Keeping leases

  /// Every `inProgressInterval`: an in-progress ack for every lease, each confirmation moving its lease on.
  private func heartbeatLoop() async {
    let interval = configuration.inProgressInterval
    var confirmer: InProgressConfirmer?
    while !Task.isCancelled {
      try? await Task.sleep(for: interval)
      let leases = state.withLock { Array($0.leases.values) }
      if leases.isEmpty {
        if stopping { return }
        continue
      }
      if confirmer == nil { confirmer = try? await InProgressConfirmer(jetStream) }
      guard let confirmer else { continue }
      let sentAt = monotonicNanoseconds()
      let held = leases.compactMap { lease in lease.message.map { (lease, $0) } }
      let timeout = min(interval, .seconds(2))
      // A consumer leader cut off from its quorum answers in-progress acks until it notices (seconds), while
      // the majority's new leader hands the requests to another relay. So a round counts only if the relay
      // can also store a message now, which takes a quorum of the state stream's replicas: a heartbeat.
      async let quorum = storeHeartbeat(timeout: timeout)
      let confirmed = await confirmer.confirm(held.map(\.1), timeout: timeout)
      guard await quorum else {
        metrics.heartbeatFailures.increment()
        continue
      }
      for ((lease, _), ok) in zip(held, confirmed) where ok { lease.confirmed(at: sentAt) }
      if stopping && heldCount == 0 { return }
    }
  }

  /// Stores this relay's heartbeat in the state stream; true once stored (by a quorum of its replicas).
  private func storeHeartbeat(timeout: Duration) async -> Bool {
    let message = JetStream.OutboundMessage(
      subject: configuration.names.heartbeatSubject(relayID: configuration.relayID),
      data: Array(String(unixTime()).utf8), headers: [RelayNaming.relayHeader: configuration.relayID])
    do throws(NATSError) {
      _ = try await jetStream.publish(message, timeout: timeout)
      return true
    } catch {
      logger.debug("storing the relay's heartbeat failed", metadata: ["error": "\(error)"])
      return false
    }
  }

  /// How long before AckWait runs out an unconfirmed lease is given up: some slack for clocks and the
  /// time the stop takes.
  var leaseMargin: Duration { min(configuration.ackWait / 10, .milliseconds(500)) }

  /// Every 100 ms: leases not confirmed for AckWait less the margin are lost.
  private func expiryLoop() async {
    let limit = (configuration.ackWait - leaseMargin).nonNegativeNanoseconds
    while !Task.isCancelled {
      try? await Task.sleep(for: .milliseconds(100))
      let now = monotonicNanoseconds()
      let expired = state.withLock { state -> [FollowLease] in
        let lost = state.leases.values.filter { now &- $0.confirmedAt >= limit }
        for lease in lost { state.leases[lease.name.description] = nil }
        return lost
      }
      for lease in expired where lease.end() {
        metrics.lost.increment()
        logger.warning(
          "could not confirm holding a follow request for almost AckWait: stopped following the trip",
          metadata: ["trip": "\(lease.name)"])
        onLost(lease)
      }
      if !expired.isEmpty { metrics.tripsHeld.record(heldCount) }
      if stopping && heldCount == 0 { return }
    }
  }
}
