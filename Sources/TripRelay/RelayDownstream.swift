// Sources/TripRelay/RelayDownstream.swift - the relay's gRPC side: the streaming GetTrip, served from TRIPS
//
// The relay serves `journeysharing.v1.TripStreamService/GetTrip`, the contract FleetSim serves: the whole
// trip first (`full_trip`), then the changed fields, until the trip ends (then OK) or the client cancels.
//
// What it serves comes from JetStream, not from the relay's own following, so any relay of the cluster serves
// any trip, whichever relay follows it upstream. A trip has one hub per relay while anyone watches it there;
// however many clients watch it, it is followed upstream once (by whichever relay holds its follow request).
//
// Reading `TRIPS` costs the same however many trips are watched:
// - **One live feed per relay.** While the relay has hubs, one task reads every new message of `TRIPS`
//   through one ephemeral pull consumer (no acks), in batches, and hands each batch to the server's event
//   loop, where each message goes to its trip's hub (or nowhere). A consumer that is lost (a NATS node
//   restart) is made again from the next stream sequence. The feed stops when the relay has had no hub for
//   `feedLinger`.
// - **One short catch-up per new hub.** A new hub reads its trip's history once, through an ephemeral
//   consumer filtered to the trip's subject, from the first message to the last one stored when the consumer
//   was made; then deletes it. It starts only once the feed reads, so every later message reaches the hub
//   through the feed: those that arrive while it catches up wait in the hub, and stream sequences drop what
//   both brought. A late joiner gets the trip as folded so far (one full trip), then the updates. At most
//   `maxCatchUps` catch-ups run at once; the rest wait their turn. When the history has no final state and
//   `submitOnWatch` is set, the hub enqueues a follow request for the trip.
//
// The first version gave every hub a consumer of its own and a task that fetched from it forever: with
// 10,000 watched trips, 10,000 fetches (each waiting up to a second on one of libnats' blocking threads) took
// every thread, and neither the clients' updates nor the relay's own publishing got through.
//
// Threading: the service, its hubs and the feed's bookkeeping live on the server's event loop
// (GRPCService's contract); the feed and the catch-ups are tasks that hand what they read to the loop with
// `execute`.

internal import FleetEngineMessages
internal import GRPCProtocol
internal import HTTP2Transport
internal import Logging
internal import NATSClient
internal import Primitives

/// The downstream gRPC server and its service.
final class RelayDownstream: Sendable {
  let server: GRPCServer
  let service: RelayWatchService
  let port: Int

  init(configuration: RelayConfiguration, server: GRPCServerConfiguration, jetStream: JetStream) throws {
    service = RelayWatchService(configuration: configuration, jetStream: jetStream)
    self.server = try GRPCServer(configuration: server, service: service, logger: configuration.logger)
    port = try self.server.start()
  }

  var watcherCount: Int { service.watchers.withLock { $0 } }

  func shutdown() async {
    await server.shutdown(graceful: true)
    service.server(stopped: server)
  }
}

/// A message of `TRIPS` as the downstream uses it.
struct TripsMessage: Sendable {
  let subject: String
  let sequence: UInt64
  let data: [UInt8]
  /// The message says it carries the final state (the `Trip-Final` header).
  let finalHeader: Bool

  init?(_ message: JetStream.Message) {
    guard let metadata = message.metadata else { return nil }
    subject = message.subject
    sequence = metadata.streamSequence
    data = message.data
    finalHeader = message.headers[RelayNaming.finalHeader] == "true"
  }
}

/// Serves the streaming GetTrip from `TRIPS`. `@unchecked Sendable`: everything but `watchers` is touched
/// only on the server's event loop, where every ``handle(_:)`` runs.
final class RelayWatchService: GRPCService, @unchecked Sendable {
  /// How many hubs read their history at once.
  static let maxCatchUps = 32
  /// How long the feed keeps reading after the last hub ended.
  static let feedLinger: Duration = .seconds(30)

