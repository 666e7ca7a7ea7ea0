// Sources/NATSClient/JetStreamSubscriptions.swift - pull subscriptions (fetch) and ordered consumers (next)

internal import CNATS
internal import Primitives

extension JetStream {
  /// A pull subscription bound to a consumer: ``fetch(batch:timeout:)`` asks the server for messages.
  ///
  /// Several pull subscriptions (in one process or many) may share a durable consumer; the server hands
  /// each message to one of them. Fetches on one subscription run one at a time (libnats allows no
  /// concurrent fetch on a subscription).
  package final class PullSubscription: Sendable {
    /// The stream.
    package let stream: String
    /// The consumer's name.
    package let consumer: String
    let handle: SubscriptionHandle
    private let fetchLock = Locked()

    init(stream: String, consumer: String, handle: SubscriptionHandle) {
      self.stream = stream
      self.consumer = consumer
      self.handle = handle
    }

    /// Up to `batch` messages, waiting at most `timeout` for the first; empty when none came.
    ///
    /// Returns early with fewer than `batch` when the server has no more now. A message the server
    /// delivers counts against the consumer's MaxAckPending until it is acked (or its AckWait runs out).
    /// While the connection is reconnecting, or the consumer's leader is being elected, fetches return
    /// empty (or throw a transient ``NATSError``); keep fetching.
    ///
    /// A pull request can outlive the fetch that sent it (the server's expiry races the client's wait), and
    /// while MaxAckPending is reached nats-server 2.9 answers none, so `fetch` then waits its whole timeout.
    /// Messages such a request brings later wait in the subscription and come first in the next fetch; a
    /// subscription that stops fetching leaves them unacked until AckWait sends them elsewhere.
    package func fetch(batch: Int, timeout: Duration) async throws(NATSError) -> [Message] {
      let operation = "fetch from \(consumer) on \(stream)"
      guard batch > 0 else { throw NATSError(code: .invalidArgument, message: "\(operation): batch must be positive") }
      guard timeout > .zero else {
        throw NATSError(code: .invalidTimeout, message: "\(operation): timeout must be positive")
      }
      let handle = handle
      let pointers = try await BlockingThreadPool.shared.run { () throws(NATSError) -> [UncheckedPointer] in
        try self.fetchLock.withLock { () throws(NATSError) -> [UncheckedPointer] in
          // One message per libnats fetch, never more: libnats 3.4.1's fetch writes past the end of its
          // message array when messages left by an earlier pull request wait in the subscription and fill
          // part of a batch (it then waits for `batch - left` more while counting from `left`), which
          // corrupts the heap. A batch of one cannot be partly filled. The first message waits up to
          // `timeout`; each of the others is asked with no_wait: the server sends it if it has one and
          // answers "no messages" otherwise, one round trip.
          var pointers: [UncheckedPointer] = []
          pointers.reserveCapacity(min(batch, 64))
          while pointers.count < batch {
            var list = natsMsgList()
            var code = jsErrCode(rawValue: 0)
            let status: natsStatus
            if pointers.isEmpty {
              status = natsSubscription_Fetch(&list, handle.pointer, 1, max(timeout.clampedMilliseconds, 1), &code)
            } else {
              var request = jsFetchRequest()
              jsFetchRequest_Init(&request)
              request.Batch = 1
              request.NoWait = true
              // How long to wait for the server's answer (it answers at once).
              request.Expires = timeout.saturatingNanoseconds
              status = natsSubscription_FetchRequest(&list, handle.pointer, &request)
            }
            if status != NATS_OK {
              // What was fetched is delivered; an error comes again with the next fetch.
              if !pointers.isEmpty || status == NATS_TIMEOUT { break }
              try checkStatus(status, jetStreamCode: code, operation)
            }
            let count = Int(list.Count)
            for index in 0..<count {
              guard let message = list.Msgs?[index] else { continue }
              pointers.append(UncheckedPointer(message))
              list.Msgs?[index] = nil  // ours now; natsMsgList_Destroy skips it
            }
            natsMsgList_Destroy(&list)
            if count == 0 { break }
          }
          return pointers
        }
      }
      return pointers.map { Message(native: $0.pointer, subscription: handle) }
    }

    /// The consumer's info, as the server reports it now.
    package func consumerInfo() async throws(NATSError) -> ConsumerInfo {
      // Asked through the context, not natsSubscription_GetConsumerInfo: libnats 3.4.1 does not record the
      // consumer's name in a subscription bound to an existing consumer, and that call then fails with
      // NATS_INVALID_SUBSCRIPTION.
      guard let jetStream = handle.jetStream else {
        throw NATSError(code: .invalidSubscription, message: "consumer info: not a JetStream subscription")
      }
      let stream = stream
      let consumer = consumer
      return try await BlockingThreadPool.shared.run { () throws(NATSError) -> ConsumerInfo in
        let operation = "consumer info \(consumer) on \(stream)"
        var info: UnsafeMutablePointer<jsConsumerInfo>?
        var code = jsErrCode(rawValue: 0)
        try checkStatus(
          js_GetConsumerInfo(&info, jetStream.pointer, stream, consumer, nil, &code), jetStreamCode: code, operation)
        defer { jsConsumerInfo_Destroy(info) }
        guard let info else { throw NATSError(code: .generic, message: "\(operation): no consumer info") }
        return ConsumerInfo(native: info.pointee)
      }
    }

    /// Stops the subscription; the consumer stays (messages delivered and not acked are redelivered after
    /// AckWait). Messages already fetched can still be acked.
    package func unsubscribe() async throws(NATSError) {
      try await handle.unsubscribe(operation: "unsubscribe from \(consumer) on \(stream)")
    }
  }

