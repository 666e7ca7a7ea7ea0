// Sources/NATSClient/JetStream.swift - a JetStream context: streams, consumers, publishing, subscriptions

internal import CNATS

extension NATSConnection {
  /// A JetStream context on this connection (libnats' `jsCtx`); cheap to make, makes no request.
  package func jetStream(_ configuration: JetStream.Configuration = JetStream.Configuration()) throws(NATSError)
    -> JetStream
  {
    try JetStream(connection: self, configuration: configuration)
  }
}

/// JetStream on a connection: manages streams and consumers, publishes with acks, subscribes.
///
/// Every method runs its libnats call on NATSClient's own threads (see the module's threading notes in
/// NATSConnection.swift) and throws ``NATSError``.
package final class JetStream: Sendable {
  /// The context's options.
  package struct Configuration: Sendable, Hashable {
    /// How long a JetStream API request (stream and consumer management, a publish's ack) may take.
    package var requestTimeout: Duration = .seconds(5)
    /// The most asynchronous publishes (``publish(batch:timeout:)``) waiting for their ack at once; a batch
    /// beyond it waits for acks before it sends more.
    package var maxPendingAsyncPublishes: Int = 4_000
    /// The JetStream domain, if the account uses one.
    package var domain: String?

    /// The defaults.
    package init() {}
  }

  /// The connection it works on.
  package let connection: NATSConnection
  /// Its options.
  package let configuration: Configuration
  let handle: JetStreamHandle

  init(connection: NATSConnection, configuration: Configuration) throws(NATSError) {
    self.connection = connection
    self.configuration = configuration
    handle = try JetStreamHandle(connection: connection.handle, configuration: configuration)
  }

  var pool: BlockingThreadPool { .shared }

  // MARK: - Streams

  /// Creates the stream, or updates it when one with this name exists with another configuration.
  /// Returns the stream's info.
  package func createOrUpdateStream(_ configuration: StreamConfiguration) async throws(NATSError) -> StreamInfo {
    let handle = handle
    return try await pool.run { () throws(NATSError) -> StreamInfo in
      let operation = "create stream \(configuration.name)"
      let arena = CStringArena()
      defer { arena.free() }
      var config = try configuration.native(arena, operation: operation)
      var info: UnsafeMutablePointer<jsStreamInfo>?
      var code = jsErrCode(rawValue: 0)
      var status = js_AddStream(&info, handle.pointer, &config, nil, &code)
      if status != NATS_OK && code == JSStreamNameExistErr {
        code = jsErrCode(rawValue: 0)
        status = js_UpdateStream(&info, handle.pointer, &config, nil, &code)
        try checkStatus(status, jetStreamCode: code, "update stream \(configuration.name)")
      } else {
        try checkStatus(status, jetStreamCode: code, operation)
      }
      defer { jsStreamInfo_Destroy(info) }
      guard let info else { throw NATSError(code: .generic, message: "\(operation): no stream info") }
      return StreamInfo(native: info.pointee)
    }
  }

  /// The stream's info: configuration, message count, first and last sequence, cluster.
  /// Throws ``NATSError/Code/notFound`` when there is no such stream.
  package func streamInfo(_ name: String) async throws(NATSError) -> StreamInfo {
    let handle = handle
    return try await pool.run { () throws(NATSError) -> StreamInfo in
      let operation = "stream info \(name)"
      try validateName(name, kind: "stream", operation: operation)
      var info: UnsafeMutablePointer<jsStreamInfo>?
      var code = jsErrCode(rawValue: 0)
      try checkStatus(js_GetStreamInfo(&info, handle.pointer, name, nil, &code), jetStreamCode: code, operation)
      defer { jsStreamInfo_Destroy(info) }
      guard let info else { throw NATSError(code: .generic, message: "\(operation): no stream info") }
      return StreamInfo(native: info.pointee)
    }
  }

  /// Deletes the stream and its consumers.
  package func deleteStream(_ name: String) async throws(NATSError) {
    let handle = handle
    try await pool.run { () throws(NATSError) in
      let operation = "delete stream \(name)"
      try validateName(name, kind: "stream", operation: operation)
      var code = jsErrCode(rawValue: 0)
      try checkStatus(js_DeleteStream(handle.pointer, name, nil, &code), jetStreamCode: code, operation)
    }
  }

  /// Removes every message from the stream (sequences continue where they were).
  package func purgeStream(_ name: String) async throws(NATSError) {
    let handle = handle
    try await pool.run { () throws(NATSError) in
      let operation = "purge stream \(name)"
      try validateName(name, kind: "stream", operation: operation)
      var code = jsErrCode(rawValue: 0)
      try checkStatus(js_PurgeStream(handle.pointer, name, nil, &code), jetStreamCode: code, operation)
    }
  }

  // MARK: - Consumers

  /// Creates the consumer on `stream`, or updates the durable consumer of that name. An ephemeral
  /// consumer (no durable name) gets its name from the server: read it from the returned info.
  package func createOrUpdateConsumer(
    stream: String, _ configuration: ConsumerConfiguration
  ) async throws(NATSError) -> ConsumerInfo {
    let handle = handle
    return try await pool.run { () throws(NATSError) -> ConsumerInfo in
      let operation = "create consumer \(configuration.durableName ?? "(ephemeral)") on \(stream)"
      try validateName(stream, kind: "stream", operation: operation)
      let arena = CStringArena()
      defer { arena.free() }
      var config = try configuration.native(arena, operation: operation)
      var info: UnsafeMutablePointer<jsConsumerInfo>?
      var code = jsErrCode(rawValue: 0)
      var status = js_AddConsumer(&info, handle.pointer, stream, &config, nil, &code)
      // nats-server 2.9 updates a durable on create when the change is allowed; older ones answer
      // "consumer already exists", so try an update then.
      if status != NATS_OK && configuration.durableName != nil
        && (code == JSConsumerNameExistErr || code == JSConsumerExistingActiveErr)
      {
        code = jsErrCode(rawValue: 0)
        status = js_UpdateConsumer(&info, handle.pointer, stream, &config, nil, &code)
      }
      try checkStatus(status, jetStreamCode: code, operation)
      defer { jsConsumerInfo_Destroy(info) }
      guard let info else { throw NATSError(code: .generic, message: "\(operation): no consumer info") }
      return ConsumerInfo(native: info.pointee)
    }
  }

  /// The consumer's info: pending and unacked counts, delivered and ack-floor positions.
  package func consumerInfo(stream: String, consumer: String) async throws(NATSError) -> ConsumerInfo {
    let handle = handle
    return try await pool.run { () throws(NATSError) -> ConsumerInfo in
      let operation = "consumer info \(consumer) on \(stream)"
      try validateName(stream, kind: "stream", operation: operation)
      try validateName(consumer, kind: "consumer", operation: operation)
      var info: UnsafeMutablePointer<jsConsumerInfo>?
      var code = jsErrCode(rawValue: 0)
      try checkStatus(
        js_GetConsumerInfo(&info, handle.pointer, stream, consumer, nil, &code), jetStreamCode: code, operation)
      defer { jsConsumerInfo_Destroy(info) }
      guard let info else { throw NATSError(code: .generic, message: "\(operation): no consumer info") }
      return ConsumerInfo(native: info.pointee)
    }
  }

  /// Deletes the consumer.
  package func deleteConsumer(stream: String, consumer: String) async throws(NATSError) {
    let handle = handle
    try await pool.run { () throws(NATSError) in
      let operation = "delete consumer \(consumer) on \(stream)"
      try validateName(stream, kind: "stream", operation: operation)
      try validateName(consumer, kind: "consumer", operation: operation)
      var code = jsErrCode(rawValue: 0)
      try checkStatus(js_DeleteConsumer(handle.pointer, stream, consumer, nil, &code), jetStreamCode: code, operation)
    }
  }

  // MARK: - Publishing

  /// Publishes `message` and waits for the stream's ack (at most `timeout`, else the context's request
  /// timeout). With a ``OutboundMessage/messageID``, publishing again after a failure is safe: a repeat
  /// within the stream's duplicate window is acked with ``PubAck/isDuplicate`` and not stored twice.
  package func publish(_ message: OutboundMessage, timeout: Duration? = nil) async throws(NATSError) -> PubAck {
    let handle = handle
    return try await pool.run { () throws(NATSError) -> PubAck in
      let operation = "publish to \(message.subject)"
      let arena = CStringArena()
      defer { arena.free() }
      let prepared = try message.native(arena, timeout: timeout, operation: operation)
      let native = prepared.message
      var options = prepared.options
      defer { natsMsg_Destroy(native) }
      var ack: UnsafeMutablePointer<jsPubAck>?
      var code = jsErrCode(rawValue: 0)
      try checkStatus(js_PublishMsg(&ack, handle.pointer, native, &options, &code), jetStreamCode: code, operation)
      defer { jsPubAck_Destroy(ack) }
      guard let ack else { throw NATSError(code: .generic, message: "\(operation): no ack") }
      return PubAck(native: ack.pointee)
    }
  }

  /// Publishes `subject`/`data` with an optional `Nats-Msg-Id` and waits for the ack.
  package func publish(
    subject: String, data: [UInt8], headers: NATSHeaders = NATSHeaders(), messageID: String? = nil
  ) async throws(NATSError) -> PubAck {
    try await publish(OutboundMessage(subject: subject, data: data, headers: headers, messageID: messageID))
  }

  /// Publishes every message of `batch` without waiting for each ack in turn (`js_PublishMsgAsync`), then
  /// waits for all the acks. Returns one result per message, in order: the ack (see ``PubAck/isDuplicate``)
  /// or the error (the server refused it, or no ack came within `timeout`, else the context's request
  /// timeout).
  ///
  /// At most ``Configuration/maxPendingAsyncPublishes`` publishes of the context wait for their ack at
  /// once; a batch beyond that waits for acks before it sends more (libnats stalls the sending thread,
  /// which is one of NATSClient's own). A message that failed may or may not have been stored: publish it
  /// again with the same ``OutboundMessage/messageID`` to be sure, without a duplicate.
  package func publish(
    batch: [OutboundMessage], timeout: Duration? = nil
  ) async -> [Result<PubAck, NATSError>] {
    guard !batch.isEmpty else { return [] }
    let handle = handle
    let waitForAck = timeout ?? configuration.requestTimeout
    let tracker = PublishBatch(count: batch.count)
    // Returns once libnats has taken every message (or refused it); acks keep arriving meanwhile.
    await pool.run { handle.sendAsync(batch, tracker: tracker, timeout: waitForAck) }
    // A watchdog for acks libnats never reports (its timeout timer stops when the connection closes):
    // whatever is still pending a little after the ack timeout fails with a timeout.
    let watchdog = Task {
      try? await Task.sleep(for: waitForAck + .seconds(2))
      guard !Task.isCancelled else { return }
      handle.asyncPublishes.failPending(of: tracker, operation: "publish batch")
    }
    await tracker.waitUntilComplete()
    watchdog.cancel()
    return tracker.results
  }

  // MARK: - Subscribing

  /// A pull subscription bound to the existing consumer `consumer` on `stream` (made with
  /// ``createOrUpdateConsumer(stream:_:)``). Unsubscribing or dropping it leaves the consumer in place.
  /// `memoryStorage` must say whether the consumer keeps its state in memory
  /// (``ConsumerConfiguration/memoryStorage``): libnats refuses to bind when it differs.
  package func pullSubscription(
    stream: String, consumer: String, memoryStorage: Bool = false
  ) async throws(NATSError) -> PullSubscription {
    let handle = handle
    let pointer = try await pool.run { () throws(NATSError) -> UncheckedPointer in
      let operation = "pull subscribe to \(consumer) on \(stream)"
      try validateName(stream, kind: "stream", operation: operation)
      try validateName(consumer, kind: "consumer", operation: operation)
      var options = jsSubOptions()
      jsSubOptions_Init(&options)
      var subscription: OpaquePointer?
      var code = jsErrCode(rawValue: 0)
      let status = stream.withCString { streamName in
        consumer.withCString { consumerName in
          options.Stream = streamName
          options.Consumer = consumerName
          options.Config.MemoryStorage = memoryStorage
          return js_PullSubscribe(&subscription, handle.pointer, nil, consumerName, nil, &options, &code)
        }
      }
      try checkStatus(status, jetStreamCode: code, operation)
      guard let subscription else { throw NATSError(code: .noMemory, message: "\(operation): no subscription") }
      return UncheckedPointer(subscription)
    }
    return PullSubscription(
      stream: stream, consumer: consumer,
      handle: SubscriptionHandle(
        pointer.pointer, connection: handle.connection, jetStream: handle, label: "\(stream) consumer \(consumer)"))
  }

  /// Creates or updates the consumer, then binds a pull subscription to it; for an ephemeral consumer
  /// (no durable name) the subscription is its only reader.
  package func pullSubscription(
    stream: String, _ configuration: ConsumerConfiguration
  ) async throws(NATSError) -> PullSubscription {
    let info = try await createOrUpdateConsumer(stream: stream, configuration)
    return try await pullSubscription(
      stream: stream, consumer: info.name, memoryStorage: configuration.memoryStorage)
  }

  /// An ordered consumer on `stream`: an ephemeral push consumer that libnats keeps gap-free and in order,
  /// re-creating it from the next expected sequence after a gap or missed heartbeats (a server restart, a
  /// lost connection). No acks. `filterSubject` `>` reads every subject.
  package func orderedConsumer(
    stream: String, filterSubject: String = ">", deliverPolicy: DeliverPolicy = .all
  ) async throws(NATSError) -> OrderedConsumer {
    let handle = handle
    let pointer = try await pool.run { () throws(NATSError) -> UncheckedPointer in
      let operation = "ordered consumer on \(stream) for \(filterSubject)"
      try validateName(stream, kind: "stream", operation: operation)
      try validateSubject(filterSubject, operation: operation)
      var options = jsSubOptions()
      jsSubOptions_Init(&options)
      options.Ordered = true
      switch deliverPolicy {
      case .all: options.Config.DeliverPolicy = js_DeliverAll
      case .last: options.Config.DeliverPolicy = js_DeliverLast
      case .new: options.Config.DeliverPolicy = js_DeliverNew
      case .lastPerSubject: options.Config.DeliverPolicy = js_DeliverLastPerSubject
      case .startSequence(let sequence):
        options.Config.DeliverPolicy = js_DeliverByStartSequence
        options.Config.OptStartSeq = sequence
      case .startTime(let nanoseconds):
        options.Config.DeliverPolicy = js_DeliverByStartTime
        options.Config.OptStartTime = nanoseconds
      }
      var subscription: OpaquePointer?
      var code = jsErrCode(rawValue: 0)
      let status = stream.withCString { streamName in
        options.Stream = streamName
        return js_SubscribeSync(&subscription, handle.pointer, filterSubject, nil, &options, &code)
      }
      try checkStatus(status, jetStreamCode: code, operation)
      guard let subscription else { throw NATSError(code: .noMemory, message: "\(operation): no subscription") }
      return UncheckedPointer(subscription)
    }
    return OrderedConsumer(
      stream: stream, filterSubject: filterSubject,
      handle: SubscriptionHandle(
        pointer.pointer, connection: handle.connection, jetStream: handle,
        label: "\(stream) ordered consumer of \(filterSubject)"))
  }

  /// Reads `stream` from its first message to its last, in order, through an ordered consumer; ends when
  /// the consumer has nothing pending. Throws ``NATSError/Code/timeout`` when the next message does not
  /// arrive within `timeout` (the stream's servers are unreachable). For tests and readers that catch up.
  package func readStream(
    _ stream: String, filterSubject: String = ">", timeout: Duration = .seconds(10)
  ) async throws(NATSError) -> [Message] {
    // Dropping the consumer at the end unsubscribes; the server then removes its ephemeral consumer.
    let consumer = try await orderedConsumer(stream: stream, filterSubject: filterSubject)
    let info = try await consumer.consumerInfo()
    if info.numPending == 0 && info.delivered.consumerSequence == 0 { return [] }
    var messages: [Message] = []
    while true {
      let message: Message?
      do throws(NATSError) {
        message = try await consumer.next(timeout: timeout)
      } catch {
        // libnats re-creates the ordered consumer after these; the next message continues the sequence.
        if error.code == .mismatch || error.code == .missedHeartbeat { continue }
        throw error
      }
      guard let message else {
        throw NATSError(
          code: .timeout,
          message: "read stream \(stream): no message within \(timeout) after \(messages.count) messages")
      }
      messages.append(message)
      if message.metadata?.numPending == 0 { return messages }
    }
  }
}

