// Benchmarks/Sources/tripload/Tripload.swift - end-to-end load: FleetSim serving N trips, clients following them
//
//   tripload server  --trips N (--rate R | --saturate)            FleetSim in load mode on 127.0.0.1
//   tripload client  --kind journeysharing|grpc-swift --port P …  follows N trips, prints one RESULT line
//   tripload run     [--quick | --full] --out DIR                 every scenario, side by side; writes results
//   tripload relay   --trips N --clients M                         N trips through one relay to M clients (Relay.swift)
//
// `run` starts a server process per scenario, then the clients one after the other against
// that same server (each in its own process, so CPU and memory are the client's alone),
// then h2load against nghttpd for the raw HTTP/2 ceiling, and writes latest.md and a plot.

import ArgumentParser
import FleetEngineMessages
import FleetSim
import Foundation
import HTTP2Transport
import Logging
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

@main
struct Tripload: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "tripload",
    abstract: "End-to-end load: follow N trips on FleetSim with this project's client and with grpc-swift-2.",
    subcommands: [RunCommand.self, ServerCommand.self, ClientCommand.self, RelayCommand.self, PipelineCommand.self],
    defaultSubcommand: RunCommand.self)
}

nonisolated(unsafe) var serverStop: sig_atomic_t = 0

struct ServerCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "server", abstract: "FleetSim in load mode on 127.0.0.1; prints `listening on PORT`.")

  @Option(help: "Trips served.") var trips = 1000
  @Option(help: "Small updates per trip per second.") var rate: Double?
  @Flag(help: "Send as fast as flow control allows.") var saturate = false
  @Option(help: "Port (0 picks one).") var port = 0
  @Option(name: .customLong("max-concurrent-streams")) var maxConcurrentStreams: UInt32 = 20_000
  @Option(help: "swift-log level of the server's messages (debug shows why connections closed).")
  var logLevel = "info"
  @Option(
    name: .customLong("plan-cache"),
    help:
      "Trip plans the server keeps (10-25 KB each; default FleetSim's 4,096). Streams need a trip's plan for their first message only; polls need it for every answer, so tripload run gives a polling scenario's server every trip's plan."
  )
  var planCache = 4_096

  func run() async throws {
    signal(SIGTERM) { _ in serverStop = 1 }
    signal(SIGINT) { _ in serverStop = 1 }
    signal(SIGPIPE, SIG_IGN)
    var simulation = SimulationConfiguration()
    simulation.provider = "load"
    simulation.tripCount = trips
    simulation.startTime = wallClock()
    simulation.speedup = 1
    let load = LoadGeneration(updatesPerSecond: saturate ? nil : (rate ?? 1))
    var listen = GRPCServerConfiguration(host: "127.0.0.1", port: port, maxConcurrentStreams: maxConcurrentStreams)
    // One local client stands for every follower of the benchmark: no per-peer shares.
    listen.removePeerLimits()
    // Nor the server-wide 64 MiB of request headers held by open calls: about 460 bytes a stream, it stopped a
    // million streams at 145,019 (the rest were never started).
    listen.maxHeaderBytes = .max
    let sim = try FleetSim(
      configuration: FleetSimConfiguration(simulation: simulation, load: load, planCacheCapacity: planCache),
      listen: listen, logger: serverLogger())
    let bound = try sim.start()
    emit("listening on \(bound)")
    let started = processCPUSeconds()
    while serverStop == 0 { try? await Task.sleep(for: .milliseconds(50)) }
    let stats = await sim.stats()
    emit("server stats: \(stats) cpu_seconds=\(processCPUSeconds() - started)")
    await sim.shutdown()
  }
}

extension ServerCommand {
  func serverLogger() throws -> Logger {
    guard let level = Logger.Level(rawValue: logLevel) else {
      throw ValidationError("unknown --log-level \(logLevel) (trace, debug, info, notice, warning, error, critical)")
    }
    var logger = Logger(label: "tripload.server")
    logger.logLevel = level
    return logger
  }
}

