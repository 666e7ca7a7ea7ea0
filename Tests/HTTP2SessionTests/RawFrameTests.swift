// Tests/HTTP2SessionTests/RawFrameTests.swift - hand-written frame bytes, garbage and protocol violations
//
// These bytes are not produced by nghttp2, so they check the sessions against
// the wire format itself (RFC 9113 framing, RFC 7541 HPACK literals).

import HTTP2Session
import Testing

@Suite("Raw frames and protocol errors")
struct RawFrameTests {
  /// A client session with one request submitted and its preface, SETTINGS and HEADERS drained.
  private func clientWithRequest() throws -> (HTTP2Session, Recorder, Int32) {
    let events = Recorder()
    let client = try HTTP2Session(role: .client, delegate: events)
    let id = try client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    let sent = parseFrames(drain(client))
    #expect(sent.map(\.type) == [RawType.settings, RawType.windowUpdate, RawType.headers])
    return (client, events, id)
  }

  @Test("hand-written SETTINGS, HEADERS, padded DATA and trailers drive a client")
  func rawResponseToClient() throws {
    let (client, events, id) = try clientWithRequest()
    #expect(id == 1)
    // SETTINGS: MAX_CONCURRENT_STREAMS (0x3) = 7, INITIAL_WINDOW_SIZE (0x4) = 1000.
    let settings = rawFrame(RawType.settings, [0x00, 0x03, 0, 0, 0, 7, 0x00, 0x04, 0, 0, 0x03, 0xE8])
    try feed(client, settings)
    #expect(events.events == [.settings(HTTP2RemoteSettings(maxConcurrentStreams: 7, initialWindowSize: 1000))])
    #expect(client.remoteMaxConcurrentStreams == 7)
    #expect(
      parseFrames(drain(client)) == [RawFrame(type: RawType.settings, flags: RawFlag.ack, streamID: 0, payload: [])])

