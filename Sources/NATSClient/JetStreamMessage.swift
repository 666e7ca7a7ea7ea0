// Sources/NATSClient/JetStreamMessage.swift - a message delivered by a JetStream consumer, and its acks

internal import CNATS
internal import Primitives

extension JetStream {
  /// Where a delivered message sits in its stream and consumer (parsed by libnats from the reply subject).
  package struct MessageMetadata: Sendable, Hashable {
    /// The stream.
    package var stream: String
    /// The consumer that delivered it.
    package var consumer: String
    /// Its sequence in the stream.
    package var streamSequence: UInt64
    /// The consumer's delivery sequence (redeliveries get new ones).
    package var consumerSequence: UInt64
    /// How many times it has been delivered, this delivery included (2 on the first redelivery).
    package var numDelivered: UInt64
    /// Messages left for the consumer after this one, when it was delivered.
    package var numPending: UInt64
    /// When the stream stored it, in nanoseconds since the Unix epoch.
    package var timestampNanoseconds: Int64
    /// The JetStream domain, if any.
    package var domain: String?
  }

  /// A message delivered by a JetStream consumer: subject, payload, headers, metadata, and its acks.
  ///
  /// The ack methods may be called from any task or thread, as long as the message exists (it keeps its
  /// subscription and connection alive for that). Calls on one message are serialized. After a final
  /// ack (``ack()``, ``ackSync(timeout:)``, ``nak(delay:)``, ``term()``) libnats sends no further ack for
  /// it and later calls return at once; ``inProgress()`` may be repeated until then. An ack sent while
  /// the connection is reconnecting waits in the reconnect buffer.
  package final class Message: Sendable {
    /// The subject it was published to.
    package let subject: String
    /// The payload.
    package let data: [UInt8]
    /// The headers (`Nats-Msg-Id` included when the publisher set one).
    package let headers: NATSHeaders
    /// Its stream and consumer position; nil only if the server's reply subject could not be parsed.
    package let metadata: MessageMetadata?
    let native: NativeMessage

    init(native pointer: OpaquePointer, subscription: SubscriptionHandle) {
      subject = string(natsMsg_GetSubject(pointer)) ?? ""
      data = payload(of: pointer)
      headers = NATSClient.headers(of: pointer)
      var meta: UnsafeMutablePointer<jsMsgMetaData>?
      if natsMsg_GetMetaData(&meta, pointer) == NATS_OK, let meta {
        let value = meta.pointee
        metadata = MessageMetadata(
          stream: string(value.Stream) ?? "", consumer: string(value.Consumer) ?? "",
          streamSequence: value.Sequence.Stream, consumerSequence: value.Sequence.Consumer,
          numDelivered: value.NumDelivered, numPending: value.NumPending, timestampNanoseconds: value.Timestamp,
          domain: string(value.Domain))
        jsMsgMetaData_Destroy(meta)
      } else {
        metadata = nil
      }
      native = NativeMessage(pointer, subscription: subscription)
    }

    /// The `Nats-Msg-Id` header, if the publisher set one.
    package var messageID: String? { headers[NATSHeaders.messageIDName] }

    /// Acknowledges the message: processed, do not redeliver (on a work-queue stream: remove it).
    /// Returns once the ack is written (not confirmed; see ``ackSync(timeout:)``).
    package func ack() async throws(NATSError) {
      try await native.perform("ack") { natsMsg_Ack($0, nil) }
    }

    /// Acknowledges the message and waits for the server to confirm it recorded the ack (a request), at
    /// most `timeout` (else the context's request timeout).
    package func ackSync(timeout: Duration? = nil) async throws(NATSError) {
      try await native.perform("ack sync") { message in
        var code = jsErrCode(rawValue: 0)
        if let timeout {
          var options = jsOptions()
          jsOptions_Init(&options)
          options.Wait = max(timeout.clampedMilliseconds, 1)
          return natsMsg_AckSync(message, &options, &code)
        }
        return natsMsg_AckSync(message, nil, &code)
      }
    }

    /// Negatively acknowledges the message: redeliver it, after `delay` if given (else at once).
    package func nak(delay: Duration? = nil) async throws(NATSError) {
      try await native.perform("nak") { message in
        if let delay, delay > .zero { return natsMsg_NakWithDelay(message, delay.clampedMilliseconds, nil) }
        return natsMsg_Nak(message, nil)
      }
    }

    /// Tells the server the message is still being worked on (`+WPI`): its AckWait starts over, so it is
    /// not redelivered while these keep coming well inside AckWait.
    package func inProgress() async throws(NATSError) {
      try await native.perform("in progress") { natsMsg_InProgress($0, nil) }
    }

    /// Terminates the message: never redeliver it, whatever MaxDeliver says.
    package func term() async throws(NATSError) {
      try await native.perform("term") { natsMsg_Term($0, nil) }
    }
  }
}

