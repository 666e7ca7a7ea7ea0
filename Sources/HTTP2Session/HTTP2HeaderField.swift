// Sources/HTTP2Session/HTTP2HeaderField.swift - one header field and the kinds of header block
//
// Header fields travel as plain strings: names are lowercase ASCII on the wire
// (nghttp2 lowercases names it sends and resets streams whose peer sent
// uppercase ones), values are decoded as UTF-8 with invalid bytes replaced.

internal import Primitives

/// One HTTP/2 header field: a name and a value, pseudo-headers (`:status`, `:path`, …) included.
///
/// Order matters in a header block: pseudo-header fields come first, and the
/// session delivers and sends fields in the order they appear.
public struct HTTP2HeaderField: Sendable, Hashable {
  /// The field name, e.g. `content-type` or `:status`.
  public var name: String
  /// The field value.
  public var value: String

  /// Creates a field from a name and a value.
  public init(_ name: String, _ value: String) {
    self.name = name
    self.value = value
  }
}

extension HTTP2HeaderField: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
  /// `name: value`, as in an HTTP/1 message; `name: <redacted>` for a field carrying credentials
  /// (`authorization` and the others of the package's list of credential headers), so header lists can be logged.
  public var description: String {
    SensitiveHeaders.contains(name) ? "\(name): <redacted>" : "\(name): \(value)"
  }

  /// The same as ``description``.
  public var debugDescription: String { description }

  /// The name, and the value unless it carries credentials (what `dump` shows).
  public var customMirror: Mirror {
    Mirror(self, children: ["name": name, "value": SensitiveHeaders.contains(name) ? "<redacted>" : value])
  }
}

/// What a received header block is, judged from the stream's state and its pseudo-header fields.
public enum HTTP2HeadersKind: Sendable, Hashable {
  /// The request header block a client opened the stream with (server role).
  case request
  /// The final response header block: `:status` is 200 or above (client role).
  case response
  /// An interim response: `:status` is 1xx (client role). The final response follows on the same stream.
  case informational
  /// A trailing header block, which carries no pseudo-header fields and ends the stream.
  case trailers
}
