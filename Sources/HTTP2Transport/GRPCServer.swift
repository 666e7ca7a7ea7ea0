// Sources/HTTP2Transport/GRPCServer.swift - the server side: listen, accept, serve gRPC calls
//
// Built from the same parts as the client: the event loop, ByteStream (TCP
// and TLS), and an nghttp2 session in the server role. A `GRPCService`
// (GRPCProtocol's service seam) receives each call once its request message is complete and answers
// on the server's loop, now or later (server streaming), through `GRPCServerCall`. The connections
// run on that loop too, or spread over the loops of a `GRPCEventLoopGroup`.

public import GRPCProtocol
public import Logging
import Primitives
import Synchronization
public import TLSCrypto

#if canImport(Glibc)
  import Glibc
#endif

/// How a ``GRPCServer`` listens, and the bounds it holds its clients to.
///
/// Anyone who can reach the port is a client, so every resource a client can make the server hold
/// is bounded three times: per connection, per peer (the client's IP address, whatever number of
/// connections it opens) and over the server. A peer past its share is refused; the others keep
/// theirs.
///
/// ### Deadlines
/// - **Handshake** (``handshakeTimeout``): from accept until the client's first SETTINGS frame
///   (TLS, the connection preface and SETTINGS). A connection that sends nothing is closed.
/// - **Request** (``requestTimeout``): from a request's HEADERS to its END_STREAM. A request that
///   has started but not finished is answered DEADLINE_EXCEEDED and reset.
/// - **Idle** (``idleTimeout``): a connection without a call (requests still arriving do not count)
///   gets GOAWAY and is closed (grpc's `max_connection_idle`).
///
/// ### Budgets
/// - **Request size.** A request message whose length prefix announces more than
///   ``maxReceiveMessageSize``, or more than its method declares
///   (``GRPCService/maxRequestMessageSize(forMethod:)``), is refused as soon as the prefix arrives.
/// - **Request memory.** The bytes of requests still arriving are counted per connection
///   (``maxRequestBytesPerConnection``), per peer (``maxRequestBytesPerPeer``) and over the server
///   (``maxRequestBytes``). A DATA frame that would take a count over its limit refuses its request.
/// - **Header memory.** The decoded header fields of every open stream (name, value and 32 bytes a
///   field, as SETTINGS_MAX_HEADER_LIST_SIZE counts them) are counted per peer
///   (``maxHeaderBytesPerPeer``) and over the server (``maxHeaderBytes``) for the stream's life; one
///   list is at most ``maxHeaderListSize``.
/// - **Streams.** At most ``maxConcurrentStreams`` a connection (SETTINGS) and ``maxStreamsPerPeer``
///   a peer; a peer opens at most ``streamOpensPerSecondPerPeer`` a second after a burst of
///   ``maxStreamsPerPeer``. A connection that opens streams faster gets GOAWAY(ENHANCE_YOUR_CALM), and
///   its peer's new connections are closed at accept for ``peerPenalty``.
/// - **Connections.** At most ``maxConnections`` open at once, ``maxConnectionsPerPeer`` a peer; more are
///   accepted and closed at once.
/// - **Output.** When a connection's unsent output passes ``maxOutboundBytesPerConnection`` the server
///   stops reading from it and stops moving responses into it (they wait in their streams, where a
///   producer sees them as ``GRPCServerCall/outboundBufferedBytes``) until the socket has taken it all; a
///   connection whose output stays backed up for ``outputStallTimeout`` is closed.
/// - **Descriptors.** When accepting fails for want of file descriptors (EMFILE, ENFILE), the server
///   stops watching the listener for 100 ms, doubling to 1 s while it lasts, instead of retrying at once.
///
/// A refused request gets the response a gRPC server gives a request it cannot take: a Trailers-Only
/// response with RESOURCE_EXHAUSTED (DEADLINE_EXCEEDED for the request deadline), then
/// RST_STREAM(NO_ERROR), which stops the client sending (RFC 9113 §8.1). ``GRPCServerStats`` counts
/// every refusal.
public struct GRPCServerConfiguration: Sendable {
  /// The address to bind, for example `127.0.0.1`.
  public var host: String
  /// The port to bind; 0 picks a free one (see ``GRPCServer/localPort``).
  public var port: Int
  /// TLS, or `nil` for cleartext h2c.
  public var tls: TLSServerConfiguration?
  /// Advertised SETTINGS_MAX_CONCURRENT_STREAMS. Default 1000.
  public var maxConcurrentStreams: UInt32
  /// The largest request message accepted, checked against each message's length prefix. Default 4 MiB.
  public var maxReceiveMessageSize: Int
  /// The most bytes of requests still arriving that one connection may hold. Default 8 MiB (two
  /// requests of the default largest size at once); keep it at least ``maxReceiveMessageSize``.
  public var maxRequestBytesPerConnection: Int
  /// The most bytes of requests still arriving that one peer's connections together may hold.
  /// Default 16 MiB: four peers at their limit leave the server's default budget full.
  public var maxRequestBytesPerPeer: Int
  /// The most bytes of requests still arriving that all connections together may hold. Default 64 MiB.
  public var maxRequestBytes: Int
  /// Advertised and enforced SETTINGS_MAX_HEADER_LIST_SIZE. Default 8 KiB (gRPC's default; a Fleet
  /// Engine request's headers, a JWT included, take about 1.5 KiB).
  public var maxHeaderListSize: Int
  /// The most decoded header bytes one peer's open streams may hold. Default 16 MiB.
  public var maxHeaderBytesPerPeer: Int
  /// The most decoded header bytes all open streams may hold. Default 64 MiB.
  public var maxHeaderBytes: Int
  /// The most streams one peer may have open over all its connections. Default 10,000.
  public var maxStreamsPerPeer: Int
  /// Streams one peer may open a second, after a burst of ``maxStreamsPerPeer``. Default 1,000.
  public var streamOpensPerSecondPerPeer: Double
  /// How long the connections of a peer that opened streams too fast are refused at accept. Default 1 s.
  public var peerPenalty: Duration
  /// The most connections open at once; a connection accepted beyond it is closed at once (the
  /// client sees the connection end before any HTTP/2 frame). Default 1024.
  public var maxConnections: Int
  /// The most connections one peer may have open at once. Default 64.
  public var maxConnectionsPerPeer: Int
  /// Unsent output of a connection past which the server stops reading from it. Default 1 MiB.
  public var maxOutboundBytesPerConnection: Int
  /// How long a connection's output may stay backed up (the client reads nothing) before it is closed.
  /// Default 60 s.
  public var outputStallTimeout: Duration
  /// How long a new connection has to complete TLS, the preface and its first SETTINGS. Default 10 s.
  public var handshakeTimeout: Duration
  /// How long a request may take from its HEADERS to its END_STREAM. Default 10 s.
  public var requestTimeout: Duration
  /// How long a connection may have no call (from its accept, or since its last call ended) before
  /// the server sends GOAWAY and closes it; `nil` keeps idle connections open. Default 5 minutes.
  public var idleTimeout: Duration?
  /// The loops the connections run on (TLS, HTTP/2, HPACK, the bounds), spread round robin as they are
  /// accepted; `nil` runs them on the server's own loop. The service runs on the server's loop either
  /// way: a call's methods hop to its connection's loop. The group must outlive the server.
  public var eventLoopGroup: GRPCEventLoopGroup?

