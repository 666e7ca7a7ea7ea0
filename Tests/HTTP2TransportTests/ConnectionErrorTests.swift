// Tests/HTTP2TransportTests/ConnectionErrorTests.swift - why a connection failed, by type: ConnectionError's
// messages, and the cause that calls failed for a connection's sake carry (a refused port, TLS against an h2c
// server, a dropped connection, GOAWAY then a drop, the channel closed), against real servers on 127.0.0.1

import GRPCProtocol
import HTTP2Session
import HTTP2Transport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("Connection errors: messages and classification")
struct ConnectionErrorDescriptionTests {
  static let descriptions: [(ConnectionError, String)] = [
    (
      .resolutionFailed(host: "fleet.example", reason: "Name or service not known"),
      "resolving fleet.example: Name or service not known"
    ),
    (.connectionRefused(address: "127.0.0.1:1"), "connect to 127.0.0.1:1: Connection refused"),
    (.unreachable(address: "[::1]:443", errno: EHOSTUNREACH), "connect to [::1]:443: No route to host"),
    (.connectTimedOut(address: "127.0.0.1:50051"), "connect to 127.0.0.1:50051 timed out"),
    (
      .tlsHandshakeFailed(reason: "error:0A000126:SSL routines::unexpected eof while reading"),
      "TLS handshake failed: error:0A000126:SSL routines::unexpected eof while reading"
    ),
    (.tlsHandshakeFailed(reason: ""), "TLS handshake failed"),
    (
      .serverNotTLS(reason: "error:0A00010B:SSL routines::wrong version number"),
      "TLS handshake failed: the server did not answer with TLS (is it a cleartext h2c server?): "
        + "error:0A00010B:SSL routines::wrong version number"
    ),
    (
      .certificateVerificationFailed(reason: "self-signed certificate"),
      "TLS certificate verification failed: self-signed certificate"
    ),
    (.alpnNotNegotiated(selected: nil), "the server did not agree on ALPN protocol h2"),
    (
      .alpnNotNegotiated(selected: "http/1.1"),
      "the server did not agree on ALPN protocol h2 (it selected \"http/1.1\")"
    ),
    (
      .tlsFailed(operation: "read", reason: "error:0A000119:SSL routines::decryption failed or bad record mac"),
      "TLS read failed: error:0A000119:SSL routines::decryption failed or bad record mac"
    ),
    (
      .protocolError(
        HTTP2SessionError(code: HTTP2SessionError.Codes.frameSizeError, message: "connection error FRAME_SIZE_ERROR")),
      "HTTP/2 protocol error from the server: connection error FRAME_SIZE_ERROR"
    ),
    (
      .goAway(errorCode: .enhanceYourCalm, debugData: Array("too_many_pings".utf8)),
      "the server sent GOAWAY ENHANCE_YOUR_CALM \"too_many_pings\" and closed the connection"
    ),
    (.goAway(errorCode: .noError, debugData: []), "the server sent GOAWAY NO_ERROR and closed the connection"),
    (
      .goAway(errorCode: .protocolError, debugData: [0, 1, 0xFF]),
      "the server sent GOAWAY PROTOCOL_ERROR (3 bytes of debug data) and closed the connection"
    ),
    (
      .noStreamsAllowed(waited: .seconds(1)),
      "the server allowed no streams (SETTINGS_MAX_CONCURRENT_STREAMS = 0) for 1.0 seconds after connecting"
    ),
    (.keepaliveTimeout(.seconds(10)), "keepalive ping not answered within 10.0 seconds: the server stopped responding"),
    (.closedByPeer, "connection closed by peer"),
    (.shutdown, "the channel is shut down"),
    (.io(operation: "read", errno: ECONNRESET), "read: Connection reset by peer"),
    (.internalError("the HTTP/2 session ended"), "the HTTP/2 session ended"),
  ]

