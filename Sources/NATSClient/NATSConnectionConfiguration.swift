// Sources/NATSClient/NATSConnectionConfiguration.swift - servers, name, timeouts and reconnecting

/// How ``NATSConnection/connect(_:logger:)`` connects, and how the connection reconnects.
///
/// The defaults follow libnats' own, except that reconnecting never gives up (``Reconnect/forever(wait:)``):
/// a relay should ride out any outage of its NATS cluster.
package struct NATSConnectionConfiguration: Sendable, Hashable {
  /// What the connection does after it loses its server.
  package enum Reconnect: Sendable, Hashable {
    /// Never reconnect: the connection closes when it loses its server.
    case disabled
    /// Reconnect forever. After every server in the list has been tried once, wait `wait` (plus jitter)
    /// before trying a server again.
    case forever(wait: Duration)
    /// Reconnect at most `attempts` times per server, waiting `wait` between rounds; then close.
    case attempts(Int, wait: Duration)
  }

  /// Server URLs, for example `nats://127.0.0.1:4222` or `tls://nats.example.com:4222`; several for a
  /// cluster. libnats adds the cluster's other members as the servers announce them. User information in a
  /// URL (`nats://user:password@host`, `nats://token@host`) is taken out before libnats sees the URL and
  /// used as the ``credentials`` (see ``NATSServerURL``), so it never appears in a log line or an error.
  package var servers: [String]
  /// How the connection authenticates. Default: none, or what the URLs carry.
  package var credentials: NATSCredentials = .none
  /// TLS to the servers; nil unless a URL's scheme is `tls` (then TLS with the system's trust store).
  package var tls: NATSTLSConfiguration?
  /// The connection's name, shown by the server (`/connz`) and in its logs.
  package var name: String?
  /// How long one attempt to connect to one server may take (TCP connect plus the first PING/PONG).
  package var connectTimeout: Duration = .seconds(2)
  /// What happens after the connection to a server is lost.
  package var reconnect: Reconnect = .forever(wait: .seconds(1))
  /// The most random delay added to each reconnect wait, so that many clients do not come back at once.
  package var reconnectJitter: Duration = .milliseconds(100)
  /// How many bytes of publishes (acks included) libnats keeps while reconnecting; beyond that a publish
  /// fails with ``NATSError/Code/insufficientBuffer``.
  package var reconnectBufferSize: Int = 8 * 1024 * 1024
  /// How often the client pings the server; a connection that misses ``maxPingsOutstanding`` pongs in a
  /// row is considered lost (libnats then reconnects).
  package var pingInterval: Duration = .seconds(120)
  /// See ``pingInterval``.
  package var maxPingsOutstanding: Int = 2
  /// Use ``servers`` in the given order instead of shuffling them (libnats shuffles by default).
  package var randomizeServers: Bool = true
  /// When the first connect fails: throw (false, the default) or return a connection that keeps trying
  /// in the background under ``reconnect``'s rules (true; ``NATSConnectionEvent/connected(server:)`` then
  /// reports success).
  package var retryOnFailedConnect: Bool = false
  /// Fail pending requests (JetStream API calls, publishes waiting for their ack) as soon as the connection
  /// is lost, with ``NATSError/Code/connectionDisconnected``, instead of letting them wait for an answer
  /// after the reconnect until their timeout.
  package var failRequestsOnDisconnect: Bool = false
  /// How many messages one subscription may hold in libnats before it is a slow consumer and drops
  /// messages (libnats' default is 65,536).
  package var maxPendingMessagesPerSubscription: Int = 65_536

  /// A configuration for `servers`, with the defaults above.
  package init(servers: [String], name: String? = nil) {
    self.servers = servers
    self.name = name
  }

  /// The servers as they may be printed: `scheme://host:port`, never user information.
  package var redactedServers: [String] { servers.map(NATSServerURL.redacted) }

  /// The servers libnats connects to (without user information) and the credentials to use: ``credentials``,
  /// or those the URLs carry (both at once is refused, as two answers to one question).
  func resolved() throws(NATSError) -> (servers: [NATSServerURL], credentials: NATSCredentials) {
    let (parsed, fromURLs) = try Self.servers(fromURLs: servers)
    if fromURLs != .none && credentials != .none {
      throw NATSError(
        code: .invalidArgument, message: "connect: credentials given both in a server URL and as credentials")
    }
    return (parsed, credentials != .none ? credentials : fromURLs)
  }
}
