// Sources/NATSClient/PubAckReply.swift - a JetStream PubAck, read from the server's JSON reply
//
// A stream answers a publish with `{"stream":"S","seq":7}` (plus `"duplicate":true` for a repeat of a
// `Nats-Msg-Id`, and `"domain"`), or with `{"error":{"code":400,"err_code":10071,"description":"..."}}`. The
// reader below takes exactly those fields from a JSON object and skips every other value, whatever its kind;
// anything that is not a well-formed JSON object (within a nesting depth of 8) is no PubAck.

import Primitives

/// What a stream answered to a publish.
package enum PubAckReply: Equatable, Sendable {
  /// Stored (or a duplicate of a stored message).
  case ack(JetStream.PubAck)
  /// Refused: the API error's HTTP-like code, JetStream's error code, and its description.
  case error(code: Int, jetStreamCode: Int, description: String)

  /// Reads `bytes`; nil when they are not a PubAck.
  package static func parse(_ bytes: UnsafeRawBufferPointer) -> PubAckReply? {
    var reader = JSONFieldReader(bytes)
    var stream: String?
    var sequence: UInt64?
    var duplicate = false
    var domain: String?
    var error: (code: Int, jetStreamCode: Int, description: String)?
    let complete = reader.readObject { reader, key in
      switch key {
      case "stream": stream = reader.readString()
      case "seq": sequence = reader.readUnsigned()
      case "duplicate": duplicate = reader.readBool() ?? false
      case "domain": domain = reader.readString()
      case "error":
        var code = 0
        var jetStreamCode = 0
        var description = ""
        let read = reader.readObject { reader, key in
          switch key {
          case "code": code = Int(clamping: reader.readUnsigned() ?? 0)
          case "err_code": jetStreamCode = Int(clamping: reader.readUnsigned() ?? 0)
          case "description": description = reader.readString() ?? ""
          default: return reader.skipValue()
          }
          return !reader.failed
        }
        guard read else { return false }
        error = (code, jetStreamCode, description)
      default: return reader.skipValue()
      }
      return !reader.failed
    }
    guard complete, reader.atEnd else { return nil }
    if let error { return .error(code: error.code, jetStreamCode: error.jetStreamCode, description: error.description) }
    guard let stream, let sequence else { return nil }
    return .ack(JetStream.PubAck(stream: stream, sequence: sequence, isDuplicate: duplicate, domain: domain))
  }
}

/// A cursor over JSON text that reads objects field by field and skips what it is not asked for.
struct JSONFieldReader {
  private let bytes: UnsafeRawBufferPointer
  private var index = 0
  private var depth = 0
  /// Set once the text turned out malformed; every read after that fails.
  private(set) var failed = false

  static let maxDepth = 8

  init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

  /// True when only whitespace is left.
  var atEnd: Bool {
    mutating get {
      skipWhitespace()
      return index == bytes.count
    }
  }

  /// Reads an object, calling `field` with each key positioned before its value; `field` must read or skip
  /// the value and return false to stop. False when the object is malformed or `field` stopped.
  mutating func readObject(_ field: (inout JSONFieldReader, String) -> Bool) -> Bool {
    guard expect(UInt8(ascii: "{")) else { return fail() }
    depth += 1
    defer { depth -= 1 }
    guard depth <= Self.maxDepth else { return fail() }
    if peek() == UInt8(ascii: "}") {
      index += 1
      return true
    }
    while true {
      guard let key = readString(), expect(UInt8(ascii: ":")) else { return fail() }
      guard field(&self, key), !failed else { return fail() }
      if expect(UInt8(ascii: ",")) { continue }
      guard expect(UInt8(ascii: "}")) else { return fail() }
      return true
    }
  }

