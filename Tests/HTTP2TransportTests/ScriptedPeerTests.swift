// Tests/HTTP2TransportTests/ScriptedPeerTests.swift - the channel against the scripted h2 server
// (Tests/Conformance/h2conf_server.py): request back-pressure, encoding negotiation, and a server
// that allows no streams (SETTINGS_MAX_CONCURRENT_STREAMS = 0)

import Foundation
import GRPCProtocol
import HTTP2Session
import HTTP2Transport
import TestSupport
import Testing

private let cases = "/conformance.Cases/"

/// Runs `body` with a scripted server started with `arguments` and a plaintext channel to it.
private func withScriptedServer<R>(
  _ arguments: [String], configure: (inout GRPCChannelConfiguration) -> Void = { _ in },
  _ body: (PythonPeer, GRPCChannel) async throws -> R
) async throws -> R {
  try await PythonPeer.with("Tests/Conformance/h2conf_server.py", arguments) { peer in
    var configuration = GRPCChannelConfiguration(security: .plaintext)
    configure(&configuration)
    let channel = try GRPCChannel(host: "127.0.0.1", port: peer.port, configuration: configuration)
    do {
      let result = try await body(peer, channel)
      await channel.shutdown()
      return result
    } catch {
      channel.close()
      throw error
    }
  }
}

/// The records the server wrote for `caseName`, waiting up to 10 s for `count` of them.
private func records(of peer: PythonPeer, _ caseName: String, count: Int) async -> [[String: Any]] {
  _ = await eventually(timeout: .seconds(10)) {
    peer.records.filter { $0["case"] as? String == caseName }.count >= count
  }
  return peer.records.filter { $0["case"] as? String == caseName }
}

/// A record's request headers as (name, value) pairs.
private func requestHeaders(_ record: [String: Any]) -> [(String, String)] {
  (record["request_headers"] as? [[String]] ?? []).compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }
}

extension PythonPeerTests {
  @Suite("Scripted h2 peer: back-pressure, negotiation, stream limits", .timeLimit(.minutes(2)))
  struct ScriptedPeerTests {
    @Test("a writer waits while the server's window is closed: at most about 64 KiB are buffered")
    func writerBackPressure() async throws {
      // The server grants each stream 16 bytes of window and never more, then answers after 2 s.
      try await withScriptedServer(["--request-window", "16"]) { peer, channel in
        let call = channel.makeStreamingCall(path: cases + "hold_request", kind: .clientStreaming)
        let written = Counter()
        let message = [UInt8](repeating: 7, count: 16 << 10)
        let producer = Task {
          for _ in 0..<40 {
            try await call.requests.write(message)
            written.increment()
          }
        }
        // Writes go on until the unsent bytes pass 64 KiB (16 bytes ever leave): three messages of
        // 16 KiB + 5 return, the fourth is queued and its write waits.
        #expect(await eventually { written.value >= 3 }, "written \(written.value)")
        try await Task.sleep(for: .milliseconds(500))
        let stalled = written.value
        #expect(stalled == 3, "\(stalled) messages of 16 KiB accepted against a 16-byte window")
        try await Task.sleep(for: .milliseconds(300))
        #expect(written.value == stalled)
        // The server then completes the call: the waiting write learns it.
        let result = await call.responses.result()
        #expect(result.status == .ok)
        let outcome = await producer.result
        guard case .failure(let error as GRPCError) = outcome else {
          Issue.record("the blocked write did not fail: \(outcome)")
          return
        }
        #expect(error.code == .cancelled)
        #expect(error.message.contains("completed the call with OK"))
        let record = try #require(await records(of: peer, "hold_request", count: 1).first)
        #expect(record["request_body_len"] as? Int == 16)
        #expect(record["client_rst"] as? Int == 0, "\(record)")  // C53b: the request never ended
      }
    }

