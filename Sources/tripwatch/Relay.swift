// Sources/tripwatch/Relay.swift - `tripwatch relay run|submit`: the trip relay on NATS JetStream

import ArgumentParser
import CLinuxSystem
import FleetEngineMessages
import HTTP2Transport
import JourneySharing
import Logging
import NATSClient
import Primitives
import Synchronization
import ToolSupport
import TripRelay

#if canImport(Glibc)
  import Glibc
#endif

struct Relay: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "relay",
    abstract: "Follow trips once per relay cluster on NATS JetStream; serve them over gRPC and JetStream.",
    subcommands: [RelayRun.self, RelaySubmit.self, RelayDemo.self])
}

/// Where the NATS cluster is.
struct NATSOptions: ParsableArguments {
  @Option(
    name: .customLong("nats"),
    help: "A NATS server URL, nats://HOST:PORT (repeat, or separate with commas, for a cluster).")
  var servers: [String] = ["nats://127.0.0.1:4222"]

  var serverList: [String] {
    servers.flatMap { $0.split(separator: ",").map(String.init) }.filter { !$0.isEmpty }
  }
}

struct RelaySubmit: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "submit",
    abstract: "Enqueue follow requests (on the FOLLOW work queue) for the relays to take.",
    discussion: """
      A trip whose request is still in the queue (waiting, or followed now) is not enqueued again. Prints \
      `submitted N, already pending M`. \(ToolExit.helpText)
      """)

  @Argument(help: "Trip names, providers/{provider}/trips/{trip}.")
  var tripNames: [String] = []

  @Option(name: .customLong("trips-file"), help: "Read trip names from this file, one per line; # starts a comment.")
  var tripsFile: String?

  @OptionGroup var nats: NATSOptions

  @Option(help: "Replicas of the streams, when this command creates them (1, or 3 on a 3-node cluster).")
  var replicas = 1

  @Option(help: "The provider whose relays' consumer to create along with the streams, when missing.")
  var provider: String?

  func run() async throws {
    cls_line_buffer_stdout()
    var names: [TripName] = []
    var raw = tripNames
    if let tripsFile {
      guard let text = readText(path: tripsFile) else { throw ToolFailure(.invalidInput, "cannot read \(tripsFile)") }
      for line in text.split(whereSeparator: \.isNewline) {
        let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let name = String(content.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        if !name.isEmpty { raw.append(name) }
      }
    }
    for text in raw {
      guard let name = TripName(parsing: text) else {
        throw ToolFailure(
          .invalidInput, "malformed trip name \(text.debugDescription): must be providers/{provider}/trips/{trip}")
      }
      names.append(name)
    }
    guard !names.isEmpty else { throw ValidationError("give at least one trip name") }
    var logger = Logger(label: "tripwatch.relay")
    // Closing the connection at the end logs a disconnect as a warning; only errors matter here.
    logger.logLevel = .error
    let connection: NATSConnection
    do {
      connection = try await NATSConnection.connect(
        NATSConnectionConfiguration(servers: nats.serverList, name: "tripwatch relay submit"), logger: logger)
    } catch {
      throw ToolFailure(.unavailable, "cannot connect to NATS \(nats.serverList): \(error)")
    }
    do {
      let jetStream = try connection.jetStream()
      var configuration = RelayConfiguration(
        relayID: "submit", natsServers: nats.serverList,
        upstream: JourneySharingConfiguration(host: "unused", port: 0, providerID: provider ?? names[0].providerID),
        replicas: replicas, logger: logger)
      configuration.downstream = nil
      try await TripRelay.ensureStreams(jetStream, configuration, updateExisting: false)
      let (submitted, pending) = try await TripRelay.submit(names, to: jetStream)
      print("submitted \(submitted), already pending \(pending)")
    } catch {
      await connection.close()
      throw ToolFailure(.callFailed, "\(error)")
    }
    await connection.close()
  }
}

/// Set by SIGTERM and SIGINT: the relay's main loop stops.
private let relayStopRequested = Atomic<Bool>(false)

