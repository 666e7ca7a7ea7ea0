// Tests/JSONWebTokenTests/Support/TestSupport.swift - hand-built tokens, the openssl CLI, test keys
//
// Tokens under test are assembled here from raw JSON bytes with Foundation's
// base64 (an encoder independent of the module's), and keys come from the
// `openssl` command-line tool, which also serves as the reference signer.

import Foundation
import JSONWebToken
import Primitives
import Testing

// MARK: - Building tokens by hand

/// Unpadded base64url of `bytes`, through Foundation's base64 (not the module's encoder).
func base64url(_ bytes: [UInt8]) -> String {
  Data(bytes).base64EncodedString()
    .replacingOccurrences(of: "+", with: "-")
    .replacingOccurrences(of: "/", with: "_")
    .replacingOccurrences(of: "=", with: "")
}

/// Unpadded base64url of the UTF-8 of `text`.
func base64url(_ text: String) -> String { base64url(Array(text.utf8)) }

/// The bytes of unpadded base64url `text`, through Foundation.
func fromBase64url(_ text: some StringProtocol) -> [UInt8]? {
  var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
  while standard.count % 4 != 0 { standard += "=" }
  return Data(base64Encoded: standard).map { Array($0) }
}

/// `base64url(header).base64url(payload).base64url(signature)`.
func compact(header: [UInt8], payload: [UInt8], signature: [UInt8] = [0x01, 0x02, 0x03]) -> String {
  "\(base64url(header)).\(base64url(payload)).\(base64url(signature))"
}

/// A token from JSON texts.
func compact(header: String = #"{"alg":"HS256","typ":"JWT"}"#, payload: String, signature: [UInt8] = [1, 2, 3])
  -> String
{
  compact(header: Array(header.utf8), payload: Array(payload.utf8), signature: signature)
}

/// The three parts of a compact token.
func parts(_ token: String) -> [String] {
  token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
}

/// The decoded JSON text of part `index` (0: header, 1: payload) of `token`.
func decodedPart(_ token: String, _ index: Int) -> String? {
  fromBase64url(parts(token)[index]).map { String(decoding: $0, as: UTF8.self) }
}

/// Lowercase hex of `bytes`.
func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// A 32-byte-or-longer secret used across tests.
let testSecret = Array("correct horse battery staple, 32+ bytes".utf8)

// MARK: - Errors

/// Runs `body`, requires it to throw a ``JWTError`` of `kind`, and returns the error.
@discardableResult
func expectJWTError(
  _ kind: JWTError.Kind,
  sourceLocation: SourceLocation = #_sourceLocation,
  _ body: () throws -> Void
) -> JWTError? {
  do {
    try body()
    Issue.record("expected a \(kind) JWTError, nothing was thrown", sourceLocation: sourceLocation)
    return nil
  } catch let error as JWTError {
    #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
    return error
  } catch {
    Issue.record("expected a \(kind) JWTError, got \(error)", sourceLocation: sourceLocation)
    return nil
  }
}

// MARK: - The openssl command-line tool

/// What a finished `openssl` run printed and returned.
struct OpenSSLRun {
  var status: Int32
  var stdout: Data
  var stderr: String
}

/// Runs `/usr/bin/openssl` with `arguments` in `directory` and waits for it.
func runOpenSSL(_ arguments: [String], in directory: URL) throws -> OpenSSLRun {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
  process.arguments = arguments
  process.currentDirectoryURL = directory
  let stdout = Pipe()
  let stderr = Pipe()
  process.standardOutput = stdout
  process.standardError = stderr
  process.standardInput = FileHandle.nullDevice
  try process.run()
  // Outputs here are small (keys, signatures, messages), well under a pipe's buffer, so reading after exit is safe.
  let out = stdout.fileHandleForReading.readDataToEndOfFile()
  let err = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  process.waitUntilExit()
  return OpenSSLRun(status: process.terminationStatus, stdout: out, stderr: err)
}

/// Runs `openssl` and requires it to succeed.
@discardableResult
func requireOpenSSL(_ arguments: [String], in directory: URL) throws -> Data {
  let run = try runOpenSSL(arguments, in: directory)
  try #require(run.status == 0, "openssl \(arguments.joined(separator: " ")) failed: \(run.stderr)")
  return run.stdout
}

/// A fresh temporary directory, removed by `body`'s end.
func withTemporaryDirectory<R>(_ body: (URL) throws -> R) throws -> R {
  let directory = FileManager.default.temporaryDirectory
    .appendingPathComponent("jwt-tests-\(UUID().uuidString)", isDirectory: true)
  try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: directory) }
  return try body(directory)
}

