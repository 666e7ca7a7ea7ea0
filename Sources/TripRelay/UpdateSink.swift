// Sources/TripRelay/UpdateSink.swift - where a followed trip's updates go: the seam, and JetStream behind it
//
// A followed trip hands its updates to an `UpdateSink` one at a time (the next only once the last is stored),
// each fenced: it names the delivery of the follow request the relay holds, and the position it expects the
// trip's last stored update to have. The sink stores the update only if that still holds, so two relays that
// both believe they follow a trip (one cut off from NATS and not yet aware of it) cannot interleave: the one
// whose expectation fails learns who published since, and stops if that was a later delivery.
//
// JetStream implements it with its own compare-and-set, `Nats-Expected-Last-Subject-Sequence` on the trip's
// subject, and with `Nats-Msg-Id`s that make a retried publish (a lost ack) stored once. Publishes are
// pipelined (`JetStreamPublisher`): a trip waits for its ack, the relay never does. A recording sink in the
// tests stands in for it, and another log (Kafka, Pub/Sub) could, without touching the rest of the relay.

internal import CoreMetrics
package import FleetEngineMessages
package import GRPCProtocol
internal import Logging
internal import NATSClient
internal import Primitives

/// One message of a followed trip, as a sink stores it.
package struct RelayRecord: Sendable {
  /// What it carries.
  package enum Kind: Sendable, Hashable {
    /// An update (`body`: an encoded `TripUpdate` without sequence and send time).
    case update(full: Bool, final: Bool)
    /// Upstream refused the trip for good: watchers get `code` and `message` (`body` is empty).
    case refusal(code: GRPCStatusCode, message: String)
  }

  /// The trip.
  package var name: TripName
  /// What it carries.
  package var kind: Kind
  /// The payload.
  package var body: [UInt8]
  /// The delivery count of the follow request the publishing relay holds: the fencing token.
  package var delivery: UInt64
  /// The record's number within that delivery, from 1 (with `delivery`, the record's idempotency key).
  package var sequence: UInt64
  /// The position the trip's last stored record must have for this one to be stored; nil: store it whatever
  /// came before (the first record of a delivery, which is whole).
  package var expectedPosition: UInt64?
  /// The trip's whole state after this record (encoded `TripUpdate`, `full_trip`), when it is due to be
  /// kept as the trip's latest state once this record is stored.
  package var checkpoint: [UInt8]?

  /// Whether it carries the trip's final state (or ends it with a refusal).
  package var isFinal: Bool {
    switch kind {
    case .update(_, let final): final
    case .refusal: true
    }
  }
}

/// What became of a record.
package enum SinkOutcome: Sendable, Hashable {
  /// Stored at `position` in the trip's stream (`duplicate`: it had been stored already, by a retry or,
  /// for a final state, by a relay before).
  case stored(position: UInt64, duplicate: Bool)
  /// Another relay published the trip under a later delivery of its follow request: it follows the trip now.
  case superseded(byDelivery: UInt64)
  /// Something else was stored since the position expected (an earlier delivery's last record, or the
  /// history expired): publish the whole trip again, expecting `position`.
  case rebase(position: UInt64)
  /// Maybe not stored (no ack, NATS unreachable): publish the same record again.
  case failed(String)
}

/// Where followed trips' records go (see the file comment). Thread-safe.
package protocol UpdateSink: Sendable {
  /// Stores `record` if its expectation holds; `completion` gets the outcome once, on any thread.
  func publish(_ record: RelayRecord, completion: @escaping @Sendable (SinkOutcome) -> Void)
}

/// The JetStream sink: `TRIPS` (the records) and `TRIPSTATE` (checkpoints and refusals).
final class JetStreamSink: UpdateSink, @unchecked Sendable {
  // @unchecked: `publisher` is set once in init (its handler needs `self`) and never changed.
  private struct Pending {
    let record: RelayRecord
    let completion: @Sendable (SinkOutcome) -> Void
    let sentAt: UInt64
  }

  private let jetStream: JetStream
  private let names: RelayNames
  private let relayID: String
  private let metrics: RelayMetrics
  private let logger: Logger
  private let pending = Locked<(next: UInt64, byTag: [UInt64: Pending])>((1, [:]))
  private var publisher: JetStreamPublisher!

  init(jetStream: JetStream, names: RelayNames, relayID: String, metrics: RelayMetrics, logger: Logger)
    throws(NATSError)
  {
    self.jetStream = jetStream
    self.names = names
    self.relayID = relayID
    self.metrics = metrics
    self.logger = logger
    publisher = try jetStream.makePublisher(timeout: .seconds(5), maxPending: 65_536) { [weak self] tag, result in
      self?.completed(tag, result)
    }
  }

  func close() { publisher.close() }

