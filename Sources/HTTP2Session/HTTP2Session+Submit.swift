// Sources/HTTP2Session/HTTP2Session+Submit.swift - what the application sends: requests, headers, data, control frames
//
// Submitting only queues: frames leave through `drainOutput(into:)`. DATA
// is pulled from the stream's queue by a data provider that defers when the
// queue is empty and is resumed when more is sent, so nghttp2 never holds
// more than the frame it is writing.

internal import CNGHTTP2

extension HTTP2Session {
  // MARK: - Client

  /// Opens a stream with a request (client role) and returns its stream ID.
  ///
  /// - `body == nil && endStream`: a headers-only request; HEADERS carries END_STREAM.
  /// - `body != nil`: the body is queued as DATA behind the HEADERS; the last DATA frame
  ///   carries END_STREAM when `endStream` is true.
  /// - `endStream == false`: the stream stays open for ``sendData(streamID:bytes:endStream:)``
  ///   and, to end it, trailers through ``submitHeaders(streamID:headers:endStream:)``.
  ///
  /// The HEADERS frame goes out when the peer's concurrency limit allows; a request that
  /// never goes out (the peer sent GOAWAY first) is reported closed with REFUSED_STREAM.
  ///
  /// - Parameter headers: pseudo-header fields (`:method`, `:scheme`, `:authority`, `:path`) first.
  /// - Throws: ``HTTP2SessionError/Codes/invalidState`` on a server,
  ///   ``HTTP2SessionError/Codes/startStreamNotAllowed`` when ``isRequestAllowed`` is false,
  ///   or the error nghttp2 reports (e.g. ``HTTP2SessionError/Codes/streamIDNotAvailable``).
  public func submitRequest(headers: [HTTP2HeaderField], body: [UInt8]?, endStream: Bool) throws(HTTP2SessionError)
    -> Int32
  {
    guard role == .client else {
      throw HTTP2SessionError(code: HTTP2SessionError.Codes.invalidState, message: "submitRequest on a server session")
    }
    guard isRequestAllowed else {
      throw HTTP2SessionError(code: HTTP2SessionError.Codes.startStreamNotAllowed)
    }
    let state = StreamState()
    state.headersSubmitted = true
    state.localEnded = endStream
    let needsProvider = body != nil || !endStream
    if let body { state.queue = body }
    let streamID = withNameValues(headers) { nva, count in
      if needsProvider {
        var provider = Self.dataProvider
        return nghttp2_submit_request(session, nil, nva, count, &provider, nil)
      }
      return nghttp2_submit_request(session, nil, nva, count, nil, nil)
    }
    guard streamID > 0 else { throw HTTP2SessionError(code: streamID) }
    state.providerAttached = needsProvider
    streams[streamID] = state
    return streamID
  }

  // MARK: - Both roles

  /// Queues a header block on an open stream: a response (server), a 1xx interim response
  /// (server), or trailers (either role, with `endStream`).
  ///
  /// Trailers submitted while DATA is still queued go out after the last queued byte, as
  /// with `nghttp2_submit_trailer`. Headers that do not end the stream cannot follow DATA.
  ///
  /// - Throws: ``HTTP2SessionError/Codes/streamClosed`` for a stream that is not open,
  ///   ``HTTP2SessionError/Codes/streamShutWrite`` when this side already ended it,
  ///   ``HTTP2SessionError/Codes/invalidState`` for non-final headers after DATA.
  public func submitHeaders(streamID: Int32, headers: [HTTP2HeaderField], endStream: Bool) throws(HTTP2SessionError) {
    let state = try openStream(streamID)
    if state.providerAttached {
      guard endStream else {
        throw HTTP2SessionError(
          code: HTTP2SessionError.Codes.invalidState,
          message: "headers after DATA on stream \(streamID) must end the stream (trailers)"
        )
      }
      state.trailers = headers
      state.localEnded = true
      try resumeIfDeferred(state, streamID: streamID)
      return
    }
    let flags = endStream ? Flag.endStream : Flag.none
    let rv = withNameValues(headers) { nva, count in
      nghttp2_submit_headers(session, flags, streamID, nil, nva, count, nil)
    }
    guard rv >= 0 else { throw HTTP2SessionError(code: rv) }
    if endStream { state.localEnded = true }
    if !Self.isInformational(headers) { state.headersSubmitted = true }
  }

