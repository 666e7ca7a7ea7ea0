// Sources/HTTP2Transport/ConnectionError.swift - why a connection could not be made, failed or closed
//
// One closed enum for every way a client connection ends other than a clean close: name resolution,
// TCP connect, TLS, HTTP/2, keepalive, the peer, this side. Calls that end UNAVAILABLE because of one
// carry it as the status's (and so the GRPCError's) `cause`, so callers decide by case, never by
// message text. The description is the message those calls' status carries.

public import HTTP2Session
import TLSCrypto

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Why a connection of a ``GRPCChannel`` could not be made, failed, or closed under its calls.
///
/// A call that ends UNAVAILABLE because of its connection carries the connection's error as
/// `GRPCError.cause` (and `GRPCStatus.cause`); the status message is this error's ``description``.
/// Branch on the case, never on the message:
///
/// ```swift
/// catch let error as GRPCError {
///   switch error.cause as? ConnectionError {
///   case .serverNotTLS?: print("the server speaks cleartext: try .plaintext")
///   case .connectionRefused?: print("nothing listens there")
///   default: print(error)
///   }
/// }
/// ```
///
/// Addresses are numeric (`127.0.0.1:50051`, `[::1]:443`); reasons are the system's or OpenSSL's own text.
public enum ConnectionError: Error, Sendable, Hashable, CustomStringConvertible {
  // MARK: Reaching the server

  /// The host name did not resolve: getaddrinfo's reason, or "no addresses".
  case resolutionFailed(host: String, reason: String)
  /// Nothing accepts connections at the address (ECONNREFUSED).
  case connectionRefused(address: String)
  /// No route to the address (ENETUNREACH, EHOSTUNREACH), with the errno.
  case unreachable(address: String, errno: Int32)
  /// The connection, with its TLS handshake and the server's first SETTINGS, was not made within
  /// the channel's connect timeout (or the system's, ETIMEDOUT).
  case connectTimedOut(address: String)

  // MARK: TLS

  /// The TLS handshake failed, with OpenSSL's reason (or what ended it).
  case tlsHandshakeFailed(reason: String)
  /// The TLS handshake failed because the server's first bytes are not a TLS record: it does not
  /// speak TLS on that port (typically a cleartext h2c server, to be reached with `.plaintext`).
  /// `reason` is OpenSSL's (or what ended the handshake).
  case serverNotTLS(reason: String)
  /// The server's certificate chain or name did not verify, with OpenSSL's reason.
  case certificateVerificationFailed(reason: String)
  /// The TLS handshake completed but ALPN did not agree on `h2`; `selected` is the protocol the
  /// server chose instead, if any.
  case alpnNotNegotiated(selected: String?)
  /// A TLS record failed after the handshake (`operation` is `read` or `write`), with OpenSSL's reason.
  case tlsFailed(operation: String, reason: String)

  // MARK: HTTP/2

  /// The server broke HTTP/2 (nghttp2's error); this side answered with GOAWAY and closed.
  case protocolError(HTTP2SessionError)
  /// The server sent GOAWAY with this error code and debug data, then closed the connection while
  /// calls were still open on it.
  case goAway(errorCode: HTTP2ErrorCode, debugData: [UInt8])
  /// The server's SETTINGS allowed no stream (MAX_CONCURRENT_STREAMS = 0) for the whole connect
  /// timeout (`waited`).
  case noStreamsAllowed(waited: Duration)
  /// A keepalive PING got nothing back from the server within `timeout`.
  case keepaliveTimeout(Duration)

  // MARK: Closing

  /// The server closed the connection (TCP FIN, or TLS close_notify).
  case closedByPeer
  /// This side closed it: the channel was shut down or closed (a server dropping a connection
  /// closes it with this too).
  case shutdown
  /// A system call on the socket failed (`operation`: `socket`, `read`, `write`, `connect to …`),
  /// with the errno: a reset connection is `read` with ECONNRESET.
  case io(operation: String, errno: Int32)
  /// A failure on this side that is none of the above (nghttp2 could not start a session, the
  /// session ended unexpectedly).
  case internalError(String)

