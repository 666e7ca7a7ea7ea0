// Benchmarks/Sources/tripload/Relay.swift - the relay scenario: N trips followed once, by one relay, for
// M downstream clients
//
//   tripload relay --trips 10000 --watched-trips 2500 --clients 4 --tripwatch PATH
//
// Starts a nats-server with JetStream (a store of its own in a temporary directory), a tripload server
// with the trips at 1 update/s, and one `tripwatch relay run` that follows them all upstream (streaming)
// and serves them downstream over gRPC; submits every trip (`tripwatch relay submit`), waits until the
// relay follows them all. Then two windows:
// 1. no watcher: the relay's CPU per upstream update (the JetStream publish included) and nats-server's CPU
//    per publish;
// 2. the clients at once, each a `tripload client` following the first `--watched-trips` trips through the
//    relay (a relay reads every update of the partitions its watchers watch, so the rest still count): the updates
//    delivered against those asked for, their latency, the relay's CPU per delivered update (all of it, and
//    what the watchers added over window 1).
// Prints one `RELAY {json}` line.

import ArgumentParser
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

struct RelayResult: Codable {
  var trips: Int
  var clients: Int
  var rate: Double
  var seconds: Double
  /// Streams the load server saw opened (upstream calls): one per trip when the relay follows each once.
  var upstreamStreams: Int?
  var serverStats: String
  /// Updates delivered to subscribers per second, over every client.
  var downstreamUpdatesPerSecond: Double
  /// Each client's own figure.
  var clientUpdatesPerSecond: [Double]
  var clientP50Ms: [Double]
  var clientP99Ms: [Double]
  /// The relay process's CPU seconds per million updates delivered downstream.
  var relayCPUSecondsPerMillionDelivered: Double
  /// The relay's CPU over the window, as a share of one core.
  var relayCPUShare: Double
  /// Messages the relay published to JetStream per second.
  var jetStreamPublishesPerSecond: Double
  /// Window 1 (no watcher): updates merged upstream per second, the relay's CPU per upstream update (µs, the
  /// JetStream publish included), nats-server's CPU per message the relay published (µs).
  var upstreamUpdatesPerSecond: Double?
  var relayMicrosecondsPerUpstreamUpdate: Double?
  var natsMicrosecondsPerPublish: Double?
  /// Window 2: the relay's CPU per delivered update beyond window 1's (µs): what the watchers cost.
  var relayMarginalMicrosecondsPerDelivered: Double?
  /// Window 2: the updates the clients asked for per second (watched trips × rate × clients).
  var downstreamUpdatesAskedPerSecond: Double?
  /// Window 2: the trips each client followed through the relay.
  var watchedTrips: Int?
  var relayRSSBytes: Int
  var clientErrors: Int
}

