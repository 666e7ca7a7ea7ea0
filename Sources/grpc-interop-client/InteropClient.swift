// Sources/grpc-interop-client/InteropClient.swift - gRPC's standard interop client, for our channel
//
// Runs the test cases of grpc's interop-test-descriptions.md against a
// grpc.testing.TestService server, each with the methods the spec names
// (FullDuplexCall where it says so). Exit 0 on pass; on failure it prints
// which step failed, what was expected and what arrived, with the status
// code's name and number.

import ArgumentParser
import GRPCProtocol
import HTTP2Transport
import Logging
import ProtoWire
import ToolSupport

#if canImport(Glibc)
  import Glibc
#endif

@main
struct InteropClient: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "grpc-interop-client",
    abstract: "Run a gRPC interop test case against a grpc.testing.TestService server.",
    discussion: "Test cases: \(InteropCase.allCases.map(\.rawValue).joined(separator: ", ")). \(ToolExit.helpText)",
    version: toolVersion)

  @Option(name: .customLong("server_host"), help: "The server's host.")
  var serverHost = "localhost"

  @Option(name: .customLong("server_port"), help: "The server's port.")
  var serverPort: Int

  @Option(name: .customLong("test_case"), help: "The test case to run.")
  var testCase: InteropCase

  @Option(name: .customLong("use_tls"), help: "Use TLS (true/false; a bare --use_tls means true).")
  var useTLS: Bool = false

  @Option(name: .customLong("use_test_ca"), help: "Trust the test CA given by --ca_file instead of the system store.")
  var useTestCA: Bool = false

  @Option(name: .customLong("ca_file"), help: "PEM file of the test CA (with --use_test_ca).")
  var caFile: String?

  @Option(name: .customLong("server_host_override"), help: "Name for TLS SNI, verification and :authority.")
  var serverHostOverride: String?

  static func main() async {
    // Interop harnesses pass boolean flags bare or as `--flag=value` / `--flag value`.
    var arguments = Array(CommandLine.arguments.dropFirst())
    for (index, argument) in arguments.enumerated() where ["--use_tls", "--use_test_ca"].contains(argument) {
      let next = index + 1 < arguments.count ? arguments[index + 1] : nil
      if next == nil || next!.hasPrefix("--") { arguments[index] = argument + "=true" }
    }
    await runAsTool(arguments: arguments)
  }

  func run() async throws {
    let security: GRPCChannelConfiguration.Security
    if useTLS {
      var tls = TLSConfiguration()
      if useTestCA {
        guard let caFile else { throw ValidationError("--use_test_ca needs --ca_file") }
        tls.trustRoots = .caFile(caFile)
      }
      tls.serverNameOverride = serverHostOverride
      security = .tls(tls)
    } else {
      security = .plaintext
    }
    let channel = try GRPCChannel(
      host: serverHost, port: serverPort,
      configuration: GRPCChannelConfiguration(security: security, authority: serverHostOverride),
      logger: Logger(label: "journeysharing.grpc"))
    do {
      try await testCase.run(on: channel)
      await channel.shutdown()
      print("\(testCase.rawValue): PASS")
    } catch let failure as InteropFailure {
      await channel.shutdown()
      print("\(testCase.rawValue): FAIL: \(failure.description)")
      throw ExitCode(1)
    }
  }
}

/// A failed expectation: the step of the case, what was expected and what arrived.
struct InteropFailure: Error, CustomStringConvertible {
  var description: String
  init(_ step: String, expected: String, got: String) { description = "\(step): expected \(expected), got \(got)" }
}

extension GRPCStatusCode {
  var nameAndNumber: String { "\(name) (\(rawValue))" }
}

extension GRPCError {
  var summary: String { "\(code.nameAndNumber): \(message)" }
}

extension GRPCStatus {
  var summary: String { "\(code.nameAndNumber): \(message)" }
}

