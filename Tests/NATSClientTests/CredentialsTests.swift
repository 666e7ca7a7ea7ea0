// Tests/NATSClientTests/CredentialsTests.swift - who a connection is: users, tokens, nkeys, .creds files, TLS
//
// Against real nats-server processes configured for each kind of authentication; and the rule that no
// secret (a password, a token, URL user information) reaches an error or a log line, at trace level.

import Foundation
import JSONWebToken
import NATSClient
import NATSTestSupport
import TestSupport
import Testing

extension NATSClientTests {
  @Suite("Credentials and TLS")
  struct CredentialsTests {
    private static let password = "s3cret-Passw0rd-never-logged"
    private static let token = "t0ken-never-logged-abcdef"

    @Test("URLs: user information becomes credentials, and no printed form of a URL carries it")
    func urls() throws {
      let (url, credentials) = try NATSServerURL.parse("nats://relay:p%40ss@nats.example.com:4223")
      #expect(url.description == "nats://nats.example.com:4223")
      #expect(credentials == .userPassword(user: "relay", password: "p@ss"))
      #expect("\(credentials)" == "user relay with a password")
      let (tokenURL, tokenCredentials) = try NATSServerURL.parse("tls://\(Self.token)@[::1]")
      #expect(tokenURL.description == "tls://[::1]:4222" && tokenCredentials == .token(Self.token))
      #expect(!"\(tokenCredentials)".contains(Self.token))
      #expect(NATSServerURL.redacted("nats://a:\(Self.password)@h:1") == "nats://h:1")
      #expect(NATSServerURL.redacted("garbage ://") == "(a malformed URL)")
      #expect(throws: NATSError.self) { try NATSServerURL.parse("http://h:1") }
      #expect(throws: NATSError.self) { try NATSServerURL.parse("nats://h:99999") }
      do {
        _ = try NATSServerURL.parse("nats://u:%zz@h")
        Issue.record("a malformed escape was accepted")
      } catch {
        #expect(!error.message.contains("%zz"))
      }
      var configuration = NATSConnectionConfiguration(servers: ["nats://a:b@h:1", "nats://c:d@h:2"])
      #expect(configuration.redactedServers == ["nats://h:1", "nats://h:2"])
      configuration.servers = ["nats://a:b@h:1"]
      configuration.credentials = .token("x")
      #expect(throws: NATSError.self) {
        try NATSConnectionConfiguration.servers(fromURLs: ["nats://a:b@h", "nats://c:d@h"])
      }
    }

    @Test("user and password, from the URL or the options; a wrong one fails; neither shows in errors or logs")
    func userPassword() async throws {
      let config = """
        authorization { users = [ { user: relay, password: "\(Self.password)" } ] }
        """
      try await withNATSServer(configText: config) { server in
        let capture = LogCapture()
        let port = server.server.configuration.port
        let fromURL = try await connect(
          ["nats://relay:\(Self.password)@127.0.0.1:\(port)"], logger: testLogger(capture))
        try await fromURL.flush()
        #expect(await fromURL.connectedServer() == "nats://127.0.0.1:\(port)")
        await fromURL.close()
        let fromOptions = try await connect([server.url], logger: testLogger(capture)) {
          $0.credentials = .userPassword(user: "relay", password: Self.password)
        }
        try await fromOptions.flush()
        await fromOptions.close()
        var refused: (any Error)?
        do {
          _ = try await connect(["nats://relay:wrong-\(Self.password)@127.0.0.1:\(port)"], logger: testLogger(capture))
          {
            $0.reconnect = .disabled
          }
        } catch {
          refused = error
        }
        #expect(refused != nil)
        #expect(refused.map { !"\($0)".contains(Self.password) && !"\($0)".contains("relay:") } == true)
        let logged = capture.all.map(\.description).joined(separator: "\n")
        #expect(!capture.all.isEmpty)
        #expect(!logged.contains(Self.password), "a log line holds the password")
      }
    }

    @Test("a token, and an nkey from its seed file")
    func tokenAndNKey() async throws {
      try await withNATSServer(configText: "authorization { token: \"\(Self.token)\" }") { server in
        let connection = try await connect([server.url]) { $0.credentials = .token(Self.token) }
        try await connection.flush()
        await connection.close()
      }
      let user = try NKey.generate(role: .user)
      let directory = try makeTemporaryDirectory(prefix: "nkey")
      defer { removeDirectory(directory) }
      let seedFile = "\(directory)/user.nk"
      try user.seedText.write(toFile: seedFile, atomically: true, encoding: .utf8)
      let config = "authorization { users = [ { nkey: \(user.publicKey) } ] }"
      try await withNATSServer(configText: config) { server in
        let publicKey = try NKey(seed: user.seedText).publicKey
        #expect(publicKey == user.publicKey)
        let connection = try await connect([server.url]) {
          $0.credentials = .nkey(publicKey: publicKey, seedFile: seedFile)
        }
        try await connection.flush()
        await connection.close()
        let other = try NKey.generate(role: .user)
        let otherSeed = "\(directory)/other.nk"
        try other.seedText.write(toFile: otherSeed, atomically: true, encoding: .utf8)
        await #expect(throws: NATSError.self) {
          _ = try await connect([server.url]) {
            $0.reconnect = .disabled
            $0.credentials = .nkey(publicKey: other.publicKey, seedFile: otherSeed)
          }
        }
      }
    }

    @Test("a .creds file (decentralized authentication: operator, account, user JWT), with JetStream")
    func credentialsFile() async throws {
      let setup = try NATSOperatorSetup()
      defer { setup.remove() }
      let creds = try setup.credentials(user: "relay")
      try await withNATSServer(configText: setup.serverConfig) { server in
        let connection = try await connect([server.url]) { $0.credentials = .credentialsFile(path: creds) }
        let jetStream = try connection.jetStream()
        _ = try await jetStream.createOrUpdateStream(
          JetStream.StreamConfiguration(name: "CREDS", subjects: ["creds.>"]))
        let ack = try await jetStream.publish(subject: "creds.one", data: [1, 2, 3])
        #expect(ack.sequence == 1)
        await connection.close()
        await #expect(throws: NATSError.self) {
          _ = try await connect([server.url]) { $0.reconnect = .disabled }
        }
      }
    }

    @Test("TLS: the server's CA trusted, a client certificate where the server verifies clients; without it, refused")
    func tls() async throws {
      let pki = try TestPKI()
      defer { pki.remove() }
      let config = """
        tls {
          cert_file: "\(pki.serverCertificateFile)"
          key_file: "\(pki.serverKeyFile)"
          ca_file: "\(pki.caFile)"
          verify: true
          timeout: 2
        }
        """
      try await withNATSServer(configText: config) { server in
        let url = "tls://127.0.0.1:\(server.server.configuration.port)"
        let connection = try await connect([url]) {
          $0.tls = NATSTLSConfiguration(
            caFile: pki.caFile, certificateFile: pki.clientCertificateFile, keyFile: pki.clientKeyFile)
        }
        try await connection.flush()
        await connection.close()
        await #expect(throws: NATSError.self) {
          _ = try await connect([url]) {
            $0.reconnect = .disabled
            $0.tls = NATSTLSConfiguration(caFile: pki.caFile)
          }
        }
        // A server certificate nobody it trusts signed: refused.
        await #expect(throws: NATSError.self) {
          _ = try await connect([url]) {
            $0.reconnect = .disabled
            $0.tls = NATSTLSConfiguration(certificateFile: pki.clientCertificateFile, keyFile: pki.clientKeyFile)
          }
        }
      }
    }
  }
}
