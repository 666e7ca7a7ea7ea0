// Tests/JSONWebTokenTests/VerificationTests.swift - tampering, algorithm confusion, unusable keys

import JSONWebToken
import Testing

/// `token` with its payload replaced by `payload`, header and signature kept.
func replacingPayload(of token: String, with payload: String) -> String {
  let pieces = parts(token)
  return pieces[0] + "." + base64url(payload) + "." + pieces[2]
}

/// `token` with its signature replaced by `signature`.
func replacingSignature(of token: String, with signature: [UInt8]) -> String {
  let pieces = parts(token)
  return pieces[0] + "." + pieces[1] + "." + base64url(signature)
}

@Suite("Tampering")
struct TamperingTests {
  static let keysToTry: [String] = ["HS256", "RS256"]

  /// A signed token and the key that verifies it, for `algorithm`.
  static func signed(_ algorithm: String) throws -> (token: String, key: JWTVerificationKey) {
    if algorithm == "HS256" {
      return (
        try JSONWebToken.sign(claims: sampleClaims(), key: .hs256(secret: testSecret)), .hs256(secret: testSecret)
      )
    }
    let keys = try TestKeys.get()
    let token = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.privateKey))
    return (token, .rs256(publicKeyPEM: keys.publicKey))
  }

  @Test("a changed payload under the original signature is a bad signature", arguments: keysToTry)
  func tamperedPayload(algorithm: String) throws {
    let (token, key) = try Self.signed(algorithm)
    try JSONWebToken(parsing: token).verify(with: key)
    let original = try #require(decodedPart(token, 1))
    let forged = replacingPayload(of: token, with: original.replacing("trip-7", with: "trip-8"))
    let parsed = try JSONWebToken(parsing: forged)
    #expect(parsed.claims.tripID == "trip-8")
    expectJWTError(.badSignature) { try parsed.verify(with: key) }
  }

  @Test("a changed header under the original signature is a bad signature", arguments: keysToTry)
  func tamperedHeader(algorithm: String) throws {
    let (token, key) = try Self.signed(algorithm)
    let pieces = parts(token)
    let forged = base64url(#"{"alg":"\#(algorithm)","typ":"JWT","kid":"x"}"#) + "." + pieces[1] + "." + pieces[2]
    expectJWTError(.badSignature) { try JSONWebToken(parsing: forged).verify(with: key) }
  }

  @Test("a flipped bit, a truncated or an empty signature is a bad signature", arguments: keysToTry)
  func tamperedSignature(algorithm: String) throws {
    let (token, key) = try Self.signed(algorithm)
    let signature = try JSONWebToken(parsing: token).signature
    for position in [0, signature.count / 2, signature.count - 1] {
      var flipped = signature
      flipped[position] ^= 0x01
      expectJWTError(.badSignature) {
        try JSONWebToken(parsing: replacingSignature(of: token, with: flipped)).verify(with: key)
      }
    }
    let truncated = Array(signature.dropLast())
    expectJWTError(.badSignature) {
      try JSONWebToken(parsing: replacingSignature(of: token, with: truncated)).verify(with: key)
    }
    let extended = signature + [0]
    expectJWTError(.badSignature) {
      try JSONWebToken(parsing: replacingSignature(of: token, with: extended)).verify(with: key)
    }
    expectJWTError(.badSignature) {
      try JSONWebToken(parsing: replacingSignature(of: token, with: [])).verify(with: key)
    }
  }

  @Test("the wrong secret or the wrong RSA key is a bad signature")
  func wrongKeys() throws {
    let keys = try TestKeys.get()
    let hs = try JSONWebToken(parsing: JSONWebToken.sign(claims: sampleClaims(), key: .hs256(secret: testSecret)))
    // Not `+ [0]`: HMAC zero-pads keys shorter than its block (RFC 2104), so K and K || 0x00 are one key.
    expectJWTError(.badSignature) { try hs.verify(with: .hs256(secret: testSecret + [1])) }
    expectJWTError(.badSignature) { try hs.verify(with: .hs256(secret: Array(testSecret.dropLast()))) }
    let rs = try JSONWebToken(
      parsing: JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.privateKey)))
    expectJWTError(.badSignature) { try rs.verify(with: .rs256(publicKeyPEM: keys.otherPublicKey)) }
  }
}

