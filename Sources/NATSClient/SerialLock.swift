// Sources/NATSClient/SerialLock.swift - a pthread mutex that serializes blocking calls on one libnats object

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

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
