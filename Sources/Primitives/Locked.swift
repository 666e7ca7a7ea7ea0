// Sources/Primitives/Locked.swift - the one lock: a pthread mutex around a value, with conditions to wait on
//
// `Synchronization.Mutex` would do, but on Linux ThreadSanitizer cannot see the ordering it provides (it uses
// futexes directly) and reports every access it guards as a race. A pthread mutex is intercepted by TSan, so
// the sanitizer runs stay meaningful. Every lock in the package is a `Locked`: cold cross-thread state (task
// hand-off to a loop, call set-up and completion, registration), the delivery threads' parking, the NATS
// thread pool, the serialization of blocking libnats calls (`Locked<Void>`). A `Locked` made with conditions
// also lets a holder wait (``withLockWaiting(_:)``), releasing the mutex meanwhile.

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A value only reachable with its mutex held.
///
/// `@unchecked Sendable`: `value` is read and written only between `pthread_mutex_lock` and `_unlock`.
package final class Locked<Value>: @unchecked Sendable {
  // Unsafe pointers: the mutex and conditions live at stable heap addresses for their whole life, as pthreads
  // requires.
  fileprivate let mutex: UnsafeMutablePointer<pthread_mutex_t>
  fileprivate let conditions: UnsafeMutablePointer<pthread_cond_t>
  fileprivate let conditionCount: Int
  fileprivate var value: Value

  /// `value` behind a mutex, with `conditions` condition variables (on the monotonic clock) to wait on.
  package init(_ value: Value, conditions: Int = 0) {
    self.value = value
    // One allocation for the mutex and its conditions (two made every per-trip lock cost two mallocs).
    let block = UnsafeMutableRawPointer.allocate(
      byteCount: Self.conditionsOffset + max(0, conditions) * MemoryLayout<pthread_cond_t>.stride,
      alignment: max(MemoryLayout<pthread_mutex_t>.alignment, MemoryLayout<pthread_cond_t>.alignment))
    mutex = block.bindMemory(to: pthread_mutex_t.self, capacity: 1)
    pthread_mutex_init(mutex, nil)
    conditionCount = max(0, conditions)
    // With no conditions this points just past the mutex and is never dereferenced (`signal`, `broadcast` and
    // `wait` check the index first).
    self.conditions = (block + Self.conditionsOffset).bindMemory(to: pthread_cond_t.self, capacity: conditionCount)
    if conditions > 0 {
      var attributes = pthread_condattr_t()
      pthread_condattr_init(&attributes)
      pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
      for index in 0..<conditions { pthread_cond_init(self.conditions + index, &attributes) }
      pthread_condattr_destroy(&attributes)
    }
  }

  /// Where the conditions start in the block: after the mutex, aligned for a condition.
  private static var conditionsOffset: Int {
    let alignment = MemoryLayout<pthread_cond_t>.alignment
    return (MemoryLayout<pthread_mutex_t>.stride + alignment - 1) / alignment * alignment
  }

  deinit {
    for index in 0..<conditionCount { pthread_cond_destroy(conditions + index) }
    pthread_mutex_destroy(mutex)
    UnsafeMutableRawPointer(mutex).deallocate()
  }

  /// Runs `body` with the mutex held.
  @inline(__always)
  package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
    -> Result
  {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }

  /// Runs `body` with the mutex held and a ``Held`` through which it reads and writes the value and waits on
  /// this lock's conditions.
  ///
  /// Not `withLock`'s `inout` value: a waiter must see what other threads changed while it waited, and an `inout`
  /// access lets the compiler keep the value in registers for its whole duration (waiting loops then never end in
  /// optimized builds). Every access through ``Held/value`` reads the value anew.
  package func withLockWaiting<Result, Failure: Error>(_ body: (Held) throws(Failure) -> Result) throws(Failure)
    -> Result
  {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(Held(lock: self))
  }

  /// Wakes one thread waiting on `condition` (it re-checks what it waits for under the mutex).
  package func signal(_ condition: Int = 0) {
    precondition(condition < conditionCount, "no such condition")
    pthread_cond_signal(conditions + condition)
  }

  /// Wakes every thread waiting on `condition`.
  package func broadcast(_ condition: Int = 0) {
    precondition(condition < conditionCount, "no such condition")
    pthread_cond_broadcast(conditions + condition)
  }

  /// The value and the conditions of a lock whose mutex ``withLockWaiting(_:)`` holds. Waiting releases the mutex
  /// and takes it again before returning; wakes can be spurious: wait in a loop over what is awaited.
  package struct Held {
    fileprivate let lock: Locked

    /// The value, read anew at each access (other threads may change it while this one waits).
    package var value: Value {
      get { lock.value }
      nonmutating _modify { yield &lock.value }
    }

    /// Waits for a wake on `condition`.
    package func wait(_ condition: Int = 0) {
      precondition(condition < lock.conditionCount, "no such condition")
      pthread_cond_wait(lock.conditions + condition, lock.mutex)
    }

    /// Waits for a wake on `condition` until `deadline` on the monotonic clock (nanoseconds); false when the
    /// deadline passed first.
    package func wait(_ condition: Int = 0, untilMonotonic deadline: UInt64) -> Bool {
      precondition(condition < lock.conditionCount, "no such condition")
      var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
      return pthread_cond_timedwait(lock.conditions + condition, lock.mutex, &time) != ETIMEDOUT
    }
  }
}

extension Locked where Value == Void {
  /// A mutex that guards no value: it serializes what runs under it.
  package convenience init() { self.init(()) }

  /// Runs `body` with the mutex held.
  ///
  /// No access to the (empty) value: ThreadSanitizer places an empty stored property at the object's own
  /// address, where the generic class's metadata is read without the mutex, and reported the pair as a race.
  @inline(__always)
  package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }
}
