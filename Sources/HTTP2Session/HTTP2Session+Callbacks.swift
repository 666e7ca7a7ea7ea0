// Sources/HTTP2Session/HTTP2Session+Callbacks.swift - nghttp2's C callbacks, turned into delegate events
//
// Each callback is a capture-free `@convention(c)` closure that recovers the
// session from user_data and calls an instance method. Header fields are
// collected per block and delivered whole at on_frame_recv; DATA chunks are
// handed on as borrowed buffers without copying.

internal import CNGHTTP2

/// nghttp2 frame flags, as the `UInt8` its frame headers and submit calls use.
enum Flag {
  static let none = UInt8(NGHTTP2_FLAG_NONE.rawValue)
  static let endStream = UInt8(NGHTTP2_FLAG_END_STREAM.rawValue)
  static let ack = UInt8(NGHTTP2_FLAG_ACK.rawValue)
}

/// nghttp2 frame types, as the `UInt8` in `nghttp2_frame_hd.type`.
enum FrameType {
  static let data = UInt8(NGHTTP2_DATA.rawValue)
  static let headers = UInt8(NGHTTP2_HEADERS.rawValue)
  static let settings = UInt8(NGHTTP2_SETTINGS.rawValue)
  static let pushPromise = UInt8(NGHTTP2_PUSH_PROMISE.rawValue)
  static let ping = UInt8(NGHTTP2_PING.rawValue)
  static let goAway = UInt8(NGHTTP2_GOAWAY.rawValue)
}

extension HTTP2Session {
  /// The session behind an nghttp2 callback's user_data.
  static func from(_ userData: UnsafeMutableRawPointer?) -> HTTP2Session {
    // Safe: user_data is always the unretained `self` set in init, and nghttp2 only calls back
    // during calls this session makes, while it is alive.
    Unmanaged<HTTP2Session>.fromOpaque(userData.unsafelyUnwrapped).takeUnretainedValue()
  }

