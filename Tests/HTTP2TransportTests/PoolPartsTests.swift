// Tests/HTTP2TransportTests/PoolPartsTests.swift - the connection pool's parts, without a socket
//
// CallQueue (arrival order, removal of any call, compaction of stale entries), the pickers (least loaded, round
// robin, the share limit) and a Subchannel's backoff (one attempt at a time while failing, one counted failure
// per backoff period, waiters woken): values and small objects tested on their own, no loop and no socket.

import GRPCProtocol
import Primitives
import Testing

@testable import HTTP2Transport

private final class NoHandler: GRPCCallHandler {
  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {}
  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {}
}

private func call(_ id: UInt64) -> PendingCall {
  PendingCall(
    id: id, path: "/t.S/M", kind: .unary, singleRequest: [], options: CallOptions(), handler: NoHandler(),
    receiver: nil, deadline: nil, requestEncoding: .identity)
}

/// A connection as a picker sees it.
private final class Carrier: StreamCarrier {
  let name: String
  var activeStreamCount: Int
  init(_ name: String, streams: Int) {
    self.name = name
    self.activeStreamCount = streams
  }
}

@Suite("Pool parts (no socket)")
struct PoolPartsTests {
  @Test("CallQueue: first come first served, any call removable, removed calls never popped")
  func callQueueOrder() {
    var queue = CallQueue()
    for id in 1...5 { queue.append(call(UInt64(id))) }
    #expect(queue.count == 5)
    #expect(queue.remove(id: 2)?.id == 2)
    #expect(queue.remove(id: 2) == nil)
    #expect(queue.remove(id: 99) == nil)
    #expect(queue.popFirst()?.id == 1)
    #expect(queue.popFirst()?.id == 3)
    #expect(queue.count == 2)
    #expect(queue.removeAll().map(\.id) == [4, 5])
    #expect(queue.isEmpty)
    #expect(queue.popFirst() == nil)
  }

  @Test("CallQueue: 200,000 timed-out calls leave nothing behind, and the live ones keep their order")
  func callQueueCompaction() {
    var queue = CallQueue()
    let total: UInt64 = 200_000
    for id in 1...total { queue.append(call(id)) }
    // Every call but each thousandth leaves before its turn.
    for id in 1...total where id % 1000 != 0 { _ = queue.remove(id: id) }
    #expect(queue.count == 200)
    var popped: [UInt64] = []
    while let next = queue.popFirst() { popped.append(next.id) }
    #expect(popped == (1...200).map { UInt64($0) * 1000 })
  }

  @Test("Least loaded: the connection with the fewest streams, the first of equals, under the share")
  func leastLoaded() {
    var picker = LeastLoadedPicker()
    let a = Carrier("a", streams: 3)
    let b = Carrier("b", streams: 1)
    let c = Carrier("c", streams: 1)
    #expect(picker.pick(from: [a, b, c], share: .max)?.name == "b")
    #expect(picker.pick(from: [a, b, c], share: 1) == nil)
    #expect(picker.pick(from: [a], share: 4)?.name == "a")
    #expect(picker.pick(from: [Carrier](), share: .max) == nil)
  }

  @Test("Round robin: each connection in turn, skipping those at their share")
  func roundRobin() {
    var picker = RoundRobinPicker()
    let a = Carrier("a", streams: 0)
    let b = Carrier("b", streams: 5)
    let c = Carrier("c", streams: 0)
    let picks = (0..<4).compactMap { _ in picker.pick(from: [a, b, c], share: .max)?.name }
    #expect(picks == ["a", "b", "c", "a"])
    let limited = (0..<3).compactMap { _ in picker.pick(from: [a, b, c], share: 5)?.name }
    #expect(limited == ["c", "a", "c"])
  }

  @Test("Subchannel: healthy takes every attempt; failing takes one at a time after the delay; success wakes waiters")
  func subchannelBackoff() {
    let backoff = RetryBackoff(initial: .seconds(1), multiplier: 2, jitter: 0, maximum: .seconds(8))
    let subchannels = Subchannels(backoff: backoff)
    let address = subchannels["10.0.0.1:443"]
    #expect(subchannels["10.0.0.1:443"] === address)
    let second: UInt64 = 1_000_000_000
    #expect(address.start(now: 0) {} == .connect(generation: 0))
    #expect(address.start(now: 0) {} == .connect(generation: 0))
    // Two attempts of generation 0 fail together: one backoff period.
    #expect(address.failed(generation: 0, now: 10 * second, error: .closedByPeer) == .seconds(1))
    #expect(address.failed(generation: 0, now: 10 * second, error: .closedByPeer) == nil)
    #expect(address.lastError == .closedByPeer)
    #expect(address.start(now: 10 * second) {} == .backingOff(until: 11 * second))
    // After the delay, one loop attempts; the others wait for its outcome.
    #expect(address.start(now: 11 * second) {} == .connect(generation: 1))
    let woken = Locked(0)
    #expect(address.start(now: 11 * second) { woken.withLock { $0 += 1 } } == .waitingForAnotherAttempt)
    #expect(address.failed(generation: 1, now: 12 * second, error: .closedByPeer) == .seconds(2))
    #expect(woken.withLock { $0 } == 1)
    #expect(address.start(now: 14 * second) {} == .connect(generation: 2))
    #expect(address.start(now: 14 * second) { woken.withLock { $0 += 1 } } == .waitingForAnotherAttempt)
    address.succeeded()
    #expect(woken.withLock { $0 } == 2)
    #expect(address.lastError == nil)
    #expect(address.backingOffUntil == 0)
    #expect(address.start(now: 14 * second) {} == .connect(generation: 0))
  }

  @Test("Subchannels: an address that leaves the resolution forgets its backoff and wakes its waiters")
  func subchannelsRetain() {
    let subchannels = Subchannels(backoff: RetryBackoff(initial: .seconds(1), jitter: 0))
    let gone = subchannels["10.0.0.2:443"]
    _ = gone.failed(generation: 0, now: 0, error: .closedByPeer)
    _ = gone.start(now: 2_000_000_000) {}
    let woken = Locked(false)
    #expect(gone.start(now: 2_000_000_000) { woken.withLock { $0 = true } } == .waitingForAnotherAttempt)
    subchannels.retain(["10.0.0.3:443"])
    #expect(woken.withLock { $0 })
    #expect(subchannels["10.0.0.2:443"] !== gone)
    #expect(subchannels["10.0.0.2:443"].backingOffUntil == 0)
  }
}
