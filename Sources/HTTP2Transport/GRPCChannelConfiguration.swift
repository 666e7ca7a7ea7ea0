// Sources/HTTP2Transport/GRPCChannelConfiguration.swift - how a channel connects

public import HTTP2Session

/// How a ``GRPCChannel`` reaches its target and manages connections.
public struct GRPCChannelConfiguration: Sendable {
  /// Transport security.
  public enum Security: Sendable, Hashable {
    /// Cleartext HTTP/2 with prior knowledge (h2c). Only when explicitly chosen.
    case plaintext
    /// TLS with the given verification settings.
    case tls(TLSConfiguration)
  }

  /// TLS (verified against the system trust store, host name checked, ALPN `h2` required: the
  /// default) or plaintext, which is logged at notice level when the channel is made.
  public var security: Security
  /// The `:authority` sent with every call; default: the TLS server name override, else `host:port`.
  public var authority: String?
  /// The most connections opened to the target; more are opened only when the
  /// open ones reach the server's MAX_CONCURRENT_STREAMS, which no connection ever
  /// exceeds (calls wait for a free stream once this many are open). Default 16.
  public var maxConnections: Int
  /// How reconnect attempts back off after failures.
  public var backoff: ConnectionBackoff
  /// Keepalive pings; `nil` (the default) sends none.
  public var keepalive: Keepalive?
  /// The largest response message accepted; larger ones fail RESOURCE_EXHAUSTED. Default 4 MiB.
  public var maxReceiveMessageSize: Int
  /// How long a connection attempt (TCP and TLS) may take. Default 20 s.
  public var connectTimeout: Duration
  /// HTTP/2 settings and windows of each connection. Its `maxHeaderListSize` (default 16 KiB) bounds
  /// the response headers and trailers accepted: a call whose server sends more fails RESOURCE_EXHAUSTED.
  public var http2Settings: HTTP2Settings

  /// A configuration; TLS with the system trust store unless told otherwise.
  public init(
    security: Security = .tls(.default),
    authority: String? = nil,
    maxConnections: Int = 16,
    backoff: ConnectionBackoff = .init(),
    keepalive: Keepalive? = nil,
    maxReceiveMessageSize: Int = 4 << 20,
    connectTimeout: Duration = .seconds(20),
    http2Settings: HTTP2Settings = .init()
  ) {
    self.security = security
    self.authority = authority
    self.maxConnections = max(1, maxConnections)
    self.backoff = backoff
    self.keepalive = keepalive
    self.maxReceiveMessageSize = maxReceiveMessageSize
    self.connectTimeout = connectTimeout
    self.http2Settings = http2Settings
  }
}

/// Exponential backoff with jitter between connection attempts, as grpc's
/// connection-backoff document describes: the first retry after
/// `initialBackoff`, each next one `multiplier` times longer up to
/// `maxBackoff`, each randomised by ±`jitter`.
public struct ConnectionBackoff: Sendable, Hashable {
  /// The delay after the first failure. Default 1 s.
  public var initialBackoff: Duration
  /// The growth factor. Default 1.6.
  public var multiplier: Double
  /// The relative randomisation, 0...1. Default 0.2.
  public var jitter: Double
  /// The longest delay. Default 120 s.
  public var maxBackoff: Duration

  /// The parameters of grpc's connection-backoff document unless given.
  public init(
    initialBackoff: Duration = .seconds(1), multiplier: Double = 1.6, jitter: Double = 0.2,
    maxBackoff: Duration = .seconds(120)
  ) {
    self.initialBackoff = initialBackoff
    self.multiplier = multiplier
    self.jitter = min(max(jitter, 0), 1)
    self.maxBackoff = maxBackoff
  }

  /// The un-jittered delay before attempt `retry` (1 for the first retry).
  public func baseDelay(retry: Int) -> Duration {
    let initial = Self.seconds(initialBackoff)
    let capped = min(initial * pow(multiplier, Double(max(0, retry - 1))), Self.seconds(maxBackoff))
    return .nanoseconds(Int64(capped * 1e9))
  }

  /// The delay before attempt `retry`, with jitter drawn from `generator`.
  public func delay(retry: Int, using generator: inout some RandomNumberGenerator) -> Duration {
    let base = Self.seconds(baseDelay(retry: retry))
    let factor = jitter == 0 ? 1 : Double.random(in: (1 - jitter)...(1 + jitter), using: &generator)
    return .nanoseconds(Int64(base * factor * 1e9))
  }

  static func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
  }

  private func pow(_ base: Double, _ exponent: Double) -> Double {
    var result = 1.0
    var remaining = Int(exponent)
    while remaining > 0 {
      result *= base
      remaining -= 1
    }
    return result
  }
}

/// HTTP/2 PING keepalive.
public struct Keepalive: Sendable, Hashable {
  /// Time between pings. Default 30 s.
  public var interval: Duration
  /// How long to wait for the ack before the connection counts as dead. Default 10 s.
  public var timeout: Duration
  /// Whether to ping while no call is open. Default false.
  public var permitWithoutCalls: Bool

  /// Keepalive settings.
  public init(interval: Duration = .seconds(30), timeout: Duration = .seconds(10), permitWithoutCalls: Bool = false) {
    self.interval = interval
    self.timeout = timeout
    self.permitWithoutCalls = permitWithoutCalls
  }
}
