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
  channel.backoff = ConnectionBackoff(
    initialBackoff: connection.reconnectBackoff.initial, multiplier: connection.reconnectBackoff.multiplier,
    jitter: connection.reconnectBackoff.jitter, maxBackoff: connection.reconnectBackoff.maximum)
  channel.keepalive = connection.keepaliveInterval.map {
    Keepalive(interval: $0, timeout: connection.keepaliveTimeout)
  }
  channel.maxReceiveMessageSize = connection.maxReceiveMessageSize
  channel.http2Settings.maxHeaderListSize = UInt32(clamping: connection.maxResponseHeaderListSize)
  return try GRPCChannel(
    host: configuration.host, port: configuration.port, configuration: channel, logger: configuration.logger)
}
