// Sources/UpdatePipeline/BoundedJobQueue.swift - Vyukov's bounded multi-producer multi-consumer ring of jobs
//
// Each cell carries a sequence number that says whose turn it is: `position` when a producer may fill it,
// `position + 1` when a consumer may empty it, `position + capacity` when it is free for the next lap. A
// producer (consumer) claims a position with one compare-and-swap on the shared enqueue (dequeue) counter,
// then publishes the cell with a releasing store of its sequence number. No allocation after init.

import Synchronization

/// A fixed-capacity lock-free FIFO of `DeliveryJob`s for any number of producers and consumers.
///
/// `@unchecked Sendable`: the cells live in raw memory; a cell's job is written only by the producer that
/// claimed its position and read only by the consumer that claimed it afterwards, ordered by the cell's
/// sequence number (release on publish, acquire on claim).
final class BoundedJobQueue: @unchecked Sendable {
  /// Bytes per cell: the sequence number (8) and the job (a class existential: 16).
  private static var cellStride: Int { 24 }
  private static var jobOffset: Int { 8 }

  /// How many jobs fit, a power of two.
  let capacity: Int
  private let mask: Int
  // Unsafe pointer: the ring is one block of `capacity` cells, each a sequence number followed by a job,
  // allocated in init and freed in deinit; every index is masked into range. The two fields are reached
  // through pointers of their own types (not a struct through `pointee`), so a job access never covers
  // the sequence number another thread reads atomically.
  private let cells: UnsafeMutableRawPointer
  // Unsafe pointers: each counter gets a 128-byte block of its own so producers and consumers do not
  // invalidate each other's cache line (and its adjacent-line prefetch pair). Freed in deinit.
  private let enqueuePosition: UnsafeMutablePointer<Atomic<Int>>
  private let dequeuePosition: UnsafeMutablePointer<Atomic<Int>>

