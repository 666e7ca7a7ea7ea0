// Sources/HTTP2Transport/GRPCTarget.swift - gRPC target names (naming.md) and resolved addresses
//
// A target says where a channel's servers are, in gRPC's name syntax (grpc/grpc doc/naming.md):
// `dns:///NAME:PORT` (or `dns:NAME:PORT`, or a bare `NAME:PORT`) for DNS, `ipv4:ADDR:PORT,…` and
// `ipv6:[ADDR]:PORT,…` for fixed lists. A port left out is 443, as gRPC's resolvers default to.

public import GRPCProtocol

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// One resolved server address: a numeric IP address (IPv4 or IPv6, no brackets) and a port.
public struct GRPCAddress: Sendable, Hashable, CustomStringConvertible {
  /// The numeric IP address, `127.0.0.2` or `::1`.
  public var host: String
  /// The TCP port.
  public var port: Int

  /// An address; `host` must be a numeric IPv4 or IPv6 address (a channel skips, and logs, one that is not).
  public init(host: String, port: Int) {
    self.host = host
    self.port = port
  }

  /// `127.0.0.2:50051` or `[::1]:50051`.
  public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

  /// Whether `host` is a numeric IPv4 address.
  var isIPv4: Bool {
    var storage = in_addr()
    return inet_pton(AF_INET, host, &storage) == 1
  }

  /// Whether `host` is a numeric IPv6 address.
  var isIPv6: Bool {
    var storage = in6_addr()
    return inet_pton(AF_INET6, host, &storage) == 1
  }
}

/// Where a channel's servers are, in gRPC's name syntax (grpc/grpc `doc/naming.md`).
///
/// | Target string | Meaning |
/// |---|---|
/// | `dns:///fleet.example:443`, `dns:fleet.example:443` | DNS: every A and AAAA address of the name |
/// | `fleet.example:443`, `fleet.example` | the same (no scheme means DNS) |
/// | `ipv4:127.0.0.2:50051,127.0.0.3:50051` | a fixed list of IPv4 addresses |
/// | `ipv6:[::1]:50051,[::1]:50052` | a fixed list of IPv6 addresses |
///
/// A port left out is 443. A DNS authority (`dns://8.8.8.8/name`), Unix sockets and other
/// schemes are refused with a clear error rather than ignored.
public struct GRPCTarget: Sendable, Hashable, CustomStringConvertible {
  /// How the target's addresses are found.
  public enum Kind: Sendable, Hashable {
    /// Resolved through DNS (getaddrinfo: A and AAAA records, `/etc/hosts`); numeric hosts as they are.
    case dns(host: String, port: Int)
    /// A fixed list of addresses (`ipv4:` and `ipv6:` targets).
    case addresses([GRPCAddress])
  }

  /// How the target's addresses are found.
  public var kind: Kind

  /// A DNS target.
  public static func dns(host: String, port: Int) -> GRPCTarget { GRPCTarget(kind: .dns(host: host, port: port)) }

  /// A fixed list of numeric addresses.
  public static func addresses(_ addresses: [GRPCAddress]) -> GRPCTarget {
    GRPCTarget(kind: .addresses(addresses))
  }

  /// A target of the given kind.
  public init(kind: Kind) {
    self.kind = kind
  }

  /// The port gRPC's resolvers use when a target names none.
  public static let defaultPort = 443

