// Sources/GRPCProtocol/GRPCTimeout.swift - the grpc-timeout header
//
// Wire format (PROTOCOL-HTTP2.md): 1 to 8 ASCII digits, then one unit letter:
// H hours, M minutes, S seconds, m milliseconds, u microseconds, n nanoseconds.
// Real clients have shipped 9+ digit values (grpc/grpc#17079, grpcbox#85) and
// servers reject them with PROTOCOL_ERROR, so the encoder never exceeds 8.

/// Encoding and parsing of the `grpc-timeout` request header.
public enum GRPCTimeout {
  /// The largest number the header may carry (8 digits).
  public static let maxValue: Int64 = 99_999_999

  /// The units, finest first, with their length in attoseconds (`Duration`'s resolution).
  private static let units: [(letter: Character, attoseconds: Int128)] = [
    ("n", 1_000_000_000),
    ("u", 1_000_000_000_000),
    ("m", 1_000_000_000_000_000),
    ("S", 1_000_000_000_000_000_000),
    ("M", 60_000_000_000_000_000_000),
    ("H", 3_600_000_000_000_000_000_000),
  ]

  /// The header value for a timeout of `duration`.
  ///
  /// Picks the finest unit in which the duration fits in 8 digits, rounding up,
  /// so the server never sees a deadline earlier than the client's own:
  /// 1 s → `"1000000u"`, 100 ms → `"100000u"`, 1.5 ns → `"2n"`.
  /// Durations beyond 99,999,999 hours are clamped to `"99999999H"`.
  ///
  /// A zero or negative duration means the deadline has already passed. Callers
  /// should fail such a call locally with DEADLINE_EXCEEDED and send nothing, but
  /// this function still returns a valid header for it: `"1n"`, the shortest
  /// timeout the format can express, which makes the server expire the call at once.
  public static func headerValue(for duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    // Int128 holds every Duration in attoseconds (|seconds| < 2^63, times 10^18 < 2^123).
    let total = Int128(seconds) * 1_000_000_000_000_000_000 + Int128(attoseconds)
    guard total > 0 else { return "1n" }
    for unit in units {
      let value = (total + unit.attoseconds - 1) / unit.attoseconds
      if value <= Int128(maxValue) { return "\(value)\(unit.letter)" }
    }
    return "\(maxValue)H"
  }

  /// Parses a `grpc-timeout` value: 1 to 8 ASCII digits followed by one of
  /// `H M S m u n`, nothing else (no sign, no spaces). Returns `nil` otherwise.
  ///
  /// Leading zeros and a zero value are accepted, as grpc-go does; a zero
  /// timeout is simply already expired.
  public static func parse(_ value: String) -> Duration? {
    let bytes = value.utf8
    guard bytes.count >= 2, bytes.count <= 9 else { return nil }
    var number: Int64 = 0
    for byte in bytes.dropLast() {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
      number = number * 10 + Int64(byte - UInt8(ascii: "0"))
    }
    switch bytes.last {
    case UInt8(ascii: "H"): return .seconds(number * 3600)
    case UInt8(ascii: "M"): return .seconds(number * 60)
    case UInt8(ascii: "S"): return .seconds(number)
    case UInt8(ascii: "m"): return .milliseconds(number)
    case UInt8(ascii: "u"): return .microseconds(number)
    case UInt8(ascii: "n"): return .nanoseconds(number)
    default: return nil
    }
  }
}
