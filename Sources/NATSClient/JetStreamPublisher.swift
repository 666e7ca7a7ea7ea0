// Sources/NATSClient/JetStreamPublisher.swift - publishing to JetStream with acks pipelined, one outcome per message
//
// `JetStream.publish(_:)` waits for each ack in turn: a round trip per message. The publisher never waits: a
// caller enqueues a message with a tag of its own and goes on; a job on NATSClient's pool writes what is
// queued to the connection; the outcome of each message (its ack, the server's refusal, or no ack within the
// timeout) is reported with its tag to the publisher's handler, on the thread that reads the acks.
//
// A JetStream publish is a NATS request: the message goes out with a reply subject and the stream answers
// there with a PubAck (JSON). The publisher does that itself rather than through libnats' asynchronous
// publishing: each message is one allocation (its header block encoded here, `Nats-Msg-Id` and the
// expectations included), written with a reply subject `<inbox>.<tag>` on one subscription of the
// publisher's; an ack finds its publish by the tag in its subject. libnats' way costs a header hash per
// message, a lock and a hash of pending messages per context, and a JSON parser's allocations per ack.
//
// At most `maxPending` publishes wait for their ack at once; beyond that the pool job waits for room (at most
// the timeout, then the message fails), never the caller. A publish without an ack within the timeout fails
// with a timeout (a sweep four times a second), and a late ack of it is dropped.

