// Tests/JSONWebTokenTests/ValidationTests.swift - exp, nbf and iat against the clock, with leeway

import JSONWebToken
import Testing

@Suite("Time validation")
struct ValidationTests {
  /// A token with the given time claims (unsigned: validation does not look at the signature).
  static func token(exp: Double? = nil, nbf: Double? = nil, iat: Double? = nil) throws -> JSONWebToken {
    var members: [String] = []
    if let exp { members.append(#""exp":\#(exp)"#) }
    if let nbf { members.append(#""nbf":\#(nbf)"#) }
    if let iat { members.append(#""iat":\#(iat)"#) }
    return try JSONWebToken(parsing: compact(payload: "{" + members.joined(separator: ",") + "}"))
  }

  @Test("expired once now reaches exp plus the leeway")
  func expiry() throws {
    let token = try Self.token(exp: 1000)
    try token.validate(now: 999.5, leeway: 0)
    expectJWTError(.expired) { try token.validate(now: 1000, leeway: 0) }
    try token.validate(now: 1029.9, leeway: 30)
    expectJWTError(.expired) { try token.validate(now: 1030, leeway: 30) }
    try token.validate(now: 1029)  // the default leeway is 30 s
    expectJWTError(.expired) { try token.validate(now: 1031) }
  }

  @Test("not yet valid while now plus the leeway is before nbf")
  func notBefore() throws {
    let token = try Self.token(exp: 5000, nbf: 1000)
    expectJWTError(.notYetValid) { try token.validate(now: 999, leeway: 0) }
    try token.validate(now: 1000, leeway: 0)
    expectJWTError(.notYetValid) { try token.validate(now: 969, leeway: 30) }
    try token.validate(now: 970, leeway: 30)
  }

  @Test("a token issued in the future (beyond the leeway) is not yet valid")
  func issuedInTheFuture() throws {
    let token = try Self.token(exp: 5000, iat: 2000)
    expectJWTError(.notYetValid) { try token.validate(now: 1969, leeway: 30) }
    try token.validate(now: 1970, leeway: 30)
    try token.validate(now: 4000, leeway: 30)
  }

  @Test("exp is required: a token without one is refused")
  func expRequired() throws {
    let token = try Self.token(nbf: 0, iat: 0)
    let error = expectJWTError(.malformed) { try token.validate(now: 1) }
    #expect(error?.message.contains("exp") == true)
  }

  @Test("a negative leeway counts as zero, and a NaN clock fails instead of passing")
  func oddInputs() throws {
    let token = try Self.token(exp: 1000, nbf: 500)
    try token.validate(now: 999, leeway: -100)
    expectJWTError(.expired) { try token.validate(now: 1000, leeway: -100) }
    expectJWTError(.notYetValid) { try token.validate(now: 499, leeway: -100) }
    expectJWTError(.expired) { try token.validate(now: .nan) }
    expectJWTError(.expired) { try token.validate(now: 600, leeway: .nan) }
  }

  @Test("fractional NumericDates are compared exactly")
  func fractionalTimes() throws {
    let token = try Self.token(exp: 1000.25)
    try token.validate(now: 1000.2, leeway: 0)
    expectJWTError(.expired) { try token.validate(now: 1000.25, leeway: 0) }
  }
}