  let configuration: RelayConfiguration
  let jetStream: JetStream
  /// Watchers open now, over every hub (read from any thread).
  let watchers = Locked(0)
  /// The hubs by their trip's subject.
  private var hubs: [String: TripHub] = [:]
  /// The server's event loop (known from the first call).
  private var scheduler: (any GRPCScheduler)?
  private var feed: TripsFeed?
  private var feedReading = false
  private var feedGenerations: UInt64 = 0
  private var lingerTimer: GRPCTimerID?
  /// Hubs waiting for the feed to read before they catch up.
  private var waitingForFeed: [TripHub] = []
  /// Hubs waiting for a catch-up slot, and the catch-ups running.
  private var catchUpQueue: [TripHub] = []
  private var catchUpQueueHead = 0
  private var catchUpsRunning = 0
  private var stopped = false

  init(configuration: RelayConfiguration, jetStream: JetStream) {
    self.configuration = configuration
    self.jetStream = jetStream
  }

  func handle(_ call: any GRPCServerCallContext) {
    guard call.path == FleetEngineMethods.streamingGetTrip else {
      call.finish(GRPCStatus(code: .unimplemented, message: "method \(call.path) is not implemented"))
      return
    }
    let request: StreamTripRequest
    do {
      request = try StreamTripRequest(serializedBytes: call.request)
    } catch {
      call.finish(GRPCStatus(code: .invalidArgument, message: "malformed StreamTripRequest: \(error)"))
      return
    }
    guard let name = TripName(parsing: request.name) else {
      call.finish(
        GRPCStatus(
          code: .invalidArgument,
          message: "trip name must be in the format providers/{provider_id}/trips/{trip_id}"))
      return
    }
    guard !stopped else {
      call.finish(GRPCStatus(code: .unavailable, message: "the relay is stopping"))
      return
    }
    scheduler = scheduler ?? call.scheduler
    let subject = RelayNaming.tripSubject(name)
    let hub: TripHub
    if let existing = hubs[subject] {
      hub = existing
    } else {
      hub = TripHub(name: name, subject: subject, service: self, scheduler: call.scheduler)
      hubs[subject] = hub
      startFeedIfNeeded()
      if feedReading { queueCatchUp(hub) } else { waitingForFeed.append(hub) }
    }
    hub.add(call)
  }

  /// Loop only: `hub` has no watcher left, or its trip ended.
  func remove(_ hub: TripHub) {
    if hubs[hub.subject] === hub { hubs[hub.subject] = nil }
    hub.close()
    if hubs.isEmpty { scheduleFeedStop() }
  }

  /// After the server stopped: stop the feed and every hub's catch-up.
  func server(stopped server: GRPCServer) {
    server.execute { [self] in
      stopped = true
      for hub in hubs.values { hub.close() }
      hubs.removeAll()
      waitingForFeed.removeAll()
      catchUpQueue.removeAll()
      catchUpQueueHead = 0
      stopFeed()
    }
  }

  // MARK: - The feed

  private func startFeedIfNeeded() {
    if let lingerTimer, let scheduler {
      scheduler.cancelTimer(lingerTimer)
      self.lingerTimer = nil
    }
    guard feed == nil, let scheduler else { return }
    feedGenerations += 1
    feed = TripsFeed(generation: feedGenerations, service: self, scheduler: scheduler)
  }

  private func scheduleFeedStop() {
    guard lingerTimer == nil, let scheduler, feed != nil else { return }
    lingerTimer = scheduler.scheduleTimer(after: Self.feedLinger) { [self] in
      lingerTimer = nil
      if hubs.isEmpty { stopFeed() }
    }
  }

  private func stopFeed() {
    feed?.stop()
    feed = nil
    feedReading = false
  }

  /// Loop only: `feed` reads from a known stream sequence on: the hubs that waited start catching up.
  func feedReads(generation: UInt64) {
    guard generation == feed?.generation, !feedReading else { return }
    feedReading = true
    let waiting = waitingForFeed
    waitingForFeed.removeAll()
    for hub in waiting where hubs[hub.subject] === hub { queueCatchUp(hub) }
  }

  /// Loop only: messages the feed read, in stream order.
  func deliver(_ messages: [TripsMessage], generation: UInt64) {
    guard generation == feed?.generation else { return }
    for message in messages {
      hubs[message.subject]?.receiveLive(message)
    }
  }

  // MARK: - Catch-ups

  private func queueCatchUp(_ hub: TripHub) {
    catchUpQueue.append(hub)
    startCatchUps()
  }

