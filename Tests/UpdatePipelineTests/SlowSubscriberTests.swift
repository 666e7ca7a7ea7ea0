// Tests/UpdatePipelineTests/SlowSubscriberTests.swift - a subscriber that takes one value per 10 ms while the
// writer publishes 100k as fast as it can: no queue, bounded memory, increasing values, the last one arrives

import Primitives
import TestSupport
import Testing
import UpdatePipeline

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A subscriber: takes from its mailbox on a delivery thread and spends 10 ms per value.
final class SlowSubscriber: DeliveryJob {
  let mailbox = LatestValueMailbox<Tracked>()
  /// What it saw; only one delivery runs at a time, the mutex is for the test's final read.
  let seen = Locked<[Delivery]>([])
  let deliveries = Counter()

  func runDelivery() {
    deliveries.increment()
    repeat {
      let (value, changes) = mailbox.take()
      if let value {
        seen.withLock { $0.append(Delivery(value: value.index, changes: changes)) }
        usleep(10_000)
      }
    } while mailbox.finishDelivery()
  }
}

@Suite("Slow subscriber")
struct SlowSubscriberTests {
  @Test("one value per 10 ms against a writer publishing 100k: one value held, increasing, last one seen")
  func slowSubscriber() {
    let count = 100_000
    let live = Counter()
    let executor = DeliveryExecutor(threads: 2, name: "test-slow")
    let subscriber = SlowSubscriber()
    var generator = SplitMix64(seed: 99)
    var published: [UInt64] = []
    published.reserveCapacity(count)
    var mostAlive = 0
    var scheduled = 0
    for index in 0..<count {
      let bits = generator.changeBits()
      published.append(bits)
      if subscriber.mailbox.publish(Tracked(index, live: live), changes: bits) {
        scheduled += 1
        executor.submit(subscriber)
      }
      // The writer's value sits in the mailbox; the subscriber may hold the one it took.
      mostAlive = max(mostAlive, live.value)
    }
    waitUntil { subscriber.seen.withLock { $0.last?.value } == count - 1 }
    executor.shutdown()

    let seen = subscriber.seen.withLock { $0 }
    #expect(mostAlive <= 2, "values alive at once: \(mostAlive)")
    #expect(seen.last?.value == count - 1)
    #expect(seen.count < count, "coalesced: \(seen.count) deliveries")
    #expect(deliveryProblem(seen, published: published) == nil)
    #expect(scheduled == subscriber.deliveries.value, "one job per idle-to-scheduled transition")
    #expect(live.value == 0, "nothing is left behind")
  }
}
