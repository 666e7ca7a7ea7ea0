// Tests/JourneySharingTests/ChaosSupport.swift - a FleetSim process to kill, resident memory, waiting, recording
//
// The chaos suite runs FleetSim as a process of its own (the `fleetsim` executable next to the test
// binary, or $FLEETSIM), so that "the server is killed" means SIGKILL and a restart on the same port,
// over real sockets on 127.0.0.1.

import Foundation
import HTTP2Transport
import JourneySharing
import Primitives
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

// MARK: - Memory

/// This process's resident set size in bytes, from /proc/self/statm.
func residentBytes() -> Int {
  guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
  let fields = text.split(separator: " ")
  guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
  return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// glibc's `malloc_trim(0)`: gives the free memory of every arena back to the system (found at run time;
/// not every C library has it).
func trimMallocArenas() {
  guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "malloc_trim") else { return }
  _ = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0)
}

func mebibytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

// MARK: - Backoff bounds

/// The most connection attempts a channel with `backoff` may start within `window` seconds of a failure
/// while every attempt fails: one at once, then one after each backoff delay, each delay at least
/// `(1 - jitter)` times its base.
func maxAttempts(within window: Double, backoff: RetryBackoff) -> Int {
  var attempts = 1
  var elapsed = 0.0
  var retry = 1
  while true {
    elapsed += seconds(backoff.baseDelay(retry: retry)) * (1 - backoff.jitter)
    if elapsed > window { return attempts }
    attempts += 1
    retry += 1
  }
}

// MARK: - The fleetsim process

/// The `fleetsim` executable: $FLEETSIM, else the one built next to this test binary.
func fleetsimExecutable() throws -> String {
  if let path = ProcessInfo.processInfo.environment["FLEETSIM"], !path.isEmpty { return path }
  let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
  var directory = testBinary.deletingLastPathComponent()
  // On Linux the test binary is `.build/<triple>/debug/<Package>PackageTests.xctest`.
  if directory.pathExtension == "xctest" { directory = directory.deletingLastPathComponent() }
  let candidate = directory.appendingPathComponent("fleetsim").path
  guard FileManager.default.isExecutableFile(atPath: candidate) else {
    throw ChaosError("no fleetsim executable at \(candidate): run `swift build` first, or set FLEETSIM")
  }
  return candidate
}

struct ChaosError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// One run of the `fleetsim` process: started with fixed arguments on a given port, killed with SIGKILL or
/// stopped with SIGTERM. Its stdout is read on a thread of its own; the last `stats:` line is kept.
final class FleetSimProcess: @unchecked Sendable {
  // @unchecked: `process` is touched only by the test's task; `output` is Sendable.
  private let process = Process()
  private let pipe = Pipe()
  private let output: ChildProcessOutput

  /// Starts `fleetsim ARGUMENTS --listen 127.0.0.1:PORT --stats-interval 0.25`; returns once it listens.
  init(executable: String, arguments: [String], port: Int) throws {
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments + ["--listen", "127.0.0.1:\(port)", "--stats-interval", "0.25"]
    process.standardOutput = pipe
    process.standardError = FileHandle.standardError
    try process.run()
    output = ChildProcessOutput(reading: pipe)
  }

  /// Waits for `listening on HOST:PORT`; returns the port.
  func waitUntilListening() async throws -> Int {
    let listening = await eventually(timeout: .seconds(30)) { output.listeningPort != nil || output.isClosed }
    guard listening, let port = output.listeningPort else {
      throw ChaosError("fleetsim did not start listening: \(output.lines)")
    }
    return port
  }

  /// The last `stats:` line's counters.
  var lastStats: [String: Int] {
    guard let line = output.lines.last(where: { $0.hasPrefix("stats: ") }) else { return [:] }
    var counters: [String: Int] = [:]
    for pair in line.dropFirst("stats: ".count).split(separator: " ") {
      let parts = pair.split(separator: "=", maxSplits: 1)
      if parts.count == 2, let value = Int(parts[1]) { counters[String(parts[0])] = value }
    }
    return counters
  }

  /// SIGKILL: the server dies without a word (no GOAWAY, no final stats line).
  func kill() {
    Glibc.kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }

  /// SIGTERM: the server prints its final stats and exits; returns its exit status.
  func stop() async -> Int32 {
    process.terminate()
    process.waitUntilExit()
    _ = await eventually(timeout: .seconds(5)) { output.isClosed }
    return process.terminationStatus
  }
}
