// Sources/NATSClient/JetStreamAsyncPublish.swift - matching js_PublishMsgAsync's acks to the batches that sent them
//
// libnats reports every asynchronous publish's outcome to one ack handler per context, on the thread that
// reads the acks' subscription, with the original message. The message's address identifies the publish:
// it is registered before the message is handed to libnats and removed when the outcome is known, so an
// address can only be reused after its entry is gone.

internal import CNATS
internal import Primitives

/// The outcomes of one ``JetStream/publish(batch:timeout:)`` call, filled in as acks arrive.
final class PublishBatch: Sendable {
  private struct State {
    var results: [Result<JetStream.PubAck, NATSError>?]
    var remaining: Int
    var waiter: CheckedContinuation<Void, Never>?
  }

  private let state: Locked<State>

  init(count: Int) {
    state = Locked(State(results: Array(repeating: nil, count: count), remaining: count, waiter: nil))
  }

  /// Records the outcome of message `index` (the first outcome counts); wakes the waiter after the last one.
  func complete(_ index: Int, _ result: Result<JetStream.PubAck, NATSError>) {
    let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
      guard state.results[index] == nil else { return nil }
      state.results[index] = result
      state.remaining -= 1
      guard state.remaining == 0 else { return nil }
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume()
  }

  /// Returns once every message has an outcome.
  func waitUntilComplete() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let done = state.withLock { state -> Bool in
        if state.remaining == 0 { return true }
        state.waiter = continuation
        return false
      }
      if done { continuation.resume() }
    }
  }

  /// The outcomes, in order (call after ``waitUntilComplete()``).
  var results: [Result<JetStream.PubAck, NATSError>] {
    state.withLock { state in
      state.results.map {
        $0 ?? .failure(NATSError(code: .illegalState, message: "publish batch: no outcome"))
      }
    }
  }
}

/// A context's asynchronous publishes still waiting for their outcome, by message address.
final class AsyncPublishTracker: Sendable {
  private struct Entry {
    let batch: PublishBatch
    let index: Int
  }

  private let pending = Locked<[UInt: Entry]>([:])

  /// Notes that `message` is message `index` of `batch`; call before handing it to libnats.
  func register(_ message: OpaquePointer, batch: PublishBatch, index: Int) {
    let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(message)))
    pending.withLock { $0[key] = Entry(batch: batch, index: index) }
  }

  /// Forgets `message`; returns true when it was still pending (so its outcome is the caller's to report).
  func remove(_ message: OpaquePointer) -> Bool {
    let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(message)))
    return pending.withLock { $0.removeValue(forKey: key) } != nil
  }

  /// Reports the outcome for `message`, if it is still pending (libnats' ack handler).
  func complete(_ message: OpaquePointer, _ result: Result<JetStream.PubAck, NATSError>) {
    let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(message)))
    guard let entry = pending.withLock({ $0.removeValue(forKey: key) }) else { return }
    entry.batch.complete(entry.index, result)
  }

  /// Fails every publish of `batch` still pending with a timeout (the watchdog).
  func failPending(of batch: PublishBatch, operation: String) {
    let entries = pending.withLock { pending -> [Entry] in
      let keys = pending.filter { $0.value.batch === batch }.map(\.key)
      return keys.compactMap { pending.removeValue(forKey: $0) }
    }
    for entry in entries {
      entry.batch.complete(entry.index, .failure(NATSError(code: .timeout, message: "\(operation): no ack")))
    }
  }
}

/// The trackers libnats' ack handler finds through its closure.
let asyncPublishTrackers = CallbackRegistry<AsyncPublishTracker>()

/// libnats' `jsPubAckHandler`: runs on the thread of the context's ack subscription, once per asynchronous
/// publish, with the original message (ours to destroy) and either an ack or an error (a refusal by the
/// server, or NATS_TIMEOUT when no ack came within the publish's MaxWait).
let asyncPublishAckHandler: jsPubAckHandler = { _, message, ack, failure, closure in
  defer { natsMsg_Destroy(message) }
  guard let message, let tracker = asyncPublishTrackers.target(for: closure) else { return }
  tracker.complete(message, pubAckResult(message: message, ack: ack, failure: failure))
}
