// Tests/UpdatePipelineTests/LatestValueMailboxTests.swift - coalescing, the delivery protocol under a racing
// writer, close, and the mailbox's footprint

import Primitives
import Synchronization
import Testing
import UpdatePipeline

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

@Suite("LatestValueMailbox")
struct LatestValueMailboxTests {
  @Test("1000 publishes without a take coalesce into the last value and the OR of all bits")
  func coalescing() {
    let mailbox = LatestValueMailbox<Int>()
    var generator = SplitMix64(seed: 1)
    var union: UInt64 = 0
    var schedules = 0
    for value in 0..<1000 {
      let bits = UInt64(1) << (generator.next() % 64)
      union |= bits
      if mailbox.publish(value, changes: bits) { schedules += 1 }
    }
    #expect(schedules == 1)
    #expect(mailbox.hasPending)
    let (value, changes) = mailbox.take()
    #expect(value == 999)
    #expect(changes == union)
    #expect(!mailbox.hasPending)
    let (again, againChanges) = mailbox.take()
    #expect(again == nil && againChanges == 0)
    #expect(mailbox.finishDelivery() == false)
    #expect(mailbox.publish(1000, changes: 1), "idle again: the next publish schedules")
  }

  @Test("reclaim takes back the untaken value; its bits go out with the next publish")
  func reclaim() {
    let mailbox = LatestValueMailbox<Int>()
    #expect(mailbox.reclaim() == nil, "nothing pending")
    #expect(mailbox.publish(1, changes: 0b001))
    #expect(mailbox.publish(2, changes: 0b010) == false)
    #expect(mailbox.reclaim() == 2)
    #expect(!mailbox.hasPending)
    #expect(mailbox.reclaim() == nil, "taken back already")
    // The scheduled delivery finds nothing; the mailbox goes idle, and the next publish schedules again.
    let (none, noBits) = mailbox.take()
    #expect(none == nil && noBits == 0)
    #expect(mailbox.finishDelivery() == false)
    #expect(mailbox.publish(3, changes: 0b100))
    let (value, changes) = mailbox.take()
    #expect(value == 3)
    #expect(changes == 0b111, "the reclaimed bits travel with the next value")
    #expect(mailbox.finishDelivery() == false)
    // Bits are owed once only.
    #expect(mailbox.publish(4, changes: 0b1000))
    #expect(mailbox.take().changes == 0b1000)
    #expect(mailbox.finishDelivery() == false)
    // After a take, nothing is left to reclaim; after close, nothing either.
    #expect(mailbox.publish(5, changes: 1))
    _ = mailbox.take()
    #expect(mailbox.reclaim() == nil)
    #expect(mailbox.finishDelivery() == false)
    #expect(mailbox.publish(6, changes: 1))
    mailbox.close()
    #expect(mailbox.reclaim() == nil)
  }

  @Test("a writer reclaiming against a racing reader loses no bits and no value twice")
  func reclaimRacingReader() async {
    let mailbox = LatestValueMailbox<Int>()
    let rounds = 200_000
    let taken = Atomic<Int>(0)
    let bitsSeen = Atomic<UInt64>(0)
    let done = Atomic<Bool>(false)
    let reader = Task.detached {
      var last = -1
      while !done.load(ordering: .acquiring) || mailbox.hasPending {
        let (value, changes) = mailbox.take()
        if let value {
          // Values only move forward: nothing is delivered twice or out of order.
          if value <= last { return false }
          last = value
          taken.add(1, ordering: .relaxed)
          bitsSeen.bitwiseOr(changes, ordering: .relaxed)
        }
        _ = mailbox.finishDelivery()
      }
      return true
    }
    for value in 0..<rounds {
      _ = mailbox.reclaim()
      _ = mailbox.publish(value, changes: UInt64(1) << UInt64(value % 64))
    }
    done.store(true, ordering: .releasing)
    let ordered = await reader.value
    #expect(ordered)
    #expect(taken.load(ordering: .relaxed) > 0)
    // Every bit published reached the reader, through whichever value carried it.
    #expect(bitsSeen.load(ordering: .relaxed) == UInt64.max)
  }

  @Test("the protocol step by step: scheduled until finishDelivery, a publish during delivery is taken again")
  func protocolSteps() {
    let mailbox = LatestValueMailbox<String>()
    #expect(!mailbox.hasPending)
    #expect(mailbox.publish("a", changes: 0b001))
    #expect(!mailbox.publish("b", changes: 0b010), "already scheduled")
    var (value, changes) = mailbox.take()
    #expect(value == "b" && changes == 0b011)
    #expect(!mailbox.publish("c", changes: 0b100), "still scheduled while delivering")
    #expect(mailbox.finishDelivery(), "c arrived meanwhile: take again")
    (value, changes) = mailbox.take()
    #expect(value == "c" && changes == 0b100)
    #expect(!mailbox.finishDelivery())
    #expect(mailbox.publish("d", changes: 0b1000), "idle: schedules")
    (value, changes) = mailbox.take()
    #expect(value == "d" && changes == 0b1000)
    #expect(!mailbox.finishDelivery())
  }

  @Test("bits of an untaken value carry over; bits of a taken one do not")
  func carryOnlyUntaken() {
    let mailbox = LatestValueMailbox<Int>()
    _ = mailbox.publish(1, changes: 0b01)
    _ = mailbox.take()
    _ = mailbox.publish(2, changes: 0b10)
    let (value, changes) = mailbox.take()
    #expect(value == 2 && changes == 0b10)
  }

