// Sources/JourneySharing/Following/RetryPolicy.swift - when to fetch again after a failure
//
// Every failure (an error status, a stream that ended before the trip did, an answer that does not
// decode or is above the limits) waits out an exponential backoff with jitter before the next attempt.
// The count of consecutive failures, which sets the delay, goes back to zero only after a real
// success: a poll answered, or a stream that stayed up long enough. A server that sends one update and
// ends each stream therefore meets a growing delay, not a reconnect loop.

import Primitives

/// One followed trip's failure count and the delays it leads to. Confined to the trip's scheduler.
struct RetryPolicy {
  let backoff: RetryBackoff
  /// A stream that stayed up this long (and carried messages) counts as a success when it ends.
  let healthyStreamLifetime: Duration
  /// Failures since the last success.
  private(set) var consecutiveFailures = 0
  private var random: SplitMix64

  init(backoff: RetryBackoff, healthyStreamLifetime: Duration, seed: UInt64) {
    self.backoff = backoff
    self.healthyStreamLifetime = healthyStreamLifetime
    self.random = SplitMix64(seed: seed)
  }

  /// A fetch succeeded: a poll answered, or a stream stayed up ``healthyStreamLifetime``.
  mutating func succeeded() {
    consecutiveFailures = 0
  }

  /// A fetch failed; returns how long to wait before the next one.
  mutating func failed() -> Duration {
    consecutiveFailures += 1
    return backoff.delay(retry: consecutiveFailures, using: &random)
  }

  /// Whether a stream that has been up for `lifetime` with `messages` messages counts as a success.
  func isHealthy(streamLifetime lifetime: Duration, messages: Int) -> Bool {
    messages > 0 && lifetime >= healthyStreamLifetime
  }
}