  /// The error for a TLS session's failure.
  package init(_ failure: TLSFailure) {
    switch failure {
    case .handshakeFailed(let reason): self = .tlsHandshakeFailed(reason: reason)
    case .serverNotTLS(let reason): self = .serverNotTLS(reason: reason)
    case .certificateVerificationFailed(let reason): self = .certificateVerificationFailed(reason: reason)
    case .alpnNotNegotiated(let selected): self = .alpnNotNegotiated(selected: selected)
    case .recordFailed(let operation, let reason): self = .tlsFailed(operation: operation, reason: reason)
    }
  }

  /// The error for a failed TCP connect to `address` with `errno`: refused, unreachable, timed out,
  /// or any other errno as ``io(operation:errno:)``.
  package static func connectFailed(to address: String, errno code: Int32) -> ConnectionError {
    switch code {
    case ECONNREFUSED: .connectionRefused(address: address)
    case ENETUNREACH, EHOSTUNREACH: .unreachable(address: address, errno: code)
    case ETIMEDOUT: .connectTimedOut(address: address)
    default: .io(operation: "connect to \(address)", errno: code)
    }
  }

  /// The message of the calls that fail because of this error, e.g.
  /// `connect to 127.0.0.1:1: Connection refused`, `keepalive ping not answered within 10.0 seconds: the
  /// server stopped responding`, `HTTP/2 protocol error from the server: …`.
  public var description: String {
    switch self {
    case .resolutionFailed(let host, let reason):
      "resolving \(host): \(reason)"
    case .connectionRefused(let address):
      "connect to \(address): \(Self.text(ofErrno: ECONNREFUSED))"
    case .unreachable(let address, let code):
      "connect to \(address): \(Self.text(ofErrno: code))"
    case .connectTimedOut(let address):
      "connect to \(address) timed out"
    case .tlsHandshakeFailed(let reason):
      reason.isEmpty ? "TLS handshake failed" : "TLS handshake failed: \(reason)"
    case .serverNotTLS(let reason):
      "TLS handshake failed: the server did not answer with TLS (is it a cleartext h2c server?)"
        + (reason.isEmpty ? "" : ": \(reason)")
    case .certificateVerificationFailed(let reason):
      "TLS certificate verification failed: \(reason)"
    case .alpnNotNegotiated(let selected):
      "the server did not agree on ALPN protocol h2" + (selected.map { " (it selected \"\($0)\")" } ?? "")
    case .tlsFailed(let operation, let reason):
      reason.isEmpty ? "TLS \(operation) failed" : "TLS \(operation) failed: \(reason)"
    case .protocolError(let error):
      "HTTP/2 protocol error from the server: \(error.message)"
    case .goAway(let errorCode, let debugData):
      "the server sent GOAWAY \(errorCode)\(Self.quoted(debugData)) and closed the connection"
    case .noStreamsAllowed(let waited):
      "the server allowed no streams (SETTINGS_MAX_CONCURRENT_STREAMS = 0) for \(waited) after connecting"
    case .keepaliveTimeout(let timeout):
      "keepalive ping not answered within \(timeout): the server stopped responding"
    case .closedByPeer:
      "connection closed by peer"
    case .shutdown:
      "the channel is shut down"
    case .io(let operation, let code):
      "\(operation): \(Self.text(ofErrno: code))"
    case .internalError(let reason):
      reason
    }
  }

  /// strerror's text for `code`.
  private static func text(ofErrno code: Int32) -> String {
    // Safe: strerror returns a NUL-terminated string for any input (an "Unknown error N" one at worst).
    String(cString: strerror(code))
  }

  /// ` "debug data"` when the GOAWAY's debug data is short printable ASCII, ` (N bytes of debug data)`
  /// otherwise, and nothing when there is none.
  private static func quoted(_ debugData: [UInt8]) -> String {
    guard !debugData.isEmpty else { return "" }
    guard debugData.count <= 128, debugData.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") })
    else { return " (\(debugData.count) bytes of debug data)" }
    return " \"\(String(decoding: debugData, as: UTF8.self))\""
  }
}