  @Test("close drops the pending value and bits, refuses later publishes, and retains nothing")
  func closeSemantics() {
    let live = Counter()
    let mailbox = LatestValueMailbox<Tracked>()
    #expect(mailbox.publish(Tracked(1, live: live), changes: 0b1))
    #expect(live.value == 1)
    mailbox.close()
    #expect(mailbox.isClosed)
    #expect(live.value == 0, "the pending value was released")
    #expect(!mailbox.hasPending)
    let (value, changes) = mailbox.take()
    #expect(value == nil && changes == 0)
    #expect(!mailbox.publish(Tracked(2, live: live), changes: 0b10))
    #expect(live.value == 0, "a refused value is not kept")
    #expect(!mailbox.finishDelivery())
    mailbox.close()  // idempotent
    #expect(mailbox.isClosed)
  }

  @Test("close while a delivery runs: the reader finishes normally and nothing more is scheduled")
  func closeDuringDelivery() {
    let mailbox = LatestValueMailbox<Int>()
    #expect(mailbox.publish(1, changes: 1))
    let (value, _) = mailbox.take()
    #expect(value == 1)
    #expect(!mailbox.publish(2, changes: 2))
    mailbox.close()
    #expect(!mailbox.finishDelivery(), "the pending value was dropped")
    #expect(!mailbox.publish(3, changes: 4))
  }

  @Test("at rest the mailbox holds at most one value, and its object fits in 96 bytes")
  func footprint() {
    let live = Counter()
    let mailbox = LatestValueMailbox<Tracked>()
    for index in 0..<1000 {
      _ = mailbox.publish(Tracked(index, live: live), changes: 1)
      #expect(live.value == 1)
    }
    _ = mailbox.take()
    #expect(live.value == 0, "the taken value belongs to the reader alone")
    let block = heapBlockSize(of: mailbox)
    #expect(block != nil && block! <= 96, "heap block of \(block ?? -1) bytes")
  }

  @Test("a racing writer and reader following the protocol: nothing lost, bits exact, last value seen")
  func noLostWakeups() {
    let count = 50_000
    let mailbox = LatestValueMailbox<Int>()
    let grants = Atomic<Int>(0)
    let writerDone = Atomic<Bool>(false)

    let writer = TestThread { () -> [UInt64] in
      var generator = SplitMix64(seed: 42)
      var published: [UInt64] = []
      published.reserveCapacity(count)
      for value in 0..<count {
        let bits = generator.changeBits()
        published.append(bits)
        // Release: the grant stands for "a delivery was scheduled"; the mailbox itself orders the values.
        if mailbox.publish(value, changes: bits) { grants.add(1, ordering: .releasing) }
        // Vary the pace so the reader both falls behind (coalescing) and catches up (going idle).
        if generator.next() % 8 == 0 { spin(generator.next() % 2000) }
      }
      // Release: every publish (and its grant) happens before the reader sees the writer done.
      writerDone.store(true, ordering: .releasing)
      return published
    }

    let reader = TestThread { () -> (deliveries: [Delivery], doubleGrants: Int, bitsWithoutValue: Int) in
      var deliveries: [Delivery] = []
      var consumed = 0
      var doubleGrants = 0
      var bitsWithoutValue = 0
      var turn = 0
      while true {
        // Acquire: pairs with the writer's releasing grant.
        let granted = grants.load(ordering: .acquiring)
        if granted > consumed {
          if granted - consumed > 1 { doubleGrants += 1 }
          consumed = granted
          repeat {
            let (value, changes) = mailbox.take()
            if let value {
              deliveries.append(Delivery(value: value, changes: changes))
            } else if changes != 0 {
              bitsWithoutValue += 1
            }
            turn += 1
            if turn % 7 == 0 { sched_yield() }  // let the writer slip in between take and finish
          } while mailbox.finishDelivery()
          // Acquire both: pairs with the writer's releases, so no grant is missed once it is done.
        } else if writerDone.load(ordering: .acquiring) && grants.load(ordering: .acquiring) == consumed {
          break
        } else {
          sched_yield()
        }
      }
      return (deliveries, doubleGrants, bitsWithoutValue)
    }

    let published = writer.join()
    let (deliveries, doubleGrants, bitsWithoutValue) = reader.join()
    #expect(doubleGrants == 0, "publish returned true while a delivery was already scheduled")
    #expect(bitsWithoutValue == 0)
    #expect(!mailbox.hasPending)
    #expect(deliveries.last?.value == count - 1, "the final value arrives")
    let union = published.reduce(0, |)
    #expect(deliveries.reduce(0) { $0 | $1.changes } == union, "the union of all bits arrives")
    #expect(deliveryProblem(deliveries, published: published) == nil)
    // Every published bit arrives with that value or a later one.
    var lastPublished = [Int](repeating: -1, count: 64)
    for (value, bits) in published.enumerated() {
      for bit in 0..<64 where bits & (1 << UInt64(bit)) != 0 { lastPublished[bit] = value }
    }
    var lastDelivered = [Int](repeating: -1, count: 64)
    for delivery in deliveries {
      for bit in 0..<64 where delivery.changes & (1 << UInt64(bit)) != 0 { lastDelivered[bit] = delivery.value }
    }
    #expect(zip(lastPublished, lastDelivered).allSatisfy { $1 >= $0 })
  }
}

/// The size of the heap block holding `object`, from glibc's `malloc_usable_size` (looked up at run time:
/// the Glibc module does not import <malloc.h>).
func heapBlockSize(of object: AnyObject) -> Int? {
  guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "malloc_usable_size") else { return nil }
  // Unsafe cast: the symbol is glibc's `size_t malloc_usable_size(void *)`.
  let usableSize = unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutableRawPointer?) -> Int).self)
  // Unsafe pointer: only passed to the allocator to ask for the size of the object's block.
  return usableSize(Unmanaged.passUnretained(object).toOpaque())
}
