// Sources/NATSClient/BlockingThreadPool.swift - the module's own threads for libnats' blocking calls
//
// libnats' calls block the calling thread: connecting, every JetStream API request, publishing with an
// ack, fetching, flushing, even a plain publish when the outgoing buffer is full. None of them may run on
// Swift's cooperative thread pool (a handful of threads shared by every task) or on another library's
// event loop. Every such call runs here instead: an async API submits a job and suspends its task; a
// thread of this pool makes the call and resumes the task.
//
// The pool is elastic: a job that finds no idle thread starts a new one (up to `maxThreads`), so a long
// `fetch` never delays a short publish. Threads that stay idle for `idleTimeout` exit, down to
// `threadsKept`. Jobs beyond `maxThreads` wait in FIFO order.

internal import CNATS
import Primitives

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The threads on which NATSClient makes libnats' blocking calls (see the file comment).
final class BlockingThreadPool: @unchecked Sendable {
  // @unchecked: the job queue and the counters are touched only with `lock` held; the rest is immutable.

  /// The pool every NATSClient object uses; it lives as long as the process.
  static let shared = BlockingThreadPool(name: "nats", maxThreads: 256, threadsKept: 2, idleTimeoutSeconds: 20)

  private let name: String
  private let maxThreads: Int
  private let threadsKept: Int
  private let idleTimeoutSeconds: Int

  private struct State {
    var queue: [(@Sendable () -> Void)?] = []
    var queueHead = 0
    var threads = 0
    var idleThreads = 0
    var threadsStarted = 0
  }

  /// The queue and the thread counts; its condition is "work available".
  private let state = Locked(State(), conditions: 1)

  init(name: String, maxThreads: Int, threadsKept: Int, idleTimeoutSeconds: Int) {
    precondition(maxThreads >= 1 && threadsKept >= 0 && idleTimeoutSeconds >= 1)
    self.name = name
    self.maxThreads = maxThreads
    self.threadsKept = threadsKept
    self.idleTimeoutSeconds = idleTimeoutSeconds
  }

  /// Runs `job` on a pool thread. Never blocks the caller (beyond a short mutex) and never runs `job` inline.
  func submit(_ job: @escaping @Sendable () -> Void) {
    let (start, index) = state.withLock { state -> (Bool, Int) in
      state.queue.append(job)
      let queued = state.queue.count - state.queueHead
      // Every queued job needs an idle thread of its own; start one when there are fewer idle threads than jobs.
      let start = queued > state.idleThreads && state.threads < maxThreads
      if start {
        state.threads += 1
        state.threadsStarted += 1
      }
      if state.idleThreads > 0 { self.state.signal() }
      return (start, state.threadsStarted)
    }
    if start { startThread(index: index) }
  }

  /// Runs `body` on a pool thread and returns its result to the calling task, which stays suspended meanwhile.
  func run<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
    await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
      submit { continuation.resume(returning: body()) }
    }
  }

  /// Runs `body` on a pool thread; returns its value or throws its error.
  func run<Value: Sendable>(
    _ body: @escaping @Sendable () throws(NATSError) -> Value
  ) async throws(NATSError) -> Value {
    let result: Result<Value, NATSError> = await run { () -> Result<Value, NATSError> in
      do throws(NATSError) {
        return .success(try body())
      } catch {
        return .failure(error)
      }
    }
    return try result.get()
  }

  /// The number of pool threads alive now (for tests and diagnostics).
  var threadCount: Int {
    state.withLock { $0.threads }
  }

  /// The next job for this thread, waiting for one; nil when the thread is to end (idle beyond the timeout
  /// while more than `threadsKept` threads live).
  private func nextJob() -> (@Sendable () -> Void)? {
    state.withLockWaiting { held in
      while true {
        if held.value.queueHead < held.value.queue.count {
          let job = held.value.queue[held.value.queueHead].take()
          held.value.queueHead += 1
          if held.value.queueHead == held.value.queue.count {
            held.value.queue.removeAll(keepingCapacity: held.value.queue.count <= 1024)
            held.value.queueHead = 0
          }
          return job
        }
        held.value.idleThreads += 1
        var woken = true
        if held.value.threads > threadsKept {
          woken = held.wait(untilMonotonic: monotonicNanoseconds() + UInt64(idleTimeoutSeconds) * 1_000_000_000)
        } else {
          held.wait()
        }
        held.value.idleThreads -= 1
        if !woken && held.value.queueHead == held.value.queue.count && held.value.threads > threadsKept {
          held.value.threads -= 1
          return nil
        }
      }
    }
  }

  /// Runs `job`; being `consuming`, it is released by the time this returns.
  @inline(never)
  private static func runAndRelease(_ job: consuming (@Sendable () -> Void)?) {
    job?()
  }

  private func startThread(index: Int) {
    // The thread holds one retain of its start record (and through it the pool) until it exits.
    let start = Unmanaged.passRetained(ThreadStart(pool: self, index: index))
    var thread = pthread_t()
    let rc = pthread_create(
      &thread, nil,
      { raw in
        // Unsafe pointer: `raw` is the retained `ThreadStart` passed below; taken back exactly once.
        let start = Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue()
        start.pool.runWorker(index: start.index)
        return nil
      }, start.toOpaque())
    precondition(rc == 0, "pthread_create failed: \(rc)")
    pthread_detach(thread)
  }

  private func runWorker(index: Int) {
    nameCurrentThread("\(name)-\(index)")
    while let job = nextJob() {
      // The job (and whatever it captured) must be released before the lock is taken again: a deinit it
      // triggers may submit a job of its own.
      Self.runAndRelease(consume job)
    }
    // libnats keeps per-thread state (the last error); give it back before the thread ends.
    nats_ReleaseThreadMemory()
  }
}

/// What a new pool thread needs, passed through `pthread_create`'s argument.
private final class ThreadStart {
  let pool: BlockingThreadPool
  let index: Int

  init(pool: BlockingThreadPool, index: Int) {
    self.pool = pool
    self.index = index
  }
}

/// Names the calling thread (at most 15 bytes, the kernel's limit), so that pool threads show up in tools.
private func nameCurrentThread(_ name: String) {
  guard let setName = setThreadName else { return }
  _ = String(decoding: name.utf8.prefix(15), as: UTF8.self).withCString { setName(pthread_self(), $0) }
}

/// `pthread_setname_np`, looked up at run time: Glibc declares it only under `_GNU_SOURCE`, which the
/// Swift overlay does not set.
private let setThreadName: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32)? = {
  guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "pthread_setname_np") else { return nil }
  // Unsafe cast: the symbol is glibc's `int pthread_setname_np(pthread_t, const char *)`.
  return unsafeBitCast(symbol, to: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32).self)
}()
