// Sources/UpdatePipeline/LockedValue.swift - a pthread mutex and the state it guards, for the cold paths
//
// `Synchronization.Mutex` would do, but on Linux its futex-based lock lives in the uninstrumented standard
// library, so ThreadSanitizer cannot see it order anything and reports every access it guards as a race.
// pthread mutexes are intercepted by ThreadSanitizer. Only cold paths lock (registration, the executor's
// overflow list, stream termination), so the difference in cost does not matter.

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A value guarded by a pthread mutex.
///
/// `@unchecked Sendable`: `state` is only touched inside `withLock`, under the mutex; `State` values cross
/// threads only through that critical section.
final class LockedValue<State>: @unchecked Sendable {
  // Unsafe pointer: a pthread mutex must not move; allocated in init, destroyed and freed in deinit.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private var state: State

  /// Wraps `state`.
  init(_ state: State) {
    self.state = state
    mutex = .allocate(capacity: 1)
    pthread_mutex_init(mutex, nil)
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  /// Runs `body` with exclusive access to the state.
  func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&state)
  }
}