struct RelayRun: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "run",
    abstract: "Run one relay: take follow requests from FOLLOW, follow each trip, publish to TRIPS, serve gRPC.",
    discussion: """
      Prints `listening on HOST:PORT` once the downstream gRPC server (journeysharing.v1 streaming GetTrip) \
      listens, then with --events one JSON line per follow that starts or stops \
      ({"event":"follow-start"|"follow-stop","trip":NAME,"relay":ID,"time":UNIX,…}), and a `relay-stats:` line \
      every --stats-interval seconds and at the end. SIGTERM or SIGINT hands every followed trip back to the \
      cluster (nak) and exits 0. \(ToolExit.helpText)
      """)

  @OptionGroup var nats: NATSOptions

  @OptionGroup var server: ServerOptions

  @Option(help: "The provider ID of the trips to follow.")
  var provider: String

  @Option(name: .customLong("relay-id"), help: "This relay's name (default: relay-PID).")
  var relayID: String?

  @Option(help: "stream, poll or auto (poll against the real Fleet Engine).")
  var mode: JourneySharingConfiguration.FetchMode = .auto

  @Option(name: .customLong("poll-interval"), help: "Seconds between polls.")
  var pollInterval = 5.0

  @Option(
    name: .customLong("max-requests-per-second"),
    help: "The most GetTrip requests per second this relay makes over all polled trips; 0: no cap.")
  var maxRequestsPerSecond = 100.0

  @Option(help: "Downstream gRPC address, HOST:PORT (port 0 picks one); none: no gRPC server.")
  var listen = "127.0.0.1:0"

  @Option(
    name: .customLong("max-concurrent-streams"),
    help:
      "SETTINGS_MAX_CONCURRENT_STREAMS per downstream connection: the trips one client connection can watch at once.")
  var maxConcurrentStreams: UInt32 = 10_000

  @Option(name: .customLong("max-trips"), help: "The most trips this relay follows at once.")
  var maxTrips = 1_000

  @Option(
    name: .customLong("cluster-max-ack-pending"),
    help:
      "MaxAckPending of the shared consumer: follow requests un-acked over the whole cluster (default 10 × --max-trips)."
  )
  var clusterMaxAckPending: Int?

  @Option(
    name: .customLong("ack-wait"), help: "Seconds without an in-progress ack before a request goes to another relay.")
  var ackWait = 30.0

  @Option(help: "Replicas of the streams and the consumer (1, or 3 on a 3-node cluster).")
  var replicas = 1

  @Option(name: .customLong("duplicate-window"), help: "Seconds the streams remember message IDs.")
  var duplicateWindow = 600.0

  @Flag(help: "Print one JSON line per follow start and stop.")
  var events = false

  @Option(name: .customLong("stats-interval"), help: "Seconds between relay-stats lines (0: only at exit).")
  var statsInterval = 10.0

  @Option(help: "Stop after this many seconds (default: until SIGTERM or SIGINT).")
  var duration: Double?

  @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
  var logLevel = "warning"

  func validate() throws {
    guard maxTrips > 0 else { throw ValidationError("--max-trips must be > 0") }
    guard maxConcurrentStreams > 0 else { throw ValidationError("--max-concurrent-streams must be > 0") }
    guard ackWait >= 1 else { throw ValidationError("--ack-wait must be ≥ 1") }
    guard pollInterval > 0 else { throw ValidationError("--poll-interval must be > 0") }
    guard replicas >= 1 && replicas <= 5 else { throw ValidationError("--replicas must be 1…5") }
    guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
    if listen != "none" && Self.listenAddress(listen) == nil {
      throw ValidationError("--listen must be HOST:PORT (port 0 picks one) or none")
    }
  }

  func run() async throws {
    cls_line_buffer_stdout()
    signal(SIGPIPE, SIG_IGN)
    let id = relayID ?? "relay-\(getpid())"
    var logger = Logger(label: "tripwatch.relay") { label in
      var handler = StreamLogHandler.standardError(label: label)
      handler.logLevel = .trace
      return handler
    }
    logger.logLevel = Logger.Level(rawValue: logLevel) ?? .warning
    logger[metadataKey: "relay"] = "\(id)"
    var upstream = try server.configuration(providerID: provider)
    upstream.fetchMode = mode
    upstream.pollInterval = .nanoseconds(Int64(pollInterval * 1e9))
    upstream.maxRequestsPerSecond = maxRequestsPerSecond > 0 ? maxRequestsPerSecond : nil
    upstream.deliveryThreads = 2
    var downstream: GRPCServerConfiguration?
    if listen != "none", let (host, port) = Self.listenAddress(listen) {
      downstream = GRPCServerConfiguration(host: host, port: port, maxConcurrentStreams: maxConcurrentStreams)
    }
    var configuration = RelayConfiguration(
      relayID: id, natsServers: nats.serverList, upstream: upstream, downstream: downstream, maxTrips: maxTrips,
      clusterMaxAckPending: clusterMaxAckPending, ackWait: .nanoseconds(Int64(ackWait * 1e9)), replicas: replicas,
      logger: logger)
    configuration.duplicateWindow = .nanoseconds(Int64(duplicateWindow * 1e9))
    let printEvents = events
    let relay: TripRelay
    do {
      relay = try await TripRelay.start(configuration) { event in
        guard printEvents else { return }
        print(Self.line(for: event, relay: id))
      }
    } catch {
      throw ToolFailure(.unavailable, "relay \(id) cannot start: \(error)")
    }
    if let port = relay.downstreamPort, let target = downstream {
      print("listening on \(target.host):\(port)")
    }
    signal(SIGTERM) { _ in relayStopRequested.store(true, ordering: .relaxed) }
    signal(SIGINT) { _ in relayStopRequested.store(true, ordering: .relaxed) }
    let runner = Task { await relay.run() }
    let started = unixTime()
    var lastStats = started
    while !relayStopRequested.load(ordering: .relaxed) {
      try? await Task.sleep(for: .milliseconds(200))
      let now = unixTime()
      if let duration, now - started >= duration { break }
      if statsInterval > 0 && now - lastStats >= statsInterval {
        lastStats = now
        print(Self.statsLine(relay.statistics(), relay: id))
      }
    }
    await relay.shutdown()
    await runner.value
    print(Self.statsLine(relay.statistics(), relay: id))
  }

  /// `HOST:PORT` or `[IPv6]:PORT` with a port 0…65535.
  static func listenAddress(_ text: String) -> (String, Int)? {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
      (0...65_535).contains(port)
    else { return nil }
    var host = String(text[..<colon])
    if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    return host.isEmpty ? nil : (host, port)
  }

  static func line(for event: RelayEvent, relay: String) -> String {
    switch event {
    case .followStarted(let trip, let delivery, let at):
      return JSONValue.object([
        ("event", .string("follow-start")), ("trip", .string(trip)), ("relay", .string(relay)),
        ("delivery", .int(Int(delivery))), ("time", .double(at)),
      ]).rendered
    case .followStopped(let trip, let reason, let at):
      return JSONValue.object([
        ("event", .string("follow-stop")), ("trip", .string(trip)), ("relay", .string(relay)),
        ("reason", .string(reason.rawValue)), ("time", .double(at)),
      ]).rendered
    }
  }

  static func statsLine(_ statistics: RelayStatistics, relay: String) -> String {
    "relay-stats: relay=\(relay) following=\(statistics.following) follows_started=\(statistics.followsStarted) "
      + "takeovers=\(statistics.takeovers) finished=\(statistics.finished) published=\(statistics.published) "
      + "duplicates=\(statistics.duplicates) publish_retries=\(statistics.publishRetries) "
      + "handed_over=\(statistics.handedOver) rejected=\(statistics.rejected) watchers=\(statistics.watchers)"
  }
}