    // HEADERS on stream 1: indexed ":status: 200" (static 8), "content-type" (static 31) with a literal value.
    let contentType = [0x0F, 0x10, 16] + Array("application/grpc".utf8)
    try feed(client, rawFrame(RawType.headers, flags: RawFlag.endHeaders, stream: 1, [0x88] + contentType))
    // DATA with PADDED: pad length 3, "abc", three zero bytes of padding.
    try feed(client, rawFrame(RawType.data, flags: RawFlag.padded, stream: 1, [3, 0x61, 0x62, 0x63, 0, 0, 0]))
    // Trailers: "grpc-status: 0" as a literal with a new name, END_STREAM | END_HEADERS.
    try feed(
      client,
      rawFrame(
        RawType.headers, flags: RawFlag.endStream | RawFlag.endHeaders, stream: 1, literal("grpc-status", "0")
      ))
    #expect(
      events.events(on: 1) == [
        .headers(
          [field(":status", "200"), field("content-type", "application/grpc")], .response, stream: 1, endStream: false),
        .data(Array("abc".utf8), stream: 1),
        .headers([field("grpc-status", "0")], .trailers, stream: 1, endStream: true),
        .closed(1, .noError),
      ])
  }

  @Test("a final response after a 1xx arrives as HCAT_HEADERS and is still classified as the response")
  func rawInformationalToClient() throws {
    let (client, events, _) = try clientWithRequest()
    try feed(client, rawFrame(RawType.settings))
    // ":status: 100" as a literal with indexed name 8, then ":status: 200" indexed, END_STREAM on the final one.
    try feed(client, rawFrame(RawType.headers, flags: RawFlag.endHeaders, stream: 1, literal(index: 8, "100")))
    try feed(client, rawFrame(RawType.headers, flags: RawFlag.endHeaders | RawFlag.endStream, stream: 1, [0x88]))
    #expect(events.headerBlocks.map(\.kind) == [.informational, .response])
    #expect(events.headerBlocks.map(\.endStream) == [false, true])
    #expect(events.closes.map(\.1) == [.noError])
  }

  @Test("a raw PING is answered with a PING ACK carrying the same payload; a raw GOAWAY refuses stream 1")
  func rawPingAndGoAway() throws {
    let (client, events, id) = try clientWithRequest()
    try feed(client, rawFrame(RawType.settings) + rawFrame(RawType.ping, [9, 8, 7, 6, 5, 4, 3, 2]))
    let replies = parseFrames(drain(client))
    #expect(
      replies.contains(
        RawFrame(type: RawType.ping, flags: RawFlag.ack, streamID: 0, payload: [9, 8, 7, 6, 5, 4, 3, 2])))

    // GOAWAY: last stream 0, ENHANCE_YOUR_CALM (0xb), debug data "slow".
    try feed(client, rawFrame(RawType.goAway, [0, 0, 0, 0, 0, 0, 0, 0x0B] + Array("slow".utf8)))
    #expect(events.events.contains(.goAway(lastStreamID: 0, .enhanceYourCalm, debugData: Array("slow".utf8))))
    #expect(events.closes.map(\.0) == [id])
    #expect(events.closes.map(\.1) == [.refusedStream])
    #expect(!client.isRequestAllowed)
  }

  @Test("a hand-written request reaches a server; an uppercase header name resets its stream")
  func uppercaseHeaderName() throws {
    let events = Recorder()
    let server = try HTTP2Session(role: .server, delegate: events)
    // :method GET (static 2), :scheme http (6), :path / (4), :authority literal (indexed name 1).
    let request: [UInt8] = [0x82, 0x86, 0x84] + literal(index: 1, "example.com")
    var bytes = clientPreface + rawFrame(RawType.settings)
    bytes += rawFrame(RawType.headers, flags: RawFlag.endHeaders | RawFlag.endStream, stream: 1, request)
    bytes += rawFrame(
      RawType.headers, flags: RawFlag.endHeaders | RawFlag.endStream, stream: 3, request + literal("X-Trip", "1")
    )
    try feed(server, bytes)

    // Stream 1 is delivered; stream 3's block never is.
    #expect(events.headerBlocks.map(\.stream) == [1])
    #expect(
      events.headerBlocks.first?.fields == [
        field(":method", "GET"), field(":scheme", "http"), field(":path", "/"), field(":authority", "example.com"),
      ])
    let output = parseFrames(drain(server))
    let resets = output.filter { $0.type == RawType.rstStream }
    #expect(resets.map(\.streamID) == [3])
    #expect(resets.map(\.errorCode) == [HTTP2ErrorCode.protocolError.rawValue])
    #expect(events.closes.map(\.0) == [3])
    #expect(events.closes.map(\.1) == [.protocolError])
    #expect(server.activeStreamCount == 1)
  }

  @Test("garbage instead of the client preface: the server throws and sends GOAWAY(PROTOCOL_ERROR)")
  func garbageToServer() throws {
    let events = Recorder()
    let server = try HTTP2Session(role: .server, delegate: events)
    let garbage = Array("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8)
    let error = try #require(throws: HTTP2SessionError.self) { try feed(server, garbage) }
    #expect(error.code == HTTP2SessionError.Codes.badClientMagic)
    #expect(error.isFatal)
    #expect(!server.wantsRead)
    let output = parseFrames(drain(server))
    let goAway = output.first { $0.type == RawType.goAway }
    #expect(goAway?.errorCode == HTTP2ErrorCode.protocolError.rawValue)
    #expect(!server.wantsWrite)
    #expect(events.events.isEmpty)
    // The session stays failed.
    #expect(throws: error) { try feed(server, clientPreface) }
  }

  @Test("garbage instead of the server's SETTINGS: the client throws and sends GOAWAY(PROTOCOL_ERROR)")
  func garbageToClient() throws {
    let (client, events, id) = try clientWithRequest()
    let garbage = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8)
    let error = try #require(throws: HTTP2SessionError.self) { try feed(client, garbage) }
    #expect(error.code == HTTP2SessionError.Codes.protocolError)
    #expect(error.message.contains("PROTOCOL_ERROR"))
    let output = parseFrames(drain(client))
    let goAway = output.first { $0.type == RawType.goAway }
    #expect(goAway?.errorCode == HTTP2ErrorCode.protocolError.rawValue)
    #expect(!client.wantsRead && !client.wantsWrite)
    #expect(events.headerBlocks.isEmpty)
    #expect(throws: error) { try feed(client, rawFrame(RawType.settings)) }
    // nghttp2 reports no closes once the session is dead: the stream is still listed, and its owner fails it.
    #expect(events.closes.isEmpty)
    #expect(client.isStreamActive(id))
  }

  @Test("a frame larger than SETTINGS_MAX_FRAME_SIZE is a connection error of type FRAME_SIZE_ERROR")
  func oversizedFrame() throws {
    // The recorder is bound to a name: the session holds its delegate unowned(unsafe).
    let (client, events, _) = try clientWithRequest()
    try feed(client, rawFrame(RawType.settings))
    _ = drain(client)
    let tooLarge = rawFrame(RawType.data, stream: 1, [UInt8](repeating: 0, count: 16_385))
    let error = try #require(throws: HTTP2SessionError.self) { try feed(client, tooLarge) }
    #expect(error.code == HTTP2SessionError.Codes.frameSizeError)
    #expect(error.message == "connection error FRAME_SIZE_ERROR: too large frame size")
    let goAway = parseFrames(drain(client)).first { $0.type == RawType.goAway }
    #expect(goAway?.errorCode == HTTP2ErrorCode.frameSizeError.rawValue)
    withExtendedLifetime(events) {}
  }

  @Test("frames split at every byte boundary are reassembled")
  func byteAtATime() throws {
    let (client, events, _) = try clientWithRequest()
    var bytes = rawFrame(RawType.settings)
    bytes += rawFrame(RawType.headers, flags: RawFlag.endHeaders, stream: 1, [0x88])
    bytes += rawFrame(RawType.data, flags: RawFlag.endStream, stream: 1, Array("hello".utf8))
    for byte in bytes { try feed(client, [byte]) }
    #expect(events.bytes(on: 1) == Array("hello".utf8))
    #expect(events.events(on: 1).suffix(2) == [.endOfStream(1), .closed(1, .noError)])
  }

  @Test("error codes print their RFC names")
  func errorCodeNames() {
    #expect(HTTP2ErrorCode.refusedStream.description == "REFUSED_STREAM")
    #expect(HTTP2ErrorCode.http11Required.description == "HTTP_1_1_REQUIRED")
    #expect(HTTP2ErrorCode(rawValue: 0x1d).description == "UNKNOWN(0x1d)")
    #expect(
      HTTP2SessionError(code: HTTP2SessionError.Codes.badClientMagic).message == "Received bad client magic byte string"
    )
  }
}

