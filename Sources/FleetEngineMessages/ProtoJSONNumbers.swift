// Sources/FleetEngineMessages/ProtoJSONNumbers.swift - floating-point numbers as JSON text
//
// Doubles are printed the way Python's `repr` (and so `json.dumps`) prints them:
// the shortest digits that convert back to the same double, in fixed notation
// for decimal exponents -4 < e <= 16 and as d.ddde±XX outside it. Floats follow
// protobuf's `ToShortestFloat`: the fewest significant digits, 6 or more, whose
// correctly rounded decimal converts back (through a double) to the same float.
// Every form is a valid JSON number; NaN and the infinities never get here.

enum ProtoJSONNumber {
  /// Appends a finite double as Python's `repr` prints it.
  static func appendDouble(_ value: Double, to bytes: inout [UInt8]) {
    if value == 0 {
      bytes.append(contentsOf: (value.sign == .minus ? "-0.0" : "0.0").utf8)
      return
    }
    // Swift's description holds the shortest round-trip digits; only its layout differs from Python's.
    let (digits, decimalPoint) = parseDigits(value.magnitude.description)
    appendRepr(negative: value.sign == .minus, digits: digits, decimalPoint: decimalPoint, to: &bytes)
  }

  /// Appends a finite float as protobuf's Python `json_format` prints it.
  static func appendFloat(_ value: Float, to bytes: inout [UInt8]) {
    if value == 0 {
      bytes.append(contentsOf: (value.sign == .minus ? "-0.0" : "0.0").utf8)
      return
    }
    let magnitude = value.magnitude
    let exact: (digits: [UInt8], decimalPoint: Int)
    if magnitude.exponentBitPattern == 0 {
      exact = exactDecimal(significand: UInt64(magnitude.significandBitPattern), binaryExponent: -149)
    } else {
      exact = exactDecimal(
        significand: UInt64(magnitude.significandBitPattern) | 1 << 23,
        binaryExponent: Int(magnitude.exponentBitPattern) - 150)
    }
    var chosen = exact
    for precision in 6...17 {
      let candidate = rounded(exact.digits, exact.decimalPoint, toSignificantDigits: precision)
      chosen = candidate
      // Python parses the digits as a double, then rounds that to a float: the same two steps here.
      let text = "0." + String(decoding: candidate.digits, as: UTF8.self) + "e" + String(candidate.decimalPoint)
      if let parsed = Double(text), Float(parsed) == magnitude { break }
    }
    appendRepr(negative: value.sign == .minus, digits: chosen.digits, decimalPoint: chosen.decimalPoint, to: &bytes)
  }