internal import CNATS
internal import Primitives

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Publishes without waiting; reports each message's outcome by its tag (see the file comment).
package final class JetStreamPublisher: Sendable {
  /// Receives the outcome of each published message, with its tag, on a libnats thread. It must not block.
  package typealias OutcomeHandler = @Sendable (_ tag: UInt64, _ result: Result<JetStream.PubAck, NATSError>) -> Void

  private struct Queued {
    let message: JetStream.OutboundMessage
    let tag: UInt64
  }

  private struct State {
    var queue: [Queued] = []
    var draining = false
    var closed = false
    var lastSweep: UInt64 = 0
  }

  private let acks: PublisherAcks
  private let connection: ConnectionHandle
  private let subscription: SubscriptionHandle
  private let registryID: CallbackID
  /// `<inbox>.`: each message's reply subject is this and its tag.
  private let replyPrefix: [UInt8]
  private let state = Locked(State())
  private let timeout: Duration
  private let maxPending: Int
  private let sweeper: Task<Void, Never>

  init(connection: ConnectionHandle, timeout: Duration, maxPending: Int, onOutcome: @escaping OutcomeHandler)
    throws(NATSError)
  {
    self.connection = connection
    self.timeout = timeout
    self.maxPending = max(maxPending, 1)
    let acks = PublisherAcks(onOutcome: onOutcome)
    self.acks = acks
    let id = publisherAckTables.register(acks)
    var inbox: UnsafeMutablePointer<natsInbox>?
    guard natsInbox_Create(&inbox) == NATS_OK, let inbox else {
      publisherAckTables.remove(id)
      throw NATSError(code: .noMemory, message: "JetStream publisher: no inbox")
    }
    let prefix = String(cString: inbox)
    natsInbox_Destroy(inbox)
    var pointer: OpaquePointer?
    let status = natsConnection_Subscribe(&pointer, connection.pointer, "\(prefix).*", publisherAckCallback, id.closure)
    guard status == NATS_OK, let pointer else {
      publisherAckTables.remove(id)
      throw NATSError(status, operation: "JetStream publisher: subscribe to its acks")
    }
    // No limit, as libnats sets for its own asynchronous publishing: an ack dropped as a "slow consumer" is a
    // publish failed for nothing (a limit of twice maxPending dropped some at 80,000 acks/s). The acks waiting
    // are bounded anyway: at most maxPending publishes are in flight, and an ack is a few dozen bytes.
    natsSubscription_SetPendingLimits(pointer, -1, -1)
    subscription = SubscriptionHandle(
      pointer, connection: connection, jetStream: nil, label: "JetStream publisher acks")
    registryID = id
    replyPrefix = Array("\(prefix).".utf8)
    let expiry = timeout.nonNegativeNanoseconds
    sweeper = Task { [acks] in
      while !Task.isCancelled {
        try? await Task.sleep(for: .milliseconds(250))
        acks.failPending(olderThanNanoseconds: expiry, reason: "no ack")
      }
    }
  }

  deinit {
    sweeper.cancel()
    publisherAckTables.remove(registryID)
    acks.failPending(olderThanNanoseconds: 0, reason: "the publisher is gone")
  }

  /// Queues `message`; its outcome reaches the handler with `tag`. Never blocks. After ``close()`` the outcome
  /// is a failure at once.
  package func publish(_ message: JetStream.OutboundMessage, tag: UInt64) {
    let start = state.withLock { state -> Bool? in
      guard !state.closed else { return nil }
      state.queue.append(Queued(message: message, tag: tag))
      guard !state.draining else { return false }
      state.draining = true
      return true
    }
    switch start {
    case nil:
      acks.onOutcome(tag, .failure(NATSError(code: .connectionClosed, message: "publish: the publisher is closed")))
    case true?:
      BlockingThreadPool.shared.submit { self.drain() }
    case false?:
      break
    }
  }

  /// Publishes written to the connection whose ack has not come yet.
  package var pendingCount: Int { acks.count }

  /// Stops publishing: what is still queued fails at once, and so does what waits for an ack.
  package func close() {
    let queued = state.withLock { state -> [Queued] in
      state.closed = true
      defer { state.queue.removeAll() }
      return state.queue
    }
    for entry in queued {
      acks.onOutcome(
        entry.tag, .failure(NATSError(code: .connectionClosed, message: "publish: the publisher closed")))
    }
    acks.failPending(olderThanNanoseconds: 0, reason: "the publisher closed")
  }

  /// Runs on a pool thread: writes what is queued until the queue is empty. The queue's buffer and this job's
  /// are swapped, so neither is reallocated.
  private func drain() {
    var batch: [Queued] = []
    var encoder = PublishEncoder(replyPrefix: replyPrefix)
    while true {
      let more = state.withLock { state -> Bool in
        if state.queue.isEmpty || state.closed {
          state.draining = false
          return false
        }
        swap(&state.queue, &batch)
        return true
      }
      guard more else { break }
      for entry in batch { send(entry, encoder: &encoder) }
      batch.removeAll(keepingCapacity: batch.capacity <= 65_536)
    }
  }

  private func send(_ entry: Queued, encoder: inout PublishEncoder) {
    let subject = entry.message.subject
    guard waitForRoom() else {
      acks.onOutcome(
        entry.tag,
        .failure(
          NATSError(
            code: .timeout,
            message: "publish to \(subject): \(maxPending) publishes waited for their ack for \(timeout)")))
      return
    }
    do throws(NATSError) {
      try encoder.encode(entry.message, tag: entry.tag)
    } catch {
      acks.onOutcome(entry.tag, .failure(error))
      return
    }
    acks.register(entry.tag, subject: subject)
    var native: OpaquePointer?
    var status = encoder.withEncoded { subjectBytes, replyBytes, block, headerLength in
      natsMsg_create(
        &native, subjectBytes.baseAddress, Int32(subjectBytes.count), replyBytes.baseAddress,
        Int32(replyBytes.count), block.baseAddress, Int32(block.count), Int32(headerLength))
    }
    if status == NATS_OK, let native {
      status = natsConn_publish(connection.pointer, native, nil, false)
      natsMsg_Destroy(native)
    }
    if status != NATS_OK {
      acks.fail(entry.tag, NATSError(status, operation: "publish to \(subject)"))
    }
  }

  /// Waits (on the pool thread) while `maxPending` publishes wait for their ack; false after the timeout.
  private func waitForRoom() -> Bool {
    guard acks.count >= maxPending else { return true }
    let deadline = monotonicNanoseconds() &+ timeout.nonNegativeNanoseconds
    while acks.count >= maxPending {
      if monotonicNanoseconds() >= deadline || state.withLock({ $0.closed }) { return false }
      usleep(500)
    }
    return true
  }
}

extension JetStream {
  /// A publisher on this context's connection (see ``JetStreamPublisher``): each message's outcome goes to
  /// `onOutcome` with the message's tag; no ack within `timeout` is a ``NATSError/Code/timeout``.
  package func makePublisher(
    timeout: Duration = .seconds(5), maxPending: Int = 4_096,
    onOutcome: @escaping JetStreamPublisher.OutcomeHandler
  ) throws(NATSError) -> JetStreamPublisher {
    try JetStreamPublisher(
      connection: handle.connection, timeout: timeout, maxPending: maxPending, onOutcome: onOutcome)
  }
}

/// Encodes one publish at a time into buffers it reuses: the subject, the reply subject (`<inbox>.<tag>`), and
/// the header block followed by the payload.
struct PublishEncoder {
  private var subject: [UInt8] = []
  private var reply: [UInt8]
  private let replyPrefixCount: Int
  private var block: [UInt8] = []
  private var headerLength = 0

  init(replyPrefix: [UInt8]) {
    reply = replyPrefix
    replyPrefixCount = replyPrefix.count
  }

