// Sources/HTTP2Transport/ConnectionPicker.swift - which ready connection of a pool part takes the next call
//
// The pool part (ChannelCore) asks its picker for a connection each time a call is to start; the picker sees only
// the connections that can take a stream now. Least loaded is the channel's policy; round robin is the other
// common one (grpc's `round_robin`), here for a pool that wants it.

/// What a picker knows of a connection: how many streams it carries.
protocol StreamCarrier: AnyObject {
  var activeStreamCount: Int { get }
}

extension ClientConnection: StreamCarrier {}

/// Chooses the connection for the next call among those that can start a stream.
protocol ConnectionPicker {
  /// The connection to start the next call on, among `candidates` (each can start a stream; in the pool's order),
  /// taking only a connection with fewer than `share` open streams; nil when none qualifies.
  mutating func pick<Carrier: StreamCarrier>(from candidates: [Carrier], share: Int) -> Carrier?
}

/// The connection with the fewest open streams (the first of equals).
struct LeastLoadedPicker: ConnectionPicker {
  mutating func pick<Carrier: StreamCarrier>(from candidates: [Carrier], share: Int) -> Carrier? {
    var best: Carrier?
    for connection in candidates where connection.activeStreamCount < share {
      if let current = best, current.activeStreamCount <= connection.activeStreamCount { continue }
      best = connection
    }
    return best
  }
}

/// Each connection in turn, skipping those at their share.
struct RoundRobinPicker: ConnectionPicker {
  private var next = 0

  mutating func pick<Carrier: StreamCarrier>(from candidates: [Carrier], share: Int) -> Carrier? {
    guard !candidates.isEmpty else { return nil }
    for offset in 0..<candidates.count {
      let index = (next + offset) % candidates.count
      guard candidates[index].activeStreamCount < share else { continue }
      next = index + 1
      return candidates[index]
    }
    return nil
  }
}