// MARK: - Keys made once per test run

/// PEM keys generated with the openssl CLI when first used.
struct TestKeys: Sendable {
  /// A 2048-bit RSA key, PKCS#8 (`BEGIN PRIVATE KEY`).
  var privateKey: String
  /// The same key in the traditional PKCS#1 form (`BEGIN RSA PRIVATE KEY`).
  var privateKeyPKCS1: String
  /// The same key encrypted with AES-256 under the passphrase `secret`.
  var encryptedPrivateKey: String
  /// Its public key (`BEGIN PUBLIC KEY`).
  var publicKey: String
  /// A self-signed certificate for it.
  var certificate: String
  /// The public key of a different 2048-bit RSA key.
  var otherPublicKey: String
  /// A 1024-bit RSA key pair, too small for RS256.
  var weakPrivateKey: String
  var weakPublicKey: String
  /// A P-256 key pair: not RSA.
  var ecPrivateKey: String
  var ecPublicKey: String

  /// Generated on first use; every test shares them.
  static let shared: Result<TestKeys, any Error> = Result { try TestKeys.generate() }

  /// The shared keys, or the generation failure.
  static func get() throws -> TestKeys { try shared.get() }

  private static func generate() throws -> TestKeys {
    try withTemporaryDirectory { directory in
      func read(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
      }
      let rsa = ["genpkey", "-algorithm", "RSA", "-pkeyopt"]
      try requireOpenSSL(rsa + ["rsa_keygen_bits:2048", "-out", "rsa.key"], in: directory)
      try requireOpenSSL(["pkey", "-in", "rsa.key", "-pubout", "-out", "rsa.pub"], in: directory)
      try requireOpenSSL(["pkey", "-in", "rsa.key", "-traditional", "-out", "rsa1.key"], in: directory)
      try requireOpenSSL(
        ["pkey", "-in", "rsa.key", "-aes256", "-passout", "pass:secret", "-out", "rsa-enc.key"], in: directory)
      try requireOpenSSL(
        ["req", "-x509", "-new", "-key", "rsa.key", "-subj", "/CN=jwt-test", "-days", "2", "-out", "rsa.crt"],
        in: directory)
      try requireOpenSSL(rsa + ["rsa_keygen_bits:2048", "-out", "other.key"], in: directory)
      try requireOpenSSL(["pkey", "-in", "other.key", "-pubout", "-out", "other.pub"], in: directory)
      try requireOpenSSL(rsa + ["rsa_keygen_bits:1024", "-out", "weak.key"], in: directory)
      try requireOpenSSL(["pkey", "-in", "weak.key", "-pubout", "-out", "weak.pub"], in: directory)
      try requireOpenSSL(
        ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ec.key"], in: directory)
      try requireOpenSSL(["pkey", "-in", "ec.key", "-pubout", "-out", "ec.pub"], in: directory)
      return TestKeys(
        privateKey: try read("rsa.key"),
        privateKeyPKCS1: try read("rsa1.key"),
        encryptedPrivateKey: try read("rsa-enc.key"),
        publicKey: try read("rsa.pub"),
        certificate: try read("rsa.crt"),
        otherPublicKey: try read("other.pub"),
        weakPrivateKey: try read("weak.key"),
        weakPublicKey: try read("weak.pub"),
        ecPrivateKey: try read("ec.key"),
        ecPublicKey: try read("ec.pub")
      )
    }
  }
}

/// Claims every test can sign: a Fleet Engine consumer token for trip-7, valid 1700000000...1700003600.
func sampleClaims() -> JWTClaims {
  JWTClaims(
    issuer: "consumer@project.iam.gserviceaccount.com",
    subject: "consumer@project.iam.gserviceaccount.com",
    audience: ["https://fleetengine.googleapis.com/"],
    expiresAt: 1_700_003_600,
    issuedAt: 1_700_000_000,
    authorization: ["tripid": "trip-7"]
  )
}

// MARK: - Random numbers
