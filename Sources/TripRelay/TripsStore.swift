// Sources/TripRelay/TripsStore.swift - what the downstream reads: new updates, a trip's latest state, its tail
//
// The downstream never folds a trip's whole history. It reads, per trip, at most:
// - the trip's latest state (one message of `TRIPSTATE`: the whole trip as of a `TRIPS` sequence, or a refusal);
// - the updates stored after that sequence (a few: the follower writes a state every few updates);
// - and, for a watcher that resumes from further back, the updates after its `after_sequence`;
// and every new update through one feed per `TRIPS` partition (one reader for all the relay's watched trips).
//
// Every message is decoded here, off the event loop, within the trip decode limits: a message that does not
// decode, or breaks a limit, is skipped and counted, never handed on.
//
// `JetStreamTripsStore` reads JetStream; the tests' in-memory store stands in for it.

internal import CoreMetrics
internal import FleetEngineMessages
internal import GRPCProtocol
internal import JourneySharing
internal import Logging
internal import NATSClient
internal import Primitives
internal import ProtoWire

/// A message of `TRIPS`, decoded and checked.
struct TripsMessage: Sendable {
  /// The trip's ID (from the subject).
  let tripID: String
  /// Its sequence in its stream: the update's `sequence` for watchers.
  let sequence: UInt64
  /// When the stream stored it (Unix nanoseconds; 0 when unknown).
  let storedAtNanoseconds: Int64
  /// The encoded update, as stored.
  let body: [UInt8]
  /// The decoded update (nil for a refusal).
  let update: TripUpdate?
  /// Its trip's status is final (a delta without a status says nothing: the folded trip decides).
  let isFinal: Bool
  /// Upstream refused the trip: the status watchers get.
  let refusal: GRPCStatus?
}

/// A trip's latest state, as `TRIPSTATE` keeps it.
struct StoredTripState: Sendable {
  /// The `TRIPS` sequence of the last update folded into it.
  let sequence: UInt64
  /// The whole trip (nil for a refusal).
  let trip: Trip?
  /// The trip has ended.
  let isFinal: Bool
  /// Upstream refused the trip.
  let refusal: GRPCStatus?
  /// When it was stored (Unix seconds).
  let storedAt: Double
}

/// What a feed reports.
enum FeedEvent: Sendable {
  /// The feed reads every message stored after `sequence`.
  case reading(after: UInt64)
  /// New messages, in stream order.
  case messages([TripsMessage])
}

/// A feed that can be stopped.
protocol TripsFeedHandle: Sendable {
  func stop()
}

/// How a read of a trip's updates ended.
struct UpdatesRead: Sendable {
  /// The last sequence read (the `after` asked for when nothing was).
  var lastSequence: UInt64
  /// More were stored than the limit allowed: not all were read.
  var truncated: Bool
  /// The stream no longer holds everything after the `after` asked for (its first message is later).
  var historyMissing: Bool
}

/// Where the downstream reads (see the file comment). Thread-safe; handlers run on the store's threads.
protocol TripsStore: Sendable {
  /// Starts reading every message stored in partition `partition` from now on.
  func startFeed(partition: Int, _ handler: @escaping @Sendable (FeedEvent) -> Void) -> any TripsFeedHandle
  /// `name`'s latest state, or nil when it has none.
  func latestState(of name: TripName) async throws -> StoredTripState?
  /// `name`'s updates stored after `after` (when the read starts), at most `limit`, in batches to `batch`.
  func updates(
    of name: TripName, after: UInt64, limit: Int, _ batch: @escaping @Sendable ([TripsMessage]) -> Void
  ) async throws -> UpdatesRead
  /// Enqueues a follow request for `name`; false when one is pending already.
  func submitFollow(_ name: TripName) async throws -> Bool
}

/// Decodes what the downstream reads from `TRIPS`, within the trip limits; what it cannot use is skipped,
/// counted (`trips_messages_skipped_total{reason}`) and logged at most once a minute per reason.
struct TripsMessageDecoder: Sendable {
  let names: RelayNames
  let limits: TripLimits
  let metrics: RelayMetrics
  let skipLog: RateLimitedLog

  init(names: RelayNames, limits: TripLimits, metrics: RelayMetrics, logger: Logger) {
    self.names = names
    self.limits = limits
    self.metrics = metrics
    skipLog = RateLimitedLog(logger: logger, interval: .seconds(60))
  }

