// Sources/ToolSupport/ServerLimitOptions.swift - the flags of a gRPC server's deadlines and budgets
//
// One option group for every tool that listens (`fleetsim`, `tripwatch relay run`), so that each limit has
// one flag name, one default and one description: GRPCServerConfiguration's, which explains them.

package import ArgumentParser
package import HTTP2Transport
import Primitives

/// The deadlines and budgets of a listening server (``GRPCServerConfiguration``'s), as flags.
package struct ServerLimitOptions: ParsableArguments {
  @Option(
    name: .customLong("max-concurrent-streams"), help: "SETTINGS_MAX_CONCURRENT_STREAMS per connection (default 1000).")
  package var maxConcurrentStreams: UInt32?

  @Option(
    name: .customLong("max-connections"), help: "Connections open at once; more are accepted and closed at once.")
  package var maxConnections = 1024

  @Option(name: .customLong("max-connections-per-peer"), help: "Connections one client address may have open.")
  package var maxConnectionsPerPeer = 64

  @Option(
    name: .customLong("max-streams-per-peer"), help: "Streams one client address may have open over its connections.")
  package var maxStreamsPerPeer = 10_000

  @Option(
    name: .customLong("stream-opens-per-second"),
    help: """
      Streams one client address may open a second after a burst of --max-streams-per-peer; a connection \
      opening them faster gets GOAWAY(ENHANCE_YOUR_CALM) and its address is refused for a second.
      """)
  package var streamOpensPerSecond = 1_000.0

  @Option(
    name: .customLong("handshake-timeout"), help: "Seconds a connection has for TLS, the preface and its SETTINGS.")
  package var handshakeTimeout = 10.0

  @Option(
    name: .customLong("request-timeout"),
    help: "Seconds a request has from its headers to its end; then DEADLINE_EXCEEDED.")
  package var requestTimeout = 10.0

  @Option(
    name: .customLong("idle-timeout"),
    help: "Seconds a connection may have no call before it gets GOAWAY and is closed (0: never).")
  package var idleTimeout = 300.0

  @Option(
    name: .customLong("max-header-list-size"), help: "SETTINGS_MAX_HEADER_LIST_SIZE, announced and enforced (bytes).")
  package var maxHeaderListSize = 8 << 10

  @Option(name: .customLong("max-header-bytes"), help: "Decoded header bytes all open streams may hold.")
  package var maxHeaderBytes = 64 << 20

  @Option(
    name: .customLong("max-peer-header-bytes"), help: "Decoded header bytes one client address's streams may hold.")
  package var maxPeerHeaderBytes = 16 << 20

  @Option(
    name: .customLong("max-connection-request-bytes"),
    help: "Bytes of requests still arriving one connection may hold; a request above it is RESOURCE_EXHAUSTED.")
  package var maxConnectionRequestBytes = 8 << 20

  @Option(
    name: .customLong("max-peer-request-bytes"), help: "Bytes of requests still arriving one client address may hold.")
  package var maxPeerRequestBytes = 16 << 20

  @Option(name: .customLong("max-request-bytes"), help: "Bytes of requests still arriving all connections may hold.")
  package var maxRequestBytes = 64 << 20

  @Option(
    name: .customLong("max-outbound-bytes"),
    help: "Unsent bytes of a connection past which the server stops reading from it until it drains.")
  package var maxOutboundBytes = 1 << 20

  @Option(
    name: .customLong("output-stall-timeout"),
    help: "Seconds a connection's output may stay backed up (its client reads nothing) before it is closed.")
  package var outputStallTimeout = 60.0

  @Option(
    name: .customLong("server-loops"),
    help: """
      Threads the connections run on (TLS, HTTP/2, header decoding, these bounds), spread round robin; the \
      service runs on one more. 0: one per core. Default 1: the connections share the service's thread.
      """)
  package var serverLoops = 1

  package init() {}

  package func validate() throws {
    if let maxConcurrentStreams, maxConcurrentStreams == 0 {
      throw ValidationError("--max-concurrent-streams must be > 0")
    }
    let counts = [
      ("--max-connections", maxConnections), ("--max-connections-per-peer", maxConnectionsPerPeer),
      ("--max-streams-per-peer", maxStreamsPerPeer), ("--max-header-list-size", maxHeaderListSize),
      ("--max-header-bytes", maxHeaderBytes), ("--max-peer-header-bytes", maxPeerHeaderBytes),
      ("--max-connection-request-bytes", maxConnectionRequestBytes),
      ("--max-peer-request-bytes", maxPeerRequestBytes), ("--max-request-bytes", maxRequestBytes),
      ("--max-outbound-bytes", maxOutboundBytes),
    ]
    for (flag, value) in counts where value <= 0 { throw ValidationError("\(flag) must be > 0") }
    guard serverLoops >= 0, serverLoops <= 1024 else { throw ValidationError("--server-loops must be 0 to 1024") }
    guard streamOpensPerSecond > 0, streamOpensPerSecond.isFinite else {
      throw ValidationError("--stream-opens-per-second must be > 0")
    }
    for (flag, value) in [
      ("--handshake-timeout", handshakeTimeout), ("--request-timeout", requestTimeout),
      ("--output-stall-timeout", outputStallTimeout),
    ] where !(value > 0 && value.isFinite) {
      throw ValidationError("\(flag) must be > 0")
    }
    guard idleTimeout >= 0, idleTimeout.isFinite else { throw ValidationError("--idle-timeout must be ≥ 0") }
  }

  /// Sets these limits on `configuration` (whose own `maxConcurrentStreams` stays unless the flag was given).
  package func apply(to configuration: inout GRPCServerConfiguration) {
    if let maxConcurrentStreams { configuration.maxConcurrentStreams = maxConcurrentStreams }
    configuration.maxConnections = maxConnections
    configuration.maxConnectionsPerPeer = maxConnectionsPerPeer
    configuration.maxStreamsPerPeer = maxStreamsPerPeer
    configuration.streamOpensPerSecondPerPeer = streamOpensPerSecond
    configuration.handshakeTimeout = Duration.clampedSeconds(handshakeTimeout)
    configuration.requestTimeout = Duration.clampedSeconds(requestTimeout)
    configuration.idleTimeout = idleTimeout > 0 ? Duration.clampedSeconds(idleTimeout) : nil
    configuration.maxHeaderListSize = maxHeaderListSize
    configuration.maxHeaderBytes = maxHeaderBytes
    configuration.maxHeaderBytesPerPeer = maxPeerHeaderBytes
    configuration.maxRequestBytesPerConnection = maxConnectionRequestBytes
    configuration.maxRequestBytesPerPeer = maxPeerRequestBytes
    configuration.maxRequestBytes = maxRequestBytes
    configuration.maxOutboundBytesPerConnection = maxOutboundBytes
    configuration.outputStallTimeout = Duration.clampedSeconds(outputStallTimeout)
    let loops = serverLoops == 0 ? GRPCEventLoopGroup.coreCount : serverLoops
    configuration.eventLoopGroup = loops > 1 ? GRPCEventLoopGroup(loopCount: loops, name: "server-loop") : nil
  }
}