struct RelayCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "relay",
    abstract: "Trips followed once by one relay on NATS JetStream for several downstream clients; prints RELAY {json}.")

  @Option(help: "Trips.") var trips = 10_000
  @Option(help: "Downstream clients, each following the first --watched-trips trips.") var clients = 4
  @Option(
    name: .customLong("watched-trips"),
    help: "Trips each client follows through the relay (default: all); the relay follows --trips either way.")
  var watchedTrips: Int?
  @Option(help: "Updates per trip per second.") var rate = 1.0
  @Option(help: "Measured seconds per client.") var duration = 10.0
  @Option(help: "Warm-up seconds after every trip started, per client.") var warmup = 5.0
  @Option(help: "The tripwatch executable (default: the one next to tripload).") var tripwatch: String?
  @Option(name: .customLong("nats-server"), help: "The nats-server executable.") var natsServer = "nats-server"
  @Option(help: "Runs; the figures printed are their medians.") var runs = 3
  @Option(help: "Also write the runs and their medians as JSON here.") var out: String?

  func run() async throws {
    signal(SIGPIPE, SIG_IGN)
    var results: [RelayResult] = []
    for index in 1...max(1, runs) {
      progress("relay: run \(index) of \(runs)")
      results.append(try await runOnce())
    }
    let median = RelayResult.median(of: results)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
    if let out { try encoder.encode(RelayRuns(median: median, runs: results)).write(to: URL(fileURLWithPath: out)) }
    progress(
      String(
        format:
          "relay: median of %d runs: %d trips, %d clients of %d trips: upstream streams %@, downstream %.0f of %.0f "
          + "updates/s, relay %.2f µs per delivered (%.2f µs beyond following), %.2f µs per upstream update, "
          + "nats-server %.2f µs per publish, JetStream %.0f publishes/s", results.count, trips, clients,
        min(watchedTrips ?? trips, trips),
        median.upstreamStreams.map(String.init) ?? "?", median.downstreamUpdatesPerSecond,
        median.downstreamUpdatesAskedPerSecond ?? 0, median.relayCPUSecondsPerMillionDelivered,
        median.relayMarginalMicrosecondsPerDelivered ?? 0, median.relayMicrosecondsPerUpstreamUpdate ?? 0,
        median.natsMicrosecondsPerPublish ?? 0, median.jetStreamPublishesPerSecond))
    encoder.outputFormatting = [.sortedKeys]
    emit("RELAY " + String(decoding: try encoder.encode(median), as: UTF8.self))
  }

  /// One run: its own nats-server, load server and relay.
  func runOnce() async throws -> RelayResult {
    let watched = min(watchedTrips ?? trips, trips)
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
    let tripwatch =
      self.tripwatch
      ?? URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("tripwatch")
      .path
    guard FileManager.default.isExecutableFile(atPath: tripwatch) else {
      throw ValidationError("no tripwatch at \(tripwatch): build it (swift build -c release --product tripwatch)")
    }
    let store = NSTemporaryDirectory() + "tripload-relay-\(getpid())"
    try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: store) }

    // NATS with JetStream.
    let natsPort = try freePort()
    let nats = Process()
    nats.executableURL = URL(fileURLWithPath: try which(natsServer))
    nats.arguments = ["-a", "127.0.0.1", "-p", String(natsPort), "-js", "-sd", store]
    // Its log is kept; its warnings and errors are shown at the end of the run.
    let natsLogPath = store + "-nats.log"
    FileManager.default.createFile(atPath: natsLogPath, contents: nil)
    let natsLog = try FileHandle(forWritingTo: URL(fileURLWithPath: natsLogPath))
    nats.standardOutput = natsLog
    nats.standardError = natsLog
    try nats.run()
    defer {
      nats.terminate()
      nats.waitUntilExit()
      try? natsLog.close()
      let problems = ((try? String(contentsOfFile: natsLogPath, encoding: .utf8)) ?? "").split(separator: "\n")
        .filter { $0.contains("[WRN]") || $0.contains("[ERR]") }
      for line in problems.prefix(20) { progress("nats-server: \(line)") }
      try? FileManager.default.removeItem(atPath: natsLogPath)
    }
    guard await waitForPort(natsPort, timeout: 30) else { throw ValidationError("nats-server did not start") }
    let natsURL = "nats://127.0.0.1:\(natsPort)"

    // The upstream load server.
    let server = try ServerProcess(executable: executable, trips: trips, rate: rate)
    progress("relay: load server on \(server.port), nats on \(natsPort)")

    // Every trip submitted; the relay follows them all.
    let names = store + "/trips.txt"
    try (0..<trips).map(tripName).joined(separator: "\n").write(toFile: names, atomically: true, encoding: .utf8)
    let submit = Process()
    submit.executableURL = URL(fileURLWithPath: tripwatch)
    submit.arguments = ["relay", "submit", "--nats", natsURL, "--trips-file", names]
    submit.standardOutput = FileHandle.standardError
    submit.standardError = FileHandle.standardError
    try submit.run()
    submit.waitUntilExit()
    guard submit.terminationStatus == 0 else { throw ValidationError("tripwatch relay submit failed") }

    let relay = Process()
    relay.executableURL = URL(fileURLWithPath: tripwatch)
    relay.arguments = [
      "relay", "run", "--nats", natsURL, "--target", "127.0.0.1:\(server.port)", "--plaintext", "--provider", "load",
      "--mode", "stream", "--listen", "127.0.0.1:0", "--max-trips", String(trips), "--stats-interval", "1",
      // Loopback, a benchmark's own clients: no tokens to check (the relay warns).
      "--insecure-no-auth", "--max-joins-per-caller", String(max(1_000, trips)),
      // Every client is 127.0.0.1: one peer to the relay, holding what several would.
      "--max-streams-per-peer", "1000000", "--stream-opens-per-second", "1000000", "--max-peer-header-bytes",
      String(1 << 30), "--max-header-bytes", String(1 << 30),
    ]
    let relayOutput = Pipe()
    relay.standardOutput = relayOutput
    relay.standardError = FileHandle.standardError
    try relay.run()
    let lines = LineCollector(relayOutput)
    defer {
      if relay.isRunning {
        relay.terminate()
        relay.waitUntilExit()
      }
    }
    guard let relayPort = await lines.waitForListeningPort(timeout: 60) else {
      throw ValidationError("the relay did not start listening")
    }
    let begin = monotonicSeconds()
    while lines.lastStats["following"] ?? 0 < trips {
      guard monotonicSeconds() - begin < 300, relay.isRunning else {
        throw ValidationError("the relay follows \(lines.lastStats["following"] ?? 0) of \(trips) trips")
      }
      try await Task.sleep(for: .milliseconds(500))
    }
    progress("relay: following \(trips) trips after \(String(format: "%.1f", monotonicSeconds() - begin)) s")

    // The relay and nats-server sampled every half second from now on.
    let samples = RelaySamples()
    let sampler = Task {
      while !Task.isCancelled {
        samples.add(
          time: monotonicSeconds(), cpu: cpuSeconds(of: relay.processIdentifier),
          published: lines.lastStats["published"] ?? 0, upstream: lines.lastStats["upstream_updates"] ?? 0,
          natsCPU: cpuSeconds(of: nats.processIdentifier))
        try? await Task.sleep(for: .milliseconds(500))
      }
    }
    // Window 1: no watcher. The trips settle for a few seconds first (their first whole states are published).
    try await Task.sleep(for: .seconds(warmup))
    let quietStart = monotonicSeconds()
    try await Task.sleep(for: .seconds(duration))
    let quiet = quietStart...monotonicSeconds()
    let quietCPU = samples.delta(\.cpu, over: quiet)
    let quietUpstream = samples.delta(\.upstream, over: quiet)
    let quietPublished = samples.delta(\.published, over: quiet)
    let quietNATS = samples.delta(\.natsCPU, over: quiet)
    let quietSeconds = quiet.upperBound - quiet.lowerBound
    progress(
      String(
        format: "relay: no watcher: %.0f upstream updates/s, relay %.2f µs per update, nats-server %.2f µs per publish",
        quietUpstream / quietSeconds, quietUpstream > 0 ? quietCPU / quietUpstream * 1e6 : 0,
        quietPublished > 0 ? quietNATS / quietPublished * 1e6 : 0))
    // Every client started at once, each read on a thread of its own (a blocking read on the cooperative
    // pool would let only as many clients run as there are cores).
    let launched = try (0..<clients).map { _ in
      try LaunchedClient(
        executable: executable,
        arguments: [
          "client", "--kind", "journeysharing", "--port", String(relayPort), "--trips", String(watched),
          "--connections", "2", "--duration", String(duration), "--warmup", String(warmup),
          "--start-timeout", "300", "--rate", String(rate),
        ])
    }
    while !launched.allSatisfy(\.isDone) { try await Task.sleep(for: .milliseconds(200)) }
    let results = launched.map { ($0.result, $0.endedAt) }
    sampler.cancel()
    // A relay that died meanwhile has no CPU figure (its /proc entry is gone): the run failed.
    guard relay.isRunning else {
      throw ValidationError(
        "the relay exited during the run (status \(relay.terminationStatus)); its standard error is above")
    }
    samples.add(
      time: monotonicSeconds(), cpu: cpuSeconds(of: relay.processIdentifier),
      published: lines.lastStats["published"] ?? 0, upstream: lines.lastStats["upstream_updates"] ?? 0,
      natsCPU: cpuSeconds(of: nats.processIdentifier))
    let finished = results.compactMap { $0.0 }
    guard finished.count == clients else { throw ValidationError("\(clients - finished.count) clients gave no result") }
    // The window every client measured in: they started together with the same warm-up and duration, and each
    // printed its result at the end of its window; the earliest end bounds the common window.
    let windowEnd = results.map(\.1).min() ?? monotonicSeconds()
    let window = (windowEnd - duration)...windowEnd
    let relayCPU = samples.delta(\.cpu, over: window)
    let published = samples.delta(\.published, over: window)
    let downstream = finished.reduce(0) { $0 + $1.updatesPerSecond }
    let serverStats = server.stop()
    let upstream = serverStats.split(separator: " ").first { $0.hasPrefix("streams=") }
      .flatMap { Int($0.split(separator: "=").last ?? "") }
    let relayMicrosecondsPerUpstream: Double? = quietUpstream > 0 ? quietCPU / quietUpstream * 1e6 : nil
    let natsMicrosecondsPerPublish: Double? = quietPublished > 0 ? quietNATS / quietPublished * 1e6 : nil
    let quietShare = quietCPU / quietSeconds
    let marginal: Double? =
      downstream > 0 ? max(0, relayCPU - quietShare * duration) / (downstream * duration) * 1e6 : nil
    let perMillion: Double = downstream > 0 ? relayCPU / (downstream * duration) * 1e6 : 0
    let errors = finished.reduce(0) { $0 + ($1.errors ?? 0) }
    var result = RelayResult(
      trips: trips, clients: clients, rate: rate, seconds: duration, upstreamStreams: upstream,
      serverStats: serverStats, downstreamUpdatesPerSecond: downstream,
      clientUpdatesPerSecond: finished.map(\.updatesPerSecond), clientP50Ms: finished.map(\.latencyP50Ms),
      clientP99Ms: finished.map(\.latencyP99Ms), relayCPUSecondsPerMillionDelivered: perMillion,
      relayCPUShare: relayCPU / duration, jetStreamPublishesPerSecond: published / duration,
      relayRSSBytes: residentBytes(of: relay.processIdentifier), clientErrors: errors)
    result.upstreamUpdatesPerSecond = quietUpstream / quietSeconds
    result.relayMicrosecondsPerUpstreamUpdate = relayMicrosecondsPerUpstream
    result.natsMicrosecondsPerPublish = natsMicrosecondsPerPublish
    result.relayMarginalMicrosecondsPerDelivered = marginal
    result.downstreamUpdatesAskedPerSecond = Double(watched) * rate * Double(clients)
    result.watchedTrips = watched
    relay.terminate()
    relay.waitUntilExit()
    progress(
      String(
        format: "relay: upstream streams %@, downstream %.0f updates/s, relay %.2f CPU s per million delivered "
          + "(%.0f%% of a core), JetStream %.0f publishes/s", upstream.map(String.init) ?? "?", downstream,
        result.relayCPUSecondsPerMillionDelivered, result.relayCPUShare * 100, result.jetStreamPublishesPerSecond))
    return result
  }
}

