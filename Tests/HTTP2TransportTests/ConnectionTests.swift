// Tests/HTTP2TransportTests/ConnectionTests.swift - the pool, GOAWAY, dropped connections, keepalive,
// graceful shutdown, and a hostile client against the server

import GRPCProtocol
import HTTP2Transport
import Primitives
import TestSupport
import Testing

/// Records how a call ended, from the loop thread; readable from anywhere.
final class FinishRecorder: GRPCCallHandler, Sendable {
  private struct State {
    var messages = 0
    var status: GRPCStatus?
  }
  private let state = Locked(State())

  var messages: Int { state.withLock { $0.messages } }
  var status: GRPCStatus? { state.withLock { $0.status } }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    state.withLock { $0.messages += 1 }
  }

  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    state.withLock { $0.status = status }
  }
}

@Suite("Connections", .timeLimit(.minutes(1)))
struct ConnectionTests {
  @Test("calls beyond the server's stream limit open more connections, up to maxConnections")
  func poolGrows() async throws {
    try await Fixture.with(
      server: GRPCServerConfiguration(maxConcurrentStreams: 2),
      channel: GRPCChannelConfiguration(security: .plaintext, maxConnections: 8)
    ) { fixture in
      let responses = (0..<10).map { _ in fixture.channel.serverStreaming(path: Method.held, request: []) }
      #expect(await eventually { await fixture.server.stats().openCalls == 10 })
      let serverStats = await fixture.server.stats()
      #expect(serverStats.connectionsAccepted >= 5)
      #expect(serverStats.connectionsAccepted <= 8)
      let channelStats = await fixture.channel.statistics()
      #expect(channelStats.activeCalls == 10)
      #expect(channelStats.queuedCalls == 0)
      #expect(channelStats.openConnections == serverStats.connectionsAccepted)

      fixture.service.releaseHeld()
      for response in responses {
        #expect(await drain(response) == .success(1))
        #expect(await response.result().status.code == .ok)
      }
    }
  }

  @Test("with maxConnections 1, calls beyond the stream limit queue and all still end OK")
  func poolOfOne() async throws {
    try await Fixture.with(
      server: GRPCServerConfiguration(maxConcurrentStreams: 2),
      channel: GRPCChannelConfiguration(security: .plaintext, maxConnections: 1)
    ) { fixture in
      let responses = (0..<10).map { _ in fixture.channel.serverStreaming(path: Method.held, request: []) }
      #expect(await eventually { await fixture.server.stats().openCalls == 2 })
      #expect(await eventually { await fixture.channel.statistics().queuedCalls == 8 })
      #expect(await fixture.channel.statistics().activeCalls == 2)

      fixture.service.releaseHeld()
      for response in responses {
        #expect(await drain(response) == .success(1))
        #expect(await response.result().status.code == .ok)
      }
      let serverStats = await fixture.server.stats()
      #expect(serverStats.connectionsAccepted == 1)
      #expect(serverStats.callsStarted == 10)
    }
  }

  @Test("queued calls cancelled before their turn end CANCELLED; the others still start in order and end OK")
  func cancelledWhileQueued() async throws {
    try await Fixture.with(
      server: GRPCServerConfiguration(maxConcurrentStreams: 2),
      channel: GRPCChannelConfiguration(security: .plaintext, maxConnections: 1)
    ) { fixture in
      let responses = (0..<300).map { _ in fixture.channel.serverStreaming(path: Method.held, request: []) }
      #expect(await eventually { await fixture.channel.statistics().queuedCalls == 298 })
      // Every other queued call is cancelled: more than half the queue goes stale before it drains.
      let cancelled = Set(stride(from: 3, to: 300, by: 2))
      for index in cancelled { responses[index].cancel() }
      #expect(await eventually { await fixture.channel.statistics().queuedCalls == 298 - cancelled.count })
      fixture.service.releaseHeld()
      for (index, response) in responses.enumerated() {
        if cancelled.contains(index) {
          #expect(await response.result().status.code == .cancelled, "call \(index)")
        } else {
          #expect(await drain(response) == .success(1), "call \(index)")
          #expect(await response.result().status.code == .ok, "call \(index)")
        }
      }
      #expect(await fixture.server.stats().callsStarted == 300 - cancelled.count)
      #expect(await fixture.channel.statistics().queuedCalls == 0)
    }
  }

