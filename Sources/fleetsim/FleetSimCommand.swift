// Sources/fleetsim/FleetSimCommand.swift - `fleetsim`: run the simulated Fleet Engine

import ArgumentParser
import CLinuxSystem
import CoreMetrics
import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import Logging
import Primitives
import Prometheus
import ServiceLifecycle
import ToolSupport
import UnixSignals

#if canImport(Glibc)
  import Glibc
#endif

@main
struct FleetSimTool: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "fleetsim",
    abstract: "A simulated Fleet Engine: trips moving on road-like routes, served over gRPC.",
    discussion: ToolExit.helpText,
    version: toolVersion,
    subcommands: [FleetSimCommand.self, TokenCommand.self],
    defaultSubcommand: FleetSimCommand.self)

  static func main() async { await runAsTool() }
}

struct FleetSimCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "serve",
    abstract: "Serve the simulated trips (what `fleetsim` with no subcommand does).",
    discussion: """
      Trips are named providers/{provider}/trips/trip-{i} for i in 0..<N. The state of every trip is a pure \
      function of --seed, the trip index and the time elapsed since --start-time, so a server restarted with \
      the same flags continues the same trips. The first line of output is `listening on HOST:PORT`; stats \
      lines (`stats: key=value …`) follow every --stats-interval seconds and at exit. With --metrics-listen, the \
      second line is `metrics on HOST:PORT`, where `GET /metrics` answers the metrics in Prometheus' text format.

      The server answers gRPC's health service (grpc.health.v1.Health: Check and Watch) for "", \
      maps.fleetengine.v1.TripService and journeysharing.v1.TripStreamService. SIGTERM or SIGINT drains it: health \
      turns NOT_SERVING, every connection gets GOAWAY, open calls get --drain-timeout seconds to finish (those left \
      end with UNAVAILABLE), then the final stats line is printed and fleetsim exits 0.

      With --jwt-secret or --jwt-public-key, every call needs a token whose claims pass Fleet Engine's checks: \
      aud https://fleetengine.googleapis.com/, iss equal to sub (and to --jwt-issuer when given), iat and exp \
      at most an hour apart, iat at most 30 s ahead, exp not passed; and authorization.tripid the trip or *. \(ToolExit.helpText)
      """)

  @Option(help: "Address to listen on, HOST:PORT (port 0 picks one).")
  var listen = "127.0.0.1:0"

  @Option(help: "Number of trips.")
  var trips = 10

  @Option(help: "Provider ID in trip names.")
  var provider = "demo"

  @Option(help: "Seed of the simulation.")
  var seed: UInt64 = 1

  @Option(name: .customLong("start-time"), help: "Unix time the simulation started at (default: now).")
  var startTime: Double?

  @Option(help: "Simulated seconds per real second.")
  var speedup = 1.0

  @Option(name: .customLong("update-interval"), help: "Seconds between stream messages.")
  var updateInterval = 1.0

  @Option(name: .customLong("jwt-secret"), help: "Require HS256 JWTs signed with this secret (visible in `ps`).")
  var jwtSecret: String?

  @Option(name: .customLong("jwt-secret-file"), help: "Require HS256 JWTs signed with the secret in this file.")
  var jwtSecretFile: String?

  @Option(name: .customLong("jwt-public-key"), help: "Require RS256 JWTs verified with this PEM public key file.")
  var jwtPublicKey: String?

  @Option(
    name: .customLong("jwt-issuer"),
    help: "Require JWTs whose iss (and sub) is this issuer, a service account's email (default: any iss equal to sub).")
  var jwtIssuer: String?

  @Option(name: .customLong("tls-cert"), help: "Serve TLS with this PEM certificate chain.")
  var tlsCert: String?

  @Option(name: .customLong("tls-key"), help: "The PEM private key for --tls-cert.")
  var tlsKey: String?

  @Option(name: .customLong("fail-rate"), help: "Fraction of calls answered with --fail-code (0…1).")
  var failRate = 0.0

  @Option(name: .customLong("fail-code"), help: "Status injected by --fail-rate, by name or number.")
  var failCode = "UNAVAILABLE"

  @Option(name: .customLong("reset-rate"), help: "Chance per stream update of resetting the stream (0…1).")
  var resetRate = 0.0

  @Option(name: .customLong("goaway-every"), help: "Send GOAWAY on every connection every S seconds.")
  var goAwayEvery: Double?

  @Option(name: .customLong("drop-every"), help: "Drop every connection every S seconds.")
  var dropEvery: Double?

  @Option(help: "Seconds of latency added to every call.")
  var latency = 0.0

  @Option(
    name: .customLong("plan-cache"),
    help: "Trip plans kept between calls (10-25 KB each); raise it to the number of trips polled.")
  var planCache = 4_096

  @Option(name: .customLong("stats-interval"), help: "Print a stats line every S seconds (0: only at exit).")
  var statsInterval = 0.0

  @Option(help: "Drain and exit after S seconds (default: run until SIGINT or SIGTERM).")
  var duration: Double?

  @Option(
    name: .customLong("drain-timeout"),
    help: "Seconds open calls get to finish on SIGTERM or SIGINT before they are ended with UNAVAILABLE.")
  var drainTimeout = 5.0

  @Option(
    name: .customLong("metrics-listen"),
    help: "Serve metrics in Prometheus' text format on HOST:PORT at /metrics (port 0 picks one).")
  var metricsListen: String?

  @Option(
    name: .customLong("load-rate"),
    help: "Load generation: after the full trip, send each stream small updates at this rate per second, forever.")
  var loadRate: Double?

  @Flag(
    name: .customLong("load-saturate"),
    help: "Load generation: send each stream small updates as fast as its flow-control window allows.")
  var loadSaturate = false

  @OptionGroup(title: "Limits on clients") var limits: ServerLimitOptions

  func validate() throws {
    guard trips >= 0 else { throw ValidationError("--trips must be ≥ 0") }
    guard speedup > 0, updateInterval > 0 else { throw ValidationError("--speedup and --update-interval must be > 0") }
    guard (0...1).contains(failRate), (0...1).contains(resetRate) else {
      throw ValidationError("--fail-rate and --reset-rate are fractions in 0…1")
    }
    guard Self.statusCode(failCode) != nil else { throw ValidationError("--fail-code: unknown status \(failCode)") }
    guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
    guard [jwtSecret != nil, jwtSecretFile != nil, jwtPublicKey != nil].filter({ $0 }).count <= 1 else {
      throw ValidationError("give one of --jwt-secret, --jwt-secret-file, --jwt-public-key")
    }
    if let jwtIssuer {
      guard jwtSecret != nil || jwtSecretFile != nil || jwtPublicKey != nil else {
        throw ValidationError("--jwt-issuer needs --jwt-secret, --jwt-secret-file or --jwt-public-key")
      }
      guard !jwtIssuer.isEmpty else { throw ValidationError("--jwt-issuer must not be empty") }
    }
    guard TripName(providerID: provider, tripID: "trip-0") != nil else {
      throw ValidationError("--provider must be a valid provider ID (lowercase letters, digits, hyphens)")
    }
    _ = try Self.hostAndPort(listen)
    guard loadRate == nil || !loadSaturate else {
      throw ValidationError("give --load-rate or --load-saturate, not both")
    }
    if let loadRate, !(loadRate > 0 && loadRate.isFinite) { throw ValidationError("--load-rate must be > 0") }
    guard drainTimeout >= 0, drainTimeout.isFinite else { throw ValidationError("--drain-timeout must be ≥ 0") }
    if let duration, !(duration >= 0 && duration.isFinite) { throw ValidationError("--duration must be ≥ 0") }
    if let metricsListen, ListenAddress.parse(metricsListen) == nil {
      throw ValidationError("--metrics-listen must be HOST:PORT")
    }
  }

  static func statusCode(_ text: String) -> GRPCStatusCode? {
    if let number = Int(text) { return GRPCStatusCode(rawValue: number) }
    return GRPCStatusCode.allCases.first { $0.name == text.uppercased() }
  }

  static func hostAndPort(_ text: String) throws -> (String, Int) {
    guard let address = ListenAddress.parse(text) else { throw ValidationError("--listen must be HOST:PORT") }
    return address
  }

  func run() async throws {
    cls_line_buffer_stdout()
    let (host, port) = try Self.hostAndPort(listen)
    var auth: FleetSimConfiguration.Auth?
    if let jwtSecret { auth = .hs256(secret: Array(jwtSecret.utf8), expectedIssuer: jwtIssuer) }
    if let jwtSecretFile {
      auth = .hs256(secret: try readSecret(jwtSecretFile, option: "--jwt-secret-file"), expectedIssuer: jwtIssuer)
    }
    if let jwtPublicKey {
      let pem = String(decoding: try readCredentialFile(jwtPublicKey, option: "--jwt-public-key"), as: UTF8.self)
      auth = .rs256(publicKeyPEM: pem, expectedIssuer: jwtIssuer)
    }
    var simulation = SimulationConfiguration()
    simulation.provider = provider
    simulation.tripCount = trips
    simulation.seed = seed
    simulation.startTime = startTime ?? unixTime()
    simulation.speedup = speedup
    let faults = FaultInjection(
      failureRate: failRate, failureCode: Self.statusCode(failCode) ?? .unavailable, streamResetRate: resetRate,
      goAwayInterval: goAwayEvery.map(Duration.clampedSeconds), dropInterval: dropEvery.map(Duration.clampedSeconds),
      addedLatency: Duration.clampedSeconds(latency), seed: seed)
    var load: LoadGeneration?
    if let loadRate { load = LoadGeneration(updatesPerSecond: loadRate) }
    if loadSaturate { load = LoadGeneration(updatesPerSecond: nil) }
    let configuration = FleetSimConfiguration(
      simulation: simulation, updateInterval: Duration.clampedSeconds(updateInterval), auth: auth, faults: faults,
      load: load,
      shutdownGracePeriod: Duration.clampedSeconds(drainTimeout), planCacheCapacity: planCache)
    var tls: TLSServerConfiguration?
    if let tlsCert, let tlsKey { tls = TLSServerConfiguration(certificateChainFile: tlsCert, privateKeyFile: tlsKey) }
    signal(SIGPIPE, SIG_IGN)
    // Metrics go to a registry of this run's own, which the endpoint serves (nothing is recorded without one).
    var registry: PrometheusCollectorRegistry?
    var metricsServer: MetricsHTTPServer?
    if let metricsListen {
      let prometheus = PrometheusCollectorRegistry()
      registry = prometheus
      metricsServer = try MetricsHTTPServer(listen: metricsListen) { prometheus.emitToBuffer() }
    }
    defer { metricsServer?.stop() }
    let sim: FleetSim
    do {
      var listen = GRPCServerConfiguration(host: host, port: port, tls: tls)
      limits.apply(to: &listen)
      sim = try FleetSim(
        configuration: configuration, listen: listen, logger: Logger(label: "journeysharing.fleetsim"),
        metricsFactory: registry.map { PrometheusMetricsFactory(registry: $0) } ?? NOOPMetricsHandler.instance)
    } catch {
      // The TLS certificate or key, or a JWT key, could not be used.
      throw ToolFailure(.invalidInput, error.message)
    }
    // SIGTERM and SIGINT trigger the group's graceful shutdown, which drains the server. The group traps them
    // before it runs the service that prints `listening on`: a SIGTERM sent as soon as that line is read still
    // ends in a drain and the final stats line, not in the default action (death without one).
    var services = [
      ServiceGroupConfiguration.ServiceConfiguration(
        service: ServeService(
          sim: sim, listeningHost: host, metricsAddress: metricsServer?.address, statsInterval: statsInterval))
    ]
    if let duration {
      services.append(
        ServiceGroupConfiguration.ServiceConfiguration(
          service: DurationService(duration: Duration.clampedSeconds(duration)),
          successTerminationBehavior: .gracefullyShutdownGroup))
    }
    var logger = Logger(label: "fleetsim")
    logger.logLevel = .notice
    let group = ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    try await group.run()
  }

  /// The server's connection and request-bound counters, as `key=value` pairs for the stats line.
  static func describe(_ stats: GRPCServerStats) -> String {
    "connections=\(stats.connectionsAccepted) connections_open=\(stats.openConnections) "
      + "connections_refused=\(stats.connectionsRefused) connections_closed_idle=\(stats.connectionsClosedIdle) "
      + "accept_pauses=\(stats.acceptPauses) requests_refused=\(stats.requestsRefused) "
      + "request_bytes=\(stats.bufferedRequestBytes) peak_request_bytes=\(stats.peakBufferedRequestBytes) "
      + "calls_started=\(stats.callsStarted) peer_connections_refused=\(stats.peerConnectionsRefused) "
      + "handshakes_timed_out=\(stats.handshakesTimedOut) requests_timed_out=\(stats.requestsTimedOut) "
      + "connections_rate_limited=\(stats.connectionsRateLimited) header_bytes=\(stats.heldHeaderBytes) "
      + "read_pauses=\(stats.readPauses)"
  }
}