  @Test("each case's description is the message its failed calls carry", arguments: descriptions)
  func description(error: ConnectionError, expected: String) {
    #expect(error.description == expected)
    #expect(
      GRPCError(code: .unavailable, message: error.description, cause: error).description
        == "UNAVAILABLE (14): \(expected)")
  }

  @Test("the message pieces that tests, tools and the README look for are kept")
  func keptPieces() {
    #expect(ConnectionError.connectionRefused(address: "127.0.0.1:9").description.contains("refused"))
    #expect(ConnectionError.keepaliveTimeout(.seconds(1)).description.contains("keepalive"))
    #expect(
      ConnectionError.noStreamsAllowed(waited: .seconds(1)).description.contains("SETTINGS_MAX_CONCURRENT_STREAMS = 0"))
    #expect(
      ConnectionError.protocolError(HTTP2SessionError(code: HTTP2SessionError.Codes.protocolError))
        .description.lowercased().contains("protocol error"))
    #expect(ConnectionError.alpnNotNegotiated(selected: nil).description.lowercased().contains("alpn"))
    #expect(
      ConnectionError.certificateVerificationFailed(reason: "x").description.contains("certificate verification failed")
    )
    // tripwatch's hint for --plaintext matches "tls" and OpenSSL's reason in the text.
    let notTLS = ConnectionError.serverNotTLS(reason: "error:0A00010B:SSL routines::wrong version number").description
    #expect(notTLS.lowercased().contains("tls") && notTLS.contains("wrong version number"))
  }

  @Test(
    "a failed connect is classified by errno: refused, unreachable, timed out, or I/O",
    arguments: [
      (ECONNREFUSED, ConnectionError.connectionRefused(address: "127.0.0.1:7")),
      (ENETUNREACH, .unreachable(address: "127.0.0.1:7", errno: ENETUNREACH)),
      (EHOSTUNREACH, .unreachable(address: "127.0.0.1:7", errno: EHOSTUNREACH)),
      (ETIMEDOUT, .connectTimedOut(address: "127.0.0.1:7")),
      (EACCES, .io(operation: "connect to 127.0.0.1:7", errno: EACCES)),
    ])
  func connectClassification(code: Int32, expected: ConnectionError) {
    #expect(ConnectionError.connectFailed(to: "127.0.0.1:7", errno: code) == expected)
  }
}

@Suite("Connection errors: the cause failed calls carry", .timeLimit(.minutes(1)))
struct ConnectionErrorCauseTests {
  @Test("a call to a closed port is UNAVAILABLE with .connectionRefused as its cause; so are the fail-fast ones")
  func refusedCause() async throws {
    let reserved = try ReservedPort()
    defer { reserved.release() }
    let port = reserved.port
    let channel = try GRPCChannel(
      host: "127.0.0.1", port: port,
      configuration: GRPCChannelConfiguration(
        security: .plaintext, backoff: RetryBackoff(initial: .seconds(30), jitter: 0)))
    let refused = ConnectionError.connectionRefused(address: "127.0.0.1:\(port)")

    let first = try #require(await unaryError(channel, path: Method.unary, request: [1]))
    #expect(first.code == .unavailable)
    #expect(first.cause as? ConnectionError == refused, "cause: \(String(describing: first.cause))")
    #expect(first.message == refused.description)
    #expect(first.status.cause as? ConnectionError == refused)

    // Within the 30 s backoff the next calls fail fast, with the last attempt's error as cause:
    // a unary call, a streaming call, and a call through a handler.
    let second = try #require(await unaryError(channel, path: Method.unary, request: [2]))
    #expect(second.cause as? ConnectionError == refused)
    let stream = channel.serverStreaming(path: Method.stream, request: StreamSpec(count: 1).encoded)
    #expect(await drain(stream).failure?.cause as? ConnectionError == refused)
    #expect(await stream.result().status.cause as? ConnectionError == refused)
    let recorder = FinishRecorder()
    channel.startCall(path: Method.unary, request: [3], kind: .unary, handler: recorder)
    #expect(await eventually { recorder.status != nil })
    #expect(recorder.status?.cause as? ConnectionError == refused)
    #expect(await channel.statistics().connectAttempts == 1)
    await channel.shutdown()
  }

