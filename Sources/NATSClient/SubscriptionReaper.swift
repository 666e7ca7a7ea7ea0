// Sources/NATSClient/SubscriptionReaper.swift - destroys libnats subscriptions only once no thread of libnats
// can still be using them
//
// libnats 3.4.1 (Debian's) has a use-after-free: its read loop looks a message's subscription up under the
// connection's lock, releases the lock, and only then allocates the message and locks the subscription,
// without retaining it in between. `natsSubscription_Destroy` on another thread in that window frees the
// subscription under the read loop, which then writes into freed memory (fixed upstream in 3.6.0, nats.c
// pull request #638). A relay that reads 10,000 trips' histories through short-lived subscriptions, each
// destroyed while its last pull request can still bring a message, crashed on it with glibc's heap
// corruption aborts.
//
// So no subscription is destroyed while the read loop may hold it:
// 1. `natsSubscription_Unsubscribe` removes it from the connection: a message read after this does not find it.
// 2. A flush (PING, wait for the PONG) on its connection: the read loop handles the PONG after any message it
//    was handling, so once the flush returns, no message for the subscription is in its hands.
// 3. `natsSubscription_Destroy` frees it.
// Subscriptions that go away together share one flush per connection. When the flush fails (the connection
// is closed or reconnecting: no read loop handles messages then), the destroy waits a second and tries the
// flush again, and destroys after `maxFlushAttempts` failures.

internal import CNATS
internal import Primitives

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Destroys subscriptions safely (see the file comment), in batches, on a thread of the blocking pool.
package final class SubscriptionReaper: Sendable {
  /// The reaper every ``SubscriptionHandle`` uses.
  package static let shared = SubscriptionReaper(pool: .shared)

  /// Flushes that may fail before a subscription is destroyed anyway.
  static let maxFlushAttempts = 5
  /// How long a flush waits for its PONG, in milliseconds.
  static let flushTimeoutMilliseconds: Int64 = 2_000

  /// A subscription waiting to be destroyed, with the objects it must outlive.
  struct Entry: Sendable {
    let subscription: UncheckedPointer
    let connection: ConnectionHandle
    let owners: JetStreamHandle?
    var unsubscribed = false
    var failedFlushes = 0
  }

  private struct State {
    var pending: [Entry] = []
    var draining = false
    var destroyed = 0
  }

  private let pool: BlockingThreadPool
  private let state = Locked(State())

  init(pool: BlockingThreadPool) {
    self.pool = pool
  }

  /// Subscriptions destroyed so far (for tests).
  package var destroyedCount: Int { state.withLock { $0.destroyed } }

  /// Destroys `subscription` once it is safe; `connection` and `owners` are released after it.
  func destroy(_ subscription: UncheckedPointer, connection: ConnectionHandle, owners: JetStreamHandle?) {
    let startDrain = state.withLock { state -> Bool in
      state.pending.append(Entry(subscription: subscription, connection: connection, owners: owners))
      guard !state.draining else { return false }
      state.draining = true
      return true
    }
    if startDrain { pool.submit { self.drain() } }
  }

  /// Pool thread: destroys batches until none is pending.
  private func drain() {
    var retry: [Entry] = []
    while true {
      let batch = state.withLock { state -> [Entry]? in
        var batch = retry
        batch.append(contentsOf: state.pending)
        state.pending.removeAll()
        if batch.isEmpty {
          state.draining = false
          return nil
        }
        return batch
      }
      guard var batch else { return }
      retry = []
      for index in batch.indices where !batch[index].unsubscribed {
        // Fails harmlessly when already unsubscribed or when the connection is closed.
        _ = natsSubscription_Unsubscribe(batch[index].subscription.pointer)
        batch[index].unsubscribed = true
      }
      // One flush per connection.
      var flushed: [ObjectIdentifier: Bool] = [:]
      var destroyed = 0
      for var entry in batch {
        let key = ObjectIdentifier(entry.connection)
        let ok: Bool
        if let known = flushed[key] {
          ok = known
        } else {
          ok = natsConnection_FlushTimeout(entry.connection.pointer, Self.flushTimeoutMilliseconds) == NATS_OK
          flushed[key] = ok
        }
        if !ok {
          entry.failedFlushes += 1
          if entry.failedFlushes < Self.maxFlushAttempts {
            retry.append(entry)
            continue
          }
        }
        natsSubscription_Destroy(entry.subscription.pointer)
        withExtendedLifetime((entry.connection, entry.owners)) {}
        destroyed += 1
      }
      state.withLock { $0.destroyed += destroyed }
      if !retry.isEmpty { usleep(1_000_000) }
    }
  }
}
