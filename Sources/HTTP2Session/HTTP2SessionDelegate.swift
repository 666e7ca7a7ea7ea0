// Sources/HTTP2Session/HTTP2SessionDelegate.swift - the events a session reports while it reads and writes
//
// Every method is called synchronously from inside `HTTP2Session.receive(_:)`
// or while output is produced (`drainOutput(into:)`, `withPendingOutput(_:)`: a
// stream also closes when the frame that ends it is sent), on the session's thread.

/// Receives the events of an ``HTTP2Session``.
///
/// Calls arrive on the session's thread, from inside ``HTTP2Session/receive(_:)``,
/// ``HTTP2Session/drainOutput(into:)`` and ``HTTP2Session/withPendingOutput(_:)``. A delegate may call the session's
/// submit methods (``HTTP2Session/submitHeaders(streamID:headers:endStream:)``,
/// ``HTTP2Session/sendData(streamID:bytes:endStream:)``, ``HTTP2Session/consume(streamID:bytes:)``, …)
/// from these callbacks, but not `receive` or the output methods themselves.
///
/// Only the header, data and close events must be implemented; the others
/// default to doing nothing.
public protocol HTTP2SessionDelegate: AnyObject {
  /// A complete header block (HEADERS plus any CONTINUATION frames) arrived on `streamID`.
  ///
  /// `endStream` is true when the block carried END_STREAM: a headers-only request,
  /// a Trailers-Only response, or trailers. No ``session(_:didReceiveEndOfStream:)``
  /// follows in that case.
  func session(
    _ session: HTTP2Session,
    didReceiveHeaders headers: [HTTP2HeaderField],
    kind: HTTP2HeadersKind,
    streamID: Int32,
    endStream: Bool
  )

  /// Payload bytes of a DATA frame arrived on `streamID`, padding removed.
  ///
  /// The buffer is borrowed from the receive buffer and valid only during the call.
  /// One frame may arrive in several chunks. Flow control is manual: the peer gets
  /// more window only as ``HTTP2Session/consume(streamID:bytes:)`` is called for
  /// these bytes, so consume them (even when discarding them) once they are processed.
  func session(_ session: HTTP2Session, didReceiveData data: UnsafeRawBufferPointer, streamID: Int32)

  /// A DATA frame with END_STREAM arrived on `streamID`: the peer sends nothing more on it.
  func session(_ session: HTTP2Session, didReceiveEndOfStream streamID: Int32)

  /// `streamID` closed: `errorCode` is ``HTTP2ErrorCode/noError`` after a normal end in both
  /// directions, otherwise the RST_STREAM code either side sent, or ``HTTP2ErrorCode/refusedStream``
  /// for a request the peer's GOAWAY excluded or that was still unsent when the GOAWAY came
  /// (safe to retry on another connection).
  func session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode)

  /// The peer sent GOAWAY: streams above `lastStreamID` that we opened are closed as refused,
  /// and no new stream may be opened on this connection.
  func session(
    _ session: HTTP2Session, didReceiveGoAway lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: [UInt8])

  /// The peer sent a SETTINGS frame (not an acknowledgement); `settings` holds the parameters it listed.
  func session(_ session: HTTP2Session, didReceiveSettings settings: HTTP2RemoteSettings)

  /// The peer acknowledged a PING sent with ``HTTP2Session/ping(opaqueData:)``.
  func session(_ session: HTTP2Session, didReceivePingAck opaqueData: UInt64)

  /// A header block on `streamID` was larger than the SETTINGS_MAX_HEADER_LIST_SIZE this side
  /// announced (``HTTP2Settings/maxHeaderListSize``): `size` bytes counted as RFC 9113 §6.5.2 does,
  /// against `limit`. Its fields were dropped instead of delivered, and the stream is being reset
  /// (CANCEL from a client, ENHANCE_YOUR_CALM from a server); ``session(_:streamDidClose:errorCode:)``
  /// follows with that code.
  func session(_ session: HTTP2Session, didRefuseHeaderListOfSize size: Int, limit: Int, streamID: Int32)
}

extension HTTP2SessionDelegate {
  /// Does nothing; END_STREAM on DATA is often handled where the data is.
  public func session(_ session: HTTP2Session, didReceiveEndOfStream streamID: Int32) {}

  /// Does nothing; the affected streams are reported closed one by one anyway.
  public func session(
    _ session: HTTP2Session,
    didReceiveGoAway lastStreamID: Int32,
    errorCode: HTTP2ErrorCode,
    debugData: [UInt8]
  ) {}

  /// Does nothing; the session applies the peer's settings itself.
  public func session(_ session: HTTP2Session, didReceiveSettings settings: HTTP2RemoteSettings) {}

  /// Does nothing.
  public func session(_ session: HTTP2Session, didReceivePingAck opaqueData: UInt64) {}

  /// Does nothing; the stream is reported closed with the reset's code.
  public func session(_ session: HTTP2Session, didRefuseHeaderListOfSize size: Int, limit: Int, streamID: Int32) {}
}