  private func startCatchUps() {
    while catchUpsRunning < Self.maxCatchUps && catchUpQueueHead < catchUpQueue.count {
      let hub = catchUpQueue[catchUpQueueHead]
      catchUpQueueHead += 1
      guard hubs[hub.subject] === hub else { continue }  // gone while it waited
      catchUpsRunning += 1
      hub.startCatchUp()
    }
    if catchUpQueueHead == catchUpQueue.count {
      catchUpQueue.removeAll(keepingCapacity: true)
      catchUpQueueHead = 0
    }
  }

  /// Loop only: a hub's catch-up ended (read, failed for good, or cancelled): the next one may start.
  func catchUpEnded() {
    catchUpsRunning -= 1
    startCatchUps()
  }
}

/// The relay's one reader of every new message of `TRIPS` (see the file comment). Its state lives in its task;
/// the service tells its feeds apart by `generation`.
final class TripsFeed: Sendable {
  let generation: UInt64
  private let task: Task<Void, Never>

  init(generation: UInt64, service: RelayWatchService, scheduler: any GRPCScheduler) {
    self.generation = generation
    let jetStream = service.jetStream
    let configuration = service.configuration
    task = Task {
      await Self.read(jetStream: jetStream, configuration: configuration) { event in
        scheduler.execute {
          switch event {
          case .reading: service.feedReads(generation: generation)
          case .messages(let messages): service.deliver(messages, generation: generation)
          }
        }
      }
    }
  }

  func stop() { task.cancel() }

  enum Event: Sendable {
    case reading
    case messages([TripsMessage])
  }

  private static func read(
    jetStream: JetStream, configuration: RelayConfiguration, _ emit: @escaping @Sendable (Event) -> Void
  ) async {
    let logger = configuration.logger
    let stream = configuration.tripsStream
    // The last stream sequence read (or, before the first message, the stream's last when the feed started).
    var lastSequence: UInt64?
    var pull: JetStream.PullSubscription?
    var consumerName: String?
    var emptyFetches = 0
    var announced = false
    while !Task.isCancelled {
      guard let reading = pull else {
        do throws(NATSError) {
          let start: UInt64
          if let lastSequence {
            start = lastSequence
          } else {
            start = try await jetStream.streamInfo(stream).state.lastSequence
            lastSequence = start
          }
          if let made = consumerName {
            try? await jetStream.deleteConsumer(stream: stream, consumer: made)
            consumerName = nil
          }
          var consumer = JetStream.ConsumerConfiguration(durableName: nil, filterSubject: nil, ackPolicy: .none)
          consumer.deliverPolicy = .startSequence(start + 1)
          consumer.inactiveThreshold = .seconds(30)
          consumer.readOnly()
          let info = try await jetStream.createOrUpdateConsumer(stream: stream, consumer)
          consumerName = info.name
          pull = try await jetStream.pullSubscription(stream: stream, consumer: info.name, memoryStorage: true)
          if !announced {
            announced = true
            emit(.reading)
          }
        } catch {
          logger.debug("cannot read \(stream) yet", metadata: ["error": "\(error)"])
          try? await Task.sleep(for: .seconds(1))
        }
        continue
      }
      let messages: [JetStream.Message]
      do throws(NATSError) {
        messages = try await reading.fetch(batch: 1024, timeout: .seconds(1))
      } catch {
        logger.debug("reading \(stream) failed", metadata: ["error": "\(error)"])
        if !error.isTransient { pull = nil }
        try? await Task.sleep(for: .milliseconds(250))
        continue
      }
      if messages.isEmpty {
        // Idle, or the consumer is gone (its server restarted): check now and then.
        emptyFetches += 1
        if emptyFetches % 10 == 0, let consumerName {
          do throws(NATSError) {
            _ = try await jetStream.consumerInfo(stream: stream, consumer: consumerName)
          } catch {
            if error.code == .notFound || error.jetStreamCode == 10014 { pull = nil }
          }
        }
        continue
      }
      emptyFetches = 0
      var batch: [TripsMessage] = []
      batch.reserveCapacity(messages.count)
      for message in messages {
        guard let read = TripsMessage(message), read.sequence > (lastSequence ?? 0) else { continue }
        lastSequence = read.sequence
        batch.append(read)
      }
      if !batch.isEmpty { emit(.messages(batch)) }
    }
    if let consumerName {
      try? await jetStream.deleteConsumer(stream: stream, consumer: consumerName)
    }
  }
}