  /// The header block: `NATS/1.0`, the message's headers, then JetStream's from its fields.
  mutating func encode(_ message: JetStream.OutboundMessage, tag: UInt64) throws(NATSError) {
    subject.removeAll(keepingCapacity: true)
    subject.append(contentsOf: message.subject.utf8)
    guard !subject.isEmpty, !subject.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
      throw NATSError(code: .invalidSubject, message: "publish: invalid subject \"\(message.subject)\"")
    }
    reply.removeSubrange(replyPrefixCount...)
    Self.appendDecimal(tag, to: &reply)
    block.removeAll(keepingCapacity: true)
    block.append(contentsOf: "NATS/1.0\r\n".utf8)
    for field in message.headers.fields {
      try appendField(field.name, field.value, operation: "publish to \(message.subject)")
    }
    if let id = message.messageID { try appendField(NATSHeaders.messageIDName, id, operation: "publish") }
    if let stream = message.expectedStream { try appendField("Nats-Expected-Stream", stream, operation: "publish") }
    if let sequence = message.expectedLastSequence {
      appendTrusted("Nats-Expected-Last-Sequence", sequence)
    }
    if let sequence = message.expectedLastSubjectSequence {
      appendTrusted("Nats-Expected-Last-Subject-Sequence", sequence)
    }
    if let id = message.expectedLastMessageID {
      try appendField("Nats-Expected-Last-Msg-Id", id, operation: "publish")
    }
    block.append(contentsOf: [0x0D, 0x0A])
    headerLength = block.count
    block.append(contentsOf: message.data)
  }

  /// Calls `body` with the subject, the reply subject, the block and the header block's length.
  func withEncoded<R>(
    _ body: (UnsafeBufferPointer<CChar>, UnsafeBufferPointer<CChar>, UnsafeBufferPointer<CChar>, Int) -> R
  ) -> R {
    subject.withUnsafeBufferPointer { subjectBytes in
      reply.withUnsafeBufferPointer { replyBytes in
        block.withUnsafeBufferPointer { blockBytes in
          subjectBytes.withMemoryRebound(to: CChar.self) { subjectChars in
            replyBytes.withMemoryRebound(to: CChar.self) { replyChars in
              blockBytes.withMemoryRebound(to: CChar.self) { blockChars in
                body(subjectChars, replyChars, blockChars, headerLength)
              }
            }
          }
        }
      }
    }
  }

  /// A `name: value` line; the name printable ASCII without `:`, the value non-empty, without CR or LF.
  private mutating func appendField(_ name: String, _ value: String, operation: @autoclosure () -> String)
    throws(NATSError)
  {
    let start = block.count
    block.append(contentsOf: name.utf8)
    let nameIsValid =
      block.count > start && block[start...].allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }
    guard nameIsValid else {
      throw NATSError(code: .invalidArgument, message: "\(operation()): invalid header name \"\(name)\"")
    }
    block.append(contentsOf: [UInt8(ascii: ":"), 0x20])
    let valueStart = block.count
    block.append(contentsOf: value.utf8)
    guard !block[valueStart...].contains(where: { $0 == 0x0D || $0 == 0x0A }) else {
      throw NATSError(code: .invalidArgument, message: "\(operation()): header \(name) has a line break")
    }
    // libnats' reader takes the next line as an empty value's: what NATSClient writes, it must read back.
    guard block.count > valueStart else {
      throw NATSError(code: .invalidArgument, message: "\(operation()): header \(name) has an empty value")
    }
    block.append(contentsOf: [0x0D, 0x0A])
  }

  private mutating func appendTrusted(_ name: StaticString, _ value: UInt64) {
    block.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    block.append(contentsOf: [UInt8(ascii: ":"), 0x20])
    Self.appendDecimal(value, to: &block)
    block.append(contentsOf: [0x0D, 0x0A])
  }

  static func appendDecimal(_ value: UInt64, to bytes: inout [UInt8]) {
    if value == 0 {
      bytes.append(UInt8(ascii: "0"))
      return
    }
    var digits: (UInt64, Int) = (value, 0)
    var reversed = [UInt8](repeating: 0, count: 20)
    while digits.0 > 0 {
      reversed[digits.1] = UInt8(ascii: "0") + UInt8(digits.0 % 10)
      digits.0 /= 10
      digits.1 += 1
    }
    for index in stride(from: digits.1 - 1, through: 0, by: -1) { bytes.append(reversed[index]) }
  }
}

/// The publishes of one publisher that wait for their ack, by tag, and where outcomes go.
final class PublisherAcks: Sendable {
  private struct Entry {
    let sentAt: UInt64
    let subject: String
  }

  let onOutcome: JetStreamPublisher.OutcomeHandler
  private let pending = Locked<[UInt64: Entry]>([:])

