// Sources/NATSClient/NATSCredentials.swift - who a connection is (credentials, TLS) and server URLs without secrets
//
// A NATS URL may carry credentials (`nats://user:password@host:4222`, `nats://token@host:4222`). libnats would
// keep them in the URL and hand that URL back (the server a connection is on), and the URL reaches log lines
// and error messages from there. So user information never reaches libnats inside a URL: ``NATSServerURL``
// parses it out into ``NATSCredentials`` and keeps only `scheme://host:port`, which is all that is ever
// printed. Credentials themselves have no description that shows them.

internal import CNATS

/// How a connection proves who it is to the server, as NATS' own tools allow.
///
/// Every case's `description` names the kind only (and a file's path), never a secret.
package enum NATSCredentials: Sendable, Hashable, CustomStringConvertible {
  /// No credentials.
  case none
  /// A user and password (`authorization { users = [{user, password}] }` on the server).
  case userPassword(user: String, password: String)
  /// A token (`authorization { token }`).
  case token(String)
  /// A `.creds` file, as `nsc` writes it: the user's JWT and its nkey seed (decentralized authentication).
  case credentialsFile(path: String)
  /// An nkey: its public key (`U…`) and the file holding its seed (`SU…`), which signs the server's nonce.
  case nkey(publicKey: String, seedFile: String)

  package var description: String {
    switch self {
    case .none: "none"
    case .userPassword(let user, _): "user \(user) with a password"
    case .token: "a token"
    case .credentialsFile(let path): "credentials file \(path)"
    case .nkey(let publicKey, _): "nkey \(publicKey)"
    }
  }

  /// Applies the credentials to libnats options; on a pool thread.
  func apply(to options: OpaquePointer) throws(NATSError) {
    switch self {
    case .none:
      return
    case .userPassword(let user, let password):
      try checkStatus(natsOptions_SetUserInfo(options, user, password), "connect: user and password")
    case .token(let token):
      try checkStatus(natsOptions_SetToken(options, token), "connect: token")
    case .credentialsFile(let path):
      try checkStatus(natsOptions_SetUserCredentialsFromFiles(options, path, nil), "connect: credentials file \(path)")
    case .nkey(let publicKey, let seedFile):
      try checkStatus(natsOptions_SetNKeyFromSeed(options, publicKey, seedFile), "connect: nkey seed file \(seedFile)")
    }
  }
}

/// TLS to the NATS servers: the CA that signs their certificates, and the client's own certificate for
/// servers that verify clients (`verify: true`). The servers' certificates and host names are always
/// verified.
package struct NATSTLSConfiguration: Sendable, Hashable {
  /// PEM CA certificates to trust instead of the system's.
  package var caFile: String?
  /// The client's PEM certificate chain (with ``keyFile``), for servers that verify clients.
  package var certificateFile: String?
  /// The client's PEM private key.
  package var keyFile: String?

  /// TLS with the given files; none of them is needed against a server whose certificate the system trusts.
  package init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) {
    self.caFile = caFile
    self.certificateFile = certificateFile
    self.keyFile = keyFile
  }

  /// Applies the settings to libnats options; on a pool thread.
  func apply(to options: OpaquePointer) throws(NATSError) {
    try checkStatus(natsOptions_SetSecure(options, true), "connect: TLS")
    if let caFile {
      try checkStatus(natsOptions_LoadCATrustedCertificates(options, caFile), "connect: TLS CA file \(caFile)")
    }
    switch (certificateFile, keyFile) {
    case (let certificate?, let key?):
      try checkStatus(
        natsOptions_LoadCertificatesChain(options, certificate, key), "connect: TLS certificate \(certificate)")
    case (nil, nil):
      break
    default:
      throw NATSError(
        code: .invalidArgument, message: "connect: a TLS client certificate needs both a certificate and a key file")
    }
  }
}

