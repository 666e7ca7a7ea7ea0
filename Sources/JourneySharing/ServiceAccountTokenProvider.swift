// Sources/JourneySharing/ServiceAccountTokenProvider.swift - Fleet Engine JWTs minted from a service account key
//
// Fleet Engine authenticates each call with a JWT that the caller signs itself with a
// service account's private key (RS256). Its authentication guide lists the claims: `kid`
// in the header set to the key's id; `iss` and `sub` set to the service account's email;
// `aud` set to "https://fleetengine.googleapis.com/"; `iat`, and an `exp` at most one hour
// later; and `authorization` naming what the bearer may read, here `{"tripid": …}` (`*` for
// every trip). What the bearer may do comes from the service account's IAM roles.

import JSONWebToken
import Primitives

#if canImport(Glibc)
  import Glibc
#endif

/// An ``AuthorizationProvider`` that mints Fleet Engine tokens from a Google service account's
/// JSON key file, as Fleet Engine's authentication guide describes: RS256 with `kid` set to the
/// key's id, `iss` and `sub` the service account's email, `aud` `https://fleetengine.googleapis.com/`,
/// `iat` now and `exp` ``lifetime`` later (at most one hour), and `authorization.tripid` set to the
/// trip (``Scope/trip``) or to `*` (``Scope/server``).
///
/// ```swift
/// let tokens = try ServiceAccountTokenProvider(keyFile: "/etc/secrets/fleet-engine-consumer.json")
/// var configuration = JourneySharingConfiguration(
///   host: "fleetengine.googleapis.com", port: 443, providerID: "my-project",
///   authorization: tokens, fetchMode: .poll)
/// ```
///
/// Tokens are cached and shared: with ``Scope/server`` one token serves every trip; with
/// ``Scope/trip`` each trip has its own. A token is minted again once less than
/// ``renewalMargin`` of its lifetime is left, so callers never get one about to expire.
/// Minting takes about a millisecond of CPU (one RSA signature) and needs no network.
///
/// The service account needs a Fleet Engine role that allows reading trips: *Fleet Engine
/// Consumer SDK User* (`roles/fleetengine.consumerSdkUser`) for trip-scoped tokens, or a
/// server role such as *Fleet Engine Service Super User* (`roles/fleetengine.serviceSuperUser`)
/// for `*` tokens. The key itself never appears in logs, errors or descriptions.
public final class ServiceAccountTokenProvider: AuthorizationProvider, CustomStringConvertible {
  /// What each token grants.
  public enum Scope: String, Sendable, Hashable, CaseIterable {
    /// One token per trip, with `authorization.tripid` set to it: what Fleet Engine's Consumer SDK
    /// uses, and what a *Consumer SDK User* service account may mint.
    case trip
    /// One token for every trip, with `authorization.tripid` set to `*`: a server's token.
    case server
  }

  /// The `aud` of Fleet Engine tokens.
  public static let fleetEngineAudience = "https://fleetengine.googleapis.com/"

  /// What each token grants.
  public let scope: Scope
  /// How long a token is valid from its `iat`. At most one hour, Fleet Engine's limit.
  public let lifetime: Duration
  /// A cached token is replaced once less than this is left before its `exp`. Default 5 minutes,
  /// what the mobile SDKs ask of their token providers.
  public let renewalMargin: Duration
  /// The token's `aud`: ``fleetEngineAudience`` unless a test server wants another.
  public let audience: String

  private let key: ServiceAccountKey
  private let clock: @Sendable () -> Double
  private let cache = Locked<Cache>(Cache())

  private struct Cache {
    struct Entry {
      var token: String
      var expiresAt: Double
    }
    var byTrip: [String: Entry] = [:]
    /// Expired entries are swept when the table has doubled since the last sweep.
    var sweepAt = 64

    mutating func insert(_ entry: Entry, for key: String, now: Double) {
      if byTrip.count >= sweepAt {
        byTrip = byTrip.filter { $0.value.expiresAt > now }
        sweepAt = max(64, byTrip.count * 2)
      }
      byTrip[key] = entry
    }
  }

