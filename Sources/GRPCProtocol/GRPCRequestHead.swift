// Sources/GRPCProtocol/GRPCRequestHead.swift - the HEADERS block that starts a call
//
// Order matters (PROTOCOL-HTTP2.md): pseudo-headers first, then `grpc-timeout`,
// then the other call-definition headers, then custom metadata. Some servers
// and proxies are strict about it, so the order is fixed here, once.

import Primitives

/// Everything needed to build a call's request headers.
public struct GRPCRequestHead: Sendable {
  /// The method path, `/<package.Service>/<Method>`, case-sensitive.
  public var path: String
  /// The `:authority`: `host:port` of the target, or the TLS override name.
  public var authority: String
  /// `"https"` over TLS, `"http"` over cleartext h2c.
  public var scheme: String
  /// The time left until the call's deadline, sent as `grpc-timeout`; `nil` for no deadline.
  public var timeout: Duration?
  /// Custom metadata, sent after the call-definition headers.
  public var metadata: GRPCMetadata
  /// The `user-agent` value.
  public var userAgent: String
  /// The encoding of the request's compressed messages, sent as `grpc-encoding`; `nil` or
  /// identity sends none (every message then goes uncompressed).
  public var encoding: GRPCCompressionAlgorithm?
  /// The encodings the client can decompress, sent as `grpc-accept-encoding` (identity
  /// first); `nil` sends no such header.
  public var acceptEncodings: [GRPCCompressionAlgorithm]?

  /// The default `user-agent`, in the `<library>/<version>` form gRPC recommends.
  public static let defaultUserAgent = "journeysharing-grpc/0.1"

  /// Creates a request head.
  public init(
    path: String,
    authority: String,
    scheme: String,
    timeout: Duration? = nil,
    metadata: GRPCMetadata = [:],
    userAgent: String = GRPCRequestHead.defaultUserAgent,
    encoding: GRPCCompressionAlgorithm? = nil,
    acceptEncodings: [GRPCCompressionAlgorithm]? = nil
  ) {
    self.path = path
    self.authority = authority
    self.scheme = scheme
    self.timeout = timeout
    self.metadata = metadata
    self.userAgent = userAgent
    self.encoding = encoding
    self.acceptEncodings = acceptEncodings
  }

  /// The request's header fields, in wire order:
  /// `:method POST`, `:scheme`, `:path`, `:authority`, `grpc-timeout` (when there
  /// is a timeout), `content-type: application/grpc`, `grpc-encoding` (when the
  /// requests are compressed), `grpc-accept-encoding` (when set), `te: trailers`,
  /// `user-agent`, then the custom metadata.
  ///
  /// Metadata entries an application must not set are left out rather than sent:
  /// reserved names (``GRPCMetadata/isReserved(_:)``, e.g. `te` or `grpc-*`),
  /// invalid names, and string values outside printable ASCII. Sending them would
  /// let metadata override the protocol's own headers or break the request at
  /// the server, so dropping them is the safe reading of "must not set".
  public func headerFields() -> [(name: String, value: String)] {
    var fields: [(name: String, value: String)] = []
    fields.reserveCapacity(10 + metadata.count)
    fields.append((":method", "POST"))
    fields.append((":scheme", scheme))
    fields.append((":path", path))
    fields.append((":authority", authority))
    if let timeout {
      fields.append(("grpc-timeout", GRPCTimeout.headerValue(for: timeout)))
    }
    fields.append(("content-type", "application/grpc"))
    if let encoding, encoding != .identity {
      fields.append(("grpc-encoding", encoding.name))
    }
    if let acceptEncodings {
      fields.append(("grpc-accept-encoding", GRPCCompressionAlgorithm.acceptEncodingHeader(acceptEncodings)))
    }
    fields.append(("te", "trailers"))
    fields.append(("user-agent", userAgent))
    for (name, value) in metadata {
      guard GRPCMetadata.isValidName(name), !GRPCMetadata.isReserved(name) else { continue }
      switch value {
      case .string(let text):
        guard GRPCMetadata.isValidASCIIValue(text) else { continue }
        fields.append((name, text))
      case .binary(let bytes):
        fields.append((name, Base64.encode(bytes, padded: false)))
      }
    }
    return fields
  }

  /// Whether `path` is a well-formed method path: `/`, a non-empty service name,
  /// `/`, a non-empty method name, and nothing more. Both names consist of
  /// visible ASCII (0x21–0x7E) other than `/`, `?` and `#`, which would change
  /// how the path is read as a URL.
  public static func isValidMethodPath(_ path: String) -> Bool {
    let bytes = path.utf8
    guard bytes.first == UInt8(ascii: "/") else { return false }
    var segments = 0
    var segmentLength = 0
    for byte in bytes.dropFirst() {
      if byte == UInt8(ascii: "/") {
        guard segmentLength > 0 else { return false }
        segments += 1
        segmentLength = 0
        continue
      }
      guard byte >= 0x21, byte <= 0x7E, byte != UInt8(ascii: "?"), byte != UInt8(ascii: "#") else { return false }
      segmentLength += 1
    }
    return segments == 1 && segmentLength > 0
  }
}
