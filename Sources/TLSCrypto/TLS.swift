// Sources/TLSCrypto/TLS.swift - TLS through OpenSSL, over memory BIOs
//
// The TLS engine never touches the socket: ciphertext read from the socket is
// fed in, plaintext comes out; plaintext written goes in, ciphertext to send
// comes out. That keeps OpenSSL on the event loop's own I/O path (HTTP2Transport's
// ByteStream), so one `read` and one `write` per loop turn serve TLS and cleartext
// alike. How a session failed is a `TLSFailure`; the transport turns it into its
// own connection error.

import COpenSSL
import Primitives

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// How a client verifies and presents itself over TLS.
///
/// The defaults are the safe ones: the server's certificate chain is verified
/// against the system trust store, its name is checked against the target host
/// (or ``serverNameOverride``) in the certificate's subjectAltName only (a
/// certificate without one matches no name: no fallback to the subject's CN),
/// SNI is sent, TLS 1.2 is the minimum, renegotiation is refused (RFC 9113
/// §9.2.1) and ALPN must agree on `h2`. There is no switch to turn verification off.
/// Private keys must be unencrypted PEM: an encrypted one fails to load with an
/// error saying so, rather than prompting for a passphrase.
public struct TLSConfiguration: Sendable, Hashable {
  /// Where trusted root certificates come from.
  public enum TrustRoots: Sendable, Hashable {
    /// The system trust store (OpenSSL's default paths).
    case systemDefault
    /// The PEM certificates in this file only (for example a test CA).
    case caFile(String)
  }

  /// The roots the server's chain must lead to. Default: the system store.
  public var trustRoots: TrustRoots
  /// A PEM certificate chain to present to the server (mutual TLS).
  public var certificateChainFile: String?
  /// The PEM private key for ``certificateChainFile``.
  public var privateKeyFile: String?
  /// The name sent as SNI and checked against the server's certificate, instead of
  /// the target's host (also used as the `:authority` unless a call overrides it).
  public var serverNameOverride: String?

  /// Verification against `trustRoots`, no client certificate, no override.
  public init(
    trustRoots: TrustRoots = .systemDefault,
    certificateChainFile: String? = nil,
    privateKeyFile: String? = nil,
    serverNameOverride: String? = nil
  ) {
    self.trustRoots = trustRoots
    self.certificateChainFile = certificateChainFile
    self.privateKeyFile = privateKeyFile
    self.serverNameOverride = serverNameOverride
  }

  /// The safe default: system trust store, hostname verification, ALPN h2.
  public static let `default` = TLSConfiguration()
}

/// How a server presents itself over TLS.
public struct TLSServerConfiguration: Sendable, Hashable {
  /// The server's PEM certificate chain.
  public var certificateChainFile: String
  /// The server's PEM private key.
  public var privateKeyFile: String
  /// When set, clients must present a certificate signed by a CA in this PEM file.
  public var clientCAFile: String?

  /// A server identity from PEM files.
  public init(certificateChainFile: String, privateKeyFile: String, clientCAFile: String? = nil) {
    self.certificateChainFile = certificateChainFile
    self.privateKeyFile = privateKeyFile
    self.clientCAFile = clientCAFile
  }
}

/// A TLS setup failure or a failed handshake, with OpenSSL's reason.
package struct TLSError: Error, Sendable, CustomStringConvertible {
  package var description: String
  package init(_ description: String) { self.description = description }

  /// The message with the most recent OpenSSL errors appended (the queue is emptied).
  package static func openSSL(_ what: String) -> TLSError {
    let reasons = openSSLReasons()
    return TLSError(reasons.isEmpty ? what : "\(what): \(reasons)")
  }

  /// The most recent OpenSSL errors, joined with "; ", and the queue emptied; empty when there are none.
  package static func openSSLReasons() -> String {
    var reasons: [String] = []
    while true {
      let code = ERR_get_error()
      if code == 0 { break }
      var buffer = [CChar](repeating: 0, count: 256)
      ERR_error_string_n(code, &buffer, buffer.count)
      // Safe: ERR_error_string_n always NUL-terminates within the buffer's length.
      reasons.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
    }
    return reasons.joined(separator: "; ")
  }
}

