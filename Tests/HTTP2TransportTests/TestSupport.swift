// Tests/HTTP2TransportTests/TestSupport.swift - a test service, a server/channel fixture, certificates, polling
//
// Every test runs a real GRPCServer on 127.0.0.1 (port 0) and a GRPCChannel to
// it in the same process, over real sockets. Tests run in parallel, so each one
// has its own server, service and channel, and waits on conditions by polling
// with a bound instead of sleeping for fixed times.

import Foundation
import GRPCProtocol
import HTTP2Transport
import Logging
import Primitives
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

// MARK: - Methods of the test service

enum Method {
  /// Echoes the request; response headers `x-response` (and `x-trace-bin` echoed), trailer `x-trailer`.
  static let unary = "/test.Echo/Unary"
  /// Sends the messages a ``StreamSpec`` describes, then finishes OK (maybe after a delay).
  static let stream = "/test.Echo/Stream"
  /// Never answers.
  static let hang = "/test.Echo/Hang"
  /// Finishes with the status in the request (``FailSpec``) and the request's `x-` metadata as trailers.
  static let fail = "/test.Echo/Fail"
  /// Sends one message of the size in the request (a big-endian UInt32).
  static let big = "/test.Echo/Big"
  /// Sends one message, then stays open until ``EchoService/releaseHeld()``.
  static let held = "/test.Echo/Held"
  /// Sends response headers with one field `x-big` whose value is as long as the request says
  /// (a big-endian UInt32), then the request as the message, then OK.
  static let bigHeaders = "/test.Echo/BigHeaders"
}

/// The request of `/test.Echo/Stream`: how many messages, how big, and when to finish.
struct StreamSpec: Sendable {
  var count: Int
  var size: Int = 4
  /// Finish this long after the last message is queued; 0: at once.
  var finishAfterMilliseconds: Int = 0

  var encoded: [UInt8] {
    bigEndianBytes(count) + bigEndianBytes(size) + bigEndianBytes(finishAfterMilliseconds)
  }

  init(count: Int, size: Int = 4, finishAfterMilliseconds: Int = 0) {
    self.count = count
    self.size = size
    self.finishAfterMilliseconds = finishAfterMilliseconds
  }

  init?(decoding bytes: [UInt8]) {
    guard bytes.count == 12 else { return nil }
    count = readBigEndian(bytes, at: 0)
    size = max(4, readBigEndian(bytes, at: 4))
    finishAfterMilliseconds = readBigEndian(bytes, at: 8)
  }

  /// Message `index`: the index as a big-endian UInt32, then `size - 4` bytes of `index & 0xFF`.
  static func message(index: Int, size: Int) -> [UInt8] {
    var message = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: max(4, size))
    message.replaceSubrange(0..<4, with: bigEndianBytes(index))
    return message
  }

  /// The index a message carries, or `nil` when it is too short.
  static func index(of message: [UInt8]) -> Int? {
    message.count >= 4 ? readBigEndian(message, at: 0) : nil
  }
}

/// The request of `/test.Echo/Fail`: a status code byte, then the status message in UTF-8.
enum FailSpec {
  static func encode(_ status: GRPCStatus) -> [UInt8] {
    [UInt8(status.code.rawValue)] + Array(status.message.utf8)
  }

  static func decode(_ bytes: [UInt8]) -> GRPCStatus? {
    guard let first = bytes.first, let code = GRPCStatusCode(rawValue: Int(first)) else { return nil }
    return GRPCStatus(code: code, message: String(decoding: bytes.dropFirst(), as: UTF8.self))
  }
}

func bigEndianBytes(_ value: Int) -> [UInt8] {
  withUnsafeBytes(of: UInt32(truncatingIfNeeded: value).bigEndian) { Array($0) }
}

func readBigEndian(_ bytes: [UInt8], at offset: Int) -> Int {
  bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
}

// MARK: - The test service

