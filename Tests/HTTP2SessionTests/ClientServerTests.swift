// Tests/HTTP2SessionTests/ClientServerTests.swift - a client and a server session talking in memory

import HTTP2Session
import Testing

@Suite("Client and server sessions in memory")
struct ClientServerTests {
  @Test("settings are exchanged and request headers arrive at the server in order")
  func requestHeadersInOrder() throws {
    let pair = try SessionPair(server: HTTP2Settings(maxConcurrentStreams: 50))
    let headers = requestHeaders(extra: [field("x-first", "1"), field("x-second", "2"), field("x-first", "3")])
    let id = try pair.client.submitRequest(headers: headers, body: nil, endStream: true)
    #expect(id == 1)
    try pair.pump()

    // The client announced push off and its windows; the server its stream limit.
    #expect(
      pair.serverEvents.events.first
        == .settings(
          HTTP2RemoteSettings(enablePush: false, initialWindowSize: 1 << 20, maxHeaderListSize: 16 * 1024)
        ))
    #expect(
      pair.clientEvents.events.first
        == .settings(
          HTTP2RemoteSettings(maxConcurrentStreams: 50, initialWindowSize: 1 << 20, maxHeaderListSize: 16 * 1024)
        ))
    let blocks = pair.serverEvents.headerBlocks
    try #require(blocks.count == 1)
    #expect(blocks[0].fields == headers)
    #expect(blocks[0].kind == .request)
    #expect(blocks[0].stream == 1)
    #expect(blocks[0].endStream)
    #expect(pair.server.activeStreamCount == 1)
    #expect(pair.client.activeStreamCount == 1)
  }

  @Test("response headers, DATA and trailers reach the client; the request body reaches the server")
  func responseWithDataAndTrailers() throws {
    let pair = try SessionPair()
    let body: [UInt8] = [0, 0, 0, 0, 3, 0x08, 0x96, 0x01]
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: body, endStream: true)
    try pair.pump()
    #expect(
      pair.serverEvents.events(on: id) == [
        .headers(requestHeaders(), .request, stream: id, endStream: false),
        .data(body, stream: id),
        .endOfStream(id),
      ])

    let responseHeaders = [field(":status", "200"), field("content-type", "application/grpc")]
    let trailers = [field("grpc-status", "0"), field("grpc-message", "")]
    try pair.server.submitHeaders(streamID: id, headers: responseHeaders, endStream: false)
    let message: [UInt8] = [0, 0, 0, 0, 2, 0x10, 0x01]
    try message.withUnsafeBytes { try pair.server.sendData(streamID: id, bytes: $0, endStream: false) }
    try pair.server.submitHeaders(streamID: id, headers: trailers, endStream: true)
    try pair.pump()

    #expect(
      pair.clientEvents.events(on: id) == [
        .headers(responseHeaders, .response, stream: id, endStream: false),
        .data(message, stream: id),
        .headers(trailers, .trailers, stream: id, endStream: true),
        .closed(id, .noError),
      ])
    #expect(pair.serverEvents.closes.map(\.0) == [id])
    #expect(pair.serverEvents.closes.map(\.1) == [.noError])
    #expect(pair.client.activeStreamCount == 0)
    #expect(pair.server.activeStreamCount == 0)
  }

  @Test("a Trailers-Only response is one header block with END_STREAM")
  func trailersOnlyResponse() throws {
    let pair = try SessionPair()
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: [], endStream: true)
    try pair.pump()
    let trailersOnly = [
      field(":status", "200"), field("content-type", "application/grpc"),
      field("grpc-status", "5"), field("grpc-message", "trip not found"),
    ]
    try pair.server.submitHeaders(streamID: id, headers: trailersOnly, endStream: true)
    try pair.pump()
    #expect(
      pair.clientEvents.events(on: id) == [
        .headers(trailersOnly, .response, stream: id, endStream: true),
        .closed(id, .noError),
      ])
    // Exactly one HEADERS frame, flagged END_STREAM | END_HEADERS, and no DATA from the server.
    let frames = parseFrames(pair.serverWire).filter { $0.streamID == UInt32(id) }
    #expect(frames.map(\.type) == [RawType.headers])
    #expect(frames.first?.flags == RawFlag.endStream | RawFlag.endHeaders)
  }

  @Test("a server streams many DATA frames, each flushed on its own, then trailers")
  func serverStreaming() throws {
    let pair = try SessionPair()
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: [1, 2, 3], endStream: true)
    try pair.pump()
    try pair.server.submitHeaders(streamID: id, headers: [field(":status", "200")], endStream: false)
    var expected: [UInt8] = []
    for index in 0..<100 {
      let message = [UInt8](repeating: UInt8(index), count: 10 + index)
      expected += message
      try message.withUnsafeBytes { try pair.server.sendData(streamID: id, bytes: $0, endStream: false) }
      try pair.pump()
    }
    try pair.server.submitHeaders(streamID: id, headers: [field("grpc-status", "0")], endStream: true)
    try pair.pump()

    let dataEvents = pair.clientEvents.events(on: id).filter { if case .data = $0 { true } else { false } }
    #expect(dataEvents.count == 100)
    #expect(pair.clientEvents.bytes(on: id) == expected)
    #expect(
      pair.clientEvents.events(on: id).suffix(2) == [
        .headers([field("grpc-status", "0")], .trailers, stream: id, endStream: true),
        .closed(id, .noError),
      ])
    // One DATA frame per message on the wire, none empty.
    let dataFrames = parseFrames(pair.serverWire).filter { $0.type == RawType.data && $0.streamID == UInt32(id) }
    #expect(dataFrames.count == 100)
    #expect(dataFrames.allSatisfy { !$0.payload.isEmpty && $0.flags & RawFlag.endStream == 0 })
  }

  @Test("data queued in one turn leaves in one output batch, and the server may answer from inside a callback")
  func answerFromCallback() throws {
    let pair = try SessionPair()
    pair.serverEvents.onHeaders = { session, stream, kind in
      guard kind == .request else { return }
      try? session.submitHeaders(streamID: stream, headers: [field(":status", "200")], endStream: false)
      for index in 0..<20 {
        let message = [UInt8](repeating: UInt8(index), count: 100)
        try? message.withUnsafeBytes { try session.sendData(streamID: stream, bytes: $0, endStream: index == 19) }
      }
    }
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()
    #expect(pair.clientEvents.bytes(on: id) == (0..<20).flatMap { [UInt8](repeating: UInt8($0), count: 100) })
    #expect(pair.clientEvents.events(on: id).suffix(2) == [.endOfStream(id), .closed(id, .noError)])
    // All 2000 bytes fit one DATA frame, which carries END_STREAM.
    let dataFrames = parseFrames(pair.serverWire).filter { $0.type == RawType.data }
    #expect(dataFrames.map(\.payload.count) == [2000])
    #expect(dataFrames.first?.flags == RawFlag.endStream)
  }

  @Test("a client streams its request body with sendData after opening the stream")
  func clientStreamingBody() throws {
    let pair = try SessionPair()
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: false)
    try pair.pump()
    #expect(pair.serverEvents.headerBlocks.map(\.endStream) == [false])
    try [UInt8]([1, 2]).withUnsafeBytes { try pair.client.sendData(streamID: id, bytes: $0, endStream: false) }
    try pair.pump()
    try [UInt8]([3]).withUnsafeBytes { try pair.client.sendData(streamID: id, bytes: $0, endStream: true) }
    try pair.pump()
    #expect(pair.serverEvents.bytes(on: id) == [1, 2, 3])
    #expect(pair.serverEvents.events(on: id).last == .endOfStream(id))
    #expect(throws: HTTP2SessionError(code: HTTP2SessionError.Codes.streamShutWrite)) {
      try [UInt8]([4]).withUnsafeBytes { try pair.client.sendData(streamID: id, bytes: $0, endStream: false) }
    }
  }

  @Test("1xx informational headers come before the final response headers")
  func informationalThenFinal() throws {
    let pair = try SessionPair()
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()
    let early = [field(":status", "103"), field("link", "</style.css>; rel=preload")]
    let final = [field(":status", "200"), field("content-type", "application/grpc")]
    try pair.server.submitHeaders(streamID: id, headers: early, endStream: false)
    try pair.pump()
    try pair.server.submitHeaders(streamID: id, headers: final, endStream: false)
    try [UInt8]([9]).withUnsafeBytes { try pair.server.sendData(streamID: id, bytes: $0, endStream: false) }
    try pair.server.submitHeaders(streamID: id, headers: [field("grpc-status", "0")], endStream: true)
    try pair.pump()
    #expect(
      pair.clientEvents.events(on: id) == [
        .headers(early, .informational, stream: id, endStream: false),
        .headers(final, .response, stream: id, endStream: false),
        .data([9], stream: id),
        .headers([field("grpc-status", "0")], .trailers, stream: id, endStream: true),
        .closed(id, .noError),
      ])
  }

  @Test("RST_STREAM both ways carries its error code to both ends")
  func resetBothWays() throws {
    let pair = try SessionPair()
    let first = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: false)
    let second = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: false)
    try pair.pump()
    #expect(pair.server.activeStreamCount == 2)

    pair.client.resetStream(first, errorCode: .cancel)
    try pair.pump()
    #expect(pair.clientEvents.closes.map(\.0) == [first])
    #expect(pair.clientEvents.closes.map(\.1) == [.cancel])
    #expect(pair.serverEvents.closes.map(\.0) == [first])
    #expect(pair.serverEvents.closes.map(\.1) == [.cancel])
    let rst = parseFrames(pair.clientWire).filter { $0.type == RawType.rstStream }
    #expect(rst.map(\.streamID) == [UInt32(first)])
    #expect(rst.map(\.errorCode) == [HTTP2ErrorCode.cancel.rawValue])

    try pair.server.submitHeaders(streamID: second, headers: [field(":status", "200")], endStream: false)
    pair.server.resetStream(second, errorCode: .enhanceYourCalm)
    try pair.pump()
    #expect(pair.clientEvents.closes.last.map(\.0) == second)
    #expect(pair.clientEvents.closes.last.map(\.1) == .enhanceYourCalm)
    #expect(pair.serverEvents.closes.last.map(\.1) == .enhanceYourCalm)
    #expect(pair.client.activeStreamCount == 0)
    #expect(pair.server.activeStreamCount == 0)
    #expect(throws: HTTP2SessionError(code: HTTP2SessionError.Codes.streamClosed)) {
      try pair.server.submitHeaders(streamID: second, headers: [field("grpc-status", "1")], endStream: true)
    }
  }

  @Test("resetting a request before its HEADERS left cancels it without a frame and reports it once")
  func resetBeforeSend() throws {
    let pair = try SessionPair()
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: [1, 2, 3], endStream: true)
    pair.client.resetStream(id, errorCode: .cancel)
    try pair.pump()
    #expect(pair.clientEvents.closes.map(\.0) == [id])
    #expect(pair.clientEvents.closes.map(\.1) == [.cancel])
    #expect(pair.serverEvents.headerBlocks.isEmpty)
    #expect(parseFrames(pair.clientWire).allSatisfy { $0.streamID == 0 })
    #expect(pair.client.activeStreamCount == 0)
  }

  @Test("GOAWAY refuses the client's streams above lastStreamID and forbids new requests")
  func goAwayWithLastStreamID() throws {
    let pair = try SessionPair()
    let ids = try (0..<3).map { _ in
      try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: false)
    }
    #expect(ids == [1, 3, 5])
    try pair.pump()
    #expect(pair.client.isRequestAllowed)

    pair.server.goAway(errorCode: .noError, lastStreamID: 1, debugData: Array("draining".utf8))
    try pair.pump()
    #expect(pair.clientEvents.events.contains(.goAway(lastStreamID: 1, .noError, debugData: Array("draining".utf8))))
    #expect(pair.clientEvents.closes.map(\.0).sorted() == [3, 5])
    #expect(pair.clientEvents.closes.allSatisfy { $0.1 == .refusedStream })
    #expect(pair.client.isStreamActive(1))
    #expect(!pair.client.isRequestAllowed)
    #expect(throws: HTTP2SessionError(code: HTTP2SessionError.Codes.startStreamNotAllowed)) {
      try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    }

    // Stream 1 still completes; then both sides are done with the connection.
    try [UInt8]([7]).withUnsafeBytes { try pair.client.sendData(streamID: 1, bytes: $0, endStream: true) }
    try pair.server.submitHeaders(
      streamID: 1,
      headers: [field(":status", "200"), field("grpc-status", "0")],
      endStream: true
    )
    try pair.pump()
    #expect(pair.clientEvents.closes.last.map(\.0) == 1)
    #expect(pair.clientEvents.closes.last.map(\.1) == .noError)
    #expect(!pair.client.wantsRead && !pair.client.wantsWrite)
    #expect(!pair.server.wantsWrite)
  }

  @Test("a request still queued behind the concurrency limit when GOAWAY arrives is refused, never sent")
  func queuedRequestRefusedByGoAway() throws {
    let pair = try SessionPair(server: HTTP2Settings(maxConcurrentStreams: 1))
    try pair.pump()
    let first = try pair.client.submitRequest(headers: requestHeaders(), body: [1], endStream: true)
    let queued = try pair.client.submitRequest(headers: requestHeaders(), body: [2], endStream: true)
    try pair.pump()
    #expect(pair.serverEvents.headerBlocks.map(\.stream) == [first])

    pair.server.goAway(errorCode: .noError, lastStreamID: first)
    try pair.pump()
    #expect(pair.clientEvents.closes.map(\.0) == [queued])
    #expect(pair.clientEvents.closes.map(\.1) == [.refusedStream])
    #expect(!parseFrames(pair.clientWire).contains { $0.streamID == UInt32(queued) })
    #expect(pair.client.activeStreamCount == 1)

    // When the first stream ends, nghttp2 drops the queued HEADERS; it is not reported twice.
    try pair.server.submitHeaders(streamID: first, headers: [field(":status", "204")], endStream: true)
    try pair.pump()
    #expect(pair.clientEvents.closes.map(\.0) == [queued, first])
    #expect(pair.clientEvents.closes.map(\.1) == [.refusedStream, .noError])
    #expect(!parseFrames(pair.clientWire).contains { $0.streamID == UInt32(queued) })
    #expect(!pair.client.wantsRead && !pair.client.wantsWrite)
  }

  @Test("a graceful shutdown notice is a GOAWAY with last stream ID 2^31-1")
  func shutdownNotice() throws {
    let pair = try SessionPair()
    _ = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: false)
    try pair.pump()
    try pair.server.sendShutdownNotice()
    try pair.pump()
    #expect(pair.clientEvents.events.last == .goAway(lastStreamID: Int32.max, .noError, debugData: []))
    #expect(!pair.client.isRequestAllowed)
    #expect(pair.client.isStreamActive(1))
    pair.server.goAway(errorCode: .noError)
    try pair.pump()
    #expect(pair.clientEvents.events.last == .goAway(lastStreamID: 1, .noError, debugData: []))
    #expect(throws: HTTP2SessionError.self) { try pair.client.sendShutdownNotice() }
  }

  @Test("SETTINGS_MAX_CONCURRENT_STREAMS reaches the client and holds back extra requests")
  func maxConcurrentStreams() throws {
    let pair = try SessionPair(server: HTTP2Settings(maxConcurrentStreams: 2))
    #expect(pair.client.remoteMaxConcurrentStreams == 100)  // nghttp2's assumption before SETTINGS
    try pair.pump()
    #expect(pair.client.remoteMaxConcurrentStreams == 2)
    guard case .settings(let settings) = pair.clientEvents.events.first else {
      Issue.record("no SETTINGS event: \(pair.clientEvents.events)")
      return
    }
    #expect(settings.maxConcurrentStreams == 2)

    let ids = try (0..<3).map { _ in
      try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    }
    try pair.pump()
    #expect(pair.client.activeStreamCount == 3)
    #expect(pair.serverEvents.headerBlocks.map(\.stream) == [ids[0], ids[1]])

    try pair.server.submitHeaders(streamID: ids[0], headers: [field(":status", "204")], endStream: true)
    try pair.pump()
    #expect(pair.serverEvents.headerBlocks.map(\.stream) == ids)
    #expect(pair.client.activeStreamCount == 2)
  }

  @Test("PING is acknowledged with the same opaque data, both directions")
  func pingAck() throws {
    let pair = try SessionPair()
    pair.client.ping(opaqueData: 0x0102_0304_0506_0708)
    pair.server.ping(opaqueData: 42)
    try pair.pump()
    #expect(
      pair.clientEvents.events.filter { if case .pingAck = $0 { true } else { false } } == [
        .pingAck(0x0102_0304_0506_0708)
      ])
    #expect(pair.serverEvents.events.last == .pingAck(42))
    let ping = parseFrames(pair.clientWire).first { $0.type == RawType.ping && $0.flags == 0 }
    #expect(ping?.payload == [1, 2, 3, 4, 5, 6, 7, 8])
  }

  @Test("misuse is reported with the documented codes")
  func misuse() throws {
    let pair = try SessionPair()
    #expect(
      throws: HTTP2SessionError(
        code: HTTP2SessionError.Codes.invalidState, message: "submitRequest on a server session")
    ) {
      try pair.server.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    }
    #expect(!pair.server.isRequestAllowed)
    #expect(throws: HTTP2SessionError(code: HTTP2SessionError.Codes.streamClosed)) {
      try pair.client.submitHeaders(streamID: 7, headers: [field("grpc-status", "0")], endStream: true)
    }
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()
    // The server must answer with headers before DATA.
    let error = #expect(throws: HTTP2SessionError.self) {
      try [UInt8]([1]).withUnsafeBytes { try pair.server.sendData(streamID: id, bytes: $0, endStream: false) }
    }
    #expect(error?.code == HTTP2SessionError.Codes.invalidState)
    // Settings out of range are refused up front.
    #expect(throws: HTTP2SessionError.self) {
      _ = try HTTP2Session(role: .client, settings: HTTP2Settings(initialWindowSize: 1 << 31), delegate: Recorder())
    }
    #expect(throws: HTTP2SessionError.self) {
      _ = try HTTP2Session(role: .server, settings: HTTP2Settings(maxFrameSize: 100), delegate: Recorder())
    }
  }
}
