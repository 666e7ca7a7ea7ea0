// Sources/JSONWebToken/JWTClaimValue.swift - any JSON value a claim can hold

/// A JSON value: what an unregistered claim, or a member of Fleet Engine's
/// `authorization` claim, holds.
///
/// Numbers are `Double`s, as in JSON itself; integers up to 2^53 are exact and
/// are written back without a fraction. Literals build values directly:
/// `["tripid": "trip-7", "scopes": ["read"], "n": 3]`.
public indirect enum JWTClaimValue: Sendable, Hashable {
  /// A JSON string.
  case string(String)
  /// A JSON number (always finite when parsed; signing rejects non-finite ones).
  case number(Double)
  /// `true` or `false`.
  case bool(Bool)
  /// `null`.
  case null
  /// A JSON array.
  case array([JWTClaimValue])
  /// A JSON object. Member order is not kept: tokens this module signs list members sorted by name.
  case object([String: JWTClaimValue])

  /// The string, if this is a string.
  public var stringValue: String? {
    if case .string(let value) = self { value } else { nil }
  }

  /// The number, if this is a number.
  public var numberValue: Double? {
    if case .number(let value) = self { value } else { nil }
  }

  /// The flag, if this is a boolean.
  public var boolValue: Bool? {
    if case .bool(let value) = self { value } else { nil }
  }

  /// The elements, if this is an array.
  public var arrayValue: [JWTClaimValue]? {
    if case .array(let value) = self { value } else { nil }
  }

  /// The members, if this is an object.
  public var objectValue: [String: JWTClaimValue]? {
    if case .object(let value) = self { value } else { nil }
  }

  /// Whether this is `null`.
  public var isNull: Bool { self == .null }
}

extension JWTClaimValue: ExpressibleByStringLiteral {
  /// A ``string(_:)`` value.
  public init(stringLiteral value: String) { self = .string(value) }
}

extension JWTClaimValue: ExpressibleByIntegerLiteral {
  /// A ``number(_:)`` value.
  public init(integerLiteral value: Int) { self = .number(Double(value)) }
}

extension JWTClaimValue: ExpressibleByFloatLiteral {
  /// A ``number(_:)`` value.
  public init(floatLiteral value: Double) { self = .number(value) }
}

extension JWTClaimValue: ExpressibleByBooleanLiteral {
  /// A ``bool(_:)`` value.
  public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JWTClaimValue: ExpressibleByArrayLiteral {
  /// An ``array(_:)`` value.
  public init(arrayLiteral elements: JWTClaimValue...) { self = .array(elements) }
}

extension JWTClaimValue: ExpressibleByDictionaryLiteral {
  /// An ``object(_:)`` value; a name given twice keeps its last value.
  public init(dictionaryLiteral elements: (String, JWTClaimValue)...) {
    self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
  }
}

extension JWTClaimValue {
  /// The compact JSON text of an object value (as a token's header or claims are written), for other JWT-shaped
  /// formats of the package (NATS' user JWTs in tests).
  package func jsonText() throws(JWTError) -> String {
    guard case .object(let object) = self else { throw JWTError(.malformed, "only an object is written as JSON") }
    return String(decoding: try JSONWriter.serialize(object, context: "JSON object"), as: UTF8.self)
  }
}