  /// The message of `message`'s parts, decoded within the limits; nil (counted, logged rate-limited) when it
  /// cannot be used.
  func decode(subject: String, sequence: UInt64, storedAt: Int64, data: [UInt8], headers: NATSHeaders)
    -> TripsMessage?
  {
    guard let tripID = names.tripID(ofSubject: subject) else {
      skip("subject", "a message of TRIPS is on a subject of no trip of this cluster and provider")
      return nil
    }
    if let code = headers[RelayNaming.refusedHeader].flatMap(Int.init) {
      let status = GRPCStatus(
        code: GRPCStatusCode(rawValue: code) ?? .unknown,
        message: headers[RelayNaming.refusalMessageHeader] ?? "refused upstream")
      return TripsMessage(
        tripID: tripID, sequence: sequence, storedAtNanoseconds: storedAt, body: [], update: nil, isFinal: true,
        refusal: status)
    }
    let update: TripUpdate
    do {
      update = try TripUpdate(serializedBytes: data, options: limits.decodingOptions)
    } catch {
      skip("undecodable", "a message of TRIPS does not decode within the limits: skipped")
      return nil
    }
    if update.trip.map({ limits.violation(in: $0) != nil }) == true {
      skip("limits", "a message of TRIPS holds a trip above the limits: skipped")
      return nil
    }
    // Whether the trip ended is the trip's to say (its status), never a header's.
    let final = update.trip?.isFinal == true
    return TripsMessage(
      tripID: tripID, sequence: sequence, storedAtNanoseconds: storedAt, body: data, update: update, isFinal: final,
      refusal: nil)
  }

  func skip(_ reason: String, _ message: Logger.Message) {
    metrics.skipped(reason)
    skipLog.log(message, key: reason)
  }
}

/// The JetStream store: `TRIPS` partitions, `TRIPSTATE`, `FOLLOW`.
final class JetStreamTripsStore: TripsStore {
  private let jetStream: JetStream
  private let names: RelayNames
  private let limits: TripLimits
  private let metrics: RelayMetrics
  private let logger: Logger
  private let decoder: TripsMessageDecoder

  init(jetStream: JetStream, names: RelayNames, limits: TripLimits, metrics: RelayMetrics, logger: Logger) {
    self.jetStream = jetStream
    self.names = names
    self.limits = limits
    self.metrics = metrics
    self.logger = logger
    decoder = TripsMessageDecoder(names: names, limits: limits, metrics: metrics, logger: logger)
  }

  private func decode(_ message: JetStream.Message) -> TripsMessage? {
    guard let metadata = message.metadata else { return nil }
    return decoder.decode(
      subject: message.subject, sequence: metadata.streamSequence, storedAt: metadata.timestampNanoseconds,
      data: message.data, headers: message.headers)
  }

  // MARK: TripsStore

  func startFeed(partition: Int, _ handler: @escaping @Sendable (FeedEvent) -> Void) -> any TripsFeedHandle {
    let stream = names.tripsStream(partition: partition)
    return TaskFeedHandle(task: Task { await self.readFeed(stream: stream, handler) })
  }

  func latestState(of name: TripName) async throws -> StoredTripState? {
    metrics.stateReads.increment()
    guard let stored = try await jetStream.lastMessage(stream: names.stateStream, subject: names.stateSubject(name))
    else { return nil }
    let sequence = stored.headers[RelayNaming.tripsSequenceHeader].flatMap(UInt64.init) ?? 0
    let storedAt = stored.storedAtNanoseconds > 0 ? Double(stored.storedAtNanoseconds) / 1e9 : unixTime()
    if let code = stored.headers[RelayNaming.refusedHeader].flatMap(Int.init) {
      let status = GRPCStatus(
        code: GRPCStatusCode(rawValue: code) ?? .unknown,
        message: stored.headers[RelayNaming.refusalMessageHeader] ?? "refused upstream")
      return StoredTripState(sequence: sequence, trip: nil, isFinal: true, refusal: status, storedAt: storedAt)
    }
    guard let update = try? TripUpdate(serializedBytes: stored.data, options: limits.decodingOptions),
      let trip = update.trip, limits.violation(in: trip) == nil
    else {
      decoder.skip("state", "a state of TRIPSTATE does not decode within the limits: read the history instead")
      return nil
    }
    return StoredTripState(sequence: sequence, trip: trip, isFinal: trip.isFinal, refusal: nil, storedAt: storedAt)
  }