// MARK: - Owning the libnats context

/// Owns a `jsCtx` and its asynchronous-publish bookkeeping; destroys the context when the last reference goes.
final class JetStreamHandle: @unchecked Sendable {
  // @unchecked: `pointer` is immutable; libnats' JetStream functions are thread-safe, and the context is
  // destroyed only in deinit, when no call can be in flight (every caller holds a reference).
  let pointer: OpaquePointer
  let connection: ConnectionHandle
  let asyncPublishes: AsyncPublishTracker
  private let trackerID: CallbackID

  init(connection: ConnectionHandle, configuration: JetStream.Configuration) throws(NATSError) {
    self.connection = connection
    asyncPublishes = AsyncPublishTracker()
    trackerID = asyncPublishTrackers.register(asyncPublishes)
    var options = jsOptions()
    jsOptions_Init(&options)
    options.Wait = configuration.requestTimeout.clampedMilliseconds
    options.PublishAsync.MaxPending = Int64(max(configuration.maxPendingAsyncPublishes, 1))
    options.PublishAsync.AckHandler = asyncPublishAckHandler
    options.PublishAsync.AckHandlerClosure = trackerID.closure
    // How long a publish in a batch may wait for room under MaxPending before it fails.
    options.PublishAsync.StallWait = max(configuration.requestTimeout.clampedMilliseconds, 1)
    var context: OpaquePointer?
    // natsConnection_JetStream allocates and copies the options (the domain too); it makes no request.
    let status = configuration.domain.withOptionalCString { domain in
      options.Domain = domain
      return natsConnection_JetStream(&context, connection.pointer, &options)
    }
    guard status == NATS_OK, let context else {
      asyncPublishTrackers.remove(trackerID)
      throw NATSError(status, operation: "JetStream context")
    }
    pointer = context
  }

