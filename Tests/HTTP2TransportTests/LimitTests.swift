// Tests/HTTP2TransportTests/LimitTests.swift - header list limits, both directions, over real sockets
//
// The channel announces SETTINGS_MAX_HEADER_LIST_SIZE (16 KiB by default, HTTP2Settings.maxHeaderListSize)
// and enforces it on responses; the server enforces its own on requests. (The stream limit is in
// ConnectionTests; the message size limit in UnaryTests.)

import GRPCProtocol
import HTTP2Session
import HTTP2Transport
import Testing

@Suite("Header list limits", .timeLimit(.minutes(1)))
struct LimitTests {
  @Test("response headers above the channel's 16 KiB default: RESOURCE_EXHAUSTED; the connection stays usable")
  func oversizedResponseHeadersAreRefused() async throws {
    try await Fixture.with { fixture in
      let error = try #require(
        await unaryError(fixture.channel, path: Method.bigHeaders, request: bigEndianBytes(20 * 1024)))
      #expect(error.code == .resourceExhausted)
      #expect(error.message.contains("header list"), "\(error.message)")
      #expect(error.message.contains("16384"), "\(error.message)")
      #expect(error.trailers.isEmpty)

      // Small enough: delivered; and on the same connection.
      let response = try await fixture.channel.unary(path: Method.bigHeaders, request: bigEndianBytes(1024))
      #expect(response.headers.first("x-big")?.count == 1024)
      let echo = try await fixture.channel.unary(path: Method.unary, request: [7])
      #expect(echo.message == [7])
      #expect(await fixture.server.stats().connectionsAccepted == 1)
    }
  }

  @Test("a larger maxHeaderListSize in the channel's HTTP/2 settings lets the same response through")
  func theLimitIsConfigurable() async throws {
    var configuration = GRPCChannelConfiguration(security: .plaintext)
    configuration.http2Settings.maxHeaderListSize = 64 * 1024
    try await Fixture.with(channel: configuration) { fixture in
      let response = try await fixture.channel.unary(path: Method.bigHeaders, request: bigEndianBytes(20 * 1024))
      #expect(response.headers.first("x-big")?.count == 20 * 1024)
    }
  }

  @Test(
    "request metadata above the server's 16 KiB limit: the service never sees the call, the client gets RESOURCE_EXHAUSTED"
  )
  func oversizedRequestHeadersAreRefused() async throws {
    try await Fixture.with { fixture in
      var metadata = GRPCMetadata()
      metadata.add("x-padding", String(repeating: "p", count: 20 * 1024))
      let error = try #require(
        await unaryError(fixture.channel, path: Method.unary, request: [1], options: CallOptions(metadata: metadata)))
      #expect(error.code == .resourceExhausted, "\(error)")
      #expect(fixture.service.callsHandled == 0)
      let echo = try await fixture.channel.unary(path: Method.unary, request: [8])
      #expect(echo.message == [8])
    }
  }
}
