// Sources/NATSClient/Locked.swift - a pthread mutex around a value, for state shared with libnats' threads
//
// `Synchronization.Mutex` would do, but on Linux ThreadSanitizer cannot see the ordering it provides (it
// uses futexes directly) and reports every access it guards as a race. A pthread mutex is intercepted by
// TSan, so sanitizer runs stay meaningful. The locks here guard short, cold sections: registrations,
// event bookkeeping, ack outcomes; one may also be held across a blocking libnats call on a pool thread
// (a subscription's fetch, a message's acks), where only calls on the same object wait for it.

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A value guarded by a pthread mutex.
///
/// `@unchecked Sendable`: `value` is only read or written inside `withLock`, under the mutex; what is
/// stored must itself be safe to hand between threads (Sendable values, or objects only touched under
/// the lock).
final class Locked<Value>: @unchecked Sendable {
  // Unsafe pointer: the mutex lives at one heap address for its whole life, as pthreads requires.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private var value: Value

  /// Guards `value`.
  init(_ value: Value) {
    self.value = value
    mutex = .allocate(capacity: 1)
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with exclusive access to the value. `body` must not release the last reference to an
  /// object whose deinit takes this lock again.
  @inline(__always)
  func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}

/// A pthread mutex that serializes calls on one libnats object (a subscription's fetches, a message's
/// acks); held across the blocking call, on a pool thread.
final class SerialLock: @unchecked Sendable {
  // @unchecked: the mutex is only used through pthread calls, which are thread-safe.
  // Unsafe pointer: the mutex lives at one heap address for its whole life, as pthreads requires.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>

  init() {
    mutex = .allocate(capacity: 1)
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` while holding the mutex.
  @inline(__always)
  func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body()
  }
}
