// Sources/grpc-interop-client/InteropClient.swift - gRPC's standard interop client, for our channel
//
// Runs the interop test cases of grpc's interop-test-descriptions that need
// only unary and server-streaming calls against a grpc.testing.TestService
// server. Exit 0 on pass; on failure it prints what was expected and what
// arrived, with the status code's name and number.

import ArgumentParser
import GRPCProtocol
import HTTP2Transport
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
      configuration: GRPCChannelConfiguration(security: security, authority: serverHostOverride))
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

/// A failed expectation: what was expected and what arrived.
struct InteropFailure: Error, CustomStringConvertible {
  var description: String
  init(expected: String, got: String) { description = "expected \(expected), got \(got)" }
}

extension GRPCStatusCode {
  var nameAndNumber: String { "\(name) (\(rawValue))" }
}

enum InteropCase: String, CaseIterable, ExpressibleByArgument {
  case emptyUnary = "empty_unary"
  case largeUnary = "large_unary"
  case serverStreaming = "server_streaming"
  case customMetadata = "custom_metadata"
  case statusCodeAndMessage = "status_code_and_message"
  case specialStatusMessage = "special_status_message"
  case unimplementedMethod = "unimplemented_method"
  case unimplementedService = "unimplemented_service"
  case timeoutOnSleepingServer = "timeout_on_sleeping_server"
  case cancelAfterFirstResponse = "cancel_after_first_response"

  static let service = "/grpc.testing.TestService/"

  func run(on channel: GRPCChannel) async throws {
    switch self {
    case .emptyUnary:
      let response = try await expectOK { try await channel.unary(path: Self.service + "EmptyCall", request: []) }
      guard response.message.isEmpty else {
        throw InteropFailure(expected: "an empty response", got: "\(response.message.count) bytes")
      }

    case .largeUnary:
      let response = try await expectOK {
        try await channel.unary(path: Self.service + "UnaryCall", request: Self.largeRequest().serializedBytes())
      }
      try Self.checkPayload(response.message, size: 314_159)

    case .serverStreaming:
      let sizes: [Int32] = [31415, 9, 2653, 58979]
      var request = StreamingOutputCallRequest()
      request.responseParameters = sizes.map { var p = ResponseParameters(); p.size = $0; return p }
      var received: [Int] = []
      let stream = channel.serverStreaming(path: Self.service + "StreamingOutputCall", request: request.serializedBytes())
      do {
        for try await message in stream {
          let response = try PayloadResponse(serializedBytes: message)
          received.append(response.payload?.body.count ?? 0)
        }
      } catch let error as GRPCError {
        throw InteropFailure(expected: "OK (0)", got: "\(error.code.nameAndNumber): \(error.message)")
      }
      guard received == sizes.map(Int.init) else {
        throw InteropFailure(expected: "responses of sizes \(sizes)", got: "\(received)")
      }

    case .customMetadata:
      var options = CallOptions()
      options.metadata.add("x-grpc-test-echo-initial", "test_initial_metadata_value")
      options.metadata.add("x-grpc-test-echo-trailing-bin", binary: [0xAB, 0xAB, 0xAB])
      let response = try await expectOK {
        try await channel.unary(
          path: Self.service + "UnaryCall", request: Self.largeRequest().serializedBytes(), options: options)
      }
      try Self.checkPayload(response.message, size: 314_159)
      try Self.checkEchoedMetadata(headers: response.headers, trailers: response.trailers)
      // The streaming half, with StreamingOutputCall standing in for FullDuplexCall.
      var request = StreamingOutputCallRequest()
      var parameters = ResponseParameters()
      parameters.size = 314_159
      request.responseParameters = [parameters]
      request.payload = Payload(type: 0, body: [UInt8](repeating: 0, count: 271_828))
      let stream = channel.serverStreaming(
        path: Self.service + "StreamingOutputCall", request: request.serializedBytes(), options: options)
      var count = 0
      do {
        for try await _ in stream { count += 1 }
      } catch {
        throw InteropFailure(expected: "OK (0)", got: "\(error.code.nameAndNumber): \(error.message)")
      }
      guard count == 1 else { throw InteropFailure(expected: "1 streamed response", got: "\(count)") }
      let result = await stream.result()
      try Self.checkEchoedMetadata(headers: result.headers, trailers: result.trailers)

    case .statusCodeAndMessage:
      try await Self.expectEchoedStatus(on: channel, message: "test status message")

    case .specialStatusMessage:
      try await Self.expectEchoedStatus(
        on: channel, message: "\t\ntest with whitespace\r\nand Unicode BMP \u{263A} and non-BMP \u{1F608}\t\n")

    case .unimplementedMethod:
      try await expectStatus(.unimplemented) {
        try await channel.unary(path: Self.service + "UnimplementedCall", request: [])
      }

    case .unimplementedService:
      try await expectStatus(.unimplemented) {
        try await channel.unary(path: "/grpc.testing.UnimplementedService/UnimplementedCall", request: [])
      }

    case .timeoutOnSleepingServer:
      // FullDuplexCall stand-in: a server stream whose first response comes after 2 s, with a 1 ms deadline.
      var request = StreamingOutputCallRequest()
      var parameters = ResponseParameters()
      parameters.size = 1
      parameters.intervalMicroseconds = 2_000_000
      request.responseParameters = [parameters]
      var options = CallOptions()
      options.timeout = .milliseconds(1)
      let stream = channel.serverStreaming(
        path: Self.service + "StreamingOutputCall", request: request.serializedBytes(), options: options)
      try await expectStreamStatus(stream, .deadlineExceeded)

    case .cancelAfterFirstResponse:
      var request = StreamingOutputCallRequest()
      request.responseParameters = ([31415, 9, 2653] as [Int32]).map {
        var p = ResponseParameters()
        p.size = $0
        p.intervalMicroseconds = 200_000
        return p
      }
      let stream = channel.serverStreaming(path: Self.service + "StreamingOutputCall", request: request.serializedBytes())
      var iterator = stream.makeAsyncIterator()
      do {
        guard let first = try await iterator.next() else {
          throw InteropFailure(expected: "a first response", got: "end of stream")
        }
        _ = try PayloadResponse(serializedBytes: first)
      } catch let error as GRPCError {
        throw InteropFailure(expected: "a first response", got: "\(error.code.nameAndNumber): \(error.message)")
      }
      stream.cancel()
      let result = await stream.result()
      guard result.status.code == .cancelled else {
        throw InteropFailure(
          expected: GRPCStatusCode.cancelled.nameAndNumber,
          got: "\(result.status.code.nameAndNumber): \(result.status.message)")
      }
    }
  }

