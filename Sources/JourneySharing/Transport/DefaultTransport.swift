// Sources/JourneySharing/Transport/DefaultTransport.swift - the one place JourneySharing meets HTTP/2
//
// Following depends on GRPCProtocol's transport seam only. This file makes the transport a
// configuration asks for, gRPC over HTTP/2 on nghttp2 and OpenSSL, from JourneySharing's own settings.

import GRPCProtocol
import HTTP2Session
import HTTP2Transport

/// The HTTP/2 channel for `configuration`.
///
/// - Throws: ``GRPCError`` (`INVALID_ARGUMENT`) when the TLS settings cannot be loaded.
func makeDefaultTransport(_ configuration: JourneySharingConfiguration) throws(GRPCError) -> any GRPCClientTransport {
  let connection = configuration.connection
  var channel = GRPCChannelConfiguration()
  switch configuration.security {
  case .plaintext:
    channel.security = .plaintext
  case .tls(let options):
    var tls = TLSConfiguration()
    switch options.trustRoots {
    case .systemDefault: tls.trustRoots = .systemDefault
    case .caFile(let path): tls.trustRoots = .caFile(path)
    }
    tls.certificateChainFile = options.clientCertificateChainFile
    tls.privateKeyFile = options.clientPrivateKeyFile
    tls.serverNameOverride = options.serverNameOverride
    channel.security = .tls(tls)
  }
  channel.authority = connection.authority
  channel.maxConnections = connection.maxConnections
  channel.connectTimeout = connection.connectTimeout
  channel.backoff = connection.reconnectBackoff
  channel.keepalive = connection.keepaliveInterval.map {
    Keepalive(interval: $0, timeout: connection.keepaliveTimeout)
  }
  channel.maxReceiveMessageSize = connection.maxReceiveMessageSize
  channel.http2Settings.maxHeaderListSize = UInt32(clamping: connection.maxResponseHeaderListSize)
  channel.resolutionInterval = connection.resolutionInterval
  // Shared loops when given; otherwise loops of these services' own, one per core. The channel holds the
  // group, which stops when the channel (the group's last holder) goes. Each loop keeps connections of its
  // own, but the reconnect backoff per address is the channel's (AddressBackoff): more loops make no more
  // attempts against a server that is down.
  channel.eventLoopGroup = connection.eventLoops?.group ?? GRPCEventLoopGroup(name: "journeysharing-io")
  if let target = configuration.target {
    return try GRPCChannel(target: target, configuration: channel, logger: configuration.logger)
  }
  return try GRPCChannel(
    host: configuration.host, port: configuration.port, configuration: channel, logger: configuration.logger)
}

/// Event loops (I/O threads) that several ``JourneySharingServices`` share, through
/// ``JourneySharingConfiguration/Connection/eventLoops``: each services' connections are spread over the same
/// threads instead of starting loops of their own.
///
/// The loops run until ``shutdown()`` or until the last services using them (and this object) are gone. Shut
/// them down only after every services using them has shut down.
public final class JourneySharingEventLoops: Sendable, Hashable {
  let group: GRPCEventLoopGroup

  /// Starts `loopCount` loops (at least 1), by default one per core.
  ///
  /// - Parameter readCoalescing: How long a loop that just read waits before reading again (zero, the default:
  ///   it does not; at most 10 ms): updates that arrive meanwhile are read and handed to the delivery threads
  ///   together, which may save CPU per update, at up to this much more latency. Measured against tripload's
  ///   server it saved nothing (README "Benchmarks").
  public init(loopCount: Int = JourneySharingEventLoops.coreCount, readCoalescing: Duration = .zero) {
    group = GRPCEventLoopGroup(loopCount: loopCount, name: "journeysharing-io", readCoalescing: readCoalescing)
  }

  /// The cores this process may run on, at least 1.
  public static var coreCount: Int { GRPCEventLoopGroup.coreCount }

  /// How many loops run.
  public var loopCount: Int { group.loopCount }

  /// Stops the loops.
  public func shutdown() { group.shutdown() }

  /// Identity: two values are equal when they are the same loops.
  public static func == (lhs: JourneySharingEventLoops, rhs: JourneySharingEventLoops) -> Bool { lhs === rhs }

  /// Hashes the identity.
  public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