/// Every run's figures and their medians.
struct RelayRuns: Codable {
  var median: RelayResult
  var runs: [RelayResult]
}

extension RelayResult {
  /// The median of each figure over `results` (the first run's for the per-client lists and texts).
  static func median(of results: [RelayResult]) -> RelayResult {
    func middle(_ values: [Double]) -> Double {
      let sorted = values.sorted()
      guard !sorted.isEmpty else { return 0 }
      return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
    var median = results[0]
    median.downstreamUpdatesPerSecond = middle(results.map(\.downstreamUpdatesPerSecond))
    median.relayCPUSecondsPerMillionDelivered = middle(results.map(\.relayCPUSecondsPerMillionDelivered))
    median.relayCPUShare = middle(results.map(\.relayCPUShare))
    median.jetStreamPublishesPerSecond = middle(results.map(\.jetStreamPublishesPerSecond))
    median.relayRSSBytes = Int(middle(results.map { Double($0.relayRSSBytes) }))
    median.upstreamStreams =
      results.compactMap(\.upstreamStreams).isEmpty
      ? nil : Int(middle(results.compactMap(\.upstreamStreams).map(Double.init)))
    median.clientErrors = Int(middle(results.map { Double($0.clientErrors) }))
    func optional(_ values: [Double?]) -> Double? {
      let present = values.compactMap { $0 }
      return present.isEmpty ? nil : middle(present)
    }
    median.upstreamUpdatesPerSecond = optional(results.map(\.upstreamUpdatesPerSecond))
    median.relayMicrosecondsPerUpstreamUpdate = optional(results.map(\.relayMicrosecondsPerUpstreamUpdate))
    median.natsMicrosecondsPerPublish = optional(results.map(\.natsMicrosecondsPerPublish))
    median.relayMarginalMicrosecondsPerDelivered = optional(results.map(\.relayMarginalMicrosecondsPerDelivered))
    return median
  }
}

/// Runs one `tripload client`; its RESULT, or nil.
func runTriploadClient(
  executable: String, arguments: [String], standardError: FileHandle = .nullDevice
) -> ClientResult? {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  let pipe = Pipe()
  process.standardOutput = pipe
  process.standardError = standardError
  do { try process.run() } catch { return nil }
  let data = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return clientResult(in: data)
}

/// The `RESULT {json}` line a `tripload client` printed last, decoded.
func clientResult(in output: Data) -> ClientResult? {
  let text = String(decoding: output, as: UTF8.self)
  guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("RESULT ") }) else { return nil }
  return try? JSONDecoder().decode(ClientResult.self, from: Data(line.dropFirst("RESULT ".count).utf8))
}