  /// Parses a target string in gRPC's name syntax (see the type's table).
  ///
  /// - Throws: ``GRPCError`` with code `INVALID_ARGUMENT` and a message that says what is wrong
  ///   (an empty name, a bad port, an address that is not numeric, an unsupported scheme).
  public init(parsing string: String) throws(GRPCError) {
    func invalid(_ reason: String) -> GRPCError {
      GRPCError(code: .invalidArgument, message: "invalid gRPC target \"\(string)\": \(reason)")
    }
    let lowered = string.lowercased()
    if lowered.hasPrefix("dns:") {
      var rest = Substring(string.dropFirst(4))
      if rest.hasPrefix("//") {
        rest = rest.dropFirst(2)
        guard let slash = rest.firstIndex(of: "/") else {
          throw invalid("expected dns:///NAME:PORT (a slash after the authority)")
        }
        guard rest[..<slash].isEmpty else {
          throw invalid("a DNS authority (a server to ask) is not supported; use dns:///NAME:PORT")
        }
        rest = rest[rest.index(after: slash)...]
      }
      let (host, port) = try Self.hostAndPort(rest, invalid: invalid)
      kind = .dns(host: host, port: port)
    } else if lowered.hasPrefix("ipv4:") || lowered.hasPrefix("ipv6:") {
      let ipv6 = lowered.hasPrefix("ipv6:")
      let list = string.dropFirst(5)
      guard !list.isEmpty else { throw invalid("no address after \(ipv6 ? "ipv6:" : "ipv4:")") }
      var addresses: [GRPCAddress] = []
      for entry in list.split(separator: ",", omittingEmptySubsequences: false) {
        guard !entry.isEmpty else { throw invalid("an empty address in the list") }
        let (host, port) = try Self.hostAndPort(entry, invalid: invalid)
        let address = GRPCAddress(host: host, port: port)
        if ipv6 {
          guard address.isIPv6 else { throw invalid("\"\(entry)\" is not a numeric IPv6 address") }
        } else {
          guard address.isIPv4 else { throw invalid("\"\(entry)\" is not a numeric IPv4 address") }
        }
        addresses.append(address)
      }
      kind = .addresses(addresses)
    } else if lowered.hasPrefix("unix:") || lowered.hasPrefix("unix-abstract:") || lowered.hasPrefix("vsock:") {
      throw invalid("the scheme is not supported (TCP only: dns, ipv4, ipv6)")
    } else if let schemeEnd = lowered.firstRange(of: "://") {
      throw invalid("unknown scheme \"\(lowered[..<schemeEnd.lowerBound])\" (supported: dns, ipv4, ipv6)")
    } else {
      let (host, port) = try Self.hostAndPort(Substring(string), invalid: invalid)
      kind = .dns(host: host, port: port)
    }
  }

  /// Splits `HOST`, `HOST:PORT`, `[V6]`, `[V6]:PORT` or a bare IPv6 address (no port then).
  private static func hostAndPort(
    _ text: Substring, invalid: (String) -> GRPCError
  ) throws(GRPCError) -> (String, Int) {
    guard !text.isEmpty else { throw invalid("no host") }
    var host: Substring
    var portText: Substring?
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]") else { throw invalid("an unclosed [ in \"\(text)\"") }
      host = text[text.index(after: text.startIndex)..<close]
      let after = text[text.index(after: close)...]
      if !after.isEmpty {
        guard after.hasPrefix(":") else { throw invalid("unexpected \"\(after)\" after \"]\"") }
        portText = after.dropFirst()
      }
    } else if text.filter({ $0 == ":" }).count > 1 {
      host = text  // A bare IPv6 address: no port (one needs brackets).
    } else if let colon = text.firstIndex(of: ":") {
      host = text[..<colon]
      portText = text[text.index(after: colon)...]
    } else {
      host = text
    }
    guard !host.isEmpty else { throw invalid("no host") }
    guard !host.contains(where: { $0 == "/" || $0 == " " || $0 == "," || $0 == "[" || $0 == "]" }) else {
      throw invalid("\"\(host)\" is not a host name or address")
    }
    var port = defaultPort
    if let portText {
      guard let value = Int(portText), (1...65535).contains(value), portText.allSatisfy(\.isASCII) else {
        throw invalid("\"\(portText)\" is not a port (1...65535)")
      }
      port = value
    }
    return (String(host), port)
  }

  /// The target in gRPC's syntax: `dns:///NAME:PORT`, `ipv4:…` or `ipv6:…`.
  public var description: String {
    switch kind {
    case .dns(let host, let port):
      return "dns:///\(GRPCAddress(host: host, port: port))"
    case .addresses(let addresses):
      let scheme = addresses.allSatisfy(\.isIPv6) && !addresses.isEmpty ? "ipv6" : "ipv4"
      return scheme + ":" + addresses.map(\.description).joined(separator: ",")
    }
  }

  /// `HOST:PORT` for a DNS target, the gRPC syntax for a list: what logs name the target by.
  var logDescription: String {
    if case .dns(let host, let port) = kind { return GRPCAddress(host: host, port: port).description }
    return description
  }

  /// The host calls name (`:authority`, the TLS server name) unless configured: the DNS name, or the
  /// first address of a list.
  var primaryHost: String {
    switch kind {
    case .dns(let host, _): host
    case .addresses(let addresses): addresses.first?.host ?? "localhost"
    }
  }

  /// The port of ``primaryHost``.
  var primaryPort: Int {
    switch kind {
    case .dns(_, let port): port
    case .addresses(let addresses): addresses.first?.port ?? Self.defaultPort
    }
  }

  /// The resolver the target implies: DNS, or a static list.
  public func makeResolver() -> any GRPCNameResolver {
    switch kind {
    case .dns(let host, let port): GRPCDNSResolver(host: host, port: port)
    case .addresses(let addresses): GRPCStaticResolver(addresses: addresses)
    }
  }
}
