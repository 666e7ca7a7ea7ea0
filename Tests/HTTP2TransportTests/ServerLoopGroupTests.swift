// Tests/HTTP2TransportTests/ServerLoopGroupTests.swift - a GRPCServer whose connections run on a group's loops
//
// A real GRPCServer on 127.0.0.1 with a GRPCEventLoopGroup of two loops, and RawHTTP2Client connections over
// real sockets: connections are spread over the loops; the service, on the server's own loop, answers calls
// whose connections run elsewhere (messages in order, the end, resets); cancellations come back to it on its
// loop; the backlog of a client that does not read reaches it; the per-peer and server-wide budgets hold over
// connections on different loops; GOAWAY and shutdown reach every loop.

import GRPCProtocol
import HTTP2Session
import HTTP2Transport
import Primitives
import TestSupport
import Testing

/// Methods of ``LoopGroupService``.
private enum GroupMethod {
  /// Answers with `n` messages of 100 bytes, numbered (a big-endian UInt32 first), then OK; `n` is the request's
  /// first byte times 100.
  static let many = "/group.Test/Many"
  /// Stays open; counts a cancellation.
  static let hold = "/group.Test/Hold"
  /// Sends 16 KiB messages while the call's backlog is under 256 KiB, checking every 10 ms; records the largest
  /// backlog seen; ends OK after `release()`.
  static let flood = "/group.Test/Flood"
}

/// The service of these tests: runs on the server's loop, and checks that every call reaches it there.
private final class LoopGroupService: GRPCService, @unchecked Sendable {
  /// Confined to the server's loop, once set.
  var serverLoop: (any GRPCScheduler)?
  let calledOffLoop = Locked(0)
  let cancellations = Locked(0)
  let cancelledOffLoop = Locked(0)
  let largestBacklog = Locked(0)
  let floodSent = Locked(0)
  private let released = Locked(false)

  func handle(_ call: any GRPCServerCallContext) {
    if !call.scheduler.inScheduler { calledOffLoop.withLock { $0 += 1 } }
    switch call.path {
    case GroupMethod.many:
      let count = Int(call.request.first ?? 0) * 100
      for index in 0..<count {
        var message = withUnsafeBytes(of: UInt32(index).bigEndian) { Array($0) }
        message += [UInt8](repeating: 7, count: 96)
        call.send(message)
      }
      call.finish(.ok)
    case GroupMethod.hold:
      call.sendHeaders()
      call.onCancel { [self, call] in
        cancellations.withLock { $0 += 1 }
        if !call.scheduler.inScheduler { cancelledOffLoop.withLock { $0 += 1 } }
      }
    case GroupMethod.flood:
      flood(call)
    default:
      call.finish(GRPCStatus(code: .unimplemented, message: "no method \(call.path)"))
    }
  }

  private func flood(_ call: any GRPCServerCallContext) {
    guard !call.isClosed else { return }
    if released.withLock({ $0 }) {
      call.finish(.ok)
      return
    }
    let backlog = call.outboundBufferedBytes
    largestBacklog.withLock { $0 = max($0, backlog) }
    if backlog < 256 << 10 {
      call.send([UInt8](repeating: 1, count: 16 << 10))
      floodSent.withLock { $0 += 1 }
    }
    call.schedule(after: .milliseconds(10)) { [self] in flood(call) }
  }

  func release() { released.withLock { $0 = true } }
}

/// A configuration without the idle timeout, and a handshake timeout long enough for a client the test has
/// not pumped yet (the test's task may wait for a thread for seconds when the whole suite runs).
private func groupConfiguration(maxStreamsPerPeer: Int = 10_000) -> GRPCServerConfiguration {
  GRPCServerConfiguration(
    maxStreamsPerPeer: maxStreamsPerPeer, streamOpensPerSecondPerPeer: 1e9, handshakeTimeout: .seconds(300),
    idleTimeout: nil)
}

/// Runs `body` with a started server of `configuration` whose connections run on a group of two loops; the
/// server is shut down and gone before the group is.
private func withGroupServer<R>(
  _ configuration: GRPCServerConfiguration = groupConfiguration(),
  _ body: (GRPCServer, LoopGroupService, Int) async throws -> R
) async throws -> R {
  let group = GRPCEventLoopGroup(loopCount: 2, name: "server-group")
  defer { group.shutdown() }
  var configuration = configuration
  configuration.eventLoopGroup = group
  let service = LoopGroupService()
  return try await withStartedServer(configuration, service) { server, port in try await body(server, service, port) }
}

