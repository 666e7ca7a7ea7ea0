// Sources/HTTP2Session/HTTP2SessionError.swift - an nghttp2 library error, with its message
//
// Codes are nghttp2's own negative `nghttp2_error` values, so they can be
// looked up in the library's documentation; the named constants below are
// the ones callers have reason to branch on.

internal import CNGHTTP2

/// An error from the HTTP/2 session: an nghttp2 error code and a human-readable message.
///
/// ``code`` is one of nghttp2's negative `nghttp2_error` values (see ``Codes``).
/// Errors with ``isFatal`` set, and every error thrown by ``HTTP2Session/receive(_:)``,
/// mean the connection is finished: send whatever output the session still has
/// (usually a GOAWAY) and close it.
public struct HTTP2SessionError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The nghttp2 error code, always negative.
  public var code: Int32
  /// What went wrong, from `nghttp2_strerror` or more specific where the session knows more.
  public var message: String

  /// Creates an error with an explicit message.
  public init(code: Int32, message: String) {
    self.code = code
    self.message = message
  }

  /// Creates an error whose message is nghttp2's description of `code`.
  public init(code: Int32) {
    self.code = code
    // Safe: nghttp2_strerror returns a pointer to a static, NUL-terminated string for every input.
    self.message = String(cString: nghttp2_strerror(code))
  }

  /// Whether nghttp2 considers the error fatal to the whole session (codes below -900).
  public var isFatal: Bool { code < NGHTTP2_ERR_FATAL.rawValue }

  /// `HTTP/2 session error <code>: <message>`.
  public var description: String { "HTTP/2 session error \(code): \(message)" }
}

extension HTTP2SessionError {
  /// The nghttp2 error codes this module reports, by name.
  public enum Codes {
    /// NGHTTP2_ERR_INVALID_ARGUMENT: a bad stream ID, setting or size.
    public static let invalidArgument: Int32 = NGHTTP2_ERR_INVALID_ARGUMENT.rawValue
    /// NGHTTP2_ERR_PROTO: the peer violated the protocol (a connection error the session detected).
    public static let protocolError: Int32 = NGHTTP2_ERR_PROTO.rawValue
    /// NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE: this connection has used up its stream IDs.
    public static let streamIDNotAvailable: Int32 = NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue
    /// NGHTTP2_ERR_STREAM_CLOSED: the stream is closed or was never opened.
    public static let streamClosed: Int32 = NGHTTP2_ERR_STREAM_CLOSED.rawValue
    /// NGHTTP2_ERR_STREAM_SHUT_WR: the local side already ended the stream.
    public static let streamShutWrite: Int32 = NGHTTP2_ERR_STREAM_SHUT_WR.rawValue
    /// NGHTTP2_ERR_START_STREAM_NOT_ALLOWED: no new stream may start (GOAWAY sent or received).
    public static let startStreamNotAllowed: Int32 = NGHTTP2_ERR_START_STREAM_NOT_ALLOWED.rawValue
    /// NGHTTP2_ERR_INVALID_STATE: the call does not fit the session's role or the stream's state.
    public static let invalidState: Int32 = NGHTTP2_ERR_INVALID_STATE.rawValue
    /// NGHTTP2_ERR_FRAME_SIZE_ERROR: the peer sent a frame of invalid size.
    public static let frameSizeError: Int32 = NGHTTP2_ERR_FRAME_SIZE_ERROR.rawValue
    /// NGHTTP2_ERR_HEADER_COMP: the peer's header block could not be decompressed.
    public static let compressionError: Int32 = NGHTTP2_ERR_HEADER_COMP.rawValue
    /// NGHTTP2_ERR_FLOW_CONTROL: the peer violated flow control.
    public static let flowControlError: Int32 = NGHTTP2_ERR_FLOW_CONTROL.rawValue
    /// NGHTTP2_ERR_NOMEM: out of memory.
    public static let outOfMemory: Int32 = NGHTTP2_ERR_NOMEM.rawValue
    /// NGHTTP2_ERR_CALLBACK_FAILURE: a session callback failed.
    public static let callbackFailure: Int32 = NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
    /// NGHTTP2_ERR_BAD_CLIENT_MAGIC: a server received something other than the client connection preface.
    public static let badClientMagic: Int32 = NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue
    /// NGHTTP2_ERR_FLOODED: the peer floods the session (e.g. with PINGs whose ACKs it does not read).
    public static let flooded: Int32 = NGHTTP2_ERR_FLOODED.rawValue
  }

  /// The error for a connection error that nghttp2 detected and answered with a GOAWAY of `errorCode`.
  init(connectionError errorCode: HTTP2ErrorCode, reason: String) {
    let code: Int32 =
      switch errorCode {
      case .frameSizeError: Codes.frameSizeError
      case .compressionError: Codes.compressionError
      case .flowControlError: Codes.flowControlError
      case .enhanceYourCalm: Codes.flooded
      default: Codes.protocolError
      }
    let detail = reason.isEmpty ? "" : ": \(reason)"
    self.init(code: code, message: "connection error \(errorCode)\(detail)")
  }
}