  /// A provider that signs with the key in `keyFile`, a service account's JSON key.
  ///
  /// - Parameters:
  ///   - keyFile: The path of the JSON key file (`client_email`, `private_key_id`, `private_key`).
  ///   - scope: One token per trip (the default) or one for every trip.
  ///   - lifetime: How long each token is valid; clamped to 1 minute … 1 hour. Default 1 hour.
  ///   - renewalMargin: How long before its `exp` a token is replaced. Default 5 minutes (at most
  ///     half the lifetime).
  ///   - audience: The `aud` claim. Default ``fleetEngineAudience``.
  /// - Throws: ``ServiceAccountKeyError`` when the file cannot be read, is not a service account
  ///   key, or holds no usable RSA key.
  public convenience init(
    keyFile: String,
    scope: Scope = .trip,
    lifetime: Duration = .seconds(3600),
    renewalMargin: Duration = .seconds(300),
    audience: String = ServiceAccountTokenProvider.fleetEngineAudience
  ) throws(ServiceAccountKeyError) {
    let bytes: [UInt8]
    do {
      bytes = try CredentialFile.read(keyFile, what: "the service account key file")
    } catch {
      throw ServiceAccountKeyError(message: error.description)
    }
    try self.init(
      keyJSON: bytes, scope: scope, lifetime: lifetime, renewalMargin: renewalMargin, audience: audience)
  }

  /// A provider that signs with the service account key `keyJSON` (the key file's contents).
  ///
  /// - Throws: ``ServiceAccountKeyError`` when the JSON is not a service account key or holds no
  ///   usable RSA key.
  public convenience init(
    keyJSON: [UInt8],
    scope: Scope = .trip,
    lifetime: Duration = .seconds(3600),
    renewalMargin: Duration = .seconds(300),
    audience: String = ServiceAccountTokenProvider.fleetEngineAudience
  ) throws(ServiceAccountKeyError) {
    try self.init(
      keyJSON: keyJSON, scope: scope, lifetime: lifetime, renewalMargin: renewalMargin, audience: audience,
      clock: { Primitives.unixTime() })
  }

  /// As the public initializer, with the clock (Unix seconds) tests move by hand.
  init(
    keyJSON: [UInt8], scope: Scope, lifetime: Duration, renewalMargin: Duration, audience: String,
    clock: @escaping @Sendable () -> Double
  ) throws(ServiceAccountKeyError) {
    do {
      key = try ServiceAccountKey(json: keyJSON)
    } catch {
      throw ServiceAccountKeyError(message: "not a usable service account key: \(error.message)")
    }
    self.scope = scope
    let clamped = min(max(lifetime, .seconds(60)), .seconds(3600))
    self.lifetime = clamped
    self.renewalMargin = min(max(renewalMargin, .zero), clamped / 2)
    self.audience = audience
    self.clock = clock
  }

  /// The service account's email, the tokens' `iss` and `sub`.
  public var serviceAccountEmail: String { key.clientEmail }

  /// A token for `context`'s trip (or for every trip, with ``Scope/server``): the cached one while
  /// more than ``renewalMargin`` of it is left, else a new one.
  ///
  /// - Throws: ``ServiceAccountKeyError`` if signing fails (it does not with a key that loaded).
  public func fetchToken(with context: AuthorizationContext) async throws -> String {
    try token(forTrip: scope == .server ? "*" : context.tripID)
  }

  /// The token granting `tripID` (`*`: every trip), cached or minted now.
  func token(forTrip tripID: String) throws(ServiceAccountKeyError) -> String {
    let now = clock()
    let margin = renewalMargin.inSeconds
    if let cached = cache.withLock({ $0.byTrip[tripID] }), cached.expiresAt - margin > now {
      return cached.token
    }
    // Minting runs outside the lock: two trips' first tokens are signed in parallel, and a
    // race for the same trip costs one signature more, never a wrong token.
    let issuedAt = now.rounded(.down)
    let expiresAt = issuedAt + lifetime.inSeconds
    let claims = JWTClaims(
      issuer: key.clientEmail, subject: key.clientEmail, audience: [audience], expiresAt: expiresAt,
      issuedAt: issuedAt, authorization: ["tripid": .string(tripID)])
    let token: String
    do {
      token = try JSONWebToken.sign(
        claims: claims, key: .rs256(privateKeyPEM: key.privateKeyPEM), keyID: key.privateKeyID)
    } catch {
      throw ServiceAccountKeyError(message: "signing a token failed: \(error.message)")
    }
    cache.withLock { $0.insert(Cache.Entry(token: token, expiresAt: expiresAt), for: tripID, now: now) }
    return token
  }

  /// `ServiceAccountTokenProvider(<email>, key <id>, scope trip)`: never the key.
  public var description: String {
    "ServiceAccountTokenProvider(\(key.clientEmail), key \(key.privateKeyID), scope \(scope.rawValue))"
  }
}

/// Why a service account key could not be used. Its message never quotes the key.
public struct ServiceAccountKeyError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What went wrong.
  public var message: String
  /// `message`.
  public var description: String { message }
}