  /// Creates an empty ring; `capacity` must be a power of two, at least 2.
  init(capacity: Int) {
    precondition(capacity >= 2 && capacity & (capacity - 1) == 0, "capacity must be a power of two >= 2")
    assert(MemoryLayout<(any DeliveryJob)?>.size <= Self.cellStride - Self.jobOffset)
    self.capacity = capacity
    mask = capacity - 1
    cells = .allocate(byteCount: capacity * Self.cellStride, alignment: 64)
    for index in 0..<capacity {
      let cell = cells + index * Self.cellStride
      cell.bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(index))
      (cell + Self.jobOffset).bindMemory(to: (any DeliveryJob)?.self, capacity: 1).initialize(to: nil)
    }
    enqueuePosition = Self.allocateCounter()
    dequeuePosition = Self.allocateCounter()
  }

  private static func allocateCounter() -> UnsafeMutablePointer<Atomic<Int>> {
    // Unsafe pointer: a 128-byte, 128-aligned block holding one atomic at its start; freed in deinit.
    let pointer = UnsafeMutableRawPointer.allocate(byteCount: 128, alignment: 128)
      .bindMemory(to: Atomic<Int>.self, capacity: 1)
    pointer.initialize(to: Atomic(0))
    return pointer
  }

  deinit {
    // Jobs still queued (submitted after the workers stopped) are released, not run.
    for index in 0..<capacity {
      sequenceNumber(index).deinitialize(count: 1)
      jobSlot(index).deinitialize(count: 1)
    }
    cells.deallocate()
    enqueuePosition.deinitialize(count: 1)
    UnsafeMutableRawPointer(enqueuePosition).deallocate()
    dequeuePosition.deinitialize(count: 1)
    UnsafeMutableRawPointer(dequeuePosition).deallocate()
  }

  /// The sequence number of the cell at `position` (masked into range).
  @inline(__always)
  private func sequenceNumber(_ position: Int) -> UnsafeMutablePointer<Atomic<Int>> {
    // Unsafe pointer: in range (masked) and bound to `Atomic<Int>` in init.
    (cells + (position & mask) * Self.cellStride).assumingMemoryBound(to: Atomic<Int>.self)
  }

  /// The job slot of the cell at `position` (masked into range).
  @inline(__always)
  private func jobSlot(_ position: Int) -> UnsafeMutablePointer<(any DeliveryJob)?> {
    // Unsafe pointer: in range (masked) and bound to the optional job type in init.
    (cells + (position & mask) * Self.cellStride + Self.jobOffset).assumingMemoryBound(to: (any DeliveryJob)?.self)
  }

  /// Appends `job` unless the ring is full. Lock-free; never allocates.
  func tryEnqueue(_ job: any DeliveryJob) -> Bool {
    // Relaxed: the counter only picks a candidate position; the cell's sequence number decides.
    var position = enqueuePosition.pointee.load(ordering: .relaxed)
    while true {
      // Acquire: the consumer that emptied this cell on the previous lap finished with it before it
      // released the new sequence number.
      let sequence = sequenceNumber(position).pointee.load(ordering: .acquiring)
      let lag = sequence &- position
      if lag == 0 {
        // Relaxed: claiming the position publishes nothing; the sequence store below does.
        let (exchanged, original) = enqueuePosition.pointee.weakCompareExchange(
          expected: position, desired: position &+ 1, ordering: .relaxed)
        if exchanged {
          jobSlot(position).pointee = job
          // Release: the job is written before a consumer can see the cell as full.
          sequenceNumber(position).pointee.store(position &+ 1, ordering: .releasing)
          return true
        }
        position = original
      } else if lag < 0 {
        return false  // the cell still holds the job from the previous lap: full
      } else {
        // Relaxed: another producer took this position; re-read the counter.
        position = enqueuePosition.pointee.load(ordering: .relaxed)
      }
    }
  }

  /// Removes the oldest published job, or returns nil when the next cell is not published yet.
  func dequeue() -> (any DeliveryJob)? {
    // Relaxed: the counter only picks a candidate position; the cell's sequence number decides.
    var position = dequeuePosition.pointee.load(ordering: .relaxed)
    while true {
      // Acquire: pairs with the producer's releasing store, so its job write is visible.
      let sequence = sequenceNumber(position).pointee.load(ordering: .acquiring)
      let lag = sequence &- (position &+ 1)
      if lag == 0 {
        // Relaxed: claiming the position publishes nothing; the sequence store below does.
        let (exchanged, original) = dequeuePosition.pointee.weakCompareExchange(
          expected: position, desired: position &+ 1, ordering: .relaxed)
        if exchanged {
          let job = jobSlot(position).pointee.take()
          // Release: the cell is emptied before a producer of the next lap can refill it.
          sequenceNumber(position).pointee.store(position &+ mask &+ 1, ordering: .releasing)
          return job
        }
        position = original
      } else if lag < 0 {
        return nil  // empty, or its producer is between claiming and publishing
      } else {
        // Relaxed: another consumer took this position; re-read the counter.
        position = dequeuePosition.pointee.load(ordering: .relaxed)
      }
    }
  }

  /// Whether the next cell to dequeue holds a published job (a snapshot).
  var hasReadyJob: Bool {
    // Relaxed: picks the candidate cell. Acquire: a true answer is followed by a dequeue anyway, but
    // keeps the answer consistent with the producer's release.
    let position = dequeuePosition.pointee.load(ordering: .relaxed)
    return sequenceNumber(position).pointee.load(ordering: .acquiring) == position &+ 1
  }

  /// Whether every claimed position has also been dequeued (no job queued or being queued; a snapshot).
  var isDrained: Bool {
    // Relaxed: advisory snapshot used only to decide when stopping workers may exit.
    enqueuePosition.pointee.load(ordering: .relaxed) == dequeuePosition.pointee.load(ordering: .relaxed)
  }
}
