// Sources/FleetSim/FleetSimConfiguration.swift - what the simulated Fleet Engine serves, and how badly

import FleetEngineMessages
public import GRPCProtocol
import JSONWebToken

/// How FleetSim runs: the simulated trips, the update rate, auth and faults.
public struct FleetSimConfiguration: Sendable {
  /// How callers must authenticate: every call needs `authorization: Bearer <JWT>`, signed with
  /// ``key``, whose claims pass the checks Fleet Engine makes of a consumer token.
  ///
  /// The token is refused with UNAUTHENTICATED, its status message naming the check that failed
  /// (never quoting the token), unless, in this order:
  /// 1. its signature verifies with ``key`` (and its `alg` is the key's);
  /// 2. `aud` is exactly ``audience`` (one audience; by default Fleet Engine's,
  ///    `https://fleetengine.googleapis.com/`);
  /// 3. `iss` and `sub` are present, not empty and equal (a service account signs for itself), and
  ///    `iss` is ``expectedIssuer`` when one is set;
  /// 4. `iat` and `exp` are present, `exp - iat` is at most ``maxLifetime`` (one hour), `iat` is at
  ///    most ``leeway`` (30 s) in the future, `exp` has not passed (with the same leeway), and `nbf`,
  ///    when present, has come (with the leeway);
  /// 5. `authorization.tripid` is present.
  ///
  /// After these, a token whose `authorization.tripid` is neither the trip asked for nor `*` gets
  /// PERMISSION_DENIED.
  public struct Auth: Sendable, Hashable {
    /// How a token's signature is verified.
    public enum Key: Sendable, Hashable {
      /// HS256 with this secret.
      case hs256(secret: [UInt8])
      /// RS256, with this PEM public key.
      case rs256(publicKeyPEM: String)
    }

    /// Fleet Engine's audience, the default ``audience``.
    public static let fleetEngineAudience = "https://fleetengine.googleapis.com/"
    /// The longest a token may be valid, `exp - iat`, in seconds: one hour, as Fleet Engine allows.
    public static let maxLifetime: Double = 3600
    /// How far clocks may disagree, in seconds: `iat` and `nbf` may be this far in the future, and
    /// `exp` this far in the past.
    public static let leeway: Double = 30

    /// The key signatures are verified with.
    public var key: Key
    /// The `aud` a token must carry. Default ``fleetEngineAudience``.
    public var audience: String
    /// The `iss` (and so `sub`) a token must carry, typically a service account's email; `nil`
    /// accepts any issuer whose `iss` equals its `sub`.
    public var expectedIssuer: String?

    /// Tokens verified with `key`, for `audience`, from `expectedIssuer` (any when `nil`).
    public init(key: Key, audience: String = Auth.fleetEngineAudience, expectedIssuer: String? = nil) {
      self.key = key
      self.audience = audience
      self.expectedIssuer = expectedIssuer
    }

    /// The package's consumer-token check for this configuration.
    var verifier: ConsumerTokenVerifier {
      let verificationKey: JWTVerificationKey
      switch key {
      case .hs256(let secret): verificationKey = .hs256(secret: secret)
      case .rs256(let pem): verificationKey = .rs256(publicKeyPEM: pem)
      }
      return ConsumerTokenVerifier(
        keys: [ConsumerTokenVerifier.Key(verificationKey)], audience: audience, expectedIssuer: expectedIssuer)
    }

    /// HS256 tokens signed with `secret`.
    public static func hs256(
      secret: [UInt8], audience: String = Auth.fleetEngineAudience, expectedIssuer: String? = nil
    ) -> Auth {
      Auth(key: .hs256(secret: secret), audience: audience, expectedIssuer: expectedIssuer)
    }

    /// RS256 tokens verified with the PEM public key `publicKeyPEM`.
    public static func rs256(
      publicKeyPEM: String, audience: String = Auth.fleetEngineAudience, expectedIssuer: String? = nil
    ) -> Auth {
      Auth(key: .rs256(publicKeyPEM: publicKeyPEM), audience: audience, expectedIssuer: expectedIssuer)
    }
  }

  /// The trips: provider, count, seed, start time, speedup.
  public var simulation: SimulationConfiguration
  /// How often streams get a message (wall-clock time). Default 1 s.
  public var updateInterval: Duration
  /// Auth, or `nil` to accept every call.
  public var auth: Auth?
  /// Faults to inject.
  public var faults: FaultInjection
  /// Synthetic streams for load tests instead of the simulated trips' progress; nil (the default)
  /// serves the simulation.
  public var load: LoadGeneration?
  /// How long a graceful shutdown (``FleetSim/run()`` after graceful shutdown is triggered, or
  /// ``FleetSim/shutdownGracefully(gracePeriod:)``) lets open calls finish before it ends those left
  /// with UNAVAILABLE. Default 5 s.
  public var shutdownGracePeriod: Duration
  /// How many trips' plans (route and timetable, 10–25 KB each) are kept between calls. A unary GetTrip of a
  /// trip whose plan was dropped makes it again, which is most of what the call costs (polling 10,000 trips
  /// through the default 4,096 slots spent 40 % of the server's time re-planning); set it to the number of
  /// trips clients poll when memory allows. Default 4,096; never changes what is served.
  public var planCacheCapacity: Int

