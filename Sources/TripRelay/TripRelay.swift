// Sources/TripRelay/TripRelay.swift - follow each trip once per relay cluster; publish to JetStream; serve gRPC
//
// A relay is one process of a relay cluster. The cluster shares two JetStream streams (see RelayNaming.swift):
// follow requests arrive on the work-queue stream `FOLLOW`, and every relay pulls them through one shared
// durable consumer. A relay takes requests only while it follows fewer than `maxTrips` trips; for each one it
// follows the trip upstream through the public consumer API (`TripModel.updates()`, by streaming or by
// polling as the upstream configuration says), publishes every update to `TRIPS`, and keeps the request
// un-acked, sending an in-progress ack every `inProgressInterval` (well inside AckWait). Once the trip's
// final state is stored it acks the request, which removes it from the work queue.
//
// Failover: a relay that dies stops sending in-progress acks; AckWait later the server delivers its
// requests to the other relays. The new relay follows the trip from its current state: its first update is
// the whole trip (`full_trip`), numbered under the request's new delivery count, so its message IDs never
// collide with those of the relay before it. The update with the final state has the message ID
// `{trip}:final` whoever publishes it, so `TRIPS` stores it once (within its duplicate window) even when the
// relay before had published it and died before its ack.
//
// Downstream, the relay serves the streaming GetTrip (RelayDownstream.swift) from `TRIPS`, so every relay
// of the cluster can serve every trip, whichever relay follows it.

package import FleetEngineMessages
internal import GRPCProtocol
internal import HTTP2Transport
internal import JourneySharing
internal import Logging
package import NATSClient
internal import Primitives