  /// Registers every callback the session uses on `callbacks` (copied by nghttp2 at session creation).
  static func registerCallbacks(_ callbacks: OpaquePointer) {
    // Safe (all pointer unwraps below): nghttp2 never passes a null frame or session to these callbacks.
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
      HTTP2Session.from(userData).beginHeaders(frame.unsafelyUnwrapped)
    }
    nghttp2_session_callbacks_set_on_header_callback(callbacks) {
      _, frame, name, nameLength, value, valueLength, _, userData in
      // Safe: nghttp2 passes NUL-terminated name and value buffers valid for the call.
      HTTP2Session.from(userData).header(
        frame.unsafelyUnwrapped,
        name: UnsafeBufferPointer(start: name, count: nameLength),
        value: UnsafeBufferPointer(start: value, count: valueLength)
      )
    }
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
      HTTP2Session.from(userData).frameReceived(frame.unsafelyUnwrapped)
    }
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
      // Safe: the chunk points into the buffer given to mem_recv and is only lent for the call.
      HTTP2Session.from(userData).dataChunkReceived(
        UnsafeRawBufferPointer(start: data, count: length), streamID: streamID)
    }
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
      HTTP2Session.from(userData).streamClosed(streamID, errorCode: HTTP2ErrorCode(rawValue: errorCode))
    }
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
      HTTP2Session.from(userData).frameSent(frame.unsafelyUnwrapped)
    }
    nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks) { _, frame, libErrorCode, userData in
      HTTP2Session.from(userData).frameNotSent(frame.unsafelyUnwrapped, libErrorCode: libErrorCode)
    }
  }

  /// The read callback of every stream's data provider (`nghttp2_data_source_read_callback`).
  static let readStreamData: nghttp2_data_source_read_callback = {
    _, streamID, buffer, capacity, dataFlags, _, userData in
    // Safe: nghttp2 always passes a destination of `capacity` bytes and a flags word.
    HTTP2Session.from(userData).readData(
      streamID: streamID,
      into: buffer.unsafelyUnwrapped,
      capacity: capacity,
      flags: dataFlags.unsafelyUnwrapped
    )
  }

  // MARK: - Receiving

  /// on_begin_headers: a new header block starts; a request block also opens the stream (server).
  func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
    guard frame.pointee.hd.type == FrameType.headers else { return 0 }
    headerBlock.removeAll(keepingCapacity: true)
    headerBlockStatus = .none
    headerBlockSize = 0
    if frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
      let streamID = frame.pointee.hd.stream_id
      if streams[streamID] == nil { streams[streamID] = StreamState() }
    }
    return 0
  }

  /// on_header: one field of the block being received (fields of PUSH_PROMISE are ignored).
  ///
  /// The block's size is counted as RFC 9113 §6.5.2 defines it (name, value and 32 bytes per
  /// field). nghttp2 does not enforce the SETTINGS_MAX_HEADER_LIST_SIZE it announced, so this
  /// does: past the limit, fields are counted but no longer kept, and the block is refused
  /// when it ends (see `refuseOversizedHeaderBlock`). Decoding goes on, so the HPACK table stays in step.
  func header(
    _ frame: UnsafePointer<nghttp2_frame>,
    name: UnsafeBufferPointer<UInt8>,
    value: UnsafeBufferPointer<UInt8>
  ) -> Int32 {
    guard frame.pointee.hd.type == FrameType.headers else { return 0 }
    if name.elementsEqual(":status".utf8) {
      headerBlockStatus = value.first == UInt8(ascii: "1") ? .informational : .final
    }
    // Cannot overflow: nghttp2 caps each field at 64 KiB and the block at the frames received.
    headerBlockSize += name.count + value.count + 32
    if let limit = localSettings.maxHeaderListSize, headerBlockSize > Int(limit) {
      if !headerBlock.isEmpty { headerBlock.removeAll() }
      return 0
    }
    headerBlock.append(HTTP2HeaderField(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    return 0
  }

  /// Whether the header block just received was larger than the announced limit.
  var headerBlockIsOversized: Bool {
    guard let limit = localSettings.maxHeaderListSize else { return false }
    return headerBlockSize > Int(limit)
  }

  /// A header block above SETTINGS_MAX_HEADER_LIST_SIZE ended: the stream is reset (CANCEL from a
  /// client, which gives up on the response; ENHANCE_YOUR_CALM from a server, which a gRPC client
  /// reads as RESOURCE_EXHAUSTED) and the delegate is told instead of getting the fields.
  func refuseOversizedHeaderBlock(streamID: Int32) {
    let size = headerBlockSize
    headerBlock.removeAll(keepingCapacity: true)
    headerBlockSize = 0
    let code: HTTP2ErrorCode = role == .client ? .cancel : .enhanceYourCalm
    if let state = streams[streamID] { state.resetCode = code }
    _ = nghttp2_submit_rst_stream(session, Flag.none, streamID, code.rawValue)
    delegate.session(
      self, didRefuseHeaderListOfSize: size, limit: Int(localSettings.maxHeaderListSize ?? 0), streamID: streamID)
  }

  /// Counts a frame that carried nothing; false once the peer went past
  /// ``HTTP2Limits/maxFramesWithoutContent``, when the session has been ended with
  /// GOAWAY(ENHANCE_YOUR_CALM) and ``receive(_:)`` is to throw.
  func countFrameWithoutContent() -> Bool {
    framesWithoutContent += 1
    guard framesWithoutContent > localSettings.limits.maxFramesWithoutContent else { return true }
    if terminalError == nil {
      terminalError = HTTP2SessionError(
        code: HTTP2SessionError.Codes.flooded,
        message:
          "the peer sent \(framesWithoutContent) frames in a row that carried nothing (empty DATA frames or "
          + "informational headers)")
      _ = nghttp2_session_terminate_session(session, HTTP2ErrorCode.enhanceYourCalm.rawValue)
    }
    return false
  }

  /// on_frame_recv: a complete frame; header blocks, END_STREAM, SETTINGS, PING ACK and GOAWAY are reported.
  func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
    let hd = frame.pointee.hd
    switch hd.type {
    case FrameType.headers:
      if headerBlockIsOversized {
        refuseOversizedHeaderBlock(streamID: hd.stream_id)
        return 0
      }
      let kind: HTTP2HeadersKind
      if frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
        kind = .request
      } else {
        // HTTP messaging guarantees a response block has `:status` and trailers have none; a
        // final response after a 1xx arrives as HCAT_HEADERS, so `:status` decides, not the category.
        switch headerBlockStatus {
        case .informational: kind = .informational
        case .final: kind = .response
        case .none: kind = .trailers
        }
      }
      if kind == .informational {
        guard countFrameWithoutContent() else { return 0 }
      } else {
        framesWithoutContent = 0
      }
      delegate.session(
        self,
        didReceiveHeaders: headerBlock,
        kind: kind,
        streamID: hd.stream_id,
        endStream: hd.flags & Flag.endStream != 0
      )
      headerBlock.removeAll(keepingCapacity: true)
    case FrameType.data:
      if hd.flags & Flag.endStream != 0 {
        framesWithoutContent = 0
        delegate.session(self, didReceiveEndOfStream: hd.stream_id)
      } else if hd.length == frame.pointee.data.padlen {
        // Nothing but padding (padlen counts the Pad Length field too): no content either.
        guard countFrameWithoutContent() else { return 0 }
      } else {
        framesWithoutContent = 0
      }
    case FrameType.settings:
      if hd.flags & Flag.ack == 0 {
        delegate.session(self, didReceiveSettings: Self.remoteSettings(frame.pointee.settings))
      }
    case FrameType.ping:
      if hd.flags & Flag.ack != 0 {
        let opaque = withUnsafeBytes(of: frame.pointee.ping.opaque_data) { $0.loadUnaligned(as: UInt64.self) }
        delegate.session(self, didReceivePingAck: UInt64(bigEndian: opaque))
      }
    case FrameType.goAway:
      let goAway = frame.pointee.goaway
      // Safe: opaque_data holds opaque_data_len bytes (or is null with length 0) for the call.
      let debugData = Array(UnsafeBufferPointer(start: goAway.opaque_data, count: goAway.opaque_data_len))
      delegate.session(
        self,
        didReceiveGoAway: goAway.last_stream_id,
        errorCode: HTTP2ErrorCode(rawValue: goAway.error_code),
        debugData: debugData
      )
      refuseUnsentRequests()
    case FrameType.pushPromise:
      // Push is not surfaced (and only possible when enabled): refuse each promised stream.
      _ = nghttp2_submit_rst_stream(
        session,
        Flag.none,
        frame.pointee.push_promise.promised_stream_id,
        HTTP2ErrorCode.refusedStream.rawValue
      )
    default:
      break
    }
    return 0
  }

  /// After a GOAWAY nghttp2 starts no new stream, but a request still queued (say, behind the
  /// peer's concurrency limit) would only be failed once it reached the front of the queue,
  /// possibly never. Report such requests refused now; when nghttp2 later drops their HEADERS,
  /// `frameNotSent` and `streamClosed` find no state and stay silent. nghttp2 itself then
  /// closes the opened streams above the GOAWAY's last stream ID.
  func refuseUnsentRequests() {
    guard role == .client else { return }
    let unsent = streams.keys.filter { nghttp2_session_find_stream(session, $0) == nil }.sorted()
    for streamID in unsent {
      guard let state = streams.removeValue(forKey: streamID) else { continue }
      delegate.session(self, streamDidClose: streamID, errorCode: state.resetCode ?? .refusedStream)
    }
  }

  /// on_data_chunk_recv: payload bytes of a DATA frame, passed on without copying.
  func dataChunkReceived(_ data: UnsafeRawBufferPointer, streamID: Int32) -> Int32 {
    delegate.session(self, didReceiveData: data, streamID: streamID)
    return 0
  }

  /// on_stream_close: the stream is gone in nghttp2; drop its queue and report it.
  ///
  /// Only streams the session still tracks are reported, so each stream is reported closed
  /// exactly once: a queued request refused at GOAWAY time is opened and closed by nghttp2
  /// later, and promised (pushed) streams were never surfaced.
  func streamClosed(_ streamID: Int32, errorCode: HTTP2ErrorCode) -> Int32 {
    guard let state = streams.removeValue(forKey: streamID) else { return 0 }
    // nghttp2 closes a request whose HEADERS it could not send as refused; say why instead.
    delegate.session(self, streamDidClose: streamID, errorCode: state.sendFailure ?? errorCode)
    return 0
  }

  /// The parameters a SETTINGS frame listed.
  static func remoteSettings(_ frame: nghttp2_settings) -> HTTP2RemoteSettings {
    var settings = HTTP2RemoteSettings()
    for index in 0..<frame.niv {
      // Safe: `iv` holds `niv` entries while the frame is being delivered.
      let entry = frame.iv[index]
      let value = entry.value
      switch UInt32(bitPattern: entry.settings_id) {
      case NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue: settings.headerTableSize = value
      case NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue: settings.enablePush = value != 0
      case NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue: settings.maxConcurrentStreams = value
      case NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue: settings.initialWindowSize = value
      case NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue: settings.maxFrameSize = value
      case NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue: settings.maxHeaderListSize = value
      case NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL.rawValue: settings.enableConnectProtocol = value != 0
      default: break
      }
    }
    return settings
  }

  // MARK: - Sending

  /// on_frame_send: a GOAWAY the application did not submit is nghttp2 answering a connection error.
  func frameSent(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
    guard frame.pointee.hd.type == FrameType.goAway else { return 0 }
    if pendingLocalGoAways > 0 {
      pendingLocalGoAways -= 1
    } else if terminalError == nil {
      let goAway = frame.pointee.goaway
      // Safe: the debug data (nghttp2's reason text) is valid for the call.
      let reason = String(
        decoding: UnsafeBufferPointer(start: goAway.opaque_data, count: goAway.opaque_data_len), as: UTF8.self)
      terminalError = HTTP2SessionError(connectionError: HTTP2ErrorCode(rawValue: goAway.error_code), reason: reason)
    }
    return 0
  }

  /// on_frame_not_send: a request whose HEADERS never went out never opened its stream, so nghttp2
  /// will not report it closed; report it here. It counts as refused (safe to retry elsewhere)
  /// unless the block itself could not be sent: one above
  /// ``HTTP2Limits/maxSendHeaderBlockLength`` is reported as FRAME_SIZE_ERROR, which a retry
  /// would only meet again.
  func frameNotSent(_ frame: UnsafePointer<nghttp2_frame>, libErrorCode: Int32) -> Int32 {
    switch frame.pointee.hd.type {
    case FrameType.headers where frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST:
      let streamID = frame.pointee.hd.stream_id
      if libErrorCode == NGHTTP2_ERR_FRAME_SIZE_ERROR.rawValue, let state = streams[streamID] {
        state.sendFailure = .frameSizeError
      }
      // A stream nghttp2 did open is closed (and reported) by nghttp2 itself right after this callback.
      guard nghttp2_session_find_stream(session, streamID) == nil,
        let state = streams.removeValue(forKey: streamID)
      else { return 0 }
      delegate.session(
        self, streamDidClose: streamID, errorCode: state.sendFailure ?? state.resetCode ?? .refusedStream)
    case FrameType.goAway:
      if pendingLocalGoAways > 0 { pendingLocalGoAways -= 1 }
    default:
      break
    }
    return 0
  }

  /// The data provider's read: hands nghttp2 up to `capacity` queued bytes, then EOF (with
  /// trailers if any) once the stream is ended, or defers until more data is sent.
  func readData(
    streamID: Int32,
    into buffer: UnsafeMutablePointer<UInt8>,
    capacity: Int,
    flags: UnsafeMutablePointer<UInt32>
  ) -> Int {
    guard let state = streams[streamID] else {
      // Cannot happen while nghttp2 holds the provider; failing the stream is the safe answer.
      return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
    }
    let count = state.dequeue(into: buffer, capacity: capacity)
    guard state.bufferedBytes == 0 else { return count }
    if state.localEnded {
      flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
      state.providerAttached = false
      if let trailers = state.trailers {
        state.trailers = nil
        flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
        let rv = withNameValues(trailers) { nva, fieldCount in
          nghttp2_submit_trailer(session, streamID, nva, fieldCount)
        }
        if rv != 0 { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
      }
    } else if count == 0 {
      state.providerDeferred = true
      return Int(NGHTTP2_ERR_DEFERRED.rawValue)
    }
    return count
  }
}
