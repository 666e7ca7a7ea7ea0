// Sources/JourneySharing/JourneySharingConfiguration.swift - where trips come from and how they are fetched

public import CoreMetrics
public import FleetEngineMessages
public import Logging
import Primitives
import ProtoWire
public import Tracing

/// How ``JourneySharingServices`` reaches Fleet Engine (or FleetSim) and follows trips.
///
/// Everything here is JourneySharing's own: the transport underneath (gRPC over HTTP/2 on nghttp2 and
/// OpenSSL) is configured from it and never shows.
public struct JourneySharingConfiguration: Sendable {
  /// How a trip is fetched.
  public enum FetchMode: String, Sendable, Hashable, CaseIterable {
    /// The project's server-streaming GetTrip: updates are pushed (FleetSim serves it).
    case stream
    /// Fleet Engine's unary GetTrip, polled every ``JourneySharingConfiguration/pollInterval``
    /// with the `*_version` fields so unchanged route, waypoints and traffic are not re-sent.
    /// This is how a client talks to the real Fleet Engine, which has no streaming.
    case poll
    /// Streaming, falling back to polling when the server answers UNIMPLEMENTED.
    case auto
  }

  /// How the connection to the server is secured.
  public enum Security: Sendable, Hashable {
    /// Cleartext HTTP/2 (h2c, prior knowledge). Only when explicitly chosen; logged at notice level.
    case plaintext
    /// TLS 1.2 or later, the server's certificate verified, its name checked, ALPN `h2`.
    case tls(TLS)
  }

  /// TLS settings.
  public struct TLS: Sendable, Hashable {
    /// Which certificate authorities are trusted.
    public enum TrustRoots: Sendable, Hashable {
      /// The system's trust store.
      case systemDefault
      /// Only the CA certificates in this PEM file.
      case caFile(String)
    }

    /// Which CAs are trusted. Default: the system's.
    public var trustRoots: TrustRoots
    /// A PEM certificate chain to present to the server (with ``clientPrivateKeyFile``).
    public var clientCertificateChainFile: String?
    /// The PEM private key of ``clientCertificateChainFile``.
    public var clientPrivateKeyFile: String?
    /// The name to verify and send as SNI instead of the host (also the default `:authority`).
    public var serverNameOverride: String?

    /// TLS settings; by default the system's trust store and the host's own name.
    public init(
      trustRoots: TrustRoots = .systemDefault, clientCertificateChainFile: String? = nil,
      clientPrivateKeyFile: String? = nil, serverNameOverride: String? = nil
    ) {
      self.trustRoots = trustRoots
      self.clientCertificateChainFile = clientCertificateChainFile
      self.clientPrivateKeyFile = clientPrivateKeyFile
      self.serverNameOverride = serverNameOverride
    }

    /// The system's trust store and the host's own name.
    public static let `default` = TLS()
  }

  /// How connections are made and kept, and what a server's answers may hold.
  public struct Connection: Sendable, Hashable {
    /// The most connections to the server; more are opened only when the open ones reach the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS, which no connection ever exceeds. Default 16.
    public var maxConnections: Int
    /// How long a connection attempt (TCP and TLS) may take. Default 20 s.
    public var connectTimeout: Duration
    /// How reconnect attempts back off after failures. Default 1 s, ×1.6, ±20 %, at most 120 s.
    public var reconnectBackoff: RetryBackoff
    /// A connection silent this long is pinged; nil: never (not recommended: a dead server then goes
    /// unnoticed until the stream watchdog fires). Default 20 s.
    public var keepaliveInterval: Duration?
    /// How long a ping may go unanswered before the connection counts as dead. Default 10 s.
    public var keepaliveTimeout: Duration
    /// The largest response message accepted; a larger one fails RESOURCE_EXHAUSTED. Default 4 MiB.
    public var maxReceiveMessageSize: Int
    /// The largest response header or trailer block accepted (RFC 9113 §6.5.2 counting); a larger one fails
    /// RESOURCE_EXHAUSTED. Default 16 KiB.
    public var maxResponseHeaderListSize: Int
    /// The `:authority` of every call; default: the TLS name override, else `host:port`.
    public var authority: String?
    /// How often the servers' name is resolved again while connections are in use (besides after a failed
    /// connection attempt, a lost connection and a GOAWAY). Default 30 s.
    public var resolutionInterval: Duration
    /// The I/O threads: event loops to share with other services (and channels), for example
    /// `JourneySharingEventLoops()`, or nil (the default) for loops of these services' own, one per core.
    /// Connections are spread over the loops; each followed trip lives on one. The reconnect backoff is per
    /// server address for all loops together: more loops make no more attempts against a server that is down.
    public var eventLoops: JourneySharingEventLoops?