/// The service every test talks to. `handle` runs on the server's loop thread;
/// what tests read back is kept under a mutex.
final class EchoService: GRPCService {
  private struct State {
    var requestMetadata: [String: GRPCMetadata] = [:]
    var callsHandled = 0
    var cancellations = 0
    var held: [any GRPCServerCallContext] = []
    var released = false
    var streamCalls: [any GRPCServerCallContext] = []
  }

  private let state = Locked(State())

  func handle(_ call: any GRPCServerCallContext) {
    state.withLock { state in
      state.callsHandled += 1
      state.requestMetadata[call.path] = call.requestMetadata
    }
    call.onCancel { self.state.withLock { $0.cancellations += 1 } }

    switch call.path {
    case Method.unary:
      var headers: GRPCMetadata = ["x-response": "headers-value"]
      if let trace = call.requestMetadata.firstBinary("x-trace-bin") { headers.add("x-trace-bin", binary: trace) }
      call.sendHeaders(headers)
      call.send(call.request)
      call.finish(.ok, trailers: ["x-trailer": "trailer-value"])

    case Method.stream:
      guard let spec = StreamSpec(decoding: call.request) else {
        call.finish(GRPCStatus(code: .invalidArgument, message: "bad stream spec"))
        return
      }
      state.withLock { $0.streamCalls.append(call) }
      call.sendHeaders()
      for index in 0..<spec.count { call.send(StreamSpec.message(index: index, size: spec.size)) }
      if spec.finishAfterMilliseconds == 0 {
        call.finish(.ok)
      } else {
        call.schedule(after: .milliseconds(spec.finishAfterMilliseconds)) { call.finish(.ok) }
      }

    case Method.hang:
      break

    case Method.fail:
      guard let status = FailSpec.decode(call.request) else {
        call.finish(GRPCStatus(code: .invalidArgument, message: "bad fail spec"))
        return
      }
      var trailers = GRPCMetadata()
      for (name, value) in call.requestMetadata where name.hasPrefix("x-") {
        switch value {
        case .string(let text): trailers.add(name, text)
        case .binary(let bytes): trailers.add(name, binary: bytes)
        }
      }
      call.finish(status, trailers: trailers)

    case Method.big:
      guard call.request.count == 4 else {
        call.finish(GRPCStatus(code: .invalidArgument, message: "bad size"))
        return
      }
      call.send([UInt8](repeating: 0xAB, count: readBigEndian(call.request, at: 0)))
      call.finish(.ok)

    case Method.bigHeaders:
      guard call.request.count == 4 else {
        call.finish(GRPCStatus(code: .invalidArgument, message: "bad size"))
        return
      }
      call.sendHeaders(["x-big": .string(String(repeating: "h", count: readBigEndian(call.request, at: 0)))])
      call.send(call.request)
      call.finish(.ok)

    case Method.held:
      call.send(StreamSpec.message(index: 0, size: 4))
      let releaseNow = state.withLock { state -> Bool in
        if state.released { return true }
        state.held.append(call)
        return false
      }
      if releaseNow { call.finish(.ok) }

    default:
      call.finish(GRPCStatus(code: .unimplemented, message: "unknown method \(call.path)"))
    }
  }

  /// Finishes every held call OK, and from now on held calls finish right after their message.
  func releaseHeld() {
    let held = state.withLock { state -> [any GRPCServerCallContext] in
      state.released = true
      let held = state.held
      state.held = []
      return held
    }
    for call in held { call.scheduler.execute { call.finish(.ok) } }
  }

  /// Calls whose `onCancel` ran (client cancel, deadline, or dropped connection).
  var cancellations: Int { state.withLock { $0.cancellations } }

  /// Calls handed to the service.
  var callsHandled: Int { state.withLock { $0.callsHandled } }

  /// The request metadata of the last call to `path`.
  func requestMetadata(of path: String) -> GRPCMetadata? {
    state.withLock { $0.requestMetadata[path] }
  }

  /// `outboundBufferedBytes` of the last `/Stream` call, read on the server's loop.
  func bufferedBytesOfLastStream() async -> Int? {
    guard let call = state.withLock({ $0.streamCalls.last }) else { return nil }
    return await withCheckedContinuation { continuation in
      call.scheduler.execute { continuation.resume(returning: call.outboundBufferedBytes) }
    }
  }
}

