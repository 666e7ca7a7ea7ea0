// Tests/HTTP2TransportTests/ServerBoundsTests.swift - what a client can make a GRPCServer hold, and for how long
//
// A real GRPCServer on 127.0.0.1 and RawHTTP2Client (nghttp2 over a socket, sending exactly what the test
// scripts): request length prefixes above the size limit are refused while the request arrives; the bytes
// of unfinished requests are bounded per connection and over the server; accumulating a request costs
// linear time; connections beyond the cap are closed at once; idle connections get GOAWAY and are closed.
// Measured through GRPCServerStats and what the client receives; the one cost measured (the server loop
// thread's CPU time) is compared between two ways of sending the same bytes, never against a clock.

import GRPCProtocol
import HTTP2Session
import HTTP2Transport
import Primitives
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Methods of ``BoundsService``.
private enum BoundsMethod {
  /// Answers with the request's size (a big-endian UInt32) and OK.
  static let count = "/bounds.Test/Count"
  /// Stays open until ``BoundsService/releaseHeld()``.
  static let hold = "/bounds.Test/Hold"
  /// Answers with one message of 64 KiB and OK.
  static let big = "/bounds.Test/Big"
}

/// The service of the bounds tests. Runs on the server's loop.
private final class BoundsService: GRPCService {
  private let held = Locked<[any GRPCServerCallContext]>([])

  func handle(_ call: any GRPCServerCallContext) {
    switch call.path {
    case BoundsMethod.count:
      call.send(withUnsafeBytes(of: UInt32(call.request.count).bigEndian) { Array($0) })
      call.finish(.ok)
    case BoundsMethod.big:
      call.send([UInt8](repeating: 0x42, count: 64 << 10))
      call.finish(.ok)
    case BoundsMethod.hold:
      call.sendHeaders()
      held.withLock { $0.append(call) }
    default:
      call.finish(GRPCStatus(code: .unimplemented, message: "no method \(call.path)"))
    }
  }

  /// Finishes every held call OK.
  func releaseHeld() {
    for call in held.withLock({ calls in
      defer { calls = [] }; return calls
    }) {
      call.scheduler.execute { call.finish(.ok) }
    }
  }
}

/// Runs `body` with a started server of `configuration`, then stops it.
/// The request timeout of the tests that hold requests unfinished on purpose to measure the byte bounds: long
/// enough that a machine slowed down (ThreadSanitizer beside the rest of `make test` took 80 to 100 s over these
/// tests) never ends them with the default 10 s's DEADLINE_EXCEEDED instead of the bound under test.
private let unhurried: Duration = .seconds(600)

private func withBoundsServer<R>(
  _ configuration: GRPCServerConfiguration = GRPCServerConfiguration(),
  _ body: (GRPCServer, BoundsService, Int) async throws -> R
) async throws -> R {
  let service = BoundsService()
  return try await withStartedServer(configuration, service) { server, port in try await body(server, service, port) }
}

/// Runs `body` with a server of `configuration` for `service`, started on a free port; stops it at once
/// (`shutdown(graceful: false)`) when `body` returns or throws.
func withStartedServer<R>(
  _ configuration: GRPCServerConfiguration, _ service: any GRPCService,
  _ body: (GRPCServer, Int) async throws -> R
) async throws -> R {
  let server = try GRPCServer(configuration: configuration, service: service)
  let port: Int
  do {
    port = try server.start()
  } catch {
    await server.shutdown(graceful: false)
    throw error
  }
  do {
    let result = try await body(server, port)
    await server.shutdown(graceful: false)
    return result
  } catch {
    await server.shutdown(graceful: false)
    throw error
  }
}

