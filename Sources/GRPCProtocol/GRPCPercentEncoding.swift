// Sources/GRPCProtocol/GRPCPercentEncoding.swift - the encoding of grpc-message
//
// `grpc-message` is UTF-8 text percent-encoded so that it fits in an HTTP/2
// header value. Decoding must never fail or drop the message (it is often the
// only clue to what went wrong): bad escapes stay as they are and bad UTF-8
// becomes U+FFFD.

/// Percent-encoding of the `grpc-message` header, as PROTOCOL-HTTP2.md specifies.
public enum GRPCPercentEncoding {
  /// Encodes `message` for `grpc-message`: each UTF-8 byte outside 0x20–0x7E,
  /// and `%` itself, becomes `%XX` with upper-case hex digits; everything else is
  /// kept as is.
  public static func encode(_ message: String) -> String {
    let utf8 = message.utf8
    // Most messages need no escaping: return them without copying.
    guard utf8.contains(where: needsEscaping) else { return message }
    var output: [UInt8] = []
    output.reserveCapacity(utf8.count + 16)
    for byte in utf8 {
      if needsEscaping(byte) {
        output.append(UInt8(ascii: "%"))
        output.append(hexDigits[Int(byte >> 4)])
        output.append(hexDigits[Int(byte & 0x0F)])
      } else {
        output.append(byte)
      }
    }
    return String(decoding: output, as: UTF8.self)
  }

  /// Decodes a `grpc-message` value: every valid `%XX` escape (either case of
  /// hex digit) becomes its byte; a `%` not followed by two hex digits is kept
  /// literally. The resulting bytes are read as UTF-8 with invalid sequences
  /// replaced by U+FFFD. Never fails.
  public static func decode(_ value: String) -> String {
    let utf8 = value.utf8
    guard utf8.contains(UInt8(ascii: "%")) else { return value }
    let bytes = Array(utf8)
    var output: [UInt8] = []
    output.reserveCapacity(bytes.count)
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
        let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
      {
        output.append(high << 4 | low)
        index += 3
      } else {
        output.append(byte)
        index += 1
      }
    }
    return String(decoding: output, as: UTF8.self)
  }

  private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

  private static func needsEscaping(_ byte: UInt8) -> Bool {
    byte < 0x20 || byte > 0x7E || byte == UInt8(ascii: "%")
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}
