// Sources/JourneySharing/Following/TokenCache.swift - one trip's authorization token, fetched once at a time
//
// The token provider is async and may take a while (a network round trip to the app's backend); the
// trip's fetching is confined to its scheduler. The cache keeps the last token until shortly before its
// `exp`, runs at most one fetch at a time, and hands the result back on the scheduler.

import GRPCProtocol
import JSONWebToken
import Primitives

/// A trip's cached token. Confined to the trip's scheduler.
final class TokenCache {
  private let provider: (any AuthorizationProvider)?
  private let context: AuthorizationContext?
  private let refreshMargin: Double
  private let scheduler: any GRPCScheduler
  private var cached: (value: String, refreshAfter: Double?)?
  /// The callers waiting for the fetch in flight (nil: none in flight).
  private var waiting: [(Result<String?, GRPCError>) -> Void]?

  /// A cache for `context`'s trip; with no provider (or no context, for an invalid name), every token is nil.
  init(
    provider: (any AuthorizationProvider)?, context: AuthorizationContext?, refreshMargin: Double,
    scheduler: any GRPCScheduler
  ) {
    self.provider = provider
    self.context = context
    self.refreshMargin = refreshMargin
    self.scheduler = scheduler
  }

  /// Calls `body` on the scheduler with the token (nil without a provider): at once when the cached one is
  /// still good, else once the provider answered. A provider that throws gives UNAUTHENTICATED.
  func withToken(_ body: @escaping (Result<String?, GRPCError>) -> Void) {
    guard let provider, let context else {
      body(.success(nil))
      return
    }
    if let cached, cached.refreshAfter.map({ scheduler.unixTime < $0 }) ?? true {
      body(.success(cached.value))
      return
    }
    if waiting != nil {
      waiting!.append(body)
      return
    }
    waiting = [body]
    let margin = refreshMargin
    let home = SchedulerBound(self, scheduler: scheduler)
    // The provider is async: ask it from a task, and come back to the scheduler with the answer.
    Task {
      let outcome: Result<String, GRPCError>
      do {
        outcome = .success(try await provider.fetchToken(with: context))
      } catch {
        outcome = .failure(
          GRPCError(code: .unauthenticated, message: "fetching an authorization token failed: \(error)", cause: error))
      }
      home.scheduler.execute { home.value.fetched(outcome, margin: margin) }
    }
  }

  /// Forgets the cached token (after the server answered UNAUTHENTICATED).
  func invalidate() {
    cached = nil
  }

  private func fetched(_ outcome: Result<String, GRPCError>, margin: Double) {
    if case .success(let value) = outcome {
      var refreshAfter: Double?
      if let token = try? JSONWebToken(parsing: value), let exp = token.claims.expiresAt {
        refreshAfter = exp - margin
      }
      cached = (value, refreshAfter)
    }
    let callers = waiting ?? []
    waiting = nil
    for caller in callers { caller(outcome.map { $0 }) }
  }
}
