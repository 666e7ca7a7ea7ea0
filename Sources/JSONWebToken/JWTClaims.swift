// Sources/JSONWebToken/JWTClaims.swift - the registered claims, Fleet Engine's authorization, and the rest

/// The claims set of a token (RFC 7519 section 4).
///
/// The registered claims have typed properties; Fleet Engine's `authorization`
/// object (`{"tripid": "trip-7"}`, `{"vehicleid": "*"}`, ...) is kept whole in
/// ``authorization``; every other claim is kept in ``other``. A registered claim
/// of the wrong JSON type makes the token ``JWTError/Kind/malformed``.
public struct JWTClaims: Sendable, Hashable {
  /// `iss`: who issued the token.
  public var issuer: String?
  /// `sub`: whom the token is about.
  public var subject: String?
  /// `aud`: the intended recipients. A single string and a one-element array both
  /// read as one element; one audience is written as a string, several as an array.
  public var audience: [String]
  /// `exp`: the time, in seconds since 1970 (UTC), at and after which the token is not accepted.
  public var expiresAt: Double?
  /// `nbf`: the time, in seconds since 1970, before which the token is not accepted.
  public var notBefore: Double?
  /// `iat`: when the token was issued, in seconds since 1970.
  public var issuedAt: Double?
  /// `jti`: a unique ID for the token.
  public var id: String?
  /// Fleet Engine's `authorization` claim: which trip, vehicle or task the bearer
  /// may act on (a value of `"*"` means all). Empty when the token has none.
  public var authorization: [String: JWTClaimValue]
  /// Every other claim, by name. Must not repeat a name that has a property here.
  public var other: [String: JWTClaimValue]

  /// Claims with the given values; everything defaults to absent.
  public init(
    issuer: String? = nil,
    subject: String? = nil,
    audience: [String] = [],
    expiresAt: Double? = nil,
    notBefore: Double? = nil,
    issuedAt: Double? = nil,
    id: String? = nil,
    authorization: [String: JWTClaimValue] = [:],
    other: [String: JWTClaimValue] = [:]
  ) {
    self.issuer = issuer
    self.subject = subject
    self.audience = audience
    self.expiresAt = expiresAt
    self.notBefore = notBefore
    self.issuedAt = issuedAt
    self.id = id
    self.authorization = authorization
    self.other = other
  }

  /// `authorization.tripid`, when it is a string: the trip the bearer may follow, or `"*"`.
  public var tripID: String? {
    get { authorization["tripid"]?.stringValue }
    set { authorization["tripid"] = newValue.map(JWTClaimValue.string) }
  }

  /// `authorization.vehicleid`, when it is a string: the vehicle the bearer may act for, or `"*"`.
  public var vehicleID: String? {
    get { authorization["vehicleid"]?.stringValue }
    set { authorization["vehicleid"] = newValue.map(JWTClaimValue.string) }
  }

  /// `authorization.taskid`, when it is a string: the task the bearer may act on, or `"*"`.
  public var taskID: String? {
    get { authorization["taskid"]?.stringValue }
    set { authorization["taskid"] = newValue.map(JWTClaimValue.string) }
  }

  /// The claim names that have properties of their own.
  static let namedClaims: Set<String> = ["iss", "sub", "aud", "exp", "nbf", "iat", "jti", "authorization"]

  /// The claims from the payload's decoded JSON object.
  init(json: [String: JWTClaimValue]) throws(JWTError) {
    issuer = try Self.string(json, "iss")
    subject = try Self.string(json, "sub")
    switch json["aud"] {
    case nil: audience = []
    case .string(let single): audience = [single]
    case .array(let elements):
      audience = []
      for element in elements {
        guard case .string(let value) = element else {
          throw JWTError(.malformed, "the claim \"aud\" is not a string or an array of strings")
        }
        audience.append(value)
      }
    case .some: throw JWTError(.malformed, "the claim \"aud\" is not a string or an array of strings")
    }
    expiresAt = try Self.number(json, "exp")
    notBefore = try Self.number(json, "nbf")
    issuedAt = try Self.number(json, "iat")
    id = try Self.string(json, "jti")
    switch json["authorization"] {
    case nil: authorization = [:]
    case .object(let members): authorization = members
    case .some: throw JWTError(.malformed, "the claim \"authorization\" is not an object")
    }
    other = json.filter { !Self.namedClaims.contains($0.key) }
  }

  private static func string(_ json: [String: JWTClaimValue], _ name: String) throws(JWTError) -> String? {
    switch json[name] {
    case nil: return nil
    case .string(let value): return value
    case .some: throw JWTError(.malformed, "the claim \"\(name)\" is not a string")
    }
  }

  private static func number(_ json: [String: JWTClaimValue], _ name: String) throws(JWTError) -> Double? {
    switch json[name] {
    case nil: return nil
    case .number(let value): return value
    case .some: throw JWTError(.malformed, "the claim \"\(name)\" is not a number")
    }
  }

  /// The JSON object written when signing.
  func json() throws(JWTError) -> [String: JWTClaimValue] {
    if let clash = other.keys.filter(Self.namedClaims.contains).min() {
      throw JWTError(.malformed, "`other` repeats the claim \"\(clash)\", which has its own property")
    }
    var object = other
    if let issuer { object["iss"] = .string(issuer) }
    if let subject { object["sub"] = .string(subject) }
    switch audience.count {
    case 0: break
    case 1: object["aud"] = .string(audience[0])
    default: object["aud"] = .array(audience.map(JWTClaimValue.string))
    }
    if let expiresAt { object["exp"] = .number(expiresAt) }
    if let notBefore { object["nbf"] = .number(notBefore) }
    if let issuedAt { object["iat"] = .number(issuedAt) }
    if let id { object["jti"] = .string(id) }
    if !authorization.isEmpty { object["authorization"] = .object(authorization) }
    return object
  }
}
