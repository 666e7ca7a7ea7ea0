// Sources/Primitives/RateLimit.swift - a burst, then so many a second: the generic cell rate algorithm
//
// A token bucket written as GCRA (the generic cell rate algorithm): one number per limited thing, the time at
// which its bucket is empty again (its "theoretical arrival time"). A request at `now` conforms when that
// time, less the burst's tolerance, is not after `now`; it then moves the time on by one spacing (1/rate).
// No timer, no refill loop, exact at any rate.

/// A rate limit: `burst` at once, then `perSecond` a second (see the file comment). A value: its state is one
/// time, kept by whoever holds it (a single limit, or one per caller in ``KeyedRateLimiter``).
package struct RateLimit: Sendable, Hashable {
  /// Nanoseconds between two requests at the sustained rate.
  package let spacing: UInt64
  /// How far ahead of `now` the bucket may be filled: `burst - 1` spacings.
  package let tolerance: UInt64
  /// When the bucket is empty again (monotonic nanoseconds): the algorithm's state.
  package private(set) var free: UInt64 = 0

  /// `burst` requests at once (at least 1), then `perSecond` a second (a non-positive or non-finite rate
  /// allows one request a second).
  package init(burst: Int, perSecond: Double) {
    let rate = perSecond > 0 && perSecond.isFinite ? perSecond : 1
    spacing = UInt64(max(1, (1e9 / rate).rounded(.up)))
    tolerance = spacing &* UInt64(max(1, burst) - 1)
  }

  /// Takes a request at `now` if one conforms; false (nothing taken) when the limit is reached.
  package mutating func take(at now: UInt64) -> Bool {
    let earliest = free > tolerance ? free - tolerance : 0
    guard earliest <= now else { return false }
    free = max(free, now) &+ spacing
    return true
  }

  /// Reserves the earliest time, `now` or later, at which a request conforms, unless that is after
  /// `now + horizon` (then nothing is reserved and nil returned).
  package mutating func reserve(at now: UInt64, horizon: UInt64) -> UInt64? {
    let earliest = max(now, free > tolerance ? free - tolerance : 0)
    guard earliest - now <= horizon else { return nil }
    free = max(free, earliest) &+ spacing
    return earliest
  }

  /// Gives back the last request taken (it turned out not to count): the bucket holds one more again.
  package mutating func giveBack() {
    free = free >= spacing ? free - spacing : 0
  }

  /// Whether the bucket is full again at `now` (a limiter may then forget it).
  package func isIdle(at now: UInt64) -> Bool { free <= now }
}

/// One ``RateLimit`` per key (a caller), created on first use and forgotten once idle. Thread-safe.
package final class KeyedRateLimiter<Key: Hashable & Sendable>: Sendable {
  private let burst: Int
  private let perSecond: Double
  private let maxKeys: Int
  private let state = Locked([Key: RateLimit]())

  /// Limits of `burst` then `perSecond` for each key; at most `maxKeys` keys are tracked (idle ones are
  /// dropped first; beyond that a new key is refused).
  package init(burst: Int, perSecond: Double, maxKeys: Int = 100_000) {
    self.burst = burst
    self.perSecond = perSecond
    self.maxKeys = max(1, maxKeys)
  }

  /// Gives back the last request `key` took (it turned out not to count).
  package func giveBack(_ key: Key) {
    state.withLock { limits in limits[key]?.giveBack() }
  }

  /// Takes a request of `key` at `now` (monotonic nanoseconds); false when its limit is reached.
  package func take(_ key: Key, at now: UInt64) -> Bool {
    state.withLock { limits in
      if limits[key] == nil, limits.count >= maxKeys {
        limits = limits.filter { !$0.value.isIdle(at: now) }
        guard limits.count < maxKeys else { return false }
      }
      var limit = limits[key] ?? RateLimit(burst: burst, perSecond: perSecond)
      let taken = limit.take(at: now)
      limits[key] = limit
      return taken
    }
  }
}
