// Sources/GRPCValues/GRPCError.swift - a non-OK status thrown as a Swift error
//
// This is the only file in the module that imports Foundation: `CustomNSError`
// is what makes `(error as NSError).domain == "io.grpc"` work, so code written
// against the mobile SDK's error checks ports directly.

public import Foundation

/// A gRPC call that ended with a status other than OK, as a Swift `Error`.
///
/// Bridged to `NSError` with domain ``errorDomain`` (`"io.grpc"`) and
/// `errorCode` equal to the status code's number.
///
/// The error carries the response's trailing metadata but never the request's
/// metadata: request headers hold credentials (`authorization`), and errors end
/// up in logs. Keep it that way.
public struct GRPCError: Error, CustomNSError, Sendable, Hashable, CustomStringConvertible {
  /// The status code. Normally not ``GRPCStatusCode/ok``.
  public var code: GRPCStatusCode
  /// The status message, percent-decoded.
  public var message: String
  /// The trailing metadata the server sent with the status (empty when none,
  /// or when the error was produced locally).
  public var trailers: GRPCMetadata
  /// The error this one was made from, when there is one: the decoding error behind an INTERNAL, the
  /// token provider's error behind an UNAUTHENTICATED, the connection error behind an UNAVAILABLE. Not
  /// part of equality or hashing; like the message, it never holds request metadata.
  public var cause: (any Error & Sendable)?

  /// Creates an error from its parts.
  public init(
    code: GRPCStatusCode, message: String, trailers: GRPCMetadata = [:], cause: (any Error & Sendable)? = nil
  ) {
    self.code = code
    self.message = message
    self.trailers = trailers
    self.cause = cause
  }

  public static func == (lhs: GRPCError, rhs: GRPCError) -> Bool {
    lhs.code == rhs.code && lhs.message == rhs.message && lhs.trailers == rhs.trailers
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(code)
    hasher.combine(message)
    hasher.combine(trailers)
  }

  /// Whether following recovers from this error by itself, with nothing for the application to do: the
  /// Consumer SDK's first table (ABORTED, CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE). The second table's
  /// codes (INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED, UNAUTHENTICATED) are retried
  /// too but cannot heal without the application (a wrong name, a missing trip, a token or quota to fix),
  /// and so is every other code (INTERNAL, UNIMPLEMENTED, …): all of those are false.
  public var isRecoverable: Bool {
    switch code {
    case .aborted, .cancelled, .deadlineExceeded, .unavailable: true
    default: false
    }
  }

  /// Creates an error from a status, with the status's ``GRPCStatus/cause`` as ``cause``.
  public init(status: GRPCStatus, trailers: GRPCMetadata = [:]) {
    self.init(code: status.code, message: status.message, trailers: trailers, cause: status.cause)
  }

  /// The code, message and cause as a ``GRPCStatus``.
  public var status: GRPCStatus { GRPCStatus(code: code, message: message, cause: cause) }

  /// `"UNAVAILABLE (14): connection refused"`; just `"UNAVAILABLE (14)"` when the message is empty.
  public var description: String { status.description }

  /// The `NSError` domain of every gRPC error: `"io.grpc"`.
  public static let errorDomain = "io.grpc"

  /// The status code's number (14 for UNAVAILABLE, …).
  public var errorCode: Int { code.rawValue }

  /// `NSLocalizedDescriptionKey` set to ``description``, so `localizedDescription` is useful.
  public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: description] }
}