  init(onOutcome: @escaping JetStreamPublisher.OutcomeHandler) { self.onOutcome = onOutcome }

  var count: Int { pending.withLock { $0.count } }

  func register(_ tag: UInt64, subject: String) {
    let entry = Entry(sentAt: monotonicNanoseconds(), subject: subject)
    pending.withLock { $0[tag] = entry }
  }

  /// Reports `error` for `tag` if it still waits.
  func fail(_ tag: UInt64, _ error: NATSError) {
    guard pending.withLock({ $0.removeValue(forKey: tag) }) != nil else { return }
    onOutcome(tag, .failure(error))
  }

  /// An ack (or a "no responders" status) for the publish whose reply subject ends in its tag; on the
  /// subscription's thread.
  func received(_ message: OpaquePointer) {
    guard let subject = natsMsg_GetSubject(message) else { return }
    var tag: UInt64 = 0
    var digits = 0
    var index = strlen(subject)
    var scale: UInt64 = 1
    // The tag: the digits after the subject's last dot.
    while index > 0 {
      let byte = UInt8(bitPattern: subject[index - 1])
      guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"), digits < 19 else { break }
      tag &+= UInt64(byte - UInt8(ascii: "0")) &* scale
      scale &*= 10
      digits += 1
      index -= 1
    }
    guard digits > 0, index > 0, subject[index - 1] == CChar(UInt8(ascii: ".")) else { return }
    guard let entry = pending.withLock({ $0.removeValue(forKey: tag) }) else { return }  // late, or not ours
    if natsMsg_IsNoResponders(message) {
      onOutcome(
        tag,
        .failure(NATSError(code: .noResponders, message: "publish to \(entry.subject): no stream captures the subject"))
      )
      return
    }
    let count = Int(natsMsg_GetDataLength(message))
    let parsed: PubAckReply? =
      count > 0
      ? natsMsg_GetData(message).flatMap { data in
        PubAckReply.parse(UnsafeRawBufferPointer(start: UnsafeRawPointer(data), count: count))
      } : nil
    switch parsed {
    case .ack(let ack)?:
      onOutcome(tag, .success(ack))
    case .error(let code, let jetStreamCode, let description)?:
      onOutcome(
        tag,
        .failure(
          NATSError(
            code: .generic, jetStreamCode: jetStreamCode,
            message: "publish to \(entry.subject): \(description) (\(code))")))
    case nil:
      onOutcome(
        tag,
        .failure(NATSError(code: .protocolError, message: "publish to \(entry.subject): the ack is not a PubAck")))
    }
  }

  /// Fails the publishes sent more than `age` nanoseconds ago that still wait for their ack.
  func failPending(olderThanNanoseconds age: UInt64, reason: String) {
    let now = monotonicNanoseconds()
    let expired = pending.withLock { pending -> [(UInt64, Entry)] in
      guard !pending.isEmpty else { return [] }
      let old = pending.filter { now &- $0.value.sentAt >= age }
      for (tag, _) in old { pending.removeValue(forKey: tag) }
      return old.map { ($0.key, $0.value) }
    }
    for (tag, entry) in expired {
      onOutcome(tag, .failure(NATSError(code: .timeout, message: "publish to \(entry.subject): \(reason)")))
    }
  }
}

/// The publishers' ack tables the ack callback finds through its closure.
let publisherAckTables = CallbackRegistry<PublisherAcks>()

/// The acks' subscription callback (a libnats thread): the message is ours to destroy.
private let publisherAckCallback: natsMsgHandler = { _, _, message, closure in
  defer { natsMsg_Destroy(message) }
  guard let message, let acks = publisherAckTables.target(for: closure) else { return }
  acks.received(message)
}

/// The outcome libnats reports for an asynchronous publish of `message`.
func pubAckResult(
  message: OpaquePointer, ack: UnsafeMutablePointer<jsPubAck>?, failure: UnsafeMutablePointer<jsPubAckErr>?
) -> Result<JetStream.PubAck, NATSError> {
  if let ack { return .success(JetStream.PubAck(native: ack.pointee)) }
  if let failure {
    let text = string(failure.pointee.ErrText) ?? String(cString: natsStatus_GetText(failure.pointee.Err))
    let subject = string(natsMsg_GetSubject(message)) ?? "?"
    return .failure(
      NATSError(
        code: NATSError.Code(rawValue: failure.pointee.Err.rawValue),
        jetStreamCode: Int(failure.pointee.ErrCode.rawValue),
        message: "publish to \(subject): \(text)"))
  }
  return .failure(NATSError(code: .generic, message: "publish: libnats reported neither an ack nor an error"))
}