/// Serves the simulation until graceful shutdown, then drains it and prints the final stats line. Prints
/// `listening on HOST:PORT` once bound (and `metrics on HOST:PORT` when there is an endpoint), and a stats
/// line every `statsInterval` seconds when that is above 0.
struct ServeService: Service {
  let sim: FleetSim
  let listeningHost: String
  let metricsAddress: String?
  let statsInterval: Double

  func run() async throws {
    let bound: Int
    do {
      bound = try sim.start()
    } catch {
      throw ToolFailure(.cannotListen, error.message)
    }
    print("listening on \(listeningHost.contains(":") ? "[\(listeningHost)]" : listeningHost):\(bound)")
    if let metricsAddress { print("metrics on \(metricsAddress)") }
    let sim = sim
    let interval = statsInterval
    try await withThrowingTaskGroup(of: Void.self) { group in
      if interval > 0 {
        group.addTask {
          while true {
            try await Task.sleep(for: Duration.clampedSeconds(interval))
            print(await Self.statsLine(sim))
          }
        }
      }
      // Serves until graceful shutdown, then drains; returns once the connections are closed.
      try await sim.run()
      group.cancelAll()
    }
    print(await Self.statsLine(sim))
  }

  static func statsLine(_ sim: FleetSim) async -> String {
    "stats: \(await sim.stats()) \(FleetSimCommand.describe(await sim.serverStats()))"
  }
}

/// Returns after `duration` (or at graceful shutdown), which shuts the group down gracefully: `--duration`.
struct DurationService: Service {
  let duration: Duration

  func run() async throws {
    try? await cancelWhenGracefulShutdown { try await Task.sleep(for: duration) }
  }
}

/// The secret in `path`, without a trailing newline; throws ``ToolFailure`` (invalid input) when unreadable or empty.
func readSecret(_ path: String, option: String) throws -> [UInt8] {
  var bytes = try readCredentialFile(path, option: option)
  while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { bytes.removeLast() }
  guard !bytes.isEmpty else { throw ToolFailure(.invalidInput, "\(option) \(path) is empty") }
  return bytes
}
