// Sources/JourneySharing/Authorization.swift - tokens for Fleet Engine calls

import JSONWebToken

/// What the library asks an ``AuthorizationProvider`` for a token for.
public struct AuthorizationContext: Sendable, Hashable {
  /// The trip ID (the `{trip}` of `providers/{provider}/trips/{trip}`) the token must grant.
  public var tripID: String
  /// The full trip name.
  public var tripName: String

  /// A context for the trip `tripID`, named `tripName`.
  public init(tripID: String, tripName: String) {
    self.tripID = tripID
    self.tripName = tripName
  }
}

/// Supplies the JWTs sent as `authorization: Bearer <token>`: the counterpart of
/// the SDK's `GMTCAuthorization`. Called from any task, possibly concurrently for
/// different trips; the token for a trip should carry `authorization.tripid`.
///
/// The library caches each token until shortly before its `exp` claim (see
/// ``JourneySharingConfiguration/tokenRefreshMargin``), fetches a new one then and
/// after any UNAUTHENTICATED answer, and never writes a token into logs, errors or output.
public protocol AuthorizationProvider: Sendable {
  /// A token for `context`. Throwing reports UNAUTHENTICATED to the trip's subscribers,
  /// and following retries with backoff.
  func fetchToken(with context: AuthorizationContext) async throws -> String
}

/// An ``AuthorizationProvider`` that always returns the same token (tests, CLIs).
public struct StaticTokenProvider: AuthorizationProvider {
  private let token: String
  /// A provider of `token`.
  public init(token: String) { self.token = token }
  public func fetchToken(with context: AuthorizationContext) async throws -> String { token }
}

/// A cached token and when to fetch a new one. Loop-confined in the follower.
struct CachedToken {
  let value: String
  /// Unix seconds after which the token must be fetched again (nil: until rejected).
  let refreshAfter: Double?

  init(value: String, refreshMargin: Double) {
    self.value = value
    if let token = try? JSONWebToken(parsing: value), let exp = token.claims.expiresAt {
      refreshAfter = exp - refreshMargin
    } else {
      refreshAfter = nil
    }
  }

  func isUsable(at now: Double) -> Bool {
    guard let refreshAfter else { return true }
    return now < refreshAfter
  }
}
