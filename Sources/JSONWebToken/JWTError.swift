// Sources/JSONWebToken/JWTError.swift - why a token was rejected, without repeating the token

import TLSCrypto

/// The error thrown when a token cannot be parsed, signed, verified or accepted.
///
/// The ``message`` says what was wrong in terms of the token's structure (which
/// part, which claim, which byte of the JSON), never by quoting the token, its
/// signature or a key, so errors can be logged and returned to clients safely.
public struct JWTError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The kinds of failure. The set is closed: each case says when it is thrown.
  public enum Kind: Sendable, Hashable, CustomStringConvertible {
    /// The token is not three base64url parts holding a JSON object header and
    /// payload, a header or registered claim has the wrong type, `validate` found
    /// no `exp`, or claims to sign cannot be written as JSON.
    case malformed
    /// The header's `alg` is not `HS256` or `RS256`, or not the algorithm of the key
    /// it is verified with (this covers `none` and HS256/RS256 confusion).
    case unsupportedAlgorithm
    /// The signature does not match the signing input under the key.
    case badSignature
    /// `exp` (plus the leeway) is not after the current time.
    case expired
    /// `nbf` or `iat` is later than the current time plus the leeway.
    case notYetValid
    /// The key cannot be used: an HMAC secret shorter than 32 bytes, a PEM that does
    /// not parse, or a key that is not RSA of at least 2048 bits.
    case invalidKey

    /// The case name, for example `badSignature`.
    public var description: String {
      switch self {
      case .malformed: "malformed"
      case .unsupportedAlgorithm: "unsupportedAlgorithm"
      case .badSignature: "badSignature"
      case .expired: "expired"
      case .notYetValid: "notYetValid"
      case .invalidKey: "invalidKey"
      }
    }
  }

  /// What went wrong.
  public var kind: Kind
  /// A human-readable reason that quotes neither the token nor any key.
  public var message: String

  /// An error of `kind` with `message`.
  public init(_ kind: Kind, _ message: String) {
    self.kind = kind
    self.message = message
  }

  /// `JWT <kind>: <message>`.
  public var description: String { "JWT \(kind): \(message)" }
}

extension JWTError {
  /// The value of `body`, a signing or key operation of TLSCrypto; its failure is an ``Kind/invalidKey`` error
  /// (TLSCrypto's messages never quote key material either).
  static func usingKey<T>(_ body: () throws(CryptoError) -> T) throws(JWTError) -> T {
    do {
      return try body()
    } catch {
      throw JWTError(.invalidKey, error.message)
    }
  }
}
