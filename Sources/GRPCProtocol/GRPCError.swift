// Sources/GRPCProtocol/GRPCError.swift - a non-OK status thrown as a Swift error
//
// This is the only file in the module that imports Foundation: `CustomNSError`
// is what makes `(error as NSError).domain == "io.grpc"` work, so code written
// against the mobile SDK's error checks ports directly.

import Foundation

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

  /// Creates an error from its parts.
  public init(code: GRPCStatusCode, message: String, trailers: GRPCMetadata = [:]) {
    self.code = code
    self.message = message
    self.trailers = trailers
  }

  /// Creates an error from a status.
  public init(status: GRPCStatus, trailers: GRPCMetadata = [:]) {
    self.init(code: status.code, message: status.message, trailers: trailers)
  }

  /// The code and message as a ``GRPCStatus``.
  public var status: GRPCStatus { GRPCStatus(code: code, message: message) }

  /// `"UNAVAILABLE (14): connection refused"`; just `"UNAVAILABLE (14)"` when the message is empty.
  public var description: String { status.description }

  /// The `NSError` domain of every gRPC error: `"io.grpc"`.
  public static let errorDomain = "io.grpc"

  /// The status code's number (14 for UNAVAILABLE, …).
  public var errorCode: Int { code.rawValue }

  /// `NSLocalizedDescriptionKey` set to ``description``, so `localizedDescription` is useful.
  public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: description] }
}
