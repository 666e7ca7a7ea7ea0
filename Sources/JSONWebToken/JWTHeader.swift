// Sources/JSONWebToken/JWTHeader.swift - the JOSE header of a signed token

/// The JOSE header of a JWS (RFC 7515 section 4): which algorithm signed the
/// token and, optionally, its media type and the ID of the key used.
///
/// Other header parameters (`cty`, `x5t`, `jku`, ...) are accepted and ignored;
/// keys are never fetched from URLs a token names. A header carrying `crit` is
/// rejected, since no extension it could list is understood here.
public struct JWTHeader: Sendable, Hashable {
  /// The `alg` parameter as written, for example `HS256`. Parsing accepts any
  /// string; ``JSONWebToken/verify(with:)`` accepts only the key's own algorithm.
  public var algorithm: String
  /// The `typ` parameter, usually `JWT`.
  public var type: String?
  /// The `kid` parameter, naming the key that signed the token.
  public var keyID: String?

  /// A header with these parameters.
  public init(algorithm: String, type: String? = "JWT", keyID: String? = nil) {
    self.algorithm = algorithm
    self.type = type
    self.keyID = keyID
  }

  /// The header from its decoded JSON object.
  init(json: [String: JWTClaimValue]) throws(JWTError) {
    guard let alg = json["alg"] else { throw JWTError(.malformed, "the header has no \"alg\"") }
    guard case .string(let algorithm) = alg else { throw JWTError(.malformed, "the header's \"alg\" is not a string") }
    guard json["crit"] == nil else {
      throw JWTError(.malformed, "the header lists critical extensions (\"crit\"), which are not supported")
    }
    self.algorithm = algorithm
    self.type = try Self.optionalString(json, "typ")
    self.keyID = try Self.optionalString(json, "kid")
  }

  private static func optionalString(_ json: [String: JWTClaimValue], _ name: String) throws(JWTError) -> String? {
    switch json[name] {
    case nil: return nil
    case .string(let value): return value
    case .some: throw JWTError(.malformed, "the header's \"\(name)\" is not a string")
    }
  }

  /// The JSON object written when signing.
  var json: [String: JWTClaimValue] {
    var object: [String: JWTClaimValue] = ["alg": .string(algorithm)]
    if let type { object["typ"] = .string(type) }
    if let keyID { object["kid"] = .string(keyID) }
    return object
  }
}
