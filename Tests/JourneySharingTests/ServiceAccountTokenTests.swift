// Tests/JourneySharingTests/ServiceAccountTokenTests.swift - Fleet Engine JWTs minted from a service account key
//
// Keys are made in the test with the openssl CLI: an RSA key in a service-account JSON key file, as
// Google Cloud issues them. Tokens are checked claim by claim and by signature, against a FleetSim that
// requires RS256 tokens verified with the key's public half (as `fleetsim --jwt-public-key` does), in memory
// on a virtual clock (the provider signs on that clock).

import FleetEngineMessages
import FleetSim
import Foundation
import GRPCProtocol
import JSONWebToken
import Primitives
import Testing

@testable import JourneySharing

/// A service account made for a test: its JSON key file's bytes and the public key.
struct TestServiceAccount: Sendable {
  var email: String
  var keyID: String
  var keyJSON: [UInt8]
  var privateKeyPEM: String
  var publicKeyPEM: String

  /// A new RSA-2048 key for `email`, as a Google service account JSON key.
  static func make(email: String = "fleet-consumer@journeysharing-tests.iam.gserviceaccount.com") throws
    -> TestServiceAccount
  {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sa-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    func openssl(_ arguments: [String]) throws {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
      process.arguments = arguments
      process.currentDirectoryURL = directory
      process.standardOutput = FileHandle.nullDevice
      process.standardError = FileHandle.nullDevice
      try process.run()
      process.waitUntilExit()
      try #require(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " ")) failed")
    }
    try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"])
    try openssl(["pkey", "-in", "key.pem", "-pubout", "-out", "public.pem"])
    let privatePEM = try String(contentsOf: directory.appendingPathComponent("key.pem"), encoding: .utf8)
    let publicPEM = try String(contentsOf: directory.appendingPathComponent("public.pem"), encoding: .utf8)
    let keyID = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    let object: [String: String] = [
      "type": "service_account", "project_id": "journeysharing-tests", "private_key_id": keyID,
      "private_key": privatePEM, "client_email": email, "client_id": "1234567890",
      "token_uri": "https://oauth2.googleapis.com/token",
    ]
    let json = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    return TestServiceAccount(
      email: email, keyID: keyID, keyJSON: Array(json), privateKeyPEM: privatePEM, publicKeyPEM: publicPEM)
  }

  /// The key file written to a temporary path.
  func writeKeyFile() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("sa-\(UUID().uuidString).json").path
    try Data(keyJSON).write(to: URL(fileURLWithPath: path))
    return path
  }
}

/// A clock tests move by hand.
private final class ManualClock: Sendable {
  private let now = Locked<Double>(1_800_000_000)
  func read() -> Double { now.withLock { $0 } }
  func advance(by seconds: Double) { now.withLock { $0 += seconds } }
}

private func context(_ tripID: String) -> AuthorizationContext {
  AuthorizationContext(tripID: tripID, tripName: "providers/demo/trips/\(tripID)")
}

@Suite("Service account tokens (FleetSim in memory)", .timeLimit(.minutes(2)))
struct ServiceAccountTokenTests {
  @Test("A token has exactly the claims Fleet Engine's guide lists, and verifies with the key's public half")
  func claims() async throws {
    let account = try TestServiceAccount.make()
    let provider = try ServiceAccountTokenProvider(keyJSON: account.keyJSON)
    let before = unixTime().rounded(.down)
    let token = try await provider.fetchToken(with: context("trip-7"))
    let after = unixTime()
    let parsed = try JSONWebToken(parsing: token)
    #expect(parsed.header.algorithm == "RS256")
    #expect(parsed.header.type == "JWT")
    #expect(parsed.header.keyID == account.keyID)
    #expect(parsed.claims.issuer == account.email)
    #expect(parsed.claims.subject == account.email)
    #expect(parsed.claims.audience == ["https://fleetengine.googleapis.com/"])
    #expect(parsed.claims.tripID == "trip-7")
    #expect(parsed.claims.authorization.keys.sorted() == ["tripid"])
    let issuedAt = try #require(parsed.claims.issuedAt)
    let expiresAt = try #require(parsed.claims.expiresAt)
    #expect(issuedAt >= before && issuedAt <= after)
    #expect(expiresAt - issuedAt == 3600)
    try parsed.verify(with: .rs256(publicKeyPEM: account.publicKeyPEM))
    try parsed.validate(now: after, leeway: 0)
    // The description names the account, never the key.
    #expect("\(provider)".contains(account.email))
    #expect(!"\(provider)".contains("PRIVATE KEY"))
  }

  @Test("Tokens are cached per trip (trip scope) or shared by every trip (server scope, tripid *)")
  func caching() async throws {
    let account = try TestServiceAccount.make()
    let perTrip = try ServiceAccountTokenProvider(keyJSON: account.keyJSON, scope: .trip)
    let first = try await perTrip.fetchToken(with: context("trip-1"))
    #expect(try await perTrip.fetchToken(with: context("trip-1")) == first)
    let other = try await perTrip.fetchToken(with: context("trip-2"))
    #expect(other != first)
    #expect(try JSONWebToken(parsing: other).claims.tripID == "trip-2")

    let server = try ServiceAccountTokenProvider(keyJSON: account.keyJSON, scope: .server)
    let shared = try await server.fetchToken(with: context("trip-1"))
    #expect(try await server.fetchToken(with: context("trip-2")) == shared)
    #expect(try JSONWebToken(parsing: shared).claims.tripID == "*")
  }