    /// Connection settings; every parameter defaults as its property says.
    public init(
      maxConnections: Int = 16, connectTimeout: Duration = .seconds(20),
      reconnectBackoff: RetryBackoff = RetryBackoff(maximum: .seconds(120)),
      keepaliveInterval: Duration? = .seconds(20), keepaliveTimeout: Duration = .seconds(10),
      maxReceiveMessageSize: Int = 4 << 20, maxResponseHeaderListSize: Int = 16 << 10, authority: String? = nil,
      resolutionInterval: Duration = .seconds(30), eventLoops: JourneySharingEventLoops? = nil
    ) {
      self.maxConnections = max(1, maxConnections)
      self.connectTimeout = connectTimeout
      self.reconnectBackoff = reconnectBackoff
      self.keepaliveInterval = keepaliveInterval
      self.keepaliveTimeout = keepaliveTimeout
      self.maxReceiveMessageSize = maxReceiveMessageSize
      self.maxResponseHeaderListSize = maxResponseHeaderListSize
      self.authority = authority
      self.resolutionInterval = resolutionInterval
      self.eventLoops = eventLoops
    }
  }

  /// The server's host (when ``target`` is nil).
  public var host: String
  /// The server's port (when ``target`` is nil).
  public var port: Int
  /// The servers in gRPC's name syntax, in place of ``host`` and ``port``: `dns:///NAME:PORT` (every A and
  /// AAAA address of NAME), `ipv4:ADDR:PORT,ADDR:PORT,…` or `ipv6:[ADDR]:PORT,…` (a static list), or a bare
  /// `HOST:PORT` (DNS). Connections are spread round-robin over every address, calls go to the least loaded
  /// ready connection, the name is resolved again after failures, GOAWAYs and every
  /// ``Connection/resolutionInterval``, and an address that disappears is drained. A target that does not
  /// parse makes ``JourneySharingServices/init(configuration:)`` throw INVALID_ARGUMENT.
  public var target: String?
  /// TLS (verified; the default) or plaintext.
  public var security: Security
  /// The provider (Google Cloud project) ID: trip names must be `providers/{providerID}/trips/…`. A name of
  /// another provider fails with INVALID_ARGUMENT before anything is sent, as a malformed one does.
  public var providerID: String
  /// Supplies JWTs; `nil` sends no `authorization` header.
  public var authorization: (any AuthorizationProvider)?
  /// Streaming, polling, or streaming with fallback. Default `.auto`.
  public var fetchMode: FetchMode
  /// Time between polls of a trip (a ``TripModelOptions`` may set its own). Default 5 s (the JS SDK's
  /// default and minimum). Each interval is varied by ±10 % so trips do not poll in lockstep.
  public var pollInterval: Duration
  /// The most GetTrip requests per second over every polled trip of these services: Fleet Engine counts
  /// them against the project's quota. Requests are spaced at least 1/N seconds apart, so no second holds
  /// more than N; a poll that would exceed it waits (counted in ``JourneySharingStatistics/requestBudget``).
  /// Default 100 (6,000 a minute); nil: no cap. Set it below your project's GetTrip quota.
  public var maxRequestsPerSecond: Double?
  /// The trip view requested. Default `JOURNEY_SHARING_V1S`.
  public var view: TripView
  /// The route format requested. Default lat/lng lists.
  public var routeFormat: PolylineFormatType
  /// The request header sent with every call (SDK type CONSUMER unless changed).
  public var requestHeader: RequestHeader
  /// Backoff between fetches after errors, and after a stream ends before the trip does.
  /// Default 1 s, ×1.6, ±20 %, at most 30 s.
  public var retryBackoff: RetryBackoff
  /// A stream that stayed up this long counts as a success when it ends, and the backoff starts over; a
  /// shorter one counts as a failure. Default 10 s.
  public var healthyStreamLifetime: Duration
  /// When a silent stream counts as dead (UNAVAILABLE, and followed again); nil: never. Default
  /// ``StreamWatchdog/init(multiple:minimum:maximum:initial:endingBurst:endingsPerSecond:)``'s.
  public var streamWatchdog: StreamWatchdog?
  /// Deadline of each unary GetTrip. Default 15 s, Fleet Engine's service config.
  public var callTimeout: Duration
  /// A token is fetched again this many seconds before its `exp`. Default 60.
  public var tokenRefreshMargin: Double
  /// How long the ``AuthorizationProvider`` has to answer: past it the fetch is cancelled and the trip's
  /// attempt fails UNAVAILABLE ("did not answer"), counted in its health like any failure, and retried with
  /// backoff. A provider that never answers cannot stall a trip. Default 30 s.
  public var tokenFetchTimeout: Duration
  /// Threads that run subscriber callbacks. Default 4: up to 3 subscribers can block
  /// inside a callback without delaying any other trip's deliveries.
  public var deliveryThreads: Int
  /// Connections: how many, their keepalive and backoff, and what a server's answer may hold.
  public var connection: Connection
  /// How much route and how many stops a server's trip may hold (20,000 route points, 100 entries
  /// per list of stops by default). A trip above them is rejected with RESOURCE_EXHAUSTED and the
  /// state held is kept; see ``TripLimits``.
  public var limits: TripLimits
  /// Where the library logs (never tokens). Default: nowhere (a `Logger` with `SwiftLogNoOpLogHandler`),
  /// as Swift server libraries do: pass a logger to see what the library does.
  public var logger: Logger
  /// Where metrics go (see the README's "Operating it" for the names); nil: the global `MetricsSystem`'s
  /// factory (a no-op until the process bootstraps one). Default nil.
  public var metricsFactory: (any MetricsFactory)?
  /// What every metric's label starts with. Default `journeysharing_`.
  public var metricsLabelPrefix: String
  /// How often connection figures (connections and streams open, attempts, failures, GOAWAYs, polls that
  /// waited for the request budget) and the delivered-updates tally are sampled into the metrics. Default 1 s.
  public var metricsSampleInterval: Duration
  /// The tracer of every call's span; nil: `InstrumentationSystem.tracer` (a no-op until the process
  /// bootstraps one). The library ships no exporter. Default nil.
  public var tracer: (any Tracer)?

