// Sources/Primitives/Locked.swift - a pthread mutex around a value, for cold cross-thread state
//
// `Synchronization.Mutex` would do, but on Linux ThreadSanitizer cannot see the
// ordering it provides (it uses futexes directly) and reports every access it
// guards as a race. A pthread mutex is intercepted by TSan, so the sanitizer runs
// stay meaningful. Used only off the hot path: task hand-off to a loop, call
// set-up and completion, registration.

#if canImport(Glibc)
  import Glibc
#endif

/// A value guarded by a pthread mutex.
///
/// `@unchecked Sendable`: `value` is only read or written inside `withLock`, under the mutex.
package final class Locked<Value>: @unchecked Sendable {
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private var value: Value

  /// Guards `value`.
  package init(_ value: Value) {
    self.value = value
    // The mutex lives at a stable heap address for its whole life, as pthreads requires.
    mutex = .allocate(capacity: 1)
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with exclusive access to the value.
  @inline(__always)
  package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
    -> Result
  {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&value)
  }
}