@Suite("Algorithm confusion")
struct AlgorithmConfusionTests {
  @Test("an HS256 token verified with an RSA key, and an RS256 token with a secret, are refused")
  func mismatchedKeyTypes() throws {
    let keys = try TestKeys.get()
    let hs = try JSONWebToken(parsing: JSONWebToken.sign(claims: sampleClaims(), key: .hs256(secret: testSecret)))
    expectJWTError(.unsupportedAlgorithm) { try hs.verify(with: .rs256(publicKeyPEM: keys.publicKey)) }
    let rs = try JSONWebToken(
      parsing: JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.privateKey)))
    expectJWTError(.unsupportedAlgorithm) { try rs.verify(with: .hs256(secret: testSecret)) }
  }

  @Test("the classic attack: an HS256 token keyed with the server's RSA public key PEM is refused")
  func publicKeyAsHMACSecret() throws {
    let keys = try TestKeys.get()
    var claims = sampleClaims()
    claims.tripID = "*"
    let forged = try JSONWebToken.sign(claims: claims, key: .hs256(secret: Array(keys.publicKey.utf8)))
    let parsed = try JSONWebToken(parsing: forged)
    // The forgery is a valid HMAC under the PEM bytes, so only the algorithm check stops it.
    try parsed.verify(with: .hs256(secret: Array(keys.publicKey.utf8)))
    expectJWTError(.unsupportedAlgorithm) { try parsed.verify(with: .rs256(publicKeyPEM: keys.publicKey)) }
    expectJWTError(.unsupportedAlgorithm) { try parsed.verify(with: .rs256(publicKeyPEM: keys.certificate)) }
  }

  @Test(
    "alg none and other algorithms parse but never verify",
    arguments: ["none", "None", "NONE", "hs256", "HS256 ", "HS384", "HS512", "RS512", "PS256", "ES256", "EdDSA", ""])
  func unsupportedAlgorithms(algorithm: String) throws {
    let keys = try TestKeys.get()
    for signature in [[], Array(repeating: UInt8(0), count: 32)] as [[UInt8]] {
      let token = compact(
        header: #"{"alg":"\#(algorithm)","typ":"JWT"}"#, payload: #"{"exp":4102444800,"authorization":{"tripid":"*"}}"#,
        signature: signature)
      let parsed = try JSONWebToken(parsing: token)
      #expect(parsed.header.algorithm == algorithm)
      #expect(parsed.signature == signature)
      expectJWTError(.unsupportedAlgorithm) { try parsed.verify(with: .hs256(secret: testSecret)) }
      expectJWTError(.unsupportedAlgorithm) { try parsed.verify(with: .rs256(publicKeyPEM: keys.publicKey)) }
    }
  }

  @Test("an unsecured token (empty third part) claiming HS256 or RS256 is a bad signature")
  func emptySignatureWithRealAlgorithm() throws {
    let keys = try TestKeys.get()
    let hs = try JSONWebToken(parsing: compact(header: #"{"alg":"HS256"}"#, payload: #"{"exp":1}"#, signature: []))
    #expect(hs.signature.isEmpty)
    expectJWTError(.badSignature) { try hs.verify(with: .hs256(secret: testSecret)) }
    let rs = try JSONWebToken(parsing: compact(header: #"{"alg":"RS256"}"#, payload: #"{"exp":1}"#, signature: []))
    expectJWTError(.badSignature) { try rs.verify(with: .rs256(publicKeyPEM: keys.publicKey)) }
  }
}

@Suite("Unusable keys")
struct KeyTests {
  @Test("HS256 secrets shorter than 32 bytes are refused for signing and verifying; 32 bytes are enough")
  func shortSecrets() throws {
    for length in [0, 1, 16, 31] {
      let secret = [UInt8](repeating: 0x42, count: length)
      expectJWTError(.invalidKey) { _ = try JSONWebToken.sign(claims: sampleClaims(), key: .hs256(secret: secret)) }
      let token = try JSONWebToken(
        parsing: compact(payload: #"{"exp":1}"#, signature: [UInt8](repeating: 0, count: 32)))
      expectJWTError(.invalidKey) { try token.verify(with: .hs256(secret: secret)) }
    }
    let minimum = [UInt8](repeating: 0x42, count: 32)
    let token = try JSONWebToken.sign(claims: sampleClaims(), key: .hs256(secret: minimum))
    try JSONWebToken(parsing: token).verify(with: .hs256(secret: minimum))
  }

  @Test("RSA keys under 2048 bits are refused")
  func weakRSA() throws {
    let keys = try TestKeys.get()
    let error = expectJWTError(.invalidKey) {
      _ = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.weakPrivateKey))
    }
    #expect(error?.message.contains("1024") == true)
    let token = try JSONWebToken(parsing: compact(header: #"{"alg":"RS256"}"#, payload: #"{"exp":1}"#))
    expectJWTError(.invalidKey) { try token.verify(with: .rs256(publicKeyPEM: keys.weakPublicKey)) }
  }

  @Test("EC keys are not RS256 keys")
  func ecKeys() throws {
    let keys = try TestKeys.get()
    expectJWTError(.invalidKey) {
      _ = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.ecPrivateKey))
    }
    let token = try JSONWebToken(parsing: compact(header: #"{"alg":"RS256"}"#, payload: #"{"exp":1}"#))
    expectJWTError(.invalidKey) { try token.verify(with: .rs256(publicKeyPEM: keys.ecPublicKey)) }
  }

  @Test("an encrypted private key fails without prompting for a passphrase")
  func encryptedPrivateKey() throws {
    let keys = try TestKeys.get()
    #expect(keys.encryptedPrivateKey.contains("ENCRYPTED"))
    expectJWTError(.invalidKey) {
      _ = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.encryptedPrivateKey))
    }
  }

  @Test("text that is not PEM, a public key where a private one is needed, and the reverse, are invalid keys")
  func notKeys() throws {
    let keys = try TestKeys.get()
    let token = try JSONWebToken(parsing: compact(header: #"{"alg":"RS256"}"#, payload: #"{"exp":1}"#))
    for pem in ["", "not a key", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", keys.privateKey] {
      expectJWTError(.invalidKey) { try token.verify(with: .rs256(publicKeyPEM: pem)) }
    }
    for pem in ["", "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n", keys.publicKey, keys.certificate]
    {
      expectJWTError(.invalidKey) { _ = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: pem)) }
    }
  }

  @Test("keys report the algorithm they sign and verify with")
  func keyAlgorithms() {
    #expect(JWTSigningKey.hs256(secret: testSecret).algorithm == "HS256")
    #expect(JWTSigningKey.rs256(privateKeyPEM: "").algorithm == "RS256")
    #expect(JWTVerificationKey.hs256(secret: testSecret).algorithm == "HS256")
    #expect(JWTVerificationKey.rs256(publicKeyPEM: "").algorithm == "RS256")
  }
}
