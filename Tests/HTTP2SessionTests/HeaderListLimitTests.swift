// Tests/HTTP2SessionTests/HeaderListLimitTests.swift - SETTINGS_MAX_HEADER_LIST_SIZE enforced on what arrives
//
// nghttp2 announces the limit but does not enforce it on received header blocks; the session does.
// A block above it is counted (RFC 9113 §6.5.2: name + value + 32 bytes per field), not delivered,
// and its stream is reset; the connection and its HPACK state stay good for the next stream.

import HTTP2Session
import Testing

@Suite("Header list size limit")
struct HeaderListLimitTests {
  /// `count` fields of `size`-byte values, each name distinct so HPACK indexes every one.
  static func manyFields(_ count: Int, size: Int, tag: String) -> [HTTP2HeaderField] {
    (0..<count).map { field("x-\(tag)-\($0)", String(repeating: "v", count: size)) }
  }

  /// The RFC 9113 §6.5.2 size of a header list.
  static func listSize(_ fields: [HTTP2HeaderField]) -> Int {
    fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 32 }
  }

  @Test("response headers above the client's 16 KiB default: refused, stream reset with CANCEL, the next stream works")
  func oversizedResponseHeaders() throws {
    let pair = try SessionPair()
    let first = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()

    // 200 fields of 100 bytes: about 26 KiB, each one entered into the HPACK dynamic table.
    // (nghttp2 sends at most 64 KiB of header block, so the no-limit case below stays under that.)
    let big =
      [field(":status", "200"), field("content-type", "application/grpc")]
      + Self.manyFields(200, size: 100, tag: "big")
    try pair.server.submitHeaders(streamID: first, headers: big, endStream: false)
    try pair.pump()
    let events = pair.clientEvents.events(on: first)
    #expect(
      events == [
        .headerListRefused(size: Self.listSize(big), limit: 16 * 1024, stream: first), .closed(first, .cancel),
      ])
    #expect(pair.serverEvents.closes.contains { $0 == (first, .cancel) })

    // The same fields again (now HPACK-indexed on both sides) and a small block: decoded exactly,
    // so the client's HPACK table did not fall out of step with the server's.
    let second = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()
    let small =
      [field(":status", "200"), field("content-type", "application/grpc")]
      + Array(big[2..<40])
    try pair.server.submitHeaders(streamID: second, headers: small, endStream: true)
    try pair.pump()
    #expect(pair.clientEvents.events(on: second).first == .headers(small, .response, stream: second, endStream: true))
    #expect(pair.client.terminationError == nil)
  }

  @Test("oversized trailers are refused the same way; the messages before them were delivered")
  func oversizedTrailers() throws {
    let pair = try SessionPair()
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()
    try pair.server.submitHeaders(streamID: id, headers: [field(":status", "200")], endStream: false)
    let message: [UInt8] = [0, 0, 0, 0, 1, 7]
    try message.withUnsafeBytes { try pair.server.sendData(streamID: id, bytes: $0, endStream: false) }
    let trailers = [field("grpc-status", "0"), field("x-big", String(repeating: "t", count: 20_000))]
    try pair.server.submitHeaders(streamID: id, headers: trailers, endStream: true)
    try pair.pump()
    let events = pair.clientEvents.events(on: id)
    #expect(events.first == .headers([field(":status", "200")], .response, stream: id, endStream: false))
    #expect(pair.clientEvents.bytes(on: id) == message)
    #expect(events.contains(.headerListRefused(size: Self.listSize(trailers), limit: 16 * 1024, stream: id)))
    #expect(!events.contains { if case .headers(_, .trailers, _, _) = $0 { true } else { false } })
  }

  @Test("request headers above a server's limit: refused, reset with ENHANCE_YOUR_CALM, seen as such by the client")
  func oversizedRequestHeaders() throws {
    let pair = try SessionPair(server: HTTP2Settings(maxHeaderListSize: 4096))
    let headers = requestHeaders(extra: [field("authorization", String(repeating: "a", count: 5000))])
    let id = try pair.client.submitRequest(headers: headers, body: nil, endStream: true)
    try pair.pump()
    #expect(pair.serverEvents.headerBlocks.isEmpty)
    #expect(
      pair.serverEvents.events.contains(.headerListRefused(size: Self.listSize(headers), limit: 4096, stream: id)))
    #expect(pair.clientEvents.closes.contains { $0 == (id, .enhanceYourCalm) })
  }

  @Test("a block exactly at the limit is delivered; without a limit, a larger one is too")
  func atTheLimitAndWithout() throws {
    let base = [field(":status", "200")]
    let baseSize = Self.listSize(base)
    // One field that brings the list to exactly 16,384 bytes.
    let filler = field("x-fill", String(repeating: "f", count: 16 * 1024 - baseSize - 32 - "x-fill".utf8.count))
    for (limit, headers) in [
      (UInt32?(16 * 1024), base + [filler]), (nil, base + Self.manyFields(150, size: 200, tag: "huge")),
    ] {
      let pair = try SessionPair(client: HTTP2Settings(maxHeaderListSize: limit))
      let id = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
      try pair.pump()
      try pair.server.submitHeaders(streamID: id, headers: headers, endStream: true)
      try pair.pump()
      // (Compared as a Bool: a failure would print kilobytes of header values.)
      let delivered = pair.clientEvents.headerBlocks.first?.fields == headers
      #expect(delivered, "limit \(String(describing: limit)), list size \(Self.listSize(headers))")
    }
  }
}

@Suite("Printing header fields")
struct HeaderFieldPrintingTests {
  @Test("an authorization field prints redacted; others as name: value")
  func authorizationIsRedacted() {
    let secret = "Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2VjcmV0LXNpZ25hdHVyZQ"
    for name in ["authorization", "cookie", "proxy-authorization"] {
      let field = HTTP2HeaderField(name, secret)
      var dumped = ""
      dump(field, to: &dumped)
      for text in ["\(field)", String(reflecting: field), dumped, "\([field])"] {
        #expect(!text.contains("c2VjcmV0"), "\(text)")
      }
      #expect(field.description == "\(name): <redacted>")
      #expect(field.value == secret)
    }
    #expect(HTTP2HeaderField("x-trip", "7").description == "x-trip: 7")
  }
}
