// Sources/GRPCProtocol/RetryBackoff.swift - the one exponential backoff with jitter
//
// gRPC's connection-backoff algorithm (doc/connection-backoff.md): the channel waits it out between connection
// attempts to an address, a followed trip between fetches, and the relay between its attempts at NATS. One type
// for all of them.

import Primitives

/// How long to wait before each retry: the first after ``initial``, each next one ``multiplier`` times
/// longer up to ``maximum``, each randomised by ±``jitter``, as grpc's connection-backoff document
/// describes. Used for reconnecting (``initial`` 1 s, ×1.6, ±20 %, at most 120 s in a channel's configuration,
/// grpc's values) and for fetching a followed trip again.
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
