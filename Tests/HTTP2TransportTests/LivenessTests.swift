// Tests/HTTP2TransportTests/LivenessTests.swift - keepalive against a real grpcio server: on by default, a server
// process stopped with SIGSTOP is noticed, and the server's ping policy (too_many_pings) is respected

import Foundation
import GRPCProtocol
import HTTP2Transport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

private let service = GRPCIOFixture.service

extension PythonPeerTests {
  @Suite("Keepalive and dead servers (grpcio peer)", .timeLimit(.minutes(2)))
  struct LivenessTests {
    @Test("keepalive is on by default: 20 s of silence, 10 s to answer, only while calls are open")
    func defaults() {
      let keepalive = GRPCChannelConfiguration().keepalive
      #expect(keepalive == Keepalive(interval: .seconds(20), timeout: .seconds(10), permitWithoutCalls: false))
    }

    @Test(
      "regression: calls on a server stopped with SIGSTOP end UNAVAILABLE within interval + timeout",
      arguments: Transport.allCases)
    func stoppedServer(transport: Transport) async throws {
      // The server allows pings every 100 ms, so its own policy plays no part here.
      try await GRPCIOFixture.with(
        transport, serverArguments: ["--keepalive-policy", "100:0"],
        configure: { $0.keepalive = Keepalive(interval: .seconds(1), timeout: .seconds(1)) }
      ) { fixture in
        // A bidirectional call the server keeps open, waiting for requests, and a streaming call
        // whose next response is far away: both carry no data while the server is stopped.
        let idle = fixture.channel.makeStreamingCall(path: service + "FullDuplexCall")
        let slow = fixture.channel.serverStreaming(
          path: service + "StreamingOutputCall",
          request: Proto.outputRequest(sizes: [1, 1], intervalMicroseconds: 60_000_000))
        var slowIterator = slow.makeAsyncIterator()
        #expect(await eventually { await fixture.channel.statistics().activeCalls == 2 })
        try await Task.sleep(for: .milliseconds(200))

        fixture.peer.send(SIGSTOP)
        let clock = ContinuousClock()
        let stopped = clock.now
        let idleResult = await idle.responses.result()
        let waited = clock.now - stopped
        fixture.peer.send(SIGCONT)

        #expect(idleResult.status.code == .unavailable)
        #expect(idleResult.status.message.contains("keepalive"), "\(idleResult.status.message)")
        #expect(idleResult.status.cause as? ConnectionError == .keepaliveTimeout(.seconds(1)))
        // Interval (1 s) + timeout (1 s), with room for a loaded machine; without keepalive it never ends.
        #expect(waited < .seconds(15), "noticed after \(waited)")
        let slowOutcome = await next(&slowIterator)
        #expect(slowOutcome.failure?.code == .unavailable)
        #expect(await fixture.channel.statistics().pingsSent >= 1)
        // The server runs again: the channel reconnects for the next call.
        #expect(await unaryError(fixture.channel, path: service + "EmptyCall") == nil)
      }
    }

    @Test("regression: with the default configuration, a stopped server is noticed (about 30 s, not never)")
    func stoppedServerDefaults() async throws {
      try await GRPCIOFixture.with(.h2c, serverArguments: ["--keepalive-policy", "100:0"]) { fixture in
        let idle = fixture.channel.makeStreamingCall(path: service + "FullDuplexCall")
        #expect(await eventually { await fixture.channel.statistics().activeCalls == 1 })
        fixture.peer.send(SIGSTOP)
        let clock = ContinuousClock()
        let stopped = clock.now
        let result = await idle.responses.result()
        let waited = clock.now - stopped
        fixture.peer.send(SIGCONT)
        #expect(result.status.code == .unavailable)
        #expect(result.status.message.contains("keepalive"), "\(result.status.message)")
        #expect(result.status.cause as? ConnectionError == .keepaliveTimeout(.seconds(10)))
        // 20 s of silence and 10 s without an answer; generous room above that for a loaded machine.
        #expect(waited < .seconds(60), "noticed after \(waited)")
      }
    }

    @Test("a server that answers, however slowly it sends, is never cut off: pings only after silence")
    func silentButAlive() async throws {
      try await GRPCIOFixture.with(
        .h2c, serverArguments: ["--keepalive-policy", "100:0"],
        configure: { $0.keepalive = Keepalive(interval: .milliseconds(300), timeout: .seconds(2)) }
      ) { fixture in
        // Responses 1 s apart: the connection is silent longer than the interval in between.
        let stream = fixture.channel.serverStreaming(
          path: service + "StreamingOutputCall",
          request: Proto.outputRequest(sizes: [1, 1, 1], intervalMicroseconds: 1_000_000))
        #expect(await drain(stream) == .success(3))
        let stats = await fixture.channel.statistics()
        #expect(stats.pingsSent >= 2)
        #expect(stats.pingAcksReceived >= 1)
        #expect(stats.openConnections == 1)
      }
    }

    @Test("GOAWAY ENHANCE_YOUR_CALM too_many_pings doubles the keepalive interval, as grpc-go does")
    func tooManyPings() async throws {
      // grpc-core's policy: pings without data closer than 60 s apart are strikes; after one, GOAWAY.
      try await GRPCIOFixture.with(
        .h2c, serverArguments: ["--keepalive-policy", "60000:1"],
        configure: { $0.keepalive = Keepalive(interval: .milliseconds(200), timeout: .seconds(5)) }
      ) { fixture in
        #expect(await fixture.channel.statistics().keepaliveInterval == .milliseconds(200))
        let idle = fixture.channel.makeStreamingCall(path: service + "FullDuplexCall")
        let result = await idle.responses.result()
        // The server closed the connection with its GOAWAY; the call on it is lost, as with grpc-go.
        #expect(result.status.code == .unavailable)
        #expect(await fixture.channel.statistics().keepaliveInterval == .milliseconds(400))
        // The channel goes on with the longer interval.
        #expect(await unaryError(fixture.channel, path: service + "EmptyCall") == nil)
      }
    }
  }
}
