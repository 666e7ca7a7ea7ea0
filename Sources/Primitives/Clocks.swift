// Sources/Primitives/Clocks.swift - the two clocks every module reads
//
// The monotonic clock measures intervals (timers, deadlines, backoff); the wall clock gives Unix times
// (token expiry, a trip's timestamps, the simulation's time). One definition of each for the package.

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The monotonic clock (CLOCK_MONOTONIC), in nanoseconds.
@inline(__always)
package func monotonicNanoseconds() -> UInt64 {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// The wall clock (CLOCK_REALTIME), in Unix seconds.
package func unixTime() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_REALTIME, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

extension Duration {
  /// The duration in whole nanoseconds, saturating at `Int64`'s bounds.
  package var saturatingNanoseconds: Int64 {
    let (seconds, attoseconds) = components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    guard !overflow else { return seconds < 0 ? .min : .max }
    let (sum, overflowAdding) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
    return overflowAdding ? (seconds < 0 ? .min : .max) : sum
  }

  /// The duration in whole nanoseconds, 0 for a negative one, saturating at `UInt64`'s maximum: for deadlines
  /// on the monotonic clock.
  package var nonNegativeNanoseconds: UInt64 {
    UInt64(clamping: saturatingNanoseconds)
  }

  /// The duration in seconds.
  package var inSeconds: Double {
    Double(components.seconds) + Double(components.attoseconds) / 1e18
  }

  /// `seconds` seconds, for values computed at run time: negative and NaN become zero, more than 9e9 s
  /// (and infinity) become 9e9 s, where `Duration.seconds(_:)` would trap.
  package static func clampedSeconds(_ seconds: Double) -> Duration {
    guard seconds > 0 else { return .zero }
    return .nanoseconds(Int64(min(seconds, 9e9) * 1e9))
  }
}
