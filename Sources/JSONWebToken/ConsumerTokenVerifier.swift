// Sources/JSONWebToken/ConsumerTokenVerifier.swift - Fleet Engine consumer tokens, checked as Fleet Engine checks them
//
// Two servers of this package take consumer tokens: FleetSim (a simulated Fleet Engine) and the trip relay
// (which serves the same streaming GetTrip to watchers). Both check a call's `authorization: Bearer <JWT>`
// here, so they refuse the same tokens with the same words:
// 1. the signature verifies under one of the configured keys (a key whose `kid` is the token's when the
//    token names one; the token's `alg` must be the key's: `none` and algorithm confusion never verify);
// 2. `aud` is exactly the configured audience;
// 3. `iss` and `sub` are present, not empty and equal (a service account signs for itself), and `iss` is the
//    expected issuer when one is set;
// 4. `iat` and `exp` are present, `exp - iat` is at most an hour, `iat` at most 30 s in the future, `exp`
//    not past (30 s leeway), `nbf` come (same leeway);
// 5. `authorization.tripid` is present.
// Every refusal is UNAUTHENTICATED with a message naming the check; no message ever quotes the token or a claim.
// Whether the token's trip is the one asked for (PERMISSION_DENIED otherwise) is the caller's check.

internal import Primitives
internal import TLSCrypto

