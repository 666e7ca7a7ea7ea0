// Tests/NATSTestSupport/TestPKI.swift - certificates, keys and NATS credentials that tests make for themselves
//
// Made fresh per test in a temporary directory, with the `openssl` command (certificates, an RSA key pair for
// RS256 consumer tokens) and with the package's own nkeys (NATS operator, account and user JWTs, `.creds`
// files), so that no key material is ever committed.

import Foundation
import JSONWebToken
import Primitives

/// A test CA with a server certificate (for `localhost`, 127.0.0.1 and any extra addresses) and a client
/// certificate it signed, an RSA key pair for RS256 tokens, all as PEM files in ``directory``.
public struct TestPKI: Sendable {
  public let directory: String
  public var caFile: String { "\(directory)/ca.pem" }
  public var serverCertificateFile: String { "\(directory)/server.pem" }
  public var serverKeyFile: String { "\(directory)/server.key" }
  public var clientCertificateFile: String { "\(directory)/client.pem" }
  public var clientKeyFile: String { "\(directory)/client.key" }
  /// A 2048-bit RSA key (PKCS#8 PEM) and its public key, for RS256 consumer tokens.
  public var rsaPrivateKeyFile: String { "\(directory)/rsa.key" }
  public var rsaPublicKeyFile: String { "\(directory)/rsa.pub" }

  /// Makes the files; `addresses` are more IP addresses the server certificate names.
  public init(addresses: [String] = []) throws {
    directory = try makeTemporaryDirectory(prefix: "test-pki")
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    try run(
      ["req", "-x509"] + ec + [
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=JourneySharing Test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
      ])
    let names = (["DNS:localhost", "IP:127.0.0.1"] + addresses.map { "IP:\($0)" }).joined(separator: ",")
    try sign("server", subject: "/CN=localhost", extensions: "subjectAltName=\(names)\nextendedKeyUsage=serverAuth\n")
    try sign("client", subject: "/CN=test-client", extensions: "extendedKeyUsage=clientAuth\n")
    try run(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.key"])
    try run(["pkey", "-in", "rsa.key", "-pubout", "-out", "rsa.pub"])
  }

  /// The RS256 private key's PEM.
  public var rsaPrivateKeyPEM: String { (try? String(contentsOfFile: rsaPrivateKeyFile, encoding: .utf8)) ?? "" }

  public func remove() { removeDirectory(directory) }

  private func sign(_ name: String, subject: String, extensions: String) throws {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    try run(["req", "-new"] + ec + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject])
    try ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n" + extensions)
      .write(toFile: "\(directory)/\(name).ext", atomically: true, encoding: .utf8)
    try run([
      "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
      "-out", "\(name).pem", "-extfile", "\(name).ext",
    ])
  }

  private func run(_ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["openssl"] + arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw NATSTestSupportError("openssl \(arguments.joined(separator: " ")): \(text)")
    }
  }
}

/// NATS decentralized authentication for tests: an operator, one account with JetStream, and users with the
/// permissions a test gives them, each user as a `.creds` file; ``serverConfig`` is the server's part.
public struct NATSOperatorSetup: Sendable {
  public let directory: String
  private let operatorKey: NKey
  private let accountKey: NKey
  private let systemKey: NKey
  private let operatorJWT: String
  private let accountJWT: String
  private let systemJWT: String

  public init() throws {
    directory = try makeTemporaryDirectory(prefix: "nats-operator")
    operatorKey = try NKey.generate(role: .operator)
    accountKey = try NKey.generate(role: .account)
    systemKey = try NKey.generate(role: .account)
    operatorJWT = try Self.jwt(
      issuer: operatorKey, subject: operatorKey.publicKey, name: "test-operator",
      nats: ["type": .string("operator"), "version": .number(2)])
    let unlimited: [String: JWTClaimValue] = [
      "subs": .number(-1), "data": .number(-1), "payload": .number(-1), "imports": .number(-1),
      "exports": .number(-1), "wildcards": .bool(true), "conn": .number(-1), "leaf": .number(-1),
      "mem_storage": .number(-1), "disk_storage": .number(-1), "streams": .number(-1), "consumer": .number(-1),
    ]
    accountJWT = try Self.jwt(
      issuer: operatorKey, subject: accountKey.publicKey, name: "relays",
      nats: ["type": .string("account"), "version": .number(2), "limits": .object(unlimited)])
    var systemLimits = unlimited
    systemLimits["mem_storage"] = .number(0)
    systemLimits["disk_storage"] = .number(0)
    systemJWT = try Self.jwt(
      issuer: operatorKey, subject: systemKey.publicKey, name: "SYS",
      nats: ["type": .string("account"), "version": .number(2), "limits": .object(systemLimits)])
  }

  /// The server configuration's part for this operator (a memory resolver holding both accounts).
  public var serverConfig: String {
    """
    operator: \(operatorJWT)
    system_account: \(systemKey.publicKey)
    resolver: MEMORY
    resolver_preload: {
      \(accountKey.publicKey): \(accountJWT)
      \(systemKey.publicKey): \(systemJWT)
    }
    """
  }

  /// Writes a `.creds` file for a new user of the account allowed to publish to `publish` and subscribe to
  /// `subscribe` (nil: everything); returns its path.
  public func credentials(
    user name: String, publish: [String]? = nil, subscribe: [String]? = nil
  ) throws -> String {
    let user = try NKey.generate(role: .user)
    var nats: [String: JWTClaimValue] = [
      "type": .string("user"), "version": .number(2), "subs": .number(-1), "data": .number(-1),
      "payload": .number(-1),
    ]
    if let publish { nats["pub"] = .object(["allow": .array(publish.map { .string($0) })]) }
    if let subscribe { nats["sub"] = .object(["allow": .array(subscribe.map { .string($0) })]) }
    nats["issuer_account"] = nil
    let userJWT = try Self.jwt(issuer: accountKey, subject: user.publicKey, name: name, nats: nats)
    let text = """
      -----BEGIN NATS USER JWT-----
      \(userJWT)
      ------END NATS USER JWT------

      ************************* IMPORTANT *************************
      NKEY Seed printed below can be used to sign and prove identity.
      NKEYs are sensitive and should be treated as secrets.

      -----BEGIN USER NKEY SEED-----
      \(user.seedText)
      ------END USER NKEY SEED------

      *************************************************************

      """
    let path = "\(directory)/\(name).creds"
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  public func remove() { removeDirectory(directory) }

  /// A NATS JWT: `{"typ":"JWT","alg":"ed25519-nkey"}`, the claims, an Ed25519 signature by `issuer`.
  private static func jwt(issuer: NKey, subject: String, name: String, nats: [String: JWTClaimValue]) throws -> String {
    let header = #"{"typ":"JWT","alg":"ed25519-nkey"}"#
    let claims: [String: JWTClaimValue] = [
      "jti": .string(String(UInt64.random(in: 1...UInt64.max), radix: 36).uppercased()),
      "iat": .number(Double(Int(Date().timeIntervalSince1970) - 60)), "iss": .string(issuer.publicKey),
      "name": .string(name), "sub": .string(subject), "nats": .object(nats),
    ]
    let body = try JWTClaimValue.object(claims).jsonText()
    let signingInput =
      Base64.encode(Array(header.utf8), alphabet: .urlSafe, padded: false) + "."
      + Base64.encode(Array(body.utf8), alphabet: .urlSafe, padded: false)
    let signature = try issuer.sign(Array(signingInput.utf8))
    return signingInput + "." + Base64.encode(signature, alphabet: .urlSafe, padded: false)
  }
}
