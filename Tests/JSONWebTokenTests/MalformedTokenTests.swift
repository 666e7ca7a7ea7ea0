// Tests/JSONWebTokenTests/MalformedTokenTests.swift - structure, base64url and JSON that must be refused

import JSONWebToken
import Primitives
import Testing

/// A labelled token for parameterized tests.
struct Case: Sendable, CustomTestStringConvertible {
  var label: String
  var token: String
  var testDescription: String { label }

  init(_ label: String, _ token: String) {
    self.label = label
    self.token = token
  }

  /// A case whose payload is the JSON text `payload` under a valid header.
  static func payload(_ label: String, _ payload: String) -> Case { Case(label, compact(payload: payload)) }

  /// A case whose header is the JSON text `header` with a valid payload.
  static func header(_ label: String, _ header: String) -> Case {
    Case(label, compact(header: header, payload: #"{"exp":1}"#))
  }
}

/// `levels` nested arrays around `1` as the value of claim `a`: total nesting `levels + 1`.
func nestedPayload(levels: Int) -> String {
  #"{"a":"# + String(repeating: "[", count: levels) + "1" + String(repeating: "]", count: levels) + "}"
}

@Suite("Malformed tokens")
struct MalformedTokenTests {
  static let valid = compact(payload: #"{"exp":1}"#)

  @Test(
    "tokens without exactly three base64url parts are malformed",
    arguments: [
      Case("empty", ""),
      Case("one part", "eyJhbGciOiJIUzI1NiJ9"),
      Case("two parts", parts(valid)[0] + "." + parts(valid)[1]),
      Case("four parts", valid + ".AAAA"),
      Case("five parts (JWE)", valid + ".AAAA.AAAA"),
      Case("only dots", ".."),
      Case("empty header", "." + parts(valid)[1] + "." + parts(valid)[2]),
      Case("empty payload", parts(valid)[0] + ".." + parts(valid)[2]),
      Case("padding", parts(valid)[0] + "=." + parts(valid)[1] + "." + parts(valid)[2]),
      Case("padded signature", parts(valid)[0] + "." + parts(valid)[1] + ".AQID=="),
      Case("standard alphabet +", parts(valid)[0] + "." + parts(valid)[1] + ".+/+/"),
      Case("whitespace", parts(valid)[0] + " ." + parts(valid)[1] + "." + parts(valid)[2]),
      Case("newline inside", parts(valid)[0] + "." + parts(valid)[1] + ".AQ\nID"),
      Case("length 4n+1", parts(valid)[0] + "." + parts(valid)[1] + ".AAAAA"),
      Case("non-zero unused bits", parts(valid)[0] + "." + parts(valid)[1] + "._x"),
      Case("non-ASCII", parts(valid)[0] + "." + parts(valid)[1] + ".é"),
      Case("percent-encoded", parts(valid)[0] + "." + parts(valid)[1] + ".AQ%3D"),
    ])
  func structure(_ test: Case) {
    expectJWTError(.malformed) { _ = try JSONWebToken(parsing: test.token) }
  }

  @Test(
    "payloads that are not exactly one JSON object are malformed",
    arguments: [
      Case.payload("not JSON", "not json"),
      Case.payload("array", "[1]"),
      Case.payload("string", #""exp""#),
      Case.payload("number", "1"),
      Case.payload("null", "null"),
      Case.payload("empty", ""),
      Case.payload("whitespace only", " \n"),
      Case.payload("trailing garbage", #"{"exp":1}x"#),
      Case.payload("two objects", #"{"exp":1}{}"#),
      Case.payload("unterminated object", #"{"exp":1"#),
      Case.payload("trailing comma", #"{"exp":1,}"#),
      Case.payload("missing colon", #"{"exp" 1}"#),
      Case.payload("unquoted name", #"{exp:1}"#),
      Case.payload("single quotes", #"{'exp':1}"#),
      Case.payload("comment", #"{"exp":1 /* c */}"#),
      Case.payload("leading zero", #"{"n":01}"#),
      Case.payload("bare fraction", #"{"n":.5}"#),
      Case.payload("dangling point", #"{"n":1.}"#),
      Case.payload("plus sign", #"{"n":+1}"#),
      Case.payload("empty exponent", #"{"n":1e}"#),
      Case.payload("NaN", #"{"n":NaN}"#),
      Case.payload("Infinity", #"{"n":Infinity}"#),
      Case.payload("hex", #"{"n":0x10}"#),
      Case.payload("out of range", #"{"n":1e400}"#),
      Case.payload("bad literal", #"{"n":tru}"#),
      Case.payload("capital literal", #"{"n":True}"#),
      Case.payload("unterminated string", #"{"s":"abc}"#),
      Case.payload("raw newline in string", "{\"s\":\"a\nb\"}"),
      Case.payload("raw tab in string", "{\"s\":\"a\tb\"}"),
      Case.payload("invalid escape", #"{"s":"\x41"}"#),
      Case.payload("short unicode escape", #"{"s":"\u41"}"#),
      Case.payload("non-hex unicode escape", #"{"s":"\u00G1"}"#),
      Case.payload("lone high surrogate", #"{"s":"\ud83d"}"#),
      Case.payload("lone low surrogate", #"{"s":"\ude95"}"#),
      Case.payload("high surrogate then letter", #"{"s":"\ud83dx"}"#),
      Case.payload("high surrogate then non-low escape", #"{"s":"\ud83d\u0041"}"#),
      Case.payload("duplicate claim", #"{"exp":1,"exp":99999999999}"#),
      Case.payload("duplicate nested member", #"{"authorization":{"tripid":"a","tripid":"*"}}"#),
      Case.payload("missing comma in array", #"{"a":[1 2]}"#),
      Case.payload("unclosed array", #"{"a":[1,2}"#),
      Case.payload("exp is a string", #"{"exp":"1700000000"}"#),
      Case.payload("nbf is a bool", #"{"nbf":true}"#),
      Case.payload("iat is null", #"{"iat":null}"#),
      Case.payload("iss is a number", #"{"iss":1}"#),
      Case.payload("sub is an object", #"{"sub":{}}"#),
      Case.payload("jti is an array", #"{"jti":["a"]}"#),
      Case.payload("aud is a number", #"{"aud":1}"#),
      Case.payload("aud holds a number", #"{"aud":["a",1]}"#),
      Case.payload("authorization is a string", #"{"authorization":"tripid=trip-7"}"#),
      Case.payload("33 levels of nesting", nestedPayload(levels: 32)),
      Case.payload("20000 levels of nesting", nestedPayload(levels: 20_000)),
      Case.payload("8000 unclosed nested objects", String(repeating: #"{"a":"#, count: 8_000)),
    ])
  func payloadJSON(_ test: Case) {
    expectJWTError(.malformed) { _ = try JSONWebToken(parsing: test.token) }
  }

  @Test(
    "headers without a string alg, with wrong types, or with crit are malformed",
    arguments: [
      Case.header("no alg", #"{"typ":"JWT"}"#),
      Case.header("alg is null", #"{"alg":null}"#),
      Case.header("alg is a number", #"{"alg":256}"#),
      Case.header("alg is an array", #"{"alg":["HS256"]}"#),
      Case.header("typ is a number", #"{"alg":"HS256","typ":1}"#),
      Case.header("kid is an object", #"{"alg":"HS256","kid":{}}"#),
      Case.header("duplicate alg", #"{"alg":"HS256","alg":"none"}"#),
      Case.header("crit", #"{"alg":"HS256","crit":["b64"],"b64":false}"#),
      Case.header("array header", #"["HS256"]"#),
    ])
  func header(_ test: Case) {
    expectJWTError(.malformed) { _ = try JSONWebToken(parsing: test.token) }
  }

  @Test("bytes that are not UTF-8 inside JSON strings are malformed")
  func invalidUTF8() {
    let header = Array(#"{"alg":"HS256"}"#.utf8)
    let badSequences: [[UInt8]] = [
      [0xC3, 0x28], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF8, 0x88, 0x80, 0x80], [0xFF],
    ]
    for bad in badSequences {
      let payload = Array(#"{"sub":""#.utf8) + bad + Array(#""}"#.utf8)
      expectJWTError(.malformed) { _ = try JSONWebToken(parsing: compact(header: header, payload: payload)) }
    }
  }

  @Test("nesting up to 32 levels is accepted, 33 is not")
  func depthLimit() throws {
    let parsed = try JSONWebToken(parsing: compact(payload: nestedPayload(levels: 31)))
    var value = try #require(parsed.claims.other["a"])
    var levels = 0
    while case .array(let elements) = value {
      levels += 1
      value = elements[0]
    }
    #expect(levels == 31)
    #expect(value == 1)
    let error = expectJWTError(.malformed) {
      _ = try JSONWebToken(parsing: compact(payload: nestedPayload(levels: 32)))
    }
    #expect(error?.message.contains("nested deeper than 32") == true)
    // Far deeper nesting fails the same way, at the same depth, without exhausting the stack.
    let deep = expectJWTError(.malformed) {
      _ = try JSONWebToken(parsing: compact(payload: nestedPayload(levels: 20_000)))
    }
    #expect(deep?.message.contains("nested deeper than 32") == true)
    let objects = String(repeating: #"{"a":"#, count: 8_000)
    let deepObjects = expectJWTError(.malformed) { _ = try JSONWebToken(parsing: compact(payload: objects)) }
    #expect(deepObjects?.message.contains("nested deeper than 32") == true)
  }

  @Test("claims nested deeper than the parser accepts cannot be signed either")
  func depthLimitWhenSigning() throws {
    func nested(_ levels: Int) -> JWTClaimValue {
      (0..<levels).reduce(JWTClaimValue.number(1)) { inner, _ in .array([inner]) }
    }
    let ok = try JSONWebToken.sign(claims: JWTClaims(other: ["a": nested(31)]), key: .hs256(secret: testSecret))
    #expect(try JSONWebToken(parsing: ok).claims.other["a"] == nested(31))
    expectJWTError(.malformed) {
      _ = try JSONWebToken.sign(claims: JWTClaims(other: ["a": nested(32)]), key: .hs256(secret: testSecret))
    }
  }

  @Test("claims that JSON cannot carry are refused when signing")
  func unsignableClaims() {
    for number in [Double.nan, .infinity, -.infinity] {
      expectJWTError(.malformed) {
        _ = try JSONWebToken.sign(claims: JWTClaims(expiresAt: number), key: .hs256(secret: testSecret))
      }
      expectJWTError(.malformed) {
        _ = try JSONWebToken.sign(claims: JWTClaims(other: ["n": [.number(number)]]), key: .hs256(secret: testSecret))
      }
    }
    for name in ["exp", "iss", "aud", "authorization"] {
      expectJWTError(.malformed) {
        _ = try JSONWebToken.sign(claims: JWTClaims(other: [name: "x"]), key: .hs256(secret: testSecret))
      }
    }
  }

  @Test("a token longer than the maximum is refused before decoding")
  func tooLong() throws {
    let filler = String(repeating: "x", count: JSONWebToken.maximumLength)
    let token = compact(payload: #"{"exp":1,"pad":""# + filler + #""}"#)
    let error = expectJWTError(.malformed) { _ = try JSONWebToken(parsing: token) }
    #expect(error?.message.contains("\(JSONWebToken.maximumLength)") == true)
  }

  @Test("escapes decode: \\\" \\\\ \\/ \\b \\f \\n \\r \\t, \\u with surrogate pairs, \\u0000")
  func escapes() throws {
    let token = compact(
      payload: #"{"sub":"q\"b\\s\/b\bf\fn\nr\rt\t e\u00e9 E\u00C9 taxi\ud83d\ude95 nul\u0000 ","exp" : 1 }"#)
    let claims = try JSONWebToken(parsing: token).claims
    #expect(claims.subject == "q\"b\\s/b\u{08}f\u{0C}n\nr\rt\t eé EÉ taxi🚕 nul\u{0} ")
  }

  @Test("whitespace between tokens and every number form of the grammar are accepted")
  func lenientWhereTheGrammarIs() throws {
    let token = compact(
      header: " {\r\n\t\"alg\" : \"HS256\" } ",
      payload: #" { "exp" : 1E3 , "nbf":-0.5e+1,"iat":0.0,"n":[-0,1e-2,2E+0] } "#)
    let parsed = try JSONWebToken(parsing: token)
    #expect(parsed.header.algorithm == "HS256")
    #expect(parsed.claims.expiresAt == 1000)
    #expect(parsed.claims.notBefore == -5)
    #expect(parsed.claims.issuedAt == 0)
    #expect(parsed.claims.other["n"] == [0, 0.01, 2])
  }

  @Test("unknown header parameters are ignored; the signing input is kept as received")
  func unknownHeaderParameters() throws {
    let token = compact(header: #"{"alg":"HS256","cty":"x","x5t":"abc","jku":"https://x"}"#, payload: #"{"exp":1}"#)
    let parsed = try JSONWebToken(parsing: token)
    #expect(parsed.header == JWTHeader(algorithm: "HS256", type: nil, keyID: nil))
    #expect(parsed.signingInput == parts(token)[0] + "." + parts(token)[1])
  }

  @Test("random mutations of a valid token either parse or throw malformed, never crash")
  func mutations() throws {
    let valid = try JSONWebToken.sign(claims: sampleClaims(), key: .hs256(secret: testSecret))
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"".utf8)
    var random = SplitMix64(seed: 0x5EED)
    var outcomes = (parsed: 0, malformed: 0)
    for _ in 0..<3000 {
      var bytes = Array(valid.utf8)
      for _ in 0..<Int.random(in: 1...4, using: &random) {
        let index = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<3, using: &random) {
        case 0: bytes[index] = alphabet.randomElement(using: &random)!
        case 1: bytes.remove(at: index)
        default: bytes.insert(alphabet.randomElement(using: &random)!, at: index)
        }
      }
      do {
        let token = try JSONWebToken(parsing: String(decoding: bytes, as: UTF8.self))
        outcomes.parsed += 1
        // A mutated token that still parses must not verify unless it is byte for byte the original.
        if String(decoding: bytes, as: UTF8.self) != valid {
          #expect(throws: JWTError.self) { try token.verify(with: .hs256(secret: testSecret)) }
        }
      } catch {
        #expect(error.kind == .malformed)
        outcomes.malformed += 1
      }
    }
    #expect(outcomes.parsed > 0 && outcomes.malformed > 0)
  }

  @Test("random bytes as a payload either parse as an object or throw malformed")
  func randomPayloads() {
    var random = SplitMix64(seed: 42)
    let jsonish = Array(#"{}[]":,0123456789.-+eEtrufalsn \u\"#.utf8) + [0x00, 0x0A, 0xC3, 0xA9, 0xFF]
    var parsedCount = 0
    var malformedCount = 0
    for _ in 0..<3000 {
      let length = Int.random(in: 0..<40, using: &random)
      var payload = [UInt8(ascii: "{")]
      for _ in 0..<length { payload.append(jsonish.randomElement(using: &random)!) }
      do {
        _ = try JSONWebToken(parsing: compact(header: Array(#"{"alg":"HS256"}"#.utf8), payload: payload))
        parsedCount += 1
      } catch {
        #expect(error.kind == .malformed)
        malformedCount += 1
      }
    }
    // Every input was either accepted or refused as malformed; most are refused.
    #expect(parsedCount + malformedCount == 3000)
    #expect(malformedCount > 2000)
  }
}
