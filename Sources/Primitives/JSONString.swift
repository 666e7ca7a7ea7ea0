// Sources/Primitives/JSONString.swift - the one JSON string writer, and the escapes a JSON reader decodes
//
// Every JSON the package writes (proto3 JSON, JWTs, GeoJSON, tripwatch's --json lines) quotes its strings here,
// and both JSON readers (JWTs, JetStream's acks) decode the one-character escapes here. What JSON requires is
// always escaped (quotation mark, backslash, control characters); the escaping options add what some readers
// want beyond it.

/// Writes JSON strings, and decodes their escapes.
package enum JSONString {
  /// What is escaped beyond what JSON requires.
  package struct Escaping: Sendable, Hashable {
    /// Every non-ASCII scalar as `\u` escapes (a surrogate pair beyond the BMP) and DEL too, as Python's
    /// `json.dumps` does by default (`ensure_ascii`).
    package var asciiOnly: Bool
    /// DEL, U+2028 and U+2029 as `\u` escapes, so the text is a valid JavaScript literal too.
    package var javaScriptSafe: Bool

    /// Escapes for output read by JSON and JavaScript alike: the default.
    package static let standard = Escaping(asciiOnly: false, javaScriptSafe: true)
    /// Python's `json.dumps` escapes: with `ensure_ascii` (`asciiOnly`) or without (only what JSON requires).
    package static func python(asciiOnly: Bool) -> Escaping { Escaping(asciiOnly: asciiOnly, javaScriptSafe: false) }
  }

  private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

  /// Appends `value` quoted and escaped to `bytes` (UTF-8).
  package static func append(_ value: String, to bytes: inout [UInt8], escaping: Escaping = .standard) {
    bytes.append(UInt8(ascii: "\""))
    for scalar in value.unicodeScalars {
      let v = scalar.value
      switch v {
      case 0x22: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
      case 0x5C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
      case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
      case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
      case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
      case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
      case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
      case 0..<0x20: appendUnicodeEscape(UInt16(v), to: &bytes)
      case 0x7F where escaping.asciiOnly || escaping.javaScriptSafe: appendUnicodeEscape(0x7F, to: &bytes)
      case 0x2028,
        0x2029 where escaping.javaScriptSafe && !escaping.asciiOnly:
        appendUnicodeEscape(UInt16(v), to: &bytes)
      case 0x80...0xFFFF where escaping.asciiOnly:
        appendUnicodeEscape(UInt16(v), to: &bytes)
      case 0x1_0000... where escaping.asciiOnly:
        let offset = v - 0x1_0000
        appendUnicodeEscape(UInt16(0xD800 + (offset >> 10)), to: &bytes)
        appendUnicodeEscape(UInt16(0xDC00 + (offset & 0x3FF)), to: &bytes)
      case 0..<0x80:
        bytes.append(UInt8(v))
      default:
        bytes.append(contentsOf: String(scalar).utf8)
      }
    }
    bytes.append(UInt8(ascii: "\""))
  }

  /// Appends `value` quoted and escaped to `text`.
  package static func append(_ value: String, to text: inout String, escaping: Escaping = .standard) {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(value.utf8.count + 2)
    append(value, to: &bytes, escaping: escaping)
    text += String(decoding: bytes, as: UTF8.self)
  }

  /// `\uXXXX` with lowercase hex digits, as Python writes it.
  private static func appendUnicodeEscape(_ unit: UInt16, to bytes: inout [UInt8]) {
    bytes.append(UInt8(ascii: "\\"))
    bytes.append(UInt8(ascii: "u"))
    for shift in stride(from: 12, through: 0, by: -4) {
      bytes.append(hexDigits[Int((unit >> UInt16(shift)) & 0xF)])
    }
  }

  /// The byte a one-character escape stands for (`escaped` is the byte after the backslash: `"` `\` `/` `b` `f`
  /// `n` `r` `t`); nil for `u` (four hex digits follow) and for anything JSON does not allow.
  package static func unescaped(_ escaped: UInt8) -> UInt8? {
    switch escaped {
    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): escaped
    case UInt8(ascii: "b"): 0x08
    case UInt8(ascii: "f"): 0x0C
    case UInt8(ascii: "n"): 0x0A
    case UInt8(ascii: "r"): 0x0D
    case UInt8(ascii: "t"): 0x09
    default: nil
    }
  }
}