  @Test("after GOAWAY the open call completes OK and a new call goes to a new connection")
  func goAway() async throws {
    try await Fixture.with { fixture in
      let response = fixture.channel.serverStreaming(path: Method.held, request: [])
      var iterator = response.makeAsyncIterator()
      let first = await next(&iterator)
      #expect(first.map { $0.flatMap(StreamSpec.index(of:)) } == .success(0))

      fixture.server.sendGoAway()
      #expect(await eventually { await fixture.server.stats().goAwaysSent == 1 })

      // The server now ignores new streams on the old connection: this call reaches it
      // on a new connection (directly, or after the GOAWAY refuses it on the old one).
      let echo = try await fixture.channel.unary(path: Method.unary, request: [1, 2])
      #expect(echo.message == [1, 2])
      #expect(await fixture.server.stats().connectionsAccepted == 2)

      fixture.service.releaseHeld()
      let end = await next(&iterator)
      #expect(end == .success(nil))
      #expect(await response.result().status.code == .ok)
      #expect(fixture.service.cancellations == 0)
      // With its last call done, the old connection closes.
      #expect(await eventually { await fixture.server.stats().openConnections == 1 })
      #expect(await eventually { await fixture.channel.statistics().openConnections == 1 })
    }
  }

  @Test("a dropped connection fails its open call UNAVAILABLE; the next call reconnects")
  func droppedConnection() async throws {
    try await Fixture.with { fixture in
      let response = fixture.channel.serverStreaming(path: Method.held, request: [])
      var iterator = response.makeAsyncIterator()
      let first = await next(&iterator)
      #expect(first.map { $0.flatMap(StreamSpec.index(of:)) } == .success(0))

      fixture.server.dropConnections()
      let result = await response.result()
      #expect(result.status.code == .unavailable)
      #expect(result.status.cause as? ConnectionError == .closedByPeer)
      #expect(await next(&iterator).failure?.code == .unavailable)
      #expect(await eventually { fixture.service.cancellations == 1 })

      let echo = try await fixture.channel.unary(path: Method.unary, request: [3])
      #expect(echo.message == [3])
      let stats = await fixture.server.stats()
      #expect(stats.connectionsDropped == 1)
      #expect(stats.connectionsAccepted == 2)
    }
  }

