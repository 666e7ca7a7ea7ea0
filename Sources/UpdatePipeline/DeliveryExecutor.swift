// Sources/UpdatePipeline/DeliveryExecutor.swift - a fixed pool of delivery threads fed by a lock-free ring
//
// Submitting is a slot claim in a bounded MPMC ring (BoundedJobQueue) plus, only when some worker is
// parked, one mutex/condvar signal. Idle workers park on a pthread condition variable; a count of parked
// workers that submitters read after a sequentially consistent fence (Dekker style, against the worker's
// fence between announcing itself and re-checking the queue) makes sure no submission is missed.
// When the ring is full, jobs go to a mutex-protected overflow list (cold path, counted).

import Primitives
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Something a ``DeliveryExecutor`` runs; typically one subscriber's "take and call back" step.
public protocol DeliveryJob: AnyObject, Sendable {
  /// Does the job's work on a delivery thread.
  func runDelivery()
}

/// A fixed pool of delivery threads fed by a lock-free bounded MPMC queue (Vyukov's algorithm: a sequence
/// number per slot, capacity a power of two).
///
/// - `submit(_:)` never blocks and never allocates in steady state: one compare-and-swap to claim a slot,
///   one store to publish it, one fence and one load to see whether a worker is parked; it takes the
///   parking mutex only to wake a parked worker (at most one wake per parked worker, however many jobs
///   arrive). When the ring is full it appends to a mutex-protected overflow list instead (cold path,
///   counted in ``overflowCount``); nothing is ever dropped or blocks the caller.
/// - Jobs start in submission order as far as the ring goes (jobs from the overflow list are taken first
///   when there are any); with several threads they run concurrently, so they are not ordered otherwise.
/// - Blocking bound: with W threads, up to W − 1 jobs blocked inside their callbacks (slow or stuck
///   subscribers) do not delay any other job: every idle worker takes the next job from the shared queue,
///   and one free worker keeps the whole queue moving. Only W jobs blocked at once stall delivery.
///   (Vyukov's queue is lock-free in the weak sense: a submitter descheduled between claiming a slot and
///   publishing it, a few instructions, holds back the jobs behind that slot until it runs again.)
/// - Idle workers poll briefly, then park on a condition variable; a submission wakes one only when a
///   worker is parked (an atomic count of sleepers, read after a fence).
/// - Memory: 24 bytes per ring slot (6 MiB at the default capacity of 2^18), allocated once.
/// - Dropping the last reference shuts the pool down like ``shutdown()``.
public final class DeliveryExecutor: Sendable {
  private let pool: DeliveryWorkerPool
  /// Jobs queued by ``submitWithoutWaking(_:)`` since the last wake.
  private let queuedWithoutWake = Atomic<Int>(0)

  /// Jobs ``submitWithoutWaking(_:)`` queues before it wakes a worker itself, without waiting for
  /// ``wakeIfNeeded()``: it keeps a long batch (a megabyte of messages in one socket read) from holding
  /// every delivery back until its end.
  public static let wakeBatch = 16

  /// Starts `threads` worker threads (named `name-0`, `name-1`, …) over a ring of `capacity` jobs, a power of
  /// two of at least 2.
  public init(threads: Int = 4, capacity: Int = 1 << 18, name: String = "delivery") {
    precondition(threads >= 1, "a delivery executor needs at least one thread")
    pool = DeliveryWorkerPool(threads: threads, capacity: capacity, name: name)
    pool.start()
  }

  deinit {
    pool.shutdown()
  }

  /// Enqueues `job` (retained until it has run). Any thread; never blocks the caller and never allocates
  /// in steady state; if the ring is full, falls back to a mutex-protected overflow list (cold path,
  /// counted in ``overflowCount``).
  ///
  /// A job submitted while ``shutdown()`` drains runs if a worker is still there to take it; one submitted
  /// after the last worker exited (for example after `shutdown()` returned) is released without running.
  public func submit(_ job: any DeliveryJob) {
    pool.submit(job, wake: true)
  }

  /// Enqueues `job` like ``submit(_:)`` but leaves parked workers asleep: a producer that hands over
  /// many jobs in one go (an event loop draining a socket read) calls ``wakeIfNeeded()`` once after the
  /// batch instead of paying a futex wake per job. Every ``wakeBatch`` jobs it wakes a worker itself;
  /// until then, or until ``wakeIfNeeded()``, the job may wait for a worker that is already awake.
  public func submitWithoutWaking(_ job: any DeliveryJob) {
    pool.submit(job, wake: false)
    // Relaxed: a count that only paces wakes; the pool's own fences order the jobs.
    if queuedWithoutWake.wrappingAdd(1, ordering: .relaxed).newValue >= Self.wakeBatch { wakeIfNeeded() }
  }

