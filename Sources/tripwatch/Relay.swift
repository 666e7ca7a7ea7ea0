// Sources/tripwatch/Relay.swift - `tripwatch relay run|submit|inspect`: the trip relay on NATS JetStream

import ArgumentParser
import CLinuxSystem
import CoreMetrics
import FleetEngineMessages
import HTTP2Transport
import JSONWebToken
import JourneySharing
import Logging
import NATSClient
import Primitives
import Prometheus
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
    subcommands: [
      RelayRun.self, RelaySubmit.self, RelayInspect.self, RelayPermissionsCommand.self, RelayCeiling.self,
      RelayDemo.self,
    ])
}

/// Where the NATS cluster is and how to authenticate to it, as NATS' own tools take it.
struct NATSOptions: ParsableArguments {
  @Option(
    name: .customLong("nats"),
    help: """
      A NATS server URL, nats://HOST:PORT or tls://HOST:PORT (repeat, or separate with commas, for a cluster). \
      Default: $NATS_URL, else nats://127.0.0.1:4222. Credentials in a URL are used, never printed.
      """)
  var servers: [String] = []

  @Option(
    name: .customLong("nats-creds"),
    help: "A NATS credentials file (.creds: user JWT and nkey seed). Default: $NATS_CREDS.")
  var credentialsFile: String?

  @Option(name: .customLong("nats-nkey"), help: "A file holding a NATS user nkey seed (SU…).")
  var nkeySeedFile: String?

  @Option(name: .customLong("nats-token-file"), help: "A file holding a NATS token.")
  var tokenFile: String?

  @Option(name: .customLong("nats-user"), help: "A NATS user; its password comes from --nats-password-file.")
  var user: String?

  @Option(name: .customLong("nats-password-file"), help: "A file holding the --nats-user's password.")
  var passwordFile: String?

  @Option(name: .customLong("nats-ca"), help: "Trust only the CA certificates in this PEM file for NATS' TLS.")
  var caFile: String?

  @Option(name: .customLong("nats-cert"), help: "A PEM client certificate for NATS servers that verify clients.")
  var certificateFile: String?

  @Option(name: .customLong("nats-key"), help: "The PEM private key of --nats-cert.")
  var keyFile: String?

  func validate() throws {
    let credentials = [credentialsFile != nil, nkeySeedFile != nil, tokenFile != nil, user != nil]
    guard credentials.filter({ $0 }).count <= 1 else {
      throw ValidationError("give one of --nats-creds, --nats-nkey, --nats-token-file, --nats-user")
    }
    guard (user == nil) == (passwordFile == nil) else {
      throw ValidationError("--nats-user and --nats-password-file go together")
    }
    guard (certificateFile == nil) == (keyFile == nil) else {
      throw ValidationError("--nats-cert and --nats-key go together")
    }
    do {
      _ = try NATSConnectionConfiguration.servers(fromURLs: serverList)
    } catch {
      throw ValidationError("--nats: \(error.message)")
    }
  }

  /// The URLs: --nats, else $NATS_URL, else the local default.
  var serverList: [String] {
    let given = servers.isEmpty ? [environment("NATS_URL") ?? "nats://127.0.0.1:4222"] : servers
    return given.flatMap { $0.split(separator: ",").map(String.init) }.filter { !$0.isEmpty }
  }

  /// The servers as they may be printed.
  var redactedServers: String { serverList.map(NATSServerURL.redacted).joined(separator: ",") }