enum InteropCase: String, CaseIterable, ExpressibleByArgument {
  case emptyUnary = "empty_unary"
  case largeUnary = "large_unary"
  case clientCompressedUnary = "client_compressed_unary"
  case serverCompressedUnary = "server_compressed_unary"
  case clientStreaming = "client_streaming"
  case clientCompressedStreaming = "client_compressed_streaming"
  case serverStreaming = "server_streaming"
  case serverCompressedStreaming = "server_compressed_streaming"
  case pingPong = "ping_pong"
  case emptyStream = "empty_stream"
  case customMetadata = "custom_metadata"
  case statusCodeAndMessage = "status_code_and_message"
  case specialStatusMessage = "special_status_message"
  case unimplementedMethod = "unimplemented_method"
  case unimplementedService = "unimplemented_service"
  case cancelAfterBegin = "cancel_after_begin"
  case cancelAfterFirstResponse = "cancel_after_first_response"
  case timeoutOnSleepingServer = "timeout_on_sleeping_server"

  static let service = "/grpc.testing.TestService/"
  static let emptyCall = service + "EmptyCall"
  static let unaryCall = service + "UnaryCall"
  static let streamingInputCall = service + "StreamingInputCall"
  static let streamingOutputCall = service + "StreamingOutputCall"
  static let fullDuplexCall = service + "FullDuplexCall"