  /// Wakes one parked worker if jobs are queued (it wakes another while it finds more). Any thread.
  public func wakeIfNeeded() {
    // Relaxed: as above.
    queuedWithoutWake.store(0, ordering: .relaxed)
    pool.wakeForQueuedWork()
  }

  /// How many jobs went to the overflow list because the ring was full (since creation).
  public var overflowCount: Int { pool.overflowCount }

  /// The number of worker threads.
  public var threadCount: Int { pool.threadCount }

  /// Whether a job is queued or running now. A snapshot, for tests that wait until deliveries are done.
  package var hasPendingWork: Bool { pool.hasPendingWork }

  /// Stops the threads after the queued jobs have run; waits for them unless called from one of them.
  /// Idempotent.
  public func shutdown() {
    pool.shutdown()
  }
}

/// The jobs that did not fit in the ring, first in first out.
private struct OverflowList {
  var items: [(any DeliveryJob)?] = []
  var head = 0

  mutating func append(_ job: any DeliveryJob) {
    items.append(job)
  }

  mutating func popFirst() -> (any DeliveryJob)? {
    guard head < items.count else { return nil }
    let job = items[head].take()
    head += 1
    if head == items.count {
      items.removeAll(keepingCapacity: items.count <= 1024)
      head = 0
    }
    return job
  }
}

/// State guarded by the pool's `parking` lock.
private struct ParkingState {
  /// Wakes granted by submitters (each took one unit from `sleepers`) and not yet consumed by a worker.
  var wakeTokens = 0
  /// Worker threads that have not exited.
  var liveWorkers = 0
  /// The worker threads' ids, to recognize a shutdown called from inside a job.
  var workerThreads: [pthread_t] = []
}

/// The threads, ring, overflow list and parking state behind a ``DeliveryExecutor``. Each worker thread
/// holds a reference until it exits, so the pool outlives the executor's last user until it has drained.
///
/// `@unchecked Sendable`: the pthread mutex and condition variables live in raw memory (they must not move)
/// and `parking` is plain state guarded by that mutex; everything else is atomic, a `Locked`, or
/// immutable.
final class DeliveryWorkerPool: @unchecked Sendable {
  let threadCount: Int
  private let name: String
  private let queue: BoundedJobQueue
  private let overflow = Locked(OverflowList())
  /// Jobs in the overflow list (changed under its mutex; read without it as a hint).
  private let overflowPending = Atomic<Int>(0)
  private let overflowTotal = Atomic<Int>(0)
  /// Parked (or parking) workers that no submitter has claimed a wake for yet.
  private let sleepers = Atomic<Int>(0)
  private let stopping = Atomic<Bool>(false)
  /// Jobs running now.
  private let running = Atomic<Int>(0)
  /// Set by the last worker to exit; from then on submitters release what they queued.
  private let exited = Atomic<Bool>(false)

  /// The workers' parking: tokens, live workers, their threads. Condition 0: a wake (token or shutdown);
  /// condition 1: the last worker exited.
  private let parking = Locked(ParkingState(), conditions: 2)
  private static let wakeCondition = 0
  private static let exitCondition = 1

  init(threads: Int, capacity: Int, name: String) {
    threadCount = threads
    self.name = name
    queue = BoundedJobQueue(capacity: capacity)
  }

  /// Starts the worker threads; called once, right after init.
  func start() {
    parking.withLock { $0.liveWorkers = threadCount }
    for index in 0..<threadCount {
      // The thread holds one retain of its start record (and through it the pool) until it exits.
      let start = Unmanaged.passRetained(WorkerStart(pool: self, index: index))
      var thread = pthread_t()
      let rc = pthread_create(
        &thread, nil,
        { raw in
          // Unsafe pointer: `raw` is the retained `WorkerStart` passed below; taken back exactly once.
          let start = Unmanaged<WorkerStart>.fromOpaque(raw!).takeRetainedValue()
          start.pool.runWorker(index: start.index)
          return nil
        }, start.toOpaque())
      precondition(rc == 0, "pthread_create failed: \(rc)")
      pthread_detach(thread)
    }
  }

