// Sources/HTTP2Transport/CallQueue.swift - the calls of a pool part waiting for a connection, in arrival order
//
// A call taken out before its turn (cancelled, past its deadline) leaves the queue's index at once, and its entry
// in the order stays behind, stale, until it is popped or the order is compacted: removing it in place would be a
// pass over the whole queue per call, quadratic when many queued calls time out together.

/// Calls waiting for a connection: first come, first served; any call removable in amortized O(1).
struct CallQueue {
  /// Arrival order; may hold stale entries (calls no longer in `live`).
  private var order = FIFOQueue<PendingCall>()
  /// The calls still waiting, by ID.
  private var live: [UInt64: PendingCall] = [:]
  /// Entries of `order` whose call is no longer waiting.
  private var stale = 0

  /// Whether no call waits.
  var isEmpty: Bool { live.isEmpty }
  /// Calls waiting.
  var count: Int { live.count }

  /// Queues `call` last.
  mutating func append(_ call: PendingCall) {
    order.append(call)
    live[call.id] = call
  }

  /// Takes the call with `id` out of the queue, if it waits there.
  mutating func remove(id: UInt64) -> PendingCall? {
    guard let call = live.removeValue(forKey: id) else { return nil }
    stale += 1
    // Compact once stale entries are most of the order: amortized O(1) a call.
    if stale > 64 && stale * 2 > order.count {
      order.removeAll { live[$0.id] !== $0 }
      stale = 0
    }
    return call
  }

  /// Takes the first call still waiting.
  mutating func popFirst() -> PendingCall? {
    while let call = order.popFirst() {
      if live.removeValue(forKey: call.id) != nil { return call }
      stale -= 1
    }
    return nil
  }

  /// Takes every call still waiting, in order.
  mutating func removeAll() -> [PendingCall] {
    let calls = order.filter { live[$0.id] === $0 }
    order.removeAll()
    live.removeAll()
    stale = 0
    return calls
  }
}
