// Tests/HTTP2TransportTests/PythonPeers.swift - real gRPC peers in Python processes: grpcio and the scripted h2 server
//
// The channel's streaming calls, compression and liveness are checked against peers it was
// not written with: Tests/Interop/interop_server.py (grpcio, gRPC C-core, as strict as
// grpc-go's interop server) and Tests/Conformance/h2conf_server.py (Python h2 playing exact
// frame sequences). Each test starts its own process on 127.0.0.1 and stops it; the process
// also exits when its stdin closes, so a crashed test leaves nothing behind. The Python is
// the package's .venv (`make venv`).

import Foundation
import GRPCProtocol
import HTTP2Transport
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The suites that run Python peers, one test at a time: each test starts a Python process
/// (grpcio's import alone is a CPU burst), and the machine these run on has two cores shared
/// with the rest of the suite's timed tests.
@Suite("Real peers in Python processes", .serialized)
struct PythonPeerTests {}

/// The package's root directory (this file is Tests/HTTP2TransportTests/PythonPeers.swift).
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  .deletingLastPathComponent()

struct PeerError: Error, CustomStringConvertible {
  var description: String
}

/// A Python server process and the port it listens on.
///
/// `@unchecked Sendable`: `Process` is not marked Sendable, but the calls made on it here
/// (terminate, wait, the process identifier) are safe from any thread; the rest is immutable
/// or behind a mutex.
final class PythonPeer: @unchecked Sendable {
  let port: Int
  let pid: Int32
  private let process: Process
  private let stdin: Pipe
  /// Every stdout line after the first (the scripted server's `record {json}` lines).
  private let lines: OutputLines

  private init(process: Process, stdin: Pipe, port: Int, lines: OutputLines) {
    self.process = process
    self.stdin = stdin
    self.port = port
    self.pid = process.processIdentifier
    self.lines = lines
  }

  /// The Python of the package's virtual environment.
  static func python() throws -> String {
    let path = packageRoot.appendingPathComponent(".venv/bin/python").path
    guard FileManager.default.isExecutableFile(atPath: path) else {
      throw PeerError(description: "no \(path): create the test peers' environment with `make venv`")
    }
    return path
  }

  /// Compiles the grpc.testing stubs once per test process, before any server needs them
  /// (servers started in parallel would otherwise race to generate them).
  private static let stubs: Result<Void, PeerError> = {
    do {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: try python())
      process.arguments = ["-c", "import interop_server; interop_server.generate_stubs()"]
      process.currentDirectoryURL = packageRoot.appendingPathComponent("Tests/Interop")
      try process.run()
      process.waitUntilExit()
      guard process.terminationStatus == 0 else {
        return .failure(PeerError(description: "generating the grpc.testing stubs failed"))
      }
      return .success(())
    } catch {
      return .failure(PeerError(description: "\(error)"))
    }
  }()

  /// Starts `script` (relative to the package root) with `arguments`, waiting for its
  /// `listening on 127.0.0.1:PORT` line.
  static func start(_ script: String, _ arguments: [String]) async throws -> PythonPeer {
    if script.hasPrefix("Tests/Interop") { try stubs.get() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try python())
    process.arguments =
      [packageRoot.appendingPathComponent(script).path, "--port", "0", "--exit-on-stdin-eof"]
      + arguments
    process.currentDirectoryURL = packageRoot
    let stdin = Pipe()
    let stdout = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = FileHandle.nullDevice
    try process.run()
    let lines = OutputLines()
    let reader = stdout.fileHandleForReading
    Thread.detachNewThread {
      var pending = Data()
      while true {
        let chunk = reader.availableData
        if chunk.isEmpty { break }
        pending.append(chunk)
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
          let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
          pending.removeSubrange(pending.startIndex...newline)
          lines.append(line)
        }
      }
    }
    let deadline = Date().addingTimeInterval(30)
    while Date() < deadline {
      if let line = lines.first {
        guard line.hasPrefix("listening on 127.0.0.1:"), let port = Int(line.split(separator: ":").last ?? "") else {
          process.terminate()
          throw PeerError(description: "\(script) did not start: \(line)")
        }
        return PythonPeer(process: process, stdin: stdin, port: port, lines: lines)
      }
      if !process.isRunning { break }
      // Not Thread.sleep: tests share Swift's few cooperative threads, and blocking them starves the rest.
      try await Task.sleep(for: .milliseconds(20))
    }
    process.terminate()
    throw PeerError(description: "\(script) did not report its port")
  }

  /// Sends `signal` (SIGSTOP, SIGCONT) to the process.
  func send(_ signal: Int32) {
    kill(pid, signal)
  }

  /// The JSON records the scripted server printed so far.
  var records: [[String: Any]] {
    lines.rest.compactMap { line in
      guard line.hasPrefix("record ") else { return nil }
      return (try? JSONSerialization.jsonObject(with: Data(line.dropFirst(7).utf8))) as? [String: Any]
    }
  }

  /// Stops the process (continuing it first, in case it was stopped) and waits for it.
  func stop() async {
    kill(pid, SIGCONT)
    process.terminate()
    try? stdin.fileHandleForWriting.close()
    for _ in 0..<500 where process.isRunning {
      try? await Task.sleep(for: .milliseconds(10))
    }
    if process.isRunning { kill(pid, SIGKILL) }
  }

  /// Runs `body` with a started peer and stops the peer afterwards, whatever happens.
  static func with<R>(
    _ script: String, _ arguments: [String], _ body: (PythonPeer) async throws -> R
  ) async throws -> R {
    let peer = try await start(script, arguments)
    do {
      let result = try await body(peer)
      await peer.stop()
      return result
    } catch {
      await peer.stop()
      throw error
    }
  }
}