  /// A configuration listening on `host:port`; every parameter has the default described on its property.
  public init(
    host: String = "127.0.0.1", port: Int = 0, tls: TLSServerConfiguration? = nil,
    maxConcurrentStreams: UInt32 = 1000, maxReceiveMessageSize: Int = 4 << 20,
    maxRequestBytesPerConnection: Int = 8 << 20, maxRequestBytesPerPeer: Int = 16 << 20,
    maxRequestBytes: Int = 64 << 20, maxHeaderListSize: Int = 8 << 10, maxHeaderBytesPerPeer: Int = 16 << 20,
    maxHeaderBytes: Int = 64 << 20, maxStreamsPerPeer: Int = 10_000, streamOpensPerSecondPerPeer: Double = 1_000,
    peerPenalty: Duration = .seconds(1), maxConnections: Int = 1024, maxConnectionsPerPeer: Int = 64,
    maxOutboundBytesPerConnection: Int = 1 << 20, outputStallTimeout: Duration = .seconds(60),
    handshakeTimeout: Duration = .seconds(10),
    requestTimeout: Duration = .seconds(10), idleTimeout: Duration? = .seconds(300),
    eventLoopGroup: GRPCEventLoopGroup? = nil
  ) {
    self.host = host
    self.port = port
    self.tls = tls
    self.maxConcurrentStreams = maxConcurrentStreams
    self.maxReceiveMessageSize = maxReceiveMessageSize
    self.maxRequestBytesPerConnection = maxRequestBytesPerConnection
    self.maxRequestBytesPerPeer = maxRequestBytesPerPeer
    self.maxRequestBytes = maxRequestBytes
    self.maxHeaderListSize = maxHeaderListSize
    self.maxHeaderBytesPerPeer = maxHeaderBytesPerPeer
    self.maxHeaderBytes = maxHeaderBytes
    self.maxStreamsPerPeer = maxStreamsPerPeer
    self.streamOpensPerSecondPerPeer = streamOpensPerSecondPerPeer
    self.peerPenalty = peerPenalty
    self.maxConnections = maxConnections
    self.maxConnectionsPerPeer = maxConnectionsPerPeer
    self.maxOutboundBytesPerConnection = maxOutboundBytesPerConnection
    self.outputStallTimeout = outputStallTimeout
    self.handshakeTimeout = handshakeTimeout
    self.requestTimeout = requestTimeout
    self.idleTimeout = idleTimeout
    self.eventLoopGroup = eventLoopGroup
  }

