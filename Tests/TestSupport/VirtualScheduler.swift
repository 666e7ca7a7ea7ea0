// Tests/TestSupport/VirtualScheduler.swift - a scheduler whose clock moves only when the test says
//
// A stand-in for an event loop in tests: work queued with `execute` runs on the scheduler's own thread
// in order, as on a loop, but timers fire only when the test advances the virtual clock, in due order,
// each after everything it queued has run. A test that follows a trip for an hour of simulated time runs
// in milliseconds and sees the same interleaving every time.

public import GRPCProtocol

#if canImport(Glibc)
  import Glibc
#endif

/// A ``GRPCScheduler`` on a virtual clock, for tests.
///
/// `@unchecked Sendable`: the queue, timers and clock are guarded by one pthread mutex (which
/// ThreadSanitizer sees); tasks run on the scheduler's one thread.
public final class VirtualScheduler: GRPCScheduler, @unchecked Sendable {
  fileprivate struct Timer {
    var due: UInt64
    var id: GRPCTimerID
    var body: () -> Void

    func isBefore(_ other: Timer) -> Bool { (due, id) < (other.due, other.id) }
  }

  /// A binary min-heap of timers by (due, id): id breaks ties, so timers due together fire in the order
  /// they were scheduled.
  fileprivate struct TimerHeap {
    private var items: [Timer] = []
    var count: Int { items.count }
    var first: Timer? { items.first }

    mutating func push(_ timer: Timer) {
      items.append(timer)
      var child = items.count - 1
      while child > 0 {
        let parent = (child - 1) / 2
        guard items[child].isBefore(items[parent]) else { break }
        items.swapAt(child, parent)
        child = parent
      }
    }

    mutating func pop() -> Timer {
      let top = items[0]
      let last = items.removeLast()
      if !items.isEmpty {
        items[0] = last
        var parent = 0
        while true {
          let left = 2 * parent + 1
          let right = left + 1
          var smallest = parent
          if left < items.count && items[left].isBefore(items[smallest]) { smallest = left }
          if right < items.count && items[right].isBefore(items[smallest]) { smallest = right }
          if smallest == parent { break }
          items.swapAt(parent, smallest)
          parent = smallest
        }
      }
      return top
    }
  }

  // Unsafe pointers: pthread objects must not move; allocated in init, freed in deinit after the thread ended.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private let workAvailable: UnsafeMutablePointer<pthread_cond_t>
  private let idleChanged: UnsafeMutablePointer<pthread_cond_t>
  // Guarded by `mutex`.
  private var queue: [() -> Void] = []
  private var running = false
  private var stopping = false
  private var threadDone = false
  private var timers = TimerHeap()
  private var cancelled = Set<GRPCTimerID>()
  private var nextTimerID: GRPCTimerID = 1
  private var now: UInt64
  private let unixBase: Double
  private let startNanos: UInt64
  private var threadID = pthread_t()

  /// A scheduler whose clock starts at `unixTime` (wall) and a monotonic reading of 10^12 ns.
  public init(unixTime: Double = 1_800_000_000) {
    mutex = .allocate(capacity: 1)
    workAvailable = .allocate(capacity: 1)
    idleChanged = .allocate(capacity: 1)
    pthread_mutex_init(mutex, nil)
    pthread_cond_init(workAvailable, nil)
    pthread_cond_init(idleChanged, nil)
    startNanos = 1_000_000_000_000
    now = startNanos
    unixBase = unixTime
    let box = Unmanaged.passRetained(self)
    var thread = pthread_t()
    let rc = pthread_create(
      &thread, nil,
      { raw in
        // Unsafe pointer: the retained scheduler passed below; released when the thread ends.
        let scheduler = Unmanaged<VirtualScheduler>.fromOpaque(raw!).takeRetainedValue()
        scheduler.run()
        return nil
      }, box.toOpaque())
    precondition(rc == 0, "pthread_create failed")
    pthread_detach(thread)
    locked { threadID = thread }
  }