  static func largeRequest() -> SimpleRequest {
    var request = SimpleRequest()
    request.responseSize = 314_159
    request.payload = Payload(type: 0, body: [UInt8](repeating: 0, count: 271_828))
    return request
  }

  static func checkPayload(_ message: [UInt8], size: Int) throws {
    let response = try PayloadResponse(serializedBytes: message)
    let body = response.payload?.body ?? []
    guard body.count == size, body.allSatisfy({ $0 == 0 }) else {
      throw InteropFailure(expected: "a payload of \(size) zero bytes", got: "\(body.count) bytes")
    }
  }

  static func checkEchoedMetadata(headers: GRPCMetadata, trailers: GRPCMetadata) throws {
    guard headers.first("x-grpc-test-echo-initial") == "test_initial_metadata_value" else {
      throw InteropFailure(
        expected: "initial metadata x-grpc-test-echo-initial: test_initial_metadata_value",
        got: "\(headers.first("x-grpc-test-echo-initial") ?? "nothing")")
    }
    guard trailers.firstBinary("x-grpc-test-echo-trailing-bin") == [0xAB, 0xAB, 0xAB] else {
      throw InteropFailure(
        expected: "trailing metadata x-grpc-test-echo-trailing-bin: ab ab ab",
        got: "\(trailers.firstBinary("x-grpc-test-echo-trailing-bin").map { "\($0)" } ?? "nothing")")
    }
  }

  static func expectEchoedStatus(on channel: GRPCChannel, message: String) async throws {
    var request = SimpleRequest()
    request.responseStatus = EchoStatus(code: 2, message: message)
    let error = try await expectStatus(.unknown) {
      try await channel.unary(path: service + "UnaryCall", request: request.serializedBytes())
    }
    guard error.message == message else {
      throw InteropFailure(expected: "message \(message.debugDescription)", got: error.message.debugDescription)
    }
    var streamRequest = StreamingOutputCallRequest()
    streamRequest.responseStatus = EchoStatus(code: 2, message: message)
    let stream = channel.serverStreaming(path: service + "StreamingOutputCall", request: streamRequest.serializedBytes())
    try await expectStreamStatus(stream, .unknown, message: message)
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

func expectOK(_ body: () async throws -> GRPCUnaryResponse) async throws -> GRPCUnaryResponse {
  do {
    return try await body()
  } catch let error as GRPCError {
    throw InteropFailure(expected: "OK (0)", got: "\(error.code.nameAndNumber): \(error.message)")
  }
}

@discardableResult
func expectStatus(
  _ code: GRPCStatusCode, _ body: () async throws -> GRPCUnaryResponse
) async throws -> GRPCError {
  do {
    _ = try await body()
    throw InteropFailure(expected: code.nameAndNumber, got: "OK (0)")
  } catch let error as GRPCError {
    guard error.code == code else {
      throw InteropFailure(expected: code.nameAndNumber, got: "\(error.code.nameAndNumber): \(error.message)")
    }
    return error
  }
}

func expectStreamStatus(_ stream: GRPCServerStreamingResponse, _ code: GRPCStatusCode, message: String? = nil) async throws {
  do {
    for try await _ in stream {}
  } catch {
    // The status is checked from the result below.
  }
  let result = await stream.result()
  guard result.status.code == code else {
    throw InteropFailure(expected: code.nameAndNumber, got: "\(result.status.code.nameAndNumber): \(result.status.message)")
  }
  if let message, result.status.message != message {
    throw InteropFailure(expected: "message \(message.debugDescription)", got: result.status.message.debugDescription)
  }
}