  /// No per-peer bounds: for a benchmark's or a test's own server, where one local client stands for
  /// many. Never for a port others can reach.
  public mutating func removePeerLimits() {
    maxRequestBytesPerPeer = .max
    maxHeaderBytesPerPeer = .max
    maxStreamsPerPeer = .max
    streamOpensPerSecondPerPeer = 1e9
    maxConnectionsPerPeer = .max
  }
}

/// Counters of a server, for stats lines and tests.
public struct GRPCServerStats: Sendable, Hashable {
  /// Connections accepted since start.
  public var connectionsAccepted: Int
  /// Connections open now.
  public var openConnections: Int
  /// Calls started since start.
  public var callsStarted: Int
  /// Calls open now.
  public var openCalls: Int
  /// Streams the clients cancelled (RST_STREAM).
  public var callsCancelledByClient: Int
  /// GOAWAY frames sent by ``GRPCServer/sendGoAway()``.
  public var goAwaysSent: Int
  /// Connections closed by ``GRPCServer/dropConnections()``.
  public var connectionsDropped: Int
  /// Streams reset by ``GRPCServerCall/reset(errorCode:)``.
  public var streamsReset: Int
  /// Requests refused while arriving: a length prefix above ``GRPCServerConfiguration/maxReceiveMessageSize``,
  /// request memory above a limit, or a message the server cannot read (compressed, bad flag).
  public var requestsRefused: Int = 0
  /// Bytes of requests still arriving, held now over all connections.
  public var bufferedRequestBytes: Int = 0
  /// The most bytes of requests still arriving held at once since start.
  public var peakBufferedRequestBytes: Int = 0
  /// Connections closed as soon as accepted because ``GRPCServerConfiguration/maxConnections`` were open.
  public var connectionsRefused: Int = 0
  /// Connections closed after ``GRPCServerConfiguration/idleTimeout`` without an open stream.
  public var connectionsClosedIdle: Int = 0
  /// Times accepting paused because the process or system ran out of file descriptors (EMFILE, ENFILE).
  public var acceptPauses: Int = 0
  /// Connections closed at accept because their peer had ``GRPCServerConfiguration/maxConnectionsPerPeer``
  /// open, or was serving a penalty for opening streams too fast.
  public var peerConnectionsRefused: Int = 0
  /// Connections closed because they did not complete their handshake within
  /// ``GRPCServerConfiguration/handshakeTimeout``.
  public var handshakesTimedOut: Int = 0
  /// Requests answered DEADLINE_EXCEEDED because they did not end within ``GRPCServerConfiguration/requestTimeout``.
  public var requestsTimedOut: Int = 0
  /// Connections ended with GOAWAY(ENHANCE_YOUR_CALM) because their peer opened streams too fast.
  public var connectionsRateLimited: Int = 0
  /// Decoded header bytes held now by open streams, over all connections.
  public var heldHeaderBytes: Int = 0
  /// Times a connection stopped being read because its unsent output passed
  /// ``GRPCServerConfiguration/maxOutboundBytesPerConnection``.
  public var readPauses: Int = 0
  /// Connections closed because their output stayed backed up for ``GRPCServerConfiguration/outputStallTimeout``.
  public var connectionsStalled: Int = 0
}