  /// The connection configuration; throws ``ToolFailure`` (invalid input) for a credential file that cannot be used.
  func connection(name: String) throws -> NATSConnectionConfiguration {
    var configuration = NATSConnectionConfiguration(servers: serverList, name: name)
    if let credentialsFile = credentialsFile
      ?? (tokenFile == nil && nkeySeedFile == nil && user == nil ? environment("NATS_CREDS") : nil)
    {
      _ = try readCredentialFile(credentialsFile, option: "--nats-creds")
      configuration.credentials = .credentialsFile(path: credentialsFile)
    }
    if let nkeySeedFile {
      let seed = try readCredentialText(nkeySeedFile, option: "--nats-nkey")
      do {
        configuration.credentials = .nkey(publicKey: try NKey(seed: seed).publicKey, seedFile: nkeySeedFile)
      } catch {
        throw ToolFailure(.invalidInput, "--nats-nkey \(nkeySeedFile): \(error)")
      }
    }
    if let tokenFile {
      configuration.credentials = .token(try readCredentialText(tokenFile, option: "--nats-token-file"))
    }
    if let user, let passwordFile {
      configuration.credentials = .userPassword(
        user: user, password: try readCredentialText(passwordFile, option: "--nats-password-file"))
    }
    if caFile != nil || certificateFile != nil {
      configuration.tls = NATSTLSConfiguration(caFile: caFile, certificateFile: certificateFile, keyFile: keyFile)
    }
    return configuration
  }

  private func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    let text = String(cString: value)
    return text.isEmpty ? nil : text
  }
}

/// Which relay cluster's streams: the cluster name and the provider, and how `TRIPS` is split.
struct RelayNameOptions: ParsableArguments {
  @Option(help: "The relay cluster's name: an environment sharing the NATS (1 to 32 letters, digits, - and _).")
  var cluster = "main"

  @Option(help: "The provider ID of the trips.")
  var provider: String?

  @Option(
    name: .customLong("trips-partitions"),
    help: "Split TRIPS into this many streams by the NATS server's partition subject mapping (see the README).")
  var tripsPartitions = 1

  func names(provider fallback: String? = nil) throws -> RelayNames {
    guard let provider = provider ?? fallback else { throw ValidationError("--provider is required") }
    do {
      return try RelayNames(cluster: cluster, providerID: provider, tripPartitions: tripsPartitions)
    } catch {
      throw ValidationError(error.description)
    }
  }
}

