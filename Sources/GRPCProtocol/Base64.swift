// Sources/GRPCProtocol/Base64.swift - the base64 used by `-bin` metadata, without Foundation
//
// gRPC sends binary metadata as standard-alphabet base64 (RFC 4648 §4). Senders
// should leave the padding out, and receivers must accept it either way, so the
// encoder writes unpadded text and the decoder takes both forms. Foundation's
// `Data(base64Encoded:)` rejects unpadded input, which is one reason this module
// has its own (the other is that only `GRPCError` may import Foundation).

enum Base64 {
  /// The standard alphabet, indexed by 6-bit value.
  private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  /// Maps an ASCII byte to its 6-bit value, or 0xFF when it is not in the alphabet.
  private static let values: [UInt8] = {
    var table = [UInt8](repeating: 0xFF, count: 256)
    for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
    return table
  }()

  /// Encodes `bytes` as standard base64, with or without `=` padding.
  static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes, padded: Bool = false) -> String {
    var output: [UInt8] = []
    output.reserveCapacity((bytes.count + 2) / 3 * 4)
    var iterator = bytes.makeIterator()
    while let first = iterator.next() {
      let second = iterator.next()
      let third = second == nil ? nil : iterator.next()
      let group = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
      output.append(alphabet[Int(group >> 18 & 0x3F)])
      output.append(alphabet[Int(group >> 12 & 0x3F)])
      if second != nil {
        output.append(alphabet[Int(group >> 6 & 0x3F)])
      } else if padded {
        output.append(UInt8(ascii: "="))
      }
      if third != nil {
        output.append(alphabet[Int(group & 0x3F)])
      } else if padded {
        output.append(UInt8(ascii: "="))
      }
    }
    return String(decoding: output, as: UTF8.self)
  }

  /// Decodes standard base64, padded or not. Returns `nil` for anything else:
  /// characters outside the alphabet (whitespace included), padding that is not
  /// at the very end or does not complete a four-character group, or a length
  /// that leaves a single character in the last group (which cannot encode a byte).
  ///
  /// Unused low bits in the last character are ignored, as most decoders do.
  static func decode<Text: Collection<UInt8>>(_ text: Text) -> [UInt8]? {
    // Strip the padding first, then insist it was well formed.
    var count = text.count
    var padding = 0
    var index = text.endIndex
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
    guard count % 4 != 1 else { return nil }

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
      }
    }
    return output
  }
}