  func run(on channel: GRPCChannel) async throws {
    switch self {
    case .emptyUnary:
      let response = try await expectOK("EmptyCall") { try await channel.unary(path: Self.emptyCall, request: []) }
      guard response.message.isEmpty else {
        throw InteropFailure("EmptyCall", expected: "an empty response", got: "\(response.message.count) bytes")
      }

    case .largeUnary:
      let response = try await expectOK("UnaryCall") {
        try await channel.unary(path: Self.unaryCall, request: Self.largeRequest().serializedBytes())
      }
      try Self.checkPayload(response.message, size: 314_159, step: "UnaryCall")

    case .clientCompressedUnary:
      try await Self.clientCompressedUnary(on: channel)

    case .serverCompressedUnary:
      for compressed in [true, false] {
        let step = "UnaryCall with response_compressed \(compressed)"
        var request = Self.largeRequest()
        request.responseCompressed = BoolValue(compressed)
        let response = try await expectOK(step) {
          try await channel.unary(path: Self.unaryCall, request: request.serializedBytes())
        }
        try Self.checkPayload(response.message, size: 314_159, step: step)
        guard (response.compression != nil) == compressed else {
          throw InteropFailure(
            step, expected: compressed ? "a compressed response message" : "an uncompressed response message",
            got: response.compression.map { "one compressed with \($0)" } ?? "an uncompressed one")
        }
      }

    case .clientStreaming:
      let sizes = [27182, 8, 1828, 45904]
      let step = "StreamingInputCall"
      let response = try await expectOK(step) {
        try await channel.clientStreaming(path: Self.streamingInputCall) { writer in
          for size in sizes {
            var request = StreamingInputCallRequest()
            request.payload = Payload(type: 0, body: [UInt8](repeating: 0, count: size))
            try await writer.write(request.serializedBytes())
          }
        }
      }
      try Self.checkAggregate(response.message, 74_922, step: step)

    case .clientCompressedStreaming:
      try await Self.clientCompressedStreaming(on: channel)

    case .serverStreaming:
      let sizes: [Int32] = [31415, 9, 2653, 58979]
      var request = StreamingOutputCallRequest()
      request.responseParameters = sizes.map { ResponseParameters(size: $0) }
      let stream = channel.serverStreaming(path: Self.streamingOutputCall, request: request.serializedBytes())
      let received = try await Self.payloadSizes(of: stream, step: "StreamingOutputCall")
      guard received == sizes.map(Int.init) else {
        throw InteropFailure("StreamingOutputCall", expected: "responses of sizes \(sizes)", got: "\(received)")
      }

    case .serverCompressedStreaming:
      var request = StreamingOutputCallRequest()
      request.responseParameters = [
        ResponseParameters(size: 31415, compressed: true), ResponseParameters(size: 92653, compressed: false),
      ]
      let step = "StreamingOutputCall"
      let stream = channel.serverStreaming(path: Self.streamingOutputCall, request: request.serializedBytes())
      var received: [(size: Int, compressed: Bool)] = []
      do {
        while let message = try await stream.nextReceivedMessage() {
          let response = try Self.decode(PayloadResponse.self, message.bytes, step: step)
          received.append((response.payload?.body.count ?? 0, message.compression != nil))
        }
      } catch let error as GRPCError {
        throw InteropFailure(step, expected: "OK (0)", got: error.summary)
      }
      guard received.map(\.size) == [31415, 92653] else {
        throw InteropFailure(step, expected: "responses of sizes [31415, 92653]", got: "\(received.map(\.size))")
      }
      guard received.map(\.compressed) == [true, false] else {
        throw InteropFailure(
          step, expected: "the first response compressed and the second not",
          got: "compressed flags \(received.map(\.compressed))")
      }

    case .pingPong:
      try await Self.pingPong(on: channel)

    case .emptyStream:
      let step = "FullDuplexCall"
      let call = channel.makeStreamingCall(path: Self.fullDuplexCall)
      call.requests.finish()
      let sizes = try await Self.payloadSizes(of: call.responses, step: step)
      guard sizes.isEmpty else { throw InteropFailure(step, expected: "no response", got: "\(sizes.count)") }

    case .customMetadata:
      try await Self.customMetadata(on: channel)

    case .statusCodeAndMessage:
      try await Self.expectEchoedStatus(on: channel, message: "test status message", duplexToo: true)

    case .specialStatusMessage:
      try await Self.expectEchoedStatus(
        on: channel, message: "\t\ntest with whitespace\r\nand Unicode BMP \u{263A} and non-BMP \u{1F608}\t\n",
        duplexToo: false)

    case .unimplementedMethod:
      try await expectStatus(.unimplemented, "UnimplementedCall") {
        try await channel.unary(path: Self.service + "UnimplementedCall", request: [])
      }

    case .unimplementedService:
      try await expectStatus(.unimplemented, "UnimplementedService/UnimplementedCall") {
        try await channel.unary(path: "/grpc.testing.UnimplementedService/UnimplementedCall", request: [])
      }

    case .cancelAfterBegin:
      let call = channel.makeStreamingCall(path: Self.streamingInputCall, kind: .clientStreaming)
      // Cancel once the call has its stream (its HEADERS go out), before any request message.
      for _ in 0..<500 where await channel.statistics().activeCalls == 0 {
        try await Task.sleep(for: .milliseconds(10))
      }
      call.cancel()
      let result = await call.responses.result()
      guard result.status.code == .cancelled else {
        throw InteropFailure(
          "StreamingInputCall cancelled", expected: GRPCStatusCode.cancelled.nameAndNumber, got: result.status.summary)
      }

    case .cancelAfterFirstResponse:
      let call = channel.makeStreamingCall(path: Self.fullDuplexCall)
      var request = StreamingOutputCallRequest()
      request.responseParameters = [ResponseParameters(size: 31415)]
      request.payload = Payload(type: 0, body: [UInt8](repeating: 0, count: 27182))
      try await Self.write(request.serializedBytes(), to: call.requests, step: "FullDuplexCall request")
      var responses = call.responses.makeAsyncIterator()
      do {
        guard let first = try await responses.next() else {
          throw InteropFailure("FullDuplexCall first response", expected: "a response", got: "end of stream")
        }
        _ = try Self.decode(PayloadResponse.self, first, step: "FullDuplexCall first response")
      } catch let error as GRPCError {
        throw InteropFailure("FullDuplexCall first response", expected: "a response", got: error.summary)
      }
      call.cancel()
      let result = await call.responses.result()
      guard result.status.code == .cancelled else {
        throw InteropFailure(
          "FullDuplexCall cancelled", expected: GRPCStatusCode.cancelled.nameAndNumber, got: result.status.summary)
      }

    case .timeoutOnSleepingServer:
      var options = CallOptions()
      options.timeout = .milliseconds(1)
      let call = channel.makeStreamingCall(path: Self.fullDuplexCall, options: options)
      var request = StreamingOutputCallRequest()
      request.payload = Payload(type: 0, body: [UInt8](repeating: 0, count: 27182))
      // The write may already fail with the deadline: the status below is what counts.
      try? await call.requests.write(request.serializedBytes())
      let result = await call.responses.result()
      guard result.status.code == .deadlineExceeded else {
        throw InteropFailure(
          "FullDuplexCall with a 1 ms deadline", expected: GRPCStatusCode.deadlineExceeded.nameAndNumber,
          got: result.status.summary)
      }
    }
  }

