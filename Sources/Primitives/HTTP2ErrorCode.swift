// Sources/Primitives/HTTP2ErrorCode.swift - the one HTTP/2 error code type, carried by RST_STREAM and GOAWAY
//
// An open newtype rather than an enum: a peer may send any 32-bit code, and
// RFC 9113 §7 says unknown codes must not trigger special behaviour, so they
// must still be representable. Here, below both, so that the nghttp2 engine (HTTP2Session) and gRPC's rules
// (GRPCProtocol: the status a reset stream maps to, the code a server resets with) share it.

/// An HTTP/2 error code (RFC 9113 §7), as carried by RST_STREAM and GOAWAY frames.
///
/// Unknown codes are kept as they are; ``description`` prints them in hex.
public struct HTTP2ErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
  /// The 32-bit code as it appears on the wire.
  public var rawValue: UInt32

  /// Wraps a code received from or sent to a peer.
  public init(rawValue: UInt32) {
    self.rawValue = rawValue
  }

  /// NO_ERROR (0x0): graceful shutdown, or a stream closed normally.
  public static let noError = HTTP2ErrorCode(rawValue: 0x0)
  /// PROTOCOL_ERROR (0x1): an unspecific protocol violation.
  public static let protocolError = HTTP2ErrorCode(rawValue: 0x1)
  /// INTERNAL_ERROR (0x2): the endpoint hit an unexpected internal error.
  public static let internalError = HTTP2ErrorCode(rawValue: 0x2)
  /// FLOW_CONTROL_ERROR (0x3): the peer violated flow control.
  public static let flowControlError = HTTP2ErrorCode(rawValue: 0x3)
  /// SETTINGS_TIMEOUT (0x4): a SETTINGS frame was not acknowledged in time.
  public static let settingsTimeout = HTTP2ErrorCode(rawValue: 0x4)
  /// STREAM_CLOSED (0x5): a frame arrived after the stream was half-closed.
  public static let streamClosed = HTTP2ErrorCode(rawValue: 0x5)
  /// FRAME_SIZE_ERROR (0x6): a frame had an invalid size.
  public static let frameSizeError = HTTP2ErrorCode(rawValue: 0x6)
  /// REFUSED_STREAM (0x7): the stream was refused before any processing; it is safe to retry.
  public static let refusedStream = HTTP2ErrorCode(rawValue: 0x7)
  /// CANCEL (0x8): the stream is no longer needed.
  public static let cancel = HTTP2ErrorCode(rawValue: 0x8)
  /// COMPRESSION_ERROR (0x9): the header compression context could not be maintained.
  public static let compressionError = HTTP2ErrorCode(rawValue: 0x9)
  /// CONNECT_ERROR (0xa): the connection for a CONNECT request was reset or closed.
  public static let connectError = HTTP2ErrorCode(rawValue: 0xa)
  /// ENHANCE_YOUR_CALM (0xb): the peer generates excessive load.
  public static let enhanceYourCalm = HTTP2ErrorCode(rawValue: 0xb)
  /// INADEQUATE_SECURITY (0xc): the transport does not meet minimum security requirements.
  public static let inadequateSecurity = HTTP2ErrorCode(rawValue: 0xc)
  /// HTTP_1_1_REQUIRED (0xd): the peer wants HTTP/1.1 for this request.
  public static let http11Required = HTTP2ErrorCode(rawValue: 0xd)

  /// The RFC name (`REFUSED_STREAM`), or `0x…` for a code the RFC does not define.
  public var name: String {
    let description = self.description
    return description.hasPrefix("UNKNOWN") ? "0x" + String(rawValue, radix: 16) : description
  }

  /// The RFC name (`PROTOCOL_ERROR`), or `UNKNOWN(0x…)` for a code the RFC does not define.
  public var description: String {
    switch rawValue {
    case 0x0: "NO_ERROR"
    case 0x1: "PROTOCOL_ERROR"
    case 0x2: "INTERNAL_ERROR"
    case 0x3: "FLOW_CONTROL_ERROR"
    case 0x4: "SETTINGS_TIMEOUT"
    case 0x5: "STREAM_CLOSED"
    case 0x6: "FRAME_SIZE_ERROR"
    case 0x7: "REFUSED_STREAM"
    case 0x8: "CANCEL"
    case 0x9: "COMPRESSION_ERROR"
    case 0xa: "CONNECT_ERROR"
    case 0xb: "ENHANCE_YOUR_CALM"
    case 0xc: "INADEQUATE_SECURITY"
    case 0xd: "HTTP_1_1_REQUIRED"
    default: "UNKNOWN(0x\(String(rawValue, radix: 16)))"
    }
  }
}
