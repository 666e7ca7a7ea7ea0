// Tests/FleetSimTests/TokenClaimTests.swift - FleetSim checks a token's claims as Fleet Engine does
//
// A FleetSim requiring HS256 tokens, on 127.0.0.1, and a plaintext GRPCChannel: tokens signed with the
// right secret but failing one claim check (aud, iss, sub, iat, exp, lifetime) are UNAUTHENTICATED, the
// status message names the check and never the token; compliant tokens pass; the trip check stays
// PERMISSION_DENIED. The same checks apply to the streaming GetTrip.

import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import JSONWebToken
import ProtoWire
import Testing

#if canImport(Glibc)
  import Glibc
#endif

private let claimSecret = Array("fleetsim-claim-tests-hs256-secret-0123456789".utf8)
private let serviceAccount = "consumer@project.iam.gserviceaccount.com"

private func now() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_REALTIME, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Claims Fleet Engine accepts for a consumer of `tripID`: aud, iss = sub, issued a minute ago, 30 minutes left.
private func compliantClaims(tripID: String = "trip-1") -> JWTClaims {
  let issued = now() - 60
  var claims = JWTClaims(
    issuer: serviceAccount, subject: serviceAccount, audience: [FleetSimConfiguration.Auth.fleetEngineAudience],
    expiresAt: issued + 1_860, issuedAt: issued)
  claims.tripID = tripID
  return claims
}

private func bearer(_ claims: JWTClaims) throws -> String {
  "Bearer " + (try JSONWebToken.sign(claims: claims, key: .hs256(secret: claimSecret)))
}

/// A started FleetSim with `auth` and a channel to it.
private func withSim<R>(
  auth: FleetSimConfiguration.Auth, _ body: (FleetSim, GRPCChannel) async throws -> R
) async throws -> R {
  let configuration = FleetSimConfiguration(
    simulation: SimulationConfiguration(tripCount: 3, seed: 5, startTime: now() - 1, speedup: 10),
    updateInterval: .milliseconds(50), auth: auth)
  let sim = try FleetSim(configuration: configuration)
  let channel: GRPCChannel
  do {
    channel = try GRPCChannel(
      host: "127.0.0.1", port: try sim.start(), configuration: GRPCChannelConfiguration(security: .plaintext))
  } catch {
    await sim.shutdown()
    throw error
  }
  do {
    let result = try await body(sim, channel)
    await channel.shutdown()
    await sim.shutdown()
    return result
  } catch {
    channel.close()
    await sim.shutdown()
    throw error
  }
}

/// The status of a unary GetTrip of trip-1 with `authorization`.
private func unaryStatus(_ channel: GRPCChannel, _ authorization: String) async -> GRPCError? {
  var request = GetTripRequest()
  request.name = "providers/demo/trips/trip-1"
  do {
    _ = try await channel.unary(
      path: FleetEngineMethods.unaryGetTrip, request: request.serializedBytes(),
      options: CallOptions(timeout: .seconds(20), metadata: ["authorization": .string(authorization)]))
    return nil
  } catch {
    return error
  }
}

/// The status a streaming GetTrip of trip-1 with `authorization` ends with, or nil when it delivers the trip.
private func streamStatus(_ channel: GRPCChannel, _ authorization: String) async -> GRPCError? {
  var request = StreamTripRequest()
  request.name = "providers/demo/trips/trip-1"
  let response = channel.serverStreaming(
    path: FleetEngineMethods.streamingGetTrip, request: request.serializedBytes(),
    options: CallOptions(timeout: .seconds(20), metadata: ["authorization": .string(authorization)]))
  var iterator = response.makeAsyncIterator()
  do {
    _ = try await iterator.next()
    return nil
  } catch {
    return error
  }
}

/// One way a token fails a claim check, and the words the refusal must contain.
struct ClaimFault: Sendable, CustomTestStringConvertible {
  var testDescription: String
  var check: String
  var apply: @Sendable (inout JWTClaims) -> Void
}