  /// Appends `bytes` to the stream's outbound queue; they go out as DATA frames as flow control allows.
  ///
  /// The bytes are copied, so the buffer may be reused at once. With `endStream` the last
  /// DATA frame carries END_STREAM (an empty `bytes` sends an empty DATA frame with it).
  /// Watch ``outboundBufferedBytes(streamID:)`` to stop producing when the peer reads slowly.
  ///
  /// - Throws: ``HTTP2SessionError/Codes/streamClosed`` for a stream that is not open,
  ///   ``HTTP2SessionError/Codes/streamShutWrite`` when this side already ended it,
  ///   ``HTTP2SessionError/Codes/invalidState`` before the response headers (server role).
  public func sendData(streamID: Int32, bytes: UnsafeRawBufferPointer, endStream: Bool) throws(HTTP2SessionError) {
    let state = try openStream(streamID)
    guard state.headersSubmitted else {
      throw HTTP2SessionError(
        code: HTTP2SessionError.Codes.invalidState,
        message: "DATA before final headers on stream \(streamID)"
      )
    }
    if !state.providerAttached {
      var provider = Self.dataProvider
      // The provider's EOF flag decides where END_STREAM goes, so the item always allows it.
      let rv = nghttp2_submit_data(session, Flag.endStream, streamID, &provider)
      guard rv == 0 else { throw HTTP2SessionError(code: rv) }
      state.providerAttached = true
    }
    state.enqueue(bytes)
    if endStream { state.localEnded = true }
    try resumeIfDeferred(state, streamID: streamID)
  }

  /// Bytes queued on `streamID` with ``sendData(streamID:bytes:endStream:)`` that nghttp2 has not
  /// framed yet (0 for an unknown stream). This is the stream's backpressure signal: it grows
  /// while the peer's flow-control window is closed.
  public func outboundBufferedBytes(streamID: Int32) -> Int {
    streams[streamID]?.bufferedBytes ?? 0
  }

  /// Queues RST_STREAM with `errorCode` for `streamID`; queued outbound data is dropped.
  ///
  /// The stream is reported closed with `errorCode` once the frame is sent (or, for a
  /// request whose HEADERS had not gone out yet, once it is cancelled). Unknown or
  /// already closed streams are ignored.
  public func resetStream(_ streamID: Int32, errorCode: HTTP2ErrorCode) {
    guard let state = streams[streamID] else { return }
    state.resetCode = errorCode
    // Fails only for stream ID 0, which is never in `streams`.
    _ = nghttp2_submit_rst_stream(session, Flag.none, streamID, errorCode.rawValue)
  }

  /// Queues a GOAWAY: the peer may start no new stream, and streams above `lastStreamID` are not processed.
  ///
  /// - Parameters:
  ///   - errorCode: ``HTTP2ErrorCode/noError`` for a graceful shutdown.
  ///   - lastStreamID: the highest peer-initiated stream that was or will be processed;
  ///     defaults to ``lastProcessedStreamID``.
  ///   - debugData: opaque diagnostic bytes for the peer.
  ///
  /// Streams already open continue; ``wantsRead`` and ``wantsWrite`` turn false once
  /// they are done. A server starting a graceful shutdown sends
  /// ``sendShutdownNotice()`` first, waits at least one round trip (a PING), then calls this.
  public func goAway(errorCode: HTTP2ErrorCode, lastStreamID: Int32? = nil, debugData: [UInt8] = []) {
    let last = lastStreamID ?? lastProcessedStreamID
    let rv = debugData.withUnsafeBufferPointer { debug in
      nghttp2_submit_goaway(session, Flag.none, last, errorCode.rawValue, debug.baseAddress, debug.count)
    }
    if rv == 0 { pendingLocalGoAways += 1 }
  }

  /// Queues the graceful-shutdown notice of RFC 9113 §6.8 (server role): a GOAWAY with last
  /// stream ID 2^31-1, telling the client to open no new streams while in-flight ones finish.
  ///
  /// - Throws: ``HTTP2SessionError/Codes/invalidState`` on a client session.
  public func sendShutdownNotice() throws(HTTP2SessionError) {
    let rv = nghttp2_submit_shutdown_notice(session)
    guard rv == 0 else { throw HTTP2SessionError(code: rv) }
    pendingLocalGoAways += 1
  }

