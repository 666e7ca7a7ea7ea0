// Sources/HTTP2Transport/GRPCServer.swift - the server side: listen, accept, serve gRPC calls
//
// Built from the same parts as the client: the event loop, ByteStream (TCP
// and TLS), and an nghttp2 session in the server role. A `GRPCService`
// receives each call once its request message is complete and answers on
// the loop thread, now or later (server streaming), through `GRPCServerCall`.

public import GRPCProtocol
public import Logging
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Serves gRPC calls. Called on the server's event loop thread; must not block.
public protocol GRPCService: AnyObject, Sendable {
  /// A call whose request message has fully arrived. Answer it through `call`,
  /// now or later (on the call's loop); it stays open until finished or cancelled.
  func handle(_ call: GRPCServerCall)
}

/// How a ``GRPCServer`` listens.
public struct GRPCServerConfiguration: Sendable {
  /// The address to bind, for example `127.0.0.1`.
  public var host: String
  /// The port to bind; 0 picks a free one (see ``GRPCServer/localPort``).
  public var port: Int
  /// TLS, or `nil` for cleartext h2c.
  public var tls: TLSServerConfiguration?
  /// Advertised SETTINGS_MAX_CONCURRENT_STREAMS. Default 1000.
  public var maxConcurrentStreams: UInt32
  /// The largest request message accepted. Default 4 MiB.
  public var maxReceiveMessageSize: Int

  /// A configuration listening on `host:port`.
  public init(
    host: String = "127.0.0.1", port: Int = 0, tls: TLSServerConfiguration? = nil,
    maxConcurrentStreams: UInt32 = 1000, maxReceiveMessageSize: Int = 4 << 20
  ) {
    self.host = host
    self.port = port
    self.tls = tls
    self.maxConcurrentStreams = maxConcurrentStreams
    self.maxReceiveMessageSize = maxReceiveMessageSize
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
    return Socket.localAddress(listenFD)?.hostAndPort.port ?? configuration.port
  }

  func handleEvent(readable: Bool, writable: Bool, hangup: Bool) {
    while true {
      let fd: Int32?
      do {
        fd = try Socket.accept(listenFD)
      } catch {
        logger.warning("accept failed", metadata: ["error": "\(error)"])
        return
      }
      guard let fd else { return }
      var tls: TLSEngine?
      if let tlsContext {
        do {
          tls = try TLSEngine(context: tlsContext, serverName: nil)
        } catch {
          Glibc.close(fd)
          continue
        }
      }
      let connection = ServerConnection(core: self, stream: ByteStream(loop: loop, fd: fd, tls: tls, connecting: false))
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
      loop.deregister(fd: listenFD)
      Glibc.close(listenFD)
      listenFD = -1
    }
    for connection in Array(connections.values) {
      if graceful { connection.goAway() } else { connection.drop() }
    }
  }
}
