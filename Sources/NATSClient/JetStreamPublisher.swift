// Sources/NATSClient/JetStreamPublisher.swift - publishing to JetStream with acks pipelined, one outcome per message
//
// `JetStream.publish(_:)` waits for each ack in turn: a round trip per message. The publisher hands messages to
// libnats' asynchronous publishing (`js_PublishMsgAsync`) and never waits: a caller enqueues a message with a
// tag of its own and goes on; a job on NATSClient's pool hands what is queued to libnats; the outcome of each
// message (its ack, the server's refusal, or no ack within the timeout) is reported with its tag to the
// publisher's handler, on the thread that reads the acks. At most `maxPending` publishes wait for their ack at
// once; beyond that libnats holds the pool job back (its stall) rather than the caller.
//
// The publisher has a JetStream context of its own, so its acks go to its own handler (a context has one).

internal import CNATS
internal import Primitives

/// Publishes without waiting; reports each message's outcome by its tag (see the file comment).
package final class JetStreamPublisher: Sendable {
  /// Receives the outcome of each published message, with its tag, on a libnats thread. It must not block.
  package typealias OutcomeHandler = @Sendable (_ tag: UInt64, _ result: Result<JetStream.PubAck, NATSError>) -> Void

  private struct State {
    var queue: [(message: JetStream.OutboundMessage, tag: UInt64)] = []
    var draining = false
    var closed = false
  }

  private let context: PublisherContext
  private let state = Locked(State())
  private let timeout: Duration

  init(connection: ConnectionHandle, timeout: Duration, maxPending: Int, onOutcome: @escaping OutcomeHandler)
    throws(NATSError)
  {
    self.timeout = timeout
    context = try PublisherContext(
      connection: connection, timeout: timeout, maxPending: maxPending, onOutcome: onOutcome)
  }

  /// Queues `message`; its outcome reaches the handler with `tag`. Never blocks. After ``close()`` the outcome
  /// is a failure at once.
  package func publish(_ message: JetStream.OutboundMessage, tag: UInt64) {
    let start = state.withLock { state -> Bool? in
      guard !state.closed else { return nil }
      state.queue.append((message, tag))
      guard !state.draining else { return false }
      state.draining = true
      return true
    }
    switch start {
    case nil:
      context.onOutcome(tag, .failure(NATSError(code: .connectionClosed, message: "publish: the publisher is closed")))
    case true?:
      BlockingThreadPool.shared.submit { self.drain() }
    case false?:
      break
    }
  }

  /// Publishes handed to libnats whose ack has not come yet.
  package var pendingCount: Int { context.pendingCount }

  /// Stops publishing: what is still queued fails at once, and so does what waits for an ack.
  package func close() {
    let queued = state.withLock { state -> [(message: JetStream.OutboundMessage, tag: UInt64)] in
      state.closed = true
      defer { state.queue.removeAll() }
      return state.queue
    }
    for (_, tag) in queued {
      context.onOutcome(tag, .failure(NATSError(code: .connectionClosed, message: "publish: the publisher closed")))
    }
    context.failPending(olderThanNanoseconds: 0, reason: "the publisher closed")
  }

  /// Runs on a pool thread: hands what is queued to libnats until the queue is empty; fails publishes whose
  /// ack libnats never reported (its timeout timer does not run while the connection is closed).
  private func drain() {
    while true {
      let batch = state.withLock { state -> [(message: JetStream.OutboundMessage, tag: UInt64)] in
        if state.queue.isEmpty || state.closed {
          state.draining = false
          return []
        }
        defer { state.queue.removeAll(keepingCapacity: state.queue.count <= 4096) }
        return state.queue
      }
      if batch.isEmpty { break }
      for (message, tag) in batch { context.send(message, tag: tag, timeout: timeout) }
    }
    context.failPending(olderThanNanoseconds: UInt64(clamping: (timeout + .seconds(2)).clampedNanoseconds), reason: "no ack")
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

/// A JetStream context whose asynchronous acks go to one publisher's handler.
final class PublisherContext: @unchecked Sendable {
  // @unchecked: `pointer` is immutable (libnats' JetStream functions are thread-safe) and destroyed in deinit.
  let pointer: OpaquePointer
  let connection: ConnectionHandle
  let acks: PublisherAcks
  private let registryID: CallbackID

  init(
    connection: ConnectionHandle, timeout: Duration, maxPending: Int,
    onOutcome: @escaping JetStreamPublisher.OutcomeHandler
  ) throws(NATSError) {
    self.connection = connection
    let acks = PublisherAcks(onOutcome: onOutcome)
    self.acks = acks
    let id = publisherAcks.register(acks)
    var options = jsOptions()
    jsOptions_Init(&options)
    options.Wait = max(timeout.clampedMilliseconds, 1)
    options.PublishAsync.MaxPending = Int64(max(maxPending, 1))
    options.PublishAsync.AckHandler = publisherAckHandler
    options.PublishAsync.AckHandlerClosure = id.closure
    options.PublishAsync.StallWait = max(timeout.clampedMilliseconds, 1)
    var context: OpaquePointer?
    let status = natsConnection_JetStream(&context, connection.pointer, &options)
    guard status == NATS_OK, let context else {
      publisherAcks.remove(id)
      throw NATSError(status, operation: "JetStream publisher context")
    }
    pointer = context
    registryID = id
  }

  deinit {
    let pointer = UncheckedPointer(pointer)
    let id = registryID
    let connection = connection
    BlockingThreadPool.shared.submit {
      jsCtx_Destroy(pointer.pointer)
      publisherAcks.remove(id)
      withExtendedLifetime(connection) {}
    }
  }

  var onOutcome: JetStreamPublisher.OutcomeHandler { acks.onOutcome }
  var pendingCount: Int { acks.count }

  /// Hands `message` to libnats; on a pool thread (libnats may stall it while `maxPending` acks are due).
  func send(_ message: JetStream.OutboundMessage, tag: UInt64, timeout: Duration) {
    let operation = "publish to \(message.subject)"
    let arena = CStringArena()
    defer { arena.free() }
    var native: OpaquePointer?
    do throws(NATSError) {
      let prepared = try message.native(arena, timeout: timeout, operation: operation)
      let created = prepared.message
      var options = prepared.options
      native = created
      // Registered before sending: the ack can arrive before js_PublishMsgAsync returns.
      acks.register(created, tag: tag)
      let status = js_PublishMsgAsync(pointer, &native, &options)
      if status != NATS_OK {
        // libnats did not take the message (it is still ours, in `native`): no ack will come for it.
        acks.fail(created, NATSError(status, operation: operation))
      }
    } catch {
      acks.onOutcome(tag, .failure(error))
    }
    // NULL (a no-op) when libnats took the message.
    natsMsg_Destroy(native)
  }

  func failPending(olderThanNanoseconds age: UInt64, reason: String) {
    acks.failPending(olderThanNanoseconds: age, reason: reason)
  }
}

/// The publishes of one publisher that wait for their ack, by message address, and where outcomes go.
final class PublisherAcks: Sendable {
  private struct Entry {
    let tag: UInt64
    let sentAt: UInt64
  }

  let onOutcome: JetStreamPublisher.OutcomeHandler
  private let pending = Locked<[UInt: Entry]>([:])

  init(onOutcome: @escaping JetStreamPublisher.OutcomeHandler) { self.onOutcome = onOutcome }

  var count: Int { pending.withLock { $0.count } }

  func register(_ message: OpaquePointer, tag: UInt64) {
    let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(message)))
    pending.withLock { $0[key] = Entry(tag: tag, sentAt: monotonicNanoseconds()) }
  }

  /// Reports `error` for `message` if it still waits (libnats did not take it).
  func fail(_ message: OpaquePointer, _ error: NATSError) {
    complete(message, .failure(error))
  }

  /// libnats' ack handler: the outcome of the publish whose message is `message`.
  func complete(_ message: OpaquePointer, _ result: Result<JetStream.PubAck, NATSError>) {
    let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(message)))
    guard let entry = pending.withLock({ $0.removeValue(forKey: key) }) else { return }
    onOutcome(entry.tag, result)
  }

  /// Fails the publishes sent more than `age` nanoseconds ago that still wait for their ack.
  func failPending(olderThanNanoseconds age: UInt64, reason: String) {
    let now = monotonicNanoseconds()
    let expired = pending.withLock { pending -> [Entry] in
      let keys = pending.filter { now &- $0.value.sentAt >= age }.map(\.key)
      return keys.compactMap { pending.removeValue(forKey: $0) }
    }
    for entry in expired {
      onOutcome(entry.tag, .failure(NATSError(code: .timeout, message: "publish: \(reason)")))
    }
  }
}

/// The publishers' ack tables libnats' ack handler finds through its closure.
let publisherAcks = CallbackRegistry<PublisherAcks>()

/// libnats' `jsPubAckHandler` for publisher contexts (see `asyncPublishAckHandler`, the batches' twin).
private let publisherAckHandler: jsPubAckHandler = { _, message, ack, failure, closure in
  defer { natsMsg_Destroy(message) }
  guard let message, let acks = publisherAcks.target(for: closure) else { return }
  acks.complete(message, pubAckResult(message: message, ack: ack, failure: failure))
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
