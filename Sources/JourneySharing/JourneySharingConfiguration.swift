// Sources/JourneySharing/JourneySharingConfiguration.swift - where trips come from and how they are fetched

public import FleetEngineMessages
public import HTTP2Transport
public import Logging
import ProtoWire

/// How ``JourneySharingServices`` reaches Fleet Engine (or FleetSim) and follows trips.
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

  /// The server's host.
  public var host: String
  /// The server's port.
  public var port: Int
  /// TLS (verified; the default) or plaintext.
  public var security: GRPCChannelConfiguration.Security
  /// The provider (Google Cloud project) ID: trip names must be `providers/{providerID}/trips/…`. A name of
  /// another provider fails with INVALID_ARGUMENT before anything is sent, as a malformed one does.
  public var providerID: String
  /// Supplies JWTs; `nil` sends no `authorization` header.
  public var authorization: (any AuthorizationProvider)?
  /// Streaming, polling, or streaming with fallback. Default `.auto`.
  public var fetchMode: FetchMode
  /// Time between polls. Default 5 s (the JS SDK's default and minimum).
  public var pollInterval: Duration
  /// The trip view requested. Default `JOURNEY_SHARING_V1S`.
  public var view: TripView
  /// The route format requested. Default lat/lng lists.
  public var routeFormat: PolylineFormatType
  /// The request header sent with every call (SDK type CONSUMER unless changed).
  public var requestHeader: RequestHeader
  /// Backoff between attempts after errors (and after a stream ends early).
  public var retryBackoff: ConnectionBackoff
  /// Deadline of each unary GetTrip. Default 15 s, Fleet Engine's service config.
  public var callTimeout: Duration
  /// A token is fetched again this many seconds before its `exp`. Default 60.
  public var tokenRefreshMargin: Double
  /// Threads that run subscriber callbacks. Default 4: up to 3 subscribers can block
  /// inside a callback without delaying any other trip's deliveries.
  public var deliveryThreads: Int
  /// Connection settings of the underlying channel (security is taken from ``security``). Its
  /// limits on what a server sends: `maxReceiveMessageSize` (4 MiB; a larger message fails the
  /// call RESOURCE_EXHAUSTED), `http2Settings.maxHeaderListSize` (16 KiB of response headers or
  /// trailers; larger fails RESOURCE_EXHAUSTED), and the server's own SETTINGS_MAX_CONCURRENT_STREAMS,
  /// which is never exceeded (more connections are opened, up to `maxConnections`, 16).
  public var channel: GRPCChannelConfiguration
  /// How much route and how many stops a server's trip may hold (20,000 route points, 100 entries
  /// per list of stops by default). A trip above them is rejected with RESOURCE_EXHAUSTED and the
  /// state held is kept; see ``TripLimits``.
  public var limits: TripLimits
  /// Where the library logs (never tokens).
  public var logger: Logger

  /// A configuration for `host:port` and `providerID`.
  public init(
    host: String,
    port: Int,
    security: GRPCChannelConfiguration.Security = .tls(.default),
    providerID: String,
    authorization: (any AuthorizationProvider)? = nil,
    fetchMode: FetchMode = .auto,
    pollInterval: Duration = .seconds(5),
    logger: Logger = Logger(label: "journeysharing")
  ) {
    self.host = host
    self.port = port
    self.security = security
    self.providerID = providerID
    self.authorization = authorization
    self.fetchMode = fetchMode
    self.pollInterval = pollInterval
    self.view = .journeySharingV1S
    self.routeFormat = .latLngListType
    var header = RequestHeader()
    header.sdkType = .consumer
    header.sdkVersion = "journeysharing-swift/" + JourneySharingRelease.version
    header.languageCode = "en-US"
    header.regionCode = "US"
    self.requestHeader = header
    self.retryBackoff = ConnectionBackoff(
      initialBackoff: .seconds(1), multiplier: 1.6, jitter: 0.2, maxBackoff: .seconds(30))
    self.callTimeout = .seconds(15)
    self.tokenRefreshMargin = 60
    self.deliveryThreads = 4
    self.channel = GRPCChannelConfiguration()
    self.limits = TripLimits()
    self.logger = logger
  }
}