/// A gRPC server on its own event loop thread, where it accepts connections and its service runs.
///
/// Its connections run on that thread too, or, with ``GRPCServerConfiguration/eventLoopGroup``, on the
/// group's loops, spread round robin: TLS, HTTP/2 framing and header decoding then use every core, while
/// the service stays on one thread and needs no locks of its own.
public final class GRPCServer: Sendable {
  /// The configuration it was made with.
  public let configuration: GRPCServerConfiguration
  let loop: EventLoop
  /// Confined to ``loop`` but for what it offers every thread (see ``ServerCore``).
  let core: ServerCore
  private let boundPort = Atomic<Int>(0)

  /// Creates a server for `service`; call ``start()`` to listen.
  ///
  /// - Throws: ``GRPCError`` (`INVALID_ARGUMENT`) when the TLS files cannot be loaded.
  public init(
    configuration: GRPCServerConfiguration, service: any GRPCService,
    logger: Logger = Logger(label: "journeysharing.grpc.server", factory: { _ in SwiftLogNoOpLogHandler() })
  ) throws(GRPCError) {
    self.configuration = configuration
    var tlsContext: TLSContext?
    if let tls = configuration.tls {
      do {
        tlsContext = try TLSContext(server: tls)
      } catch {
        throw GRPCError(code: .invalidArgument, message: "TLS configuration: \(error.description)")
      }
    }
    let loop = EventLoop(name: "grpc-server")
    self.loop = loop
    core = ServerCore(
      loop: loop, configuration: configuration, tlsContext: tlsContext, service: service, logger: logger)
  }

  deinit {
    let core = core
    // Connections on a group's loops are closed there first, while this loop still runs to take their calls'
    // cancellations to the service; then this loop closes its own and stops.
    for registry in core.registries where registry.loop !== loop {
      if registry.loop.inEventLoop {
        registry.value.closeAll(graceful: false)
        continue
      }
      let done = Locked(false)
      registry.loop.execute {
        registry.value.closeAll(graceful: false)
        done.withLock { $0 = true }
      }
      while !done.withLock({ $0 }) && !registry.loop.isStopping { usleep(100) }
    }
    loop.execute { core.stop(graceful: false) }
    loop.shutdown()
  }

