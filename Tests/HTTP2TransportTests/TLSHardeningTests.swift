// Tests/HTTP2TransportTests/TLSHardeningTests.swift - no TLS 1.2 renegotiation, no passphrase prompt, no CN fallback
//
// The TLS engines run over memory: bytes are moved between a TLSEngine of this module and
// either another one or a raw OpenSSL peer configured to do what ours must refuse (a server
// that asks for renegotiation). Certificates are made in the test with the openssl CLI.

import COpenSSL
import Foundation
import GRPCProtocol
import HTTP2Transport
import TLSCrypto
import Testing

/// Runs the openssl CLI in `directory`.
private func openssl(_ arguments: [String], in directory: URL) throws {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
  process.arguments = ["openssl"] + arguments
  process.currentDirectoryURL = directory
  let output = Pipe()
  process.standardOutput = output
  process.standardError = output
  process.standardInput = FileHandle.nullDevice
  try process.run()
  let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  process.waitUntilExit()
  try #require(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " ")): \(text)")
}

/// A raw OpenSSL TLS 1.2 endpoint over memory BIOs, for the part of a peer our engine must refuse.
private final class RawTLSPeer {
  let context: OpaquePointer
  let ssl: OpaquePointer
  private let readBIO: OpaquePointer
  private let writeBIO: OpaquePointer

  init(server: Bool, certificate: String? = nil, key: String? = nil) throws {
    context = try #require(SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()))
    // TLS 1.2 at most: renegotiation does not exist in TLS 1.3.
    _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
    if server {
      js_SSL_CTX_select_alpn_h2(context)
    } else {
      _ = js_SSL_CTX_set_alpn_h2(context)
      SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)  // only the server side is under test then
    }
    if let certificate, let key {
      try #require(SSL_CTX_use_certificate_chain_file(context, certificate) == 1)
      try #require(SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1)
    }
    ssl = try #require(SSL_new(context))
    readBIO = try #require(BIO_new(BIO_s_mem()))
    writeBIO = try #require(BIO_new(BIO_s_mem()))
    SSL_set_bio(ssl, readBIO, writeBIO)
    if server { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
  }

  deinit {
    SSL_free(ssl)
    SSL_CTX_free(context)
  }

  func feed(_ bytes: [UInt8]) {
    guard !bytes.isEmpty else { return }
    _ = bytes.withUnsafeBytes { BIO_write(readBIO, $0.baseAddress, Int32($0.count)) }
  }

  func drain() -> [UInt8] {
    let pending = Int(js_BIO_pending(writeBIO))
    guard pending > 0 else { return [] }
    var bytes = [UInt8](repeating: 0, count: pending)
    let read = bytes.withUnsafeMutableBytes { BIO_read(writeBIO, $0.baseAddress, Int32(pending)) }
    return Array(bytes.prefix(max(0, Int(read))))
  }

  /// Drives the handshake and reads application data (discarding it); returns SSL_get_error's code.
  @discardableResult
  func step() -> Int32 {
    ERR_clear_error()
    if SSL_is_init_finished(ssl) == 0 || SSL_renegotiate_pending(ssl) != 0 {
      let rc = SSL_do_handshake(ssl)
      if rc != 1 { return SSL_get_error(ssl, rc) }
    }
    var scratch = [UInt8](repeating: 0, count: 4096)
    let n = scratch.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
    return n > 0 ? 0 : SSL_get_error(ssl, n)
  }
}

/// Moves bytes between our engine and a raw peer `rounds` times.
private func pump(_ engine: TLSEngine, _ peer: RawTLSPeer, rounds: Int = 20) {
  var scratch = [UInt8](repeating: 0, count: 16 << 10)
  for _ in 0..<rounds {
    _ = engine.handshake()
    if engine.isHandshakeComplete {
      _ = scratch.withUnsafeMutableBytes { buffer in engine.readPlaintext(scratch: buffer) { _ in } }
    }
    var out: [UInt8] = []
    engine.drainCiphertext(into: &out)
    peer.feed(out)
    peer.step()
    let back = peer.drain()
    back.withUnsafeBytes { engine.feed($0) }
  }
}

/// Moves bytes between two engines until both handshakes end; returns the client's outcome.
private func handshake(client: TLSEngine, server: TLSEngine) -> TLSEngine.HandshakeState {
  var clientState = client.handshake()
  for _ in 0..<20 {
    var toServer: [UInt8] = []
    client.drainCiphertext(into: &toServer)
    toServer.withUnsafeBytes { server.feed($0) }
    _ = server.handshake()
    var toClient: [UInt8] = []
    server.drainCiphertext(into: &toClient)
    toClient.withUnsafeBytes { client.feed($0) }
    clientState = client.handshake()
    if case .inProgress = clientState { continue }
    return clientState
  }
  return clientState
}