// MARK: - Fixture

/// A started server with its service, and a channel to it.
struct Fixture {
  let service: EchoService
  let server: GRPCServer
  let port: Int
  let channel: GRPCChannel

  /// Runs `body` against a fresh server and channel, then shuts both down
  /// (gracefully when `body` returns, at once when it throws).
  static func with<R>(
    server serverConfiguration: GRPCServerConfiguration = GRPCServerConfiguration(),
    channel channelConfiguration: GRPCChannelConfiguration = GRPCChannelConfiguration(security: .plaintext),
    _ body: (Fixture) async throws -> R
  ) async throws -> R {
    let service = EchoService()
    let server = try GRPCServer(configuration: serverConfiguration, service: service)
    let port: Int
    let channel: GRPCChannel
    do {
      port = try server.start()
      channel = try GRPCChannel(host: "127.0.0.1", port: port, configuration: channelConfiguration)
    } catch {
      await server.shutdown(graceful: false)
      throw error
    }
    let fixture = Fixture(service: service, server: server, port: port, channel: channel)
    do {
      let result = try await body(fixture)
      await channel.shutdown()
      await server.shutdown(graceful: false)
      return result
    } catch {
      channel.close()
      await server.shutdown(graceful: false)
      throw error
    }
  }
}

// MARK: - Waiting

/// ThreadSanitizer. A bound on waiting, not a performance assertion: conditions usually hold in milliseconds.
let eventuallyTimeout: Duration = underThreadSanitizer ? .seconds(30) : .seconds(20)

/// A unary call's response or error.
func unaryResult(
  _ channel: GRPCChannel, path: String, request: [UInt8] = [], options: CallOptions = CallOptions()
) async -> Result<GRPCUnaryResponse, GRPCError> {
  do {
    return .success(try await channel.unary(path: path, request: request, options: options))
  } catch {
    return .failure(error)
  }
}

/// Reads a stream to its end: the number of messages, or the error that ended it.
func drain(_ response: GRPCServerStreamingResponse) async -> Result<Int, GRPCError> {
  var count = 0
  do {
    for try await _ in response { count += 1 }
    return .success(count)
  } catch {
    return .failure(error)
  }
}

/// The next message of a stream (`nil` at its OK end), or the error that ended it.
func next(_ iterator: inout GRPCServerStreamingResponse.Iterator) async -> Result<[UInt8]?, GRPCError> {
  do {
    return .success(try await iterator.next())
  } catch {
    return .failure(error)
  }
}

/// The error a unary call throws, or `nil` when it succeeds.
func unaryError(
  _ channel: GRPCChannel, path: String, request: [UInt8] = [], options: CallOptions = CallOptions()
) async -> GRPCError? {
  do {
    _ = try await channel.unary(path: path, request: request, options: options)
    return nil
  } catch {
    return error
  }
}

extension Result {
  /// The error, or `nil` on success.
  var failure: Failure? {
    if case .failure(let error) = self { error } else { nil }
  }
}

// MARK: - Sockets

/// A port on 127.0.0.1 where nothing listens, held by a bound socket that never listens:
/// connections to it are refused, and while it is held no server of a parallel test can
/// be given it (a port found by binding and then closed could be handed out again at once).
final class ReservedPort {
  let port: Int
  private var fd: Int32

