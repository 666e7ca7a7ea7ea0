// Tests/HTTP2TransportTests/TLSTests.swift - calls over TLS with a CA and certificate made at test time

import Foundation
import GRPCProtocol
import HTTP2Transport
import Logging
import TestSupport
import Testing

@Suite("TLS", .timeLimit(.minutes(1)))
struct TLSTests {
  @Test(
    "a unary call over TLS to a certificate the CA signed, by IP address or by name",
    arguments: [nil, "localhost"] as [String?])
  func unaryOverTLS(serverNameOverride: String?) async throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    let tls = TLSConfiguration(trustRoots: .caFile(certificates.caFile), serverNameOverride: serverNameOverride)
    try await Fixture.with(
      server: GRPCServerConfiguration(tls: certificates.serverTLS),
      channel: GRPCChannelConfiguration(security: .tls(tls))
    ) { fixture in
      let request = Array("over TLS".utf8)
      var metadata: GRPCMetadata = ["x-request": "secure"]
      metadata.add("x-trace-bin", binary: [1, 2, 3])
      let response = try await fixture.channel.unary(
        path: Method.unary, request: request, options: CallOptions(metadata: metadata))
      #expect(response.message == request)
      #expect(response.headers.firstBinary("x-trace-bin") == [1, 2, 3])
      #expect(response.trailers.first("x-trailer") == "trailer-value")
      #expect(fixture.service.requestMetadata(of: Method.unary)?.first("x-request") == "secure")

      // A streaming call shares the TLS connection.
      var indexes: [Int] = []
      for try await message in fixture.channel.serverStreaming(
        path: Method.stream, request: StreamSpec(count: 20, size: 10_000).encoded)
      {
        indexes.append(StreamSpec.index(of: message) ?? -1)
      }
      #expect(indexes == Array(0..<20))
      #expect(await fixture.server.stats().connectionsAccepted == 1)
    }
  }

  struct BadTLSCase: Sendable, CustomTestStringConvertible {
    var description: String
    var trustOtherCA: Bool
    var serverNameOverride: String?
    var testDescription: String { description }
  }

  @Test(
    "TLS verification failures end UNAVAILABLE, bridged to NSError io.grpc 14",
    arguments: [
      BadTLSCase(description: "a CA that did not sign the certificate", trustOtherCA: true, serverNameOverride: nil),
      BadTLSCase(
        description: "a name the certificate does not hold", trustOtherCA: false, serverNameOverride: "wrong.example"),
    ])
  func verificationFailure(_ badCase: BadTLSCase) async throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    let tls = TLSConfiguration(
      trustRoots: .caFile(badCase.trustOtherCA ? certificates.otherCAFile : certificates.caFile),
      serverNameOverride: badCase.serverNameOverride)
    try await Fixture.with(
      server: GRPCServerConfiguration(tls: certificates.serverTLS),
      channel: GRPCChannelConfiguration(security: .tls(tls))
    ) { fixture in
      let error = try #require(await unaryError(fixture.channel, path: Method.unary, request: [1]))
      #expect(error.code == .unavailable)
      #expect(error.message.contains("certificate verification"), "message: \(error.message)")
      if case .certificateVerificationFailed? = error.cause as? ConnectionError {
      } else {
        Issue.record("cause: \(String(describing: error.cause))")
      }
      let bridged = error as NSError
      #expect(bridged.domain == "io.grpc")
      #expect(bridged.code == 14)
      // The service never saw a call.
      #expect(fixture.service.callsHandled == 0)
      #expect(await fixture.server.stats().callsStarted == 0)
    }
  }

  @Test("the default configuration is TLS verified against the system trust store, with no name override")
  func defaultsAreSafe() {
    #expect(GRPCChannelConfiguration().security == .tls(.default))
    #expect(TLSConfiguration.default.trustRoots == .systemDefault)
    #expect(TLSConfiguration.default.serverNameOverride == nil)
    #expect(TLSConfiguration.default == TLSConfiguration())
  }

  @Test("a channel left at its defaults refuses a self-signed certificate for the right name; trusting it works")
  func defaultConfigurationRefusesSelfSigned() async throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    // The certificate names localhost and 127.0.0.1, so only the missing trust can fail the call.
    try await Fixture.with(
      server: GRPCServerConfiguration(tls: certificates.selfSignedServerTLS),
      channel: GRPCChannelConfiguration()
    ) { fixture in
      let error = try #require(await unaryError(fixture.channel, path: Method.unary, request: [1]))
      #expect(error.code == .unavailable)
      #expect(error.message.contains("certificate verification failed"), "message: \(error.message)")
      #expect(error.message.contains("self-signed"), "message: \(error.message)")
      #expect(error.cause as? ConnectionError == .certificateVerificationFailed(reason: "self-signed certificate"))
      #expect(fixture.service.callsHandled == 0)
      #expect(await fixture.server.stats().callsStarted == 0)
    }
    try await Fixture.with(
      server: GRPCServerConfiguration(tls: certificates.selfSignedServerTLS),
      channel: GRPCChannelConfiguration(
        security: .tls(TLSConfiguration(trustRoots: .caFile(certificates.selfSignedCertificateFile))))
    ) { fixture in
      let response = try await fixture.channel.unary(path: Method.unary, request: [2])
      #expect(response.message == [2])
    }
  }

  @Test("choosing plaintext logs a notice when the channel is made, naming the target; TLS logs none")
  func plaintextIsLogged() throws {
    let capture = LogCapture()
    let plaintext = try GRPCChannel(
      host: "127.0.0.1", port: 1, configuration: GRPCChannelConfiguration(security: .plaintext),
      logger: capture.logger("plaintext"))
    plaintext.close()
    let notices = capture.all.filter { $0.label == "plaintext" && $0.level >= .notice }
    #expect(notices.count == 1, "\(capture.all)")
    #expect(notices.first?.message.contains("plaintext") == true, "\(notices)")
    #expect(notices.first?.metadata.contains("target=127.0.0.1:1") == true, "\(notices)")

    let tls = try GRPCChannel(
      host: "127.0.0.1", port: 1, configuration: GRPCChannelConfiguration(), logger: capture.logger("tls"))
    tls.close()
    #expect(capture.all.filter { $0.label == "tls" && $0.level >= .notice }.isEmpty, "\(capture.all)")
  }

  @Test("a CA file that does not exist is rejected when the channel is made")
  func missingCAFile() throws {
    let tls = TLSConfiguration(trustRoots: .caFile("/nonexistent/http2transport-tests/ca.pem"))
    do {
      _ = try GRPCChannel(host: "127.0.0.1", port: 1, configuration: GRPCChannelConfiguration(security: .tls(tls)))
      Issue.record("the channel was made")
    } catch {
      #expect(error.code == .invalidArgument)
    }
  }
}