  /// Binds and starts accepting connections; returns the bound port.
  ///
  /// - Throws: ``GRPCError`` (`UNAVAILABLE`) when the address cannot be bound.
  @discardableResult
  public func start() throws(GRPCError) -> Int {
    let core = core
    let result = Locked<Result<Int, GRPCError>?>(nil)
    let done = Atomic<Bool>(false)
    loop.execute {
      let outcome = Result { () throws(GRPCError) -> Int in try core.listen() }
      result.withLock { $0 = outcome }
      done.store(true, ordering: .releasing)
    }
    while !done.load(ordering: .acquiring) { usleep(200) }
    let port = try result.withLock { $0! }.get()
    boundPort.store(port, ordering: .releasing)
    return port
  }

  /// The bound port (after ``start()``).
  public var localPort: Int { boundPort.load(ordering: .acquiring) }

  /// Sends GOAWAY on every connection (clients finish open calls and reconnect for new ones).
  public func sendGoAway() {
    core.forEachConnection { connection, shared in
      connection.goAway()
      shared.count { $0.goAwaysSent += 1 }
    }
  }

  /// Closes every connection at once, without GOAWAY (a dropped network).
  public func dropConnections() {
    core.forEachConnection { connection, shared in
      shared.count { $0.connectionsDropped += 1 }
      connection.drop()
    }
  }

  /// Runs `body` on the server's event loop thread (where ``GRPCService`` methods run).
  public func execute(_ body: @escaping @Sendable () -> Void) {
    loop.execute(body)
  }

  /// Counters, read on the server's loop (after what was asked of it before).
  public func stats() async -> GRPCServerStats {
    let shared = core.shared
    return await withCheckedContinuation { continuation in
      loop.execute { continuation.resume(returning: shared.stats) }
    }
  }

  /// How many connections are open on each of the loops they run on, in the group's order (one entry for a
  /// server without a group).
  package func connectionsPerLoop() async -> [Int] {
    var counts: [Int] = []
    for registry in core.registries {
      counts.append(
        await withCheckedContinuation { continuation in
          registry.loop.execute { continuation.resume(returning: registry.value.connections.count) }
        })
    }
    return counts
  }

  /// Stops listening and closes every connection: gracefully (GOAWAY; open calls may
  /// still finish) or at once. Returns once every connection's loop has done so, and the service has
  /// heard of the calls that ended.
  public func shutdown(graceful: Bool = true) async {
    let core = core
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      loop.execute {
        core.stopListening()
        continuation.resume()
      }
    }
    for registry in core.registries {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        registry.loop.execute {
          registry.value.closeAll(graceful: graceful)
          continuation.resume()
        }
      }
    }
    // The cancellations of calls on other loops were handed to this one; they run before this.
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      loop.execute { continuation.resume() }
    }
  }
}

/// The connections of a server that run on one loop. Confined to that loop.
final class ServerConnections {
  var connections: [ObjectIdentifier: ServerConnection] = [:]

  /// GOAWAY on every connection (graceful), or closes each at once.
  func closeAll(graceful: Bool) {
    for connection in Array(connections.values) {
      if graceful { connection.goAway() } else { connection.drop() }
    }
  }
}

/// The server's state: the listener and accepting on the server's loop; the constants every connection
/// reads; the counts they share (``shared``); a registry of connections per loop.
///
/// `@unchecked Sendable`: connections on other loops read its `let`s, use ``shared`` (locked) and
/// ``scheduleSweep()`` (which hops to the server's loop); everything else is confined to the server's loop.
final class ServerCore: EventLoopHandler, @unchecked Sendable {
  let loop: EventLoop
  let configuration: GRPCServerConfiguration
  let tlsContext: TLSContext?
  let service: any GRPCService
  let logger: Logger
  let shared: ServerShared
  /// The connections of each loop they run on: the server's own, or the group's.
  let registries: [LoopBound<ServerConnections>]
  private var nextRegistry = 0
  private var listenFD: Int32 = -1

