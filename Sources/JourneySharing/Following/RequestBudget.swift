// Sources/JourneySharing/Following/RequestBudget.swift - a services-wide cap on polls per second
//
// Fleet Engine counts GetTrip calls against a per-project quota. Every polled trip of a
// JourneySharingServices reserves its next request here: requests are given times at least 1/R
// apart (R the budget per second), so no second (no window of one second) ever holds more than R
// of them, however many trips are polled. A trip whose reserved time is later than it asked for
// waits; those waits are counted.

import Primitives

/// The request budget's figures.
public struct RequestBudgetStatistics: Sendable, Hashable {
  /// The cap, in requests per second (nil: none).
  public var requestsPerSecond: Double?
  /// Requests reserved.
  public var requests: Int
  /// Requests that had to wait for the budget.
  public var waitedRequests: Int
  /// The sum of those waits.
  public var totalWait: Duration
  /// The longest single wait.
  public var longestWait: Duration
}

/// Gives each polling request a time no earlier than asked and at least 1/R after the previous one.
/// Thread-safe: trips on every scheduler share one budget.
final class RequestBudget: Sendable {
  let requestsPerSecond: Double?
  private let state: Locked<State>

  private struct State {
    /// The budget: one request at a time, spaced 1/R apart; nil when unlimited.
    var limit: RateLimit?
    var requests = 0
    var waited = 0
    var totalWait: UInt64 = 0
    var longestWait: UInt64 = 0
  }

  /// A budget of `requestsPerSecond` (nil or not positive: unlimited).
  init(requestsPerSecond: Double?) {
    if let rate = requestsPerSecond, rate > 0, rate.isFinite {
      self.requestsPerSecond = rate
      state = Locked(State(limit: RateLimit(burst: 1, perSecond: rate)))
    } else {
      self.requestsPerSecond = nil
      state = Locked(State(limit: nil))
    }
  }

  /// Reserves a request wanted at `wanted` (monotonic nanoseconds); returns when it may go: `wanted`, or
  /// later when the budget is used up until then.
  func reserve(at wanted: UInt64) -> UInt64 {
    state.withLock { state in
      state.requests += 1
      // No horizon: a request always gets a time, however far the budget is booked.
      guard let time = state.limit?.reserve(at: wanted, horizon: .max) else { return wanted }
      if time > wanted {
        let wait = time - wanted
        state.waited += 1
        state.totalWait &+= wait
        state.longestWait = max(state.longestWait, wait)
      }
      return time
    }
  }

  var statistics: RequestBudgetStatistics {
    state.withLock { state in
      RequestBudgetStatistics(
        requestsPerSecond: requestsPerSecond, requests: state.requests, waitedRequests: state.waited,
        totalWait: .nanoseconds(Int64(clamping: state.totalWait)),
        longestWait: .nanoseconds(Int64(clamping: state.longestWait)))
    }
  }
}