  var overflowCount: Int {
    // Relaxed: a statistics counter.
    overflowTotal.load(ordering: .relaxed)
  }

  // MARK: - Submitting

  func submit(_ job: any DeliveryJob, wake: Bool) {
    if !queue.tryEnqueue(job) {
      overflow.withLock { list in
        list.append(job)
        // Relaxed: the mutex orders the list; the counter is a hint read before taking the mutex.
        overflowPending.add(1, ordering: .relaxed)
      }
      // Relaxed: a statistics counter.
      overflowTotal.add(1, ordering: .relaxed)
    }
    // Sequentially consistent fence: orders the job's publication before the reads of `sleepers` and
    // `exited`; a parking worker has the mirror-image fence between raising `sleepers` and re-checking for
    // jobs, the last exiting worker between setting `exited` and discarding what is queued. So either this
    // sees the sleeper (the exit) or the worker sees the job.
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    // Relaxed: ordered by the fence above.
    if exited.load(ordering: .relaxed) {
      discardQueuedJobs()
      return
    }
    if wake { wakeOneIfParked() }
  }

  /// Wakes one parked worker if there is queued work (after jobs were submitted without waking).
  func wakeForQueuedWork() {
    // Sequentially consistent fence: as in `submit`, so either this sees the sleeper or the parking
    // worker sees the jobs.
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    if hasWork { wakeOneIfParked() }
  }

  /// Called after the submitter's fence (see `submit`).
  private func wakeOneIfParked() {
    // Relaxed: ordered by the submitter's fence.
    var parked = sleepers.load(ordering: .relaxed)
    while parked > 0 {
      // Relaxed: claiming a wake publishes nothing; the token is handed over under the mutex.
      let (exchanged, original) = sleepers.weakCompareExchange(
        expected: parked, desired: parked - 1, ordering: .relaxed)
      if exchanged {
        parking.withLock { state in
          state.wakeTokens += 1
          parking.signal(Self.wakeCondition)
        }
        return
      }
      parked = original
    }
  }

  // MARK: - Working

  private func runWorker(index: Int) {
    nameCurrentThread("\(name)-\(index)")
    DeliveryThread.markCurrent()
    parking.withLock { $0.workerThreads.append(pthread_self()) }

    while true {
      // Counted as running from before the dequeue, so that `hasPendingWork` never sees a job that has left
      // the queue and not yet started (a caller waiting for deliveries to finish would move on in that gap).
      // Sequentially consistent: ordered before the dequeue, against `hasPendingWork`'s fence.
      running.add(1, ordering: .sequentiallyConsistent)
      if let job = nextJob() {
        // More waiting behind this one: share it with a parked worker (jobs submitted in a batch
        // woke only one).
        // Relaxed: a hint; a worker missed here only means less parallelism, never a lost job.
        if sleepers.load(ordering: .relaxed) > 0 && hasWork { wakeOneIfParked() }
        job.runDelivery()
        // Releasing: the job's effects come before the count that says it is done.
        running.subtract(1, ordering: .releasing)
        continue
      }
      // Relaxed: nothing was taken.
      running.subtract(1, ordering: .relaxed)
      // Acquire: pairs with shutdown's release (nothing else is published with it, but it is cheap).
      if stopping.load(ordering: .acquiring) {
        // Relaxed: a hint; the list itself is read under its mutex by `nextJob`.
        if queue.isDrained && overflowPending.load(ordering: .relaxed) == 0 { break }
        sched_yield()  // a submitter is between claiming a slot and publishing it
        continue
      }
      if spinForWork() { continue }
      park()
    }

    let last = parking.withLock { state -> Bool in
      state.liveWorkers -= 1
      guard state.liveWorkers == 0 else { return false }
      // Relaxed: ordered by the fence below (and the mutex for `shutdown`).
      exited.store(true, ordering: .relaxed)
      parking.broadcast(Self.exitCondition)
      return true
    }
    if last {
      // Sequentially consistent fence: the mirror of the submitter's (see `submit`).
      atomicMemoryFence(ordering: .sequentiallyConsistent)
      discardQueuedJobs()
    }
  }

  /// Releases, without running them, jobs submitted while or after the last worker exited.
  private func discardQueuedJobs() {
    while nextJob() != nil {}
  }