  @Test("keepalive pings an idle connection and the server acknowledges them")
  func keepalive() async throws {
    let keepalive = Keepalive(interval: .milliseconds(100), timeout: .seconds(1), permitWithoutCalls: true)
    try await Fixture.with(channel: GRPCChannelConfiguration(security: .plaintext, keepalive: keepalive)) { fixture in
      #expect(await unaryResult(fixture.channel, path: Method.unary, request: [1]).map(\.message) == .success([1]))
      #expect(
        await eventually {
          let stats = await fixture.channel.statistics()
          return stats.pingsSent >= 3 && stats.pingAcksReceived >= 3
        })
      let stats = await fixture.channel.statistics()
      #expect(stats.pingAcksReceived <= stats.pingsSent)
      #expect(await unaryResult(fixture.channel, path: Method.unary, request: [2]).map(\.message) == .success([2]))
      #expect(await fixture.server.stats().connectionsAccepted == 1)
      #expect(await fixture.channel.statistics().openConnections == 1)
    }
  }

  @Test("without permitWithoutCalls an idle connection is not pinged")
  func keepaliveIdle() async throws {
    let keepalive = Keepalive(interval: .milliseconds(50), timeout: .seconds(1), permitWithoutCalls: false)
    try await Fixture.with(channel: GRPCChannelConfiguration(security: .plaintext, keepalive: keepalive)) { fixture in
      #expect(await unaryResult(fixture.channel, path: Method.unary, request: [1]).map(\.message) == .success([1]))
      let before = await fixture.channel.statistics().pingsSent
      try await Task.sleep(for: .milliseconds(300))
      #expect(await fixture.channel.statistics().pingsSent == before)
      // With a call open, pings go out.
      let response = fixture.channel.serverStreaming(path: Method.held, request: [])
      #expect(await eventually { await fixture.channel.statistics().pingAcksReceived >= 2 })
      fixture.service.releaseHeld()
      #expect(await drain(response) == .success(1))
    }
  }

  @Test("graceful shutdown waits for the open call to end OK; later calls fail UNAVAILABLE")
  func gracefulShutdown() async throws {
    try await Fixture.with { fixture in
      let channel = fixture.channel
      let recorder = FinishRecorder()
      channel.startCall(path: Method.held, request: [], kind: .serverStreaming, handler: recorder)
      #expect(await eventually { recorder.messages == 1 })

      // Shutdown must wait for the held call: what it returns is the call's status when it returned.
      let shutdown = Task {
        await channel.shutdown()
        return recorder.status
      }
      // Once shutdown has begun, new calls fail UNAVAILABLE without reaching the server.
      #expect(await eventually { await unaryError(channel, path: Method.unary, request: [1])?.code == .unavailable })
      try await Task.sleep(for: .milliseconds(300))
      #expect(recorder.status == nil)
      #expect(await channel.statistics().activeCalls == 1)

      fixture.service.releaseHeld()
      let statusWhenShutdownReturned = await shutdown.value
      #expect(statusWhenShutdownReturned?.code == .ok)
      #expect(recorder.messages == 1)
      #expect(await channel.statistics().openConnections == 0)

      let callsStarted = await fixture.server.stats().callsStarted
      let error = await unaryError(channel, path: Method.unary, request: [1])
      #expect(error?.code == .unavailable)
      #expect(error?.cause as? ConnectionError == .shutdown)
      #expect(await fixture.server.stats().callsStarted == callsStarted)
    }
  }

  @Test("close fails the open calls UNAVAILABLE at once")
  func close() async throws {
    try await Fixture.with { fixture in
      let response = fixture.channel.serverStreaming(path: Method.held, request: [])
      var iterator = response.makeAsyncIterator()
      let first = await next(&iterator)
      #expect(first.map { $0 != nil } == .success(true))
      fixture.channel.close()
      #expect(await response.result().status.code == .unavailable)
      #expect(await response.result().status.cause as? ConnectionError == .shutdown)
      #expect(await eventually { fixture.service.cancellations == 1 })
    }
  }

  @Test(
    "a client sending garbage is disconnected; other clients are served",
    arguments: GarbageCase.all)
  func hostileClient(_ garbage: GarbageCase) async throws {
    try await Fixture.with { fixture in
      let port = fixture.port
      let outcome = try await Task.detached { try sendRaw(garbage.bytes, toPort: port) }.value
      guard case .closed = outcome else {
        Issue.record("the server kept the connection open: \(outcome)")
        return
      }
      #expect(await eventually { await fixture.server.stats().openConnections == 0 })
      let stats = await fixture.server.stats()
      #expect(stats.connectionsAccepted == 1)
      #expect(stats.callsStarted == 0)

      #expect(await unaryResult(fixture.channel, path: Method.unary, request: [5]).map(\.message) == .success([5]))
      let response = fixture.channel.serverStreaming(path: Method.stream, request: StreamSpec(count: 10).encoded)
      #expect(await drain(response) == .success(10))
    }
  }
}

/// Bytes no HTTP/2 server should put up with.
struct GarbageCase: Sendable, CustomTestStringConvertible {
  var name: String
  var bytes: [UInt8]
  var testDescription: String { name }

  static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
  static let emptySettings: [UInt8] = [0, 0, 0, 0x4, 0, 0, 0, 0, 0]

  static let all: [GarbageCase] = [
    GarbageCase(name: "an HTTP/1.1 request", bytes: Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)),
    GarbageCase(name: "random bytes", bytes: randomBytes(count: 4096, seed: 42)),
    // DATA on stream 0 is a connection error (PROTOCOL_ERROR).
    GarbageCase(
      name: "the preface, then DATA on stream 0",
      bytes: preface + emptySettings + [0, 0, 4, 0x0, 0, 0, 0, 0, 0, 1, 2, 3, 4]),
    // A frame longer than the 16 KiB SETTINGS_MAX_FRAME_SIZE (FRAME_SIZE_ERROR).
    GarbageCase(
      name: "the preface, then an oversized frame",
      bytes: preface + emptySettings + [0xFF, 0xFF, 0xFF, 0x0, 0, 0, 0, 0, 1]),
  ]

  static func randomBytes(count: Int, seed: UInt64) -> [UInt8] {
    var generator = SplitMix64(seed: seed)
    return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
  }
}
