// Tests/UpdatePipelineTests/TestSupport.swift - threads, counters, gates and tracked values for the tests

import Primitives
import Synchronization
import TestSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A joinable pthread that runs `body` and hands its result to `join()`.
///
/// `@unchecked Sendable`: `result` is written by the thread before it exits and read after `pthread_join`,
/// which orders the two.
final class TestThread<Result>: @unchecked Sendable {
  private var thread = pthread_t()
  private var result: Result?

  init(_ body: @escaping @Sendable () -> Result) {
    thread = startThread { [self] in self.result = body() }
  }

  /// Waits for the thread and returns what its body returned.
  func join() -> Result {
    pthread_join(thread, nil)
    return result!
  }
}

/// The closure a new thread runs.
private final class ThreadBody {
  let run: @Sendable () -> Void

  init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// Starts a joinable thread running `body`.
private func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
  // The thread holds one retain of the body until it returns.
  let box = Unmanaged.passRetained(ThreadBody(body))
  var thread = pthread_t()
  let rc = pthread_create(
    &thread, nil,
    { raw in
      // Unsafe pointer: `raw` is the retained `ThreadBody` passed below, taken back exactly once.
      Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().run()
      return nil
    }, box.toOpaque())
  precondition(rc == 0, "pthread_create failed: \(rc)")
  return thread
}

/// A shared counter.
final class Counter: Sendable {
  private let storage = Atomic<Int>(0)

  /// The current count.
  // Acquire/release throughout: a count read after waiting also shows what the counted work wrote.
  var value: Int { storage.load(ordering: .acquiring) }

  /// Adds one.
  func increment() { storage.add(1, ordering: .acquiringAndReleasing) }

  /// Subtracts one.
  func decrement() { storage.subtract(1, ordering: .acquiringAndReleasing) }
}

/// A flag threads can wait for.
final class Gate: Sendable {
  private let isOpen = Atomic<Bool>(false)

  /// Lets every waiter through.
  // Release/acquire: what happened before `open()` is visible after `wait()`.
  func open() { isOpen.store(true, ordering: .releasing) }

  /// Waits until the gate opens or `safetySeconds` pass; returns whether it opened.
  @discardableResult
  func wait(safetySeconds: Double = 60) -> Bool {
    waitUntil(timeout: .seconds(safetySeconds)) { isOpen.load(ordering: .acquiring) }
  }
}

/// Burns roughly `iterations` atomic loads, to vary a thread's pace without sleeping.
func spin(_ iterations: UInt64) {
  let probe = Atomic<Int>(0)
  // Relaxed: the loads only take time.
  for _ in 0..<iterations { _ = probe.load(ordering: .relaxed) }
}

/// A value whose instances are counted, to see how many a structure keeps alive.
final class Tracked: Sendable {
  let index: Int
  private let live: Counter

  init(_ index: Int, live: Counter) {
    self.index = index
    self.live = live
    live.increment()
  }

  deinit { live.decrement() }
}

/// What a reader saw: the values it took, in order, and the bits that came with each.
struct Delivery: Equatable, Sendable {
  var value: Int
  var changes: UInt64
}

/// Checks deliveries against what was published (`published[i]` = the bits of value i, values published in
/// order 0, 1, 2, …): values strictly increase, and each delivery's bits are exactly the OR of the bits of
/// the values it replaced and its own. Returns the first problem, or nil.
func deliveryProblem(_ deliveries: [Delivery], published: [UInt64]) -> String? {
  var previous = -1
  for (index, delivery) in deliveries.enumerated() {
    guard delivery.value > previous else {
      return "delivery \(index): value \(delivery.value) after \(previous)"
    }
    guard delivery.value < published.count else { return "delivery \(index): unknown value \(delivery.value)" }
    let expected = published[(previous + 1)...delivery.value].reduce(0, |)
    guard delivery.changes == expected else {
      return "delivery \(index): value \(delivery.value) carries \(delivery.changes), expected \(expected)"
    }
    previous = delivery.value
  }
  return nil
}

extension SplitMix64 {
  /// A sparse bit set (about 8 of 64 bits), sometimes empty.
  mutating func changeBits() -> UInt64 {
    next() % 16 == 0 ? 0 : next() & next() & next()
  }
}
