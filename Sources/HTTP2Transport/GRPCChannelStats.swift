// Sources/HTTP2Transport/GRPCChannelStats.swift - what a channel's pool parts count, and what they learned of the server
//
// Each pool part (ChannelCore) keeps its counters on its loop; GRPCChannel.stats() adds up those of its loops into
// one GRPCTransportStatistics. ServerEncodings is what the server last said it accepts, shared by the channel's callers
// and its loops.

import GRPCProtocol
import Primitives

/// A pool part's counters, kept on its loop.
struct ChannelCounters {
  /// Connection attempts made and failed.
  var connectAttempts = 0
  var connectFailures = 0
  /// Keepalive PINGs sent and acknowledged, over all connections.
  var pingsSent = 0
  var pingAcksReceived = 0
  /// GOAWAY frames received, over all connections.
  var goAwaysReceived = 0
  /// The delays applied after each failed attempt, most recent last (kept short).
  private(set) var recentBackoffDelays: [Duration] = []

  /// Records a backoff delay chosen after a failure.
  mutating func backedOff(_ delay: Duration) {
    recentBackoffDelays.append(delay)
    if recentBackoffDelays.count > 32 { recentBackoffDelays.removeFirst() }
  }
}

/// The encodings a server last said it accepts, shared between the channel's callers (who
/// pick request encodings) and its loop (which learns them from responses).
final class ServerEncodings: Sendable {
  private let accepted = Locked<[String]?>(nil)

  /// Records the server's `grpc-accept-encoding` names.
  func update(_ names: [String]) {
    accepted.withLock { $0 = names }
  }

  /// `wanted` if the server accepts it or has not said what it accepts; identity otherwise
  /// (compression.md: a client must not compress with what the server cannot decode).
  func negotiate(_ wanted: GRPCCompressionAlgorithm) -> GRPCCompressionAlgorithm {
    guard wanted != .identity else { return .identity }
    let names = accepted.withLock { $0 }
    guard let names else { return wanted }
    return names.contains(wanted.name) ? wanted : .identity
  }
}
