// Sources/GRPCProtocol/GRPCStatus.swift - the outcome of a call: a code and a message

/// The final outcome of a gRPC call: a status code plus a human-readable message.
///
/// The message is already percent-decoded (see ``GRPCPercentEncoding``); it is
/// meant for people and logs, never for program logic.
public struct GRPCStatus: Sendable, Hashable, CustomStringConvertible {
  /// The status code.
  public var code: GRPCStatusCode
  /// The message that came with the status; empty when there was none.
  public var message: String

  /// Creates a status.
  public init(code: GRPCStatusCode, message: String = "") {
    self.code = code
    self.message = message
  }

  /// OK with no message.
  public static let ok = GRPCStatus(code: .ok)

  /// Whether the code is OK.
  public var isOK: Bool { code == .ok }

  /// `"UNAVAILABLE (14): connection refused"`, or `"OK (0)"` when the message is empty.
  public var description: String {
    message.isEmpty ? code.description : "\(code.description): \(message)"
  }
}
