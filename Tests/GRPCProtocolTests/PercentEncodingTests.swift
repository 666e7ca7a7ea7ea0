// Tests/GRPCProtocolTests/PercentEncodingTests.swift - grpc-message percent-encoding

import GRPCProtocol
import Testing

@Suite("grpc-message percent-encoding")
struct PercentEncodingTests {
  @Test(
    "encoding escapes bytes outside 0x20–0x7E and %, upper-case hex",
    arguments: [
      ("", ""),
      ("plain ASCII text, with punctuation: ~!@#$^&*()", "plain ASCII text, with punctuation: ~!@#$^&*()"),
      ("100%", "100%25"),
      ("%25", "%2525"),
      ("line\nbreak", "line%0Abreak"),
      ("tab\there", "tab%09here"),
      ("\u{7F}", "%7F"),
      ("\u{0}", "%00"),
      ("é", "%C3%A9"),  // two-byte UTF-8
      ("€", "%E2%82%AC"),  // three-byte UTF-8
      ("🚕", "%F0%9F%9A%95"),  // four-byte UTF-8
      ("Trip 'x' not found: déjà vu", "Trip 'x' not found: d%C3%A9j%C3%A0 vu"),
    ])
  func encoding(message: String, expected: String) {
    #expect(GRPCPercentEncoding.encode(message) == expected)
    #expect(GRPCPercentEncoding.decode(expected) == message)
  }

  @Test("every byte 0x20–0x7E but % passes through unchanged; every other byte is escaped")
  func everyASCIIByte() {
    for scalar in UInt8(0)...UInt8(0x7F) {
      let text = String(UnicodeScalar(scalar))
      let encoded = GRPCPercentEncoding.encode(text)
      if (0x20...0x7E).contains(scalar), scalar != UInt8(ascii: "%") {
        #expect(encoded == text)
      } else {
        let hex = String(scalar, radix: 16, uppercase: true)
        #expect(encoded == "%" + (hex.count == 1 ? "0" + hex : hex))
      }
      #expect(GRPCPercentEncoding.decode(encoded) == text)
    }
  }

  @Test(
    "decoding accepts both cases of hex digits and keeps invalid escapes raw",
    arguments: [
      ("%c3%a9", "é"),
      ("%C3%a9", "é"),
      ("%", "%"),  // lone percent
      ("50%", "50%"),
      ("%2", "%2"),  // truncated escape at the end
      ("%zz", "%zz"),  // non-hex
      ("%g0ok", "%g0ok"),
      ("%0g", "%0g"),
      ("%%41", "%A"),  // the first % is not an escape, the second is
      ("%2541", "%41"),  // decoded once, not twice
      ("a%20b", "a b"),
      ("no escapes at all", "no escapes at all"),
      ("raw é stays", "raw é stays"),  // non-ASCII that should have been escaped is tolerated
    ])
  func decoding(value: String, expected: String) {
    #expect(GRPCPercentEncoding.decode(value) == expected)
  }

  @Test(
    "decoding invalid UTF-8 replaces it with U+FFFD instead of failing",
    arguments: [
      ("%FF", "\u{FFFD}"),
      ("ok %C3 then", "ok \u{FFFD} then"),  // truncated two-byte sequence
      ("%E2%82", "\u{FFFD}"),  // truncated three-byte sequence
      ("%C0%AF", "\u{FFFD}\u{FFFD}"),  // overlong encoding
      ("%ED%A0%80", "\u{FFFD}\u{FFFD}\u{FFFD}"),  // UTF-16 surrogate
    ])
  func invalidUTF8(value: String, expected: String) {
    #expect(GRPCPercentEncoding.decode(value) == expected)
  }

  @Test("random strings round-trip")
  func roundTrip() {
    let pieces = ["a", " ", "%", "\n", "é", "€", "🚕", "~", "\u{7F}", "%41", "\u{0}", "Z"]
    var state: UInt64 = 42
    for _ in 0..<500 {
      var text = ""
      for _ in 0..<12 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        text += pieces[Int(state >> 33) % pieces.count]
      }
      let encoded = GRPCPercentEncoding.encode(text)
      #expect(encoded.utf8.allSatisfy { (0x20...0x7E).contains($0) })
      #expect(GRPCPercentEncoding.decode(encoded) == text)
    }
  }
}
