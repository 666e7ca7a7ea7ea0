// Tests/GRPCProtocolTests/RequestHeadTests.swift - request header order, metadata filtering, paths, options

import GRPCProtocol
import Testing

@Suite("Request head")
struct RequestHeadTests {
  @Test("header fields come in the order PROTOCOL-HTTP2.md requires")
  func order() {
    var metadata = GRPCMetadata()
    metadata.add("authorization", "Bearer abc")
    metadata.add("x-trace-bin", binary: [1, 2, 3])
    let head = GRPCRequestHead(
      path: "/maps.fleetengine.v1.TripService/GetTrip",
      authority: "fleetengine.googleapis.com:443",
      scheme: "https",
      timeout: .seconds(10),
      metadata: metadata)
    let fields = head.headerFields()
    #expect(
      fields.map(\.name) == [
        ":method", ":scheme", ":path", ":authority", "grpc-timeout", "content-type", "te", "user-agent",
        "authorization", "x-trace-bin",
      ])
    #expect(
      fields.map(\.value) == [
        "POST", "https", "/maps.fleetengine.v1.TripService/GetTrip", "fleetengine.googleapis.com:443", "10000000u",
        "application/grpc", "trailers", "journeysharing-grpc/0.1", "Bearer abc", "AQID",
      ])
  }

  @Test("no grpc-timeout without a timeout; a custom user-agent is used as given")
  func noTimeout() {
    let head = GRPCRequestHead(path: "/a.B/C", authority: "localhost:50051", scheme: "http", userAgent: "custom/2")
    #expect(head.timeout == nil)
    #expect(head.userAgent == "custom/2")
    #expect(
      head.headerFields().map(\.name) == [
        ":method", ":scheme", ":path", ":authority", "content-type", "te", "user-agent",
      ])
    #expect(head.headerFields()[1].value == "http")
    #expect(head.headerFields()[6].value == "custom/2")
    #expect(GRPCRequestHead.defaultUserAgent == "journeysharing-grpc/0.1")
  }

  @Test("an expired timeout still produces a valid grpc-timeout")
  func expiredTimeout() {
    let head = GRPCRequestHead(path: "/a.B/C", authority: "h", scheme: "http", timeout: .seconds(-1))
    #expect(head.headerFields()[4] == ("grpc-timeout", "1n"))
  }

  @Test("reserved and invalid metadata is dropped, never sent")
  func filtering() {
    var metadata = GRPCMetadata()
    for name in [
      "te", "content-type", "user-agent", "grpc-timeout", "grpc-status", "grpc-encoding", "connection",
      "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host",
    ] {
      metadata.add(name, "evil")
    }
    metadata.add(":path", "/evil.Service/Method")
    metadata.add("bad name", "x")
    metadata.add("x-newline", "a\r\nx-injected: 1")
    metadata.add("x-unicode", "é")
    metadata.add("x-kept", "yes")
    metadata.add("grpc-trace-bin", binary: [1])
    let head = GRPCRequestHead(path: "/a.B/C", authority: "h", scheme: "https", metadata: metadata)
    let fields = head.headerFields()
    #expect(fields.count == 8)
    #expect(fields.last! == ("x-kept", "yes"))
    #expect(fields.filter { $0.name == "te" }.map(\.value) == ["trailers"])
    #expect(fields.filter { $0.name == "content-type" }.map(\.value) == ["application/grpc"])
    #expect(fields.filter { $0.name == ":path" }.map(\.value) == ["/a.B/C"])
    #expect(!fields.contains { $0.value == "evil" })
  }

  @Test(
    "valid method paths",
    arguments: ["/maps.fleetengine.v1.TripService/GetTrip", "/a/b", "/grpc.testing.TestService/UnaryCall", "/S/M-1"])
  func validPaths(path: String) {
    #expect(GRPCRequestHead.isValidMethodPath(path))
  }

  @Test(
    "invalid method paths",
    arguments: [
      "", "/", "//", "/a", "/a/", "//b", "a/b", "/a/b/", "/a/b/c", "/a b/c", "/a/b?x=1", "/a/b#f", "/ä/b",
      "/a/\u{0}", "/a\t/b",
    ])
  func invalidPaths(path: String) {
    #expect(!GRPCRequestHead.isValidMethodPath(path))
  }

  @Test("call options default to the channel's settings")
  func callOptions() {
    let defaults = CallOptions()
    #expect(defaults.timeout == nil)
    #expect(defaults.metadata.isEmpty)
    #expect(defaults.maxReceiveMessageSize == nil)
    #expect(defaults.authority == nil)
    let custom = CallOptions(
      timeout: .seconds(5), metadata: ["x": "1"], maxReceiveMessageSize: 1024, authority: "override:443")
    #expect(custom.timeout == .seconds(5))
    #expect(custom.metadata.first("x") == "1")
    #expect(custom.maxReceiveMessageSize == 1024)
    #expect(custom.authority == "override:443")
    #expect(GRPCMessageDeframer.defaultMaxMessageSize == 4 * 1024 * 1024)
  }
}