/// Checks consumer tokens (see the file comment). Immutable; keys are parsed once, at configuration.
package struct ConsumerTokenVerifier: Sendable {
  /// A key tokens may be signed with, and the `kid` that names it (if any).
  package struct Key: Sendable {
    /// The key.
    package var key: JWTVerificationKey
    /// The key's ID: a token whose header names a `kid` is verified only with the key of that ID.
    package var keyID: String?

    /// A key, optionally named.
    package init(_ key: JWTVerificationKey, keyID: String? = nil) {
      self.key = key
      self.keyID = keyID
    }
  }

  /// What a verified token grants.
  package struct Grant: Sendable, Hashable {
    /// `authorization.tripid`: one trip's ID, or `*` for every trip (a server token).
    package var tripID: String
    /// The token's `sub` (equal to `iss`): who it was issued to, for per-caller limits.
    package var subject: String
    /// `exp`, Unix seconds.
    package var expiresAt: Double

    /// Whether the grant covers trip `tripID`.
    package func allows(tripID other: String) -> Bool { tripID == "*" || tripID == other }
  }

  /// Fleet Engine's audience, the default.
  package static let fleetEngineAudience = "https://fleetengine.googleapis.com/"
  /// The longest a token may be valid, `exp - iat`, in seconds.
  package static let maxLifetime: Double = 3600
  /// How far clocks may disagree, in seconds.
  package static let leeway: Double = 30

  /// The keys; a token must verify under one of them.
  package var keys: [Key]
  /// The `aud` a token must carry.
  package var audience: String
  /// The `iss` a token must carry, or nil for any issuer whose `iss` equals its `sub`.
  package var expectedIssuer: String?

  /// A verifier for tokens signed with one of `keys`, for `audience`, from `expectedIssuer` (any when nil).
  package init(keys: [Key], audience: String = fleetEngineAudience, expectedIssuer: String? = nil) {
    self.keys = keys
    self.audience = audience
    self.expectedIssuer = expectedIssuer
  }

  /// Checks the value of a call's `authorization` header at `now` (Unix seconds); the grant, or the message
  /// of the UNAUTHENTICATED status to answer with.
  package func verify(authorizationHeader header: String?, now: Double) -> Result<Grant, Refusal> {
    guard let header else { return .failure(Refusal("missing authorization header")) }
    let prefix = "Bearer "
    guard header.hasPrefix(prefix) else { return .failure(Refusal("authorization must be a Bearer token")) }
    let token: JSONWebToken
    do {
      token = try JSONWebToken(parsing: String(header.dropFirst(prefix.count)))
      try verifySignature(token)
    } catch {
      // The JWT error text never contains the token.
      return .failure(Refusal("invalid token: \(error)"))
    }
    if let failed = Self.claimCheckFailure(
      token.claims, audience: audience, expectedIssuer: expectedIssuer, now: now)
    {
      return .failure(Refusal("invalid token: \(failed)"))
    }
    guard let tripID = token.claims.tripID else {
      return .failure(Refusal("the token carries no authorization.tripid claim"))
    }
    return .success(Grant(tripID: tripID, subject: token.claims.subject ?? "", expiresAt: token.claims.expiresAt ?? 0))
  }

  /// Why a token was refused: the message of the UNAUTHENTICATED status (names the check, never the token).
  package struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
  }

  /// Verifies `token`'s signature under the key its `kid` names, else under each key of its algorithm in turn.
  private func verifySignature(_ token: JSONWebToken) throws(JWTError) {
    if let keyID = token.header.keyID, let named = keys.first(where: { $0.keyID == keyID }) {
      try token.verify(with: named.key)
      return
    }
    let candidates = keys.filter { $0.key.algorithm == token.header.algorithm }
    guard !candidates.isEmpty else {
      // No key of the token's algorithm: verify with the first key, whose error names the mismatch.
      guard let first = keys.first else { throw JWTError(.invalidKey, "no key is configured") }
      try token.verify(with: first.key)
      return
    }
    var lastError = JWTError(.badSignature, "no key verifies the signature")
    for candidate in candidates {
      do {
        try token.verify(with: candidate.key)
        return
      } catch {
        lastError = error
      }
    }
    throw lastError
  }

  /// The first claim check (see the file comment) that `claims` fail at `now`, as a sentence naming it; nil
  /// when they pass them all. Quotes only the configuration and numbers, never a claim's text.
  package static func claimCheckFailure(
    _ claims: JWTClaims, audience: String, expectedIssuer: String?, now: Double
  ) -> String? {
    if claims.audience.isEmpty { return "the token has no aud claim" }
    guard claims.audience == [audience] else { return "the token's aud is not \"\(audience)\"" }
    guard let issuer = claims.issuer, !issuer.isEmpty else { return "the token has no iss claim" }
    guard let subject = claims.subject, !subject.isEmpty else { return "the token has no sub claim" }
    guard issuer == subject else { return "the token's iss and sub differ" }
    if let expectedIssuer, issuer != expectedIssuer {
      return "the token's iss is not the expected issuer \"\(expectedIssuer)\""
    }
    guard let issuedAt = claims.issuedAt else { return "the token has no iat claim" }
    guard let expiresAt = claims.expiresAt else { return "the token has no exp claim" }
    // Written so that a NaN fails every check instead of passing it.
    let lifetime = expiresAt - issuedAt
    guard lifetime <= maxLifetime else {
      let seconds = lifetime < 1e15 ? String(Int64(lifetime.rounded(.up))) : "more than 10^15"
      return "the token's lifetime (exp - iat) is \(seconds) s, more than \(Int(maxLifetime)) s"
    }
    guard issuedAt <= now + leeway else { return "the token's iat is more than \(Int(leeway)) s in the future" }
    guard now < expiresAt + leeway else { return "the token has expired (exp has passed)" }
    if let notBefore = claims.notBefore, !(now + leeway >= notBefore) {
      return "the token is not valid yet (nbf is in the future)"
    }
    return nil
  }
}

