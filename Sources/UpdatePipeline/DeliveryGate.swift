// Sources/UpdatePipeline/DeliveryGate.swift - one subscriber's "open, closed, delivering" state
//
// A subscriber's deliveries run on delivery threads, one at a time; unsubscribing must guarantee that
// no callback runs after it returns. The gate is that guarantee, for any kind of job: a delivery enters
// it (refused once it is closed) and leaves it; `close()` shuts it and, when a delivery is under way on
// another thread, waits for the delivery to leave: blocking on a condition variable, never spinning.
// Delivery threads never wait for each other: a `close()` called on a delivery thread (from inside any
// subscriber's callback) shuts the gate and returns, and the delivery under way elsewhere stops at its
// next callback boundary, which checks ``DeliveryGate/isOpen``.

import Primitives
public import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Whether a delivery may start, and whether one is under way, for one subscriber.
///
/// ```swift
/// // on a delivery thread
/// guard gate.enter() else { return }          // closed: deliver nothing
/// defer { gate.leave() }
/// for callback in callbacks where gate.isOpen { callback() }
/// // any thread, to unsubscribe
/// gate.close()                                // no callback starts after this returns
/// ```
///
/// After ``close()`` returns: no delivery enters; if it was called outside a delivery thread, none is under
/// way either. Called on a delivery thread (from inside a callback), it does not wait: the delivery under
/// way on another thread, if any, may be finishing its current callback, and starts no further one when it
/// checks ``isOpen`` between callbacks.
public final class DeliveryGate: Sendable {
  // Bits of `state`.
  @usableFromInline static let closed: UInt8 = 1
  @usableFromInline static let delivering: UInt8 = 2
  @usableFromInline static let waiter: UInt8 = 4

  @usableFromInline let state = Atomic<UInt8>(0)

  /// An open gate with no delivery under way.
  public init() {}

  /// Starts a delivery: true unless the gate is closed (then nothing may be delivered).
  @inlinable
  public func enter() -> Bool {
    // Relaxed: a snapshot to start from; the exchange below orders.
    var observed = state.load(ordering: .relaxed)
    while true {
      if observed & Self.closed != 0 { return false }
      // Sequentially consistent, with `close()`'s fetch-or: either this sees CLOSED, or `close()` sees
      // DELIVERING and waits.
      let (exchanged, original) = state.compareExchange(
        expected: observed, desired: observed | Self.delivering, ordering: .sequentiallyConsistent)
      if exchanged { return true }
      observed = original
    }
  }

  /// Whether the gate is open: checked between callbacks, so a delivery stops as soon as it is closed.
  @inlinable
  public var isOpen: Bool {
    // Acquire: pairs with `close()`'s sequentially consistent fetch-or.
    state.load(ordering: .acquiring) & Self.closed == 0
  }

  /// Ends the delivery `enter()` started; wakes a `close()` waiting for it.
  @inlinable
  public func leave() {
    // Sequentially consistent, with `close()`: its waiter bit is either seen here or its re-check under the
    // mutex sees DELIVERING cleared.
    let before = state.bitwiseAnd(~(Self.delivering | Self.waiter), ordering: .sequentiallyConsistent).oldValue
    if before & Self.waiter != 0 { DeliveryGateWaiting.shared.wakeAll() }
  }

  /// Closes the gate: no delivery enters after this. Waits for one under way unless called on a delivery
  /// thread (``DeliveryThread/isCurrent``), where waiting could deadlock two subscribers that close each
  /// other. Idempotent; any thread.
  public func close() {
    let before = state.bitwiseOr(Self.closed, ordering: .sequentiallyConsistent).oldValue
    guard before & Self.delivering != 0, !DeliveryThread.isCurrent else { return }
    // Announce a waiter, unless the delivery left meanwhile.
    var observed = state.load(ordering: .sequentiallyConsistent)
    while observed & Self.delivering != 0 {
      let (exchanged, original) = state.compareExchange(
        expected: observed, desired: observed | Self.waiter, ordering: .sequentiallyConsistent)
      if exchanged {
        DeliveryGateWaiting.shared.wait { self.state.load(ordering: .sequentiallyConsistent) & Self.delivering == 0 }
        return
      }
      observed = original
    }
  }
}

/// The one lock and condition that closing gates wait on (a cold path: only a `close()` that finds a delivery
/// under way on another thread waits, for one callback's time).
@usableFromInline
final class DeliveryGateWaiting: Sendable {
  @usableFromInline static let shared = DeliveryGateWaiting()

  private let lock = Locked((), conditions: 1)

  private init() {}

  /// Blocks until `done()` holds, re-checking it under the mutex after every wake.
  func wait(until done: () -> Bool) {
    lock.withLockWaiting { held in
      while !done() { held.wait() }
    }
  }

  /// Wakes every waiter; each re-checks its own condition.
  @usableFromInline
  func wakeAll() {
    // Under the mutex: a waiter between its check and its wait holds it, so the wake cannot fall between.
    lock.withLock { lock.broadcast() }
  }
}

/// Whether the calling thread is a delivery thread (a worker of any ``DeliveryExecutor``).
public enum DeliveryThread {
  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    let rc = pthread_key_create(&key, nil)
    precondition(rc == 0, "pthread_key_create failed: \(rc)")
    return key
  }()

  /// True on a delivery thread: code running inside a subscriber's callback.
  public static var isCurrent: Bool { pthread_getspecific(key) != nil }

  /// Marks the calling thread as a delivery thread, for its lifetime.
  static func markCurrent() {
    // Unsafe pointer: a non-nil marker value, never dereferenced.
    pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
  }
}
