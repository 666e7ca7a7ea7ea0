// Sources/ToolSupport/ToolExit.swift - the exit codes every JourneySharing tool uses
//
// tripwatch, fleetsim, grpc-interop-client and protowire-conformance share one scheme, so a
// script can tell why a run failed without reading its output.

package import GRPCProtocol

/// The exit status of a JourneySharing command-line tool.
///
/// | code | meaning |
/// |---|---|
/// | 0 | success |
/// | 1 | a call ended with a status other than OK (`raw-call`, `get`: the status is printed), or a check failed |
/// | 2 | usage: unknown flags, missing or malformed arguments |
/// | 3 | invalid input: a malformed trip name, a file that cannot be read or used (trips, token, key, certificate) |
/// | 4 | gave up: the server could not be reached or kept failing (UNAVAILABLE, DEADLINE_EXCEEDED, …) |
/// | 5 | gave up: the server kept refusing (UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, INVALID_ARGUMENT, RESOURCE_EXHAUSTED) |
/// | 6 | incomplete: `--duration` ran out before every trip reached its final state (with `--until-complete`) |
/// | 7 | the server could not start (the address is in use, or cannot be bound) |
package enum ToolExit: Int32, Sendable, CaseIterable {
  case success = 0
  case callFailed = 1
  case usage = 2
  case invalidInput = 3
  case unavailable = 4
  case refused = 5
  case incomplete = 6
  case cannotListen = 7

  /// The code for giving up after `code` kept coming back: ``refused`` for the client-error classes
  /// (the caller must act), ``unavailable`` for everything else (the server or the network failed).
  package static func gaveUp(after code: GRPCStatusCode) -> ToolExit {
    switch code {
    case .unauthenticated, .permissionDenied, .notFound, .invalidArgument, .resourceExhausted, .failedPrecondition,
      .unimplemented:
      return .refused
    default:
      return .unavailable
    }
  }

  /// The table above as `--help` text.
  package static let helpText = """
    Exit status: 0 success; 1 a call ended with a non-OK status (raw-call, get); 2 usage error; \
    3 invalid input (malformed trip name, unreadable file); 4 gave up, the server could not be reached or \
    kept failing; 5 gave up, the server kept refusing (UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, \
    INVALID_ARGUMENT, RESOURCE_EXHAUSTED); 6 --duration ran out before every trip finished \
    (--until-complete); 7 the server could not start.
    """
}
