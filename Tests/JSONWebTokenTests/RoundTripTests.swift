// Tests/JSONWebTokenTests/RoundTripTests.swift - sign, parse back, verify; the exact bytes signing writes

import JSONWebToken
import Testing

@Suite("Round trips")
struct RoundTripTests {
  @Test("an HS256 token parses back to the claims it was signed with and verifies")
  func hs256RoundTrip() throws {
    let token = try JSONWebToken.sign(claims: sampleClaims(), key: .hs256(secret: testSecret), keyID: "key-1")
    let parsed = try JSONWebToken(parsing: token)
    #expect(parsed.header == JWTHeader(algorithm: "HS256", type: "JWT", keyID: "key-1"))
    #expect(parsed.claims == sampleClaims())
    #expect(parsed.signature.count == 32)
    #expect(parsed.signingInput == parts(token)[0] + "." + parts(token)[1])
    try parsed.verify(with: .hs256(secret: testSecret))
    try parsed.validate(now: 1_700_001_000)
  }

  @Test("an RS256 token parses back, verifies with the public key and with a certificate")
  func rs256RoundTrip() throws {
    let keys = try TestKeys.get()
    let token = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.privateKey))
    let parsed = try JSONWebToken(parsing: token)
    #expect(parsed.header == JWTHeader(algorithm: "RS256", type: "JWT", keyID: nil))
    #expect(parsed.claims == sampleClaims())
    #expect(parsed.signature.count == 256)
    try parsed.verify(with: .rs256(publicKeyPEM: keys.publicKey))
    try parsed.verify(with: .rs256(publicKeyPEM: keys.certificate))
  }

  @Test("a PKCS#1 (BEGIN RSA PRIVATE KEY) key signs the same bytes as its PKCS#8 form")
  func pkcs1PrivateKey() throws {
    let keys = try TestKeys.get()
    let pkcs8 = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.privateKey))
    let pkcs1 = try JSONWebToken.sign(claims: sampleClaims(), key: .rs256(privateKeyPEM: keys.privateKeyPKCS1))
    #expect(keys.privateKeyPKCS1.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
    #expect(pkcs1 == pkcs8)
  }

  @Test("signing is deterministic and writes compact JSON with members sorted by name")
  func stableSerialization() throws {
    var claims = sampleClaims()
    claims.issuer = "svc"
    claims.subject = "user-1"
    claims.audience = ["fleetengine"]
    claims.other = ["zeta": true, "alpha": [1, 2.5, .null, "x"], "é": "ü"]
    let first = try JSONWebToken.sign(claims: claims, key: .hs256(secret: testSecret), keyID: "k1")
    let second = try JSONWebToken.sign(claims: claims, key: .hs256(secret: testSecret), keyID: "k1")
    #expect(first == second)
    #expect(decodedPart(first, 0) == #"{"alg":"HS256","kid":"k1","typ":"JWT"}"#)
    #expect(
      decodedPart(first, 1)
        == #"{"alpha":[1,2.5,null,"x"],"aud":"fleetengine","authorization":{"tripid":"trip-7"},"#
        + #""exp":1700003600,"iat":1700000000,"iss":"svc","sub":"user-1","zeta":true,"é":"ü"}"#
    )
    // The base64url parts have no padding and use the URL-safe alphabet.
    #expect(!first.contains("=") && !first.contains("+") && !first.contains("/"))
  }

  @Test("several audiences are written as an array, none as no claim at all")
  func audienceForms() throws {
    var claims = JWTClaims(expiresAt: 10)
    let none = try JSONWebToken.sign(claims: claims, key: .hs256(secret: testSecret))
    #expect(decodedPart(none, 1) == #"{"exp":10}"#)
    claims.audience = ["a", "b"]
    let two = try JSONWebToken.sign(claims: claims, key: .hs256(secret: testSecret))
    #expect(decodedPart(two, 1) == #"{"aud":["a","b"],"exp":10}"#)
    #expect(try JSONWebToken(parsing: two).claims.audience == ["a", "b"])
    let single = compact(payload: #"{"aud":["only"]}"#)
    #expect(try JSONWebToken(parsing: single).claims.audience == ["only"])
  }

  @Test("strings with quotes, backslashes, control characters and non-ASCII survive a round trip")
  func stringEscapes() throws {
    let awkward = "quote\" back\\ nl\n cr\r tab\t bs\u{08} ff\u{0C} ctl\u{01}\u{1F} nul\u{0} slash/ é 🚕"
    let claims = JWTClaims(subject: awkward, expiresAt: 1, other: ["k\"\\\n": .string(awkward)])
    let token = try JSONWebToken.sign(claims: claims, key: .hs256(secret: testSecret))
    let payload = try #require(decodedPart(token, 1))
    #expect(
      payload.contains(
        #""quote\" back\\ nl\n cr\r tab\t bs\b ff\f ctl\u0001\u001f nul\u0000 slash/ é 🚕""#))
    let parsed = try JSONWebToken(parsing: token)
    #expect(parsed.claims == claims)
  }

  @Test("numbers: whole seconds as integers, fractions in shortest form, all read back exactly")
  func numbers() throws {
    let values: [Double] = [0, -1, 1_700_000_000, 9_007_199_254_740_992, 1.5, -0.25, 1e-7, 1e300, 12345.678]
    let claims = JWTClaims(expiresAt: 1_700_000_000.5, other: ["n": .array(values.map(JWTClaimValue.number))])
    let token = try JSONWebToken.sign(claims: claims, key: .hs256(secret: testSecret))
    let payload = try #require(decodedPart(token, 1))
    #expect(payload.hasPrefix(#"{"exp":1700000000.5,"n":[0,-1,1700000000,9007199254740992,1.5,-0.25,"#))
    #expect(try JSONWebToken(parsing: token).claims == claims)
  }

  @Test("unregistered claims of every JSON type are kept in `other`")
  func otherClaims() throws {
    let token = compact(
      payload: #"{"exp":5,"s":"x","n":-12.5e1,"t":true,"f":false,"z":null,"a":[[],{}],"o":{"k":[1,{"d":null}]}}"#)
    let claims = try JSONWebToken(parsing: token).claims
    #expect(claims.expiresAt == 5)
    #expect(
      claims.other == [
        "s": "x", "n": -125, "t": true, "f": false, "z": .null, "a": [[], [:]], "o": ["k": [1, ["d": .null]]],
      ])
    #expect(claims.other["n"]?.numberValue == -125)
    #expect(claims.other["z"]?.isNull == true)
    #expect(claims.other["o"]?.objectValue?["k"]?.arrayValue?.count == 2)
  }
}

@Suite("Fleet Engine claims")
struct FleetEngineClaimTests {
  @Test("tripid, vehicleid and taskid are read from the authorization object")
  func authorizationClaims() throws {
    let token = compact(
      payload: #"{"exp":1,"authorization":{"tripid":"trip-7","vehicleid":"*","taskid":"task-1","extra":[1]}}"#)
    let claims = try JSONWebToken(parsing: token).claims
    #expect(claims.tripID == "trip-7")
    #expect(claims.vehicleID == "*")
    #expect(claims.taskID == "task-1")
    #expect(claims.authorization["extra"] == [1])
    #expect(claims.other.isEmpty)
  }

  @Test("no authorization object, or a tripid that is not a string, gives no trip ID")
  func missingTripID() throws {
    #expect(try JSONWebToken(parsing: compact(payload: #"{"exp":1}"#)).claims.tripID == nil)
    #expect(try JSONWebToken(parsing: compact(payload: #"{"authorization":{"tripid":7}}"#)).claims.tripID == nil)
    #expect(try JSONWebToken(parsing: compact(payload: #"{"tripid":"top-level"}"#)).claims.tripID == nil)
  }

  @Test("the wildcard trip ID survives signing, and setting tripID writes authorization.tripid")
  func wildcard() throws {
    var claims = JWTClaims(expiresAt: 100)
    claims.tripID = "*"
    #expect(claims.authorization == ["tripid": "*"])
    let token = try JSONWebToken.sign(claims: claims, key: .hs256(secret: testSecret))
    #expect(decodedPart(token, 1) == #"{"authorization":{"tripid":"*"},"exp":100}"#)
    #expect(try JSONWebToken(parsing: token).claims.tripID == "*")
    claims.tripID = nil
    #expect(claims.authorization.isEmpty)
  }
}