@Suite("Frames that carry nothing")
struct EmptyFrameFloodTests {
  /// A client session with one request submitted, its output drained, and the server's SETTINGS and response
  /// headers received on stream 1.
  /// The session's delegates: a session does not retain its delegate.
  private let recorders = [Recorder(), Recorder()]

  private func respondingClient(limit: Int, recorder: Int = 0, respond: Bool = true) throws -> HTTP2Session {
    var settings = HTTP2Settings()
    settings.limits.maxFramesWithoutContent = limit
    let client = try HTTP2Session(role: .client, settings: settings, delegate: recorders[recorder])
    _ = try client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    _ = drain(client)
    try feed(client, rawFrame(RawType.settings))
    if respond { try feed(client, rawFrame(RawType.headers, flags: RawFlag.endHeaders, stream: 1, [0x88])) }
    return client
  }

  @Test("past the limit of empty DATA frames in a row the session ends with GOAWAY(ENHANCE_YOUR_CALM)")
  func emptyDataFlood() throws {
    let client = try respondingClient(limit: 100)
    let empty = rawFrame(RawType.data, stream: 1)
    try feed(client, Array([[UInt8]](repeating: empty, count: 100).joined()))
    #expect(throws: HTTP2SessionError.self) { try feed(client, empty) }
    #expect(client.terminationError?.code == HTTP2SessionError.Codes.flooded)
    #expect(client.terminationError?.message.contains("101 frames in a row that carried nothing") == true)
    let goAway = parseFrames(drain(client)).first { $0.type == RawType.goAway }
    #expect(goAway.map { Array($0.payload[4..<8]) } == [0, 0, 0, 0x0B])
  }

  @Test("informational headers count too; a frame with content starts the count again")
  func informationalFloodAndReset() throws {
    let client = try respondingClient(limit: 10)
    let empty = rawFrame(RawType.data, stream: 1)
    let data = rawFrame(RawType.data, stream: 1, [0x61])
    // 10 empty, one with content, 10 empty: within the limit each time.
    for _ in 0..<3 {
      try feed(client, Array([[UInt8]](repeating: empty, count: 10).joined()))
      try feed(client, data)
    }
    #expect(client.terminationError == nil)
    // 1xx blocks (":status: 100") before a response go over it.
    let other = try respondingClient(limit: 10, recorder: 1, respond: false)
    let informational = rawFrame(RawType.headers, flags: RawFlag.endHeaders, stream: 1, literal(index: 8, "100"))
    #expect(throws: HTTP2SessionError.self) {
      try feed(other, Array([[UInt8]](repeating: informational, count: 11).joined()))
    }
    #expect(other.terminationError?.code == HTTP2SessionError.Codes.flooded)
  }
}
