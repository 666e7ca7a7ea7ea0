// Sources/tripwatch/JSONLine.swift - compact JSON output, one object per line, keys in order

import Primitives

/// A JSON value rendered in the order it was built.
enum JSONValue {
  case string(String)
  case int(Int)
  case double(Double)
  case bool(Bool)
  case null
  case object([(String, JSONValue)])
  case array([JSONValue])

  var rendered: String {
    var out = ""
    render(into: &out)
    return out
  }

  func render(into out: inout String) {
    switch self {
    case .string(let s): JSONValue.renderString(s, into: &out)
    case .int(let i): out += String(i)
    case .double(let d): out += d.isFinite ? String(d) : "null"
    case .bool(let b): out += b ? "true" : "false"
    case .null: out += "null"
    case .object(let members):
      out += "{"
      for (index, (key, value)) in members.enumerated() {
        if index > 0 { out += "," }
        JSONValue.renderString(key, into: &out)
        out += ":"
        value.render(into: &out)
      }
      out += "}"
    case .array(let values):
      out += "["
      for (index, value) in values.enumerated() {
        if index > 0 { out += "," }
        value.render(into: &out)
      }
      out += "]"
    }
  }

  static func renderString(_ s: String, into out: inout String) {
    JSONString.append(s, to: &out)
  }
}

/// Lowercase hex of bytes.
func hexString(_ bytes: some Sequence<UInt8>) -> String {
  let digits = Array("0123456789abcdef".utf8)
  var out: [UInt8] = []
  for byte in bytes {
    out.append(digits[Int(byte >> 4)])
    out.append(digits[Int(byte & 0xF)])
  }
  return String(decoding: out, as: UTF8.self)
}

/// Bytes from hex (whitespace ignored); `nil` if it is not hex.
func bytes(fromHex hex: String) -> [UInt8]? {
  let digits = hex.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\n") }
  guard digits.count % 2 == 0 else { return nil }
  var out: [UInt8] = []
  out.reserveCapacity(digits.count / 2)
  var index = digits.startIndex
  while index < digits.endIndex {
    guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
    out.append(high << 4 | low)
    index += 2
  }
  return out
}

private func hexValue(_ c: UInt8) -> UInt8? {
  switch c {
  case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
  case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
  case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
  default: nil
  }
}