  /// A configuration.
  public init(
    simulation: SimulationConfiguration, updateInterval: Duration = .seconds(1), auth: Auth? = nil,
    faults: FaultInjection = FaultInjection(), load: LoadGeneration? = nil, shutdownGracePeriod: Duration = .seconds(5),
    planCacheCapacity: Int = 4_096
  ) {
    self.planCacheCapacity = planCacheCapacity
    self.simulation = simulation
    self.updateInterval = updateInterval
    self.auth = auth
    self.faults = faults
    self.load = load
    self.shutdownGracePeriod = shutdownGracePeriod
  }
}

/// How streaming GetTrip behaves in load-generation mode: the first message is the
/// simulated trip in full (as always); after it, each stream gets a small update (the
/// vehicle's location, the ETA to the next waypoint and the remaining distance, with
/// `sequence` and `send_time` set) at a fixed rate, or as fast as flow control allows,
/// until the client cancels. Trips never finish. Unary GetTrip and the checks (auth, names,
/// faults) are unchanged.
public struct LoadGeneration: Sendable, Hashable {
  /// Small updates per second per stream; nil sends as fast as each stream's flow-control
  /// window takes them.
  public var updatesPerSecond: Double?
  /// Without a rate: a stream gets its next update only while fewer than this many bytes
  /// are waiting for its flow-control window. Default 8 KiB.
  public var maxBufferedBytes: Int

  /// A load profile.
  public init(updatesPerSecond: Double?, maxBufferedBytes: Int = 8 << 10) {
    self.updatesPerSecond = updatesPerSecond.map { $0 > 0 && $0.isFinite ? $0 : 1 }
    self.maxBufferedBytes = max(1, maxBufferedBytes)
  }
}

/// Faults FleetSim injects, each counted in ``FleetSimStats``.
public struct FaultInjection: Sendable, Hashable {
  /// The fraction of calls (unary, and stream starts) answered with ``failureCode`` instead. 0...1.
  public var failureRate: Double
  /// The status injected failures carry. Default UNAVAILABLE.
  public var failureCode: GRPCStatusCode
  /// The chance, per update about to be sent, that the stream is reset (RST_STREAM CANCEL) instead. 0...1.
  public var streamResetRate: Double
  /// Send GOAWAY on every connection this often.
  public var goAwayInterval: Duration?
  /// Drop every connection (close without GOAWAY) this often.
  public var dropInterval: Duration?
  /// Added before answering each call.
  public var addedLatency: Duration
  /// Seeds the fault decisions so a run reproduces.
  public var seed: UInt64

  /// No faults unless given.
  public init(
    failureRate: Double = 0, failureCode: GRPCStatusCode = .unavailable, streamResetRate: Double = 0,
    goAwayInterval: Duration? = nil, dropInterval: Duration? = nil, addedLatency: Duration = .zero, seed: UInt64 = 7
  ) {
    self.failureRate = min(max(failureRate, 0), 1)
    self.failureCode = failureCode
    self.streamResetRate = min(max(streamResetRate, 0), 1)
    self.goAwayInterval = goAwayInterval
    self.dropInterval = dropInterval
    self.addedLatency = addedLatency
    self.seed = seed
  }

  /// Whether any fault is configured.
  public var isEmpty: Bool {
    failureRate == 0 && streamResetRate == 0 && goAwayInterval == nil && dropInterval == nil && addedLatency == .zero
  }
}

/// FleetSim's counters.
public struct FleetSimStats: Sendable, Hashable, CustomStringConvertible {
  /// Unary `maps.fleetengine.v1.TripService/GetTrip` calls received.
  public var unaryCalls = 0
  /// Streaming `GetTrip` calls received.
  public var streamsStarted = 0
  /// Streams open now.
  public var streamsOpen = 0
  /// Stream messages sent.
  public var updatesSent = 0
  /// Streams that ended OK with their trip's final state.
  public var streamsCompleted = 0
  /// Calls refused for auth: UNAUTHENTICATED.
  public var unauthenticated = 0
  /// Calls refused for auth: PERMISSION_DENIED.
  public var permissionDenied = 0
  /// Calls with a malformed trip name: INVALID_ARGUMENT.
  public var invalidArgument = 0
  /// Calls for unknown trips: NOT_FOUND.
  public var notFound = 0
  /// Injected status failures.
  public var injectedFailures = 0
  /// Injected stream resets.
  public var injectedResets = 0
  /// Injected GOAWAY rounds.
  public var injectedGoAways = 0
  /// Injected connection drops (rounds).
  public var injectedDrops = 0
  /// Calls delayed by injected latency.
  public var delayedCalls = 0

  /// One line, `key=value` pairs, for logs and the `fleetsim` stats output.
  public var description: String {
    "unary=\(unaryCalls) streams=\(streamsStarted) open=\(streamsOpen) updates=\(updatesSent) "
      + "completed=\(streamsCompleted) unauthenticated=\(unauthenticated) permission_denied=\(permissionDenied) "
      + "invalid_argument=\(invalidArgument) not_found=\(notFound) fault_status=\(injectedFailures) "
      + "fault_resets=\(injectedResets) fault_goaways=\(injectedGoAways) fault_drops=\(injectedDrops) "
      + "fault_delayed=\(delayedCalls)"
  }
}
