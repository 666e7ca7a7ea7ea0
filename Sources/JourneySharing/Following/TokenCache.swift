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
  private let fetchTimeout: Duration
  private let scheduler: any GRPCScheduler
  private var cached: (value: String, refreshAfter: Double?)?
  /// The callers waiting for the fetch in flight (nil: none in flight).
  private var waiting: [(Result<String?, GRPCError>) -> Void]?
  /// The fetch in flight: its number (a late answer of an abandoned fetch is told apart), its task (to
  /// cancel) and its deadline's timer.
  private var fetch: (number: UInt64, task: Task<Void, Never>, timer: GRPCTimerID)?
  private var fetches: UInt64 = 0

  /// A cache for `context`'s trip; with no provider (or no context, for an invalid name), every token is nil.
  init(
    provider: (any AuthorizationProvider)?, context: AuthorizationContext?, refreshMargin: Double,
    fetchTimeout: Duration = .seconds(30), scheduler: any GRPCScheduler
  ) {
    self.provider = provider
    self.context = context
    self.refreshMargin = refreshMargin
    self.fetchTimeout = fetchTimeout
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
    fetches += 1
    let number = fetches
    let home = SchedulerBound(self, scheduler: scheduler)
    // The provider is async: ask it from a task, and come back to the scheduler with the answer.
    let task = Task {
      let outcome: Result<String, GRPCError>
      do {
        outcome = .success(try await provider.fetchToken(with: context))
      } catch {
        outcome = .failure(
          GRPCError(code: .unauthenticated, message: "fetching an authorization token failed: \(error)", cause: error))
      }
      home.scheduler.execute { home.value.fetched(outcome, margin: margin, number: number) }
    }
    let timer = scheduler.scheduleTimer(after: fetchTimeout) { [weak self] in
      self?.timedOut(number)
    }
    fetch = (number, task, timer)
  }

  /// The fetch `number` did not answer in time: its callers fail, the task is cancelled, and the next
  /// call asks again.
  private func timedOut(_ number: UInt64) {
    guard let fetch, fetch.number == number else { return }
    self.fetch = nil
    fetch.task.cancel()
    let callers = waiting ?? []
    waiting = nil
    let error = GRPCError(
      code: .unavailable, message: "the authorization provider did not answer within \(fetchTimeout)")
    for caller in callers { caller(.failure(error)) }
  }

  /// Forgets the cached token (after the server answered UNAUTHENTICATED).
  func invalidate() {
    cached = nil
  }

  private func fetched(_ outcome: Result<String, GRPCError>, margin: Double, number: UInt64) {
    if case .success(let value) = outcome {
      var refreshAfter: Double?
      if let token = try? JSONWebToken(parsing: value), let exp = token.claims.expiresAt {
        refreshAfter = exp - margin
      }
      cached = (value, refreshAfter)
    }
    // A late answer of a fetch given up on: its token is kept, its callers were told already.
    guard let fetch, fetch.number == number else { return }
    scheduler.cancelTimer(fetch.timer)
    self.fetch = nil
    let callers = waiting ?? []
    waiting = nil
    for caller in callers { caller(outcome.map { $0 }) }
  }
}