  func publish(_ record: RelayRecord, completion: @escaping @Sendable (SinkOutcome) -> Void) {
    let message = outbound(record)
    let tag = pending.withLock { pending -> UInt64 in
      let tag = pending.next
      pending.next += 1
      pending.byTag[tag] = Pending(record: record, completion: completion, sentAt: monotonicNanoseconds())
      return tag
    }
    publisher.publish(message, tag: tag)
  }

  /// The JetStream message of `record`.
  private func outbound(_ record: RelayRecord) -> JetStream.OutboundMessage {
    var headers = NATSHeaders()
    headers[RelayNaming.tripNameHeader] = record.name.description
    headers[RelayNaming.deliveryHeader] = String(record.delivery)
    headers[RelayNaming.relayHeader] = relayID
    let messageID: String
    switch record.kind {
    case .update(let full, let final):
      if full { headers[RelayNaming.fullTripHeader] = "true" }
      if final { headers[RelayNaming.finalHeader] = "true" }
      messageID =
        final
        ? RelayNaming.finalMessageID(record.name)
        : RelayNaming.updateMessageID(record.name, delivery: record.delivery, sequence: record.sequence)
    case .refusal(let code, let message):
      headers[RelayNaming.refusedHeader] = String(code.rawValue)
      headers[RelayNaming.refusalMessageHeader] = Self.headerText(message)
      messageID = RelayNaming.updateMessageID(record.name, delivery: record.delivery, sequence: record.sequence)
    }
    var message = JetStream.OutboundMessage(
      subject: names.tripSubject(record.name), data: record.body, headers: headers, messageID: messageID)
    message.expectedLastSubjectSequence = record.expectedPosition
    return message
  }

  /// `text` as a header value: one line of printable ASCII, at most 200 bytes.
  static func headerText(_ text: String) -> String {
    String(
      String.UnicodeScalarView(
        text.unicodeScalars.lazy.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? $0 : "?" }.prefix(200)))
  }

  /// The publisher's handler: on a libnats thread.
  private func completed(_ tag: UInt64, _ result: Result<JetStream.PubAck, NATSError>) {
    guard let entry = pending.withLock({ $0.byTag.removeValue(forKey: tag) }) else { return }
    switch result {
    case .success(let ack):
      metrics.publishLatency.recordNanoseconds(Int64(clamping: monotonicNanoseconds() &- entry.sentAt))
      if ack.isDuplicate { metrics.duplicates.increment() } else { metrics.stored.increment() }
      if let checkpoint = entry.record.checkpoint {
        publishState(entry.record, body: checkpoint, position: ack.sequence)
      }
      if case .refusal = entry.record.kind { publishState(entry.record, body: [], position: ack.sequence) }
      entry.completion(.stored(position: ack.sequence, duplicate: ack.isDuplicate))
    case .failure(let error) where error.jetStreamCode == NATSError.JetStreamCode.wrongLastSequence:
      metrics.conflicts.increment()
      Task { entry.completion(await self.resolveConflict(entry.record)) }
    case .failure(let error):
      metrics.retried.increment()
      entry.completion(.failed(error.description))
    }
  }

  /// The record's expectation failed: who published since? A later delivery: superseded. Anything else:
  /// rebase on the trip's last stored record.
  private func resolveConflict(_ record: RelayRecord) async -> SinkOutcome {
    do throws(NATSError) {
      let last = try await jetStream.lastMessage(
        stream: names.tripsStream(for: record.name), subject: names.storedTripSubject(record.name))
      guard let last else { return .rebase(position: 0) }
      if let delivery = last.headers[RelayNaming.deliveryHeader].flatMap(UInt64.init), delivery > record.delivery {
        return .superseded(byDelivery: delivery)
      }
      return .rebase(position: last.sequence)
    } catch {
      return .failed("after a conflict, the trip's last update could not be read: \(error)")
    }
  }

  /// Keeps `body` as the trip's state as of `position` (a refusal when the record is one): best effort, a
  /// later checkpoint replaces a lost one.
  private func publishState(_ record: RelayRecord, body: [UInt8], position: UInt64) {
    var headers = NATSHeaders()
    headers[RelayNaming.tripNameHeader] = record.name.description
    headers[RelayNaming.tripsSequenceHeader] = String(position)
    if record.isFinal { headers[RelayNaming.finalHeader] = "true" }
    if case .refusal(let code, let message) = record.kind {
      headers[RelayNaming.refusedHeader] = String(code.rawValue)
      headers[RelayNaming.refusalMessageHeader] = Self.headerText(message)
    }
    let message = JetStream.OutboundMessage(
      subject: names.stateSubject(record.name), data: body, headers: headers,
      messageID: "\(record.name.description):state:\(position)")
    let tag = pending.withLock { pending -> UInt64 in
      let tag = pending.next
      pending.next += 1
      return tag
    }
    metrics.statePublishes.increment()
    publisher.publish(message, tag: tag)
  }
}
