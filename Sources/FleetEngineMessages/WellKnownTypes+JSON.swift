// Sources/FleetEngineMessages/WellKnownTypes+JSON.swift - Timestamp, Duration, FieldMask and LatLng as JSON
//
// Timestamp is an RFC 3339 string in UTC, Duration a decimal number of seconds
// with an `s`, both with 0, 3, 6 or 9 fractional digits (as few as the value
// needs); FieldMask a comma-joined string of lowerCamelCase paths. LatLng is a
// regular message. Values outside what the mapping allows are refused through
// the writer and printed anyway (see `jsonString(options:)`).

extension Timestamp: ProtoJSONEncodable {
  /// The range `MessageToJson` accepts: 0001-01-01T00:00:00Z through 9999-12-31T23:59:59Z.
  static let jsonSecondsRange: ClosedRange<Int64> = -62_135_596_800...253_402_300_799

  public func writeJSON(to writer: inout ProtoJSONWriter) {
    if !Self.jsonSecondsRange.contains(seconds) || !(0..<1_000_000_000).contains(nanos) {
      writer.refuse(.timestampOutOfRange(seconds: seconds, nanos: nanos))
    }
    writer.writeString(rfc3339String)
  }

  /// `YYYY-MM-DDTHH:MM:SS[.fff|.ffffff|.fffffffff]Z` for the instant `seconds` + `nanos` / 10^9;
  /// years outside 0...9999 as `±YYYYYY`, nanos outside a second carried into the seconds.
  var rfc3339String: String {
    let nanosPerSecond: Int128 = 1_000_000_000
    let total = Int128(seconds) * nanosPerSecond + Int128(nanos)
    let wholeSeconds = floorDivide(total, nanosPerSecond)
    let fraction = Int32(total - wholeSeconds * nanosPerSecond)
    let days = floorDivide(wholeSeconds, 86_400)
    let secondOfDay = Int(wholeSeconds - days * 86_400)
    let (year, month, day) = civilDate(daysSinceEpoch: Int64(days))
    var text: String
    if (0...9999).contains(year) {
      text = padded(year, 4)
    } else {
      text = (year < 0 ? "-" : "+") + padded(year.magnitude, 6)
    }
    text += "-" + padded(month, 2) + "-" + padded(day, 2)
    text += "T" + padded(secondOfDay / 3600, 2) + ":" + padded(secondOfDay / 60 % 60, 2) + ":"
    text += padded(secondOfDay % 60, 2)
    return text + fractionDigits(fraction) + "Z"
  }
}

extension ProtobufDuration: ProtoJSONEncodable {
  /// The largest magnitude of `seconds` `MessageToJson` accepts (about 10,000 years).
  static let jsonSecondsLimit: Int64 = 315_576_000_000

  public func writeJSON(to writer: inout ProtoJSONWriter) {
    let signsDisagree = (seconds > 0 && nanos < 0) || (seconds < 0 && nanos > 0)
    if seconds.magnitude > Self.jsonSecondsLimit || nanos.magnitude >= 1_000_000_000 || signsDisagree {
      writer.refuse(.durationOutOfRange(seconds: seconds, nanos: nanos))
    }
    writer.writeString(secondsString)
  }

  /// `[-]S[.fff|.ffffff|.fffffffff]s`: the exact value `seconds` + `nanos` / 10^9.
  var secondsString: String {
    let nanosPerSecond: Int128 = 1_000_000_000
    let total = Int128(seconds) * nanosPerSecond + Int128(nanos)
    let magnitude = total.magnitude
    let whole = magnitude / UInt128(nanosPerSecond)
    let fraction = Int32(magnitude % UInt128(nanosPerSecond))
    return (total < 0 ? "-" : "") + String(whole) + fractionDigits(fraction) + "s"
  }
}

extension FieldMask: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    var joined = ""
    for (index, path) in paths.enumerated() {
      if index > 0 { joined += "," }
      let (converted, convertible) = Self.lowerCamelCase(path)
      if !convertible { writer.refuse(.fieldMaskPathNotConvertible(path)) }
      joined += converted
    }
    writer.writeString(joined)
  }

  /// A path in lowerCamelCase, as protobuf's Python runtime converts it: each `_` dropped and
  /// the lowercase letter after it uppercased (Unicode's full mapping, so `ß` gives `SS`).
  /// `false` when the path has an uppercase letter or an underscore not followed by a lowercase
  /// letter; those characters are then kept as they are.
  static func lowerCamelCase(_ path: String) -> (String, Bool) {
    var result = ""
    var convertible = true
    var afterUnderscore = false
    for scalar in path.unicodeScalars {
      if scalar.properties.isUppercase { convertible = false }
      if afterUnderscore {
        afterUnderscore = false
        if scalar.properties.isLowercase && !scalar.properties.isUppercase {
          result += scalar.properties.uppercaseMapping
          continue
        }
        convertible = false
        result.unicodeScalars.append("_")
      }
      if scalar == "_" {
        afterUnderscore = true
      } else {
        result.unicodeScalars.append(scalar)
      }
    }
    if afterUnderscore {
      convertible = false
      result.unicodeScalars.append("_")
    }
    return (result, convertible)
  }
}

extension LatLng: ProtoJSONEncodable {
  public func writeJSON(to writer: inout ProtoJSONWriter) {
    writer.beginObject()
    writer.doubleField("latitude", latitude)
    writer.doubleField("longitude", longitude)
    writer.endObject()
  }
}

// MARK: - Calendar and digits

/// The proleptic Gregorian date `daysSinceEpoch` days after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`; exact for any Int64 day count a Timestamp can reach).
func civilDate(daysSinceEpoch: Int64) -> (year: Int64, month: Int, day: Int) {
  let z = daysSinceEpoch + 719_468
  let era = floorDivide(z, 146_097)
  let dayOfEra = z - era * 146_097  // 0...146096
  let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365  // 0...399
  let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365
  let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0...11, March first
  let day = Int(dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
  let month = Int(shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9)
  let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  return (year, month, day)
}

/// `a / b` rounded towards negative infinity (`b` > 0).
func floorDivide<T: BinaryInteger>(_ a: T, _ b: T) -> T {
  let quotient = a / b
  return (a % b < 0) ? quotient - 1 : quotient
}

/// `value` in decimal, zero-padded on the left to `width` digits.
func padded<T: BinaryInteger>(_ value: T, _ width: Int) -> String {
  let text = String(value)
  return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
}

/// The fractional part of a Timestamp or Duration: nothing for whole seconds, else 3, 6
/// or 9 digits, as few as represent `nanos` (0..<10^9) exactly.
func fractionDigits(_ nanos: Int32) -> String {
  if nanos == 0 { return "" }
  if nanos % 1_000_000 == 0 { return "." + padded(nanos / 1_000_000, 3) }
  if nanos % 1000 == 0 { return "." + padded(nanos / 1000, 6) }
  return "." + padded(nanos, 9)
}