/// One trip's watchers on one relay, and the trip folded from `TRIPS`. `@unchecked Sendable`: its state is
/// touched only on the server's event loop; its catch-up task only calls ``GRPCScheduler/execute(_:)``.
final class TripHub: @unchecked Sendable {
  private final class Watcher {
    let call: any GRPCServerCallContext
    var sequence: UInt64 = 0
    init(call: any GRPCServerCallContext) { self.call = call }
  }

  let name: TripName
  let subject: String
  private unowned let service: RelayWatchService
  private let scheduler: any GRPCScheduler
  private var trip: Trip?
  /// The last stream sequence folded into `trip`.
  private var lastSequence: UInt64 = 0
  /// Updates were folded into `trip` without being sent (catching up).
  private var foldedUnsent = false
  /// Reading the history: live messages wait in `pendingLive`.
  private var catchingUp = true
  private var pendingLive: [TripsMessage] = []
  private var ended = false
  private var closed = false
  private var watchers: [ObjectIdentifier: Watcher] = [:]
  private var catchUp: Task<Void, Never>?

  init(name: TripName, subject: String, service: RelayWatchService, scheduler: any GRPCScheduler) {
    self.name = name
    self.subject = subject
    self.service = service
    self.scheduler = scheduler
  }

  func add(_ call: any GRPCServerCallContext) {
    let watcher = Watcher(call: call)
    let key = ObjectIdentifier(call as AnyObject)
    watchers[key] = watcher
    service.watchers.withLock { $0 += 1 }
    call.onCancel { [weak self] in
      guard let self, self.watchers.removeValue(forKey: key) != nil else { return }
      self.service.watchers.withLock { $0 -= 1 }
      if self.watchers.isEmpty && !self.ended { self.service.remove(self) }
    }
    if let trip, !foldedUnsent { sendFull(trip, to: watcher) }
  }

  /// Loop only: stops the catch-up (the hub is no longer the service's).
  func close() {
    closed = true
    catchUp?.cancel()
    catchUp = nil
  }

  private func sendFull(_ trip: Trip, to watcher: Watcher) {
    sendFull(trip, to: CollectionOfOne(watcher))
  }

  private func sendFull(_ trip: Trip, to watchers: some Collection<Watcher>) {
    var update = TripUpdate()
    update.trip = trip
    update.fullTrip = true
    send(update, to: watchers)
  }

  /// Sends `update` to each of `watchers` with the watcher's own sequence number and the send time. The update
  /// is encoded once; each message is that encoding followed by the encoding of the sequence and the send time
  /// (fields may come in any order, and a parser merges them: protobuf's encoding rules).
  private func send(_ update: TripUpdate, to watchers: some Collection<Watcher>) {
    guard !watchers.isEmpty else { return }
    let body = update.serializedBytes()
    let sendTime = Timestamp(unixTime: scheduler.unixTime)
    for watcher in watchers {
      watcher.sequence += 1
      watcher.call.send(Self.message(body: body, sequence: watcher.sequence, sendTime: sendTime))
    }
  }

  /// `body`, an encoded `TripUpdate`, followed by the encoding of `sequence` and `sendTime`: decoded, the
  /// update with both set.
  static func message(body: [UInt8], sequence: UInt64, sendTime: Timestamp) -> [UInt8] {
    var tail = TripUpdate()
    tail.sequence = sequence
    tail.sendTime = sendTime
    var message = body
    message.append(contentsOf: tail.serializedBytes())
    return message
  }

  /// Loop only: a message the feed read.
  func receiveLive(_ message: TripsMessage) {
    guard !ended else { return }
    if catchingUp {
      pendingLive.append(message)
    } else {
      fold(message, catchingUp: false)
    }
  }

  /// Loop only: messages of the history.
  private func receiveHistory(_ messages: [TripsMessage]) {
    for message in messages where !ended { fold(message, catchingUp: true) }
  }

