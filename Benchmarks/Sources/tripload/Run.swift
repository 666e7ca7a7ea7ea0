// Benchmarks/Sources/tripload/Run.swift - every scenario, side by side, into one JSON file

import ArgumentParser
import FleetEngineMessages
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// One scenario's server and clients.
struct ScenarioResult: Codable {
  var trips: Int
  var rate: Double?
  /// "stream" or "poll" (nil in results written before polling was measured: stream).
  var mode: String?
  var connections: Int
  /// Each client's median over its runs (every figure the median of that figure).
  var clients: [ClientResult]
  /// Every run of every client, in the order they ran.
  var runs: [ClientResult]?
  var serverStats: String
}

/// h2load's figures.
struct H2LoadResult: Codable {
  var command: String
  var requestsPerSecond: Double
  var payloadBytes: Int
  var output: String
}

struct RunResults: Codable {
  var machine: String
  var date: String
  var scenarios: [ScenarioResult]
  var h2load: H2LoadResult?
}

/// One scenario: `trips` followed by streaming at `rate` updates per trip per second (nil: as fast as flow
/// control allows), or polled every `pollInterval` seconds.
struct Scenario {
  var trips: Int
  var rate: Double?
  var pollInterval: Double?
}

struct RunCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "run", abstract: "Run the scenarios (quick by default) and write the results as JSON.")

  @Flag(help: "The long version: more trip counts, longer windows.") var full = false
  @Option(help: "Where to write the JSON results.") var out = "results/e2e.json"
  @Option(help: "Measured seconds per client (default: 8 quick, 20 full).") var duration: Double?
  @Option(
    help:
      "Streaming clients, comma-separated (journeysharing: a loop per core; journeysharing-1-loop: one; grpc-swift; grpc-go)."
  )
  var clients = "journeysharing,grpc-swift,grpc-go"
  @Option(help: "Polling clients for the polling scenario, comma-separated.")
  var pollClients = "journeysharing-poll,grpc-swift-poll,grpc-go-poll"
  @Option(
    name: .customLong("go-client"),
    help:
      "The grpc-go client (Benchmarks/scripts/build-go-client.sh builds it; default: go/bin/tripload-go in the .build directory holding this executable)."
  )
  var goClient: String?
  @Option(help: "Trip counts at 1 update/s, comma-separated (default: quick 1000,10000,100000).") var trips: String?
  @Option(help: "Trips polled every 5 s in the polling scenario (default: quick 10000, full 100000; 0: none).")
  var pollTrips: Int?
  @Option(help: "Runs of each client in each scenario; the results are their medians.") var runs = 3
  @Flag(inversion: .prefixedNo, help: "The scenario as fast as flow control allows (10,000 trips).")
  var saturating = true
  @Flag(help: "A million trips at one update per trip every 10 s (always with --full).") var million = false
  @Option(help: "Trips per HTTP/2 connection (the connections of a scenario: trips / this, at least 2).")
  var tripsPerConnection = 10_000
  @Option(
    name: .customLong("max-resident-gib"),
    help:
      "Resident GiB at which a client stops starting trips and reports how far it got (default: half the machine's memory)."
  )
  var maxResidentGiB: Double?

  func run() async throws {
    signal(SIGPIPE, SIG_IGN)
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
    let seconds = duration ?? (full ? 20 : 8)
    let kinds = clients.split(separator: ",").map(String.init)
    let pollKinds = pollClients.split(separator: ",").map(String.init)
    let counts =
      trips.map { $0.split(separator: ",").compactMap { Int($0) } }
      ?? (full ? [1_000, 10_000, 50_000, 100_000] : [1_000, 10_000, 100_000])
    var scenarios = counts.map { Scenario(trips: $0, rate: 1.0) }
    if saturating { scenarios.append(Scenario(trips: 10_000, rate: nil)) }
    if full && saturating { scenarios.append(Scenario(trips: 1_000, rate: nil)) }
    if full || million { scenarios.append(Scenario(trips: 1_000_000, rate: 0.1)) }
    let polled = pollTrips ?? (full ? 100_000 : 10_000)
    if polled > 0 { scenarios.append(Scenario(trips: polled, rate: 1.0, pollInterval: 5)) }
    guard runs >= 1 else { throw ValidationError("--runs must be at least 1") }
    // tripload-go takes the same client arguments and prints the same RESULT line as `tripload client`.
    var buildDirectory = URL(fileURLWithPath: executable).deletingLastPathComponent()
    while buildDirectory.lastPathComponent != ".build", buildDirectory.pathComponents.count > 1 {
      buildDirectory.deleteLastPathComponent()
    }
    let goExecutable = goClient ?? buildDirectory.appendingPathComponent("go/bin/tripload-go").path
    let used =
      (scenarios.contains { $0.pollInterval == nil } ? kinds : [])
      + (scenarios.contains { $0.pollInterval != nil } ? pollKinds : [])
    if used.contains(where: { $0.hasPrefix("grpc-go") }), !FileManager.default.isExecutableFile(atPath: goExecutable) {
      throw ValidationError(
        "no grpc-go client at \(goExecutable): build it with Benchmarks/scripts/build-go-client.sh (make bench does)")
    }

    var results: [ScenarioResult] = []
    var missing = 0
    for scenario in scenarios {
      let polling = scenario.pollInterval != nil
      let connections = max(2, (scenario.trips + tripsPerConnection - 1) / max(1, tripsPerConnection))
      let what =
        polling
        ? "polled every \(scenario.pollInterval!) s"
        : scenario.rate.map { "\($0) update/s each" } ?? "as fast as flow control allows"
      progress("== \(scenario.trips) trips, \(what), \(connections) connections, \(runs) runs")
      var all: [ClientResult] = []
      var stats: [String] = []
      // Runs interleaved (A, B, A, B, …) so that a slow patch of the machine does not fall on one client, each
      // against a server of its own: a client that fell behind left the server a backlog that the next one
      // paid for (a saturating run after grpc-swift-2's took 27,586 updates/s instead of 106,617).
      for run in 1...runs {
        for kind in polling ? pollKinds : kinds {
          // The polling scenario's server streams nothing: it answers unary GetTrip from its simulation.
          // A poll needs its trip's plan for every answer: the polling server keeps every trip's (a million
          // streaming trips' plans would take more memory than the machine has beside the client).
          let server = try ServerProcess(
            executable: executable, trips: scenario.trips, rate: scenario.rate,
            planCache: polling ? scenario.trips : nil)
          let go = kind.hasPrefix("grpc-go")
          var arguments = [
            "--kind", kind, "--port", String(server.port), "--trips", String(scenario.trips),
            "--connections", String(connections),
            "--duration", String((scenario.rate ?? 1) < 1 ? max(seconds, 2 / scenario.rate!) : seconds),
            "--warmup", String(polling ? 2 * (scenario.pollInterval ?? 5) : scenario.trips >= 50_000 ? 5 : 3),
            // Half the machine by default: the server needs about 5 GiB for a million streams, and a client
            // let grow to 18 GiB of 24 had the kernel kill the server.
            "--max-resident-gib",
            String(maxResidentGiB ?? Double(ProcessInfo.processInfo.physicalMemory >> 20) / 1024 / 2),
            // A million trips take minutes to start (every stream's first message is its whole trip).
            "--start-timeout", String(scenario.trips >= 1_000_000 ? 1_200 : 120),
          ]
          if let interval = scenario.pollInterval { arguments += ["--poll-interval", String(interval)] }
          if !polling, let rate = scenario.rate { arguments += ["--rate", String(rate)] }
          if let result = runClient(
            executable: go ? goExecutable : executable, arguments: go ? arguments : ["client"] + arguments)
          {
            all.append(result)
            progress(
              String(
                format:
                  "   %@ (run %d): %.0f %@/s, %.2f CPU s per million, p50 %.2f ms p99 %.2f ms p99.9 %.2f ms, %.0f B/trip",
                kind, run, result.updatesPerSecond, polling ? "polls" : "updates", result.cpuSecondsPerMillionUpdates,
                result.latencyP50Ms, result.latencyP99Ms, result.latencyP999Ms, result.rssPerTripBytes))
          } else {
            progress("   \(kind) (run \(run)): no result")
            missing += 1
          }
          stats.append("\(kind) run \(run): " + server.stop())
        }
      }
      let medians = (polling ? pollKinds : kinds).compactMap { kind in
        median(of: all.filter { $0.client == kind })
      }
      results.append(
        ScenarioResult(
          trips: scenario.trips, rate: polling ? nil : scenario.rate, mode: polling ? "poll" : "stream",
          connections: connections, clients: medians, runs: all, serverStats: stats.joined(separator: "\n")))
    }
    let h2load = runH2Load(full: full)
    let formatter = ISO8601DateFormatter()
    let all = RunResults(
      machine: machineDescription(), date: formatter.string(from: Date()), scenarios: results, h2load: h2load)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(all).write(to: URL(fileURLWithPath: out))
    progress("wrote \(out)")
    if missing > 0 { throw ValidationError("\(missing) client runs gave no result (see above)") }
  }

  /// Every figure the median of that figure over `runs` (the upper median for an even count); nil for none.
  func median(of runs: [ClientResult]) -> ClientResult? {
    guard var result = runs.first else { return nil }
    func middle<T: Comparable>(_ key: KeyPath<ClientResult, T>) -> T {
      let sorted = runs.map { $0[keyPath: key] }.sorted()
      return sorted[sorted.count / 2]
    }
    result.seconds = middle(\.seconds)
    result.tripsStarted = middle(\.tripsStarted)
    result.updates = middle(\.updates)
    result.updatesPerSecond = middle(\.updatesPerSecond)
    result.updatesReceivedPerSecond = middle(\.updatesReceivedPerSecond)
    result.cpuSeconds = middle(\.cpuSeconds)
    result.cpuSecondsPerMillionUpdates = middle(\.cpuSecondsPerMillionUpdates)
    result.rssBaselineBytes = middle(\.rssBaselineBytes)
    result.rssBytes = middle(\.rssBytes)
    result.rssPerTripBytes = middle(\.rssPerTripBytes)
    result.latencyP50Ms = middle(\.latencyP50Ms)
    result.latencyP99Ms = middle(\.latencyP99Ms)
    result.latencyP999Ms = middle(\.latencyP999Ms)
    result.latencyMaxMs = middle(\.latencyMaxMs)
    result.latencySamples = middle(\.latencySamples)
    result.gaps = middle(\.gaps)
    result.duplicates = middle(\.duplicates)
    result.restarts = middle(\.restarts)
    result.errors = runs.contains { $0.errors == nil } ? nil : middle(\.errors!)
    return result
  }

  func runClient(executable: String, arguments: [String]) -> ClientResult? {
    runTriploadClient(executable: executable, arguments: arguments, standardError: .standardError)
  }

  func machineDescription() -> String {
    var parts: [String] = []
    if let cpu = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
      let model = cpu.split(separator: "\n").first(where: { $0.hasPrefix("model name") })
    {
      parts.append(model.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "")
    }
    parts.append("\(ProcessInfo.processInfo.activeProcessorCount) cores")
    parts.append("\(ProcessInfo.processInfo.physicalMemory >> 30) GiB")
    return parts.joined(separator: ", ")
  }

  /// h2load against nghttpd serving a file the size of a framed small update: the raw HTTP/2
  /// request rate this machine manages with 10 connections.
  func runH2Load(full: Bool) -> H2LoadResult? {
    guard let h2load = which("h2load"), let nghttpd = which("nghttpd") else {
      progress("h2load or nghttpd missing (Debian: nghttp2-client, nghttp2-server): no HTTP/2 ceiling")
      return nil
    }
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("tripload-h2-\(getpid())")
    try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: root) }
    let payload = smallUpdateFrameSize()
    try? Data(repeating: 0x2a, count: payload).write(to: root.appendingPathComponent("update"))
    let port = 20_000 + Int(getpid() % 20_000)
    let server = Process()
    server.executableURL = URL(fileURLWithPath: nghttpd)
    server.arguments = ["--no-tls", "-d", root.path, "-a", "127.0.0.1", String(port)]
    server.standardOutput = FileHandle.nullDevice
    server.standardError = FileHandle.nullDevice
    do { try server.run() } catch { return nil }
    defer {
      kill(server.processIdentifier, SIGKILL)  // nghttpd ignores SIGTERM while it has connections
      server.waitUntilExit()
    }
    usleep(300_000)
    let requests = full ? 4_000_000 : 1_000_000
    let arguments = ["-n", String(requests), "-c", "10", "-m", "100", "http://127.0.0.1:\(port)/update"]
    progress("== h2load \(arguments.joined(separator: " "))")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: h2load)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return nil }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let output = String(decoding: data, as: UTF8.self)
    // "finished in 2.50s, 400000.00 req/s, 40.00MB/s"
    guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
      let rate = line.split(separator: ",").dropFirst().first?.split(separator: " ").first.flatMap({ Double($0) })
    else { return nil }
    progress("   \(line)")
    let summary = output.split(separator: "\n").filter {
      $0.hasPrefix("finished in") || $0.hasPrefix("requests:") || $0.hasPrefix("status codes:")
    }.joined(separator: "\n")
    return H2LoadResult(
      command: "h2load " + arguments.joined(separator: " ") + " (nghttpd --no-tls, \(payload)-byte body)",
      requestsPerSecond: rate, payloadBytes: payload, output: summary)
  }

  func which(_ name: String) -> String? { try? tripload.which(name) }

}