  deinit {
    let pointer = UncheckedPointer(pointer)
    let trackerID = trackerID
    let connection = connection
    BlockingThreadPool.shared.submit {
      jsCtx_Destroy(pointer.pointer)
      asyncPublishTrackers.remove(trackerID)
      withExtendedLifetime(connection) {}
    }
  }

  /// Sends `batch` with js_PublishMsgAsync; results arrive through the ack handler. Runs on a pool thread.
  func sendAsync(_ batch: [JetStream.OutboundMessage], tracker: PublishBatch, timeout: Duration) {
    for (index, message) in batch.enumerated() {
      let operation = "publish to \(message.subject)"
      let arena = CStringArena()
      var native: OpaquePointer?
      do throws(NATSError) {
        let prepared = try message.native(arena, timeout: timeout, operation: operation)
        let created = prepared.message
        var options = prepared.options
        native = created
        // Registered before sending: the ack can arrive before js_PublishMsgAsync returns.
        asyncPublishes.register(created, batch: tracker, index: index)
        let status = js_PublishMsgAsync(pointer, &native, &options)
        if status != NATS_OK {
          // libnats did not take the message (it is still ours, in `native`): no ack will come for it.
          let error = NATSError(status, operation: operation)
          if asyncPublishes.remove(created) { tracker.complete(index, .failure(error)) }
        }
      } catch {
        tracker.complete(index, .failure(error))
      }
      // NULL (a no-op) when libnats took the message.
      natsMsg_Destroy(native)
      arena.free()
    }
  }
}

extension Optional where Wrapped == String {
  /// Calls `body` with a C string for the value, or NULL for nil.
  func withOptionalCString<Result>(_ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    switch self {
    case .some(let string): string.withCString { body($0) }
    case .none: body(nil)
    }
  }
}
