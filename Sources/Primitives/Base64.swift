// Sources/Primitives/Base64.swift - the package's one base64 codec (RFC 4648), without Foundation
//
// Three users, one codec:
// - gRPC `-bin` metadata: the standard alphabet; senders leave the padding out, receivers take both
//   (``Base64/decode(_:alphabet:strict:)`` with `strict: false`).
// - JWS compact serialization (RFC 7515 §2): the URL-safe alphabet, unpadded, decoded strictly: no
//   padding, no other alphabet, no whitespace, and the unused low bits zero, so each byte string has
//   exactly one accepted spelling and a token cannot be altered without changing its bytes.
// - proto3 JSON `bytes`: the standard alphabet with padding.

/// Base64 encoding and decoding.
package enum Base64 {
  /// Which 64 characters stand for the 6-bit values.
  package enum Alphabet: Sendable {
    /// `A`–`Z`, `a`–`z`, `0`–`9`, `+`, `/` (RFC 4648 §4).
    case standard
    /// `A`–`Z`, `a`–`z`, `0`–`9`, `-`, `_` (RFC 4648 §5).
    case urlSafe

    fileprivate var characters: [UInt8] {
      switch self {
      case .standard: Base64.standardCharacters
      case .urlSafe: Base64.urlSafeCharacters
      }
    }

    fileprivate var values: [UInt8] {
      switch self {
      case .standard: Base64.standardValues
      case .urlSafe: Base64.urlSafeValues
      }
    }
  }

  fileprivate static let standardCharacters = Array(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
  fileprivate static let urlSafeCharacters = Array(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
  fileprivate static let standardValues = values(of: standardCharacters)
  fileprivate static let urlSafeValues = values(of: urlSafeCharacters)

  /// Maps an ASCII byte to its 6-bit value, or 0xFF when it is not in the alphabet.
  private static func values(of characters: [UInt8]) -> [UInt8] {
    var table = [UInt8](repeating: 0xFF, count: 256)
    for (index, byte) in characters.enumerated() { table[Int(byte)] = UInt8(index) }
    return table
  }

  /// Appends the base64 of `bytes` to `output`, with `=` padding or without.
  package static func encode<Bytes: Collection<UInt8>>(
    _ bytes: Bytes, alphabet: Alphabet = .standard, padded: Bool, into output: inout [UInt8]
  ) {
    let characters = alphabet.characters
    output.reserveCapacity(output.count + (bytes.count + 2) / 3 * 4)
    var iterator = bytes.makeIterator()
    while let first = iterator.next() {
      let second = iterator.next()
      let third = second == nil ? nil : iterator.next()
      let group = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
      output.append(characters[Int(group >> 18 & 0x3F)])
      output.append(characters[Int(group >> 12 & 0x3F)])
      if second != nil {
        output.append(characters[Int(group >> 6 & 0x3F)])
      } else if padded {
        output.append(UInt8(ascii: "="))
      }
      if third != nil {
        output.append(characters[Int(group & 0x3F)])
      } else if padded {
        output.append(UInt8(ascii: "="))
      }
    }
  }

  /// The base64 of `bytes`, with `=` padding or without.
  package static func encode<Bytes: Collection<UInt8>>(
    _ bytes: Bytes, alphabet: Alphabet = .standard, padded: Bool
  ) -> String {
    var output: [UInt8] = []
    encode(bytes, alphabet: alphabet, padded: padded, into: &output)
    return String(decoding: output, as: UTF8.self)
  }

  /// The bytes `text` encodes, or nil when it is not base64 of `alphabet`.
  ///
  /// Never accepted: characters outside the alphabet (whitespace included), and a length that leaves a
  /// single character in the last group (it cannot encode a byte). `strict: false` accepts the text padded
  /// or not (padding only at the very end, completing a four-character group) and ignores unused low bits
  /// in the last character, as most decoders do; `strict: true` refuses padding and non-zero unused bits,
  /// so only the one canonical unpadded spelling of each byte string is accepted.
  package static func decode<Text: Collection<UInt8>>(_ text: Text, alphabet: Alphabet = .standard, strict: Bool)
    -> [UInt8]?
  {
    var count = text.count
    var padding = 0
    var index = text.endIndex
    if !strict {
      // Strip the padding first, then insist it was well formed.
      while padding < 3, index > text.startIndex {
        let before = text.index(index, offsetBy: -1)
        guard text[before] == UInt8(ascii: "=") else { break }
        padding += 1
        index = before
      }
      count -= padding
      if padding > 0 {
        guard padding <= 2, (count + padding) % 4 == 0 else { return nil }
      }
    }
    guard count % 4 != 1 else { return nil }
    let values = alphabet.values
    var output: [UInt8] = []
    output.reserveCapacity(count / 4 * 3 + 2)
    var accumulator: UInt32 = 0
    var bits = 0
    for byte in text[text.startIndex..<index] {
      let value = values[Int(byte)]
      guard value != 0xFF else { return nil }
      accumulator = accumulator << 6 | UInt32(value)
      bits += 6
      if bits >= 8 {
        bits -= 8
        output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
        accumulator &= (1 << UInt32(bits)) - 1
      }
    }
    // Strict: two or four leftover bits must be zero, or a second spelling of the same bytes would exist.
    if strict && accumulator != 0 { return nil }
    return output
  }
}