/// The size of a small update as gRPC sends it: 5-byte prefix plus the message.
func smallUpdateFrameSize() -> Int {
  var update = TripUpdateSample.make()
  update.sequence = 1000
  return 5 + update.serializedBytes().count
}

/// A tripload server in a process of its own.
final class ServerProcess {
  let process = Process()
  let output = Pipe()
  let port: Int

  /// A server of `trips` streaming at `rate` (nil: saturating), keeping `planCache` trips' plans (nil: FleetSim's
  /// default).
  init(executable: String, trips: Int, rate: Double?, planCache: Int? = nil) throws {
    process.executableURL = URL(fileURLWithPath: executable)
    var arguments = ["server", "--trips", String(trips)]
    if let rate { arguments += ["--rate", String(rate)] } else { arguments.append("--saturate") }
    if let planCache { arguments += ["--plan-cache", String(planCache)] }
    process.arguments = arguments
    process.standardOutput = output
    process.standardError = FileHandle.standardError
    try process.run()
    var buffer = Data()
    var found: Int?
    while found == nil {
      let chunk = output.fileHandleForReading.availableData
      if chunk.isEmpty { break }
      buffer.append(chunk)
      let text = String(decoding: buffer, as: UTF8.self)
      if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) {
        found = Int(line.dropFirst("listening on ".count))
      }
    }
    guard let found else { throw ValidationError("the tripload server did not start") }
    port = found
  }

  /// Stops the server; returns its stats line.
  func stop() -> String {
    process.interrupt()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    return text.split(separator: "\n").last(where: { $0.hasPrefix("server stats: ") }).map {
      String($0.dropFirst("server stats: ".count))
    } ?? ""
  }
}