  /// Appends 0.`digits` × 10^`decimalPoint` in the layout of Python's `repr`:
  /// `digits` holds ASCII digits without leading or trailing zeros.
  static func appendRepr(negative: Bool, digits: [UInt8], decimalPoint: Int, to bytes: inout [UInt8]) {
    let zero = UInt8(ascii: "0")
    if negative { bytes.append(UInt8(ascii: "-")) }
    if decimalPoint <= -4 || decimalPoint > 16 {
      bytes.append(digits[0])
      if digits.count > 1 {
        bytes.append(UInt8(ascii: "."))
        bytes.append(contentsOf: digits[1...])
      }
      let exponent = decimalPoint - 1
      bytes.append(UInt8(ascii: "e"))
      bytes.append(exponent < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
      if exponent.magnitude < 10 { bytes.append(zero) }
      bytes.append(contentsOf: String(exponent.magnitude).utf8)
    } else if decimalPoint <= 0 {
      bytes.append(zero)
      bytes.append(UInt8(ascii: "."))
      bytes.append(contentsOf: repeatElement(zero, count: -decimalPoint))
      bytes.append(contentsOf: digits)
    } else if decimalPoint >= digits.count {
      bytes.append(contentsOf: digits)
      bytes.append(contentsOf: repeatElement(zero, count: decimalPoint - digits.count))
      bytes.append(UInt8(ascii: "."))
      bytes.append(zero)
    } else {
      bytes.append(contentsOf: digits[..<decimalPoint])
      bytes.append(UInt8(ascii: "."))
      bytes.append(contentsOf: digits[decimalPoint...])
    }
  }

  /// The significant digits of a positive number printed as `123.45`, `1e-07`, `1.5e+300` and
  /// the like, and where the decimal point goes: the value is 0.`digits` × 10^`decimalPoint`.
  static func parseDigits(_ text: String) -> (digits: [UInt8], decimalPoint: Int) {
    var digits: [UInt8] = []
    var integerDigits = 0
    var seenPoint = false
    var exponent = 0
    var exponentSign = 1
    var inExponent = false
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"):
        if inExponent {
          exponent = exponent * 10 + Int(byte - UInt8(ascii: "0"))
        } else {
          digits.append(byte)
          if !seenPoint { integerDigits += 1 }
        }
      case UInt8(ascii: "."): seenPoint = true
      case UInt8(ascii: "e"), UInt8(ascii: "E"): inExponent = true
      case UInt8(ascii: "-"): if inExponent { exponentSign = -1 }
      default: break
      }
    }
    var decimalPoint = integerDigits + exponentSign * exponent
    var leading = 0
    while leading < digits.count, digits[leading] == UInt8(ascii: "0") { leading += 1 }
    decimalPoint -= leading
    var significant = Array(digits[leading...])
    while significant.last == UInt8(ascii: "0") { significant.removeLast() }
    return (significant, decimalPoint)
  }

  /// The exact decimal value of `significand` × 2^`binaryExponent` (`significand` > 0): its
  /// digits without leading or trailing zeros, and the decimal point position as in ``parseDigits(_:)``.
  static func exactDecimal(significand: UInt64, binaryExponent: Int) -> (digits: [UInt8], decimalPoint: Int) {
    // Little-endian limbs in base 10^9.
    let base: UInt64 = 1_000_000_000
    var limbs: [UInt64] = [significand % base, significand / base % base, significand / base / base]
    func multiply(by factor: UInt64) {
      var carry: UInt64 = 0
      for index in limbs.indices {
        let product = limbs[index] * factor + carry
        limbs[index] = product % base
        carry = product / base
      }
      while carry > 0 {
        limbs.append(carry % base)
        carry /= base
      }
    }
    var fractionDigits = 0
    if binaryExponent >= 0 {
      var remaining = binaryExponent
      while remaining > 0 {
        let step = min(remaining, 30)
        multiply(by: 1 << UInt64(step))
        remaining -= step
      }
    } else {
      // m / 2^k = m × 5^k / 10^k.
      var remaining = -binaryExponent
      fractionDigits = remaining
      while remaining > 0 {
        let step = min(remaining, 13)
        var power: UInt64 = 1
        for _ in 0..<step { power *= 5 }
        multiply(by: power)
        remaining -= step
      }
    }
    while limbs.count > 1, limbs.last == 0 { limbs.removeLast() }
    var digits = Array(String(limbs[limbs.count - 1]).utf8)
    for limb in limbs.dropLast().reversed() {
      let text = Array(String(limb).utf8)
      digits.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: 9 - text.count))
      digits.append(contentsOf: text)
    }
    let decimalPoint = digits.count - fractionDigits
    while digits.last == UInt8(ascii: "0") { digits.removeLast() }
    return (digits, decimalPoint)
  }

  /// `digits` rounded to `precision` significant digits, ties to even, as C's `%.*g` and Python's
  /// `format` round an exact value; trailing zeros dropped.
  static func rounded(
    _ digits: [UInt8], _ decimalPoint: Int, toSignificantDigits precision: Int
  ) -> (digits: [UInt8], decimalPoint: Int) {
    guard digits.count > precision else { return (digits, decimalPoint) }
    var kept = Array(digits[..<precision])
    let next = digits[precision]
    let restNonZero = digits[(precision + 1)...].contains { $0 != UInt8(ascii: "0") }
    let roundUp: Bool
    if next > UInt8(ascii: "5") {
      roundUp = true
    } else if next < UInt8(ascii: "5") {
      roundUp = false
    } else {
      roundUp = restNonZero || (kept[precision - 1] - UInt8(ascii: "0")) % 2 == 1
    }
    var point = decimalPoint
    if roundUp {
      var index = precision - 1
      while index >= 0, kept[index] == UInt8(ascii: "9") {
        kept[index] = UInt8(ascii: "0")
        index -= 1
      }
      if index >= 0 {
        kept[index] += 1
      } else {
        kept.insert(UInt8(ascii: "1"), at: 0)
        kept.removeLast()
        point += 1
      }
    }
    while kept.last == UInt8(ascii: "0") { kept.removeLast() }
    return (kept, point)
  }
}