  private func nextJob() -> (any DeliveryJob)? {
    // Relaxed: a hint that saves the mutex when the overflow list is empty (the usual case).
    if overflowPending.load(ordering: .relaxed) > 0 {
      let job = overflow.withLock { list -> (any DeliveryJob)? in
        guard let job = list.popFirst() else { return nil }
        // Relaxed: the mutex orders the list.
        overflowPending.subtract(1, ordering: .relaxed)
        return job
      }
      if let job { return job }
    }
    return queue.dequeue()
  }

  /// Polls briefly (64 looks, well under a microsecond) before parking, so jobs arriving just after the
  /// queue ran dry cost no futex round trip.
  private func spinForWork() -> Bool {
    for _ in 0..<64 {
      if hasWork { return true }
    }
    return false
  }

  /// Whether a job is queued, in the overflow list, or running (a snapshot).
  var hasPendingWork: Bool {
    if hasWork { return true }
    // A job that left the queue was counted in `running` before it left: the fence orders this read of
    // `running` after the look at the queue.
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    return running.load(ordering: .sequentiallyConsistent) > 0
  }

  private var hasWork: Bool {
    // Relaxed: a hint while spinning; in `park` the fence just before orders it.
    overflowPending.load(ordering: .relaxed) > 0 || queue.hasReadyJob
  }

  /// Sleeps until a submitter grants a wake or shutdown starts, unless work shows up while announcing.
  private func park() {
    parking.withLockWaiting { held in
      // Relaxed: ordered by the fence below.
      sleepers.add(1, ordering: .relaxed)
      // Sequentially consistent fence: the mirror of the submitter's (see `submit`).
      atomicMemoryFence(ordering: .sequentiallyConsistent)
      // Relaxed (stopping): shutdown also broadcasts under the mutex, so a wait below cannot miss it.
      if hasWork || stopping.load(ordering: .relaxed) {
        withdrawSleeper(held)
        return
      }
      while held.value.wakeTokens == 0 && !stopping.load(ordering: .relaxed) { held.wait(Self.wakeCondition) }
      if held.value.wakeTokens > 0 {
        held.value.wakeTokens -= 1
      } else {
        withdrawSleeper(held)
      }
    }
  }

  /// Gives back this worker's unit in `sleepers`; if submitters have already claimed every unit, one of
  /// them is about to post a token, so waits for it and consumes it. Called with the mutex held.
  private func withdrawSleeper(_ held: Locked<ParkingState>.Held) {
    // Relaxed: the count is only arithmetic here; tokens are handed over under the mutex.
    var parked = sleepers.load(ordering: .relaxed)
    while parked > 0 {
      let (exchanged, original) = sleepers.weakCompareExchange(
        expected: parked, desired: parked - 1, ordering: .relaxed)
      if exchanged { return }
      parked = original
    }
    while held.value.wakeTokens == 0 { held.wait(Self.wakeCondition) }
    held.value.wakeTokens -= 1
  }

  // MARK: - Stopping

  func shutdown() {
    // Release: pairs with the workers' acquiring load.
    stopping.store(true, ordering: .releasing)
    parking.withLockWaiting { held in
      parking.broadcast(Self.wakeCondition)
      let current = pthread_self()
      guard !held.value.workerThreads.contains(where: { pthread_equal($0, current) != 0 }) else { return }
      while held.value.liveWorkers > 0 { held.wait(Self.exitCondition) }
    }
  }
}

/// `pthread_setname_np`, looked up at run time: Glibc declares it only under `_GNU_SOURCE`, which the
/// Swift overlay does not set.
private let setThreadName: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32)? = {
  guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "pthread_setname_np") else { return nil }
  // Unsafe cast: the symbol is glibc's `int pthread_setname_np(pthread_t, const char *)`, which is exactly
  // this C function type.
  return unsafeBitCast(symbol, to: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32).self)
}()

/// Names the calling thread (for debuggers and `top -H`), cut to Linux's 15-byte limit.
private func nameCurrentThread(_ name: String) {
  guard let setThreadName else { return }
  var bytes = Array(name.utf8.prefix(15)).map { CChar(bitPattern: $0) }
  bytes.append(0)
  _ = setThreadName(pthread_self(), bytes)
}

/// What a new worker thread receives: its pool and its index.
private final class WorkerStart {
  let pool: DeliveryWorkerPool
  let index: Int

  init(pool: DeliveryWorkerPool, index: Int) {
    self.pool = pool
    self.index = index
  }
}
