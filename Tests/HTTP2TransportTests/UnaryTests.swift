// Tests/HTTP2TransportTests/UnaryTests.swift - unary calls over h2c: echo, metadata, status, limits, bad paths

import Foundation
import GRPCProtocol
import HTTP2Transport
import Testing

@Suite("Unary calls", .timeLimit(.minutes(1)))
struct UnaryTests {
  @Test("a unary call over h2c echoes the request")
  func unaryRoundTrip() async throws {
    try await Fixture.with { fixture in
      let request: [UInt8] = Array("hello, gRPC".utf8) + [0, 1, 2, 0xFF]
      let response = try await fixture.channel.unary(path: Method.unary, request: request)
      #expect(response.message == request)
      // An empty request and response work too.
      let empty = try await fixture.channel.unary(path: Method.unary, request: [])
      #expect(empty.message.isEmpty)
      let stats = await fixture.server.stats()
      #expect(stats.callsStarted == 2)
      #expect(stats.connectionsAccepted == 1)
    }
  }

  @Test("request metadata reaches the server, response headers and trailers reach the client")
  func metadataBothWays() async throws {
    try await Fixture.with { fixture in
      let trace: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF, 0x0A]
      var metadata: GRPCMetadata = ["x-request": "request-value", "x-repeated": "one"]
      metadata.add("x-repeated", "two")
      metadata.add("x-trace-bin", binary: trace)
      let response = try await fixture.channel.unary(
        path: Method.unary, request: [1], options: CallOptions(metadata: metadata))

      let seen = try #require(fixture.service.requestMetadata(of: Method.unary))
      #expect(seen.first("x-request") == "request-value")
      #expect(seen["x-repeated"] == [.string("one"), .string("two")])
      #expect(seen.firstBinary("x-trace-bin") == trace)

      #expect(response.headers.first("x-response") == "headers-value")
      #expect(response.headers.firstBinary("x-trace-bin") == trace)
      #expect(response.trailers.first("x-trailer") == "trailer-value")
      #expect(response.trailers.first("x-response") == nil)
    }
  }

  struct FailCase: Sendable, CustomTestStringConvertible {
    var code: GRPCStatusCode
    var message: String
    var testDescription: String { "\(code.name): \(message.debugDescription)" }
  }

  @Test(
    "a status and its percent-encoded message round-trip exactly, with the trailers",
    arguments: [
      FailCase(code: .notFound, message: "trip 'abc' not found"),
      FailCase(code: .failedPrecondition, message: "naïve café\nsecond line: 100% done ✓ 🚕\ttab\r"),
      FailCase(code: .permissionDenied, message: "%41 is not an escape here, %% neither"),
      FailCase(code: .internalError, message: ""),
      FailCase(code: .unauthenticated, message: "日本語のメッセージ"),
    ])
  func statusRoundTrip(_ failCase: FailCase) async throws {
    try await Fixture.with { fixture in
      var metadata: GRPCMetadata = ["x-detail": "more detail"]
      metadata.add("x-detail-bin", binary: [9, 8, 7, 0])
      let status = GRPCStatus(code: failCase.code, message: failCase.message)
      let error = try #require(
        await unaryError(
          fixture.channel, path: Method.fail, request: FailSpec.encode(status), options: CallOptions(metadata: metadata)
        ))
      #expect(error.code == failCase.code)
      #expect(error.message == failCase.message)
      #expect(error.trailers.first("x-detail") == "more detail")
      #expect(error.trailers.firstBinary("x-detail-bin") == [9, 8, 7, 0])
      let bridged = error as NSError
      #expect(bridged.domain == "io.grpc")
      #expect(bridged.code == failCase.code.rawValue)
    }
  }

  @Test("an unknown method ends UNIMPLEMENTED from the server")
  func unknownMethod() async throws {
    try await Fixture.with { fixture in
      let error = await unaryError(fixture.channel, path: "/test.Echo/Missing")
      #expect(error?.code == .unimplemented)
      #expect(error?.message == "unknown method /test.Echo/Missing")
    }
  }

  @Test(
    "an invalid method path fails INVALID_ARGUMENT without sending anything",
    arguments: ["nope", "", "/", "/test.Echo", "/test.Echo/", "//Unary", "/test.Echo/Unary/extra", "/test Echo/Unary"])
  func invalidMethodPath(_ path: String) async throws {
    try await Fixture.with { fixture in
      let error = await unaryError(fixture.channel, path: path, request: [1, 2, 3])
      #expect(error?.code == .invalidArgument)
      let response = fixture.channel.serverStreaming(path: path, request: [])
      #expect(await drain(response).failure?.code == .invalidArgument)
      let serverStats = await fixture.server.stats()
      #expect(serverStats.callsStarted == 0)
      #expect(serverStats.connectionsAccepted == 0)
      let channelStats = await fixture.channel.statistics()
      #expect(channelStats.connectAttempts == 0)
    }
  }

  struct SizeCase: Sendable, CustomTestStringConvertible {
    var size: Int
    var channelLimit: Int?
    var callLimit: Int?
    var expected: GRPCStatusCode
    var testDescription: String {
      "\(size) bytes, channel limit \(channelLimit.map(String.init) ?? "default"), "
        + "call limit \(callLimit.map(String.init) ?? "none") → \(expected.name)"
    }
  }

  @Test(
    "the receive size limit: 4 MiB by default, set per channel or per call",
    arguments: [
      SizeCase(size: 5 << 20, channelLimit: nil, callLimit: nil, expected: .resourceExhausted),
      SizeCase(size: 5 << 20, channelLimit: nil, callLimit: 8 << 20, expected: .ok),
      SizeCase(size: 4 << 20, channelLimit: nil, callLimit: nil, expected: .ok),
      SizeCase(size: 2048, channelLimit: 1024, callLimit: nil, expected: .resourceExhausted),
      SizeCase(size: 2048, channelLimit: 1024, callLimit: 4096, expected: .ok),
      SizeCase(size: 2048, channelLimit: 1 << 20, callLimit: 1024, expected: .resourceExhausted),
    ])
  func maxReceiveSize(_ sizeCase: SizeCase) async throws {
    var configuration = GRPCChannelConfiguration(security: .plaintext)
    if let limit = sizeCase.channelLimit { configuration.maxReceiveMessageSize = limit }
    try await Fixture.with(channel: configuration) { fixture in
      let options = CallOptions(maxReceiveMessageSize: sizeCase.callLimit)
      let result = await unaryResult(
        fixture.channel, path: Method.big, request: bigEndianBytes(sizeCase.size), options: options)
      switch result {
      case .success(let response):
        #expect(sizeCase.expected == .ok)
        #expect(response.message.count == sizeCase.size)
        #expect(response.message.allSatisfy { $0 == 0xAB })
      case .failure(let error):
        #expect(error.code == sizeCase.expected)
      }
      // The connection stays usable after a rejected message.
      let echo = try await fixture.channel.unary(path: Method.unary, request: [42])
      #expect(echo.message == [42])
    }
  }
}
