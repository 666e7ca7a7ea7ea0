// Tests/UpdatePipelineTests/LatestValueStreamTests.swift - merged values, waking a waiting consumer, finish,
// cancellation, dropped iterators, and a racing writer thread

import Primitives
import Synchronization
import TestSupport
import Testing

@testable import UpdatePipeline

@Suite("LatestValueStream")
struct LatestValueStreamTests {
  @Test("values published before iterating arrive as the last one with the merged bits")
  func mergedValues() async {
    let stream = LatestValueStream<Int>()
    stream.publish(1, changes: 0b001)
    stream.publish(2, changes: 0b010)
    stream.publish(3, changes: 0b100)
    var iterator = stream.makeAsyncIterator()
    let first = await iterator.next()
    #expect(first?.value == 3)
    #expect(first?.changes == 0b111)
    stream.publish(4, changes: 0b1000)
    let second = await iterator.next()
    #expect(second?.value == 4)
    #expect(second?.changes == 0b1000)
  }

  @Test("a consumer waiting for a value is resumed by the next publish")
  func waitingConsumerResumed() async {
    let stream = LatestValueStream<String>()
    let consumer = Task { () -> [LatestValueStream<String>.Element] in
      var received: [LatestValueStream<String>.Element] = []
      for await element in stream {
        received.append(element)
        if received.count == 2 { break }
      }
      return received
    }
    #expect(await eventually { stream.hasWaiter })
    stream.publish("a", changes: 1)
    #expect(await eventually { stream.hasWaiter })
    stream.publish("b", changes: 2)
    let received = await consumer.value
    #expect(received.map(\.value) == ["a", "b"])
    #expect(received.map(\.changes) == [1, 2])
  }

  @Test("finish ends the sequence after the pending value, and onTermination fires once")
  func finishEnds() async {
    let stream = LatestValueStream<Int>()
    let terminations = Counter()
    stream.onTermination = { terminations.increment() }
    stream.publish(7, changes: 0b11)
    stream.finish()
    stream.publish(8, changes: 0b100)  // ignored after finish
    var values: [Int] = []
    for await (value, _) in stream { values.append(value) }
    #expect(values == [7])
    #expect(terminations.value == 1)
  }

  @Test("finish wakes a waiting consumer, which then ends")
  func finishWakesWaiter() async {
    let stream = LatestValueStream<Int>()
    let consumer = Task { () -> Int in
      var count = 0
      for await _ in stream { count += 1 }
      return count
    }
    #expect(await eventually { stream.hasWaiter })
    stream.finish()
    #expect(await consumer.value == 0)
    #expect(stream.isTerminated)
  }

  @Test("cancelling the consuming task ends the sequence and fires onTermination; publishes become no-ops")
  func cancellationEnds() async {
    let stream = LatestValueStream<Tracked>()
    let live = Counter()
    let terminations = Counter()
    stream.onTermination = { terminations.increment() }
    let consumer = Task { () -> Int in
      var count = 0
      for await _ in stream { count += 1 }
      return count
    }
    stream.publish(Tracked(0, live: live), changes: 1)
    #expect(await eventually { stream.hasWaiter })
    consumer.cancel()
    let count = await consumer.value
    #expect(count == 1)
    #expect(terminations.value == 1)
    #expect(stream.isTerminated)
    stream.publish(Tracked(1, live: live), changes: 2)
    #expect(live.value == 0, "nothing is kept once the consumer is gone")
  }

  @Test("a task cancelled before it iterates gets nothing and terminates the stream")
  func cancelledBeforeIterating() async {
    let stream = LatestValueStream<Int>()
    let terminations = Counter()
    stream.onTermination = { terminations.increment() }
    let gate = Gate()
    let consumer = Task { () -> Int? in
      while !Task.isCancelled { await Task.yield() }
      gate.open()
      var iterator = stream.makeAsyncIterator()
      return await iterator.next()?.value
    }
    stream.publish(1, changes: 1)
    consumer.cancel()
    #expect(await consumer.value == nil)
    #expect(gate.wait(safetySeconds: 1))
    #expect(terminations.value == 1)
  }

  @Test("dropping the iterator fires onTermination; a handler set afterwards is called at once")
  func droppedIterator() async {
    let stream = LatestValueStream<Int>()
    let terminations = Counter()
    stream.onTermination = { terminations.increment() }
    do {
      var iterator = stream.makeAsyncIterator()
      stream.publish(1, changes: 1)
      let first = await iterator.next()
      #expect(first?.value == 1)
    }
    #expect(terminations.value == 1)
    #expect(stream.isTerminated)
    let late = Counter()
    stream.onTermination = { late.increment() }
    #expect(late.value == 1)
  }

  @Test("only the first iterator receives values")
  func singleConsumer() async {
    let stream = LatestValueStream<Int>()
    var first = stream.makeAsyncIterator()
    var second = stream.makeAsyncIterator()
    stream.publish(5, changes: 1)
    #expect(await second.next() == nil)
    #expect(await first.next()?.value == 5)
  }

  @Test("a writer thread racing a consumer: increasing values, exact merged bits, the last value, then the end")
  func racingWriter() async {
    let count = 50_000
    let stream = LatestValueStream<Int>()
    let writer = TestThread { () -> [UInt64] in
      var generator = SplitMix64(seed: 7)
      var published: [UInt64] = []
      published.reserveCapacity(count)
      for value in 0..<count {
        let bits = generator.changeBits()
        published.append(bits)
        stream.publish(value, changes: bits)
        // Vary the pace so the consumer both falls behind (coalescing) and catches up (parking).
        if generator.next() % 8 == 0 { spin(generator.next() % 4000) }
      }
      stream.finish()
      return published
    }
    var deliveries: [Delivery] = []
    for await (value, changes) in stream { deliveries.append(Delivery(value: value, changes: changes)) }
    let published = writer.join()
    #expect(deliveries.last?.value == count - 1)
    #expect(deliveries.reduce(0) { $0 | $1.changes } == published.reduce(0, |))
    #expect(deliveryProblem(deliveries, published: published) == nil)
  }
}