/// Pumps every client until `condition` holds for each, or `timeout` passes; returns whether it held.
private func pumpAll(
  _ clients: [RawHTTP2Client], until condition: (RawHTTP2Client) -> Bool, timeout: Duration = .seconds(60)
) async -> Bool {
  let clock = ContinuousClock()
  let end = clock.now.advanced(by: timeout)
  while true {
    for client in clients { client.pump() }
    if clients.allSatisfy(condition) { return true }
    if clock.now >= end { return false }
    try? await Task.sleep(for: .milliseconds(5))
  }
}

@Suite("Server on an event loop group")
struct ServerLoopGroupTests {
  @Test("Connections go round robin over the group's loops; the service gets every call on the server's loop")
  func connectionsSpreadOverLoops() async throws {
    try await withGroupServer { server, service, port in
      var clients: [RawHTTP2Client] = []
      var streams: [Int32] = []
      for _ in 0..<4 {
        let client = try RawHTTP2Client(port: port)
        let stream = try client.openRequest(path: GroupMethod.many)
        try client.send(grpcPrefix(length: 1) + [1], on: stream, end: true)
        clients.append(client)
        streams.append(stream)
      }
      #expect(await pumpAll(clients, until: { client in client.events.closed.count == 1 }))
      for (client, stream) in zip(clients, streams) {
        #expect(client.grpcStatus(of: stream) == 0)
        #expect(client.events.dataBytes[stream] == 100 * 105)
      }
      #expect(await server.connectionsPerLoop() == [2, 2])
      #expect(service.calledOffLoop.withLock { $0 } == 0)
      let stats = await server.stats()
      #expect(stats.connectionsAccepted == 4)
      #expect(stats.openConnections == 4)
      #expect(stats.callsStarted == 4)
      #expect(stats.openCalls == 0)
    }
  }

  @Test("20,000 messages sent from the service's loop reach a connection on another loop in order, then OK")
  func messagesCrossLoopsInOrder() async throws {
    try await withGroupServer { server, _, port in
      // Two connections, one on each of the group's loops; the service has a loop of its own. Each gets
      // 20,000 numbered messages.
      let clients = try (0..<2).map { _ in try OrderCheckingClient(port: port) }
      for client in clients { try client.start(count: 200) }
      #expect(await pumpAll(clients.map(\.raw), until: { $0.events.closed.count == 1 }))
      #expect(await server.connectionsPerLoop() == [1, 1])
      for client in clients {
        #expect(client.raw.grpcStatus(of: client.stream) == 0)
        let numbers = client.numbers
        #expect(numbers.count == 20_000)
        let outOfOrder = numbers.indices.first { numbers[$0] != $0 }
        #expect(outOfOrder == nil, "message \(outOfOrder ?? 0) is number \(outOfOrder.map { numbers[$0] } ?? 0)")
      }
    }
  }

  @Test("A client's cancellation reaches the service on its loop, once, and is counted")
  func cancellationComesBackToTheServiceLoop() async throws {
    try await withGroupServer { server, service, port in
      let clients = try (0..<2).map { _ in try RawHTTP2Client(port: port) }
      var streams: [Int32] = []
      for client in clients {
        let stream = try client.openRequest(path: GroupMethod.hold)
        try client.send(grpcPrefix(length: 0), on: stream, end: true)
        streams.append(stream)
      }
      #expect(await pumpAll(clients, until: { $0.events.headers.count == 1 }))
      #expect(await server.connectionsPerLoop() == [1, 1])
      for (client, stream) in zip(clients, streams) {
        client.cancel(stream)
        client.pump()
      }
      #expect(await eventually { service.cancellations.withLock { $0 } == 2 })
      #expect(service.cancelledOffLoop.withLock { $0 } == 0)
      #expect(await eventually { await server.stats().callsCancelledByClient == 2 })
      #expect(await server.stats().openCalls == 0)
    }
  }

  @Test("The backlog of a client that does not read reaches the service on its loop, which holds back")
  func backlogCrossesLoops() async throws {
    try await withGroupServer { server, service, port in
      let client = try RawHTTP2Client(port: port, receiveBuffer: 16 << 10)
      let stream = try client.openRequest(path: GroupMethod.flood)
      try client.send(grpcPrefix(length: 0), on: stream, end: true)
      client.pump()
      #expect(await eventually { await server.connectionsPerLoop().reduce(0, +) == 1 })
      // The client reads nothing: the stream's window (64 KiB) and the sockets fill, the rest waits in the
      // stream, and the service sees it there and stops at its 256 KiB.
      #expect(await eventually { service.largestBacklog.withLock { $0 } >= 256 << 10 })
      try await Task.sleep(for: .milliseconds(300))
      let sent = service.floodSent.withLock { $0 }
      try await Task.sleep(for: .milliseconds(300))
      #expect(service.floodSent.withLock { $0 } == sent, "the service kept sending into a full backlog")
      // 256 KiB held back, plus the window and what the sockets took: far from unbounded.
      #expect(sent * (16 << 10) < 4 << 20, "\(sent) messages of 16 KiB")
      // Once the client reads, everything arrives and the call ends.
      service.release()
      #expect(await client.pump(until: { $0.closed[stream] != nil }, timeout: .seconds(30)))
      #expect(client.grpcStatus(of: stream) == 0)
      #expect(client.events.dataBytes[stream] == service.floodSent.withLock { $0 } * ((16 << 10) + 5))
      #expect(await server.stats().openCalls == 0)
    }
  }

