// Sources/GRPCProtocol/GRPCStatusMapping.swift - statuses for responses that carry no grpc-status
//
// A call whose response has no `grpc-status` still needs a status: a proxy
// answered instead of the server, or the stream was reset. These tables come
// from http-grpc-status-mapping.md and PROTOCOL-HTTP2.md's Errors section. They
// apply only when `grpc-status` is absent; when it is present it always wins.

/// Mappings from HTTP and HTTP/2 conditions to gRPC status codes.
public enum GRPCStatusMapping {
  /// The status for an HTTP response without `grpc-status`, from its `:status`.
  ///
  /// | HTTP | gRPC |
  /// |---|---|
  /// | 400, 431 | INTERNAL |
  /// | 401 | UNAUTHENTICATED |
  /// | 403 | PERMISSION_DENIED |
  /// | 404 | UNIMPLEMENTED |
  /// | 429, 502, 503, 504 | UNAVAILABLE |
  /// | 1xx | INTERNAL (informational blocks are skipped; one that ends the stream is a protocol error) |
  /// | anything else, 200 included | UNKNOWN |
  public static func code(forHTTPStatus status: Int) -> GRPCStatusCode {
    switch status {
    case 100...199: .internalError
    case 400, 431: .internalError
    case 401: .unauthenticated
    case 403: .permissionDenied
    case 404: .unimplemented
    case 429, 502, 503, 504: .unavailable
    default: .unknown
    }
  }

  /// The status for a stream that closed with HTTP/2 error `code` before any
  /// `grpc-status` arrived (PROTOCOL-HTTP2.md, Errors):
  ///
  /// | HTTP/2 | gRPC |
  /// |---|---|
  /// | REFUSED_STREAM (0x7) | UNAVAILABLE |
  /// | CANCEL (0x8) | CANCELLED |
  /// | ENHANCE_YOUR_CALM (0xb) | RESOURCE_EXHAUSTED |
  /// | INADEQUATE_SECURITY (0xc) | PERMISSION_DENIED |
  /// | every other code, NO_ERROR and unknown codes included | INTERNAL |
  ///
  /// NO_ERROR lands on INTERNAL because a stream that ends without trailers
  /// never delivered its status. STREAM_CLOSED has no mapping in the spec;
  /// unknown codes are INTERNAL here (grpc-go says UNKNOWN), as either way
  /// something broke below gRPC.
  public static func code(for code: HTTP2ErrorCode) -> GRPCStatusCode {
    switch code {
    case .refusedStream: .unavailable
    case .cancel: .cancelled
    case .enhanceYourCalm: .resourceExhausted
    case .inadequateSecurity: .permissionDenied
    default: .internalError
    }
  }

  /// Whether a `content-type` value denotes gRPC: `application/grpc` followed by
  /// the end of the value, `+` (a subtype such as `+proto`) or `;` (parameters).
  ///
  /// `application/grpc` is compared case-insensitively, since media types are
  /// (RFC 9110 §8.3.1); `application/grpc-web` and the like are not gRPC.
  public static func isGRPCContentType(_ contentType: String) -> Bool {
    let prefix = "application/grpc".utf8
    let value = contentType.utf8
    guard value.count >= prefix.count else { return false }
    var index = value.startIndex
    for expected in prefix {
      var byte = value[index]
      if byte >= UInt8(ascii: "A"), byte <= UInt8(ascii: "Z") { byte += 0x20 }
      guard byte == expected else { return false }
      index = value.index(after: index)
    }
    guard index != value.endIndex else { return true }
    return value[index] == UInt8(ascii: "+") || value[index] == UInt8(ascii: ";")
  }
}