  // MARK: - Cases with several steps

  static func clientCompressedUnary(on channel: GRPCChannel) async throws {
    // 1. The probe: expect_compressed, sent uncompressed: a server with CompressedRequest refuses it.
    var probe = largeRequest()
    probe.expectCompressed = BoolValue(true)
    try await expectStatus(.invalidArgument, "step 1 (probe: expect_compressed, sent uncompressed)") {
      try await channel.unary(path: unaryCall, request: probe.serializedBytes())
    }
    // 2. The same request, compressed.
    let compressedStep = "step 2 (expect_compressed, sent gzip-compressed)"
    var gzip = CallOptions()
    gzip.compression = .gzip
    let compressed = try await expectOK(compressedStep) {
      try await channel.unary(path: unaryCall, request: probe.serializedBytes(), options: gzip)
    }
    try checkPayload(compressed.message, size: 314_159, step: compressedStep)
    // 3. expect_compressed false, sent uncompressed.
    let plainStep = "step 3 (expect_compressed false, sent uncompressed)"
    var plain = largeRequest()
    plain.expectCompressed = BoolValue(false)
    let response = try await expectOK(plainStep) {
      try await channel.unary(path: unaryCall, request: plain.serializedBytes())
    }
    try checkPayload(response.message, size: 314_159, step: plainStep)
  }

  static func clientCompressedStreaming(on channel: GRPCChannel) async throws {
    @Sendable func request(_ size: Int, expectCompressed: Bool) -> [UInt8] {
      var request = StreamingInputCallRequest()
      request.payload = Payload(type: 0, body: [UInt8](repeating: 0, count: size))
      request.expectCompressed = BoolValue(expectCompressed)
      return request.serializedBytes()
    }
    // 1. The probe: the first message expects compression but is sent uncompressed.
    let probeStep = "step 1 (probe: StreamingInputCall, expect_compressed, sent uncompressed)"
    do {
      let response = try await channel.clientStreaming(path: streamingInputCall) { writer in
        try await writer.write(request(27182, expectCompressed: true))
      }
      throw InteropFailure(probeStep, expected: "INVALID_ARGUMENT (3)", got: "OK (0), \(response.message.count) bytes")
    } catch let error as GRPCError {
      guard error.code == .invalidArgument else {
        throw InteropFailure(probeStep, expected: "INVALID_ARGUMENT (3)", got: error.summary)
      }
    }
    // 2. A compressed message, then an uncompressed one, on one call.
    let step = "step 2 (StreamingInputCall, one gzip-compressed message, one uncompressed)"
    var gzip = CallOptions()
    gzip.compression = .gzip
    let response = try await expectOK(step) {
      try await channel.clientStreaming(path: streamingInputCall, options: gzip) { writer in
        try await writer.write(request(27182, expectCompressed: true), compressed: true)
        try await writer.write(request(45904, expectCompressed: false), compressed: false)
      }
    }
    try checkAggregate(response.message, 73_086, step: step)
  }

