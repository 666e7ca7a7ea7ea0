// Sources/HTTP2Transport/GRPCServer.swift - the server side: listen, accept, serve gRPC calls
//
// Built from the same parts as the client: the event loop, ByteStream (TCP
// and TLS), and an nghttp2 session in the server role. A `GRPCService`
// (GRPCProtocol's service seam) receives each call once its request message is complete and answers
// on the loop thread, now or later (server streaming), through `GRPCServerCall`.

public import GRPCProtocol
public import Logging
import Primitives
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// How a ``GRPCServer`` listens, and the bounds it holds its clients to.
///
/// ### Bounds
/// A client can make a server hold memory and descriptors; these bound how much:
/// - **Request size.** A request message whose length prefix announces more than
///   ``maxReceiveMessageSize`` is refused as soon as the prefix arrives, before any of it is
///   buffered and before the stream's flow-control window is reopened.
/// - **Request memory.** The bytes of requests still arriving (the part of a message received so
///   far, and a complete message waiting for the end of its stream) are counted per connection
///   (``maxRequestBytesPerConnection``) and over the server (``maxRequestBytes``). A DATA frame that
///   would take either count over its limit refuses its request.
/// - **Connections.** At most ``maxConnections`` are open at once; more are accepted and closed at once.
/// - **Idle connections.** A connection with no open stream for ``idleTimeout`` gets GOAWAY and is
///   closed (grpc's `max_connection_idle`).
/// - **Descriptors.** When accepting fails for want of file descriptors (EMFILE, ENFILE), the server
///   stops watching the listener for 100 ms, doubling to 1 s while it lasts, instead of retrying at once.
///
/// A refused request gets the response a gRPC server gives a request it cannot take: a Trailers-Only
/// response with RESOURCE_EXHAUSTED, then RST_STREAM(NO_ERROR), which stops the client sending
/// (RFC 9113 §8.1). ``GRPCServerStats`` counts every refusal.
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
  /// The most bytes of requests still arriving that one connection may hold. Default 16 MiB (four
  /// requests of the default largest size at once); keep it at least ``maxReceiveMessageSize``.
  public var maxRequestBytesPerConnection: Int
  /// The most bytes of requests still arriving that all connections together may hold. Default 64 MiB.
  public var maxRequestBytes: Int
  /// The most connections open at once; a connection accepted beyond it is closed at once (the
  /// client sees the connection end before any HTTP/2 frame). Default 1024.
  public var maxConnections: Int
  /// How long a connection may have no open stream (from its accept, or since its last stream
  /// ended) before the server sends GOAWAY and closes it; `nil` keeps idle connections open.
  /// Default 5 minutes.
  public var idleTimeout: Duration?

  /// A configuration listening on `host:port`; every parameter has the default described on its property.
  public init(
    host: String = "127.0.0.1", port: Int = 0, tls: TLSServerConfiguration? = nil,
    maxConcurrentStreams: UInt32 = 1000, maxReceiveMessageSize: Int = 4 << 20,
    maxRequestBytesPerConnection: Int = 16 << 20, maxRequestBytes: Int = 64 << 20,
    maxConnections: Int = 1024, idleTimeout: Duration? = .seconds(300)
  ) {
    self.host = host
    self.port = port
    self.tls = tls
    self.maxConcurrentStreams = maxConcurrentStreams
    self.maxReceiveMessageSize = maxReceiveMessageSize
    self.maxRequestBytesPerConnection = maxRequestBytesPerConnection
    self.maxRequestBytes = maxRequestBytes
    self.maxConnections = maxConnections
    self.idleTimeout = idleTimeout
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
}

/// A gRPC server on its own event loop thread.
public final class GRPCServer: Sendable {
  /// The configuration it was made with.
  public let configuration: GRPCServerConfiguration
  let loop: EventLoop
  let core: LoopBound<ServerCore>
  private let boundPort = Atomic<Int>(0)

  /// Creates a server for `service`; call ``start()`` to listen.
  ///
  /// - Throws: ``GRPCError`` (`INVALID_ARGUMENT`) when the TLS files cannot be loaded.
  public init(
    configuration: GRPCServerConfiguration, service: any GRPCService,
    logger: Logger = Logger(label: "journeysharing.grpc.server")
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
    core = LoopBound(
      unchecked: ServerCore(
        loop: loop, configuration: configuration, tlsContext: tlsContext, service: service, logger: logger),
      loop: loop)
  }

  deinit {
    let core = core
    loop.execute { core.value.stop(graceful: false) }
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
      let outcome = Result { () throws(GRPCError) -> Int in try core.value.listen() }
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
    let core = core
    loop.execute { core.value.goAwayAll() }
  }

