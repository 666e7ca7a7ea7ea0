// Sources/HTTP2Transport/EventLoop.swift - one thread, one epoll set, timers and a task queue
//
// Every socket, TLS engine and nghttp2 session belongs to exactly one event
// loop and is touched only on its thread, so none of them needs a lock. Other
// threads reach a loop through `execute(_:)`, which queues a task and wakes
// the loop through an eventfd.

import CLinuxSystem
import GRPCProtocol
import Primitives
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Receives readiness events for one file descriptor. Called on the loop's thread.
package protocol EventLoopHandler: AnyObject {
  /// The descriptor is readable, writable, or has hung up / errored (`hangup`).
  func handleEvent(readable: Bool, writable: Bool, hangup: Bool)
}

/// An epoll-based event loop running on a thread of its own.
///
/// `@unchecked Sendable`: the mutable state is either confined to the loop
/// thread (handlers, timers; checked with `assertInEventLoop`) or guarded by a
/// a pthread mutex (the cross-thread task queue; see Locked.swift).
package final class EventLoop: @unchecked Sendable {
  package typealias TimerID = UInt64

  private struct Timer {
    var deadline: UInt64
    var id: TimerID
  }

  private let epollFD: Int32
  private let wakeFD: Int32
  private let name: String
  private var thread: pthread_t?
  private let threadID = Atomic<UInt64>(0)

  // Cross-thread state.
  private let pendingTasks = Locked<[@Sendable () -> Void]>([])
  private let wakeupPending = Atomic<Bool>(false)
  private let stopping = Atomic<Bool>(false)

  // Loop-thread state.
  private var handlers: [Int32: any EventLoopHandler] = [:]
  private var timerHeap: [Timer] = []
  private var timerCallbacks: [TimerID: () -> Void] = [:]
  private var nextTimerID: TimerID = 1
  private var localTasks: [() -> Void] = []

  /// How long the loop waits before reading again after a turn that read from its sockets (0: it does not).
  private let readCoalescingNanoseconds: Int

  /// The longest read-coalescing delay a loop takes: longer would hold its timers, tasks and shutdown too long.
  package static let maxReadCoalescing = Duration.milliseconds(10)

  /// Creates the loop and starts its thread. With a `readCoalescing` delay (at most ``maxReadCoalescing``), a loop
  /// that just read from its sockets waits that long before it reads again (its timers, the tasks other threads
  /// give it and its shutdown then wait up to that much too), so that what arrives meanwhile is read, handled
  /// and handed on in one turn (see `GRPCEventLoopGroup.init(loopCount:name:readCoalescing:)`).
  package init(name: String = "journeysharing-loop", readCoalescing: Duration = .zero) {
    self.name = name
    readCoalescingNanoseconds = Int(clamping: min(readCoalescing, Self.maxReadCoalescing).nonNegativeNanoseconds)
    epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
    precondition(epollFD >= 0, "epoll_create1 failed: errno \(errno)")
    wakeFD = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
    precondition(wakeFD >= 0, "eventfd failed: errno \(errno)")
    var event = epoll_event()
    event.events = EPOLLIN.rawValue
    event.data.fd = wakeFD
    epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event)
    startThread()
  }

  deinit {
    close(epollFD)
    close(wakeFD)
  }

  private func startThread() {
    let box = Unmanaged.passRetained(self)
    var tid = pthread_t()
    // The thread holds one retain of the loop until `run()` returns.
    let rc = pthread_create(
      &tid, nil,
      { raw in
        let loop = Unmanaged<EventLoop>.fromOpaque(raw!).takeRetainedValue()
        loop.run()
        return nil
      }, box.toOpaque())
    precondition(rc == 0, "pthread_create failed: \(rc)")
    thread = tid
  }

  /// Whether ``shutdown()`` was called: tasks given to ``execute(_:)`` from then on may never run.
  package var isStopping: Bool { stopping.load(ordering: .acquiring) }

  /// Whether the caller runs on this loop's thread.
  package var inEventLoop: Bool { threadID.load(ordering: .acquiring) == UInt64(pthread_self()) }

  /// Traps unless called on the loop's thread (debug builds only).
  @inline(__always)
  package func assertInEventLoop(file: StaticString = #fileID, line: UInt = #line) {
    assert(inEventLoop, "not on the event loop thread", file: file, line: line)
  }

  // MARK: - Tasks

  /// Runs `task` on the loop's thread, soon. Safe from any thread.
  package func execute(_ task: @escaping @Sendable () -> Void) {
    pendingTasks.withLock { $0.append(task) }
    wake()
  }

  /// Runs `task` on the loop thread after the current event has been handled.
  /// Loop thread only: the task may capture loop-confined state.
  package func executeSoon(_ task: @escaping () -> Void) {
    assertInEventLoop()
    localTasks.append(task)
  }

  private func wake() {
    // Only the first wakeup between two loop turns writes to the eventfd.
    if !wakeupPending.exchange(true, ordering: .acquiringAndReleasing) {
      var one: UInt64 = 1
      _ = write(wakeFD, &one, 8)
    }
  }

  // MARK: - Descriptors

  /// Starts watching `fd` for the given interest. Loop thread only.
  package func register(fd: Int32, handler: any EventLoopHandler, readable: Bool, writable: Bool) {
    assertInEventLoop()
    handlers[fd] = handler
    var event = epoll_event()
    event.events = interest(readable: readable, writable: writable)
    event.data.fd = fd
    epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event)
  }

  /// Changes the interest for a registered `fd`. Loop thread only.
  package func setInterest(fd: Int32, readable: Bool, writable: Bool) {
    assertInEventLoop()
    var event = epoll_event()
    event.events = interest(readable: readable, writable: writable)
    event.data.fd = fd
    epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event)
  }

  /// Stops watching `fd` (call before closing it). Loop thread only.
  package func deregister(fd: Int32) {
    assertInEventLoop()
    handlers[fd] = nil
    epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
  }

  private func interest(readable: Bool, writable: Bool) -> UInt32 {
    // EPOLLRDHUP only with EPOLLIN: a peer's half-close while reading is paused would otherwise be
    // reported on every wait (level-triggered) with nobody reading, and the loop would spin.
    var events: UInt32 = 0
    if readable { events |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
    if writable { events |= EPOLLOUT.rawValue }
    return events
  }

  // MARK: - Timers

  /// Calls `body` on the loop thread after `delay`. Loop thread only.
  @discardableResult
  package func scheduleTimer(after delay: Duration, _ body: @escaping () -> Void) -> TimerID {
    assertInEventLoop()
    let id = nextTimerID
    nextTimerID += 1
    timerCallbacks[id] = body
    pushTimer(Timer(deadline: Primitives.monotonicNanoseconds() &+ delay.nonNegativeNanoseconds, id: id))
    return id
  }

  /// Cancels a timer that has not fired. Loop thread only.
  package func cancelTimer(_ id: TimerID) {
    assertInEventLoop()
    timerCallbacks[id] = nil  // The heap entry is dropped lazily when it comes up.
  }

  private func pushTimer(_ timer: Timer) {
    timerHeap.append(timer)
    var child = timerHeap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard timerHeap[child].deadline < timerHeap[parent].deadline else { break }
      timerHeap.swapAt(child, parent)
      child = parent
    }
  }

  private func popTimer() -> Timer {
    let top = timerHeap[0]
    let last = timerHeap.removeLast()
    if !timerHeap.isEmpty {
      timerHeap[0] = last
      var parent = 0
      while true {
        let left = 2 * parent + 1
        let right = left + 1
        var smallest = parent
        if left < timerHeap.count && timerHeap[left].deadline < timerHeap[smallest].deadline { smallest = left }
        if right < timerHeap.count && timerHeap[right].deadline < timerHeap[smallest].deadline { smallest = right }
        if smallest == parent { break }
        timerHeap.swapAt(parent, smallest)
        parent = smallest
      }
    }
    return top
  }

  private func runDueTimers() {
    let now = Primitives.monotonicNanoseconds()
    while let first = timerHeap.first, first.deadline <= now {
      let timer = popTimer()
      if let callback = timerCallbacks.removeValue(forKey: timer.id) { callback() }
    }
  }

  private func nextTimeoutMilliseconds() -> Int32 {
    // Drop cancelled timers at the top so they don't cause early wakeups.
    while let first = timerHeap.first, timerCallbacks[first.id] == nil { _ = popTimer() }
    guard let first = timerHeap.first else { return -1 }
    let now = Primitives.monotonicNanoseconds()
    if first.deadline <= now { return 0 }
    // Round up so a timer never fires early.
    return Int32(clamping: (first.deadline - now + 999_999) / 1_000_000)
  }

  // MARK: - Running

  /// Stops the loop after the tasks already queued have run, and waits for its thread
  /// unless called from it.
  package func shutdown() {
    stopping.store(true, ordering: .releasing)
    wake()
    guard let thread else { return }
    // Called on the loop's own thread (the last reference to its group went there): it cannot wait for
    // itself, so it is detached, to end on its own once `run()` returns.
    if inEventLoop { pthread_detach(thread) } else { pthread_join(thread, nil) }
    self.thread = nil
  }

  private func run() {
    threadID.store(UInt64(pthread_self()), ordering: .releasing)
    let capacity = 256
    let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
    defer { events.deallocate() }
    var readSockets = false
    while true {
      runTasks()
      if stopping.load(ordering: .acquiring) { break }
      if readSockets, readCoalescingNanoseconds > 0, localTasks.isEmpty { coalesceReads() }
      readSockets = false
      let timeout = localTasks.isEmpty ? nextTimeoutMilliseconds() : 0
      let count = epoll_wait(epollFD, events, Int32(capacity), timeout)
      if count < 0 {
        if errno == EINTR { continue }
        preconditionFailure("epoll_wait failed: errno \(errno)")
      }
      for index in 0..<Int(count) {
        let event = events[index]
        let fd = event.data.fd
        if fd == wakeFD {
          var value: UInt64 = 0
          _ = read(wakeFD, &value, 8)
          wakeupPending.store(false, ordering: .releasing)
          continue
        }
        guard let handler = handlers[fd] else { continue }
        let flags = event.events
        if flags & EPOLLIN.rawValue != 0 { readSockets = true }
        handler.handleEvent(
          readable: flags & EPOLLIN.rawValue != 0,
          writable: flags & EPOLLOUT.rawValue != 0,
          hangup: flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0)
      }
      runDueTimers()
    }
    runTasks(drain: true)
    threadID.store(0, ordering: .releasing)
  }

  /// Sleeps the read-coalescing delay: a turn that read just ended, and what arrives meanwhile is read together
  /// in the next one. Timers due meanwhile fire up to that much late (a loop following thousands of streams has
  /// one due almost always, so bounding the sleep by them would leave nothing to coalesce).
  private func coalesceReads() {
    let nanoseconds = readCoalescingNanoseconds
    var time = timespec(tv_sec: nanoseconds / 1_000_000_000, tv_nsec: nanoseconds % 1_000_000_000)
    _ = nanosleep(&time, nil)
  }

  /// Runs the tasks other threads had queued when it began, then the loop's own (``executeSoon(_:)``) until
  /// none is left. What other threads queue meanwhile waits for the next turn, after the sockets' events: a
  /// thread that keeps queueing (a service on another loop answering thousands of calls) cannot keep the loop
  /// from its sockets. With `drain`, runs until no task of either kind is left (when the loop stops).
  private func runTasks(drain: Bool = false) {
    var takeQueued = true
    while true {
      let tasks =
        takeQueued
        ? pendingTasks.withLock { tasks -> [@Sendable () -> Void] in
          let taken = tasks
          tasks.removeAll(keepingCapacity: true)
          return taken
        } : []
      takeQueued = drain
      let local = localTasks
      localTasks.removeAll(keepingCapacity: true)
      if tasks.isEmpty && local.isEmpty { return }
      for task in tasks { task() }
      for task in local { task() }
    }
  }
}