  /// A string value, escapes decoded (a `\u` surrogate, paired or not, becomes U+FFFD).
  mutating func readString() -> String? {
    guard expect(UInt8(ascii: "\"")) else {
      _ = fail()
      return nil
    }
    // Most strings have no escape: decoded in one go.
    var end = index
    while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20 {
      end += 1
    }
    if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
      let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[index..<end]), as: UTF8.self)
      index = end + 1
      return text
    }
    var scalars = String.UnicodeScalarView()
    var utf8: [UInt8] = []
    func flush() {
      if !utf8.isEmpty {
        scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars)
        utf8.removeAll()
      }
    }
    while index < bytes.count {
      let byte = bytes[index]
      index += 1
      switch byte {
      case UInt8(ascii: "\""):
        flush()
        return String(scalars)
      case UInt8(ascii: "\\"):
        guard index < bytes.count else { break }
        let escaped = bytes[index]
        index += 1
        if let plain = JSONString.unescaped(escaped) {
          utf8.append(plain)
          continue
        }
        switch escaped {
        case UInt8(ascii: "u"):
          guard let value = readHex4() else {
            _ = fail()
            return nil
          }
          flush()
          scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
        default:
          _ = fail()
          return nil
        }
      case 0..<0x20:
        _ = fail()
        return nil
      default:
        utf8.append(byte)
      }
    }
    _ = fail()
    return nil
  }

  /// A non-negative integer value; nil (and failed) for anything else. Saturates at UInt64.max.
  mutating func readUnsigned() -> UInt64? {
    skipWhitespace()
    var value: UInt64 = 0
    var digits = 0
    while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
      let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
      value = overflow1 || overflow2 ? UInt64.max : sum
      digits += 1
      index += 1
    }
    guard digits > 0 else {
      _ = fail()
      return nil
    }
    return value
  }

  /// `true` or `false`; nil (and failed) for anything else.
  mutating func readBool() -> Bool? {
    skipWhitespace()
    if literal("true") { return true }
    if literal("false") { return false }
    _ = fail()
    return nil
  }

  /// Skips one value of any kind; false when it is malformed.
  mutating func skipValue() -> Bool {
    skipWhitespace()
    guard let first = peek() else { return fail() }
    switch first {
    case UInt8(ascii: "\""): return readString() != nil
    case UInt8(ascii: "{"): return readObject { reader, _ in reader.skipValue() }
    case UInt8(ascii: "["):
      index += 1
      depth += 1
      defer { depth -= 1 }
      guard depth <= Self.maxDepth else { return fail() }
      if expect(UInt8(ascii: "]")) { return true }
      while true {
        guard skipValue() else { return fail() }
        if expect(UInt8(ascii: ",")) { continue }
        return expect(UInt8(ascii: "]")) ? true : fail()
      }
    case UInt8(ascii: "t"), UInt8(ascii: "f"): return readBool() != nil
    case UInt8(ascii: "n"): return literal("null") ? true : fail()
    default:
      // A number: sign, digits, fraction, exponent.
      let start = index
      while index < bytes.count,
        bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: ".")
          || bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")
          || (bytes[index] >= UInt8(ascii: "0") && bytes[index] <= UInt8(ascii: "9"))
      {
        index += 1
      }
      return index > start ? true : fail()
    }
  }

  private mutating func readHex4() -> UInt32? {
    guard index + 4 <= bytes.count else { return nil }
    var value: UInt32 = 0
    for _ in 0..<4 {
      let byte = bytes[index]
      let digit: UInt32
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
      default: return nil
      }
      value = value << 4 | digit
      index += 1
    }
    return value
  }

  private mutating func literal(_ word: StaticString) -> Bool {
    let count = word.utf8CodeUnitCount
    guard index + count <= bytes.count else { return false }
    for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
    index += count
    return true
  }

  private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

  private mutating func skipWhitespace() {
    while index < bytes.count,
      bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09
    {
      index += 1
    }
  }

  /// Skips whitespace and consumes `byte` if it comes next.
  private mutating func expect(_ byte: UInt8) -> Bool {
    skipWhitespace()
    guard index < bytes.count, bytes[index] == byte else { return false }
    index += 1
    return true
  }

  private mutating func fail() -> Bool {
    failed = true
    return false
  }
}