  static func pingPong(on channel: GRPCChannel) async throws {
    let steps: [(response: Int32, payload: Int)] = [(31415, 27182), (9, 8), (2653, 1828), (58979, 45904)]
    let call = channel.makeStreamingCall(path: fullDuplexCall)
    var responses = call.responses.makeAsyncIterator()
    for (index, step) in steps.enumerated() {
      let name = "ping \(index + 1) of \(steps.count) (response size \(step.response))"
      var request = StreamingOutputCallRequest()
      request.responseParameters = [ResponseParameters(size: step.response)]
      request.payload = Payload(type: 0, body: [UInt8](repeating: 0, count: step.payload))
      try await write(request.serializedBytes(), to: call.requests, step: name)
      do {
        guard let message = try await responses.next() else {
          throw InteropFailure(name, expected: "a response", got: "end of stream")
        }
        let size = try decode(PayloadResponse.self, message, step: name).payload?.body.count ?? 0
        guard size == Int(step.response) else {
          throw InteropFailure(name, expected: "a payload of \(step.response) bytes", got: "\(size) bytes")
        }
      } catch let error as GRPCError {
        throw InteropFailure(name, expected: "a response", got: error.summary)
      }
    }
    call.requests.finish()
    do {
      if let extra = try await responses.next() {
        throw InteropFailure("after half-close", expected: "the end of the stream", got: "\(extra.count) more bytes")
      }
    } catch let error as GRPCError {
      throw InteropFailure("after half-close", expected: "OK (0)", got: error.summary)
    }
  }

  static func customMetadata(on channel: GRPCChannel) async throws {
    var options = CallOptions()
    options.metadata.add("x-grpc-test-echo-initial", "test_initial_metadata_value")
    options.metadata.add("x-grpc-test-echo-trailing-bin", binary: [0xAB, 0xAB, 0xAB])
    // Step 1: UnaryCall.
    let unaryStep = "step 1 (UnaryCall)"
    let response = try await expectOK(unaryStep) {
      try await channel.unary(path: unaryCall, request: largeRequest().serializedBytes(), options: options)
    }
    try checkPayload(response.message, size: 314_159, step: unaryStep)
    try checkEchoedMetadata(headers: response.headers, trailers: response.trailers, step: unaryStep)
    // Step 2: FullDuplexCall, then half-close.
    let duplexStep = "step 2 (FullDuplexCall)"
    var request = StreamingOutputCallRequest()
    request.responseParameters = [ResponseParameters(size: 314_159)]
    request.payload = Payload(type: 0, body: [UInt8](repeating: 0, count: 271_828))
    let call = channel.makeStreamingCall(path: fullDuplexCall, options: options)
    try await write(request.serializedBytes(), to: call.requests, step: duplexStep)
    call.requests.finish()
    let sizes = try await payloadSizes(of: call.responses, step: duplexStep)
    guard sizes == [314_159] else {
      throw InteropFailure(duplexStep, expected: "one response of 314159 bytes", got: "sizes \(sizes)")
    }
    let result = await call.responses.result()
    try checkEchoedMetadata(headers: result.headers, trailers: result.trailers, step: duplexStep)
  }

  static func expectEchoedStatus(on channel: GRPCChannel, message: String, duplexToo: Bool) async throws {
    var request = SimpleRequest()
    request.responseStatus = EchoStatus(code: 2, message: message)
    let unaryStep = duplexToo ? "step 1 (UnaryCall)" : "UnaryCall"
    let error = try await expectStatus(.unknown, unaryStep) {
      try await channel.unary(path: unaryCall, request: request.serializedBytes())
    }
    guard error.message == message else {
      throw InteropFailure(
        unaryStep, expected: "message \(message.debugDescription)", got: error.message.debugDescription)
    }
    guard duplexToo else { return }
    let duplexStep = "step 2 (FullDuplexCall)"
    var streamRequest = StreamingOutputCallRequest()
    streamRequest.responseStatus = EchoStatus(code: 2, message: message)
    let call = channel.makeStreamingCall(path: fullDuplexCall)
    try? await call.requests.write(streamRequest.serializedBytes())  // the status below is what counts
    call.requests.finish()
    let result = await call.responses.result()
    guard result.status.code == .unknown else {
      throw InteropFailure(duplexStep, expected: GRPCStatusCode.unknown.nameAndNumber, got: result.status.summary)
    }
    guard result.status.message == message else {
      throw InteropFailure(
        duplexStep, expected: "message \(message.debugDescription)", got: result.status.message.debugDescription)
    }
  }