/// One relay of a relay cluster (see the file comment): ``start(_:)``, then ``run()`` until ``shutdown()``.
package final class TripRelay: Sendable {
  /// One trip being followed: its task and the follow request it holds.
  private struct Follow {
    let request: HeldRequest
    let streamSequence: UInt64
    let delivery: UInt64
    var task: Task<Void, Never>?
    /// Another relay announced it took the request over (a later delivery): stop without ack or nak.
    var takenOver = false
  }

  private struct State {
    var following: [String: Follow] = [:]
    var statistics = RelayStatistics()
    var stopping = false
  }

  /// How it runs.
  package let configuration: RelayConfiguration
  /// The NATS connection.
  package let connection: NATSConnection
  /// JetStream on ``connection``.
  package let jetStream: JetStream
  private let services: JourneySharingServices
  private let publisher: TripPublisher
  private let downstream: RelayDownstream?
  private let state = Locked(State())
  private let onEvent: (@Sendable (RelayEvent) -> Void)?
  private let takeovers: NATSSubscription
  private var logger: Logger { configuration.logger }

  private init(
    configuration: RelayConfiguration, connection: NATSConnection, jetStream: JetStream,
    services: JourneySharingServices, downstream: RelayDownstream?, takeovers: NATSSubscription,
    onEvent: (@Sendable (RelayEvent) -> Void)?
  ) {
    self.configuration = configuration
    self.takeovers = takeovers
    self.connection = connection
    self.jetStream = jetStream
    self.services = services
    self.publisher = TripPublisher(jetStream: jetStream)
    self.downstream = downstream
    self.onEvent = onEvent
  }

  /// Connects to NATS, makes sure the streams and the shared consumer exist, starts the upstream services
  /// and the downstream gRPC server. `onEvent` hears of every follow that starts and stops (on any thread).
  package static func start(
    _ configuration: RelayConfiguration, onEvent: (@Sendable (RelayEvent) -> Void)? = nil
  ) async throws -> TripRelay {
    var natsConfiguration = NATSConnectionConfiguration(
      servers: configuration.natsServers, name: "relay \(configuration.relayID)")
    natsConfiguration.reconnect = .forever(wait: .milliseconds(500))
    natsConfiguration.pingInterval = .seconds(5)
    let connection = try await NATSConnection.connect(natsConfiguration, logger: configuration.logger)
    do {
      let jetStream = try connection.jetStream()
      try await ensureStreams(jetStream, configuration)
      let takeovers = try await connection.subscribe(subject: takeoverSubject(configuration))
      let services = try JourneySharingServices(configuration: configuration.upstream)
      var downstream: RelayDownstream?
      if let server = configuration.downstream {
        downstream = try RelayDownstream(configuration: configuration, server: server, jetStream: jetStream)
      }
      return TripRelay(
        configuration: configuration, connection: connection, jetStream: jetStream, services: services,
        downstream: downstream, takeovers: takeovers, onEvent: onEvent)
    } catch {
      await connection.close()
      throw error
    }
  }

  /// Creates (or, with `updateExisting`, updates) `TRIPS`, `FOLLOW` and the relays' durable consumer on
  /// `FOLLOW`, as `configuration` describes them; without `updateExisting`, what exists is left as it is (a
  /// submitter does not reconfigure the relays' streams). Retries while JetStream has no leader yet.
  package static func ensureStreams(
    _ jetStream: JetStream, _ configuration: RelayConfiguration, updateExisting: Bool = true
  ) async throws {
    var trips = JetStream.StreamConfiguration(name: configuration.tripsStream, subjects: ["trips.>"])
    trips.description = "Trip updates published by the trip relays (encoded journeysharing.v1.TripUpdate)"
    trips.replicas = configuration.replicas
    trips.duplicateWindow = configuration.duplicateWindow
    trips.maxAge = configuration.tripsMaxAge
    var follow = JetStream.StreamConfiguration(name: configuration.followStream, subjects: ["follow.>"])
    follow.description = "Follow requests for the trip relays (payload: the trip's name)"
    follow.retention = .workQueue
    follow.replicas = configuration.replicas
    follow.duplicateWindow = configuration.duplicateWindow
    var consumer = JetStream.ConsumerConfiguration(
      durableName: configuration.followConsumer,
      filterSubject: "follow.\(RelayNaming.token(configuration.upstream.providerID)).>")
    consumer.description = "The trip relays of provider \(configuration.upstream.providerID)"
    consumer.ackWait = configuration.ackWait
    consumer.maxAckPending = configuration.clusterMaxAckPending
    consumer.replicas = configuration.replicas
    try await retryingTransient(attempts: 30) { () throws(NATSError) in
      if !updateExisting {
        if try await exists({ () throws(NATSError) in _ = try await jetStream.streamInfo(trips.name) }),
          try await exists({ () throws(NATSError) in _ = try await jetStream.streamInfo(follow.name) }),
          try await exists({ () throws(NATSError) in
            _ = try await jetStream.consumerInfo(stream: follow.name, consumer: configuration.followConsumer)
          })
        {
          return
        }
      }
      _ = try await jetStream.createOrUpdateStream(trips)
      _ = try await jetStream.createOrUpdateStream(follow)
      _ = try await jetStream.createOrUpdateConsumer(stream: configuration.followStream, consumer)
    }
  }

  /// Enqueues a follow request for each of `names` on `followStream`. A trip that has a request pending
  /// already (followed now, or waiting) is not enqueued again. Returns how many were enqueued.
  @discardableResult
  package static func submit(
    _ names: [TripName], to jetStream: JetStream, followStream: String = RelayNaming.followStream
  ) async throws(NATSError) -> (submitted: Int, alreadyPending: Int) {
    var submitted = 0
    var pending = 0
    for name in names {
      if try await submit(name, to: jetStream, followStream: followStream) { submitted += 1 } else { pending += 1 }
    }
    return (submitted, pending)
  }

  /// Enqueues one follow request; false when one is pending already (see ``submit(_:to:followStream:)``).
  package static func submit(
    _ name: TripName, to jetStream: JetStream, followStream: String = RelayNaming.followStream
  ) async throws(NATSError) -> Bool {
    var message = JetStream.OutboundMessage(
      subject: RelayNaming.followSubject(name), data: Array(name.description.utf8),
      messageID: RelayNaming.followMessageID(name))
    message.expectedStream = followStream
    // No other request for this trip may be in the work queue: one acked is gone, one pending stays.
    message.expectedLastSubjectSequence = 0
    do throws(NATSError) {
      let ack = try await retryingTransient(attempts: 10) { () throws(NATSError) in
        try await jetStream.publish(message)
      }
      return !ack.isDuplicate
    } catch {
      // 10071: wrong last sequence, a request for this subject is in the queue.
      if error.jetStreamCode == 10071 { return false }
      throw error
    }
  }

  /// The port the downstream gRPC server listens on (nil without one).
  package var downstreamPort: Int? { downstream?.port }

  /// The counters now.
  package func statistics() -> RelayStatistics {
    var statistics = state.withLock { state in
      var statistics = state.statistics
      statistics.following = state.following.count
      return statistics
    }
    statistics.watchers = downstream?.watcherCount ?? 0
    return statistics
  }

  // MARK: - Taking follow requests

  /// The core NATS subject on which relays announce that they took a follow request over.
  static func takeoverSubject(_ configuration: RelayConfiguration) -> String {
    "relay.takeover.\(configuration.followStream).\(configuration.followConsumer)"
  }

  /// Pulls follow requests and follows their trips until ``shutdown()``.
  package func run() async {
    let fencing = Task { await self.listenForTakeovers() }
    defer { fencing.cancel() }
    var subscription: JetStream.PullSubscription?
    while !state.withLock({ $0.stopping }) {
      guard let pull = subscription else {
        do throws(NATSError) {
          subscription = try await jetStream.pullSubscription(
            stream: configuration.followStream, consumer: configuration.followConsumer)
        } catch {
          logger.warning("cannot bind to the follow consumer; retrying", metadata: ["error": "\(error)"])
          try? await Task.sleep(for: .seconds(1))
        }
        continue
      }
      let free = configuration.maxTrips - state.withLock { $0.following.count }
      guard free > 0 else {
        try? await Task.sleep(for: .milliseconds(200))
        continue
      }
      let messages: [JetStream.Message]
      do throws(NATSError) {
        messages = try await pull.fetch(batch: min(free, configuration.fetchBatch), timeout: .seconds(1))
      } catch {
        let stopping = state.withLock { $0.stopping }
        if !error.isTransient && !stopping {
          logger.warning("fetching follow requests failed", metadata: ["error": "\(error)"])
        }
        try? await Task.sleep(for: .milliseconds(250))
        continue
      }
      for message in messages { await accept(message) }
    }
  }

  private func accept(_ message: JetStream.Message) async {
    let text = String(decoding: message.data, as: UTF8.self)
    guard let name = TripName(parsing: text), name.providerID == configuration.upstream.providerID else {
      logger.warning(
        "follow request is not a trip name of provider \(configuration.upstream.providerID); terminated",
        metadata: ["subject": "\(message.subject)"])
      state.withLock { $0.statistics.rejected += 1 }
      try? await message.term()
      return
    }
    let key = name.description
    let delivery = message.metadata?.numDelivered ?? 1
    let streamSequence = message.metadata?.streamSequence ?? 0
    enum Decision { case start(HeldRequest), redelivered, duplicate, stopping }
    // The previous holder may still follow it (its in-progress acks were lost, say in a consumer leader
    // change): announce the takeover, so that it stops.
    if delivery > 1 { await announceTakeover(of: key, delivery: delivery) }
    let decision = state.withLock { state -> Decision in
      if state.stopping { return .stopping }
      if let existing = state.following[key] {
        if existing.streamSequence == streamSequence {
          existing.request.replace(message)
          return .redelivered
        }
        return .duplicate
      }
      let request = HeldRequest(message)
      state.following[key] = Follow(request: request, streamSequence: streamSequence, delivery: delivery)
      state.statistics.followsStarted += 1
      if delivery > 1 { state.statistics.takeovers += 1 }
      return .start(request)
    }
    switch decision {
    case .stopping:
      try? await message.nak()
    case .redelivered:
      // Our in-progress acks did not arrive in time (a NATS node restarting); we still follow it.
      logger.info("follow request redelivered to the relay that follows it", metadata: ["trip": "\(key)"])
    case .duplicate:
      // A second request for a trip followed here: one follow serves both.
      try? await message.ack()
    case .start(let request):
      let task = Task { await self.follow(name, request: request, delivery: delivery) }
      state.withLock { state in state.following[key]?.task = task }
    }
  }

  // MARK: - Following one trip

  private func follow(_ name: TripName, request: HeldRequest, delivery: UInt64) async {
    let key = name.description
    logger.info("follow start", metadata: ["trip": "\(key)", "delivery": "\(delivery)"])
    onEvent?(.followStarted(trip: key, delivery: delivery, at: unixTime()))
    let interval = configuration.inProgressInterval
    let heartbeat = Task {
      while !Task.isCancelled {
        try? await Task.sleep(for: interval)
        if Task.isCancelled { break }
        try? await request.current.inProgress()
      }
    }
    var reason = RelayEvent.StopReason.shutdown
    var last: Trip?
    var sequence: UInt64 = 0
    let subject = RelayNaming.tripSubject(name)
    let model = services.tripService.tripModel(forTripName: key)
    updates: for await update in model.updates() {
      if Task.isCancelled { break }
      guard let snapshot = update.snapshot else {
        if let error = update.error, error.code == .notFound || error.code == .invalidArgument {
          logger.warning(
            "upstream refuses the trip; request terminated", metadata: ["trip": "\(key)", "error": "\(error)"])
          reason = .rejected
          break updates
        }
        continue
      }
      let trip = snapshot.trip
      let isFinal = snapshot.isFinal
      var message = TripUpdate()
      if let last {
        let changed = trip.changedFields(from: last)
        if changed.isEmpty && !isFinal { continue }
        message.trip = trip.projected(onto: changed)
        message.updatedFields = changed
      } else {
        message.trip = trip
        message.fullTrip = true
      }
      sequence += 1
      message.sequence = sequence
      message.sendTime = Timestamp(unixTime: unixTime())
      var headers = NATSHeaders()
      headers[RelayNaming.tripNameHeader] = key
      headers[RelayNaming.sequenceHeader] = "\(sequence)"
      headers[RelayNaming.deliveryHeader] = "\(delivery)"
      headers[RelayNaming.relayHeader] = configuration.relayID
      if message.fullTrip { headers[RelayNaming.fullTripHeader] = "true" }
      if isFinal { headers[RelayNaming.finalHeader] = "true" }
      let outbound = JetStream.OutboundMessage(
        subject: subject, data: message.serializedBytes(), headers: headers,
        messageID: isFinal
          ? RelayNaming.finalMessageID(name)
          : RelayNaming.updateMessageID(name, delivery: delivery, sequence: sequence))
      guard await publishUntilStored(outbound, trip: key) else { break }
      last = trip
      if isFinal {
        reason = .final
        break
      }
    }
    heartbeat.cancel()
    if reason == .shutdown && state.withLock({ $0.following[key]?.takenOver == true }) { reason = .takenOver }
    switch reason {
    case .takenOver:
      // The request is another relay's now: neither ack nor nak it.
      break
    case .final:
      await acknowledge(request, trip: key)
    case .rejected:
      try? await request.current.term()
    case .shutdown:
      // Hand the request back at once rather than after AckWait: another relay resumes the trip.
      try? await request.current.nak()
    }
    state.withLock { state in
      state.following[key] = nil
      if reason == .final { state.statistics.finished += 1 }
      if reason == .rejected { state.statistics.rejected += 1 }
      if reason == .takenOver { state.statistics.handedOver += 1 }
    }
    logger.info("follow stop", metadata: ["trip": "\(key)", "reason": "\(reason.rawValue)"])
    onEvent?(.followStopped(trip: key, reason: reason, at: unixTime()))
  }

  /// Publishes until the stream stores it or reports it a duplicate; false when the task was cancelled first.
  private func publishUntilStored(_ message: JetStream.OutboundMessage, trip: String) async -> Bool {
    var delay = Duration.milliseconds(100)
    while !Task.isCancelled {
      switch await publisher.publish(message) {
      case .success(let ack):
        state.withLock { state in
          if ack.isDuplicate { state.statistics.duplicates += 1 } else { state.statistics.published += 1 }
        }
        return true
      case .failure(let error):
        state.withLock { $0.statistics.publishRetries += 1 }
        logger.debug("publish failed; retrying", metadata: ["trip": "\(trip)", "error": "\(error)"])
        try? await Task.sleep(for: delay)
        delay = min(delay * 2, .seconds(2))
      }
    }
    return false
  }

  /// Acks the request and waits for the server to confirm it, retrying a few times across a NATS failover.
  private func acknowledge(_ request: HeldRequest, trip: String) async {
    for attempt in 1...10 {
      do throws(NATSError) {
        try await request.current.ackSync(timeout: .seconds(5))
        return
      } catch {
        // libnats refuses a second ack of a message it saw acked; the first one counts.
        if error.code == .illegalState { return }
        logger.debug(
          "ack failed; retrying", metadata: ["trip": "\(trip)", "attempt": "\(attempt)", "error": "\(error)"])
        try? await Task.sleep(for: .milliseconds(250 * attempt))
      }
    }
    logger.warning("could not ack the follow request; it will be redelivered", metadata: ["trip": "\(trip)"])
  }

  // MARK: - Fencing

  private func announceTakeover(of trip: String, delivery: UInt64) async {
    var headers = NATSHeaders()
    headers[RelayNaming.relayHeader] = configuration.relayID
    headers[RelayNaming.deliveryHeader] = "\(delivery)"
    do throws(NATSError) {
      try await connection.publish(
        subject: Self.takeoverSubject(configuration), data: Array(trip.utf8), headers: headers)
    } catch {
      logger.debug("cannot announce a takeover", metadata: ["trip": "\(trip)", "error": "\(error)"])
    }
  }

  /// Stops following every trip another relay announces it took over with a later delivery of its request.
  private func listenForTakeovers() async {
    while !Task.isCancelled && !state.withLock({ $0.stopping }) {
      let message: NATSMessage?
      do throws(NATSError) {
        message = try await takeovers.next(timeout: .seconds(1))
      } catch {
        try? await Task.sleep(for: .milliseconds(250))
        continue
      }
      guard let message, message.headers[RelayNaming.relayHeader] != configuration.relayID,
        let delivery = message.headers[RelayNaming.deliveryHeader].flatMap({ UInt64($0) })
      else { continue }
      let trip = String(decoding: message.data, as: UTF8.self)
      let task = state.withLock { state -> Task<Void, Never>? in
        guard var follow = state.following[trip], follow.delivery < delivery, !follow.takenOver else { return nil }
        follow.takenOver = true
        state.following[trip] = follow
        return follow.task
      }
      if let task {
        logger.info("another relay took the trip over; stopping", metadata: ["trip": "\(trip)"])
        task.cancel()
      }
    }
  }

  // MARK: - Stopping

  /// Stops taking requests, stops following (handing each request back), closes the downstream server,
  /// the upstream services and the NATS connection.
  package func shutdown() async {
    let tasks = state.withLock { state -> [Task<Void, Never>] in
      state.stopping = true
      return state.following.values.compactMap(\.task)
    }
    for task in tasks { task.cancel() }
    for task in tasks { await task.value }
    await downstream?.shutdown()
    await services.shutdown()
    try? await connection.drain(timeout: .seconds(5))
    await connection.close()
  }
}