/// A value that belongs to one event loop: it may be carried across threads
/// (so closures given to `execute` can hold it) but is only read on that loop.
///
/// `@unchecked Sendable`: every access checks (in debug builds) that it happens on the owning loop.
package struct LoopBound<Value>: @unchecked Sendable {
  private let _value: Value
  /// The loop that owns the value.
  package let loop: EventLoop

  /// Wraps `value`; call on `loop`'s thread.
  package init(_ value: Value, loop: EventLoop) {
    loop.assertInEventLoop()
    self._value = value
    self.loop = loop
  }

  /// Wraps `value` from any thread, for a value not yet shared with anything on the loop
  /// (for example a handler created by a caller and then handed to the loop).
  package init(unchecked value: Value, loop: EventLoop) {
    self._value = value
    self.loop = loop
  }

  /// The value; read it on the owning loop only.
  package var value: Value {
    loop.assertInEventLoop()
    return _value
  }
}

extension EventLoop: GRPCScheduler {
  package var inScheduler: Bool { inEventLoop }

  package var monotonicNanoseconds: UInt64 { Primitives.monotonicNanoseconds() }

  package var unixTime: Double { Primitives.unixTime() }
}

/// An action run once at the end of the current loop event however many times it was asked for during the
/// event: a connection's flush, so that all frames produced in one loop turn leave in one write. Confined to its
/// loop.
final class EndOfEventAction {
  private let loop: EventLoop
  private let action: () -> Void
  private var scheduled = false

  /// `action` (which should hold its owner weakly) on `loop`.
  init(loop: EventLoop, _ action: @escaping () -> Void) {
    self.loop = loop
    self.action = action
  }

  /// Runs the action at the end of the current event, unless that is already arranged.
  func request() {
    guard !scheduled else { return }
    scheduled = true
    loop.executeSoon { [self] in
      scheduled = false
      action()
    }
  }
}
