// Sources/JSONWebToken/JWTKeys.swift - the keys tokens are signed and verified with

/// A key to sign tokens with; the case picks the algorithm written into `alg`.
public enum JWTSigningKey: Sendable {
  /// HMAC with SHA-256 under a shared secret of at least 32 bytes (RFC 7518 section 3.2).
  case hs256(secret: [UInt8])
  /// RSASSA-PKCS1-v1_5 with SHA-256 under an RSA private key of at least 2048 bits,
  /// as PEM (`BEGIN PRIVATE KEY` or `BEGIN RSA PRIVATE KEY`, unencrypted).
  case rs256(privateKeyPEM: String)

  /// The `alg` value tokens signed with this key carry: `HS256` or `RS256`.
  public var algorithm: String {
    switch self {
    case .hs256: "HS256"
    case .rs256: "RS256"
    }
  }
}

/// A key to verify tokens with; a token verifies only if its `alg` is this key's algorithm.
public enum JWTVerificationKey: Sendable {
  /// HMAC with SHA-256 under a shared secret of at least 32 bytes.
  case hs256(secret: [UInt8])
  /// RSASSA-PKCS1-v1_5 with SHA-256 under an RSA public key of at least 2048 bits, as PEM:
  /// a `BEGIN PUBLIC KEY` (SubjectPublicKeyInfo) block, or a `BEGIN CERTIFICATE` whose key is used.
  case rs256(publicKeyPEM: String)

  /// The `alg` value a token must carry to be verified with this key: `HS256` or `RS256`.
  public var algorithm: String {
    switch self {
    case .hs256: "HS256"
    case .rs256: "RS256"
    }
  }
}