/// A `tripload client` process started now; its RESULT and the time it ended once it has (`isDone`).
final class LaunchedClient: @unchecked Sendable {
  // @unchecked: the outcome is written once by the reader thread, under `lock`.
  private let lock = NSLock()
  private var outcome: (result: ClientResult?, endedAt: Double)?

  init(executable: String, arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    Thread.detachNewThread { [self] in
      let data = pipe.fileHandleForReading.readDataToEndOfFile()
      process.waitUntilExit()
      let result = clientResult(in: data)
      lock.withLock { outcome = (result, monotonicSeconds()) }
    }
  }

  var isDone: Bool { lock.withLock { outcome != nil } }
  var result: ClientResult? { lock.withLock { outcome?.result } }
  var endedAt: Double { lock.withLock { outcome?.endedAt ?? monotonicSeconds() } }
}

/// The relay's CPU and published count over time.
final class RelaySamples: @unchecked Sendable {
  // @unchecked: every access is under `lock`.
  struct Sample {
    var time: Double
    var cpu: Double
    var published: Double
    var upstream: Double = 0
    var natsCPU: Double = 0
  }
  private let lock = NSLock()
  private var samples: [Sample] = []

  func add(time: Double, cpu: Double, published: Int, upstream: Int = 0, natsCPU: Double = 0) {
    lock.withLock {
      samples.append(
        Sample(time: time, cpu: cpu, published: Double(published), upstream: Double(upstream), natsCPU: natsCPU))
    }
  }