/// The CPU time the server's loop thread has used, in nanoseconds, read on that thread.
private func loopCPUNanoseconds(_ server: GRPCServer) async -> UInt64 {
  await withCheckedContinuation { continuation in
    server.execute {
      var ts = timespec()
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
      continuation.resume(returning: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
    }
  }
}

private let resourceExhausted = GRPCStatusCode.resourceExhausted.rawValue

@Suite("Server bounds", .timeLimit(.minutes(3)))
struct ServerBoundsTests {
  @Test("The defaults: 4 MiB requests, 8/16/64 MiB unfinished, 8 KiB header lists, 64 connections a peer, deadlines")
  func defaults() {
    let configuration = GRPCServerConfiguration()
    #expect(configuration.maxReceiveMessageSize == 4 << 20)
    #expect(configuration.maxRequestBytesPerConnection == 8 << 20)
    #expect(configuration.maxRequestBytesPerPeer == 16 << 20)
    #expect(configuration.maxRequestBytes == 64 << 20)
    #expect(configuration.maxHeaderListSize == 8 << 10)
    #expect(configuration.maxHeaderBytesPerPeer == 16 << 20)
    #expect(configuration.maxHeaderBytes == 64 << 20)
    #expect(configuration.maxStreamsPerPeer == 10_000)
    #expect(configuration.streamOpensPerSecondPerPeer == 1_000)
    #expect(configuration.maxConnections == 1024)
    #expect(configuration.maxConnectionsPerPeer == 64)
    #expect(configuration.maxOutboundBytesPerConnection == 1 << 20)
    #expect(configuration.handshakeTimeout == .seconds(10))
    #expect(configuration.requestTimeout == .seconds(10))
    #expect(configuration.idleTimeout == .seconds(300))
  }

  @Test("A length prefix above the limit is answered RESOURCE_EXHAUSTED and reset while the request still arrives")
  func oversizedPrefixIsRefusedAtOnce() async throws {
    try await withBoundsServer { server, _, port in
      let client = try RawHTTP2Client(port: port)
      let stream = try client.openRequest(path: BoundsMethod.count)
      // 4 MiB + 1 announced, 64 KiB of it sent, and the stream left open: the server must not wait for the rest.
      try client.send(grpcPrefix(length: (4 << 20) + 1) + [UInt8](repeating: 7, count: 64 << 10), on: stream)
      #expect(await client.pump(until: { $0.closed[stream] != nil }))
      #expect(client.grpcStatus(of: stream) == resourceExhausted, "\(client.events.headers)")
      #expect(client.grpcMessage(of: stream)?.contains("exceeds the limit of 4194304 bytes") == true)
      // Trailers-Only (one header block, END_STREAM), then RST_STREAM(NO_ERROR): the client stops sending.
      #expect(client.events.headers[stream]?.count == 1)
      #expect(client.events.closed[stream] == .noError)
      let stats = await server.stats()
      #expect(stats.requestsRefused == 1)
      #expect(stats.bufferedRequestBytes == 0)
      #expect(stats.callsStarted == 0)
      // The connection serves on: a request within the limit is answered.
      let next = try client.openRequest(path: BoundsMethod.count)
      try client.send(grpcPrefix(length: 3) + [1, 2, 3], on: next, end: true)
      #expect(await client.pump(until: { $0.closed[next] != nil }))
      #expect(client.grpcStatus(of: next) == 0)
    }
  }

  @Test("A connection's unfinished requests are bounded: the request that goes over is refused, the rest are served")
  func unfinishedRequestsAreBoundedPerConnection() async throws {
    // 8 requests of 1 MiB, half of each sent and none finished: 4 MiB, against a limit of 2 MiB (+1 KiB).
    let limit = (2 << 20) + 1024
    let configuration = GRPCServerConfiguration(
      maxReceiveMessageSize: 1 << 20, maxRequestBytesPerConnection: limit, requestTimeout: unhurried, idleTimeout: nil)
    try await withBoundsServer(configuration) { server, _, port in
      let client = try RawHTTP2Client(port: port)
      var streams: [Int32] = []
      for _ in 0..<8 {
        let stream = try client.openRequest(path: BoundsMethod.count)
        try client.send(grpcPrefix(length: 1 << 20) + [UInt8](repeating: 1, count: 512 << 10), on: stream)
        streams.append(stream)
      }
      // Whatever order the frames interleave in, the survivors hold at most the limit, and at least the limit
      // less one request (the last refusal happened above it): four survive, four are refused.
      #expect(await client.pump(until: { events in streams.filter { events.closed[$0] != nil }.count == 4 }))
      #expect(await eventually { await server.stats().bufferedRequestBytes == 4 * ((512 << 10) + 5) })
      let refused = streams.filter { client.events.closed[$0] != nil }
      let open = streams.filter { client.events.closed[$0] == nil }
      for stream in refused {
        #expect(client.grpcStatus(of: stream) == resourceExhausted)
        #expect(client.grpcMessage(of: stream)?.contains("connection's unfinished requests exceed") == true)
        #expect(client.events.closed[stream] == .noError)
      }
      var stats = await server.stats()
      #expect(stats.requestsRefused == 4)
      // One DATA frame (at most 16 KiB) may go over before its request is refused.
      #expect(stats.peakBufferedRequestBytes <= limit + (16 << 10) + 5, "\(stats)")
      // Cancelling three of the open requests releases their bytes; the fourth then completes and is served.
      for stream in open.dropFirst() { client.cancel(stream) }
      #expect(await client.pump(until: { events in open.dropFirst().allSatisfy { events.closed[$0] != nil } }))
      #expect(await eventually { await server.stats().bufferedRequestBytes == (512 << 10) + 5 })
      try client.send([UInt8](repeating: 2, count: 512 << 10), on: open[0], end: true)
      #expect(await client.pump(until: { $0.closed[open[0]] != nil }))
      #expect(client.grpcStatus(of: open[0]) == 0)
      #expect(client.events.dataBytes[open[0]] == 5 + 4)  // the size, 1 MiB, as one 4-byte message
      stats = await server.stats()
      #expect(stats.bufferedRequestBytes == 0)
      #expect(stats.callsStarted == 1)
    }
  }

  @Test("All connections' unfinished requests together are bounded by maxRequestBytes")
  func unfinishedRequestsAreBoundedOverTheServer() async throws {
    // Two connections, each within its own limit (2 MiB), together over the server's (3 MiB).
    let configuration = GRPCServerConfiguration(
      maxReceiveMessageSize: 1 << 20, maxRequestBytesPerConnection: 2 << 20, maxRequestBytes: 3 << 20,
      requestTimeout: unhurried, idleTimeout: nil)
    try await withBoundsServer(configuration) { server, _, port in
      let clients = [try RawHTTP2Client(port: port), try RawHTTP2Client(port: port)]
      var streams: [(RawHTTP2Client, Int32)] = []
      for client in clients {
        for _ in 0..<3 {
          let stream = try client.openRequest(path: BoundsMethod.count)
          try client.send(grpcPrefix(length: 1 << 20) + [UInt8](repeating: 1, count: 512 << 10), on: stream)
          streams.append((client, stream))
        }
      }
      // 6 × 512 KiB = 3 MiB + 30 bytes: over the server's limit by the prefixes, so exactly one is refused.
      #expect(
        await eventually {
          for client in clients { client.pump() }
          return await server.stats().requestsRefused == 1
            && streams.filter { $0.0.events.closed[$0.1] != nil }.count == 1
        })
      let refused = try #require(streams.first { $0.0.events.closed[$0.1] != nil })
      #expect(refused.0.grpcStatus(of: refused.1) == resourceExhausted)
      #expect(refused.0.grpcMessage(of: refused.1)?.contains("server's unfinished requests exceed") == true)
      let stats = await server.stats()
      #expect(stats.bufferedRequestBytes == 5 * ((512 << 10) + 5))
      #expect(stats.peakBufferedRequestBytes <= (3 << 20) + (16 << 10) + 5, "\(stats)")
    }
  }

  @Test("Accumulating a request costs linear time: 4 MiB in 1 KiB frames costs about what it does in 16 KiB frames")
  func accumulationIsLinear() async throws {
    let configuration = GRPCServerConfiguration(
      maxRequestBytesPerConnection: 8 << 20, requestTimeout: unhurried, idleTimeout: nil)
    try await withBoundsServer(configuration) { server, _, port in
      let client = try RawHTTP2Client(port: port)
      let size = 4 << 20
      let request = grpcPrefix(length: size) + [UInt8](repeating: 3, count: size)
      /// Server loop CPU time for `count` requests of 4 MiB sent in DATA frames of `frameSize` bytes.
      func cost(requests count: Int, frameSize: Int) async throws -> UInt64 {
        let before = await loopCPUNanoseconds(server)
        for _ in 0..<count {
          let stream = try client.openRequest(path: BoundsMethod.count)
          try await client.send(request, on: stream, frameSize: frameSize, end: true)
          #expect(await client.pump(until: { $0.closed[stream] != nil }))
          #expect(client.grpcStatus(of: stream) == 0)
          #expect(client.events.dataBytes[stream] == 5 + 4)
        }
        return await loopCPUNanoseconds(server) - before
      }
      _ = try await cost(requests: 1, frameSize: 16 << 10)  // warm up
      // The same bytes, the same requests; only the number of frames differs: 256 or 4,096 per request.
      let fewFrames = try await cost(requests: 3, frameSize: 16 << 10)
      let manyFrames = try await cost(requests: 3, frameSize: 1 << 10)
      // Copying the buffer gathered so far at every frame made 16 times more frames cost ~8 times more
      // server CPU (931 against 123 ms); gathered in place, only the frames' own cost grows (45 against 36 ms).
      #expect(
        manyFrames < 4 * fewFrames,
        "3 × 4 MiB: \(manyFrames / 1_000_000) ms of server CPU in 1 KiB frames, \(fewFrames / 1_000_000) ms in 16 KiB frames"
      )
    }
  }

  @Test("Connections beyond maxConnections are closed at once; below it again, new ones are served")
  func connectionCap() async throws {
    try await withBoundsServer(GRPCServerConfiguration(maxConnections: 2, idleTimeout: nil)) { server, _, port in
      let first = try RawHTTP2Client(port: port)
      let second = try RawHTTP2Client(port: port)
      #expect(await first.pump(until: { $0.settingsReceived }))
      #expect(await second.pump(until: { $0.settingsReceived }))
      let third = try RawHTTP2Client(port: port)
      #expect(await third.pump(until: { $0.ended }))
      #expect(third.events.bytesReceived == 0)  // closed before any frame
      var stats = await server.stats()
      #expect(stats.connectionsRefused == 1)
      #expect(stats.openConnections == 2)
      // One closes: the next connection is served.
      first.disconnect()
      #expect(await eventually { await server.stats().openConnections == 1 })
      let fourth = try RawHTTP2Client(port: port)
      #expect(await fourth.pump(until: { $0.settingsReceived }))
      let stream = try fourth.openRequest(path: BoundsMethod.count)
      try fourth.send(grpcPrefix(length: 1) + [9], on: stream, end: true)
      #expect(await fourth.pump(until: { $0.closed[stream] != nil }))
      #expect(fourth.grpcStatus(of: stream) == 0)
      stats = await server.stats()
      #expect(stats.connectionsRefused == 1)
    }
  }

  @Test("A connection with no open stream for idleTimeout gets GOAWAY and is closed; one with a stream is not")
  func idleConnectionsAreClosed() async throws {
    let timeout = Duration.milliseconds(300)
    try await withBoundsServer(GRPCServerConfiguration(idleTimeout: timeout)) { server, service, port in
      let idle = try RawHTTP2Client(port: port)
      let busy = try RawHTTP2Client(port: port)
      let held = try busy.openRequest(path: BoundsMethod.hold)
      try busy.send(grpcPrefix(length: 0), on: held, end: true)
      #expect(await busy.pump(until: { $0.headers[held] != nil }))
      #expect(await idle.pump(until: { $0.ended }))
      #expect(idle.events.goAway == .noError)
      // The busy connection outlives many timeouts (timers fire late under load, never early).
      #expect(await busy.pump(until: { $0.ended || $0.goAway != nil }, timeout: timeout * 5) == false)
      // Its stream ends: from then on it is idle, and closed a timeout later.
      service.releaseHeld()
      #expect(await busy.pump(until: { $0.closed[held] != nil }))
      #expect(busy.grpcStatus(of: held) == 0)
      #expect(await busy.pump(until: { $0.ended }))
      #expect(busy.events.goAway == .noError)
      let stats = await server.stats()
      #expect(stats.connectionsClosedIdle == 2)
      #expect(await eventually { await server.stats().openConnections == 0 })
    }
  }

  // MARK: - Deadlines

  @Test("A connection that sends nothing is closed at its handshake deadline; one that sent SETTINGS is not")
  func handshakeDeadline() async throws {
    let configuration = GRPCServerConfiguration(handshakeTimeout: .milliseconds(300), idleTimeout: nil)
    try await withBoundsServer(configuration) { server, _, port in
      let silent = try RawHTTP2Client(port: port, handshake: false)
      let polite = try RawHTTP2Client(port: port)
      #expect(await polite.pump(until: { $0.settingsReceived }))
      #expect(await silent.pump(until: { $0.ended }))
      #expect(await polite.pump(until: { $0.ended }, timeout: .seconds(1)) == false)
      let stats = await server.stats()
      #expect(stats.handshakesTimedOut == 1)
      #expect(await eventually { await server.stats().openConnections == 1 })
    }
  }

  @Test("A request that does not end within requestTimeout is answered DEADLINE_EXCEEDED and reset; others are served")
  func requestDeadline() async throws {
    let configuration = GRPCServerConfiguration(requestTimeout: .milliseconds(300), idleTimeout: nil)
    try await withBoundsServer(configuration) { server, _, port in
      let client = try RawHTTP2Client(port: port)
      let slow = try client.openRequest(path: BoundsMethod.count)
      try client.send(grpcPrefix(length: 10) + [1, 2, 3], on: slow)
      #expect(await client.pump(until: { $0.closed[slow] != nil }))
      #expect(client.grpcStatus(of: slow) == GRPCStatusCode.deadlineExceeded.rawValue)
      #expect(client.grpcMessage(of: slow)?.contains("did not end within") == true)
      #expect(client.events.closed[slow] == .noError)
      let quick = try client.openRequest(path: BoundsMethod.count)
      try client.send(grpcPrefix(length: 1) + [9], on: quick, end: true)
      #expect(await client.pump(until: { $0.closed[quick] != nil }))
      #expect(client.grpcStatus(of: quick) == 0)
      let stats = await server.stats()
      #expect(stats.requestsTimedOut == 1)
      #expect(stats.bufferedRequestBytes == 0)
    }
  }

  @Test("Unfinished requests do not keep a connection from idling: GOAWAY at idleTimeout, then closed")
  func unfinishedRequestsDoNotCountAsActivity() async throws {
    let configuration = GRPCServerConfiguration(requestTimeout: .seconds(1), idleTimeout: .milliseconds(300))
    try await withBoundsServer(configuration) { server, _, port in
      let client = try RawHTTP2Client(port: port)
      let stream = try client.openRequest(path: BoundsMethod.count)
      try client.send(grpcPrefix(length: 10), on: stream)
      #expect(await client.pump(until: { $0.goAway != nil }))
      #expect(client.events.goAway == .noError)
      #expect(await client.pump(until: { $0.ended }))
      let stats = await server.stats()
      #expect(stats.connectionsClosedIdle == 1)
      #expect(await eventually { await server.stats().openConnections == 0 })
    }
  }

  // MARK: - Peers

  @Test("A peer gets maxConnectionsPerPeer connections; another address is served beside it")
  func connectionsPerPeer() async throws {
    try await withBoundsServer(GRPCServerConfiguration(maxConnectionsPerPeer: 2, idleTimeout: nil)) { server, _, port in
      let hostile = try (0..<3).map { _ in try RawHTTP2Client(port: port, from: "127.0.0.2") }
      #expect(await hostile[0].pump(until: { $0.settingsReceived }))
      #expect(await hostile[1].pump(until: { $0.settingsReceived }))
      #expect(await hostile[2].pump(until: { $0.ended }))
      #expect(hostile[2].events.bytesReceived == 0)
      let polite = try RawHTTP2Client(port: port)
      let stream = try polite.openRequest(path: BoundsMethod.count)
      try polite.send(grpcPrefix(length: 1) + [9], on: stream, end: true)
      #expect(await polite.pump(until: { $0.closed[stream] != nil }))
      #expect(polite.grpcStatus(of: stream) == 0)
      #expect(await server.stats().peerConnectionsRefused == 1)
    }
  }

  @Test("A peer's streams and unfinished requests are bounded over all its connections; another peer keeps its share")
  func streamsAndRequestBytesPerPeer() async throws {
    let configuration = GRPCServerConfiguration(
      maxReceiveMessageSize: 1 << 20, maxRequestBytesPerPeer: (1 << 20) + 1024, maxStreamsPerPeer: 3,
      requestTimeout: unhurried, idleTimeout: nil)
    try await withBoundsServer(configuration) { server, _, port in
      let first = try RawHTTP2Client(port: port, from: "127.0.0.2")
      let second = try RawHTTP2Client(port: port, from: "127.0.0.2")
      // 512 KiB of unfinished request on each connection: 1 MiB for the peer, within its share.
      var open: [(RawHTTP2Client, Int32)] = []
      for client in [first, second] {
        let stream = try client.openRequest(path: BoundsMethod.count)
        try client.send(grpcPrefix(length: 1 << 20) + [UInt8](repeating: 1, count: 512 << 10), on: stream)
        open.append((client, stream))
      }
      #expect(
        await eventually {
          first.pump()
          second.pump()
          return await server.stats().bufferedRequestBytes == 2 * ((512 << 10) + 5)
        })
      // 64 KiB more on a third stream takes the peer over its share: refused.
      let over = try first.openRequest(path: BoundsMethod.count)
      try first.send(grpcPrefix(length: 1 << 20) + [UInt8](repeating: 2, count: 64 << 10), on: over)
      #expect(await first.pump(until: { $0.closed[over] != nil }))
      #expect(first.grpcMessage(of: over)?.contains("this client's unfinished requests exceed") == true)
      // A fourth stream while three are open (the refused one is closed now, so open two more).
      let third = try second.openRequest(path: BoundsMethod.count)
      let fourth = try second.openRequest(path: BoundsMethod.count)
      #expect(await second.pump(until: { $0.closed[fourth] != nil || $0.closed[third] != nil }))
      let refused = second.events.closed[fourth] != nil ? fourth : third
      #expect(second.grpcStatus(of: refused) == resourceExhausted)
      #expect(second.grpcMessage(of: refused)?.contains("streams open") == true)
      // Another address is served in full meanwhile.
      let polite = try RawHTTP2Client(port: port)
      let stream = try polite.openRequest(path: BoundsMethod.count)
      try polite.send(grpcPrefix(length: 1 << 19) + [UInt8](repeating: 3, count: 1 << 19), on: stream, end: true)
      #expect(await polite.pump(until: { $0.closed[stream] != nil }))
      #expect(polite.grpcStatus(of: stream) == 0)
      _ = open
    }
  }

  @Test("Decoded headers count against a peer's budget for the stream's life; released when it closes")
  func headerBytesPerPeer() async throws {
    let configuration = GRPCServerConfiguration(maxHeaderBytesPerPeer: 6_000, idleTimeout: nil)
    try await withBoundsServer(configuration) { server, _, port in
      let client = try RawHTTP2Client(port: port, from: "127.0.0.2")
      let big = [HTTP2HeaderField("x-big", String(repeating: "h", count: 2_500))]
      let first = try client.openRequest(path: BoundsMethod.count, metadata: big)
      let second = try client.openRequest(path: BoundsMethod.count, metadata: big)
      let third = try client.openRequest(path: BoundsMethod.count, metadata: big)
      #expect(await client.pump(until: { $0.closed[third] != nil }))
      #expect(client.grpcStatus(of: third) == resourceExhausted)
      #expect(client.grpcMessage(of: third)?.contains("bytes of headers") == true)
      let held = await server.stats().heldHeaderBytes
      #expect(held > 5_000 && held <= 6_000, "\(held)")
      client.cancel(first)
      client.cancel(second)
      #expect(
        await eventually {
          client.pump(); return await server.stats().heldHeaderBytes == 0
        })
      let fourth = try client.openRequest(path: BoundsMethod.count, metadata: big)
      try client.send(grpcPrefix(length: 1) + [1], on: fourth, end: true)
      #expect(await client.pump(until: { $0.closed[fourth] != nil }))
      #expect(client.grpcStatus(of: fourth) == 0)
    }
  }

  @Test(
    "A peer opening streams faster than its rate gets GOAWAY(ENHANCE_YOUR_CALM); its reconnects are refused a while")
  func streamOpenRate() async throws {
    let configuration = GRPCServerConfiguration(
      maxStreamsPerPeer: 5, streamOpensPerSecondPerPeer: 1, peerPenalty: .seconds(30), idleTimeout: nil)
    try await withBoundsServer(configuration) { server, _, port in
      let client = try RawHTTP2Client(port: port, from: "127.0.0.2")
      for _ in 0..<8 {
        let stream = try client.openRequest(path: BoundsMethod.count)
        client.pump()  // the HEADERS leave before the reset (nghttp2 drops a stream reset before it was sent)
        client.cancel(stream)
      }
      #expect(await client.pump(until: { $0.ended }))
      #expect(client.events.goAway == .enhanceYourCalm)
      let again = try RawHTTP2Client(port: port, from: "127.0.0.2")
      #expect(await again.pump(until: { $0.ended }))
      #expect(again.events.bytesReceived == 0)
      let polite = try RawHTTP2Client(port: port)
      let stream = try polite.openRequest(path: BoundsMethod.count)
      try polite.send(grpcPrefix(length: 1) + [1], on: stream, end: true)
      #expect(await polite.pump(until: { $0.closed[stream] != nil }))
      #expect(polite.grpcStatus(of: stream) == 0)
      let stats = await server.stats()
      #expect(stats.connectionsRateLimited == 1)
      #expect(stats.peerConnectionsRefused == 1)
    }
  }

  // MARK: - Back-pressure

  @Test("A client that never reads: the server stops reading from it once its output passes the bound, then resumes")
  func nonReadingClientIsPaused() async throws {
    let configuration = GRPCServerConfiguration(maxOutboundBytesPerConnection: 64 << 10, idleTimeout: nil)
    try await withBoundsServer(configuration) { server, _, port in
      // A small receive buffer, so that the kernel holds little of what the server sends.
      let client = try RawHTTP2Client(port: port, receiveBuffer: 64 << 10)
      #expect(await client.pump(until: { $0.settingsReceived }))
      // 200 answers of 64 KiB (12.5 MiB) against an 8 MiB connection window and a reader that never reads.
      var streams: [Int32] = []
      for _ in 0..<200 {
        let stream = try client.openRequest(path: BoundsMethod.big)
        try client.send(grpcPrefix(length: 0), on: stream, end: true)
        streams.append(stream)
      }
      client.pumpWritesOnly()
      #expect(await eventually { await server.stats().readPauses > 0 })
      // Paused: ten more calls stay unread in the socket while the client does not read.
      for _ in 0..<10 {
        let stream = try client.openRequest(path: BoundsMethod.count)
        try client.send(grpcPrefix(length: 1) + [1], on: stream, end: true)
        streams.append(stream)
      }
      client.pumpWritesOnly()
      try await Task.sleep(for: .milliseconds(300))
      #expect(await server.stats().callsStarted == 200)
      // Reading again drains it, and the server takes the rest.
      #expect(
        await client.pump(until: { events in streams.allSatisfy { events.closed[$0] != nil } }, timeout: .seconds(60)))
      #expect(await server.stats().callsStarted == 210)
      #expect(streams.allSatisfy { client.grpcStatus(of: $0) == 0 })
    }
  }

  @Test(
    "A client that reads none of its output is closed after outputStallTimeout; its half-close meanwhile costs no spin")
  func stalledOutputIsClosed() async throws {
    let configuration = GRPCServerConfiguration(
      maxOutboundBytesPerConnection: 64 << 10, outputStallTimeout: .seconds(2), idleTimeout: nil)
    try await withBoundsServer(configuration) { server, _, port in
      let client = try RawHTTP2Client(port: port, receiveBuffer: 64 << 10)
      #expect(await client.pump(until: { $0.settingsReceived }))
      for _ in 0..<200 {
        let stream = try client.openRequest(path: BoundsMethod.big)
        try client.send(grpcPrefix(length: 0), on: stream, end: true)
      }
      client.pumpWritesOnly()
      #expect(await eventually { await server.stats().readPauses > 0 })
      // A half-close while the server is not reading: reported by epoll only to a reader, so no busy loop.
      client.shutdownWrites()
      let before = await loopCPUNanoseconds(server)
      try await Task.sleep(for: .milliseconds(500))
      let spent = await loopCPUNanoseconds(server) - before
      #expect(spent < 250_000_000, "the server's loop used \(spent / 1_000_000) ms of CPU in 500 ms while paused")
      #expect(await eventually { await server.stats().connectionsStalled == 1 })
      #expect(await eventually { await server.stats().openConnections == 0 })
    }
  }
}
