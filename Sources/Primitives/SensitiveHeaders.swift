// Sources/Primitives/SensitiveHeaders.swift - header names whose values are credentials
//
// Printing gRPC metadata (GRPCValues) and HTTP/2 header fields (HTTP2Session) must never show a token:
// both redact the values of these names, from this one list.

/// The header names whose values are credentials, and must never be logged or shown.
package enum SensitiveHeaders {
  /// The names, lowercased.
  package static let names: Set<String> = [
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-goog-api-key",
    "x-goog-iam-authorization-token",
  ]

  /// Whether `name` (compared lowercased) carries credentials.
  package static func contains(_ name: String) -> Bool {
    names.contains(name.lowercased())
  }
}