private let faults: [ClaimFault] = [
  ClaimFault(testDescription: "no aud", check: "no aud claim") { $0.audience = [] },
  ClaimFault(testDescription: "another aud", check: "aud is not \"https://fleetengine.googleapis.com/\"") {
    $0.audience = ["https://example.com/"]
  },
  ClaimFault(testDescription: "two audiences", check: "aud is not") {
    $0.audience = [FleetSimConfiguration.Auth.fleetEngineAudience, "https://example.com/"]
  },
  ClaimFault(testDescription: "no iss", check: "no iss claim") { $0.issuer = nil },
  ClaimFault(testDescription: "empty iss", check: "no iss claim") { $0.issuer = "" },
  ClaimFault(testDescription: "no sub", check: "no sub claim") { $0.subject = nil },
  ClaimFault(testDescription: "iss and sub differ", check: "iss and sub differ") { $0.subject = "rider" },
  ClaimFault(testDescription: "no iat", check: "no iat claim") { $0.issuedAt = nil },
  ClaimFault(testDescription: "no exp", check: "no exp claim") { $0.expiresAt = nil },
  ClaimFault(testDescription: "100-year lifetime", check: "lifetime (exp - iat) is 3155760000 s, more than 3600 s") {
    // Whole seconds: with a fraction, exp - iat in doubles can come out a hair above 100 years (…001 s).
    $0.issuedAt = $0.issuedAt!.rounded(.down)
    $0.expiresAt = $0.issuedAt! + 100 * 365.25 * 86_400
  },
  ClaimFault(testDescription: "one hour and one second", check: "lifetime (exp - iat) is 3601 s") {
    $0.expiresAt = $0.issuedAt! + 3_601
  },
  ClaimFault(testDescription: "issued two minutes ahead", check: "iat is more than 30 s in the future") {
    $0.issuedAt = now() + 120
    $0.expiresAt = now() + 1_200
  },
  ClaimFault(testDescription: "expired a minute ago", check: "expired") {
    $0.issuedAt = now() - 1_800
    $0.expiresAt = now() - 60
  },
  ClaimFault(testDescription: "not before, ahead", check: "not valid yet") { $0.notBefore = now() + 600 },
]

@Suite("FleetSim token claims", .timeLimit(.minutes(2)))
struct TokenClaimTests {
  @Test("A correctly signed token failing one claim check: UNAUTHENTICATED, naming the check", arguments: faults)
  func refusedClaim(_ fault: ClaimFault) async throws {
    var claims = compliantClaims()
    fault.apply(&claims)
    let authorization = try bearer(claims)
    try await withSim(auth: .hs256(secret: claimSecret)) { sim, channel in
      for (kind, error) in [
        ("unary", await unaryStatus(channel, authorization)), ("stream", await streamStatus(channel, authorization)),
      ] {
        #expect(error?.code == .unauthenticated, "\(kind): \(String(describing: error))")
        #expect(error?.message.contains(fault.check) == true, "\(kind): \(String(describing: error?.message))")
        #expect(error?.message.contains(authorization.dropFirst("Bearer ".count)) == false)
      }
      #expect(await sim.stats().unauthenticated == 2)
    }
  }

  @Test("Compliant tokens pass: an hour of lifetime exactly, iat up to 30 s ahead, a one-element aud array")
  func compliantTokensPass() async throws {
    var oneHour = compliantClaims()
    oneHour.expiresAt = oneHour.issuedAt! + 3_600
    var slightlyAhead = compliantClaims()
    slightlyAhead.issuedAt = now() + 10
    slightlyAhead.expiresAt = now() + 600
    var expiring = compliantClaims()
    expiring.expiresAt = now() + 2  // still valid (and within the leeway for a while after)
    let tokens = try [compliantClaims(), compliantClaims(tripID: "*"), oneHour, slightlyAhead, expiring].map(bearer)
    try await withSim(auth: .hs256(secret: claimSecret)) { sim, channel in
      for token in tokens {
        let error = await unaryStatus(channel, token)
        #expect(error == nil, "\(String(describing: error))")
      }
      #expect(await streamStatus(channel, tokens[0]) == nil)
      #expect(await sim.stats().unauthenticated == 0)
    }
  }

  @Test("With an expected issuer, iss must be it; the trip claim still decides PERMISSION_DENIED")
  func expectedIssuer() async throws {
    var other = compliantClaims()
    other.issuer = "someone-else@project.iam.gserviceaccount.com"
    other.subject = other.issuer
    let auth = FleetSimConfiguration.Auth.hs256(secret: claimSecret, expectedIssuer: serviceAccount)
    #expect(auth.audience == "https://fleetengine.googleapis.com/")
    try await withSim(auth: auth) { sim, channel in
      let refused = await unaryStatus(channel, try bearer(other))
      #expect(refused?.code == .unauthenticated)
      #expect(refused?.message.contains("iss is not the expected issuer") == true, "\(String(describing: refused))")
      #expect(await unaryStatus(channel, try bearer(compliantClaims())) == nil)
      let anotherTrip = await unaryStatus(channel, try bearer(compliantClaims(tripID: "trip-2")))
      #expect(anotherTrip?.code == .permissionDenied)
      let stats = await sim.stats()
      #expect(stats.unauthenticated == 1 && stats.permissionDenied == 1)
    }
  }

  @Test("A server configured for another audience refuses Fleet Engine's")
  func configuredAudience() async throws {
    let auth = FleetSimConfiguration.Auth.hs256(secret: claimSecret, audience: "https://fleetsim.test/")
    var own = compliantClaims()
    own.audience = ["https://fleetsim.test/"]
    try await withSim(auth: auth) { _, channel in
      #expect(await unaryStatus(channel, try bearer(own)) == nil)
      let refused = await unaryStatus(channel, try bearer(compliantClaims()))
      #expect(refused?.code == .unauthenticated)
      #expect(refused?.message.contains("aud is not \"https://fleetsim.test/\"") == true)
    }
  }
}