  func updates(
    of name: TripName, after: UInt64, limit: Int, _ batch: @escaping @Sendable ([TripsMessage]) -> Void
  ) async throws -> UpdatesRead {
    metrics.tailReads.increment()
    let stream = names.tripsStream(for: name)
    let subject = names.storedTripSubject(name)
    var lastSequence = after
    var read = 0
    var historyMissing = false
    // An ordered consumer of the trip's subject: pushed in order, no acks, removed by the server when unsubscribed.
    let reader = try await jetStream.orderedConsumer(
      stream: stream, filterSubject: subject, deliverPolicy: after == 0 ? .all : .startSequence(after + 1))
    defer { Task { try? await reader.unsubscribe() } }
    if after > 0, let first = try? await jetStream.streamInfo(stream).state.firstSequence, first > after + 1 {
      historyMissing = true
    }
    // A push consumer starts delivering at once: what it delivered already plus what it has yet to deliver is
    // what the read must bring.
    let info = try await reader.consumerInfo()
    var remaining = info.delivered.consumerSequence + info.numPending
    guard remaining > 0 else {
      return UpdatesRead(lastSequence: after, truncated: false, historyMissing: historyMissing)
    }
    if remaining > UInt64(max(0, limit)) {
      return UpdatesRead(lastSequence: after, truncated: true, historyMissing: historyMissing)
    }
    var emptyReads = 0
    while remaining > 0 && !Task.isCancelled {
      let messages: [JetStream.Message]
      do throws(NATSError) {
        messages = try await reader.next(upTo: Int(min(remaining, 256)), timeout: .seconds(1))
      } catch {
        if error.code == .mismatch || error.code == .missedHeartbeat { continue }
        throw error
      }
      if messages.isEmpty {
        emptyReads += 1
        // The messages counted are stored: a consumer that brings none for a while is gone.
        if emptyReads >= 5 {
          throw NATSError(code: .notFound, message: "the read of \(subject) brings nothing")
        }
        continue
      }
      emptyReads = 0
      var decoded: [TripsMessage] = []
      for message in messages {
        guard let sequence = message.metadata?.streamSequence, sequence > lastSequence else { continue }
        lastSequence = sequence
        remaining -= 1
        read += 1
        metrics.historyMessages.increment()
        if let usable = decode(message) { decoded.append(usable) }
      }
      if !decoded.isEmpty { batch(decoded) }
    }
    _ = read
    return UpdatesRead(lastSequence: lastSequence, truncated: false, historyMissing: historyMissing)
  }

  func submitFollow(_ name: TripName) async throws -> Bool {
    try await TripRelay.submit(name, names: names, to: jetStream)
  }

  // MARK: The feed

  /// Reads every message of `stream` stored after the feed started, in batches, until cancelled, through an
  /// ordered consumer: pushed by the server, in stream order, re-created by libnats from the next sequence
  /// after a gap or missed heartbeats (a NATS node restart). One that fails for good is made again here
  /// from the sequence after the last one read.
  private func readFeed(stream: String, _ handler: @escaping @Sendable (FeedEvent) -> Void) async {
    var lastSequence: UInt64?
    var reader: JetStream.OrderedConsumer?
    var announced = false
    var failures = 0
    let backoff = RetryBackoff(initial: .milliseconds(250), maximum: .seconds(5))
    var generator = SystemRandomNumberGenerator()
    while !Task.isCancelled {
      guard let reading = reader else {
        do throws(NATSError) {
          let start: UInt64
          if let lastSequence {
            start = lastSequence
          } else {
            start = try await jetStream.streamInfo(stream).state.lastSequence
            lastSequence = start
          }
          reader = try await jetStream.orderedConsumer(
            stream: stream, filterSubject: ">", deliverPolicy: .startSequence(start + 1))
          failures = 0
          if !announced {
            announced = true
            handler(.reading(after: start))
          }
        } catch {
          failures += 1
          if failures == 1 || failures % 20 == 0 {
            logger.debug("cannot read \(stream) yet", metadata: ["error": "\(error)"])
          }
          try? await Task.sleep(for: backoff.delay(retry: failures, using: &generator))
        }
        continue
      }
      let messages: [JetStream.Message]
      do throws(NATSError) {
        messages = try await reading.next(upTo: 1024, timeout: .seconds(1))
      } catch {
        // A mismatch or missed heartbeats: libnats is re-creating the consumer; go on reading.
        if error.code == .mismatch || error.code == .missedHeartbeat { continue }
        logger.debug("reading \(stream) failed; reading again", metadata: ["error": "\(error)"])
        try? await reading.unsubscribe()
        reader = nil
        try? await Task.sleep(for: .milliseconds(250))
        continue
      }
      if messages.isEmpty { continue }
      var batch: [TripsMessage] = []
      batch.reserveCapacity(messages.count)
      for message in messages {
        guard let sequence = message.metadata?.streamSequence, sequence > (lastSequence ?? 0) else { continue }
        lastSequence = sequence
        if let usable = decode(message) { batch.append(usable) }
      }
      if !batch.isEmpty { handler(.messages(batch)) }
    }
    if let reader { try? await reader.unsubscribe() }
  }
}

/// A feed that runs as a task.
struct TaskFeedHandle: TripsFeedHandle {
  let task: Task<Void, Never>
  func stop() { task.cancel() }
}
