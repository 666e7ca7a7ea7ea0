// Sources/JSONWebToken/JSONWebToken.swift - parse, sign, verify and check the times of a JWT
//
// A token is the JWS compact serialization (RFC 7515 section 7.1): three
// unpadded base64url parts, header.payload.signature, whose header and payload
// are JSON objects (RFC 7519). Parsing checks structure only; `verify` checks
// the signature under a key whose algorithm the header must name exactly
// (never `none`, never an HMAC keyed with an RSA public key); `validate` checks
// `exp`, `nbf` and `iat` against a clock the caller passes in.

import Primitives
import TLSCrypto

/// A parsed JSON Web Token signed with HS256 or RS256.
///
/// ```swift
/// let token = try JSONWebToken(parsing: bearer)
/// try token.verify(with: .rs256(publicKeyPEM: pem))
/// try token.validate(now: secondsSince1970)
/// guard token.claims.tripID == "trip-7" || token.claims.tripID == "*" else { ... }
/// ```
public struct JSONWebToken: Sendable, Hashable {
  /// The longest token accepted, in bytes: far beyond any real JWT, short enough to bound the work on hostile input.
  public static let maximumLength = 65_536

  /// The decoded JOSE header.
  public let header: JWTHeader
  /// The decoded claims.
  public let claims: JWTClaims
  /// The bytes the signature covers, exactly as received: `base64url(header) + "." + base64url(payload)`.
  public let signingInput: String
  /// The decoded signature (empty for an unsecured `alg: none` token).
  public let signature: [UInt8]

  /// Parses a compact-serialized token, without checking its signature or its times.
  ///
  /// - Throws: ``JWTError/Kind/malformed`` unless `token` is three unpadded base64url parts
  ///   whose first two decode to JSON objects with an `alg` string and registered claims of the right types.
  public init(parsing token: String) throws(JWTError) {
    let utf8 = token.utf8
    guard utf8.count <= Self.maximumLength else {
      throw JWTError(.malformed, "the token is \(utf8.count) bytes long, more than \(Self.maximumLength)")
    }
    let parts = Substring(token).utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    guard parts.count == 3 else {
      let hint = parts.count == 5 ? " (encrypted JWE tokens are not supported)" : ""
      throw JWTError(.malformed, "the token has \(parts.count) dot-separated parts instead of 3\(hint)")
    }
    guard let headerBytes = Base64.decode(parts[0], alphabet: .urlSafe, strict: true) else {
      throw JWTError(.malformed, "the header is not unpadded base64url")
    }
    guard let payloadBytes = Base64.decode(parts[1], alphabet: .urlSafe, strict: true) else {
      throw JWTError(.malformed, "the payload is not unpadded base64url")
    }
    guard let signature = Base64.decode(parts[2], alphabet: .urlSafe, strict: true) else {
      throw JWTError(.malformed, "the signature is not unpadded base64url")
    }
    header = try JWTHeader(json: JSONReader.parseObject(headerBytes, context: "header"))
    claims = try JWTClaims(json: JSONReader.parseObject(payloadBytes, context: "payload"))
    // Both parts are base64url, hence ASCII: decoding as UTF-8 reproduces them byte for byte.
    signingInput = String(decoding: token.utf8[parts[0].startIndex..<parts[1].endIndex], as: UTF8.self)
    self.signature = signature
  }

  /// Signs `claims` and returns the compact token.
  ///
  /// The header is `{"alg":…,"kid":…,"typ":"JWT"}` (`kid` only when `keyID` is given); header and
  /// payload are compact JSON with members sorted by name, so equal inputs give equal tokens
  /// (RS256 signatures are deterministic too).
  ///
  /// - Throws: ``JWTError/Kind/invalidKey`` for an unusable key; ``JWTError/Kind/malformed`` when
  ///   `claims` holds a non-finite number, nests deeper than 32 levels, or repeats a registered claim in `other`.
  public static func sign(claims: JWTClaims, key: JWTSigningKey, keyID: String? = nil) throws(JWTError) -> String {
    let header = JWTHeader(algorithm: key.algorithm, type: "JWT", keyID: keyID)
    let headerJSON = try JSONWriter.serialize(header.json, context: "header")
    let payloadJSON = try JSONWriter.serialize(claims.json(), context: "claims")
    let signingInput =
      Base64.encode(headerJSON, alphabet: .urlSafe, padded: false) + "."
      + Base64.encode(payloadJSON, alphabet: .urlSafe, padded: false)
    let message = Array(signingInput.utf8)
    let signature: [UInt8]
    switch key {
    case .hs256(let secret):
      signature = try JWTError.usingKey { () throws(CryptoError) in
        try Signatures.hmacSHA256(secret: secret, message: message)
      }
    case .rs256(let pem):
      signature = try JWTError.usingKey { () throws(CryptoError) in
        try Signatures.rsaSHA256Sign(privateKeyPEM: pem, message: message)
      }
    }
    return signingInput + "." + Base64.encode(signature, alphabet: .urlSafe, padded: false)
  }

