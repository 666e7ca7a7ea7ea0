// Tests/UpdatePipelineTests/DeliveryExecutorTests.swift - every job runs exactly once, overflow, blocked
// workers, shutdown

import Synchronization
import TestSupport
import Testing
import UpdatePipeline

/// Counts its runs and reports completion.
final class CountingJob: DeliveryJob {
  let runs = Atomic<Int>(0)
  private let completed: Counter

  init(completed: Counter) {
    self.completed = completed
  }

  func runDelivery() {
    // Relaxed: read only after the completion counter (acquire/release) says every job ran.
    runs.add(1, ordering: .relaxed)
    completed.increment()
  }
}

/// Blocks its worker until the gate opens.
final class BlockingJob: DeliveryJob {
  private let gate: Gate
  private let started: Counter
  private let finished: Counter

  init(gate: Gate, started: Counter, finished: Counter) {
    self.gate = gate
    self.started = started
    self.finished = finished
  }

  func runDelivery() {
    started.increment()
    gate.wait()
    finished.increment()
  }
}

/// Calls `shutdown()` on the executor that runs it.
final class ShutdownJob: DeliveryJob {
  let executor: DeliveryExecutor
  let done = Counter()

  init(executor: DeliveryExecutor) {
    self.executor = executor
  }

  func runDelivery() {
    executor.shutdown()
    done.increment()
  }
}

@Suite("DeliveryExecutor")
struct DeliveryExecutorTests {
  @Test("100k jobs from 4 producer threads all run exactly once", arguments: [1 << 18, 64])
  func everyJobOnce(capacity: Int) {
    let total = 100_000
    let producers = 4
    let executor = DeliveryExecutor(threads: 4, capacity: capacity, name: "test-once")
    let completed = Counter()
    let jobs = (0..<total).map { _ in CountingJob(completed: completed) }
    let threads = (0..<producers).map { producer in
      TestThread { () -> Void in
        for index in stride(from: producer, to: total, by: producers) { executor.submit(jobs[index]) }
      }
    }
    for thread in threads { thread.join() }
    waitUntil { completed.value == total }
    #expect(completed.value == total)
    // Relaxed: ordered by the completion counter read above.
    #expect(jobs.allSatisfy { $0.runs.load(ordering: .relaxed) == 1 })
    if capacity >= total { #expect(executor.overflowCount == 0) }
    executor.shutdown()
  }

  @Test("with a ring of 2 slots and both workers busy, 1000 jobs overflow and still all run once")
  func overflowRunsEverything() {
    let executor = DeliveryExecutor(threads: 2, capacity: 2, name: "test-overflow")
    let gate = Gate()
    let started = Counter()
    let finished = Counter()
    for _ in 0..<2 { executor.submit(BlockingJob(gate: gate, started: started, finished: finished)) }
    waitUntil { started.value == 2 }
    #expect(started.value == 2)
    let completed = Counter()
    let jobs = (0..<1000).map { _ in CountingJob(completed: completed) }
    for job in jobs { executor.submit(job) }
    #expect(executor.overflowCount == 998, "2 fit in the ring, the rest overflow")
    #expect(completed.value == 0)
    gate.open()
    waitUntil { completed.value == 1000 }
    #expect(completed.value == 1000)
    // Relaxed: ordered by the completion counter read above.
    #expect(jobs.allSatisfy { $0.runs.load(ordering: .relaxed) == 1 })
    executor.shutdown()
    #expect(finished.value == 2)
  }

  @Test(
    "W − 1 jobs blocked in their callbacks do not stop the other jobs completing",
    arguments: [2, 4])
  func blockedWorkersDoNotStall(threads: Int) {
    let executor = DeliveryExecutor(threads: threads, name: "test-blocked")
    let gate = Gate()
    let started = Counter()
    let finished = Counter()
    for _ in 0..<(threads - 1) { executor.submit(BlockingJob(gate: gate, started: started, finished: finished)) }
    let completed = Counter()
    let jobs = (0..<10_000).map { _ in CountingJob(completed: completed) }
    for job in jobs { executor.submit(job) }
    waitUntil { completed.value == jobs.count }
    #expect(completed.value == jobs.count)
    #expect(started.value == threads - 1)
    #expect(finished.value == 0, "the blocked jobs were still blocked while the others completed")
    gate.open()
    executor.shutdown()
    #expect(finished.value == threads - 1)
  }

  @Test("shutdown runs every queued job before it returns")
  func shutdownDrains() {
    let executor = DeliveryExecutor(threads: 2, capacity: 1024, name: "test-drain")
    let completed = Counter()
    for _ in 0..<20_000 { executor.submit(CountingJob(completed: completed)) }
    executor.shutdown()
    #expect(completed.value == 20_000)
    executor.shutdown()  // idempotent
  }

  @Test("shutdown called from a job does not wait for itself; a later shutdown waits for the rest")
  func shutdownFromJob() {
    let executor = DeliveryExecutor(threads: 2, name: "test-inner")
    let completed = Counter()
    for _ in 0..<100 { executor.submit(CountingJob(completed: completed)) }
    let inner = ShutdownJob(executor: executor)
    executor.submit(inner)
    for _ in 0..<100 { executor.submit(CountingJob(completed: completed)) }
    executor.shutdown()
    #expect(inner.done.value == 1)
    #expect(completed.value == 200)
  }

  @Test("dropping the executor drains it")
  func deinitDrains() {
    let completed = Counter()
    do {
      let executor = DeliveryExecutor(threads: 2, name: "test-deinit")
      for _ in 0..<5_000 { executor.submit(CountingJob(completed: completed)) }
    }
    #expect(completed.value == 5_000)
  }

  @Test("a job submitted after shutdown is released without running")
  func submitAfterShutdown() {
    let executor = DeliveryExecutor(threads: 2, name: "test-late")
    executor.shutdown()
    let completed = Counter()
    weak var released: CountingJob?
    do {
      let job = CountingJob(completed: completed)
      released = job
      executor.submit(job)
    }
    #expect(released == nil)
    #expect(completed.value == 0)
  }
}