/// A NATS server URL without user information: `scheme://host:port`, safe to print.
package struct NATSServerURL: Sendable, Hashable, CustomStringConvertible {
  /// `nats` or `tls` (the server must speak TLS).
  package var scheme: String
  /// The host name or address (an IPv6 address without brackets).
  package var host: String
  /// The port (4222 when the URL has none).
  package var port: Int

  /// The URL, `scheme://host:port` (`[v6]:port` for IPv6).
  package var description: String {
    host.contains(":") ? "\(scheme)://[\(host)]:\(port)" : "\(scheme)://\(host):\(port)"
  }

  /// Parses `[scheme://][user[:password]@]host[:port]`. User information becomes credentials: a user and a
  /// password, or a token (a user without a password); percent-escapes in it are decoded.
  ///
  /// - Throws: ``NATSError`` (`invalidArgument`) for a malformed URL. The error never quotes user information.
  package static func parse(_ text: String) throws(NATSError) -> (url: NATSServerURL, credentials: NATSCredentials) {
    var rest = Substring(text.trimmingWhitespace())
    var scheme = "nats"
    if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
      scheme = rest[..<colon].lowercased()
      rest = rest[rest.index(colon, offsetBy: 3)...]
    }
    guard scheme == "nats" || scheme == "tls" else {
      throw NATSError(code: .invalidArgument, message: "NATS URL: unsupported scheme \(scheme.debugDescription)")
    }
    var credentials = NATSCredentials.none
    if let at = rest.lastIndex(of: "@") {
      let userInfo = rest[..<at]
      rest = rest[rest.index(after: at)...]
      if let colon = userInfo.firstIndex(of: ":") {
        credentials = .userPassword(
          user: try percentDecoded(userInfo[..<colon]),
          password: try percentDecoded(userInfo[userInfo.index(after: colon)...]))
      } else {
        credentials = .token(try percentDecoded(userInfo))
      }
    }
    if let slash = rest.firstIndex(of: "/") {
      guard rest[slash...].allSatisfy({ $0 == "/" }) else {
        throw NATSError(code: .invalidArgument, message: "NATS URL of host \(rest[..<slash]): a path is not allowed")
      }
      rest = rest[..<slash]
    }
    var host: Substring
    var portText: Substring?
    if rest.hasPrefix("[") {
      guard let close = rest.firstIndex(of: "]") else {
        throw NATSError(code: .invalidArgument, message: "NATS URL: unclosed [ in an IPv6 address")
      }
      host = rest[rest.index(after: rest.startIndex)..<close]
      let after = rest[rest.index(after: close)...]
      if after.hasPrefix(":") {
        portText = after.dropFirst()
      } else if !after.isEmpty {
        throw NATSError(code: .invalidArgument, message: "NATS URL: unexpected text after ]")
      }
    } else if let colon = rest.lastIndex(of: ":") {
      host = rest[..<colon]
      portText = rest[rest.index(after: colon)...]
    } else {
      host = rest
    }
    guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "@" || $0 == "[" || $0 == "]" }) else {
      throw NATSError(code: .addressMissing, message: "NATS URL: no host")
    }
    var port = 4222
    if let portText {
      guard let value = Int(portText), (1...65_535).contains(value) else {
        throw NATSError(code: .invalidArgument, message: "NATS URL of host \(host): invalid port")
      }
      port = value
    }
    return (NATSServerURL(scheme: scheme, host: String(host), port: port), credentials)
  }

  /// The URL of `description` with user information removed (for printing a URL known only as text); text
  /// that is no URL at all gives "(a malformed URL)".
  package static func redacted(_ text: String) -> String {
    (try? parse(text))?.url.description ?? "(a malformed URL)"
  }
}

extension NATSConnectionConfiguration {
  /// `urls` parsed (see ``NATSServerURL/parse(_:)``): the servers without user information, and the
  /// credentials found in them (one set for all: URLs carrying different credentials are refused).
  package static func servers(
    fromURLs urls: [String]
  ) throws(NATSError) -> (servers: [NATSServerURL], credentials: NATSCredentials) {
    var servers: [NATSServerURL] = []
    var credentials = NATSCredentials.none
    for text in urls {
      let (url, found) = try NATSServerURL.parse(text)
      servers.append(url)
      guard found != .none else { continue }
      if credentials != .none && credentials != found {
        throw NATSError(code: .invalidArgument, message: "NATS URLs: the servers' URLs carry different credentials")
      }
      credentials = found
    }
    return (servers, credentials)
  }
}

/// `text` with its percent-escapes decoded; a malformed escape or bytes that are not UTF-8 are refused
/// (without quoting the text, which is a secret).
private func percentDecoded(_ text: Substring) throws(NATSError) -> String {
  guard text.contains("%") else { return String(text) }
  var bytes: [UInt8] = []
  var iterator = text.utf8.makeIterator()
  while let byte = iterator.next() {
    guard byte == UInt8(ascii: "%") else {
      bytes.append(byte)
      continue
    }
    guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
      throw NATSError(code: .invalidArgument, message: "NATS URL: malformed percent-escape in the user information")
    }
    bytes.append(high << 4 | low)
  }
  guard let decoded = String(validating: bytes, as: UTF8.self) else {
    throw NATSError(code: .invalidArgument, message: "NATS URL: the user information is not UTF-8")
  }
  return decoded
}

private func hexValue(_ byte: UInt8) -> UInt8? {
  switch byte {
  case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
  case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
  case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
  default: nil
  }
}

extension String {
  fileprivate func trimmingWhitespace() -> Substring {
    let start = firstIndex { !$0.isWhitespace } ?? endIndex
    let end = lastIndex { !$0.isWhitespace }.map { index(after: $0) } ?? start
    return self[start..<max(start, end)]
  }
}
