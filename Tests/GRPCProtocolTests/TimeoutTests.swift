// Tests/GRPCProtocolTests/TimeoutTests.swift - grpc-timeout: finest unit in 8 digits, rounded up

import GRPCProtocol
import Testing

@Suite("grpc-timeout")
struct TimeoutTests {
  @Test(
    "encoding picks the finest unit that fits in 8 digits",
    arguments: [
      (Duration.nanoseconds(1), "1n"),
      (.nanoseconds(999), "999n"),
      (.nanoseconds(99_999_999), "99999999n"),  // largest nanosecond value
      (.nanoseconds(100_000_000), "100000u"),  // 100 ms: 9 digits of ns, so microseconds
      (.milliseconds(100), "100000u"),
      (.seconds(1), "1000000u"),  // 1 s = 10^9 ns (10 digits) = 10^6 µs (7 digits)
      (.seconds(30), "30000000u"),
      (.microseconds(99_999_999), "99999999u"),  // largest microsecond value (~100 s)
      (.seconds(100), "100000m"),
      (.seconds(3600), "3600000m"),
      (.milliseconds(99_999_999), "99999999m"),  // largest millisecond value (~27.8 h)
      (.seconds(100_000), "100000S"),
      (.seconds(99_999_999), "99999999S"),  // largest second value (~3.2 years)
      (.seconds(100_000_000), "1666667M"),  // 1,666,666.67 minutes, rounded up
      (.seconds(5_999_999_940), "99999999M"),  // largest minute value
      (.seconds(6_000_000_000), "1666667H"),  // 1,666,666.67 hours, rounded up
      (.seconds(359_999_996_400), "99999999H"),  // largest expressible value
    ])
  func encoding(duration: Duration, expected: String) {
    #expect(GRPCTimeout.headerValue(for: duration) == expected)
  }

  @Test(
    "encoding rounds up, never down",
    arguments: [
      (Duration(secondsComponent: 0, attosecondsComponent: 1), "1n"),  // one attosecond
      (Duration(secondsComponent: 0, attosecondsComponent: 1_500_000_000), "2n"),  // 1.5 ns
      (.nanoseconds(100_000_001), "100001u"),  // 100.000001 ms
      (.nanoseconds(999_999_999), "1000000u"),  // just under 1 s
      (.nanoseconds(1_000_000_001), "1000001u"),  // just over 1 s
      (.nanoseconds(100_000_000_001), "100001m"),  // just over 100 s
      (.seconds(99_999_999) + .nanoseconds(1), "1666667M"),  // just over the largest second value
    ])
  func roundingUp(duration: Duration, expected: String) {
    #expect(GRPCTimeout.headerValue(for: duration) == expected)
  }

  @Test(
    "durations beyond 99,999,999 hours clamp to the maximum",
    arguments: [Duration.seconds(359_999_996_401), .seconds(Int64.max), .seconds(400_000_000_000)])
  func clamped(duration: Duration) {
    #expect(GRPCTimeout.headerValue(for: duration) == "99999999H")
  }

  @Test(
    "a deadline that already passed still encodes as a valid value: 1n",
    arguments: [Duration.zero, .nanoseconds(-1), .seconds(-5), .seconds(Int64.min)])
  func nonPositive(duration: Duration) {
    #expect(GRPCTimeout.headerValue(for: duration) == "1n")
  }

  @Test("every encoded value has 1 to 8 digits and a unit, and parses back to a value not shorter")
  func encodedShapeAndRoundTrip() throws {
    var samples: [Duration] = []
    var nanoseconds: Int64 = 1
    while nanoseconds < Int64.max / 7 {
      samples.append(.nanoseconds(nanoseconds))
      samples.append(.nanoseconds(nanoseconds - 1))
      samples.append(.nanoseconds(nanoseconds + 1))
      nanoseconds = nanoseconds * 7 + 3
    }
    for duration in samples where duration > .zero {
      let value = GRPCTimeout.headerValue(for: duration)
      let digits = value.dropLast()
      #expect((1...8).contains(digits.count), "\(value)")
      #expect(digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber), "\(value)")
      #expect("HMSmun".contains(value.last!), "\(value)")
      let parsed = try #require(GRPCTimeout.parse(value))
      #expect(parsed >= duration, "\(duration) encoded as \(value)")
    }
  }

  @Test(
    "parsing every unit",
    arguments: [
      ("1n", Duration.nanoseconds(1)),
      ("99999999n", .nanoseconds(99_999_999)),
      ("1000000u", .seconds(1)),
      ("250m", .milliseconds(250)),
      ("30S", .seconds(30)),
      ("2M", .seconds(120)),
      ("1H", .seconds(3600)),
      ("99999999H", .seconds(359_999_996_400)),
      ("0S", .zero),  // accepted, as grpc-go does: already expired
      ("00000010m", .milliseconds(10)),  // leading zeros within 8 digits
    ])
  func parsing(value: String, expected: Duration) {
    #expect(GRPCTimeout.parse(value) == expected)
  }

  @Test(
    "parsing rejects malformed values",
    arguments: [
      "", "S", "1", "10", "123456789S",  // no unit, or 9 digits
      "1s", "1h", "1N", "1U", "1x", "1ms",  // unknown or lower/upper-case-swapped units
      "-1S", "+1S", " 1S", "1S ", "1 S", "1.5S", "0x1S", "١S",
    ])
  func parsingRejects(value: String) {
    #expect(GRPCTimeout.parse(value) == nil)
  }
}