  /// How much `value` grew over `window`, interpolated between the samples around its ends.
  func delta(_ value: KeyPath<Sample, Double>, over window: ClosedRange<Double>) -> Double {
    let samples = lock.withLock { self.samples }
    func at(_ time: Double) -> Double {
      guard let after = samples.firstIndex(where: { $0.time >= time }) else {
        return samples.last?[keyPath: value] ?? 0
      }
      guard after > 0 else { return samples[0][keyPath: value] }
      let a = samples[after - 1]
      let b = samples[after]
      let share = b.time > a.time ? (time - a.time) / (b.time - a.time) : 1
      return a[keyPath: value] + (b[keyPath: value] - a[keyPath: value]) * share
    }
    return at(window.upperBound) - at(window.lowerBound)
  }
}

/// The lines a child writes to standard output, read as they come; the last `relay-stats:` line's counters.
final class LineCollector: @unchecked Sendable {
  // @unchecked: every access is under `lock`.
  private let lock = NSLock()
  private var port: Int?
  private var stats: [String: Int] = [:]

  init(_ pipe: Pipe) {
    let handle = pipe.fileHandleForReading
    Thread.detachNewThread { [self] in
      var pending = Data()
      while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        pending.append(chunk)
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
          let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
          pending.removeSubrange(pending.startIndex...newline)
          take(line)
        }
      }
    }
  }

  private func take(_ line: String) {
    if line.hasPrefix("listening on "), let colon = line.lastIndex(of: ":") {
      lock.withLock { port = Int(line[line.index(after: colon)...]) }
    } else if line.hasPrefix("relay-stats: ") {
      var counters: [String: Int] = [:]
      for pair in line.dropFirst("relay-stats: ".count).split(separator: " ") {
        let parts = pair.split(separator: "=", maxSplits: 1)
        if parts.count == 2, let value = Int(parts[1]) { counters[String(parts[0])] = value }
      }
      lock.withLock { stats = counters }
    }
  }

  var lastStats: [String: Int] { lock.withLock { stats } }

  func waitForListeningPort(timeout: Double) async -> Int? {
    let begin = monotonicSeconds()
    while monotonicSeconds() - begin < timeout {
      if let port = lock.withLock({ port }) { return port }
      try? await Task.sleep(for: .milliseconds(100))
    }
    return nil
  }
}