  /// Closes every connection at once, without GOAWAY (a dropped network).
  public func dropConnections() {
    let core = core
    loop.execute { core.value.dropAll() }
  }

  /// Runs `body` on the server's event loop thread (where ``GRPCService`` methods run).
  public func execute(_ body: @escaping @Sendable () -> Void) {
    loop.execute(body)
  }

  /// Counters.
  public func stats() async -> GRPCServerStats {
    let core = core
    return await withCheckedContinuation { continuation in
      loop.execute { continuation.resume(returning: core.value.stats) }
    }
  }

  /// Stops listening and closes every connection: gracefully (GOAWAY; open calls may
  /// still finish) or at once.
  public func shutdown(graceful: Bool = true) async {
    let core = core
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      loop.execute {
        core.value.stop(graceful: graceful)
        continuation.resume()
      }
    }
  }
}

/// The server's state on its loop.
final class ServerCore: EventLoopHandler {
  let loop: EventLoop
  let configuration: GRPCServerConfiguration
  let tlsContext: TLSContext?
  let service: any GRPCService
  let logger: Logger
  private var listenFD: Int32 = -1
  private var connections: [ObjectIdentifier: ServerConnection] = [:]
  var stats = GRPCServerStats(
    connectionsAccepted: 0, openConnections: 0, callsStarted: 0, openCalls: 0, callsCancelledByClient: 0,
    goAwaysSent: 0, connectionsDropped: 0, streamsReset: 0)

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
  /// Whether connections are being refused for the connection limit (logged once per episode).
  private var refusingConnections = false

  init(
    loop: EventLoop, configuration: GRPCServerConfiguration, tlsContext: TLSContext?, service: any GRPCService,
    logger: Logger
  ) {
    self.loop = loop
    self.configuration = configuration
    self.tlsContext = tlsContext
    self.service = service
    self.logger = logger
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
      if connections.count >= configuration.maxConnections {
        // Refused before anything is read or written: the client sees the connection end at once.
        Glibc.close(fd)
        stats.connectionsRefused += 1
        if !refusingConnections {
          refusingConnections = true
          logger.warning(
            "connection limit reached: closing new connections until one closes",
            metadata: ["max_connections": "\(configuration.maxConnections)"])
        }
        continue
      }
      var tls: TLSEngine?
      if let tlsContext {
        do {
          tls = try TLSEngine(context: tlsContext, serverName: nil)
        } catch {
          Glibc.close(fd)
          continue
        }
      }
      let peer = Socket.peerAddress(fd)?.hostAndPort.host ?? "unknown"
      let connection = ServerConnection(
        core: self, stream: ByteStream(loop: loop, fd: fd, tls: tls, connecting: false), peer: peer)
      connections[ObjectIdentifier(connection)] = connection
      stats.connectionsAccepted += 1
      stats.openConnections += 1
      connection.start()
    }
  }

  func connectionClosed(_ connection: ServerConnection) {
    if connections.removeValue(forKey: ObjectIdentifier(connection)) != nil {
      stats.openConnections -= 1
    }
    if refusingConnections && connections.count < configuration.maxConnections {
      refusingConnections = false
      logger.info("below the connection limit again", metadata: ["connections_refused": "\(stats.connectionsRefused)"])
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
    stats.acceptPauses += 1
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

  // MARK: - Request memory

  /// Whether one more byte of requests may be held: the server-wide count is within ``GRPCServerConfiguration/maxRequestBytes``.
  var requestBytesWithinLimit: Bool { stats.bufferedRequestBytes <= configuration.maxRequestBytes }

  /// Counts `delta` more (or, negative, fewer) bytes of requests held.
  func requestBytesChanged(by delta: Int) {
    stats.bufferedRequestBytes += delta
    stats.peakBufferedRequestBytes = max(stats.peakBufferedRequestBytes, stats.bufferedRequestBytes)
  }

  func goAwayAll() {
    for connection in connections.values {
      connection.goAway()
      stats.goAwaysSent += 1
    }
  }

  func dropAll() {
    for connection in Array(connections.values) {
      stats.connectionsDropped += 1
      connection.drop()
    }
  }

  func stop(graceful: Bool) {
    if listenFD >= 0 {
      acceptPaused = false
      loop.deregister(fd: listenFD)
      Glibc.close(listenFD)
      listenFD = -1
      releaseReserve()
    }
    for connection in Array(connections.values) {
      if graceful { connection.goAway() } else { connection.drop() }
    }
  }
}
