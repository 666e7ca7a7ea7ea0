// Sources/TripRelay/RelayConfiguration.swift - what a relay follows, where it publishes, what it serves, its bounds

package import CoreMetrics
package import HTTP2Transport
package import JSONWebToken
package import JourneySharing
package import Logging
package import NATSClient
package import Tracing

/// How a ``TripRelay`` runs.
package struct RelayConfiguration: Sendable {
  /// This relay's name, in its log lines and in the `Relay-ID` header of what it publishes.
  package var relayID: String
  /// The NATS connection: servers, credentials, TLS (its reconnect settings are the relay's own).
  package var nats: NATSConnectionConfiguration
  /// The streams' and subjects' names: cluster, provider, `TRIPS` partitions.
  package var names: RelayNames
  /// Upstream: where the trips are followed (Fleet Engine or a simulator), by streaming or by polling; its
  /// `providerID` must be ``names``' provider.
  package var upstream: JourneySharingConfiguration
  /// Downstream gRPC: where the relay serves the streaming `GetTrip` and `grpc.health.v1`; nil serves nothing.
  package var downstream: GRPCServerConfiguration?
  /// Who may watch downstream: verified consumer tokens, or (only when said so) anyone.
  package var authorization: DownstreamAuthorization
  /// The most trips this relay follows at once; it fetches follow requests only while below it.
  package var maxTrips: Int
  /// MaxAckPending of the shared consumer: the most follow requests un-acked over every relay of the cluster.
  package var clusterMaxAckPending: Int
  /// The consumer's AckWait: a follow request whose relay sent no in-progress ack for this long goes to another
  /// relay. A relay whose in-progress acks go unconfirmed for almost this long stops following the trip (it
  /// can no longer prove it holds it): the longest a trip goes unfollowed after a relay dies or is cut off.
  package var ackWait: Duration
  /// How often the requests held get an in-progress ack; well inside ``ackWait``.
  package var inProgressInterval: Duration
  /// Replicas of the streams and the consumer the relay creates (1, or 3 on a 3-node cluster).
  package var replicas: Int
  /// The duplicate window of the streams: a message ID is remembered this long.
  package var duplicateWindow: Duration
  /// How long `TRIPS` and `TRIPSTATE` keep a message (nil: until a limit of the server).
  package var tripsMaxAge: Duration?
  /// How long `FOLLOW` keeps a request nobody takes, and how many it holds at most (new ones are refused
  /// beyond, not old ones dropped).
  package var followMaxAge: Duration
  package var followMaxMessages: Int
  /// Whether an authorized watcher of a trip nobody follows enqueues a follow request for it.
  package var submitOnWatch: Bool
  /// The follow requests one caller (a token's subject, else the peer's address) may enqueue by watching: a
  /// burst, then so many a second. Beyond it the watch is refused with RESOURCE_EXHAUSTED.
  package var submitBurstPerCaller: Int
  package var submitsPerSecondPerCaller: Double
  /// The most watches of trips new to the relay (each costs reads of the trip's state and tail) one caller may
  /// have under way at once; beyond it a watch is refused with RESOURCE_EXHAUSTED.
  package var maxJoinsInProgressPerCaller: Int
  /// How long a trip upstream refused (NOT_FOUND, INVALID_ARGUMENT, or PERMISSION_DENIED for good) is
  /// answered with that status without asking upstream again.
  package var refusalTTL: Duration
  /// How long upstream may answer PERMISSION_DENIED or UNAUTHENTICATED for a trip before the relay releases
  /// it (nak with a delay); after ``maxPermissionReleases`` deliveries it is terminated and refused.
  package var permissionGrace: Duration
  package var maxPermissionReleases: Int
  /// A watched trip's whole state is written to `TRIPSTATE` at least every this many updates.
  package var checkpointInterval: Int
  /// The most follow requests one fetch asks for (relays that fetch in small batches share the work).
  package var fetchBatch: Int
  /// Attempts at reading a watched trip's state and history before its watchers get UNAVAILABLE.
  package var historyReadAttempts: Int
  /// How long a watcher waits for its trip's first state (nobody follows it yet) before UNAVAILABLE.
  package var firstStateTimeout: Duration
  /// A watcher whose unsent responses exceed this many bytes is behind: it gets the trip's latest state once
  /// it drains, not every update. One behind for ``watcherStallTimeout`` is reset.
  package var watcherBufferLimit: Int
  package var watcherStallTimeout: Duration
  /// The most updates after a watcher's `after_sequence` that are replayed from `TRIPS`; further back it
  /// gets the whole trip with `discontinuity`.
  package var maxResumeUpdates: Int
  /// Where metrics go; nil: the global `MetricsSystem`'s factory.
  package var metricsFactory: (any MetricsFactory)?
  /// Where the relay logs. Silent unless given one.
  package var logger: Logger
  /// Where the `relay.follow` and `relay.watch` spans go; nil: the global `InstrumentationSystem`'s tracer (no
  /// spans unless one is bootstrapped).
  package var tracer: (any Tracer)?

  /// A relay named `relayID` following `upstream`'s trips for the cluster `names`, on NATS `nats`.
  package init(
    relayID: String, nats: NATSConnectionConfiguration, names: RelayNames, upstream: JourneySharingConfiguration,
    downstream: GRPCServerConfiguration? = GRPCServerConfiguration(),
    authorization: DownstreamAuthorization, maxTrips: Int = 1_000, clusterMaxAckPending: Int? = nil,
    ackWait: Duration = .seconds(30), inProgressInterval: Duration? = nil, replicas: Int = 1,
    logger: Logger = Logger(label: "journeysharing.relay", factory: { _ in SwiftLogNoOpLogHandler() })
  ) {
    self.relayID = relayID
    self.nats = nats
    self.names = names
    self.upstream = upstream
    self.downstream = downstream
    self.authorization = authorization
    self.maxTrips = max(1, maxTrips)
    self.clusterMaxAckPending = clusterMaxAckPending ?? max(1, maxTrips) * 10
    self.ackWait = ackWait
    self.inProgressInterval = inProgressInterval ?? ackWait / 4
    self.replicas = max(1, replicas)
    self.duplicateWindow = .seconds(600)
    self.tripsMaxAge = .seconds(86_400)
    self.followMaxAge = .seconds(86_400)
    self.followMaxMessages = 1_000_000
    self.submitOnWatch = true
    self.submitBurstPerCaller = 100
    self.submitsPerSecondPerCaller = 10
    self.maxJoinsInProgressPerCaller = 1_000
    self.refusalTTL = .seconds(60)
    self.permissionGrace = .seconds(30)
    self.maxPermissionReleases = 3
    self.checkpointInterval = 32
    self.fetchBatch = 32
    self.historyReadAttempts = 8
    self.firstStateTimeout = .seconds(60)
    self.watcherBufferLimit = 64 << 10
    self.watcherStallTimeout = .seconds(60)
    self.maxResumeUpdates = 10_000
    self.metricsFactory = nil
    self.logger = logger
    self.tracer = nil
  }

  /// The tracer spans go to, or nil when none would record them.
  var activeTracer: (any Tracer)? {
    if let tracer { return tracer }
    let global = InstrumentationSystem.tracer
    return global is NoOpTracer ? nil : global
  }

  /// Throws unless the parts agree (the upstream's provider is the names').
  func validate() throws(RelayConfigurationError) {
    guard upstream.providerID == names.providerID else {
      throw RelayConfigurationError(
        "the upstream's provider \(upstream.providerID.debugDescription) is not the relay's \(names.providerID.debugDescription)"
      )
    }
    guard ackWait >= .seconds(1) else { throw RelayConfigurationError("AckWait must be at least 1 s") }
    guard inProgressInterval > .zero, inProgressInterval * 2 <= ackWait else {
      throw RelayConfigurationError("the in-progress interval must be positive and at most half of AckWait")
    }
  }
}