@Suite("TLS hardening", .timeLimit(.minutes(1)))
struct TLSHardeningTests {
  @Test("regression: a TLS 1.2 server's renegotiation request is refused by the client (RFC 9113 §9.2.1)")
  func clientRefusesRenegotiation() throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    let context = try TLSContext(client: TLSConfiguration(trustRoots: .caFile(certificates.caFile)))
    let client = try TLSEngine(context: context, serverName: "localhost")
    let server = try RawTLSPeer(
      server: true, certificate: certificates.serverCertificateFile, key: certificates.serverKeyFile)
    pump(client, server)
    try #require(client.isHandshakeComplete)
    try #require(SSL_version(server.ssl) == TLS1_2_VERSION)

    // The server asks for a new handshake (HelloRequest). A client that allowed it would answer
    // with a ClientHello and the renegotiation would complete, clearing the pending flag.
    try #require(SSL_renegotiate(server.ssl) == 1)
    pump(client, server)
    #expect(SSL_renegotiate_pending(server.ssl) == 1, "the client renegotiated")
  }

  @Test("a client's renegotiation is refused by the server side too")
  func serverRefusesRenegotiation() throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    let context = try TLSContext(server: certificates.serverTLS)
    let server = try TLSEngine(context: context, serverName: nil)
    let client = try RawTLSPeer(server: false)
    // The raw client speaks first: one step produces its ClientHello.
    client.step()
    client.drain().withUnsafeBytes { server.feed($0) }
    pump(server, client)
    try #require(server.isHandshakeComplete)
    try #require(SSL_renegotiate(client.ssl) == 1)
    pump(server, client)
    #expect(SSL_renegotiate_pending(client.ssl) == 1, "the server renegotiated")
  }

  @Test("regression: an encrypted private key fails with an error saying so, never a passphrase prompt")
  func encryptedKey() async throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    try openssl(
      ["pkey", "-in", "server.key", "-aes256", "-passout", "pass:secret", "-out", "server.enc.key"],
      in: certificates.directory)
    let encrypted = certificates.directory.appendingPathComponent("server.enc.key").path

    let serverError = #expect(throws: TLSError.self) {
      _ = try TLSContext(
        server: TLSServerConfiguration(
          certificateChainFile: certificates.serverCertificateFile, privateKeyFile: encrypted))
    }
    #expect(serverError?.description.contains("is encrypted") == true, "\(String(describing: serverError))")

    // A client certificate with an encrypted key: the channel refuses the configuration.
    let tls = TLSConfiguration(
      trustRoots: .caFile(certificates.caFile), certificateChainFile: certificates.serverCertificateFile,
      privateKeyFile: encrypted)
    let channelError = #expect(throws: GRPCError.self) {
      _ = try GRPCChannel(host: "127.0.0.1", port: 1, configuration: GRPCChannelConfiguration(security: .tls(tls)))
    }
    #expect(channelError?.code == .invalidArgument)
    #expect(channelError?.message.contains("is encrypted") == true, "\(String(describing: channelError))")
  }

  @Test("regression: a certificate without subjectAltName matches no name, not even its CN")
  func noCommonNameFallback() throws {
    let certificates = try TestCertificates()
    defer { certificates.remove() }
    // A certificate for CN=localhost with no subjectAltName, signed by the test CA.
    try openssl(
      [
        "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "cn.key",
        "-out", "cn.csr", "-subj", "/CN=localhost",
      ], in: certificates.directory)
    try Data("basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n".utf8)
      .write(to: certificates.directory.appendingPathComponent("cn.ext"))
    try openssl(
      [
        "x509", "-req", "-in", "cn.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "9", "-days", "2",
        "-out", "cn.pem", "-extfile", "cn.ext",
      ], in: certificates.directory)
    let cnOnly = TLSServerConfiguration(
      certificateChainFile: certificates.directory.appendingPathComponent("cn.pem").path,
      privateKeyFile: certificates.directory.appendingPathComponent("cn.key").path)

    let clientContext = try TLSContext(client: TLSConfiguration(trustRoots: .caFile(certificates.caFile)))
    let refused = handshake(
      client: try TLSEngine(context: clientContext, serverName: "localhost"),
      server: try TLSEngine(context: try TLSContext(server: cnOnly), serverName: nil))
    guard case .failed(.certificateVerificationFailed(let reason)) = refused else {
      Issue.record("the client accepted a certificate whose only name is its CN: \(refused)")
      return
    }
    #expect(reason.contains("hostname mismatch"), "\(reason)")

    // The control: the CA's certificate with subjectAltName DNS:localhost is accepted.
    let accepted = handshake(
      client: try TLSEngine(context: clientContext, serverName: "localhost"),
      server: try TLSEngine(context: try TLSContext(server: certificates.serverTLS), serverName: nil))
    guard case .complete = accepted else {
      Issue.record("the control handshake failed: \(accepted)")
      return
    }
  }
}
