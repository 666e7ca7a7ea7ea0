// Sources/TripRelay/TripPublisher.swift - publishes the relay's updates to JetStream in batches
//
// Every followed trip publishes its updates one at a time (it waits for each ack before the next, so a
// trip's updates are stored in order). Hundreds of trips publish at once, so their messages are gathered
// into batches of asynchronous publishes (`JetStream.publish(batch:)`): one round of acks for many trips,
// instead of one blocked thread per trip.

internal import NATSClient
internal import Primitives

/// Gathers publishes of many tasks into batches; each caller gets its own message's result.
final class TripPublisher: Sendable {
  private typealias Pending = (
    message: JetStream.OutboundMessage, done: CheckedContinuation<Result<JetStream.PubAck, NATSError>, Never>
  )

  private struct State {
    var queue: [Pending] = []
    var draining = false
  }

  private let jetStream: JetStream
  private let timeout: Duration
  private let maxBatch: Int
  private let state = Locked(State())

  init(jetStream: JetStream, timeout: Duration = .seconds(5), maxBatch: Int = 512) {
    self.jetStream = jetStream
    self.timeout = timeout
    self.maxBatch = maxBatch
  }

  /// Publishes `message` with the next batch; returns the stream's ack or the error (the message may or may
  /// not be stored then: publish it again with the same message ID).
  func publish(_ message: JetStream.OutboundMessage) async -> Result<JetStream.PubAck, NATSError> {
    await withCheckedContinuation { (done: CheckedContinuation<Result<JetStream.PubAck, NATSError>, Never>) in
      let start = state.withLock { state -> Bool in
        state.queue.append((message, done))
        guard !state.draining else { return false }
        state.draining = true
        return true
      }
      if start { Task { await self.drain() } }
    }
  }

  private func drain() async {
    while true {
      let batch = state.withLock { state -> [Pending] in
        guard !state.queue.isEmpty else {
          state.draining = false
          return []
        }
        let count = min(maxBatch, state.queue.count)
        let batch = Array(state.queue.prefix(count))
        state.queue.removeFirst(count)
        return batch
      }
      if batch.isEmpty { return }
      let results = await jetStream.publish(batch: batch.map(\.message), timeout: timeout)
      for (index, pending) in batch.enumerated() {
        let result =
          index < results.count
          ? results[index] : .failure(NATSError(code: .generic, message: "publish batch: no result"))
        pending.done.resume(returning: result)
      }
    }
  }
}
