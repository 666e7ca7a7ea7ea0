// Sources/JSONWebToken/JSON.swift - a small, strict JSON reader and a canonical writer
//
// JOSE headers and claim sets are JSON objects (RFC 8259). The reader accepts
// exactly the RFC's grammar and nothing more: no comments, no trailing commas,
// no leading zeros, no NaN, no bytes after the value, no control characters or
// invalid UTF-8 in strings, no lone surrogates, no duplicate member names
// (RFC 7515 section 5.2 lets a parser reject them, and accepting them would let
// two parsers disagree on a token's `alg` or `exp`), and nesting at most 32 deep.
// The writer emits object members sorted by the UTF-8 bytes of their names and
// no insignificant whitespace, so equal claims always serialize to equal bytes.

import Primitives

/// Reads one JSON text into a ``JWTClaimValue``.
struct JSONReader {
  /// The deepest nesting of arrays and objects accepted (the outermost counts as 1).
  static let maximumDepth = 32

  private let bytes: [UInt8]
  private let context: String
  private var position = 0

  private init(_ bytes: [UInt8], context: String) {
    self.bytes = bytes
    self.context = context
  }

  /// Parses `bytes`, which must be exactly one JSON object; `context` names it in errors ("header", "payload").
  static func parseObject(_ bytes: [UInt8], context: String) throws(JWTError) -> [String: JWTClaimValue] {
    var reader = JSONReader(bytes, context: context)
    reader.skipWhitespace()
    guard reader.peek() == UInt8(ascii: "{") else {
      throw JWTError(.malformed, "the \(context) is not a JSON object")
    }
    let value = try reader.parseValue(depth: 0)
    reader.skipWhitespace()
    guard reader.position == bytes.count else { throw reader.failure("unexpected bytes after the JSON object") }
    guard case .object(let object) = value else { throw reader.failure("not a JSON object") }
    return object
  }

  private func failure(_ reason: String) -> JWTError {
    JWTError(.malformed, "the \(context) is not valid JSON: \(reason) at byte \(position)")
  }

  private func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

  private mutating func skipWhitespace() {
    while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
  }

  private mutating func expect(_ byte: UInt8) throws(JWTError) {
    guard peek() == byte else { throw failure("expected '\(Character(Unicode.Scalar(byte)))'") }
    position += 1
  }

  /// A value starting at `position` (after whitespace); `depth` is the nesting of its container.
  private mutating func parseValue(depth: Int) throws(JWTError) -> JWTClaimValue {
    skipWhitespace()
    guard let byte = peek() else { throw failure("unexpected end of input") }
    switch byte {
    case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
    case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
    case UInt8(ascii: "\""): return .string(try parseString())
    case UInt8(ascii: "t"):
      try parseLiteral("true")
      return .bool(true)
    case UInt8(ascii: "f"):
      try parseLiteral("false")
      return .bool(false)
    case UInt8(ascii: "n"):
      try parseLiteral("null")
      return .null
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
    default: throw failure("unexpected byte 0x\(String(byte, radix: 16))")
    }
  }

  private mutating func parseLiteral(_ literal: StaticString) throws(JWTError) {
    let count = literal.utf8CodeUnitCount
    // StaticString's storage is immutable program data, valid for the buffer's whole scope.
    let matches = literal.withUTF8Buffer { expected in
      position + count <= bytes.count && bytes[position..<position + count].elementsEqual(expected)
    }
    guard matches else { throw failure("invalid literal") }
    position += count
  }

  private mutating func parseObject(depth: Int) throws(JWTError) -> JWTClaimValue {
    guard depth <= Self.maximumDepth else { throw failure("nested deeper than \(Self.maximumDepth) levels") }
    try expect(UInt8(ascii: "{"))
    var members: [String: JWTClaimValue] = [:]
    skipWhitespace()
    if peek() == UInt8(ascii: "}") {
      position += 1
      return .object(members)
    }
    while true {
      skipWhitespace()
      guard peek() == UInt8(ascii: "\"") else { throw failure("expected a member name") }
      let nameStart = position
      let name = try parseString()
      skipWhitespace()
      try expect(UInt8(ascii: ":"))
      let value = try parseValue(depth: depth)
      guard members.updateValue(value, forKey: name) == nil else {
        position = nameStart
        throw failure("duplicate member name")
      }
      skipWhitespace()
      guard let separator = peek() else { throw failure("unexpected end of input") }
      position += 1
      if separator == UInt8(ascii: "}") { return .object(members) }
      guard separator == UInt8(ascii: ",") else {
        position -= 1
        throw failure("expected ',' or '}'")
      }
    }
  }

  private mutating func parseArray(depth: Int) throws(JWTError) -> JWTClaimValue {
    guard depth <= Self.maximumDepth else { throw failure("nested deeper than \(Self.maximumDepth) levels") }
    try expect(UInt8(ascii: "["))
    var elements: [JWTClaimValue] = []
    skipWhitespace()
    if peek() == UInt8(ascii: "]") {
      position += 1
      return .array(elements)
    }
    while true {
      elements.append(try parseValue(depth: depth))
      skipWhitespace()
      guard let separator = peek() else { throw failure("unexpected end of input") }
      position += 1
      if separator == UInt8(ascii: "]") { return .array(elements) }
      guard separator == UInt8(ascii: ",") else {
        position -= 1
        throw failure("expected ',' or ']'")
      }
    }
  }

