// Tests/JSONWebTokenTests/ErrorDescriptionTests.swift - errors name the problem, never the token or the key

import JSONWebToken
import Testing

@Suite("Error descriptions")
struct ErrorDescriptionTests {
  /// Requires that `error`'s description quotes none of `secrets` (nor any part of them longer than 8 characters).
  func expectNoLeak(_ error: JWTError?, _ secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    guard let error else { return }
    let text = error.description
    #expect(text.hasPrefix("JWT \(error.kind): "), sourceLocation: sourceLocation)
    #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
    for secret in secrets where secret.count > 8 {
      #expect(!text.contains(secret), "\(text)", sourceLocation: sourceLocation)
      // No 12-character window of the secret appears either (catches truncated or partial quoting).
      let characters = Array(secret)
      for start in stride(from: 0, to: max(characters.count - 12, 0), by: 3) {
        let window = String(characters[start..<start + 12])
        #expect(!text.contains(window), "\(text) quotes \(window)", sourceLocation: sourceLocation)
      }
    }
  }

  @Test("verification, validation and parsing errors quote neither the token nor the secret")
  func noTokenOrSecret() throws {
    let secretText = "s3cr3t-value-that-must-never-be-logged-0123456789"
    let secret = Array(secretText.utf8)
    let token = try JSONWebToken.sign(claims: sampleClaims(), key: .hs256(secret: secret), keyID: "kid-visible")
    let forbidden = [token, secretText, hex(secret)] + parts(token)
    let parsed = try JSONWebToken(parsing: token)

    expectNoLeak(expectJWTError(.badSignature) { try parsed.verify(with: .hs256(secret: secret + [1])) }, forbidden)
    expectNoLeak(expectJWTError(.expired) { try parsed.validate(now: 1_800_000_000) }, forbidden)
    expectNoLeak(expectJWTError(.notYetValid) { try parsed.validate(now: 1_600_000_000) }, forbidden)
    expectNoLeak(expectJWTError(.unsupportedAlgorithm) { try parsed.verify(with: .rs256(publicKeyPEM: "")) }, forbidden)
    expectNoLeak(
      expectJWTError(.invalidKey) { try parsed.verify(with: .hs256(secret: Array(secret.prefix(20)))) }, forbidden)
    let malformed = [
      token + ".x", parts(token)[0] + ".!!." + parts(token)[2], parts(token)[0] + "." + parts(token)[1] + ".AB",
    ]
    for text in malformed {
      expectNoLeak(expectJWTError(.malformed) { _ = try JSONWebToken(parsing: text) }, forbidden + [text])
    }
  }

  @Test("key errors quote no PEM, and JSON errors quote no claim values")
  func noKeyMaterialOrClaims() throws {
    let keys = try TestKeys.get()
    let pemBody = keys.privateKey.split(separator: "\n").dropFirst().dropLast().map(String.init)
    let error = expectJWTError(.invalidKey) {
      _ = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.encryptedPrivateKey))
    }
    expectNoLeak(error, pemBody + [keys.encryptedPrivateKey])
    let weak = expectJWTError(.invalidKey) {
      _ = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.weakPrivateKey))
    }
    expectNoLeak(weak, keys.weakPrivateKey.split(separator: "\n").map(String.init))

    let privateValue = "user-password-hunter2-do-not-log"
    let bad = compact(payload: #"{"sub":"\#(privateValue)","exp":"soon"}"#)
    expectNoLeak(expectJWTError(.malformed) { _ = try JSONWebToken(parsing: bad) }, [privateValue, bad])
    let longAlgorithm = String(repeating: "A", count: 200)
    let weird = try JSONWebToken(parsing: compact(header: #"{"alg":"\#(longAlgorithm)"}"#, payload: "{}"))
    expectNoLeak(
      expectJWTError(.unsupportedAlgorithm) { try weird.verify(with: .hs256(secret: testSecret)) }, [longAlgorithm])
  }

  @Test("descriptions are `JWT <kind>: <message>` and say what is wrong")
  func format() throws {
    #expect(JWTError(.expired, "x").description == "JWT expired: x")
    let twoParts = expectJWTError(.malformed) { _ = try JSONWebToken(parsing: "a.b") }
    #expect(twoParts?.message.contains("2 dot-separated parts") == true)
    let json = expectJWTError(.malformed) { _ = try JSONWebToken(parsing: compact(payload: #"{"exp":1,}"#)) }
    #expect(json?.message.contains("payload is not valid JSON") == true)
    #expect(json?.message.contains("at byte 9") == true)
    let none = try JSONWebToken(parsing: compact(header: #"{"alg":"none"}"#, payload: "{}", signature: []))
    let algorithm = expectJWTError(.unsupportedAlgorithm) { try none.verify(with: .hs256(secret: testSecret)) }
    #expect(algorithm?.message == #"the token's algorithm "none" does not match the HS256 key"#)
  }
}