/// Owns a received `natsMsg` and serializes the acks sent for it.
final class NativeMessage: @unchecked Sendable {
  // @unchecked: `pointer` is used only inside `serializer` (libnats updates the message's "acked" flag
  // without a lock) and freed in deinit; `subscription` keeps the subscription that libnats' message
  // points to (and its connection) alive as long as the message.
  private let pointer: OpaquePointer
  private let subscription: SubscriptionHandle
  private let serializer = Locked()

  /// The libnats message, for reading fields libnats never changes (subject, reply).
  var pointerForReading: OpaquePointer { pointer }

  init(_ pointer: OpaquePointer, subscription: SubscriptionHandle) {
    self.pointer = pointer
    self.subscription = subscription
  }

  deinit {
    // Frees memory only; safe on any thread.
    natsMsg_Destroy(pointer)
  }

  /// Runs `ack` with the message on a pool thread, one ack of this message at a time.
  func perform(
    _ kind: String, _ ack: @escaping @Sendable (OpaquePointer) -> natsStatus
  ) async throws(NATSError) {
    try await BlockingThreadPool.shared.run { () throws(NATSError) in
      try self.serializer.withLock { () throws(NATSError) in
        let status = ack(self.pointer)
        try checkStatus(status, "\(kind) of \(string(natsMsg_GetSubject(self.pointer)) ?? "?")")
      }
    }
  }
}

extension JetStream.Message {
  /// The reply subject JetStream delivered the message with (`$JS.ACK.…`): where acks go.
  var ackSubject: String? { native.replySubject }
}

extension NativeMessage {
  /// The message's reply subject.
  var replySubject: String? { string(natsMsg_GetReply(pointerForReading)) }
}

extension JetStream {
  /// A message as a stream stores it (a get by sequence or by subject).
  package struct StoredMessage: Sendable, Hashable {
    /// The subject it was stored under.
    package var subject: String
    /// Its sequence in the stream.
    package var sequence: UInt64
    /// The payload.
    package var data: [UInt8]
    /// The headers.
    package var headers: NATSHeaders
    /// When the stream stored it, in nanoseconds since the Unix epoch (0 when the server did not say).
    package var storedAtNanoseconds: Int64
  }

  /// The last message `stream` stores on `subject`, or nil when it has none.
  package func lastMessage(stream: String, subject: String) async throws(NATSError) -> StoredMessage? {
    let handle = handle
    return try await pool.run { () throws(NATSError) -> StoredMessage? in
      let operation = "last message on \(subject) in \(stream)"
      try validateName(stream, kind: "stream", operation: operation)
      try validateSubject(subject, operation: operation)
      var message: OpaquePointer?
      var code = jsErrCode(rawValue: 0)
      let status = js_GetLastMsg(&message, handle.pointer, stream, subject, nil, &code)
      if status == NATS_NOT_FOUND || Int(code.rawValue) == NATSError.JetStreamCode.noMessageFound { return nil }
      try checkStatus(status, jetStreamCode: code, operation)
      guard let message else { return nil }
      defer { natsMsg_Destroy(message) }
      return StoredMessage(
        subject: string(natsMsg_GetSubject(message)) ?? subject, sequence: natsMsg_GetSequence(message),
        data: payload(of: message), headers: NATSClient.headers(of: message),
        storedAtNanoseconds: natsMsg_GetTime(message))
    }
  }
}

