// Sources/TripRelay/RelayConfiguration.swift - what a relay follows, where it publishes, what it serves, its bounds

package import HTTP2Transport
package import JourneySharing
package import Logging

/// How a ``TripRelay`` runs.
package struct RelayConfiguration: Sendable {
  /// This relay's name, in its log lines and in the `Relay-ID` header of what it publishes.
  package var relayID: String
  /// The NATS servers, `nats://HOST:PORT` (any members of the cluster; the rest are discovered).
  package var natsServers: [String]
  /// Upstream: where the trips are followed (Fleet Engine or a simulator), by streaming or by polling; its
  /// `providerID` is the provider whose follow requests this relay takes.
  package var upstream: JourneySharingConfiguration
  /// Downstream gRPC: where the relay serves the streaming `GetTrip`; nil serves nothing.
  package var downstream: GRPCServerConfiguration?
  /// The most trips this relay follows at once; it fetches follow requests only while below it.
  package var maxTrips: Int
  /// MaxAckPending of the shared consumer: the most follow requests un-acked over every relay of the cluster
  /// (the consumer is shared, so the bound is the cluster's; each relay keeps its own with ``maxTrips``).
  package var clusterMaxAckPending: Int
  /// The consumer's AckWait: a follow request whose relay sent no in-progress ack for this long is delivered
  /// to another relay. The time a takeover takes after a relay dies.
  package var ackWait: Duration
  /// How often a followed trip's request gets an in-progress ack; well inside ``ackWait``.
  package var inProgressInterval: Duration
  /// Replicas of the streams and the consumer the relay creates (1, or 3 on a 3-node cluster).
  package var replicas: Int
  /// The duplicate window of both streams: a message ID is remembered this long. A final state published
  /// again by a relay that takes over later than this after the first publish would be stored twice.
  package var duplicateWindow: Duration
  /// How long `TRIPS` keeps an update (nil: until a limit of the server).
  package var tripsMaxAge: Duration?
  /// Whether a gRPC watcher of a trip nobody follows enqueues a follow request for it.
  package var submitOnWatch: Bool
  /// The most follow requests one fetch asks for (relays that fetch in small batches share the work).
  package var fetchBatch: Int
  /// Attempts at reading a watched trip's history from ``tripsStream`` before its gRPC watchers are finished
  /// with UNAVAILABLE (they may watch again); the waits between attempts grow from 250 ms to 4 s.
  package var historyReadAttempts: Int
  /// The stream of trip updates.
  package var tripsStream: String
  /// The work-queue stream of follow requests.
  package var followStream: String
  /// The durable consumer the relays share on ``followStream``.
  package var followConsumer: String
  /// Where the relay logs.
  package var logger: Logger

  /// A relay named `relayID` following trips through `upstream`, on the NATS cluster at `natsServers`.
  package init(
    relayID: String, natsServers: [String], upstream: JourneySharingConfiguration,
    downstream: GRPCServerConfiguration? = GRPCServerConfiguration(), maxTrips: Int = 1_000,
    clusterMaxAckPending: Int? = nil, ackWait: Duration = .seconds(30), inProgressInterval: Duration? = nil,
    replicas: Int = 1, logger: Logger = Logger(label: "journeysharing.relay")
  ) {
    self.relayID = relayID
    self.natsServers = natsServers
    self.upstream = upstream
    self.downstream = downstream
    self.maxTrips = max(1, maxTrips)
    self.clusterMaxAckPending = clusterMaxAckPending ?? max(1, maxTrips) * 10
    self.ackWait = ackWait
    self.inProgressInterval = inProgressInterval ?? ackWait / 4
    self.replicas = max(1, replicas)
    self.duplicateWindow = .seconds(600)
    self.tripsMaxAge = .seconds(86_400)
    self.submitOnWatch = true
    self.fetchBatch = 32
    self.historyReadAttempts = 8
    self.tripsStream = RelayNaming.tripsStream
    self.followStream = RelayNaming.followStream
    self.followConsumer = RelayNaming.followConsumer
    self.logger = logger
  }
}

/// What a relay reports about its trips, for logs, tests and figures (see ``TripRelay/events``).
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
    /// The upstream refused the trip for good (NOT_FOUND, INVALID_ARGUMENT); the request was terminated.
    case rejected
    /// The relay is shutting down; the request was handed back (nak) for another relay.
    case shutdown
    /// Another relay announced it received the request again (after AckWait) and follows the trip now.
    case takenOver = "taken-over"
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
  /// Publishes `TRIPS` acknowledged as duplicates and did not store (a retry, or a final state published again).
  package var duplicates = 0
  /// Publishes retried after a failure (a NATS node down, a leader election).
  package var publishRetries = 0
  /// Follows stopped because another relay took the request over.
  package var handedOver = 0
  /// Follow requests terminated because the trip was refused, or malformed.
  package var rejected = 0
  /// Downstream gRPC watchers open now.
  package var watchers = 0
}
