// Sources/GRPCValues/GRPCStatus.swift - the outcome of a call: a code and a message

/// The final outcome of a gRPC call: a status code plus a human-readable message.
///
/// The message is already percent-decoded (see `GRPCPercentEncoding` in GRPCProtocol); it is
/// meant for people and logs, never for program logic. Programs branch on the
/// ``code`` and, for a failure found on this side, on the type of ``cause``.
public struct GRPCStatus: Sendable, Hashable, CustomStringConvertible {
  /// The status code.
  public var code: GRPCStatusCode
  /// The message that came with the status; empty when there was none.
  public var message: String
  /// Why a status made on this side came about, when a typed error says it better than the
  /// message: the connection error behind an UNAVAILABLE (for the HTTP/2 channel,
  /// `HTTP2Transport.ConnectionError`). `nil` for a status the server sent. Never sent on the
  /// wire, and not part of equality or hashing. ``GRPCError/init(status:trailers:)`` carries it
  /// as ``GRPCError/cause``.
  public var cause: (any Error & Sendable)?

  /// Creates a status.
  public init(code: GRPCStatusCode, message: String = "", cause: (any Error & Sendable)? = nil) {
    self.code = code
    self.message = message
    self.cause = cause
  }

  /// OK with no message.
  public static let ok = GRPCStatus(code: .ok)

  /// Whether the code is OK.
  public var isOK: Bool { code == .ok }

  /// `"UNAVAILABLE (14): connection refused"`, or `"OK (0)"` when the message is empty.
  public var description: String {
    message.isEmpty ? code.description : "\(code.description): \(message)"
  }

  /// Equal code and message; the cause is not compared.
  public static func == (lhs: GRPCStatus, rhs: GRPCStatus) -> Bool {
    lhs.code == rhs.code && lhs.message == rhs.message
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(code)
    hasher.combine(message)
  }
}