/// The follow request a followed trip holds: the newest delivery of it (a redelivery to the same relay
/// replaces it, so acks go with the delivery the server counts).
final class HeldRequest: Sendable {
  private let message: Locked<JetStream.Message>

  init(_ message: JetStream.Message) { self.message = Locked(message) }

  var current: JetStream.Message { message.withLock { $0 } }

  func replace(_ newer: JetStream.Message) { message.withLock { $0 = newer } }
}

/// Whether `lookup` finds what it looks up (false for NOT_FOUND; other errors are thrown).
private func exists(_ lookup: () async throws(NATSError) -> Void) async throws(NATSError) -> Bool {
  do throws(NATSError) {
    try await lookup()
    return true
  } catch {
    if error.code == .notFound || error.jetStreamCode == 10059 || error.jetStreamCode == 10014 { return false }
    throw error
  }
}

/// Runs `body`, retrying transient NATS failures (no leader yet, a reconnect) up to `attempts` times.
func retryingTransient<Value>(
  attempts: Int, _ body: () async throws(NATSError) -> Value
) async throws(NATSError) -> Value {
  var attempt = 1
  while true {
    do throws(NATSError) {
      return try await body()
    } catch {
      guard error.isTransient || error.jetStreamCode == 10008, attempt < attempts else { throw error }
      attempt += 1
      try? await Task.sleep(for: .milliseconds(500))
    }
  }
}