  /// Loop only: the history is read (or its reading ended): send what was folded, then the live messages
  /// that waited.
  private func caughtUp() {
    guard catchingUp, !closed else { return }
    catchingUp = false
    if !ended, foldedUnsent, let trip {
      foldedUnsent = false
      sendFull(trip, to: watchers.values)
    }
    let waiting = pendingLive
    pendingLive = []
    for message in waiting where !ended { fold(message, catchingUp: false) }
  }

  private func fold(_ message: TripsMessage, catchingUp: Bool) {
    guard message.sequence > lastSequence else { return }  // brought by both the history and the feed
    lastSequence = message.sequence
    let update: TripUpdate
    do {
      update = try TripUpdate(serializedBytes: message.data)
    } catch {
      service.configuration.logger.warning(
        "undecodable update on \(subject) skipped", metadata: ["error": "\(error)"])
      return
    }
    let isFinal =
      message.finalHeader || update.trip.map { $0.tripStatus == .complete || $0.tripStatus == .canceled } == true
    apply(update, isFinal: isFinal, catchingUp: catchingUp)
  }

  /// Loop only: folds `update` into the trip. While catching up, updates are only folded; the first one
  /// sent after sends the folded trip whole, so a late joiner gets one full trip, not the history.
  private func apply(_ update: TripUpdate, isFinal: Bool, catchingUp: Bool) {
    var folded = trip ?? Trip()
    folded.apply(update)
    trip = folded
    if catchingUp && !isFinal {
      foldedUnsent = true
      return
    }
    let sendWhole = foldedUnsent || update.fullTrip
    foldedUnsent = false
    // A watcher that has nothing yet gets the trip as folded so far; a full update restarts everyone.
    if sendWhole {
      sendFull(folded, to: watchers.values)
    } else {
      var delta = TripUpdate()
      delta.trip = update.trip
      delta.updatedFields = update.updatedFields
      if watchers.values.contains(where: { $0.sequence == 0 }) {
        let fresh = watchers.values.filter { $0.sequence == 0 }
        let others = watchers.values.filter { $0.sequence != 0 }
        sendFull(folded, to: fresh)
        send(delta, to: others)
      } else {
        send(delta, to: watchers.values)
      }
    }
    if isFinal {
      ended = true
      pendingLive = []
      let finished = watchers.values.map(\.call)
      service.watchers.withLock { $0 -= watchers.count }
      watchers.removeAll()
      for call in finished { call.finish(.ok) }
      service.remove(self)
    }
  }

  /// Loop only: reads the trip's history (see the file comment), then enqueues a follow request if it has no
  /// final state and `submitOnWatch` is set. Ends with ``RelayWatchService/catchUpEnded()``.
  func startCatchUp() {
    let service = service
    let scheduler = scheduler
    let subject = subject
    let name = name
    catchUp = Task { [self] in
      let history = await Self.readHistory(
        subject: subject, jetStream: service.jetStream, configuration: service.configuration
      ) { messages in
        scheduler.execute { self.receiveHistory(messages) }
      }
      let cancelled = Task.isCancelled
      if !cancelled, case .read(sawFinal: false) = history, service.configuration.submitOnWatch {
        await Self.submitFollow(name, service.jetStream, service.configuration)
      }
      scheduler.execute {
        if !cancelled {
          if case .failed(let error) = history { self.historyFailed(error) } else { self.caughtUp() }
        }
        self.catchUp = nil
        service.catchUpEnded()
      }
    }
  }

  /// Loop only: the history could not be read: the watchers get UNAVAILABLE (they may watch again) rather
  /// than wait for a trip the hub cannot fold.
  private func historyFailed(_ error: NATSError) {
    guard catchingUp, !closed, !ended else { return }
    ended = true
    pendingLive = []
    let failed = watchers.values.map(\.call)
    service.watchers.withLock { $0 -= watchers.count }
    watchers.removeAll()
    let status = GRPCStatus(
      code: .unavailable,
      message: "the relay cannot read \(name)'s history from \(service.configuration.tripsStream): \(error)")
    for call in failed { call.finish(status) }
    service.remove(self)
  }

  /// How reading a trip's history ended.
  enum HistoryRead: Sendable {
    /// Read to the last message stored when it started; `sawFinal`: one had the final state.
    case read(sawFinal: Bool)
    /// Failed ``RelayConfiguration/historyReadAttempts`` times in a row; the last error.
    case failed(NATSError)
    /// The catch-up was cancelled.
    case cancelled
  }