struct RelaySubmit: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "submit",
    abstract: "Enqueue follow requests (on the cluster's FOLLOW work queue) for the relays to take.",
    discussion: """
      A trip whose request is still in the queue (waiting, or followed now) is not enqueued again. Prints \
      `submitted N, already pending M`. The trips must be of one provider (--provider, or the first trip's). \
      \(ToolExit.helpText)
      """)

  @Argument(help: "Trip names, providers/{provider}/trips/{trip}.")
  var tripNames: [String] = []

  @Option(name: .customLong("trips-file"), help: "Read trip names from this file, one per line; # starts a comment.")
  var tripsFile: String?

  @OptionGroup var nats: NATSOptions

  @OptionGroup var relayNames: RelayNameOptions

  @Option(help: "Replicas of the streams, when this command creates them (1, or 3 on a 3-node cluster).")
  var replicas = 1

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
    guard let first = names.first else { throw ValidationError("give at least one trip name") }
    let streamNames = try relayNames.names(provider: first.providerID)
    if let other = names.first(where: { $0.providerID != streamNames.providerID }) {
      throw ToolFailure(.invalidInput, "trip \(other) is not of provider \(streamNames.providerID)")
    }
    var logger = Logger(label: "tripwatch.relay")
    // Closing the connection at the end logs a disconnect as a warning; only errors matter here.
    logger.logLevel = .error
    let connection: NATSConnection
    do {
      connection = try await NATSConnection.connect(
        try nats.connection(name: "tripwatch relay submit"), logger: logger)
    } catch let failure as ToolFailure {
      throw failure
    } catch {
      throw ToolFailure(.unavailable, "cannot connect to NATS \(nats.redactedServers): \(error)")
    }
    do {
      let jetStream = try connection.jetStream()
      var configuration = RelayConfiguration(
        relayID: "submit", nats: connection.configuration, names: streamNames,
        upstream: JourneySharingConfiguration(host: "unused", port: 0, providerID: streamNames.providerID),
        authorization: .insecureNoAuthorization, replicas: replicas, logger: logger)
      configuration.downstream = nil
      try await TripRelay.ensureStreams(jetStream, configuration, updateExisting: false)
      let (submitted, pending) = try await TripRelay.submit(names, names: streamNames, to: jetStream)
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
      Prints `listening on HOST:PORT` once the downstream gRPC server (journeysharing.v1 streaming GetTrip and \
      grpc.health.v1) listens, `metrics on HOST:PORT` with --metrics-listen, then with --events one JSON line per \
      follow that starts or stops ({"event":"follow-start"|"follow-stop","trip":NAME,"relay":ID,"time":UNIX,…}), \
      and a `relay-stats:` line every --stats-interval seconds and at the end. NATS unreachable at start is not \
      an error: the relay keeps trying, its health NOT_SERVING until NATS and its streams are there. Watchers \
      need a consumer token (--jwt-public-key, --jwks-file or --jwt-secret-file) unless --insecure-no-auth. \
      SIGTERM or SIGINT hands every followed trip back to the cluster (nak) and exits 0. \(ToolExit.helpText)
      """)

  @OptionGroup var nats: NATSOptions

  @OptionGroup var relayNames: RelayNameOptions

  @OptionGroup var server: ServerOptions

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

  @Option(name: .customLong("listen-cert"), help: "Serve TLS downstream with this PEM certificate chain.")
  var listenCertificate: String?

  @Option(name: .customLong("listen-key"), help: "The PEM private key of --listen-cert.")
  var listenKey: String?

  @Option(
    name: .customLong("listen-client-ca"), help: "With --listen-cert: require client certificates of this CA (mTLS).")
  var listenClientCA: String?

  @Option(
    name: .customLong("jwt-public-key"),
    help: "Accept RS256 consumer tokens verified with this PEM public key or certificate (repeatable).")
  var jwtPublicKeys: [String] = []

  @Option(
    name: .customLong("jwks-file"), help: "Accept RS256 consumer tokens verified with the keys of this JWKS file.")
  var jwksFile: String?

  @Option(
    name: .customLong("jwt-secret-file"), help: "Accept HS256 consumer tokens signed with the secret in this file.")
  var jwtSecretFile: String?

  @Option(
    name: .customLong("jwt-issuer"), help: "Require tokens whose iss (and sub) is this (default: any iss equal to sub)."
  )
  var jwtIssuer: String?

  @Option(name: .customLong("jwt-audience"), help: "The aud tokens must carry.")
  var jwtAudience = ConsumerTokenVerifier.fleetEngineAudience

  @Flag(name: .customLong("insecure-no-auth"), help: "Serve watchers without authorization (logged as a warning).")
  var insecureNoAuth = false

  @OptionGroup(title: "Limits on downstream clients (--max-concurrent-streams defaults to 10,000 here)")
  var limits: ServerLimitOptions

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

  @Option(
    name: .customLong("checkpoint-interval"), help: "Write a followed trip's whole state every this many updates.")
  var checkpointInterval = 32

  @Option(name: .customLong("submit-burst"), help: "Follow requests one caller may enqueue by watching, at once.")
  var submitBurst = 100

  @Option(name: .customLong("submits-per-second"), help: "…and then per second.")
  var submitsPerSecond = 10.0

  @Option(name: .customLong("refusal-ttl"), help: "Seconds a trip upstream refused is answered without asking again.")
  var refusalTTL = 60.0

  @Option(
    name: .customLong("max-joins-per-caller"),
    help: "Watches of trips new to this relay one caller may have under way at once (each costs reads).")
  var maxJoinsPerCaller = 1_000

  @Option(
    name: .customLong("watcher-buffer-limit"),
    help: "Bytes of a watcher's unsent responses beyond which it gets only the latest state (it does not read).")
  var watcherBufferLimit = 64 << 10

  @Option(name: .customLong("watcher-stall-timeout"), help: "Seconds a watcher may stay over that before it is ended.")
  var watcherStallTimeout = 60.0

  @Option(
    name: .customLong("trips-max-age"),
    help: "Hours TRIPS and TRIPSTATE keep a message (set when the relay creates or updates the streams).")
  var tripsMaxAgeHours = 24.0

  @Option(
    name: .customLong("first-state-timeout"), help: "Seconds a watcher waits for a trip nobody published yet.")
  var firstStateTimeout = 60.0

  @Option(
    name: .customLong("metrics-listen"),
    help: "Serve metrics in Prometheus' text format on HOST:PORT at /metrics (port 0 picks one).")
  var metricsListen: String?

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
    guard ackWait >= 1 else { throw ValidationError("--ack-wait must be ≥ 1") }
    guard pollInterval > 0 else { throw ValidationError("--poll-interval must be > 0") }
    guard replicas >= 1 && replicas <= 5 else { throw ValidationError("--replicas must be 1…5") }
    guard checkpointInterval >= 1 else { throw ValidationError("--checkpoint-interval must be ≥ 1") }
    guard tripsMaxAgeHours > 0, tripsMaxAgeHours <= 24 * 365 * 10 else {
      throw ValidationError("--trips-max-age must be more than 0 hours and at most ten years")
    }
    guard maxJoinsPerCaller >= 1, watcherBufferLimit >= 1_024, watcherStallTimeout > 0, firstStateTimeout > 0 else {
      throw ValidationError(
        "--max-joins-per-caller ≥ 1, --watcher-buffer-limit ≥ 1024, --watcher-stall-timeout and --first-state-timeout > 0"
      )
    }
    guard submitBurst >= 1, submitsPerSecond > 0, refusalTTL >= 0 else {
      throw ValidationError("--submit-burst, --submits-per-second must be positive, --refusal-ttl not negative")
    }
    guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
    _ = try relayNames.names()
    if listen != "none" && ListenAddress.parse(listen) == nil {
      throw ValidationError("--listen must be HOST:PORT (port 0 picks one) or none")
    }
    guard (listenCertificate == nil) == (listenKey == nil) else {
      throw ValidationError("--listen-cert and --listen-key go together")
    }
    if listenClientCA != nil && listenCertificate == nil {
      throw ValidationError("--listen-client-ca needs --listen-cert")
    }
    let keys = !jwtPublicKeys.isEmpty || jwksFile != nil || jwtSecretFile != nil
    if listen != "none" {
      guard keys != insecureNoAuth else {
        throw ValidationError(
          insecureNoAuth
            ? "--insecure-no-auth and token keys (--jwt-public-key, --jwks-file, --jwt-secret-file) exclude each other"
            : "watchers need authorization: give --jwt-public-key, --jwks-file or --jwt-secret-file, or --insecure-no-auth"
        )
      }
    }
    if let metricsListen, ListenAddress.parse(metricsListen) == nil {
      throw ValidationError("--metrics-listen must be HOST:PORT")
    }
  }

  /// The consumer-token verifier of the --jwt-* and --jwks-file options.
  func verifier() throws -> ConsumerTokenVerifier {
    var keys: [ConsumerTokenVerifier.Key] = []
    for path in jwtPublicKeys {
      let pem = String(decoding: try readCredentialFile(path, option: "--jwt-public-key"), as: UTF8.self)
      keys.append(ConsumerTokenVerifier.Key(.rs256(publicKeyPEM: pem)))
    }
    if let jwksFile {
      do {
        keys += try JSONWebKeySet.keys(
          fromJSON: try readCredentialFile(jwksFile, option: "--jwks-file", maxBytes: 1 << 20))
      } catch let error as JWTError {
        throw ToolFailure(.invalidInput, "--jwks-file \(jwksFile): \(error)")
      }
    }
    if let jwtSecretFile {
      var secret = try readCredentialFile(jwtSecretFile, option: "--jwt-secret-file")
      while let last = secret.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { secret.removeLast() }
      guard secret.count >= 32 else {
        throw ToolFailure(.invalidInput, "--jwt-secret-file \(jwtSecretFile): an HS256 secret needs at least 32 bytes")
      }
      keys.append(ConsumerTokenVerifier.Key(.hs256(secret: secret)))
    }
    return ConsumerTokenVerifier(keys: keys, audience: jwtAudience, expectedIssuer: jwtIssuer)
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
    let names = try relayNames.names()
    var upstream = try server.configuration(providerID: names.providerID)
    upstream.fetchMode = mode
    upstream.pollInterval = .nanoseconds(Int64(pollInterval * 1e9))
    upstream.maxRequestsPerSecond = maxRequestsPerSecond > 0 ? maxRequestsPerSecond : nil
    upstream.deliveryThreads = 2
    var downstream: GRPCServerConfiguration?
    if listen != "none", let (host, port) = ListenAddress.parse(listen) {
      var tls: TLSServerConfiguration?
      if let listenCertificate, let listenKey {
        tls = TLSServerConfiguration(
          certificateChainFile: listenCertificate, privateKeyFile: listenKey, clientCAFile: listenClientCA)
      }
      // One client connection may watch thousands of trips: 10,000 streams by default, not the server's 1000.
      var configuration = GRPCServerConfiguration(host: host, port: port, tls: tls, maxConcurrentStreams: 10_000)
      limits.apply(to: &configuration)
      downstream = configuration
    }
    let authorization: DownstreamAuthorization = insecureNoAuth ? .insecureNoAuthorization : .verified(try verifier())
    // Metrics go to a registry of this run's own, which the endpoint serves (nothing is recorded without one).
    var metricsServer: MetricsHTTPServer?
    var factory: (any MetricsFactory)?
    if let metricsListen {
      let registry = PrometheusCollectorRegistry()
      factory = PrometheusMetricsFactory(registry: registry)
      metricsServer = try MetricsHTTPServer(listen: metricsListen) { registry.emitToBuffer() }
    }
    defer { metricsServer?.stop() }
    upstream.metricsFactory = factory ?? NOOPMetricsHandler.instance
    var configuration = RelayConfiguration(
      relayID: id, nats: try nats.connection(name: "relay \(id)"), names: names, upstream: upstream,
      downstream: downstream, authorization: authorization, maxTrips: maxTrips,
      clusterMaxAckPending: clusterMaxAckPending, ackWait: .nanoseconds(Int64(ackWait * 1e9)), replicas: replicas,
      logger: logger)
    configuration.duplicateWindow = .nanoseconds(Int64(duplicateWindow * 1e9))
    configuration.checkpointInterval = checkpointInterval
    configuration.submitBurstPerCaller = submitBurst
    configuration.submitsPerSecondPerCaller = submitsPerSecond
    configuration.refusalTTL = .nanoseconds(Int64(refusalTTL * 1e9))
    configuration.maxJoinsInProgressPerCaller = maxJoinsPerCaller
    configuration.watcherBufferLimit = watcherBufferLimit
    configuration.watcherStallTimeout = .nanoseconds(Int64(watcherStallTimeout * 1e9))
    configuration.tripsMaxAge = .nanoseconds(Int64(tripsMaxAgeHours * 3_600e9))
    configuration.firstStateTimeout = .nanoseconds(Int64(firstStateTimeout * 1e9))
    configuration.metricsFactory = factory ?? NOOPMetricsHandler.instance
    let printEvents = events
    let relay: TripRelay
    do {
      relay = try await TripRelay.start(configuration) { event in
        guard printEvents else { return }
        print(Self.line(for: event, relay: id))
      }
    } catch let error as RelayConfigurationError {
      throw ToolFailure(.usage, "relay \(id): \(error)")
    } catch {
      throw ToolFailure(.cannotListen, "relay \(id) cannot start: \(error)")
    }
    if let port = relay.downstreamPort, let target = downstream {
      print("listening on \(target.host):\(port)")
    }
    if let metricsServer { print("metrics on \(metricsServer.address)") }
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
        print(Self.statsLine(relay.statistics(), relay: id, ready: relay.isReady))
      }
    }
    await relay.shutdown()
    await runner.value
    print(Self.statsLine(relay.statistics(), relay: id, ready: relay.isReady))
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

  static func statsLine(_ statistics: RelayStatistics, relay: String, ready: Bool) -> String {
    "relay-stats: relay=\(relay) ready=\(ready) following=\(statistics.following) "
      + "follows_started=\(statistics.followsStarted) takeovers=\(statistics.takeovers) "
      + "finished=\(statistics.finished) published=\(statistics.published) duplicates=\(statistics.duplicates) "
      + "publish_retries=\(statistics.publishRetries) handed_over=\(statistics.handedOver) "
      + "leases_lost=\(statistics.leasesLost) rejected=\(statistics.rejected) released=\(statistics.released) "
      + "watchers=\(statistics.watchers) upstream_updates=\(statistics.upstreamUpdates)"
  }
}

struct RelayInspect: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "inspect",
    abstract: "Read a relay cluster's TRIPS and FOLLOW and print what they hold, per trip.",
    discussion: """
      Reads every TRIPS partition from its first message to its last, then prints one JSON line per trip \
      ({"trip":NAME,"messages":N,"finals":N,"final_status":S,"final_relay":ID,"deliveries":[…]}) and a last \
      line `inspect: trips=N finals=N duplicated_finals=N messages=N follow_messages=N follow_ack_pending=N \
      follow_pending=N follow_last_seq=N follow_ack_floor=N` (FOLLOW's last stream sequence, and the stream \
      sequence at or below which its consumer has every request acked). \(ToolExit.helpText)
      """)

  @OptionGroup var nats: NATSOptions

  @OptionGroup var relayNames: RelayNameOptions

  func run() async throws {
    cls_line_buffer_stdout()
    let names = try relayNames.names()
    var logger = Logger(label: "tripwatch.relay")
    logger.logLevel = .error
    let connection: NATSConnection
    do {
      connection = try await NATSConnection.connect(
        try nats.connection(name: "tripwatch relay inspect"), logger: logger)
    } catch let failure as ToolFailure {
      throw failure
    } catch {
      throw ToolFailure(.unavailable, "cannot connect to NATS \(nats.redactedServers): \(error)")
    }
    defer { Task { await connection.close() } }
    struct Record {
      var messages = 0
      var finals = 0
      var finalStatus = ""
      var finalRelay = ""
      var deliveries = Set<Int>()
    }
    var records: [String: Record] = [:]
    var total = 0
    do {
      let jetStream = try connection.jetStream()
      for stream in names.tripsStreams {
        for message in try await jetStream.readStream(stream, timeout: .seconds(10)) {
          total += 1
          let trip = message.headers[RelayNaming.tripNameHeader] ?? message.subject
          var record = records[trip, default: Record()]
          record.messages += 1
          if let delivery = message.headers[RelayNaming.deliveryHeader].flatMap(Int.init) {
            record.deliveries.insert(delivery)
          }
          if message.headers[RelayNaming.finalHeader] == "true" {
            record.finals += 1
            record.finalStatus = (try? TripUpdate(serializedBytes: message.data))?.trip?.tripStatus.protoName ?? "?"
            record.finalRelay = message.headers[RelayNaming.relayHeader] ?? ""
          }
          records[trip] = record
        }
      }
      let follow = try await jetStream.streamInfo(names.followStream)
      let consumer = try await jetStream.consumerInfo(stream: names.followStream, consumer: names.followConsumer)
      for (trip, record) in records.sorted(by: { $0.key < $1.key }) {
        print(
          JSONValue.object([
            ("trip", .string(trip)), ("messages", .int(record.messages)), ("finals", .int(record.finals)),
            ("final_status", .string(record.finalStatus)), ("final_relay", .string(record.finalRelay)),
            ("deliveries", .array(record.deliveries.sorted().map { .int($0) })),
          ]).rendered)
      }
      let finals = records.values.filter { $0.finals > 0 }.count
      let duplicated = records.values.filter { $0.finals > 1 }.count
      print(
        "inspect: trips=\(records.count) finals=\(finals) duplicated_finals=\(duplicated) messages=\(total) "
          + "follow_messages=\(follow.state.messages) follow_ack_pending=\(consumer.numAckPending) "
          + "follow_pending=\(consumer.numPending) follow_last_seq=\(follow.state.lastSequence) "
          + "follow_ack_floor=\(consumer.ackFloor.streamSequence)")
    } catch {
      throw ToolFailure(.unavailable, "reading the relay cluster's streams: \(error)")
    }
  }
}

struct RelayPermissionsCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "permissions",
    abstract: "Print the NATS permissions of a relay cluster's users, as nats-server configuration.",
    discussion: """
      Prints one `permissions` block per kind of user of the cluster and provider: relays (the only ones that \
      may publish trips, states and follow acks), readers (consume TRIPS and TRIPSTATE, publish nothing that is \
      stored) and submitters (enqueue follow requests). Put each into the user's entry of the server's \
      `authorization` (or its JWT). \(ToolExit.helpText)
      """)

  @OptionGroup var relayNames: RelayNameOptions

  func run() throws {
    let names = try relayNames.names()
    print("# relays of cluster \(names.cluster), provider \(names.providerID)")
    print("permissions: \(RelayPermissions.relay(names).serverConfig)")
    print("# readers")
    print("permissions: \(RelayPermissions.reader(names).serverConfig)")
    print("# submitters")
    print("permissions: \(RelayPermissions.submitter(names).serverConfig)")
  }
}

struct RelayCeiling: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "ceiling",
    abstract: "Measure how many updates a second one JetStream stream of this NATS stores (for sizing TRIPS).",
    discussion: """
      Makes a stream of its own (CEILING_<random>, --replicas replicas), publishes messages of --size bytes to it \
      with acks pipelined (as a relay does) for --duration seconds, deletes it, and prints \
      `ceiling: replicas=R size=S published=N seconds=T per_second=P`. Needs permission to create streams. \
      \(ToolExit.helpText)
      """)

  @OptionGroup var nats: NATSOptions

  @Option(help: "Replicas of the stream (1, or 3 on a 3-node cluster).") var replicas = 1
  @Option(help: "Bytes per message (a relay's progress update is about 120).") var size = 120
  @Option(help: "Seconds to publish for.") var duration = 10.0
  @Option(name: .customLong("max-pending"), help: "Publishes waiting for their ack at once.") var maxPending = 4_096

  func run() async throws {
    cls_line_buffer_stdout()
    var logger = Logger(label: "tripwatch.relay")
    logger.logLevel = .error
    let connection = try await NATSConnection.connect(
      try nats.connection(name: "tripwatch relay ceiling"), logger: logger)
    let jetStream = try connection.jetStream()
    let name = "CEILING_\(UInt32.random(in: 0...UInt32.max))"
    var stream = JetStream.StreamConfiguration(name: name, subjects: ["\(name.lowercased()).>"])
    stream.replicas = replicas
    _ = try await jetStream.createOrUpdateStream(stream)
    let stored = Atomic<Int>(0)
    let failed = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
    let firstFailure = Locked<String?>(nil)
    let publisher = try jetStream.makePublisher(maxPending: maxPending) { _, result in
      switch result {
      case .success: stored.add(1, ordering: .relaxed)
      case .failure(let error):
        failed.add(1, ordering: .relaxed)
        firstFailure.withLock { $0 = $0 ?? "\(error)" }
      }
      inFlight.subtract(1, ordering: .relaxed)
    }
    let payload = [UInt8](repeating: 0x5A, count: max(1, size))
    let start = unixTime()
    var sent: UInt64 = 0
    while unixTime() - start < duration {
      // Keep about maxPending in flight; trips publish one at a time each, the relay many trips at once.
      while inFlight.load(ordering: .relaxed) < maxPending {
        sent += 1
        inFlight.add(1, ordering: .relaxed)
        publisher.publish(
          JetStream.OutboundMessage(subject: "\(name.lowercased()).t\(sent % 10_000)", data: payload), tag: sent)
      }
      try? await Task.sleep(for: .milliseconds(1))
    }
    let seconds = unixTime() - start
    let count = stored.load(ordering: .relaxed)
    for _ in 0..<100 where inFlight.load(ordering: .relaxed) > 0 { try? await Task.sleep(for: .milliseconds(50)) }
    publisher.close()
    try? await jetStream.deleteStream(name)
    await connection.close()
    let perSecond = Int((Double(count) / seconds).rounded())
    let tenths = (seconds * 10).rounded() / 10
    print(
      "ceiling: replicas=\(replicas) size=\(size) published=\(count) failed=\(failed.load(ordering: .relaxed)) "
        + "seconds=\(tenths) per_second=\(perSecond)")
    if let failure = firstFailure.withLock({ $0 }) { print("ceiling: first failure: \(failure)") }
  }
}