  @Test("The per-peer stream budget holds over connections on different loops")
  func peerBudgetsHoldOverLoops() async throws {
    try await withGroupServer(groupConfiguration(maxStreamsPerPeer: 4)) { server, _, port in
      let clients = try (0..<2).map { _ in try RawHTTP2Client(port: port) }
      var opened: [(RawHTTP2Client, Int32)] = []
      for _ in 0..<3 {
        for client in clients {
          let stream = try client.openRequest(path: GroupMethod.hold)
          try client.send(grpcPrefix(length: 0), on: stream, end: true)
          opened.append((client, stream))
        }
      }
      #expect(await pumpAll(clients, until: { $0.events.headers.count == 3 }))
      #expect(await server.connectionsPerLoop() == [1, 1])
      // Six streams over the two loops, against a budget of four: two refused, whichever loop they came on.
      let refused = opened.filter { $0.0.grpcStatus(of: $0.1) == GRPCStatusCode.resourceExhausted.rawValue }
      #expect(refused.count == 2)
      for (client, stream) in refused {
        #expect(client.grpcMessage(of: stream)?.contains("more than 4 streams open") == true)
      }
      let stats = await server.stats()
      #expect(stats.requestsRefused == 2)
      #expect(stats.callsStarted == 4)
    }
  }

  @Test("GOAWAY, then shutdown, reach the connections of every loop")
  func goAwayAndShutdownReachEveryLoop() async throws {
    try await withGroupServer { server, _, port in
      let clients = try (0..<2).map { _ in try RawHTTP2Client(port: port) }
      #expect(await pumpAll(clients, until: { $0.events.settingsReceived }))
      #expect(await server.connectionsPerLoop() == [1, 1])
      server.sendGoAway()
      #expect(await pumpAll(clients, until: { $0.events.goAway == .noError }))
      #expect(await eventually { await server.stats().goAwaysSent == 2 })
      await server.shutdown(graceful: false)
      #expect(await pumpAll(clients, until: { $0.events.ended }))
      #expect(await server.connectionsPerLoop() == [0, 0])
      #expect(await server.stats().openConnections == 0)
    }
  }

  @Test("A server released without shutdown closes the connections of every loop, and its calls hear of it")
  func releasedServerClosesEveryLoop() async throws {
    let group = GRPCEventLoopGroup(loopCount: 2, name: "server-group")
    defer { group.shutdown() }
    var configuration = groupConfiguration()
    configuration.eventLoopGroup = group
    let service = LoopGroupService()
    var server: GRPCServer? = try GRPCServer(configuration: configuration, service: service)
    let port = try server!.start()
    let clients = try (0..<2).map { _ in try RawHTTP2Client(port: port) }
    for client in clients {
      let stream = try client.openRequest(path: GroupMethod.hold)
      try client.send(grpcPrefix(length: 0), on: stream, end: true)
    }
    #expect(await pumpAll(clients, until: { $0.events.headers.count == 1 }))
    server = nil
    // The connections are closed by the time the server is gone, and both calls were cancelled on the
    // service's loop before that loop stopped.
    #expect(await pumpAll(clients, until: { $0.events.ended }))
    #expect(service.cancellations.withLock { $0 } == 2)
    #expect(service.cancelledOffLoop.withLock { $0 } == 0)
  }
}

/// A RawHTTP2Client on one Many call that parses the numbered messages as they arrive.
private final class OrderCheckingClient {
  let raw: RawHTTP2Client
  private(set) var stream: Int32 = 0
  /// The numbers of the messages received so far, in order (each message's first four bytes).
  var numbers: [Int] {
    let bytes = raw.keptData[stream] ?? []
    var numbers: [Int] = []
    var offset = 0
    while offset + 9 <= bytes.count {
      let length = bytes[offset + 1..<offset + 5].reduce(0) { $0 << 8 | Int($1) }
      numbers.append(bytes[offset + 5..<offset + 9].reduce(0) { $0 << 8 | Int($1) })
      offset += 5 + length
    }
    return numbers
  }

  init(port: Int) throws {
    raw = try RawHTTP2Client(port: port)
    raw.keepsData = true
  }

  func start(count hundreds: UInt8) throws {
    stream = try raw.openRequest(path: GroupMethod.many)
    try raw.send(grpcPrefix(length: 1) + [hundreds], on: stream, end: true)
  }
}