  // MARK: - Helpers

  static func largeRequest() -> SimpleRequest {
    var request = SimpleRequest()
    request.responseSize = 314_159
    request.payload = Payload(type: 0, body: [UInt8](repeating: 0, count: 271_828))
    return request
  }

  static func decode<M: ProtoMessage>(_ type: M.Type, _ bytes: [UInt8], step: String) throws -> M {
    do {
      return try M(serializedBytes: bytes)
    } catch {
      throw InteropFailure(step, expected: "a \(M.protoMessageName)", got: "bytes that do not decode: \(error)")
    }
  }

  static func checkPayload(_ message: [UInt8], size: Int, step: String) throws {
    let body = try decode(PayloadResponse.self, message, step: step).payload?.body ?? []
    guard body.count == size, body.allSatisfy({ $0 == 0 }) else {
      throw InteropFailure(step, expected: "a payload of \(size) zero bytes", got: "\(body.count) bytes")
    }
  }

  static func checkAggregate(_ message: [UInt8], _ expected: Int32, step: String) throws {
    let size = try decode(StreamingInputCallResponse.self, message, step: step).aggregatedPayloadSize
    guard size == expected else {
      throw InteropFailure(step, expected: "aggregated_payload_size \(expected)", got: "\(size)")
    }
  }

  static func checkEchoedMetadata(headers: GRPCMetadata, trailers: GRPCMetadata, step: String) throws {
    guard headers.first("x-grpc-test-echo-initial") == "test_initial_metadata_value" else {
      throw InteropFailure(
        step, expected: "initial metadata x-grpc-test-echo-initial: test_initial_metadata_value",
        got: "\(headers.first("x-grpc-test-echo-initial") ?? "nothing")")
    }
    guard trailers.firstBinary("x-grpc-test-echo-trailing-bin") == [0xAB, 0xAB, 0xAB] else {
      throw InteropFailure(
        step, expected: "trailing metadata x-grpc-test-echo-trailing-bin: ab ab ab",
        got: "\(trailers.firstBinary("x-grpc-test-echo-trailing-bin").map { "\($0)" } ?? "nothing")")
    }
  }

  /// The payload sizes of every response, failing the step unless the call ends OK.
  static func payloadSizes(of stream: GRPCStreamingResponse, step: String) async throws -> [Int] {
    var sizes: [Int] = []
    do {
      for try await message in stream {
        sizes.append(try decode(PayloadResponse.self, message, step: step).payload?.body.count ?? 0)
      }
    } catch let error as GRPCError {
      throw InteropFailure(step, expected: "OK (0)", got: error.summary)
    }
    return sizes
  }

  static func write(_ message: [UInt8], to writer: GRPCRequestWriter, step: String) async throws {
    do {
      try await writer.write(message)
    } catch {
      throw InteropFailure(step, expected: "the request to be sent", got: error.summary)
    }
  }
}

extension Payload {
  init(type: Int32, body: [UInt8]) {
    self.init()
    self.type = type
    self.body = body
  }
}

extension EchoStatus {
  init(code: Int32, message: String) {
    self.init()
    self.code = code
    self.message = message
  }
}

func expectOK(_ step: String, _ body: () async throws -> GRPCUnaryResponse) async throws -> GRPCUnaryResponse {
  do {
    return try await body()
  } catch let error as GRPCError {
    throw InteropFailure(step, expected: "OK (0)", got: error.summary)
  }
}

@discardableResult
func expectStatus(
  _ code: GRPCStatusCode, _ step: String, _ body: () async throws -> GRPCUnaryResponse
) async throws -> GRPCError {
  do {
    _ = try await body()
    throw InteropFailure(step, expected: code.nameAndNumber, got: "OK (0)")
  } catch let error as GRPCError {
    guard error.code == code else {
      throw InteropFailure(step, expected: code.nameAndNumber, got: error.summary)
    }
    return error
  }
}