  /// The first pause of accepting when descriptors run out; each pause in a row doubles it, up to the maximum.
  static let initialAcceptPause: Duration = .milliseconds(100)
  /// The longest pause of accepting.
  static let maxAcceptPause: Duration = .seconds(1)
  /// Whether accepting is paused (the listener unwatched until a timer).
  private var acceptPaused = false
  /// Descriptors held in reserve (on /dev/null) and let go of when accept runs out: while accepting is paused
  /// the process keeps free descriptors for everything else it does. libdispatch's thread-pool monitor opens
  /// /proc files and traps when it cannot, which killed a loaded server that accept had left without one.
  private var reserveFDs: [Int32] = []
  private static let reserveDescriptorCount = 4
  /// The next pause in the current episode of running out of descriptors; nil outside one.
  private var nextAcceptPause: Duration?
  /// Pauses in the current episode, for the line logged when it ends.
  private var episodePauses = 0
  /// The pending sweep of forgotten peers, if any.
  private var peerSweepScheduled = false

  init(
    loop: EventLoop, configuration: GRPCServerConfiguration, tlsContext: TLSContext?, service: any GRPCService,
    logger: Logger
  ) {
    self.loop = loop
    self.configuration = configuration
    self.tlsContext = tlsContext
    self.service = service
    self.logger = logger
    shared = ServerShared(configuration: configuration)
    let loops = configuration.eventLoopGroup?.loops ?? [loop]
    registries = loops.map { LoopBound(unchecked: ServerConnections(), loop: $0) }
  }

  func listen() throws(GRPCError) -> Int {
    do throws(SocketError) {
      let addresses = try SocketAddress.resolve(host: configuration.host, port: configuration.port)
      guard let address = addresses.first else {
        throw SocketError("resolving \(configuration.host): no address", errno: 0)
      }
      listenFD = try Socket.listen(on: address)
    } catch {
      throw GRPCError(code: .unavailable, message: error.description)
    }
    loop.register(fd: listenFD, handler: self, readable: true, writable: false)
    reserveDescriptors()
    return Socket.localAddress(listenFD)?.hostAndPort.port ?? configuration.port
  }

  func handleEvent(readable: Bool, writable: Bool, hangup: Bool) {
    guard listenFD >= 0, !acceptPaused else { return }
    while true {
      let fd: Int32?
      do {
        fd = try Socket.accept(listenFD)
      } catch {
        if error.errnoCode == EMFILE || error.errnoCode == ENFILE || error.errnoCode == ENOBUFS
          || error.errnoCode == ENOMEM
        {
          pauseAccepting(error)
        } else {
          // A failure about the one connection: the next readiness event takes the next one.
          logger.warning("accept failed", metadata: ["error": "\(error)"])
        }
        return
      }
      guard let fd else { return }
      acceptSucceeded()
      let peer = Socket.peerAddress(fd)?.hostAndPort.host ?? "unknown"
      guard admit(peer) else {
        Glibc.close(fd)
        continue
      }
      var tls: TLSEngine?
      if let tlsContext {
        do {
          tls = try TLSEngine(context: tlsContext, serverName: nil)
        } catch {
          Glibc.close(fd)
          connectionClosed(peer: peer)
          continue
        }
      }
      let registry = registries[nextRegistry]
      nextRegistry = (nextRegistry + 1) % registries.count
      if registry.loop.isStopping {
        // The group was shut down before the server (see GRPCServerConfiguration.eventLoopGroup).
        Glibc.close(fd)
        connectionClosed(peer: peer)
        continue
      }
      let handOff = LoopBound(unchecked: (self, tls), loop: registry.loop)
      if registry.loop === loop {
        Self.open(fd: fd, peer: peer, core: self, tls: tls, registry: registry)
      } else {
        registry.loop.execute {
          let (core, tls) = handOff.value
          Self.open(fd: fd, peer: peer, core: core, tls: tls, registry: registry)
        }
      }
    }
  }

