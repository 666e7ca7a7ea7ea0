// Sources/GRPCValues/GRPCStatusCode.swift - the seventeen gRPC status codes and the grpc-status header
//
// The numbers are part of the wire protocol (they travel in `grpc-status`) and
// of the public error contract (`GRPCError.errorCode`), so they never change.

/// A gRPC status code, numbered as on the wire.
///
/// The library itself only produces the codes a transport can detect
/// (CANCELLED, UNKNOWN, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNIMPLEMENTED,
/// INTERNAL, UNAVAILABLE, UNAUTHENTICATED, PERMISSION_DENIED); the others only
/// come from servers. It never invents OK: OK is reported only when a server
/// sent `grpc-status: 0`.
public enum GRPCStatusCode: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// Not an error; returned on success.
  case ok = 0
  /// The operation was cancelled, typically by the caller.
  case cancelled = 1
  /// Unknown error, including a status the client could not parse.
  case unknown = 2
  /// The client specified an invalid argument.
  case invalidArgument = 3
  /// The deadline expired before the operation could complete.
  case deadlineExceeded = 4
  /// A requested entity was not found.
  case notFound = 5
  /// The entity the client tried to create already exists.
  case alreadyExists = 6
  /// The caller lacks permission for the operation.
  case permissionDenied = 7
  /// Some resource has been exhausted (quota, message size, server capacity).
  case resourceExhausted = 8
  /// The system is not in a state required for the operation.
  case failedPrecondition = 9
  /// The operation was aborted, typically because of a concurrency conflict.
  case aborted = 10
  /// The operation was attempted past the valid range.
  case outOfRange = 11
  /// The operation is not implemented or supported by the server.
  case unimplemented = 12
  /// An internal invariant was broken; for a client, usually a protocol violation.
  /// (Spelled `internalError` because `internal` is a Swift keyword.)
  case internalError = 13
  /// The service is currently unavailable; a retry with backoff may succeed.
  case unavailable = 14
  /// Unrecoverable data loss or corruption.
  case dataLoss = 15
  /// The request does not have valid authentication credentials.
  case unauthenticated = 16

  /// The canonical upper-case name, as in the gRPC specification: `"DEADLINE_EXCEEDED"`, `"INTERNAL"`, ….
  public var name: String {
    switch self {
    case .ok: "OK"
    case .cancelled: "CANCELLED"
    case .unknown: "UNKNOWN"
    case .invalidArgument: "INVALID_ARGUMENT"
    case .deadlineExceeded: "DEADLINE_EXCEEDED"
    case .notFound: "NOT_FOUND"
    case .alreadyExists: "ALREADY_EXISTS"
    case .permissionDenied: "PERMISSION_DENIED"
    case .resourceExhausted: "RESOURCE_EXHAUSTED"
    case .failedPrecondition: "FAILED_PRECONDITION"
    case .aborted: "ABORTED"
    case .outOfRange: "OUT_OF_RANGE"
    case .unimplemented: "UNIMPLEMENTED"
    case .internalError: "INTERNAL"
    case .unavailable: "UNAVAILABLE"
    case .dataLoss: "DATA_LOSS"
    case .unauthenticated: "UNAUTHENTICATED"
    }
  }

  /// The name and the number, e.g. `"UNAVAILABLE (14)"`.
  public var description: String { "\(name) (\(rawValue))" }

  /// Parses the value of a `grpc-status` header.
  ///
  /// The value must be a plain decimal number: ASCII digits only, no sign, no
  /// whitespace, no leading zeros (`"0"` itself is fine). Anything else, and any
  /// number above 16, yields ``unknown``: the status codes say an unparsable
  /// status is UNKNOWN, and a code this client does not know cannot be acted on
  /// (grpc-java does the same; grpc-go passes the raw number through).
  public static func parse(grpcStatusHeader value: String) -> GRPCStatusCode {
    var number = 0
    var digits = 0
    for byte in value.utf8 {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return .unknown }
      // Leading zero: "0" alone is the only number allowed to start with 0.
      if digits == 1, number == 0 { return .unknown }
      digits += 1
      // Two digits are enough for every known code; stop before any overflow.
      guard digits <= 2 else { return .unknown }
      number = number * 10 + Int(byte - UInt8(ascii: "0"))
    }
    guard digits > 0 else { return .unknown }
    return GRPCStatusCode(rawValue: number) ?? .unknown
  }
}