/// A JSON Web Key Set (RFC 7517): the RSA public keys tokens may be signed with, each with its `kid`.
package enum JSONWebKeySet {
  /// The RS256 keys of the set in `json`: each RSA key (`kty` `RSA`) from its `x5c` certificate when it has
  /// one, else from its modulus `n` and exponent `e`. Keys of other types, or whose `use` is not `sig` or
  /// whose `alg` is not `RS256` (when given), are left out; a set with no usable key is refused.
  ///
  /// - Throws: ``JWTError`` (`malformed` or `invalidKey`) naming what is wrong, never quoting key material.
  package static func keys(fromJSON json: [UInt8]) throws(JWTError) -> [ConsumerTokenVerifier.Key] {
    let object = try JSONReader.parseObject(json, context: "JWKS")
    guard case .array(let entries)? = object["keys"] else {
      throw JWTError(.malformed, "the JWKS has no \"keys\" array")
    }
    var keys: [ConsumerTokenVerifier.Key] = []
    for (index, entry) in entries.enumerated() {
      guard case .object(let key) = entry else { throw JWTError(.malformed, "JWKS key \(index) is not an object") }
      guard case .string("RSA")? = key["kty"] else { continue }
      if case .string(let use)? = key["use"], use != "sig" { continue }
      if case .string(let algorithm)? = key["alg"], algorithm != "RS256" { continue }
      var keyID: String?
      if case .string(let id)? = key["kid"] { keyID = id }
      let pem: String
      if case .array(let chain)? = key["x5c"], case .string(let first)? = chain.first {
        guard let der = Base64.decode(Array(first.utf8), alphabet: .standard, strict: false) else {
          throw JWTError(.malformed, "JWKS key \(index): its x5c certificate is not base64")
        }
        pem = pemBlock("CERTIFICATE", der)
      } else {
        guard case .string(let modulus)? = key["n"], case .string(let exponent)? = key["e"],
          let n = Base64.decode(Array(modulus.utf8), alphabet: .urlSafe, strict: false),
          let e = Base64.decode(Array(exponent.utf8), alphabet: .urlSafe, strict: false), !n.isEmpty, !e.isEmpty
        else {
          throw JWTError(.malformed, "JWKS key \(index): an RSA key needs base64url \"n\" and \"e\" (or \"x5c\")")
        }
        pem = pemBlock("PUBLIC KEY", rsaSubjectPublicKeyInfo(modulus: n, exponent: e))
      }
      // Loaded once here, so that a broken key fails at configuration, not at the first call.
      try JWTError.usingKey { () throws(CryptoError) in try Signatures.checkPublicKey(pem) }
      keys.append(ConsumerTokenVerifier.Key(.rs256(publicKeyPEM: pem), keyID: keyID))
    }
    guard !keys.isEmpty else { throw JWTError(.invalidKey, "the JWKS holds no RS256 signing key") }
    return keys
  }

  /// A PEM block of `der` under `label`.
  static func pemBlock(_ label: String, _ der: [UInt8]) -> String {
    let base64 = Array(Base64.encode(der, alphabet: .standard, padded: true).utf8)
    var lines: [String] = []
    var start = 0
    while start < base64.count {
      let end = min(start + 64, base64.count)
      lines.append(String(decoding: base64[start..<end], as: UTF8.self))
      start = end
    }
    return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
  }

  /// The DER SubjectPublicKeyInfo of an RSA public key (RFC 3279 section 2.3.1).
  static func rsaSubjectPublicKeyInfo(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
    let rsaPublicKey = derSequence(derInteger(modulus) + derInteger(exponent))
    // rsaEncryption (1.2.840.113549.1.1.1) with NULL parameters.
    let algorithm = derSequence([0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00])
    return derSequence(algorithm + derTagged(0x03, [0x00] + rsaPublicKey))
  }

  private static func derInteger(_ magnitude: [UInt8]) -> [UInt8] {
    var bytes = Array(magnitude.drop { $0 == 0 })
    if bytes.isEmpty { bytes = [0] }
    if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
    return derTagged(0x02, bytes)
  }

  private static func derSequence(_ content: [UInt8]) -> [UInt8] { derTagged(0x30, content) }

  private static func derTagged(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
    var length: [UInt8] = []
    var count = content.count
    if count < 0x80 {
      length = [UInt8(count)]
    } else {
      while count > 0 {
        length.insert(UInt8(count & 0xFF), at: 0)
        count >>= 8
      }
      length.insert(0x80 | UInt8(length.count), at: 0)
    }
    return [tag] + length + content
  }
}