/// An OpenSSL `SSL_CTX` configured for one role.
///
/// `@unchecked Sendable`: the context is fully configured in `init` and only read
/// afterwards (OpenSSL's SSL_CTX is safe to share between threads once set up).
package final class TLSContext: @unchecked Sendable {
  let context: OpaquePointer
  package let isServer: Bool

  /// A client context from `configuration`.
  package init(client configuration: TLSConfiguration) throws(TLSError) {
    guard let context = SSL_CTX_new(TLS_client_method()) else { throw TLSError.openSSL("SSL_CTX_new") }
    self.context = context
    self.isServer = false
    Self.applyCommonSettings(context)
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
    switch configuration.trustRoots {
    case .systemDefault:
      guard SSL_CTX_set_default_verify_paths(context) == 1 else {
        throw TLSError.openSSL("loading the system trust store")
      }
    case .caFile(let path):
      try Self.checkFile(path, what: "CA file", maxBytes: CredentialFile.caBundleMaxBytes)
      guard SSL_CTX_load_verify_locations(context, path, nil) == 1 else {
        throw TLSError.openSSL("loading CA file \(path)")
      }
    }
    if let chain = configuration.certificateChainFile {
      guard let key = configuration.privateKeyFile else {
        throw TLSError("a client certificate needs its private key file")
      }
      try Self.loadIdentity(context, chain: chain, key: key)
    }
    guard js_SSL_CTX_set_alpn_h2(context) == 0 else { throw TLSError.openSSL("setting ALPN") }
  }

  /// A server context from `configuration`.
  package init(server configuration: TLSServerConfiguration) throws(TLSError) {
    guard let context = SSL_CTX_new(TLS_server_method()) else { throw TLSError.openSSL("SSL_CTX_new") }
    self.context = context
    self.isServer = true
    Self.applyCommonSettings(context)
    try Self.loadIdentity(context, chain: configuration.certificateChainFile, key: configuration.privateKeyFile)
    if let clientCA = configuration.clientCAFile {
      try Self.checkFile(clientCA, what: "client CA file", maxBytes: CredentialFile.caBundleMaxBytes)
      guard SSL_CTX_load_verify_locations(context, clientCA, nil) == 1 else {
        throw TLSError.openSSL("loading client CA file \(clientCA)")
      }
      SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
    }
    js_SSL_CTX_select_alpn_h2(context)
  }

  /// What both roles share: TLS 1.2 at least, no renegotiation (RFC 9113 §9.2.1: HTTP/2 over
  /// TLS 1.2 must not renegotiate, and a peer's attempt ends the connection), and a PEM
  /// password callback that fails, so an encrypted key never makes OpenSSL prompt on a terminal.
  private static func applyCommonSettings(_ context: OpaquePointer) {
    _ = js_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)
    js_SSL_CTX_disable_renegotiation(context)
    js_SSL_CTX_refuse_passwords(context)
  }

  /// OpenSSL opens the files itself: first make sure each is a regular file of a sane size (``CredentialFile``),
  /// so that a FIFO or a device cannot hang or swell the process.
  private static func checkFile(_ path: String, what: String, maxBytes: Int) throws(TLSError) {
    do {
      try CredentialFile.check(path, what: what, maxBytes: maxBytes)
    } catch {
      throw TLSError(error.description)
    }
  }

  private static func loadIdentity(_ context: OpaquePointer, chain: String, key: String) throws(TLSError) {
    try checkFile(chain, what: "certificate chain", maxBytes: CredentialFile.caBundleMaxBytes)
    try checkFile(key, what: "private key", maxBytes: CredentialFile.defaultMaxBytes)
    guard SSL_CTX_use_certificate_chain_file(context, chain) == 1 else {
      throw TLSError.openSSL("loading certificate chain \(chain)")
    }
    guard SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1 else {
      if isEncryptedPEM(key) {
        ERR_clear_error()
        throw TLSError(
          "the private key \(key) is encrypted; passphrase-protected keys are not supported (decrypt it, "
            + "for example with `openssl pkey -in KEY -out PLAIN`)")
      }
      throw TLSError.openSSL("loading private key \(key)")
    }
    guard SSL_CTX_check_private_key(context) == 1 else {
      throw TLSError.openSSL("the private key does not match the certificate")
    }
  }

  deinit { SSL_CTX_free(context) }

  /// Whether the PEM file at `path` holds an encrypted key (PKCS#8 `ENCRYPTED PRIVATE KEY`, or a
  /// traditional key with `Proc-Type: 4,ENCRYPTED`); reads its first 64 KiB.
  private static func isEncryptedPEM(_ path: String) -> Bool {
    guard let file = fopen(path, "r") else { return false }
    defer { fclose(file) }
    var bytes = [UInt8](repeating: 0, count: 64 << 10)
    let count = fread(&bytes, 1, bytes.count, file)
    let text = String(decoding: bytes[0..<count], as: UTF8.self)
    return text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED")
  }
}