  /// Counts a connection of `peer` in; false when it is refused (a peer over its share, or the server's
  /// connection limit), which is logged once per peer and episode, and once per episode of the limit.
  private func admit(_ peer: String) -> Bool {
    enum Outcome {
      case admitted
      case peerRefused(reason: String, log: Bool)
      case serverFull(firstOfEpisode: Bool)
    }
    let configuration = configuration
    let outcome: Outcome = shared.withLock { state in
      if let usage = state.peers[peer] {
        var reason: String?
        if usage.connections >= configuration.maxConnectionsPerPeer {
          reason = "it has \(usage.connections) connections open (--max-connections-per-peer)"
        } else if usage.penaltyUntil > monotonicNanoseconds() {
          reason = "it opened streams too fast"
        }
        if let reason {
          state.stats.peerConnectionsRefused += 1
          defer { usage.refusalLogged = true }
          return .peerRefused(reason: reason, log: !usage.refusalLogged)
        }
      }
      if state.stats.openConnections >= configuration.maxConnections {
        // Refused before anything is read or written: the client sees the connection end at once.
        state.stats.connectionsRefused += 1
        defer { state.refusingConnections = true }
        return .serverFull(firstOfEpisode: !state.refusingConnections)
      }
      state.usage(of: peer, configuration).connections += 1
      state.stats.connectionsAccepted += 1
      state.stats.openConnections += 1
      return .admitted
    }
    switch outcome {
    case .admitted:
      return true
    case .peerRefused(let reason, let log):
      if log {
        logger.warning("refusing connections from a peer", metadata: ["peer": "\(peer)", "reason": "\(reason)"])
        scheduleSweep()
      }
    case .serverFull(let first):
      if first {
        logger.warning(
          "connection limit reached: closing new connections until one closes",
          metadata: ["max_connections": "\(configuration.maxConnections)"])
      }
    }
    return false
  }

  /// On `registry`'s loop: starts serving an accepted connection.
  private static func open(
    fd: Int32, peer: String, core: ServerCore, tls: TLSEngine?, registry: LoopBound<ServerConnections>
  ) {
    let usage = core.shared.withLock { $0.usage(of: peer, core.configuration) }
    let connection = ServerConnection(
      core: core, stream: ByteStream(loop: registry.loop, fd: fd, tls: tls, connecting: false), peer: peer,
      usage: usage, registry: registry)
    registry.value.connections[ObjectIdentifier(connection)] = connection
    connection.start()
  }

  /// On the connection's loop: it closed (it has left its registry).
  func connectionClosed(peer: String) {
    let configuration = configuration
    let (sweep, stoppedRefusing, refused): (Bool, Bool, Int) = shared.withLock { state in
      state.stats.openConnections -= 1
      var sweep = false
      if let usage = state.peers[peer] {
        usage.connections -= 1
        if usage.connections == 0 {
          if usage.isIdle(at: monotonicNanoseconds()) {
            state.peers[peer] = nil
          } else {
            sweep = true
          }
        }
      }
      let stopped = state.refusingConnections && state.stats.openConnections < configuration.maxConnections
      if stopped { state.refusingConnections = false }
      return (sweep, stopped, state.stats.connectionsRefused)
    }
    if sweep { scheduleSweep() }
    if stoppedRefusing {
      logger.info("below the connection limit again", metadata: ["connections_refused": "\(refused)"])
    }
  }

  /// Runs `body` for every connection, on its loop. From any thread.
  func forEachConnection(_ body: @escaping (ServerConnection, ServerShared) -> Void) {
    let shared = shared
    for registry in registries {
      let run = LoopBound(unchecked: body, loop: registry.loop)
      registry.loop.execute {
        for connection in Array(registry.value.connections.values) { run.value(connection, shared) }
      }
    }
  }

  // MARK: - Running out of descriptors