  deinit {
    pthread_cond_destroy(idleChanged)
    pthread_cond_destroy(workAvailable)
    pthread_mutex_destroy(mutex)
    idleChanged.deallocate()
    workAvailable.deallocate()
    mutex.deallocate()
  }

  private func locked<R>(_ body: () -> R) -> R {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return body()
  }

  private func run() {
    pthread_mutex_lock(mutex)
    while true {
      while queue.isEmpty && !stopping { pthread_cond_wait(workAvailable, mutex) }
      if queue.isEmpty && stopping { break }
      let task = queue.removeFirst()
      running = true
      pthread_mutex_unlock(mutex)
      task()
      pthread_mutex_lock(mutex)
      running = false
      if queue.isEmpty { pthread_cond_broadcast(idleChanged) }
    }
    threadDone = true
    pthread_cond_broadcast(idleChanged)
    pthread_mutex_unlock(mutex)
  }

  private func enqueue(_ task: @escaping () -> Void) {
    locked {
      queue.append(task)
      pthread_cond_signal(workAvailable)
    }
  }

  // MARK: GRPCScheduler

  public func execute(_ body: @escaping @Sendable () -> Void) { enqueue(body) }

  public func executeSoon(_ body: @escaping () -> Void) { enqueue(body) }

  public func scheduleTimer(after delay: Duration, _ body: @escaping () -> Void) -> GRPCTimerID {
    let nanos =
      UInt64(max(0, delay.components.seconds)) &* 1_000_000_000
      &+ UInt64(max(0, delay.components.attoseconds / 1_000_000_000))
    return locked {
      let id = nextTimerID
      nextTimerID += 1
      timers.push(Timer(due: now &+ nanos, id: id, body: body))
      return id
    }
  }

  public func cancelTimer(_ timer: GRPCTimerID) {
    locked { _ = cancelled.insert(timer) }
  }

  public var inScheduler: Bool { locked { pthread_equal(threadID, pthread_self()) != 0 } }

  public var monotonicNanoseconds: UInt64 { locked { now } }

  public var unixTime: Double { locked { unixBase + Double(now - startNanos) / 1e9 } }

  // MARK: Driving the clock (the test's thread, never the scheduler's)

  /// Blocks until no task is queued or running.
  public func waitUntilIdle() {
    pthread_mutex_lock(mutex)
    while (running || !queue.isEmpty) && !threadDone { pthread_cond_wait(idleChanged, mutex) }
    pthread_mutex_unlock(mutex)
  }

  /// Moves the clock forward by `duration`: fires every timer due by then, in due order, each once the work
  /// before it has run; returns once everything is idle at the new time.
  public func advance(by duration: Duration) {
    let nanos =
      UInt64(max(0, duration.components.seconds)) &* 1_000_000_000
      &+ UInt64(max(0, duration.components.attoseconds / 1_000_000_000))
    let target = locked { now &+ nanos }
    advance(to: target)
  }

  /// As ``advance(by:)``, in steps of `step`, for work that watches the clock between timers.
  public func advance(by duration: Duration, step: Duration) {
    var left = duration
    while left > .zero {
      let next = min(step, left)
      advance(by: next)
      left -= next
    }
  }

  private func advance(to target: UInt64) {
    while true {
      waitUntilIdle()
      let due: Timer? = locked {
        while let first = timers.first, first.due <= target {
          let timer = timers.pop()
          if cancelled.remove(timer.id) != nil { continue }
          now = max(now, timer.due)
          return timer
        }
        now = max(now, target)
        return nil
      }
      guard let due else { break }
      enqueue(due.body)
    }
    waitUntilIdle()
  }

  /// The virtual time elapsed since the scheduler was made.
  public var elapsed: Duration { locked { .nanoseconds(Int64(now - startNanos)) } }

  /// How many timers are pending.
  public var pendingTimers: Int { locked { timers.count - cancelled.count } }

  /// Stops the thread once the queue is empty.
  public func shutdown() {
    locked {
      stopping = true
      pthread_cond_signal(workAvailable)
    }
  }
}