/// How a TLS session failed, with OpenSSL's reason where there is one.
package enum TLSFailure: Error, Sendable, Hashable {
  /// The handshake failed, with OpenSSL's reason (or what ended it).
  case handshakeFailed(reason: String)
  /// The handshake failed because the server's first bytes are not a TLS record: it does not speak TLS.
  case serverNotTLS(reason: String)
  /// The server's certificate chain or name did not verify.
  case certificateVerificationFailed(reason: String)
  /// The handshake completed but ALPN did not agree on `h2`; `selected` is what the server chose, if anything.
  case alpnNotNegotiated(selected: String?)
  /// A record failed after the handshake (`operation` is `read` or `write`).
  case recordFailed(operation: String, reason: String)
}

/// One TLS session over memory BIOs. Confined to one event loop.
package final class TLSEngine {
  private let ssl: OpaquePointer
  private let readBIO: OpaquePointer  // ciphertext in
  private let writeBIO: OpaquePointer  // ciphertext out
  private let context: TLSContext  // keeps the SSL_CTX alive
  /// Whether the handshake has completed.
  package private(set) var isHandshakeComplete = false
  /// The first two bytes the peer sent, kept on the client side to tell a server that does not
  /// speak TLS (its answer is not a TLS record) from a TLS handshake that failed.
  private var peerFirstBytes: [UInt8] = []

  /// A client session that sends `serverName` as SNI (unless it is an IP address)
  /// and verifies the certificate against it; or a server session.
  package init(context: TLSContext, serverName: String?) throws(TLSError) {
    guard let ssl = SSL_new(context.context) else { throw TLSError.openSSL("SSL_new") }
    guard let readBIO = BIO_new(BIO_s_mem()), let writeBIO = BIO_new(BIO_s_mem()) else {
      SSL_free(ssl)
      throw TLSError.openSSL("BIO_new")
    }
    self.ssl = ssl
    self.readBIO = readBIO
    self.writeBIO = writeBIO
    self.context = context
    // SSL_set_bio hands both BIOs to the SSL object, which frees them with itself.
    SSL_set_bio(ssl, readBIO, writeBIO)
    if context.isServer {
      SSL_set_accept_state(ssl)
    } else {
      SSL_set_connect_state(ssl)
      if let serverName {
        if Self.isIPAddress(serverName) {
          // RFC 6066 forbids IP literals in SNI; verify the IP SAN instead.
          guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) == 1 else {
            throw TLSError.openSSL("setting the IP address to verify")
          }
        } else {
          guard js_SSL_set_tlsext_host_name(ssl, serverName) == 1 else { throw TLSError.openSSL("setting SNI") }
          // The name must be in the subjectAltName: a certificate without DNS names matches
          // nothing, rather than OpenSSL's fallback to the subject's common name (RFC 6125 §6.4.4
          // allows the fallback; current practice, and browsers, do not).
          SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NEVER_CHECK_SUBJECT))
          guard SSL_set1_host(ssl, serverName) == 1 else { throw TLSError.openSSL("setting the name to verify") }
        }
      }
    }
  }

  deinit { SSL_free(ssl) }

  static func isIPAddress(_ host: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
  }

  /// Hands ciphertext received from the socket to OpenSSL.
  package func feed(_ ciphertext: UnsafeRawBufferPointer) {
    guard let base = ciphertext.baseAddress, ciphertext.count > 0 else { return }
    if !context.isServer, peerFirstBytes.count < 2 {
      peerFirstBytes += ciphertext.prefix(2 - peerFirstBytes.count)
    }
    // A memory BIO grows as needed, so the write always takes everything.
    _ = BIO_write(readBIO, base, Int32(ciphertext.count))
  }

  /// The outcome of driving the handshake.
  package enum HandshakeState {
    case complete
    case inProgress
    case failed(TLSFailure)
  }

  /// Whether what the peer sent so far can begin a TLS record: a content type from 20
  /// (change_cipher_spec) to 24 (heartbeat), then major version 3. Nothing received yet proves nothing.
  private var peerBytesCanBeTLS: Bool {
    guard let type = peerFirstBytes.first else { return true }
    guard (20...24).contains(type) else { return false }
    return peerFirstBytes.count < 2 || peerFirstBytes[1] == 3
  }

  /// The error for a handshake the peer ended by closing the connection.
  package func handshakeClosedByPeer() -> TLSFailure {
    let reason = "connection closed by peer"
    return peerBytesCanBeTLS ? .handshakeFailed(reason: reason) : .serverNotTLS(reason: reason)
  }

  /// Advances the handshake with whatever ciphertext has been fed.
  package func handshake() -> HandshakeState {
    if isHandshakeComplete { return .complete }
    ERR_clear_error()
    let rc = SSL_do_handshake(ssl)
    if rc == 1 {
      isHandshakeComplete = true
      if !context.isServer {
        // ALPN must have agreed on h2: gRPC runs on HTTP/2 only.
        var protocolName: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &protocolName, &length)
        guard length == 2, let protocolName, protocolName[0] == UInt8(ascii: "h"), protocolName[1] == UInt8(ascii: "2")
        else {
          // Safe: OpenSSL points at `length` bytes of the selected protocol (or nil when none was).
          let selected = protocolName.map {
            String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self)
          }
          return .failed(.alpnNotNegotiated(selected: length == 0 ? nil : selected))
        }
      }
      return .complete
    }
    let error = SSL_get_error(ssl, rc)
    if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return .inProgress }
    if !peerBytesCanBeTLS { return .failed(.serverNotTLS(reason: TLSError.openSSLReasons())) }
    let verify = SSL_get_verify_result(ssl)
    if verify != X509_V_OK {
      ERR_clear_error()
      // Safe: X509_verify_cert_error_string returns a static NUL-terminated string for any code.
      let reason = String(cString: X509_verify_cert_error_string(verify))
      return .failed(.certificateVerificationFailed(reason: reason))
    }
    return .failed(.handshakeFailed(reason: TLSError.openSSLReasons()))
  }

  /// The outcome of reading plaintext.
  package enum ReadResult {
    /// All available plaintext was delivered; more needs more ciphertext.
    case needMoreInput
    /// The peer sent close_notify.
    case closed
    case failed(TLSFailure)
  }

  /// Decrypts what has been fed and hands plaintext to `body` in chunks of up to `scratch.count` bytes.
  package func readPlaintext(
    scratch: UnsafeMutableRawBufferPointer,
    _ body: (UnsafeRawBufferPointer) -> Void
  ) -> ReadResult {
    while true {
      ERR_clear_error()
      let n = SSL_read(ssl, scratch.baseAddress, Int32(scratch.count))
      if n > 0 {
        body(UnsafeRawBufferPointer(rebasing: scratch[0..<Int(n)]))
        continue
      }
      let error = SSL_get_error(ssl, n)
      switch error {
      case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .needMoreInput
      case SSL_ERROR_ZERO_RETURN: return .closed
      default: return .failed(.recordFailed(operation: "read", reason: TLSError.openSSLReasons()))
      }
    }
  }

  /// Encrypts `plaintext`; the ciphertext is then available from ``drainCiphertext(into:)``.
  package func write(_ plaintext: UnsafeRawBufferPointer) -> TLSFailure? {
    var offset = 0
    while offset < plaintext.count {
      ERR_clear_error()
      let n = SSL_write(ssl, plaintext.baseAddress! + offset, Int32(min(plaintext.count - offset, 1 << 30)))
      guard n > 0 else { return .recordFailed(operation: "write", reason: TLSError.openSSLReasons()) }
      offset += Int(n)
    }
    return nil
  }

  /// Queues a close_notify alert.
  package func shutdown() {
    ERR_clear_error()
    _ = SSL_shutdown(ssl)
  }

  /// Appends pending ciphertext to `buffer`; returns how many bytes were appended.
  @discardableResult
  package func drainCiphertext(into buffer: inout [UInt8]) -> Int {
    let pending = Int(js_BIO_pending(writeBIO))
    guard pending > 0 else { return 0 }
    let start = buffer.count
    buffer.append(contentsOf: repeatElement(0, count: pending))
    let read = buffer.withUnsafeMutableBytes { raw in
      BIO_read(writeBIO, raw.baseAddress! + start, Int32(pending))
    }
    let got = max(0, Int(read))
    buffer.removeLast(pending - got)
    return got
  }
}