/// Who may watch trips through a relay's gRPC port.
package enum DownstreamAuthorization: Sendable {
  /// Every call carries `authorization: Bearer <JWT>`, checked as Fleet Engine checks consumer tokens; its
  /// `authorization.tripid` must be the trip watched, or `*`.
  case verified(ConsumerTokenVerifier)
  /// Anyone who reaches the port may watch any trip of the provider (logged as a warning at start).
  case insecureNoAuthorization
}

/// What a relay reports about its trips, for logs, tests and figures.
package enum RelayEvent: Sendable, Hashable {
  /// The relay started following `trip` upstream, for delivery `delivery` of its request (2 or more: a
  /// takeover), at Unix time `at`.
  case followStarted(trip: String, delivery: UInt64, at: Double)
  /// The relay stopped following `trip` at Unix time `at`, for `reason`.
  case followStopped(trip: String, reason: StopReason, at: Double)

  /// Why following a trip stopped.
  package enum StopReason: String, Sendable, Hashable {
    /// The final state was published and the request acked.
    case final
    /// The upstream refused the trip for good (NOT_FOUND, INVALID_ARGUMENT, or PERMISSION_DENIED too long);
    /// the request was terminated and the refusal published.
    case rejected
    /// The upstream kept refusing the relay's credentials: the request was handed back with a delay.
    case released
    /// The relay is shutting down; the request was handed back (nak) for another relay.
    case shutdown
    /// Another relay published the trip under a later delivery of its request: it follows it now.
    case takenOver = "taken-over"
    /// The relay could not confirm that it still holds the request (NATS unreachable) for almost AckWait.
    case leaseLost = "lease-lost"
  }
}

/// A relay's counters.
package struct RelayStatistics: Sendable, Hashable {
  /// Trips followed now.
  package var following = 0
  /// Follows started (takeovers included).
  package var followsStarted = 0
  /// Follows started for a request delivered more than once (another relay had it before).
  package var takeovers = 0
  /// Trips whose final state this relay published and whose request it acked.
  package var finished = 0
  /// Updates stored in `TRIPS`.
  package var published = 0
  /// Publishes `TRIPS` acknowledged as duplicates and did not store.
  package var duplicates = 0
  /// Publishes retried after a failure.
  package var publishRetries = 0
  /// Follows stopped because another relay took the request over.
  package var handedOver = 0
  /// Follows stopped because the request's lease could not be confirmed.
  package var leasesLost = 0
  /// Follow requests terminated because the trip was refused, or malformed.
  package var rejected = 0
  /// Follow requests handed back after upstream refused the relay's credentials.
  package var released = 0
  /// Downstream gRPC watchers open now.
  package var watchers = 0
  /// Updates merged upstream over every followed trip (what the records published carry).
  package var upstreamUpdates = 0
}