  private mutating func parseString() throws(JWTError) -> String {
    try expect(UInt8(ascii: "\""))
    var utf8: [UInt8] = []
    while true {
      guard let byte = peek() else { throw failure("unterminated string") }
      switch byte {
      case UInt8(ascii: "\""):
        position += 1
        guard let string = String(validating: utf8, as: UTF8.self) else { throw failure("string is not valid UTF-8") }
        return string
      case UInt8(ascii: "\\"):
        position += 1
        try parseEscape(into: &utf8)
      case 0x00..<0x20:
        throw failure("unescaped control character in a string")
      default:
        utf8.append(byte)
        position += 1
      }
    }
  }

  /// The escape after a backslash, appended to `utf8` as UTF-8.
  private mutating func parseEscape(into utf8: inout [UInt8]) throws(JWTError) {
    guard let byte = peek() else { throw failure("unterminated string") }
    position += 1
    if let plain = JSONString.unescaped(byte) {
      utf8.append(plain)
      return
    }
    switch byte {
    case UInt8(ascii: "u"):
      let unit = try parseHex4()
      var scalarValue = UInt32(unit)
      if (0xD800..<0xDC00).contains(unit) {
        // A high surrogate must be followed by an escaped low surrogate; together they are one scalar.
        guard peek() == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u")
        else { throw failure("unpaired surrogate in a \\u escape") }
        position += 2
        let low = try parseHex4()
        guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired surrogate in a \\u escape") }
        scalarValue = 0x10000 + (UInt32(unit - 0xD800) << 10) + UInt32(low - 0xDC00)
      } else if (0xDC00..<0xE000).contains(unit) {
        throw failure("unpaired surrogate in a \\u escape")
      }
      guard let scalar = Unicode.Scalar(scalarValue) else { throw failure("invalid \\u escape") }
      UTF8.encode(scalar) { utf8.append($0) }
    default:
      position -= 1
      throw failure("invalid escape")
    }
  }

  private mutating func parseHex4() throws(JWTError) -> UInt16 {
    guard position + 4 <= bytes.count else { throw failure("truncated \\u escape") }
    var value: UInt16 = 0
    for _ in 0..<4 {
      let byte = bytes[position]
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
      default: throw failure("invalid hex digit in a \\u escape")
      }
      value = value << 4 | UInt16(digit)
      position += 1
    }
    return value
  }

  private mutating func parseNumber() throws(JWTError) -> Double {
    let start = position
    if peek() == UInt8(ascii: "-") { position += 1 }
    guard let first = peek(), isDigit(first) else { throw failure("expected a digit") }
    position += 1
    if first == UInt8(ascii: "0") {
      if let next = peek(), isDigit(next) { throw failure("leading zero in a number") }
    } else {
      skipDigits()
    }
    if peek() == UInt8(ascii: ".") {
      position += 1
      guard let next = peek(), isDigit(next) else { throw failure("expected a digit after '.'") }
      skipDigits()
    }
    if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
      position += 1
      if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
      guard let next = peek(), isDigit(next) else { throw failure("expected a digit in the exponent") }
      skipDigits()
    }
    // The grammar above admits only what Double's parser reads the same way; it rounds correctly.
    guard let value = Double(String(decoding: bytes[start..<position], as: UTF8.self)), value.isFinite else {
      position = start
      throw failure("number out of range")
    }
    return value
  }

  private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

  private mutating func skipDigits() {
    while let byte = peek(), isDigit(byte) { position += 1 }
  }
}

/// Writes ``JWTClaimValue``s as compact JSON with sorted member names.
enum JSONWriter {
  /// The compact JSON text of `object`.
  ///
  /// - Throws: ``JWTError/Kind/malformed`` for a non-finite number or nesting deeper than
  ///   ``JSONReader/maximumDepth`` (which the reader would reject).
  static func serialize(_ object: [String: JWTClaimValue], context: String) throws(JWTError) -> [UInt8] {
    var out: [UInt8] = []
    try write(.object(object), depth: 0, into: &out, context: context)
    return out
  }

  private static func write(
    _ value: JWTClaimValue,
    depth: Int,
    into out: inout [UInt8],
    context: String
  ) throws(JWTError) {
    switch value {
    case .null: out.append(contentsOf: "null".utf8)
    case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
    case .string(let string): writeString(string, into: &out)
    case .number(let number):
      guard number.isFinite else { throw JWTError(.malformed, "the \(context) holds a number that is not finite") }
      out.append(contentsOf: formatNumber(number).utf8)
    case .array(let elements):
      guard depth < JSONReader.maximumDepth else { throw tooDeep(context) }
      out.append(UInt8(ascii: "["))
      for (index, element) in elements.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        try write(element, depth: depth + 1, into: &out, context: context)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let members):
      guard depth < JSONReader.maximumDepth else { throw tooDeep(context) }
      out.append(UInt8(ascii: "{"))
      let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
      for (index, member) in sorted.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        writeString(member.key, into: &out)
        out.append(UInt8(ascii: ":"))
        try write(member.value, depth: depth + 1, into: &out, context: context)
      }
      out.append(UInt8(ascii: "}"))
    }
  }

  private static func tooDeep(_ context: String) -> JWTError {
    JWTError(.malformed, "the \(context) nests deeper than \(JSONReader.maximumDepth) levels")
  }

  /// Whole numbers up to 2^53 as integers (NumericDate seconds stay `1700000000`),
  /// others in Swift's shortest round-tripping form, which is valid JSON for finite values.
  static func formatNumber(_ number: Double) -> String {
    if number == number.rounded(.towardZero), abs(number) <= 9_007_199_254_740_992 {
      return String(Int64(number))
    }
    return number.description
  }

  private static func writeString(_ string: String, into out: inout [UInt8]) {
    JSONString.append(string, to: &out)
  }

}
