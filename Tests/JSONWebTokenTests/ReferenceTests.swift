// Tests/JSONWebTokenTests/ReferenceTests.swift - RFC 7515's published example and the openssl CLI as references

import Foundation
import JSONWebToken
import Testing

@Suite("RFC 7515 appendix A.1 (HS256)")
struct RFC7515Tests {
  // The example's compact serialization and its JWK symmetric key `k`, copied from RFC 7515 A.1.
  static let token =
    "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
    + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
    + ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
  static let key = "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"

  @Test("the example's header and payload are the RFC's exact bytes, CRLFs included")
  func exampleParts() throws {
    #expect(decodedPart(Self.token, 0) == "{\"typ\":\"JWT\",\r\n \"alg\":\"HS256\"}")
    #expect(
      decodedPart(Self.token, 1)
        == "{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n \"http://example.com/is_root\":true}")
  }

  @Test("the example parses into the published header and claims")
  func parses() throws {
    let token = try JSONWebToken(parsing: Self.token)
    #expect(token.header == JWTHeader(algorithm: "HS256", type: "JWT"))
    #expect(token.claims.issuer == "joe")
    #expect(token.claims.expiresAt == 1_300_819_380)
    #expect(token.claims.other == ["http://example.com/is_root": true])
    #expect(base64url(token.signature) == "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
  }

  @Test("the published signature verifies under the published key, and not under a changed one")
  func verifies() throws {
    let key = try #require(fromBase64url(Self.key))
    #expect(key.count == 64)
    let token = try JSONWebToken(parsing: Self.token)
    try token.verify(with: .hs256(secret: key))
    var changed = key
    changed[0] ^= 1
    expectJWTError(.badSignature) { try token.verify(with: .hs256(secret: changed)) }
  }

  @Test("the example's times: valid before 1300819380, expired from then on (with the leeway)")
  func times() throws {
    let token = try JSONWebToken(parsing: Self.token)
    try token.validate(now: 1_300_819_379, leeway: 0)
    try token.validate(now: 1_300_819_409, leeway: 30)
    expectJWTError(.expired) { try token.validate(now: 1_300_819_380, leeway: 0) }
    expectJWTError(.expired) { try token.validate(now: 1_300_819_410, leeway: 30) }
  }
}

@Suite("Cross-checks with the openssl CLI")
struct OpenSSLCrossCheckTests {
  @Test("HS256 signatures equal `openssl dgst -sha256 -mac HMAC` of the signing input", arguments: [0, 1, 2])
  func hmacMatchesOpenSSL(variant: Int) throws {
    // A binary secret (hexkey), an ASCII one, and a long one.
    let secrets: [[UInt8]] = [
      (0..<32).map { UInt8($0 * 7 & 0xFF) },
      testSecret,
      [UInt8](repeating: 0xA5, count: 200),
    ]
    let secret = secrets[variant]
    let token = try JSONWebToken.sign(claims: sampleClaims(), key: .hs256(secret: secret), keyID: "v\(variant)")
    let parsed = try JSONWebToken(parsing: token)
    let reference = try withTemporaryDirectory { directory in
      try Data(parsed.signingInput.utf8).write(to: directory.appendingPathComponent("input"))
      return try requireOpenSSL(
        ["dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:\(hex(secret))", "-binary", "input"], in: directory)
    }
    #expect(Array(reference) == parsed.signature)
    #expect(base64url(Array(reference)) == parts(token)[2])
  }

  @Test("RS256 signatures verify with `openssl dgst -verify` and equal `openssl dgst -sign`'s")
  func rsaSignatureMatchesOpenSSL() throws {
    let keys = try TestKeys.get()
    let token = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.privateKey))
    let parsed = try JSONWebToken(parsing: token)
    try withTemporaryDirectory { directory in
      try Data(parsed.signingInput.utf8).write(to: directory.appendingPathComponent("input"))
      try Data(parsed.signature).write(to: directory.appendingPathComponent("ours.sig"))
      try Data(keys.publicKey.utf8).write(to: directory.appendingPathComponent("key.pub"))
      try Data(keys.privateKey.utf8).write(to: directory.appendingPathComponent("key.pem"))
      let verified = try runOpenSSL(
        ["dgst", "-sha256", "-verify", "key.pub", "-signature", "ours.sig", "input"], in: directory)
      #expect(verified.status == 0, "\(verified.stderr)")
      #expect(String(decoding: verified.stdout, as: UTF8.self).contains("Verified OK"))

      // The check above is real: one flipped bit makes openssl refuse.
      var flipped = parsed.signature
      flipped[100] ^= 0x10
      try Data(flipped).write(to: directory.appendingPathComponent("flipped.sig"))
      let refused = try runOpenSSL(
        ["dgst", "-sha256", "-verify", "key.pub", "-signature", "flipped.sig", "input"], in: directory)
      #expect(refused.status != 0)

      // PKCS#1 v1.5 is deterministic: openssl's signature of the same input is byte for byte ours.
      let theirs = try requireOpenSSL(["dgst", "-sha256", "-sign", "key.pem", "-binary", "input"], in: directory)
      #expect(Array(theirs) == parsed.signature)
    }
  }

  @Test("a token whose signature openssl made verifies here")
  func openSSLSignedTokenVerifies() throws {
    let keys = try TestKeys.get()
    let header = base64url(#"{"alg":"RS256","typ":"JWT","kid":"cli"}"#)
    let payload = base64url(#"{"sub":"cli","exp":4102444800,"authorization":{"tripid":"trip-cli"}}"#)
    let signingInput = header + "." + payload
    let signature = try withTemporaryDirectory { directory in
      try Data(signingInput.utf8).write(to: directory.appendingPathComponent("input"))
      try Data(keys.privateKey.utf8).write(to: directory.appendingPathComponent("key.pem"))
      return try requireOpenSSL(["dgst", "-sha256", "-sign", "key.pem", "-binary", "input"], in: directory)
    }
    let token = try JSONWebToken(parsing: signingInput + "." + base64url(Array(signature)))
    try token.verify(with: .rs256(publicKeyPEM: keys.publicKey))
    #expect(token.header.keyID == "cli")
    #expect(token.claims.tripID == "trip-cli")
    expectJWTError(.badSignature) { try token.verify(with: .rs256(publicKeyPEM: keys.otherPublicKey)) }
  }
}
