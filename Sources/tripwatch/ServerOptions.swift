// Sources/tripwatch/ServerOptions.swift - where the trips are and how to authenticate: `follow` and `get` share these

public import ArgumentParser
import HTTP2Transport
import JourneySharing
import Logging
import ToolSupport

struct ServerOptions: ParsableArguments {
  @Option(
    help: """
      The servers, in gRPC's name syntax: HOST:PORT or dns:///NAME:PORT (every address of the name), \
      ipv4:ADDR:PORT,ADDR:PORT,... or ipv6:[ADDR]:PORT,... (a list). Default: Fleet Engine (TLS).
      """)
  var target = "fleetengine.googleapis.com:443"

  @Option(name: .customLong("event-loops"), help: "I/O threads (event loops). Default: one per core.")
  var eventLoops: Int?

  @Flag(help: "Use cleartext HTTP/2 (h2c) instead of TLS.")
  var plaintext = false

  @Option(name: .customLong("ca-file"), help: "Trust only the CA certificates in this PEM file.")
  var caFile: String?

  @Option(help: "A bearer token (JWT) to send. Visible in `ps`: prefer --token-file.")
  var token: String?

  @Option(name: .customLong("token-file"), help: "Read the bearer token from this file.")
  var tokenFile: String?

  @Option(
    name: .customLong("service-account-file"),
    help: "Mint Fleet Engine JWTs with this Google service account JSON key (RS256, kid, iss/sub, aud).")
  var serviceAccountFile: String?

  @Option(
    name: .customLong("token-scope"),
    help: "With --service-account-file: one token per trip (trip), or one for every trip (server).")
  var tokenScope: ServiceAccountTokenProvider.Scope = .trip

  func validate() throws {
    do {
      _ = try GRPCTarget(parsing: target)
    } catch {
      throw ValidationError("--target: \(error.message)")
    }
    if let eventLoops, eventLoops < 1 { throw ValidationError("--event-loops must be at least 1") }
    let sources = [token != nil, tokenFile != nil, serviceAccountFile != nil].filter { $0 }.count
    guard sources <= 1 else { throw ValidationError("give one of --token, --token-file, --service-account-file") }
    if plaintext && caFile != nil { throw ValidationError("--ca-file needs TLS; drop --plaintext") }
  }

  /// The services configuration for trips of `providerID`; throws ``ToolFailure`` (invalid input)
  /// when a token or key file cannot be used.
  func configuration(providerID: String) throws -> JourneySharingConfiguration {
    var authorization: (any AuthorizationProvider)?
    if let token { authorization = StaticTokenProvider(token: token) }
    if let tokenFile {
      let contents = String(decoding: try readCredentialFile(tokenFile, option: "--token-file"), as: UTF8.self)
      let value = String(contents.filter { !$0.isWhitespace })
      guard !value.isEmpty else { throw ToolFailure(.invalidInput, "--token-file \(tokenFile) is empty") }
      authorization = StaticTokenProvider(token: value)
    }
    if let serviceAccountFile {
      do {
        authorization = try ServiceAccountTokenProvider(keyFile: serviceAccountFile, scope: tokenScope)
      } catch {
        throw ToolFailure(.invalidInput, "--service-account-file: \(error.message)")
      }
    }
    var tls = JourneySharingConfiguration.TLS()
    if let caFile { tls.trustRoots = .caFile(caFile) }
    var logger = Logger(label: "tripwatch")
    logger.logLevel = .warning
    var configuration = JourneySharingConfiguration(
      target: target, security: plaintext ? .plaintext : .tls(tls), providerID: providerID,
      authorization: authorization, logger: logger)
    if let eventLoops { configuration.connection.eventLoops = JourneySharingEventLoops(loopCount: eventLoops) }
    return configuration
  }

  /// `message`, with a hint when it says the server did not speak TLS (it may be h2c).
  func explained(_ message: String) -> String {
    guard !plaintext else { return message }
    let lowered = message.lowercased()
    let notTLS = ["wrong version number", "packet length too long", "record layer failure", "unexpected eof"]
    guard lowered.contains("tls"), notTLS.contains(where: lowered.contains) else { return message }
    return message + " (the server may not speak TLS: for a cleartext h2c server, add --plaintext)"
  }
}

extension ServiceAccountTokenProvider.Scope: ExpressibleByArgument {}
extension JourneySharingConfiguration.FetchMode: ExpressibleByArgument {}
