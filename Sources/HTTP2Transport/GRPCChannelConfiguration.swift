// Sources/HTTP2Transport/GRPCChannelConfiguration.swift - how a channel connects

public import GRPCProtocol
public import HTTP2Session
import Primitives
public import TLSCrypto

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
  public var backoff: RetryBackoff
  /// Keepalive pings on connections that carry calls: on by default (``Keepalive``'s
  /// defaults), so a server that stops answering is noticed and its calls end UNAVAILABLE.
  /// `nil` sends none.
  public var keepalive: Keepalive?
  /// The largest response message accepted, on the wire and once decompressed; larger ones
  /// fail RESOURCE_EXHAUSTED. Default 4 MiB.
  public var maxReceiveMessageSize: Int
  /// How long a connection attempt may take: TCP, TLS, and the server's first SETTINGS
  /// allowing at least one stream. A server that announces SETTINGS_MAX_CONCURRENT_STREAMS = 0
  /// and does not raise it within this time counts as a failed attempt (backoff applies, the
  /// calls waiting for it end UNAVAILABLE). Default 20 s.
  public var connectTimeout: Duration
  /// HTTP/2 settings and windows of each connection. Its `maxHeaderListSize` (default 16 KiB) bounds
  /// the response headers and trailers accepted: a call whose server sends more fails RESOURCE_EXHAUSTED.
  public var http2Settings: HTTP2Settings
  /// Message compression: what requests use unless a call says otherwise, and which response
  /// encodings are announced and decompressed.
  public var compression: GRPCCompressionConfiguration
  /// The event loops the channel's connections run on. `nil` (the default): the channel starts a
  /// group of one loop of its own, and stops it when the channel goes. Give a shared
  /// ``GRPCEventLoopGroup`` (one loop per core by default) to spread a channel's connections over
  /// several cores, and to share the threads between channels. ``maxConnections`` is shared out
  /// between the loops (each loop gets at least one).
  public var eventLoopGroup: GRPCEventLoopGroup?
  /// How often the target's name is resolved again while the channel is in use, besides after a
  /// connection failure, a GOAWAY, or a change the resolver reports. Default 30 s.
  public var resolutionInterval: Duration

  /// A configuration; TLS with the system trust store unless told otherwise.
  public init(
    security: Security = .tls(.default),
    authority: String? = nil,
    maxConnections: Int = 16,
    backoff: RetryBackoff = RetryBackoff(maximum: .seconds(120)),
    keepalive: Keepalive? = Keepalive(),
    maxReceiveMessageSize: Int = 4 << 20,
    connectTimeout: Duration = .seconds(20),
    http2Settings: HTTP2Settings = .init(),
    compression: GRPCCompressionConfiguration = .init(),
    eventLoopGroup: GRPCEventLoopGroup? = nil,
    resolutionInterval: Duration = .seconds(30)
  ) {
    self.security = security
    self.authority = authority
    self.maxConnections = max(1, maxConnections)
    self.backoff = backoff
    self.keepalive = keepalive
    self.maxReceiveMessageSize = maxReceiveMessageSize
    self.connectTimeout = connectTimeout
    self.http2Settings = http2Settings
    self.compression = compression
    self.eventLoopGroup = eventLoopGroup
    self.resolutionInterval = max(resolutionInterval, .milliseconds(10))
  }
}

/// A channel's message compression (compression.md).
public struct GRPCCompressionConfiguration: Sendable, Hashable {
  /// How request messages are compressed when a call's ``CallOptions/compression`` is not set.
  /// Default ``GRPCCompressionAlgorithm/identity``: uncompressed, as gRPC's channels default to.
  ///
  /// Once a server has said which encodings it accepts (its `grpc-accept-encoding`), an
  /// encoding not among them is not used: requests then go uncompressed.
  public var requestEncoding: GRPCCompressionAlgorithm
  /// The response encodings announced in `grpc-accept-encoding` and decompressed; a response
  /// compressed with any other fails INTERNAL. Default gzip and deflate (identity is implied).
  public var acceptedEncodings: [GRPCCompressionAlgorithm]

  /// Uncompressed requests, gzip and deflate accepted, unless given.
  public init(
    requestEncoding: GRPCCompressionAlgorithm = .identity,
    acceptedEncodings: [GRPCCompressionAlgorithm] = [.gzip, .deflate]
  ) {
    self.requestEncoding = requestEncoding
    self.acceptedEncodings = acceptedEncodings
  }
}

/// HTTP/2 PING keepalive, as grpc-go's client does it: a connection from which nothing has
/// been read for ``interval`` gets a PING; if nothing (the ACK included) arrives within
/// ``timeout`` after it, the connection is closed and its calls end UNAVAILABLE. So a server
/// that stops answering is noticed within `interval + timeout`, and a server that keeps
/// sending is never pinged.
///
/// Servers limit how often they may be pinged (grpc-core and grpc-go: every 5 minutes without
/// data by default) and answer a client that pings more often with GOAWAY ENHANCE_YOUR_CALM
/// `too_many_pings`. The channel then doubles its interval for every later connection, as
/// grpc-go does, and logs it.
public struct Keepalive: Sendable, Hashable {
  /// Silence after which a PING is sent. Default 20 s. Servers enforce their own minimum
  /// (see above); intervals below 10 s are meant for tests and servers known to allow them.
  public var interval: Duration
  /// How long to wait after the PING for anything from the server before the connection
  /// counts as dead. Default 10 s.
  public var timeout: Duration
  /// Whether to ping while no call is open. Default false: an idle connection costs the
  /// server nothing, and servers reject pings without calls by default.
  public var permitWithoutCalls: Bool

  /// Keepalive settings.
  public init(interval: Duration = .seconds(20), timeout: Duration = .seconds(10), permitWithoutCalls: Bool = false) {
    self.interval = interval
    self.timeout = timeout
    self.permitWithoutCalls = permitWithoutCalls
  }
}