    @Test("a server whose grpc-accept-encoding leaves out gzip gets uncompressed requests from then on")
    func negotiation() async throws {
      try await withScriptedServer([]) { peer, channel in
        var options = CallOptions()
        options.compression = .gzip
        let message = [UInt8](repeating: 0x41, count: 200)
        for _ in 0..<2 {
          let response = try await channel.unary(
            path: cases + "accepts_identity_only", request: message, options: options)
          #expect(response.message == [0x0A, 0x0B] + Array("hello world".utf8))
        }
        let seen = await records(of: peer, "accepts_identity_only", count: 2)
        try #require(seen.count == 2)
        // First call: the server's preferences were not known yet, so gzip.
        #expect(requestHeaders(seen[0]).contains { $0 == ("grpc-encoding", "gzip") })
        #expect((seen[0]["request_body_hex"] as? String)?.hasPrefix("01") == true)
        #expect(requestHeaders(seen[0]).contains { $0 == ("grpc-accept-encoding", "identity,gzip,deflate") })
        // Second call: the server said identity only: no grpc-encoding, flag 0, the message as it is.
        #expect(!requestHeaders(seen[1]).contains { $0.0 == "grpc-encoding" })
        #expect(seen[1]["request_body_hex"] as? String == "00000000c8" + String(repeating: "41", count: 200))
      }
    }

    @Test(
      "regression: SETTINGS_MAX_CONCURRENT_STREAMS = 0 fails calls UNAVAILABLE within the connect timeout, one connection"
    )
    func zeroStreams() async throws {
      let configure: (inout GRPCChannelConfiguration) -> Void = { configuration in
        configuration.connectTimeout = .seconds(1)
        configuration.backoff = RetryBackoff(initial: .seconds(60), jitter: 0)
      }
      try await withScriptedServer(["--max-concurrent-streams", "0"], configure: configure) { _, channel in
        // Calls must not wait for their deadline (20 s) nor open a connection each.
        var options = CallOptions()
        options.timeout = .seconds(20)
        let clock = ContinuousClock()
        let start = clock.now
        let first = await unaryError(channel, path: cases + "unary_ok", options: options)
        let firstWait = clock.now - start
        #expect(first?.code == .unavailable)
        #expect(first?.message.contains("SETTINGS_MAX_CONCURRENT_STREAMS = 0") == true)
        #expect(first?.cause as? ConnectionError == .noStreamsAllowed(waited: .seconds(1)))
        // Bounded by the connect timeout (1 s here), far below the deadline.
        #expect(firstWait < .seconds(10), "the call waited \(firstWait)")
        // Later calls fail fast while the backoff holds: no connection per call.
        for _ in 0..<5 {
          let error = await unaryError(channel, path: cases + "unary_ok", options: options)
          #expect(error?.code == .unavailable)
          #expect(error?.cause as? ConnectionError == .noStreamsAllowed(waited: .seconds(1)))
        }
        let stats = await channel.statistics()
        #expect(stats.connectAttempts == 1)
        #expect(stats.openConnections == 0)
      }
    }

    @Test("a server that breaks HTTP/2 fails the call with .protocolError; one that closes, with .closedByPeer")
    func connectionErrorCauses() async throws {
      try await withScriptedServer([]) { _, channel in
        let garbage = try #require(await unaryError(channel, path: cases + "garbage_before_headers"))
        #expect(garbage.code == .unavailable)
        guard case .protocolError(let sessionError)? = garbage.cause as? ConnectionError else {
          Issue.record("cause: \(String(describing: garbage.cause)), message: \(garbage.message)")
          return
        }
        #expect(garbage.message == "HTTP/2 protocol error from the server: \(sessionError.message)")

        let closed = try #require(await unaryError(channel, path: cases + "headers_then_close"))
        #expect(closed.code == .unavailable)
        #expect(closed.cause as? ConnectionError == .closedByPeer, "\(closed)")
      }
    }

    @Test("a TLS server that does not agree on ALPN h2 fails the call with .alpnNotNegotiated")
    func alpnCause() async throws {
      let certificates = try TestCertificates()
      defer { certificates.remove() }
      let arguments = [
        "--cert", certificates.serverCertificateFile, "--key", certificates.serverKeyFile, "--alpn", "none",
      ]
      try await withScriptedServer(
        arguments, configure: { $0.security = .tls(TLSConfiguration(trustRoots: .caFile(certificates.caFile))) }
      ) { peer, channel in
        let error = try #require(await unaryError(channel, path: cases + "unary_ok"))
        #expect(error.code == .unavailable)
        #expect(error.cause as? ConnectionError == .alpnNotNegotiated(selected: nil), "\(error)")
        #expect(error.message.lowercased().contains("alpn"))
        // The server saw the TLS connection and nothing from the client after the handshake.
        let connection: () -> [String: Any]? = { peer.records.first { $0["event"] as? String == "connection" } }
        #expect(await eventually(timeout: .seconds(10)) { connection() != nil })
        #expect(connection()?["client_sent_bytes"] as? Int == 0)
      }
    }
  }
}