  @Test("a TLS channel to a cleartext h2c server fails with .serverNotTLS, by type")
  func tlsAgainstH2C() async throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    let tls = TLSConfiguration(trustRoots: .caFile(certificates.caFile))
    // The server speaks h2c only; the channel offers TLS.
    try await Fixture.with(channel: GRPCChannelConfiguration(security: .tls(tls))) { fixture in
      let error = try #require(await unaryError(fixture.channel, path: Method.unary, request: [1]))
      #expect(error.code == .unavailable)
      guard case .serverNotTLS(let reason)? = error.cause as? ConnectionError else {
        Issue.record("cause: \(String(describing: error.cause)), message: \(error.message)")
        return
      }
      #expect(error.message.contains("did not answer with TLS"), "\(error.message)")
      #expect(error.message.contains(reason))
      #expect(fixture.service.callsHandled == 0)
      #expect(await fixture.server.stats().callsStarted == 0)
    }
  }

  @Test("a TLS channel to a TLS server with the wrong CA fails with .certificateVerificationFailed, not .serverNotTLS")
  func tlsWrongCA() async throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    try await Fixture.with(
      server: GRPCServerConfiguration(tls: certificates.serverTLS),
      channel: GRPCChannelConfiguration(security: .tls(TLSConfiguration(trustRoots: .caFile(certificates.otherCAFile))))
    ) { fixture in
      let error = try #require(await unaryError(fixture.channel, path: Method.unary, request: [1]))
      guard case .certificateVerificationFailed? = error.cause as? ConnectionError else {
        Issue.record("cause: \(String(describing: error.cause)), message: \(error.message)")
        return
      }
      #expect(error.code == .unavailable)
    }
  }

  @Test("a connection the server drops fails its call with .closedByPeer; after GOAWAY, with .goAway")
  func droppedAndGoAway() async throws {
    try await Fixture.with { fixture in
      let dropped = fixture.channel.serverStreaming(path: Method.held, request: [])
      var droppedIterator = dropped.makeAsyncIterator()
      #expect(await next(&droppedIterator).map { $0 != nil } == .success(true))
      fixture.server.dropConnections()
      let droppedStatus = await dropped.result().status
      #expect(droppedStatus.code == .unavailable)
      #expect(droppedStatus.cause as? ConnectionError == .closedByPeer, "\(droppedStatus)")

      // A new connection: a held call on it, then GOAWAY. A call that completes after the
      // GOAWAY proves the client has seen it (it went to a new connection, or was refused on
      // the old one and retried there).
      let held = fixture.channel.serverStreaming(path: Method.held, request: [])
      var heldIterator = held.makeAsyncIterator()
      #expect(await next(&heldIterator).map { $0 != nil } == .success(true))
      fixture.server.sendGoAway()
      #expect(await eventually { await fixture.server.stats().goAwaysSent >= 1 })
      let echo = try await fixture.channel.unary(path: Method.unary, request: [4])
      #expect(echo.message == [4])
      fixture.server.dropConnections()
      let status = await held.result().status
      #expect(status.code == .unavailable)
      guard case .goAway(let code, _)? = status.cause as? ConnectionError else {
        Issue.record("cause: \(String(describing: status.cause)), message: \(status.message)")
        return
      }
      #expect(code == .noError)
      #expect(status.message.contains("GOAWAY"), "\(status.message)")
    }
  }

  @Test("closing the channel fails the open call and later calls with .shutdown")
  func closedChannel() async throws {
    try await Fixture.with { fixture in
      let response = fixture.channel.serverStreaming(path: Method.held, request: [])
      var iterator = response.makeAsyncIterator()
      #expect(await next(&iterator).map { $0 != nil } == .success(true))
      fixture.channel.close()
      let status = await response.result().status
      #expect(status.code == .unavailable)
      #expect(status.cause as? ConnectionError == .shutdown)
      let later = try #require(await unaryError(fixture.channel, path: Method.unary, request: [1]))
      #expect(later.code == .unavailable)
      #expect(later.cause as? ConnectionError == .shutdown)
      #expect(later.message == "the channel is shut down")
    }
  }
}

extension PythonPeerTests {
  @Suite("Connection errors against grpcio", .timeLimit(.minutes(1)))
  struct GRPCIOConnectionErrorTests {
    @Test("a TLS channel to grpcio's cleartext port fails with .serverNotTLS, by type")
    func tlsAgainstGRPCIOH2C() async throws {
      let certificates = try TestCertificates()
      defer { certificates.remove() }
      let tls = TLSConfiguration(trustRoots: .caFile(certificates.caFile))
      try await GRPCIOFixture.with(.h2c, configure: { $0.security = .tls(tls) }) { fixture in
        let error = try #require(await unaryError(fixture.channel, path: GRPCIOFixture.service + "EmptyCall"))
        #expect(error.code == .unavailable)
        guard case .serverNotTLS? = error.cause as? ConnectionError else {
          Issue.record("cause: \(String(describing: error.cause)), message: \(error.message)")
          return
        }
        #expect(error.message.contains("did not answer with TLS"), "\(error.message)")
      }
    }
  }
}