/// A process's stdout lines, appended by a reader thread.
///
/// `@unchecked Sendable`: the array is only touched under `lock`.
final class OutputLines: @unchecked Sendable {
  private let lock = NSLock()
  private var lines: [String] = []

  func append(_ line: String) { lock.withLock { lines.append(line) } }
  var first: String? { lock.withLock { lines.first } }
  var rest: [String] { lock.withLock { Array(lines.dropFirst()) } }
}

/// How a test reaches a peer: cleartext or TLS with the test CA.
enum Transport: String, CaseIterable, Sendable, CustomTestStringConvertible {
  case h2c, tls
  var testDescription: String { rawValue }
}

/// The grpcio interop server (Tests/Interop/interop_server.py) and a channel to it.
struct GRPCIOFixture {
  let peer: PythonPeer
  let channel: GRPCChannel

  static let service = "/grpc.testing.TestService/"

  /// Runs `body` against a fresh grpcio server over `transport` and a channel configured by
  /// `configure`; both are shut down afterwards.
  static func with<R>(
    _ transport: Transport,
    serverArguments: [String] = [],
    configure: (inout GRPCChannelConfiguration) -> Void = { _ in },
    _ body: (GRPCIOFixture) async throws -> R
  ) async throws -> R {
    // Certificates only for TLS: making them runs openssl, which blocks a (shared) thread.
    let certificates = transport == .tls ? try TestCertificates() : nil
    defer { certificates?.remove() }
    var arguments = serverArguments
    var configuration = GRPCChannelConfiguration(security: .plaintext)
    if let certificates {
      arguments += [
        "--use_tls", "true", "--cert", certificates.serverCertificateFile, "--key", certificates.serverKeyFile,
      ]
      configuration.security = .tls(TLSConfiguration(trustRoots: .caFile(certificates.caFile)))
    }
    configure(&configuration)
    return try await PythonPeer.with("Tests/Interop/interop_server.py", arguments) { peer in
      let channel = try GRPCChannel(host: "127.0.0.1", port: peer.port, configuration: configuration)
      do {
        let result = try await body(GRPCIOFixture(peer: peer, channel: channel))
        await channel.shutdown()
        return result
      } catch {
        channel.close()
        throw error
      }
    }
  }
}