  /// A logger that drops everything: the default of ``logger``.
  public static var silentLogger: Logger {
    Logger(label: "journeysharing", factory: { _ in SwiftLogNoOpLogHandler() })
  }

  /// A configuration for the servers `target` names in gRPC's name syntax (see ``target``), and `providerID`.
  public init(
    target: String,
    security: Security = .tls(.default),
    providerID: String,
    authorization: (any AuthorizationProvider)? = nil,
    fetchMode: FetchMode = .auto,
    pollInterval: Duration = .seconds(5),
    logger: Logger = JourneySharingConfiguration.silentLogger
  ) {
    self.init(
      host: "", port: 0, security: security, providerID: providerID, authorization: authorization,
      fetchMode: fetchMode, pollInterval: pollInterval, logger: logger)
    self.target = target
  }

  /// A configuration for `host:port` and `providerID`.
  public init(
    host: String,
    port: Int,
    security: Security = .tls(.default),
    providerID: String,
    authorization: (any AuthorizationProvider)? = nil,
    fetchMode: FetchMode = .auto,
    pollInterval: Duration = .seconds(5),
    logger: Logger = JourneySharingConfiguration.silentLogger
  ) {
    self.host = host
    self.port = port
    self.target = nil
    self.security = security
    self.providerID = providerID
    self.authorization = authorization
    self.fetchMode = fetchMode
    self.pollInterval = pollInterval
    self.maxRequestsPerSecond = 100
    self.view = .journeySharingV1S
    self.routeFormat = .latLngListType
    var header = RequestHeader()
    header.sdkType = .consumer
    header.sdkVersion = "journeysharing-swift/" + JourneySharingRelease.version
    header.languageCode = "en-US"
    header.regionCode = "US"
    self.requestHeader = header
    self.retryBackoff = RetryBackoff()
    self.healthyStreamLifetime = .seconds(10)
    self.streamWatchdog = StreamWatchdog()
    self.callTimeout = .seconds(15)
    self.tokenRefreshMargin = 60
    self.tokenFetchTimeout = .seconds(30)
    self.deliveryThreads = 4
    self.connection = Connection()
    self.limits = TripLimits()
    self.logger = logger
    self.metricsFactory = nil
    self.metricsLabelPrefix = "journeysharing_"
    self.metricsSampleInterval = .seconds(1)
    self.tracer = nil
  }
}
