// Tests/JourneySharingTests/TokenLeakTests.swift - tokens never reach logs or error texts
//
// A FleetSim requiring HS256 tokens refuses most of the tokens a provider hands out (wrong key, not a
// JWT, expired, another trip's), then accepts good ones. Everything the client and the server log, at
// trace level, and every text of every error a subscriber gets, is searched for each token and its
// pieces.

import FleetEngineMessages
import FleetSim
import Foundation
import GRPCProtocol
import HTTP2Transport
import JSONWebToken
import JourneySharing
import Logging
import Primitives
import TestSupport
import Testing

/// Keeps every rendering of every error it is given.
private final class ErrorTextCollector: TripModelSubscriber {
  private let texts = Locked<[String]>([])
  private let codes = Locked<[Int]>([])
  private let tripCount = Locked(0)

  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {
    guard let error else { return }
    let bridged = error as NSError
    var dumped = ""
    dump(error, to: &dumped)
    let rendered = [
      "\(error)", String(reflecting: error), bridged.description, bridged.localizedDescription, "\(bridged.userInfo)",
      dumped,
    ]
    texts.withLock { $0.append(contentsOf: rendered) }
    codes.withLock { $0.append(bridged.code) }
  }

  func tripModel(_ tripModel: TripModel, didUpdate trip: Trip?, updatedPropertyFields: TripPropertyFields) {
    tripCount.withLock { $0 += 1 }
  }

  var all: [String] { texts.withLock { $0 } }
  var errorCodes: [Int] { codes.withLock { $0 } }
  var trips: Int { tripCount.withLock { $0 } }
}

/// The token, its three parts and the header value: none of them may appear anywhere.
private func pieces(of token: String) -> [String] {
  [token, "Bearer " + token] + token.split(separator: ".").map(String.init).filter { $0.count >= 8 }
}

/// Over real sockets: the logs searched include the HTTP/2 transport's and the server's at trace level, where
/// request headers (the `authorization` header among them) pass; an in-memory transport would leave them out.
@Suite("Tokens stay out of logs and errors, end to end (FleetSim over sockets)", .timeLimit(.minutes(2)))
struct TokenLeakEndToEndTests {
  @Test(
    "Refused tokens (wrong key, not a JWT, expired, another trip's) and accepted ones: no log at trace level and no error text holds any piece of them",
    arguments: [JourneySharingConfiguration.FetchMode.stream, .poll])
  func tokensNeverAppear(mode: JourneySharingConfiguration.FetchMode) async throws {
    let capture = LogCapture()
    let sim = try FleetSim(
      configuration: followSimConfiguration(simulatedNow: followNeverStarts, auth: .hs256(secret: followSecret)),
      logger: capture.logger("fleetsim"))
    let port = try sim.start()
    let otherKey = Array("another-secret-another-secret-0123456789".utf8)
    // For the followed trip: three refused tokens (UNAUTHENTICATED, each dropped and fetched again), then good ones.
    let provider = CountingTokenProvider { number, context in
      switch number {
      case 1: try followToken(tripID: context.tripID, secret: otherKey)
      case 2: "not-a-jwt." + (try followToken(tripID: context.tripID)).split(separator: ".").last!
      case 3: try followToken(tripID: context.tripID, expiresIn: -3_600)
      default: try followToken(tripID: context.tripID)
      }
    }
    // For a second trip: a token for another trip, PERMISSION_DENIED again and again.
    let foreign = CountingTokenProvider { _, _ in try followToken(tripID: "trip-999") }
    var services: [JourneySharingServices] = []
    let collector = ErrorTextCollector()
    for (index, tokens) in [(6, provider as any AuthorizationProvider), (7, foreign)] {
      var configuration = followClientConfiguration(port: port, mode: mode, authorization: tokens)
      configuration.logger = capture.logger("client")
      let service = try JourneySharingServices(configuration: configuration)
      services.append(service)
      service.tripService.tripModel(forTripName: sim.simulator.tripName(index: index)).register(collector)
    }

    #expect(await eventually { provider.calls >= 4 && collector.trips >= 3 && foreign.calls >= 1 })
    #expect(
      await eventually { collector.errorCodes.filter { $0 == GRPCStatusCode.permissionDenied.rawValue }.count >= 2 })
    let codes = Set(collector.errorCodes)
    #expect(
      codes.isSuperset(of: [GRPCStatusCode.unauthenticated.rawValue, GRPCStatusCode.permissionDenied.rawValue]),
      "\(codes)")
    for service in services { await service.shutdown() }
    await sim.shutdown()

    let logged = capture.all.map(\.description)
    #expect(!logged.isEmpty)
    let texts = logged + collector.all + [String(describing: await sim.stats())]
    for token in provider.tokens + foreign.tokens {
      for piece in pieces(of: token) {
        let leaks = texts.filter { $0.contains(piece) }
        #expect(leaks.isEmpty, "a token piece appears in: \(leaks.prefix(3))")
      }
    }
  }
}
