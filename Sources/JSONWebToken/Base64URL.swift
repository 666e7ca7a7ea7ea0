// Sources/JSONWebToken/Base64URL.swift - the unpadded base64url of RFC 7515 section 2
//
// JWS compact serialization uses the URL-safe alphabet (`-` and `_`) without
// `=` padding. Decoding is strict: padding, the standard alphabet's `+` and
// `/`, whitespace, a length that leaves one dangling character, and unused
// low bits that are not zero are all rejected, so each byte string has exactly
// one accepted encoding and a token cannot be altered without changing its bytes.

enum Base64URL {
  private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

  /// The unpadded base64url encoding of `bytes`.
  static func encode(_ bytes: [UInt8]) -> String {
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count * 4 + 2) / 3)
    var index = 0
    while index + 3 <= bytes.count {
      let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
      out.append(alphabet[Int(group >> 18 & 0x3F)])
      out.append(alphabet[Int(group >> 12 & 0x3F)])
      out.append(alphabet[Int(group >> 6 & 0x3F)])
      out.append(alphabet[Int(group & 0x3F)])
      index += 3
    }
    switch bytes.count - index {
    case 1:
      let group = UInt32(bytes[index]) << 16
      out.append(alphabet[Int(group >> 18 & 0x3F)])
      out.append(alphabet[Int(group >> 12 & 0x3F)])
    case 2:
      let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
      out.append(alphabet[Int(group >> 18 & 0x3F)])
      out.append(alphabet[Int(group >> 12 & 0x3F)])
      out.append(alphabet[Int(group >> 6 & 0x3F)])
    default:
      break
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// The bytes `text` encodes, or nil if it is not canonical unpadded base64url.
  static func decode(_ text: Substring.UTF8View) -> [UInt8]? {
    if text.count % 4 == 1 { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(text.count * 3 / 4)
    var accumulator: UInt32 = 0
    var bits = 0
    for character in text {
      guard let value = sextet(character) else { return nil }
      accumulator = accumulator << 6 | UInt32(value)
      bits += 6
      if bits >= 8 {
        bits -= 8
        out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
        accumulator &= (1 << UInt32(bits)) - 1
      }
    }
    // Two or four leftover bits must be zero: otherwise a second spelling of the same bytes exists.
    guard accumulator == 0 else { return nil }
    return out
  }

  private static func sextet(_ character: UInt8) -> UInt8? {
    switch character {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
    case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
    case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
    case UInt8(ascii: "-"): 62
    case UInt8(ascii: "_"): 63
    default: nil
    }
  }
}