  /// Checks the signature under `key`.
  ///
  /// The header's `alg` must be exactly the key's algorithm (`HS256` for ``JWTVerificationKey/hs256(secret:)``,
  /// `RS256` for ``JWTVerificationKey/rs256(publicKeyPEM:)``), so `none` and algorithm confusion
  /// (an RSA public key used as an HMAC secret) are refused before any cryptography runs.
  ///
  /// - Throws: ``JWTError/Kind/unsupportedAlgorithm`` when `alg` is not the key's algorithm;
  ///   ``JWTError/Kind/invalidKey`` for an unusable key; ``JWTError/Kind/badSignature`` when the signature
  ///   does not match.
  public func verify(with key: JWTVerificationKey) throws(JWTError) {
    guard header.algorithm == key.algorithm else {
      throw JWTError(
        .unsupportedAlgorithm,
        "the token's algorithm \(Self.describe(algorithm: header.algorithm)) does not match the \(key.algorithm) key"
      )
    }
    let message = Array(signingInput.utf8)
    let valid: Bool
    switch key {
    case .hs256(let secret):
      valid = try JWTError.usingKey { () throws(CryptoError) in
        try Signatures.verifyHMACSHA256(secret: secret, message: message, signature: signature)
      }
    case .rs256(let pem):
      valid = try JWTError.usingKey { () throws(CryptoError) in
        try Signatures.rsaSHA256Verify(publicKeyPEM: pem, message: message, signature: signature)
      }
    }
    guard valid else { throw JWTError(.badSignature, "the \(key.algorithm) signature does not match") }
  }

  /// Checks the token's times against `now`, allowing `leeway` seconds of clock skew.
  ///
  /// `exp` is required: a token without one is refused. The token is expired when
  /// `now >= exp + leeway`, not yet valid when `now + leeway < nbf` or `now + leeway < iat`.
  /// A negative leeway counts as zero.
  ///
  /// - Parameter now: the current time in seconds since 1970 (UTC).
  /// - Throws: ``JWTError/Kind/malformed`` without `exp`; ``JWTError/Kind/expired``;
  ///   ``JWTError/Kind/notYetValid``.
  public func validate(now: Double, leeway: Double = 30) throws(JWTError) {
    let leeway = max(leeway, 0)
    guard let expiresAt = claims.expiresAt else { throw JWTError(.malformed, "the token has no \"exp\" claim") }
    // Written so that a NaN `now` fails every check instead of passing them.
    guard now < expiresAt + leeway else {
      throw JWTError(.expired, "the token expired at \(JSONWriter.formatNumber(expiresAt)) (leeway \(leeway) s)")
    }
    if let notBefore = claims.notBefore {
      guard now + leeway >= notBefore else {
        throw JWTError(.notYetValid, "the token is not valid before \(JSONWriter.formatNumber(notBefore))")
      }
    }
    if let issuedAt = claims.issuedAt {
      guard now + leeway >= issuedAt else {
        throw JWTError(.notYetValid, "the token was issued in the future, at \(JSONWriter.formatNumber(issuedAt))")
      }
    }
  }

  /// The algorithm name for a message: quoted when short and printable, otherwise only described.
  private static func describe(algorithm: String) -> String {
    let printable = algorithm.utf8.allSatisfy { $0 >= 0x21 && $0 < 0x7F && $0 != UInt8(ascii: "\"") }
    if algorithm.isEmpty { return "(empty)" }
    return printable && algorithm.utf8.count <= 16 ? "\"\(algorithm)\"" : "(unrecognized)"
  }
}