/// A TCP port on 127.0.0.1 nothing listens on now.
func freePort() throws -> Int {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { throw ValidationError("socket: errno \(errno)") }
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  address.sin_port = 0
  let bound = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
  }
  guard bound == 0 else { throw ValidationError("bind: errno \(errno)") }
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  _ = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
  }
  return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port` within `timeout` seconds.
func waitForPort(_ port: Int, timeout: Double) async -> Bool {
  let begin = monotonicSeconds()
  while monotonicSeconds() - begin < timeout {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    close(fd)
    if connected == 0 { return true }
    try? await Task.sleep(for: .milliseconds(100))
  }
  return false
}

/// The full path of `name`: itself when it has a slash, else the first on PATH.
func which(_ name: String) throws -> String {
  if name.contains("/") { return name }
  // Strings spelled out: `split(separator:) + ["/usr/sbin"]` type-checked as arrays of Characters, so every
  // path looked like `["/", "u", "s", "r", …]/h2load` and nothing was ever found.
  let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
  let directories: [String] = path.split(separator: ":").map(String.init) + ["/usr/sbin"]
  for directory in directories {
    let path = "\(directory)/\(name)"
    if FileManager.default.isExecutableFile(atPath: path) { return path }
  }
  throw ValidationError("no \(name) on PATH")
}

/// User plus system CPU seconds of process `pid` (/proc/PID/stat).
func cpuSeconds(of pid: Int32) -> Double {
  guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
    let close = stat.lastIndex(of: ")")
  else { return 0 }
  let fields = stat[stat.index(after: close)...].split(separator: " ")
  // After the command: state is field 3; utime and stime are fields 14 and 15 (1-based over the whole line).
  guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
  return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// The resident set of process `pid` in bytes (/proc/PID/statm).
func residentBytes(of pid: Int32) -> Int {
  guard let statm = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8) else { return 0 }
  let fields = statm.split(separator: " ")
  guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
  return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