  /// An ordered consumer: every message of the stream (or of a filter subject), once each, in stream
  /// order, with no acks. libnats re-creates the server-side consumer from the next expected sequence after
  /// a gap or missed heartbeats.
  package final class OrderedConsumer: Sendable {
    /// The stream.
    package let stream: String
    /// The subjects it reads (`>` for all).
    package let filterSubject: String
    let handle: SubscriptionHandle

    init(stream: String, filterSubject: String, handle: SubscriptionHandle) {
      self.stream = stream
      self.filterSubject = filterSubject
      self.handle = handle
    }

    /// The next message in stream order, or nil when none arrives within `timeout`.
    ///
    /// May throw ``NATSError/Code/mismatch`` or ``NATSError/Code/missedHeartbeat`` as a notice that libnats
    /// is re-creating the consumer; call again to go on.
    package func next(timeout: Duration) async throws(NATSError) -> Message? {
      let handle = handle
      let operation = "next message on ordered consumer of \(stream)"
      let pointer = try await BlockingThreadPool.shared.run { () throws(NATSError) -> UncheckedPointer? in
        try handle.nextMessage(timeout: timeout, operation: operation).map(UncheckedPointer.init)
      }
      return pointer.map { Message(native: $0.pointer, subscription: handle) }
    }

    /// Up to `limit` messages in stream order: waits at most `timeout` for the first, then takes the ones
    /// already delivered, without waiting. Empty when none arrived within `timeout`.
    ///
    /// Throws like ``next(timeout:)`` only when no message came before the notice; otherwise the messages
    /// come first and the notice is not repeated (libnats reports it once).
    package func next(upTo limit: Int, timeout: Duration) async throws(NATSError) -> [Message] {
      guard limit > 0 else { return [] }
      let handle = handle
      let operation = "next messages on ordered consumer of \(stream)"
      let pointers = try await BlockingThreadPool.shared.run { () throws(NATSError) -> [UncheckedPointer] in
        var pointers: [UncheckedPointer] = []
        guard let first = try handle.nextMessage(timeout: timeout, operation: operation) else { return [] }
        pointers.append(UncheckedPointer(first))
        while pointers.count < limit {
          var message: OpaquePointer?
          // A timeout of 0: what is queued now, or NATS_TIMEOUT at once.
          guard natsSubscription_NextMsg(&message, handle.pointer, 0) == NATS_OK, let message else { break }
          pointers.append(UncheckedPointer(message))
        }
        return pointers
      }
      return pointers.map { Message(native: $0.pointer, subscription: handle) }
    }

    /// The server-side consumer's info (its pending count included).
    package func consumerInfo() async throws(NATSError) -> ConsumerInfo {
      try await handle.consumerInfo(operation: "ordered consumer info on \(stream)")
    }

    /// Stops reading; the server removes the ephemeral consumer.
    package func unsubscribe() async throws(NATSError) {
      try await handle.unsubscribe(operation: "unsubscribe ordered consumer on \(stream)")
    }
  }
}

extension SubscriptionHandle {
  /// natsSubscription_GetConsumerInfo on a pool thread.
  func consumerInfo(operation: String) async throws(NATSError) -> JetStream.ConsumerInfo {
    let pointer = UncheckedPointer(pointer)
    return try await BlockingThreadPool.shared.run { () throws(NATSError) -> JetStream.ConsumerInfo in
      var info: UnsafeMutablePointer<jsConsumerInfo>?
      var code = jsErrCode(rawValue: 0)
      try checkStatus(
        natsSubscription_GetConsumerInfo(&info, pointer.pointer, nil, &code), jetStreamCode: code, operation)
      defer { jsConsumerInfo_Destroy(info) }
      guard let info else { throw NATSError(code: .generic, message: "\(operation): no consumer info") }
      return JetStream.ConsumerInfo(native: info.pointee)
    }
  }
}
