// Sources/fleetsim/TokenCommand.swift - `fleetsim token`: a JWT a fleetsim with the same key accepts

import ArgumentParser
import FleetEngineMessages
import JSONWebToken
import Primitives
import ToolSupport

struct TokenCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "token",
    abstract: "Print a JWT for one trip (or every trip) that a fleetsim started with the same key accepts.",
    discussion: """
      The token carries what Fleet Engine's authentication guide lists: iss and sub (the service account's \\
      email, or --issuer), aud https://fleetengine.googleapis.com/, iat now, exp --lifetime later (at most \\
      3600 s), and authorization.tripid (the trip, or * with --server). HS256 with --jwt-secret or \\
      --jwt-secret-file; RS256 with --jwt-private-key (kid: --key-id) or --service-account-file (the key's \\
      email and id). \\(ToolExit.helpText)
      """)

  @Option(help: "The trip the token grants: providers/{provider}/trips/{trip}, or just the trip ID.")
  var trip: String?

  @Flag(help: "Grant every trip (authorization.tripid \"*\"), as a server's token does.")
  var server = false

  @Option(name: .customLong("jwt-secret"), help: "Sign HS256 with this secret (visible in `ps`).")
  var jwtSecret: String?

  @Option(name: .customLong("jwt-secret-file"), help: "Sign HS256 with the secret in this file.")
  var jwtSecretFile: String?

  @Option(name: .customLong("jwt-private-key"), help: "Sign RS256 with this PEM private key file.")
  var jwtPrivateKey: String?

  @Option(name: .customLong("key-id"), help: "The kid of an RS256 token signed with --jwt-private-key.")
  var keyID: String?

  @Option(
    name: .customLong("service-account-file"),
    help: "Sign RS256 with this Google service account JSON key (its email and key id go into the token).")
  var serviceAccountFile: String?

  @Option(help: "The iss and sub claims (default: the service account's email, else fleetsim@localhost).")
  var issuer: String?

  @Option(help: "The aud claim.")
  var audience = "https://fleetengine.googleapis.com/"

  @Option(help: "Seconds from iat to exp (1 to 3600).")
  var lifetime = 3600.0

  func validate() throws {
    guard (trip != nil) != server else { throw ValidationError("give --trip NAME or --server") }
    if let trip, TripName(parsing: trip) == nil, TripName(providerID: "p", tripID: trip) == nil {
      throw ValidationError("--trip must be providers/{provider}/trips/{trip} or a trip ID")
    }
    let keys = [jwtSecret != nil, jwtSecretFile != nil, jwtPrivateKey != nil, serviceAccountFile != nil]
    guard keys.filter({ $0 }).count == 1 else {
      throw ValidationError("give one of --jwt-secret, --jwt-secret-file, --jwt-private-key, --service-account-file")
    }
    guard keyID == nil || jwtPrivateKey != nil else { throw ValidationError("--key-id goes with --jwt-private-key") }
    guard lifetime >= 1 && lifetime <= 3600 else { throw ValidationError("--lifetime must be 1…3600 seconds") }
  }

  func run() async throws {
    let tripID: String
    if server {
      tripID = "*"
    } else if let trip, let name = TripName(parsing: trip) {
      tripID = name.tripID
    } else {
      tripID = trip ?? "*"
    }
    var key: JWTSigningKey
    var kid: String?
    var subject = issuer ?? "fleetsim@localhost"
    if let jwtSecret {
      key = .hs256(secret: Array(jwtSecret.utf8))
    } else if let jwtSecretFile {
      key = .hs256(secret: try readSecret(jwtSecretFile, option: "--jwt-secret-file"))
    } else if let jwtPrivateKey {
      let pem = String(decoding: try readCredentialFile(jwtPrivateKey, option: "--jwt-private-key"), as: UTF8.self)
      key = .rs256(privateKeyPEM: pem)
      kid = keyID
    } else {
      let path = serviceAccountFile ?? ""
      let bytes = try readCredentialFile(path, option: "--service-account-file")
      let account: ServiceAccountKey
      do {
        account = try ServiceAccountKey(json: bytes)
      } catch {
        throw ToolFailure(.invalidInput, "--service-account-file: \(error.message)")
      }
      key = .rs256(privateKeyPEM: account.privateKeyPEM)
      kid = account.privateKeyID
      subject = issuer ?? account.clientEmail
    }
    let issuedAt = unixTime().rounded(.down)
    let claims = JWTClaims(
      issuer: subject, subject: subject, audience: [audience], expiresAt: issuedAt + lifetime.rounded(.down),
      issuedAt: issuedAt, authorization: ["tripid": .string(tripID)])
    do {
      print(try JSONWebToken.sign(claims: claims, key: key, keyID: kid))
    } catch {
      throw ToolFailure(.invalidInput, "signing failed: \(error.message)")
    }
  }
}