  /// Reads `subject`'s messages stored when it starts, handing each batch to `emit`. Ends early when
  /// cancelled; gives up after ``RelayConfiguration/historyReadAttempts`` failed attempts in a row.
  private static func readHistory(
    subject: String, jetStream: JetStream, configuration: RelayConfiguration,
    _ emit: @escaping @Sendable ([TripsMessage]) -> Void
  ) async -> HistoryRead {
    let logger = configuration.logger
    let stream = configuration.tripsStream
    var lastSequence: UInt64 = 0
    var sawFinal = false
    var failures = 0
    while !Task.isCancelled {
      var consumerName: String?
      do throws(NATSError) {
        // Through an ephemeral pull consumer (no acks, deleted once read, or by the server when idle for
        // 30 s), made again from the next sequence when it is lost (a NATS node restart). libnats 3.4.1's own
        // ordered consumers re-create themselves on a thread of their own, which can still run when the
        // subscription is destroyed, and that crashed relays.
        var consumer = JetStream.ConsumerConfiguration(durableName: nil, filterSubject: subject, ackPolicy: .none)
        consumer.deliverPolicy = lastSequence == 0 ? .all : .startSequence(lastSequence + 1)
        consumer.inactiveThreshold = .seconds(30)
        consumer.readOnly()
        let info = try await jetStream.createOrUpdateConsumer(stream: stream, consumer)
        consumerName = info.name
        var remaining = info.numPending
        if remaining > 0 {
          let pull = try await jetStream.pullSubscription(stream: stream, consumer: info.name, memoryStorage: true)
          var emptyFetches = 0
          while remaining > 0 && !sawFinal && !Task.isCancelled {
            let messages = try await pull.fetch(batch: Int(min(remaining, 256)), timeout: .seconds(1))
            if messages.isEmpty {
              // The messages counted are stored: a consumer that brings none for a while is gone.
              emptyFetches += 1
              if emptyFetches >= 5 {
                throw NATSError(code: .notFound, message: "the catch-up consumer of \(subject) brings nothing")
              }
              continue
            }
            emptyFetches = 0
            failures = 0
            var batch: [TripsMessage] = []
            for message in messages {
              guard let read = TripsMessage(message), read.sequence > lastSequence else { continue }
              lastSequence = read.sequence
              remaining = min(remaining > 0 ? remaining - 1 : 0, message.metadata?.numPending ?? remaining)
              batch.append(read)
              if read.finalHeader { sawFinal = true }
            }
            if !batch.isEmpty { emit(batch) }
          }
        }
        try? await jetStream.deleteConsumer(stream: stream, consumer: info.name)
        return .read(sawFinal: sawFinal)
      } catch {
        failures += 1
        if let consumerName { try? await jetStream.deleteConsumer(stream: stream, consumer: consumerName) }
        if failures >= max(1, configuration.historyReadAttempts) {
          logger.warning(
            "cannot read the history of \(subject): its watchers get UNAVAILABLE",
            metadata: ["error": "\(error)", "attempts": "\(failures)"])
          return .failed(error)
        }
        logger.debug("cannot read the history of \(subject) yet", metadata: ["error": "\(error)"])
        // 250 ms, doubling to 4 s: with 8 attempts, about 16 s of waits (longer than a NATS node's restart).
        try? await Task.sleep(for: .milliseconds(250 << min(failures - 1, 4)))
      }
    }
    return .cancelled
  }

  private static func submitFollow(
    _ name: TripName, _ jetStream: JetStream, _ configuration: RelayConfiguration
  ) async {
    do throws(NATSError) {
      _ = try await TripRelay.submit(name, to: jetStream, followStream: configuration.followStream)
    } catch {
      configuration.logger.warning(
        "cannot enqueue a follow request for a watched trip", metadata: ["trip": "\(name)", "error": "\(error)"])
    }
  }
}

extension JetStream.ConsumerConfiguration {
  /// The downstream's consumers only read, and are made again when lost: their state is kept in memory on one
  /// server. A file-backed consumer costs nats-server a directory and files to create and delete: 10,000
  /// history reads made it spend about 38 % of its time creating inodes, and JetStream fell behind.
  mutating func readOnly() {
    memoryStorage = true
    replicas = 1
  }
}
