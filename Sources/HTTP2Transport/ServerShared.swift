// Sources/HTTP2Transport/ServerShared.swift - what a server's connections count together, whatever loop they run on
//
// A server's connections may run on several loops (a `GRPCEventLoopGroup`), but its budgets are the server's
// and each peer's: the counts behind them sit here, behind one lock. A connection takes it a few times a
// stream (opened, request bytes held, closed) and never while it calls out to anything.

import Primitives

/// What one client address holds of the server's budgets. Read and changed only under ``ServerShared``'s lock.
final class PeerUsage {
  var connections = 0
  var streams = 0
  var requestBytes = 0
  var headerBytes = 0
  /// The peer's stream-open rate limit.
  var streamOpens: RateLimit
  /// Until when (monotonic nanoseconds) its new connections are refused.
  var penaltyUntil: UInt64 = 0
  /// Whether a refusal of its connections was logged: once per peer until it is forgotten (its entry goes).
  var refusalLogged = false

  init(_ configuration: GRPCServerConfiguration) {
    let burst = configuration.maxStreamsPerPeer == .max ? Int(Int32.max) : configuration.maxStreamsPerPeer
    streamOpens = RateLimit(burst: burst, perSecond: configuration.streamOpensPerSecondPerPeer)
  }

  /// Whether it holds nothing and owes nothing at `now`: it may be forgotten.
  func isIdle(at now: UInt64) -> Bool {
    connections == 0 && streams == 0 && requestBytes == 0 && headerBytes == 0 && penaltyUntil <= now
      && streamOpens.isIdle(at: now)
  }
}

/// The counts of a server that all its connections update: its statistics (the open connections, the
/// request and header bytes held, which its budgets are checked against) and what each peer holds.
///
/// `@unchecked Sendable`: every field, and every ``PeerUsage`` it hands out, is read and written only
/// inside ``withLock(_:)``.
final class ServerShared: @unchecked Sendable {
  struct State {
    var stats = GRPCServerStats(
      connectionsAccepted: 0, openConnections: 0, callsStarted: 0, openCalls: 0, callsCancelledByClient: 0,
      goAwaysSent: 0, connectionsDropped: 0, streamsReset: 0)
    /// What each client address holds; an entry goes once it holds nothing and its rate limit is full again.
    var peers: [String: PeerUsage] = [:]
    /// Whether connections are being refused for the connection limit (logged once per episode).
    var refusingConnections = false
  }

  let configuration: GRPCServerConfiguration
  private let state = Locked(State())

  init(configuration: GRPCServerConfiguration) {
    self.configuration = configuration
  }

  /// Runs `body` under the lock.
  @inline(__always)
  func withLock<Result>(_ body: (inout State) -> Result) -> Result {
    state.withLock { body(&$0) }
  }

  /// Changes the statistics under the lock.
  @inline(__always)
  func count(_ body: (inout GRPCServerStats) -> Void) {
    state.withLock { body(&$0.stats) }
  }

  /// A copy of the statistics.
  var stats: GRPCServerStats { state.withLock { $0.stats } }
}

extension ServerShared.State {
  /// The usage of `peer`, made when it has none.
  mutating func usage(of peer: String, _ configuration: GRPCServerConfiguration) -> PeerUsage {
    if let usage = peers[peer] { return usage }
    let usage = PeerUsage(configuration)
    peers[peer] = usage
    return usage
  }
}