struct ClientCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "client", abstract: "Follow trips on a tripload server; prints progress, then `RESULT {json}`.")

  @Option(
    help:
      "journeysharing, journeysharing-1-loop, grpc-swift (streaming); journeysharing-poll, grpc-swift-poll (grpc-go's are tripload-go's)."
  )
  var kind = "journeysharing"
  @Option(help: "Server port on 127.0.0.1.") var port: Int
  @Option(help: "Trips to follow.") var trips = 1000
  @Option(help: "HTTP/2 connections.") var connections = 1
  @Option(help: "The server's rate per trip (for the record; nil = saturating).") var rate: Double?
  @Option(help: "Seconds to wait for every trip's first update.") var startTimeout = 120.0
  @Option(help: "Warm-up seconds after every trip started.") var warmup = 3.0
  @Option(help: "Measured seconds.") var duration = 10.0
  @Option(name: .customLong("delivery-threads")) var deliveryThreads = 2
  @Option(help: "Seconds between two polls of a trip (the poll kinds).") var pollInterval = 5.0
  @Option(
    name: .customLong("read-coalescing-ms"),
    help: "Milliseconds a busy event loop waits before reading again (journeysharing kinds; 0: it does not).")
  var readCoalescingMilliseconds = 0.0
  @Option(
    name: .customLong("max-resident-gib"),
    help: "Resident GiB at which the client stops starting trips and reports how far it got (0: no cap).")
  var maxResidentGiB = 0.0

  func run() async throws {
    let recorder = LoadRecorder(trips: trips)
    let baseline = residentBytes()
    let client: any LoadClient
    switch kind {
    case "journeysharing", "journeysharing-1-loop":
      // The default is an event loop per core; the other kind compares it with a single loop.
      client = try journeySharingStreamClient(
        host: "127.0.0.1", port: port, connections: connections, deliveryThreads: deliveryThreads,
        eventLoops: kind == "journeysharing" ? nil : 1,
        readCoalescing: .microseconds(Int64(readCoalescingMilliseconds * 1_000)))
    case "grpc-swift":
      client = GRPCSwiftLoadClient(host: "127.0.0.1", port: port, connections: connections)
    case "journeysharing-poll":
      client = try journeySharingPollClient(
        host: "127.0.0.1", port: port, connections: connections, deliveryThreads: deliveryThreads,
        interval: .seconds(pollInterval), recorder: recorder)
    case "grpc-swift-poll":
      client = GRPCSwiftPollClient(
        host: "127.0.0.1", port: port, connections: connections, interval: .seconds(pollInterval))
    default:
      throw ValidationError(
        "--kind must be journeysharing, journeysharing-1-loop, grpc-swift, journeysharing-poll or grpc-swift-poll")
    }
    let begin = monotonicSeconds()
    try await client.start(trips: trips, recorder: recorder)
    // Every trip's first message (the full trip) must have arrived before measuring.
    let cap = maxResidentGiB > 0 ? Int(maxResidentGiB * Double(1 << 30)) : Int.max
    while recorder.tripsStarted.load(ordering: .relaxed) < trips, monotonicSeconds() - begin < startTimeout {
      try? await Task.sleep(for: .milliseconds(250))
      progress(
        "[\(kind)] starting: \(recorder.tripsStarted.load(ordering: .relaxed))/\(trips) trips receiving, "
          + "rss \(residentBytes() >> 20) MiB")
      if residentBytes() >= cap {
        // Out of memory for this machine before every trip started: report how far it got, and stop.
        let started = recorder.tripsStarted.load(ordering: .relaxed)
        let rss = residentBytes()
        progress("[\(kind)] stopped at the \(maxResidentGiB) GiB cap with \(started) of \(trips) trips receiving")
        let result = ClientResult(
          client: kind, mode: "stream", pollInterval: nil, trips: trips, connections: connections, rate: rate,
          seconds: monotonicSeconds() - begin, tripsStarted: started, updates: 0, updatesPerSecond: 0,
          updatesReceivedPerSecond: 0, cpuSeconds: processCPUSeconds(), cpuSecondsPerMillionUpdates: 0,
          rssBaselineBytes: baseline, rssBytes: rss,
          rssPerTripBytes: Double(rss - baseline) / Double(max(1, trips)), latencyP50Ms: 0, latencyP99Ms: 0,
          latencyP999Ms: 0, latencyMaxMs: 0, latencySamples: 0, gaps: 0, duplicates: 0, restarts: 0, errors: nil,
          stoppedAtMemoryCap: true)
        emit("RESULT " + String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
        Glibc.exit(0)
      }
    }
    let started = recorder.tripsStarted.load(ordering: .relaxed)
    try? await Task.sleep(for: .seconds(warmup))
    recorder.recording.store(true, ordering: .relaxed)
    let cpu0 = processCPUSeconds()
    let t0 = monotonicSeconds()
    var lastCount = 0
    var lastTime = t0
    while monotonicSeconds() - t0 < duration {
      try? await Task.sleep(for: .seconds(1))
      let now = monotonicSeconds()
      let count = recorder.delivered.load(ordering: .relaxed)
      progress(
        String(
          format: "[%@] %5.1fs  %9.0f updates/s  rss %d MiB  cpu %.2fs", kind, now - t0,
          Double(count - lastCount) / (now - lastTime), residentBytes() >> 20, processCPUSeconds() - cpu0))
      lastCount = count
      lastTime = now
    }
    recorder.recording.store(false, ordering: .relaxed)
    let seconds = monotonicSeconds() - t0
    let cpu = processCPUSeconds() - cpu0
    let rss = residentBytes()
    let updates = recorder.delivered.load(ordering: .relaxed)
    let latency = recorder.percentiles()
    let errors = client.errorCount()
    for (text, count) in errorKinds.withLock({ $0 }).sorted(by: { $0.value > $1.value }) {
      progress("[\(kind)] \(count) × error: \(text)")
    }
    let result = ClientResult(
      client: kind, mode: kind.hasSuffix("-poll") ? "poll" : "stream",
      pollInterval: kind.hasSuffix("-poll") ? pollInterval : nil,
      trips: trips, connections: connections, rate: rate, seconds: seconds, tripsStarted: started,
      updates: updates, updatesPerSecond: Double(updates) / seconds,
      updatesReceivedPerSecond: Double(updates + recorder.gaps.load(ordering: .relaxed)) / seconds, cpuSeconds: cpu,
      cpuSecondsPerMillionUpdates: updates > 0
        ? cpu / Double(updates + recorder.gaps.load(ordering: .relaxed)) * 1e6 : 0,
      rssBaselineBytes: baseline, rssBytes: rss, rssPerTripBytes: Double(rss - baseline) / Double(max(1, trips)),
      latencyP50Ms: latency.p50, latencyP99Ms: latency.p99, latencyP999Ms: latency.p999,
      latencyMaxMs: Double(recorder.maxMicros.load(ordering: .relaxed)) / 1000, latencySamples: latency.samples,
      gaps: recorder.gaps.load(ordering: .relaxed), duplicates: recorder.duplicates.load(ordering: .relaxed),
      restarts: recorder.restarts.load(ordering: .relaxed), errors: errors)
    let json = try JSONEncoder().encode(result)
    emit("RESULT " + String(decoding: json, as: UTF8.self))
    // Exit without closing tens of thousands of streams one by one (the server sees the connections
    // close); the figures are taken.
    Glibc.exit(0)
  }
}