  /// Reserves a free port. With `shareable`, the socket has SO_REUSEADDR, so a server
  /// (which sets it too) can later bind and listen on the port while it is still held.
  init(shareable: Bool = false) throws {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    try #require(fd >= 0)
    if shareable {
      var one: Int32 = 1
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = loopbackAddress(port: 0)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    if bound != 0 || named != 0 { close(fd) }
    try #require(bound == 0 && named == 0, "reserving a port: errno \(errno)")
    self.fd = fd
    self.port = Int(UInt16(bigEndian: address.sin_port))
  }

  /// Gives the port back.
  func release() {
    if fd >= 0 { close(fd) }
    fd = -1
  }

  deinit { release() }
}

func loopbackAddress(port: Int) -> sockaddr_in {
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = in_port_t(UInt16(port).bigEndian)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  return address
}

/// How a raw connection ended after sending it something.
enum RawOutcome: Equatable {
  /// The server closed the connection (EOF or reset); `received` is what it sent first.
  case closed(received: [UInt8])
  /// Nothing happened within the receive timeout.
  case stillOpen
}

/// Connects to `port` with a plain blocking socket, writes `payload`, and reads until the
/// server closes the connection or 5 s pass without a byte.
func sendRaw(_ payload: [UInt8], toPort port: Int) throws -> RawOutcome {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  try #require(fd >= 0)
  defer { close(fd) }
  var timeout = timeval(tv_sec: 5, tv_usec: 0)
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  var address = loopbackAddress(port: port)
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
  }
  try #require(connected == 0, "connect: errno \(errno)")
  let sent = payload.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  try #require(sent == payload.count)
  var received: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 4096)
  while true {
    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if n > 0 {
      received.append(contentsOf: buffer[0..<n])
      continue
    }
    if n == 0 { return .closed(received: received) }
    if errno == EINTR { continue }
    if errno == EAGAIN || errno == EWOULDBLOCK { return .stillOpen }
    return .closed(received: received)  // ECONNRESET and the like: closed by the server.
  }
}

// MARK: - Certificates

/// A test CA, a server certificate it signed for `localhost` and `127.0.0.1`, an
/// unrelated second CA, and a self-signed server certificate for the same names, made with
/// the `openssl` command in a fresh temporary directory.
struct TestCertificates {
  let directory: URL
  var caFile: String { directory.appendingPathComponent("ca.pem").path }
  var otherCAFile: String { directory.appendingPathComponent("other-ca.pem").path }
  var serverCertificateFile: String { directory.appendingPathComponent("server.pem").path }
  var serverKeyFile: String { directory.appendingPathComponent("server.key").path }

  var selfSignedCertificateFile: String { directory.appendingPathComponent("self-signed.pem").path }
  var selfSignedKeyFile: String { directory.appendingPathComponent("self-signed.key").path }

  var serverTLS: TLSServerConfiguration {
    TLSServerConfiguration(certificateChainFile: serverCertificateFile, privateKeyFile: serverKeyFile)
  }

  /// A server presenting the self-signed certificate (right names, nobody vouching for it).
  var selfSignedServerTLS: TLSServerConfiguration {
    TLSServerConfiguration(certificateChainFile: selfSignedCertificateFile, privateKeyFile: selfSignedKeyFile)
  }

  /// Generates the files; remove them with ``remove()``.
  init() throws {
    directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("http2transport-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    let caExtensions = [
      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    ]
    try run(
      ["req", "-x509"] + ec + [
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=HTTP2Transport Test CA",
      ] + caExtensions)
    try run(
      ["req", "-x509"] + ec + [
        "-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "2", "-subj", "/CN=Unrelated CA",
      ] + caExtensions)
    try run(["req", "-new"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"])
    try Data(
      """
      subjectAltName=DNS:localhost,IP:127.0.0.1
      basicConstraints=CA:FALSE
      keyUsage=critical,digitalSignature
      extendedKeyUsage=serverAuth

      """.utf8
    ).write(to: directory.appendingPathComponent("server.ext"))
    try run([
      "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "2", "-days", "2",
      "-out", "server.pem", "-extfile", "server.ext",
    ])
    try run(
      ["req", "-x509"] + ec + [
        "-keyout", "self-signed.key", "-out", "self-signed.pem", "-days", "2", "-subj", "/CN=localhost",
        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-addext", "extendedKeyUsage=serverAuth",
      ])
  }

  func remove() {
    try? FileManager.default.removeItem(at: directory)
  }

  private func run(_ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["openssl"] + arguments
    process.currentDirectoryURL = directory
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    try #require(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " ")): \(text)")
  }
}

// MARK: - Random numbers

/// A duration in seconds, as a Double.
func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