/// Confirms in-progress acks: each round sends an in-progress ack (`+WPI`) for every message as a request and
/// waits for the server's answers on one inbox subscription kept for all rounds (destroying a subscription while
/// answers still arrive is what libnats 3.4.1 cannot survive, see SubscriptionReaper.swift). An answered ack
/// reset the message's AckWait on the server when it arrived: a relay knows until when it holds its requests.
///
/// A confirmation means the server received the ack, not that this subscriber still holds the delivery: a
/// consumer answers the acks of an earlier delivery of a message too.
package final class InProgressConfirmer: Sendable {
  private let connection: ConnectionHandle
  private let subscription: SubscriptionHandle
  private let prefix: String
  private let round = Locked<UInt64>(0)
  private let serializer = Locked()

  /// A confirmer on `jetStream`'s connection.
  package init(_ jetStream: JetStream) async throws(NATSError) {
    let connection = jetStream.handle.connection
    self.connection = connection
    let (pointer, prefix) = try await BlockingThreadPool.shared.run {
      () throws(NATSError) -> (UncheckedPointer, String) in
      var inbox: UnsafeMutablePointer<natsInbox>?
      try checkStatus(natsInbox_Create(&inbox), "in-progress confirmations: inbox")
      guard let inbox else { throw NATSError(code: .noMemory, message: "in-progress confirmations: no inbox") }
      let prefix = String(cString: inbox)
      natsInbox_Destroy(inbox)
      var subscription: OpaquePointer?
      try checkStatus(
        natsConnection_SubscribeSync(&subscription, connection.pointer, "\(prefix).>"),
        "in-progress confirmations: subscribe")
      guard let subscription else { throw NATSError(code: .noMemory, message: "in-progress confirmations: no sub") }
      natsSubscription_SetPendingLimits(subscription, -1, -1)
      return (UncheckedPointer(subscription), prefix)
    }
    subscription = SubscriptionHandle(
      pointer.pointer, connection: connection, jetStream: nil, label: "in-progress confirmations")
    self.prefix = prefix
  }

  /// Sends an in-progress ack for each of `messages` and waits (at most `timeout`) for the answers; returns,
  /// per message in order, whether its answer came. One round at a time, on one pool thread.
  package func confirm(_ messages: [JetStream.Message], timeout: Duration) async -> [Bool] {
    guard !messages.isEmpty else { return [] }
    let subjects = messages.map(\.ackSubject)
    let number = round.withLock { round -> UInt64 in
      round += 1
      return round
    }
    let connection = connection
    let subscription = subscription
    let prefix = prefix
    return await BlockingThreadPool.shared.run { () -> [Bool] in
      self.serializer.withLock { () -> [Bool] in
        var confirmed = [Bool](repeating: false, count: subjects.count)
        let replyPrefix = "\(prefix).\(number)."
        var expected = 0
        for (index, subject) in subjects.enumerated() {
          guard let subject else { continue }
          if natsConnection_PublishRequestString(connection.pointer, subject, replyPrefix + String(index), "+WPI")
            == NATS_OK
          {
            expected += 1
          }
        }
        guard expected > 0 else { return confirmed }
        natsConnection_Flush(connection.pointer)
        let deadline = ContinuousClock.now + timeout
        var received = 0
        while received < expected {
          let left = ContinuousClock.now.duration(to: deadline)
          guard left > .zero else { break }
          var reply: OpaquePointer?
          let status = natsSubscription_NextMsg(&reply, subscription.pointer, max(left.clampedMilliseconds, 1))
          guard status == NATS_OK, let reply else { break }
          defer { natsMsg_Destroy(reply) }
          // Answers of an earlier round that came late are not this round's.
          guard let subject = string(natsMsg_GetSubject(reply)), subject.hasPrefix(replyPrefix),
            let index = Int(subject.dropFirst(replyPrefix.count)), confirmed.indices.contains(index),
            !confirmed[index]
          else { continue }
          confirmed[index] = true
          received += 1
        }
        return confirmed
      }
    }
  }
}