  /// Queues a PING; the peer's acknowledgement arrives as
  /// ``HTTP2SessionDelegate/session(_:didReceivePingAck:)`` with the same `opaqueData`.
  public func ping(opaqueData: UInt64) {
    withUnsafeBytes(of: opaqueData.bigEndian) { payload in
      // Safe: the 8 bytes of `payload` are copied by nghttp2 during the call.
      _ = nghttp2_submit_ping(session, Flag.none, payload.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }
  }

  /// Tells nghttp2 that `bytes` received on `streamID` were processed, reopening that much of the
  /// stream's and the connection's receive windows.
  ///
  /// Sessions are created with `nghttp2_option_set_no_auto_window_update`, so this is the only
  /// way WINDOW_UPDATE frames go out: nghttp2 sends one once half a window has been consumed.
  /// Consume every byte delivered through ``HTTP2SessionDelegate/session(_:didReceiveData:streamID:)``,
  /// including bytes of a stream being discarded, or the connection window leaks. Bytes of a
  /// stream that has closed still count for the connection.
  public func consume(streamID: Int32, bytes: Int) {
    guard bytes > 0 else { return }
    // Fails only for stream ID 0 or nghttp2 running out of memory; neither is the caller's to handle here.
    _ = nghttp2_session_consume(session, streamID, bytes)
  }

  /// Like ``consume(streamID:bytes:)``, but reopens only the connection window.
  ///
  /// With ``consumeStream(streamID:bytes:)`` this splits consumption in two: a consumer that
  /// buffers a stream's messages can reopen the connection window at once, so other streams
  /// keep flowing, and the stream's own window only as its messages are taken.
  public func consumeConnection(bytes: Int) {
    guard bytes > 0 else { return }
    // Fails only when nghttp2 runs out of memory.
    _ = nghttp2_session_consume_connection(session, bytes)
  }

  /// Like ``consume(streamID:bytes:)``, but reopens only the stream's window (see ``consumeConnection(bytes:)``).
  /// Bytes of a stream that has closed are ignored.
  public func consumeStream(streamID: Int32, bytes: Int) {
    guard bytes > 0 else { return }
    // Fails only for stream ID 0 or nghttp2 running out of memory.
    _ = nghttp2_session_consume_stream(session, streamID, bytes)
  }

  // MARK: - Helpers

  /// The state of `streamID`, provided this side may still send on it.
  private func openStream(_ streamID: Int32) throws(HTTP2SessionError) -> StreamState {
    guard let state = streams[streamID] else {
      throw HTTP2SessionError(code: HTTP2SessionError.Codes.streamClosed)
    }
    guard !state.localEnded else {
      throw HTTP2SessionError(code: HTTP2SessionError.Codes.streamShutWrite)
    }
    return state
  }

  /// Wakes the stream's data provider if it returned NGHTTP2_ERR_DEFERRED on an empty queue.
  private func resumeIfDeferred(_ state: StreamState, streamID: Int32) throws(HTTP2SessionError) {
    guard state.providerDeferred else { return }
    state.providerDeferred = false
    let rv = nghttp2_session_resume_data(session, streamID)
    guard rv == 0 else { throw HTTP2SessionError(code: rv) }
  }

  /// Whether a header block to send is an interim (1xx) response.
  static func isInformational(_ headers: [HTTP2HeaderField]) -> Bool {
    for field in headers where field.name == ":status" {
      return field.value.utf8.first == UInt8(ascii: "1")
    }
    return false
  }

  /// The data provider every stream uses; the stream is found by ID, so the source is unused.
  static var dataProvider: nghttp2_data_provider {
    nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: readStreamData)
  }

  /// Calls `body` with `headers` as an `nghttp2_nv` array, built in reused scratch storage.
  ///
  /// nghttp2 copies names and values during the submit call, so the pointers only need
  /// to live for the duration of `body`.
  func withNameValues<R>(_ headers: [HTTP2HeaderField], _ body: (UnsafePointer<nghttp2_nv>?, Int) -> R) -> R {
    nameValueBytes.removeAll(keepingCapacity: true)
    for field in headers {
      nameValueBytes.append(contentsOf: field.name.utf8)
      nameValueBytes.append(contentsOf: field.value.utf8)
    }
    nameValues.removeAll(keepingCapacity: true)
    return nameValueBytes.withUnsafeMutableBufferPointer { bytes in
      // An empty array may have no storage; a dangling-but-unused pointer is fine for zero-length fields.
      let base = bytes.baseAddress ?? UnsafeMutablePointer<UInt8>(bitPattern: 1)!
      var offset = 0
      for field in headers {
        let nameLength = field.name.utf8.count
        let valueLength = field.value.utf8.count
        nameValues.append(
          nghttp2_nv(
            name: base + offset,
            value: base + offset + nameLength,
            namelen: nameLength,
            valuelen: valueLength,
            flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
          )
        )
        offset += nameLength + valueLength
      }
      return nameValues.withUnsafeBufferPointer { nva in body(nva.baseAddress, nva.count) }
    }
  }
}
