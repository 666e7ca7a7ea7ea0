// Tests/TripRelayTests/RelayTestSupport.swift - child processes (fleetsim, tripwatch relay) and waiting

import Foundation
import Logging
import Primitives
import TestSupport

#if canImport(Glibc)
  import Glibc
#endif

struct RelayTestError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// An executable of this package: $`variable`, else the one built next to this test binary.
func builtExecutable(_ name: String, variable: String) throws -> String {
  if let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty { return path }
  let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
  var directory = testBinary.deletingLastPathComponent()
  if directory.pathExtension == "xctest" { directory = directory.deletingLastPathComponent() }
  let candidate = directory.appendingPathComponent(name).path
  guard FileManager.default.isExecutableFile(atPath: candidate) else {
    throw RelayTestError("no \(name) executable at \(candidate): run `swift build` first, or set \(variable)")
  }
  return candidate
}

/// A child process whose standard output is kept line by line (read on a thread of its own); its standard
/// error goes to a file.
final class ChildProcess: @unchecked Sendable {
  // @unchecked: `process` is touched only by the test's task; `output` is Sendable.
  let name: String
  private let process = Process()
  private let pipe = Pipe()
  private let output: ChildProcessOutput
  let errorLog: String

  init(name: String, executable: String, arguments: [String], directory: String) throws {
    self.name = name
    errorLog = "\(directory)/\(name).stderr.log"
    _ = FileManager.default.createFile(atPath: errorLog, contents: nil)
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = pipe
    process.standardError = FileHandle(forWritingAtPath: errorLog)
    try process.run()
    output = ChildProcessOutput(reading: pipe)
  }

  deinit {
    if process.isRunning {
      Glibc.kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }

  var lines: [String] { output.lines }
  var isRunning: Bool { process.isRunning }

  /// Waits for a line starting with `listening on `; returns its port.
  func waitUntilListening(timeout: Duration = .seconds(60)) async throws -> Int {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      let closed = output.isClosed
      if let port = output.listeningPort { return port }
      if closed { break }
      try await Task.sleep(for: .milliseconds(50))
    }
    throw RelayTestError("\(name) did not start listening; stderr: \(errorTail())")
  }

  /// SIGKILL, and wait until it is gone.
  func kill() {
    guard process.isRunning else { return }
    Glibc.kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }

  /// Waits (up to `timeout`, then SIGKILL) until it exits by itself; returns its exit status.
  func waitUntilExit(timeout: Duration) async -> Int32 {
    let deadline = ContinuousClock.now + timeout
    while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
    if process.isRunning { kill() }
    process.waitUntilExit()
    for _ in 0..<100 where !output.isClosed { try? await Task.sleep(for: .milliseconds(20)) }
    return process.terminationStatus
  }

  /// SIGTERM, and wait (up to `timeout`, then SIGKILL) until it is gone; returns its exit status.
  @discardableResult
  func terminate(timeout: Duration = .seconds(30)) async -> Int32 {
    guard process.isRunning else { return process.terminationStatus }
    process.terminate()
    let deadline = ContinuousClock.now + timeout
    while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
    if process.isRunning { kill() }
    process.waitUntilExit()
    // Let the reader thread take the last lines.
    for _ in 0..<100 where !output.isClosed { try? await Task.sleep(for: .milliseconds(20)) }
    return process.terminationStatus
  }

  /// The end of its standard error.
  func errorTail(lines: Int = 30) -> String {
    guard let text = try? String(contentsOfFile: errorLog, encoding: .utf8) else { return "(none)" }
    return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
  }
}

/// A logger that drops everything.
func silentLogger(_ label: String = "relay-test") -> Logger {
  Logger(label: label) { _ in SwiftLogNoOpLogHandler() }
}

/// The `key=value` pairs of the last line of `lines` that starts with `prefix`.
func lastCounters(_ lines: [String], prefix: String) -> [String: String] {
  guard let line = lines.last(where: { $0.hasPrefix(prefix) }) else { return [:] }
  var counters: [String: String] = [:]
  for pair in line.dropFirst(prefix.count).split(separator: " ") {
    let parts = pair.split(separator: "=", maxSplits: 1)
    if parts.count == 2 { counters[String(parts[0])] = String(parts[1]) }
  }
  return counters
}

/// A follow start or stop a relay printed with --events.
struct FollowEventLine: Decodable {
  var event: String
  var trip: String
  var relay: String
  var time: Double
  var delivery: Int?
  var reason: String?

  static func parse(_ lines: [String]) -> [FollowEventLine] {
    let decoder = JSONDecoder()
    return lines.compactMap { line in
      guard line.hasPrefix("{") else { return nil }
      return try? decoder.decode(FollowEventLine.self, from: Data(line.utf8))
    }
  }
}
