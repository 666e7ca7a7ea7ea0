// Sources/JourneySharing/Following/RetryPolicy.swift - when to fetch again after a failure
//
// Every failure (an error status, a stream that ended before the trip did, an answer that does not
// decode or is above the limits) waits out an exponential backoff with jitter before the next attempt.
// The count of consecutive failures, which sets the delay, goes back to zero only after a real
// success: a poll answered, or a stream that stayed up long enough. A server that sends one update and
// ends each stream therefore meets a growing delay, not a reconnect loop.

import Primitives

/// How long to wait before each retry: the first after ``initial``, each next one ``multiplier`` times
/// longer up to ``maximum``, each randomised by ±``jitter``, as grpc's connection-backoff document
/// describes.
public struct RetryBackoff: Sendable, Hashable {
  /// The delay after the first failure.
  public var initial: Duration
  /// The growth factor.
  public var multiplier: Double
  /// The relative randomisation, 0…1.
  public var jitter: Double
  /// The longest delay.
  public var maximum: Duration

  /// A backoff; by default 1 s, ×1.6, ±20 %, at most 30 s.
  public init(
    initial: Duration = .seconds(1), multiplier: Double = 1.6, jitter: Double = 0.2, maximum: Duration = .seconds(30)
  ) {
    self.initial = initial
    self.multiplier = max(1, multiplier)
    self.jitter = min(max(jitter, 0), 1)
    self.maximum = max(maximum, initial)
  }

  /// The delay before retry `retry` (1 for the first), without jitter.
  public func baseDelay(retry: Int) -> Duration {
    var seconds = initial.inSeconds
    var remaining = max(0, retry - 1)
    let cap = maximum.inSeconds
    while remaining > 0 && seconds < cap {
      seconds *= multiplier
      remaining -= 1
    }
    return .clampedSeconds(min(seconds, cap))
  }

  /// The delay before retry `retry`, with jitter drawn from `generator`.
  public func delay(retry: Int, using generator: inout some RandomNumberGenerator) -> Duration {
    let base = baseDelay(retry: retry).inSeconds
    let factor = jitter == 0 ? 1 : Double.random(in: (1 - jitter)...(1 + jitter), using: &generator)
    return .clampedSeconds(base * factor)
  }
}

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