  /// accept failed for want of descriptors (or kernel memory). The connection stays pending, so the
  /// level-triggered listener would wake the loop again at once, and again: stop watching it for a
  /// while instead, 100 ms at first, doubling to 1 s while it lasts. Logged once per episode.
  private func pauseAccepting(_ error: SocketError) {
    let pause = nextAcceptPause ?? Self.initialAcceptPause
    if nextAcceptPause == nil {
      logger.warning(
        "accept failed: pausing accepting until descriptors are free",
        metadata: ["error": "\(error)", "first_pause": "\(pause)", "max_pause": "\(Self.maxAcceptPause)"])
    }
    nextAcceptPause = min(pause * 2, Self.maxAcceptPause)
    episodePauses += 1
    shared.count { $0.acceptPauses += 1 }
    acceptPaused = true
    releaseReserve()
    loop.setInterest(fd: listenFD, readable: false, writable: false)
    loop.scheduleTimer(after: pause) { [self] in
      acceptPaused = false
      guard listenFD >= 0 else { return }
      reserveDescriptors()
      loop.setInterest(fd: listenFD, readable: true, writable: false)
    }
  }

  /// Takes descriptors into reserve up to ``reserveDescriptorCount`` (as many as the process can spare).
  private func reserveDescriptors() {
    while reserveFDs.count < Self.reserveDescriptorCount {
      let fd = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else { return }
      reserveFDs.append(fd)
    }
  }

  /// Gives the reserve back to the process.
  private func releaseReserve() {
    for fd in reserveFDs { Glibc.close(fd) }
    reserveFDs.removeAll()
  }

  /// A connection was accepted: an episode of running out of descriptors, if one was going on, is over.
  private func acceptSucceeded() {
    guard nextAcceptPause != nil else { return }
    logger.notice("accepting connections again", metadata: ["pauses": "\(episodePauses)"])
    nextAcceptPause = nil
    episodePauses = 0
  }

  // MARK: - Peers

  /// A stream of a peer opened (call under the lock): false when the peer opens streams faster than its
  /// rate, which puts it under penalty (the caller ends the connection and calls ``scheduleSweep()``).
  func streamOpened(by usage: PeerUsage, _ state: inout ServerShared.State) -> Bool {
    let now = monotonicNanoseconds()
    guard usage.streamOpens.take(at: now) else {
      usage.penaltyUntil = now &+ configuration.peerPenalty.nonNegativeNanoseconds
      state.stats.connectionsRateLimited += 1
      return false
    }
    return true
  }

  /// Sweeps forgotten peers once a second while any is left to sweep. From any thread.
  func scheduleSweep() {
    guard loop.inEventLoop else {
      let core = LoopBound(unchecked: self, loop: loop)
      loop.execute { core.value.scheduleSweep() }
      return
    }
    guard !peerSweepScheduled else { return }
    peerSweepScheduled = true
    loop.scheduleTimer(after: .seconds(1)) { [weak self] in
      guard let self else { return }
      peerSweepScheduled = false
      let now = monotonicNanoseconds()
      let pending = shared.withLock { state in
        var pending = false
        for (peer, usage) in state.peers where usage.connections == 0 {
          if usage.isIdle(at: now) {
            state.peers[peer] = nil
          } else {
            pending = true
          }
        }
        return pending
      }
      if pending { scheduleSweep() }
    }
  }

  /// Stops listening (connections are closed by their loops: ``GRPCServer/shutdown(graceful:)``).
  func stopListening() {
    guard listenFD >= 0 else { return }
    acceptPaused = false
    loop.deregister(fd: listenFD)
    Glibc.close(listenFD)
    listenFD = -1
    releaseReserve()
  }

  /// On the server's loop: stops listening and closes every connection, on its loop (at once on this one).
  func stop(graceful: Bool) {
    stopListening()
    for registry in registries {
      if registry.loop === loop {
        registry.value.closeAll(graceful: graceful)
      } else {
        registry.loop.execute { registry.value.closeAll(graceful: graceful) }
      }
    }
  }
}