// MARK: - grpc.testing messages, encoded by hand (field numbers from Protos/grpc/testing/messages.proto)

enum Proto {
  static func varint(_ value: Int) -> [UInt8] {
    var value = UInt64(value)
    var bytes: [UInt8] = []
    while value >= 0x80 {
      bytes.append(UInt8(value & 0x7F) | 0x80)
      value >>= 7
    }
    bytes.append(UInt8(value))
    return bytes
  }

  static func int(_ field: Int, _ value: Int) -> [UInt8] { varint(field << 3) + varint(value) }

  static func bytes(_ field: Int, _ value: [UInt8]) -> [UInt8] { varint(field << 3 | 2) + varint(value.count) + value }

  /// grpc.testing.Payload{body: `size` zero bytes}, as field `field`.
  static func payload(_ field: Int, size: Int) -> [UInt8] {
    bytes(field, bytes(2, [UInt8](repeating: 0, count: size)))
  }

  /// A BoolValue message as field `field`.
  static func boolValue(_ field: Int, _ value: Bool) -> [UInt8] { bytes(field, value ? int(1, 1) : []) }

  /// StreamingInputCallRequest{payload, expect_compressed}.
  static func inputRequest(size: Int, expectCompressed: Bool? = nil) -> [UInt8] {
    payload(1, size: size) + (expectCompressed.map { boolValue(2, $0) } ?? [])
  }

  /// StreamingOutputCallRequest{response_parameters: [(size, interval_us, compressed)], payload}.
  static func outputRequest(
    sizes: [Int], intervalMicroseconds: Int = 0, compressed: Bool? = nil, payloadSize: Int = 0
  ) -> [UInt8] {
    var message: [UInt8] = []
    for size in sizes {
      var parameters = int(1, size)
      if intervalMicroseconds > 0 { parameters += int(2, intervalMicroseconds) }
      if let compressed { parameters += boolValue(3, compressed) }
      message += bytes(2, parameters)
    }
    if payloadSize > 0 { message += payload(3, size: payloadSize) }
    return message
  }

  /// SimpleRequest{response_size, payload, response_compressed, expect_compressed}.
  static func simpleRequest(
    responseSize: Int, payloadSize: Int = 0, responseCompressed: Bool? = nil, expectCompressed: Bool? = nil
  ) -> [UInt8] {
    int(2, responseSize) + (payloadSize > 0 ? payload(3, size: payloadSize) : [])
      + (responseCompressed.map { boolValue(6, $0) } ?? []) + (expectCompressed.map { boolValue(8, $0) } ?? [])
  }

  /// The fields of a message as (field number, wire type, value bytes or varint).
  static func fields(_ message: [UInt8]) -> [(field: Int, value: [UInt8], number: Int)] {
    var index = 0
    var fields: [(Int, [UInt8], Int)] = []
    func readVarint() -> Int {
      var result = 0
      var shift = 0
      while index < message.count {
        let byte = message[index]
        index += 1
        result |= Int(byte & 0x7F) << shift
        if byte < 0x80 { break }
        shift += 7
      }
      return result
    }
    while index < message.count {
      let key = readVarint()
      switch key & 7 {
      case 0: fields.append((key >> 3, [], readVarint()))
      case 2:
        let length = readVarint()
        let end = min(index + length, message.count)
        fields.append((key >> 3, Array(message[index..<end]), length))
        index = end
      default: return fields
      }
    }
    return fields
  }

  /// The payload body size of a SimpleResponse / StreamingOutputCallResponse.
  static func payloadSize(_ response: [UInt8]) -> Int? {
    guard let payload = fields(response).first(where: { $0.field == 1 }) else { return nil }
    return fields(payload.value).first(where: { $0.field == 2 })?.value.count ?? 0
  }

  /// StreamingInputCallResponse.aggregated_payload_size.
  static func aggregatedSize(_ response: [UInt8]) -> Int? {
    fields(response).first(where: { $0.field == 1 })?.number
  }
}
