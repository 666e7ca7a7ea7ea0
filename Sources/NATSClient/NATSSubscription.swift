// Sources/NATSClient/NATSSubscription.swift - core NATS messages and subscriptions

internal import CNATS
internal import Primitives

/// A core NATS message: subject, optional reply subject, payload and headers.
package struct NATSMessage: Sendable, Hashable {
  /// The subject it was (or is to be) published to.
  package var subject: String
  /// Where a reply goes, for requests.
  package var replySubject: String?
  /// The payload.
  package var data: [UInt8]
  /// The headers.
  package var headers: NATSHeaders

  /// Makes a message.
  package init(subject: String, replySubject: String? = nil, data: [UInt8], headers: NATSHeaders = NATSHeaders()) {
    self.subject = subject
    self.replySubject = replySubject
    self.data = data
    self.headers = headers
  }

  /// Copies a received libnats message.
  init(native: OpaquePointer) {
    subject = string(natsMsg_GetSubject(native)) ?? ""
    replySubject = string(natsMsg_GetReply(native))
    data = payload(of: native)
    headers = NATSClient.headers(of: native)
  }
}

/// A core NATS subscription; messages wait in libnats (up to the connection's pending limit) until read.
package final class NATSSubscription: Sendable {
  /// The subject (possibly with wildcards) it listens on.
  package let subject: String
  let handle: SubscriptionHandle

  init(subject: String, handle: SubscriptionHandle) {
    self.subject = subject
    self.handle = handle
  }

  /// The next message, or nil when none arrives within `timeout`.
  package func next(timeout: Duration) async throws(NATSError) -> NATSMessage? {
    let handle = handle
    let subject = subject
    return try await BlockingThreadPool.shared.run { () throws(NATSError) -> NATSMessage? in
      guard let native = try handle.nextMessage(timeout: timeout, operation: "next message on \(subject)") else {
        return nil
      }
      defer { natsMsg_Destroy(native) }
      return NATSMessage(native: native)
    }
  }

  /// Stops the subscription; messages not read yet are dropped.
  package func unsubscribe() async throws(NATSError) {
    try await handle.unsubscribe(operation: "unsubscribe from \(subject)")
  }
}

/// Owns a `natsSubscription` (core, pull or ordered); destroys it on a pool thread when the last reference
/// goes. It keeps its connection (and JetStream context) alive: libnats' messages point at their
/// subscription without retaining it, and acks go through it.
final class SubscriptionHandle: @unchecked Sendable {
  // @unchecked: `pointer` is immutable; libnats' subscription functions are thread-safe (a fetch is
  // serialized by the caller, see JetStream.PullSubscription); it is destroyed only in deinit.
  let pointer: OpaquePointer
  let connection: ConnectionHandle
  let jetStream: JetStreamHandle?

  /// `label` names the subscription in asynchronous errors (its subject, or stream and consumer).
  init(_ pointer: OpaquePointer, connection: ConnectionHandle, jetStream: JetStreamHandle?, label: String) {
    self.pointer = pointer
    self.connection = connection
    self.jetStream = jetStream
    liveSubscriptions.withLock { $0[Self.key(pointer)] = label }
  }

  deinit {
    liveSubscriptions.withLock { _ = $0.removeValue(forKey: Self.key(pointer)) }
    // Not natsSubscription_Destroy here: libnats' read loop may be using the subscription (see
    // SubscriptionReaper). The connection and context are released after the subscription is destroyed.
    SubscriptionReaper.shared.destroy(UncheckedPointer(pointer), connection: connection, owners: jetStream)
  }

  static func key(_ pointer: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(pointer))) }

  /// The label of the subscription at `pointer` while its handle lives; never touches the pointer (libnats'
  /// asynchronous error callback may name a subscription that is already freed).
  static func label(of pointer: OpaquePointer) -> String? { liveSubscriptions.withLock { $0[key(pointer)] } }

  /// natsSubscription_NextMsg; nil at the timeout. Call on a pool thread.
  func nextMessage(timeout: Duration, operation: @autoclosure () -> String) throws(NATSError) -> OpaquePointer? {
    var message: OpaquePointer?
    let status = natsSubscription_NextMsg(&message, pointer, max(timeout.clampedMilliseconds, 1))
    if status == NATS_TIMEOUT { return nil }
    try checkStatus(status, operation())
    return message
  }

  /// natsSubscription_Unsubscribe on a pool thread; the libnats object stays until deinit.
  func unsubscribe(operation: String) async throws(NATSError) {
    let pointer = UncheckedPointer(pointer)
    try await BlockingThreadPool.shared.run { () throws(NATSError) in
      let status = natsSubscription_Unsubscribe(pointer.pointer)
      // Unsubscribing twice (or after the connection closed) is not an error for the caller.
      if status == NATS_INVALID_SUBSCRIPTION || status == NATS_CONNECTION_CLOSED { return }
      try checkStatus(status, operation)
    }
  }
}

/// The labels of the subscriptions whose handles live, by libnats address.
private let liveSubscriptions = Locked<[UInt: String]>([:])
