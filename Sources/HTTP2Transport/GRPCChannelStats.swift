// Sources/HTTP2Transport/GRPCChannelStats.swift - what a channel counts, and what it learned of its server
//
// Each pool part (ChannelCore) keeps its counters on its loop; GRPCChannel.stats() adds up those of its loops into
// one GRPCChannelStats. ServerEncodings is what the server last said it accepts, shared by the channel's callers
// and its loops.

public import GRPCProtocol
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

/// A snapshot of a channel's connections and calls: the figures every client transport gives
/// (``GRPCTransportStatistics``, read through as `stats.openConnections`, `stats.connectAttempts` …)
/// and the channel's own (keepalive, streams per address, loops, resolution failures, addresses).
@dynamicMemberLookup
public struct GRPCChannelStats: Sendable, Hashable {
  /// The transport's figures: connections, calls, connection attempts, pings, GOAWAYs, backoff delays,
  /// connections per address and resolutions.
  public var transport: GRPCTransportStatistics
  /// The keepalive interval in force (doubled after each `too_many_pings`), or `nil` without keepalive.
  public var keepaliveInterval: Duration?
  /// Calls holding a stream, per server address.
  public var streamsPerAddress: [String: Int] = [:]
  /// Open connections on each event loop of the channel's group, in the group's order.
  public var connectionsPerLoop: [Int] = []
  /// Resolutions that failed.
  public var resolutionFailures: Int = 0
  /// The addresses of the last successful resolution, in its order.
  public var addresses: [String] = []

  /// A snapshot of `transport`'s figures and the channel's own.
  public init(
    transport: GRPCTransportStatistics = GRPCTransportStatistics(), keepaliveInterval: Duration? = nil,
    streamsPerAddress: [String: Int] = [:], connectionsPerLoop: [Int] = [], resolutionFailures: Int = 0,
    addresses: [String] = []
  ) {
    self.transport = transport
    self.keepaliveInterval = keepaliveInterval
    self.streamsPerAddress = streamsPerAddress
    self.connectionsPerLoop = connectionsPerLoop
    self.resolutionFailures = resolutionFailures
    self.addresses = addresses
  }

  /// One of the transport's figures (`stats.openConnections` is `stats.transport.openConnections`).
  public subscript<Value>(dynamicMember keyPath: WritableKeyPath<GRPCTransportStatistics, Value>) -> Value {
    get { transport[keyPath: keyPath] }
    set { transport[keyPath: keyPath] = newValue }
  }
}