  @Test("A cached token is replaced once less than the renewal margin is left, never handed out expired")
  func renewal() throws {
    let account = try TestServiceAccount.make()
    let clock = ManualClock()
    let provider = try ServiceAccountTokenProvider(
      keyJSON: account.keyJSON, scope: .trip, lifetime: .seconds(3600), renewalMargin: .seconds(300),
      audience: ServiceAccountTokenProvider.fleetEngineAudience, clock: { clock.read() })
    let first = try provider.token(forTrip: "trip-1")
    clock.advance(by: 3600 - 301)
    #expect(try provider.token(forTrip: "trip-1") == first, "301 s left: still the cached token")
    clock.advance(by: 2)
    let renewed = try provider.token(forTrip: "trip-1")
    #expect(renewed != first, "299 s left: renewed")
    let claims = try JSONWebToken(parsing: renewed).claims
    #expect(claims.issuedAt == clock.read().rounded(.down))
    #expect(try #require(claims.expiresAt) - clock.read() > 3000)
  }

  @Test("Lifetimes above Fleet Engine's one hour are clamped to it")
  func lifetimeClamped() throws {
    let account = try TestServiceAccount.make()
    let provider = try ServiceAccountTokenProvider(keyJSON: account.keyJSON, lifetime: .seconds(100 * 365 * 86400))
    #expect(provider.lifetime == .seconds(3600))
    let claims = try JSONWebToken(parsing: try provider.token(forTrip: "trip-1")).claims
    #expect(try #require(claims.expiresAt) - (try #require(claims.issuedAt)) == 3600)
  }

  @Test(
    "Unusable key files fail when the provider is made, with a reason and without key material",
    arguments: [
      ("not JSON", "not json at all"),
      ("no client_email", #"{"type":"service_account","private_key_id":"k","private_key":"x"}"#),
      ("wrong type", #"{"type":"authorized_user","client_email":"a@b","private_key_id":"k","private_key":"x"}"#),
      (
        "not a key",
        #"{"type":"service_account","client_email":"a@b","private_key_id":"k","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}"#
      ),
    ])
  func badKeys(name: String, json: String) throws {
    do {
      _ = try ServiceAccountTokenProvider(keyJSON: Array(json.utf8))
      Issue.record("\(name): accepted")
    } catch {
      #expect(!error.message.isEmpty, "\(name)")
      #expect(!error.message.contains("AAAA"), "\(name): the message quotes the key")
    }
    #expect(throws: ServiceAccountKeyError.self) {
      _ = try ServiceAccountTokenProvider(keyFile: "/nonexistent/key.json")
    }
  }

  @Test(
    "FleetSim requiring RS256 tokens of the key accepts the minted ones and refuses another trip's with PERMISSION_DENIED",
    arguments: [JourneySharingConfiguration.FetchMode.stream, .poll])
  func againstFleetSim(mode: JourneySharingConfiguration.FetchMode) async throws {
    let account = try TestServiceAccount.make()
    let keyFile = try account.writeKeyFile()
    defer { try? FileManager.default.removeItem(atPath: keyFile) }
    // The key file loads; the provider that follows signs the same key on the fixture's clock (virtual in memory:
    // FleetSim checks iat and exp against it).
    let fromFile = try ServiceAccountTokenProvider(keyFile: keyFile)
    #expect("\(fromFile)".contains(account.email))
    let keyJSON = try #require(FileManager.default.contents(atPath: keyFile))
    let clock = FixtureClock()
    let minted = try ServiceAccountTokenProvider(
      keyJSON: Array(keyJSON), scope: .trip, lifetime: .seconds(3600), renewalMargin: .seconds(300),
      audience: ServiceAccountTokenProvider.fleetEngineAudience, clock: { clock.now })
    try await withFollowFixture(
      .inMemory,
      simulation: {
        followSimConfiguration(
          simulatedNow: followNeverStarts, auth: .rs256(publicKeyPEM: account.publicKeyPEM), now: $0)
      },
      client: configured {
        $0.fetchMode = mode
        $0.authorization = minted
      },
      clock: clock
    ) { fixture in
      let subscriber = RecordingSubscriber()
      let model = fixture.model(0)
      model.register(subscriber)
      #expect(await fixture.wait { subscriber.trips().count >= 2 }, "updates with minted tokens")
      #expect(subscriber.errors().isEmpty, "\(subscriber.errors())")
      model.unregisterSubscriber(subscriber)

      // Trip 1 followed with trip 0's token: the server refuses it.
      let tripZero = try #require(TripName(parsing: fixture.simulator.tripName(index: 0)))
      let wrongTrip = try await minted.fetchToken(
        with: AuthorizationContext(tripID: tripZero.tripID, tripName: tripZero.description))
      let services = try fixture.moreServices(
        client: configured {
          $0.fetchMode = mode
          $0.authorization = StaticTokenProvider(token: wrongTrip)
        })
      let refused = RecordingSubscriber()
      let other = services.tripService.tripModel(forTripName: fixture.simulator.tripName(index: 1))
      other.register(refused)
      #expect(await fixture.wait { !refused.errors().isEmpty })
      let error = try #require(refused.errors().first)
      #expect(error.domain == "io.grpc")
      #expect(error.code == GRPCStatusCode.permissionDenied.rawValue, "\(error.description)")
      #expect(refused.trips().isEmpty)
      other.unregisterSubscriber(refused)
      await services.shutdown()
    }
  }
}
