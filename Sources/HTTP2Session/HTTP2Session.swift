// Sources/HTTP2Session/HTTP2Session.swift - nghttp2 as a sans-I/O HTTP/2 engine: bytes in, events and bytes out
//
// The session owns one `nghttp2_session` and never touches a socket: the
// transport feeds it received bytes with `receive(_:)`, learns what happened
// through the delegate, and collects the frames to send with
// `drainOutput(into:)` or `withPendingOutput(_:)`, all on the one thread that
// owns the connection.

internal import CNGHTTP2

/// One HTTP/2 connection's protocol state, client or server side, driven by its owner with bytes.
///
/// ### Driving a session
///
/// ```swift
/// let session = try HTTP2Session(role: .client, delegate: connection)
/// let id = try session.submitRequest(headers: requestHeaders, body: message, endStream: true)
/// // each event-loop turn:
/// try session.receive(bytesReadFromSocket)          // delegate callbacks happen in here
/// session.drainOutput(into: &writeBuffer)         // every pending frame, for one write
/// if !session.wantsRead && !session.wantsWrite { close() }
/// ```
///
/// ### Threading
///
/// A session is confined to one thread (an event loop) by its owner: it takes
/// no locks and is not `Sendable`. Delegate callbacks run synchronously on that
/// thread, inside ``receive(_:)``, ``drainOutput(into:)`` and ``withPendingOutput(_:)``.
///
/// ### Flow control
///
/// Flow control is manual (`nghttp2_option_set_no_auto_window_update`): received
/// DATA counts against the stream and connection windows until the consumer calls
/// ``consume(streamID:bytes:)``, and only then do WINDOW_UPDATE frames go out. A
/// slow consumer therefore slows the peer instead of growing buffers. Outbound
/// data waits in a per-stream queue (``outboundBufferedBytes(streamID:)``) and is
/// framed only as the peer's windows allow.
///
/// ### Validation
///
/// nghttp2's HTTP messaging checks stay on: a response without `:status`, pseudo-header
/// fields in trailers, an uppercase header name or a content-length mismatch resets
/// the stream with PROTOCOL_ERROR, which arrives as
/// ``HTTP2SessionDelegate/session(_:streamDidClose:errorCode:)``.
public final class HTTP2Session {
  /// Which end of the connection the session plays.
  public enum Role: Sendable, Hashable {
    /// Sends the connection preface and opens odd-numbered streams with
    /// ``HTTP2Session/submitRequest(headers:body:endStream:)``.
    case client
    /// Expects the client preface and answers the streams the client opens.
    case server
  }

  /// Whether the session is the client or the server end.
  public let role: Role
  /// The settings this session announced and applies to what it receives.
  public let localSettings: HTTP2Settings
  /// How many bytes of output ``withPendingOutput(_:)`` gathers at most before handing them over.
  ///
  /// nghttp2 produces one frame at a time; the session keeps asking for frames
  /// until none are left or this many bytes are buffered, so one write carries many frames.
  public var outputBatchLimit: Int = 256 * 1024

  /// Not retained, and not checked: the delegate must outlive the session.
  ///
  /// The usual owner is the connection object that is both the session's
  /// delegate and its owner, so a strong reference would be a cycle and a weak
  /// one would cost an atomic operation per callback on the receive path.
  unowned(unsafe) let delegate: any HTTP2SessionDelegate
  /// The `nghttp2_session *`, created in `init` and deleted in `deinit`.
  let session: OpaquePointer

  /// Every stream opened or submitted and not yet closed, keyed by stream ID.
  var streams: [Int32: StreamState] = [:]
  /// Fields of the header block being received; nghttp2 decodes one block at a time.
  var headerBlock: [HTTP2HeaderField] = []
  /// What the `:status` field of the block being received says, if it has one.
  var headerBlockStatus = HeaderBlockStatus.none
  /// The size of the block being received so far, as SETTINGS_MAX_HEADER_LIST_SIZE counts it.
  var headerBlockSize = 0
  /// Reused storage for the names and values of a header block being submitted.
  var nameValueBytes: [UInt8] = []
  /// Reused `nghttp2_nv` array pointing into `nameValueBytes`.
  var nameValues: [nghttp2_nv] = []
  /// Frames taken from nghttp2 and not yet written; the unwritten part starts at `outputHead`.
  var output: [UInt8] = []
  /// Index of the first unwritten byte in `output`.
  var outputHead = 0
  /// GOAWAY frames the application submitted that nghttp2 has not sent yet.
  var pendingLocalGoAways = 0
  /// The error that ended the session, thrown again by every later ``receive(_:)``.
  var terminalError: HTTP2SessionError?
  /// `nghttp2_session_mem_send` failed fatally; nothing more can be produced.
  var outputFailed = false
  /// Set while nghttp2 or an output body runs, to catch re-entrant `receive` and output calls.
  var isBusy = false
  /// Frames in a row from the peer that carried nothing (``HTTP2Limits/maxFramesWithoutContent``).
  var framesWithoutContent = 0

  /// Creates a session and queues its first SETTINGS frame (and, for a client, the connection preface).
  ///
  /// - Parameters:
  ///   - role: client or server.
  ///   - settings: the settings to announce; the connection window is enlarged to
  ///     `settings.connectionWindowSize` with a WINDOW_UPDATE.
  ///   - delegate: receives the session's events. **Held `unowned(unsafe)`**: it is not
  ///     retained and must stay alive as long as the session does.
  /// - Throws: ``HTTP2SessionError`` with ``HTTP2SessionError/Codes/invalidArgument`` for
  ///   out-of-range settings, or an allocation failure from nghttp2.
  public init(role: Role, settings: HTTP2Settings = .init(), delegate: any HTTP2SessionDelegate)
    throws(HTTP2SessionError)
  {
    let maxWindow = UInt32(Int32.max)
    guard settings.initialWindowSize <= maxWindow, settings.connectionWindowSize <= maxWindow else {
      throw HTTP2SessionError(code: HTTP2SessionError.Codes.invalidArgument, message: "window size above 2^31-1")
    }
    var callbacks: OpaquePointer?
    var rv = nghttp2_session_callbacks_new(&callbacks)
    guard rv == 0, let callbacks else { throw HTTP2SessionError(code: rv) }
    defer { nghttp2_session_callbacks_del(callbacks) }
    Self.registerCallbacks(callbacks)

    var option: OpaquePointer?
    rv = nghttp2_option_new(&option)
    guard rv == 0, let option else { throw HTTP2SessionError(code: rv) }
    defer { nghttp2_option_del(option) }
    nghttp2_option_set_no_auto_window_update(option, 1)
    let limits = settings.limits
    guard limits.maxSettingsEntries > 0, limits.maxOutboundAcks > 0, limits.maxSendHeaderBlockLength > 0,
      limits.maxContinuations >= 0, limits.streamResetBurst > 0, limits.streamResetRatePerSecond > 0
    else {
      throw HTTP2SessionError(code: HTTP2SessionError.Codes.invalidArgument, message: "HTTP2Limits must be positive")
    }
    nghttp2_option_set_max_settings(option, limits.maxSettingsEntries)
    nghttp2_option_set_max_outbound_ack(option, limits.maxOutboundAcks)
    nghttp2_option_set_max_send_header_block_length(option, limits.maxSendHeaderBlockLength)
    // Backported into Debian's 1.52.0-1+deb12u2 (upstream 1.61): building against an unpatched
    // 1.52 fails here, which is the point: that library has no CONTINUATION-flood limit.
    nghttp2_option_set_max_continuations(option, limits.maxContinuations)
    nghttp2_option_set_stream_reset_rate_limit(
      option, UInt64(limits.streamResetBurst), UInt64(limits.streamResetRatePerSecond))

    // user_data is set below, once `self` is fully initialised; no callback runs before then.
    var created: OpaquePointer?
    switch role {
    case .client: rv = nghttp2_session_client_new2(&created, callbacks, nil, option)
    case .server: rv = nghttp2_session_server_new2(&created, callbacks, nil, option)
    }
    guard rv == 0, let created else { throw HTTP2SessionError(code: rv) }

    self.role = role
    self.localSettings = settings
    self.delegate = delegate
    self.session = created
    // Unmanaged without a retain: nghttp2 only uses user_data during calls made by this object,
    // and the session is deleted in deinit, so the pointer never outlives `self`.
    nghttp2_session_set_user_data(created, Unmanaged.passUnretained(self).toOpaque())
    try submitInitialSettings()
  }

  deinit {
    // Runs no callbacks (nghttp2 frees queued items silently), so the delegate may already be gone.
    nghttp2_session_del(session)
  }

  /// Queues the first SETTINGS frame and the connection-level WINDOW_UPDATE.
  private func submitInitialSettings() throws(HTTP2SessionError) {
    func entry(_ id: nghttp2_settings_id, _ value: UInt32) -> nghttp2_settings_entry {
      nghttp2_settings_entry(settings_id: Int32(id.rawValue), value: value)
    }
    var entries: [nghttp2_settings_entry] = []
    if role == .client {
      // RFC 9113 §6.5.2: only a client may announce ENABLE_PUSH other than absent.
      entries.append(entry(NGHTTP2_SETTINGS_ENABLE_PUSH, localSettings.enablePush ? 1 : 0))
    }
    if let limit = localSettings.maxConcurrentStreams {
      entries.append(entry(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limit))
    }
    entries.append(entry(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, localSettings.initialWindowSize))
    if localSettings.maxFrameSize != 16_384 {
      entries.append(entry(NGHTTP2_SETTINGS_MAX_FRAME_SIZE, localSettings.maxFrameSize))
    }
    if let limit = localSettings.maxHeaderListSize {
      entries.append(entry(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, limit))
    }
    var rv = nghttp2_submit_settings(session, Flag.none, entries, entries.count)
    guard rv == 0 else { throw HTTP2SessionError(code: rv) }
    rv = nghttp2_session_set_local_window_size(session, Flag.none, 0, Int32(localSettings.connectionWindowSize))
    guard rv == 0 else { throw HTTP2SessionError(code: rv) }
  }

  // MARK: - Input

  /// Processes bytes received from the peer; the delegate hears about every complete frame in them.
  ///
  /// Partial frames are kept inside nghttp2 until the rest arrives, so any split of
  /// the byte stream works. Frames nghttp2 queues in reply (SETTINGS and PING
  /// acknowledgements, RST_STREAM, GOAWAY) are gathered into the pending output.
  ///
  /// - Throws: ``HTTP2SessionError`` when the connection cannot continue: a bad client
  ///   preface (``HTTP2SessionError/Codes/badClientMagic``), a connection-level protocol
  ///   violation nghttp2 detected (``HTTP2SessionError/Codes/protocolError`` and
  ///   relatives, with the GOAWAY's code and reason in the message), flooding or a
  ///   callback failure. The session then holds a GOAWAY to send; send it and close.
  ///   Once thrown, the same error is thrown by every later call. Streams still open are
  ///   not reported closed after that: the owner fails them itself.
  public func receive(_ bytes: UnsafeRawBufferPointer) throws(HTTP2SessionError) {
    precondition(!isBusy, "HTTP2Session.receive(_:) called re-entrantly from a delegate callback or output body")
    if let terminalError { throw terminalError }
    guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
    let queuedBefore = nghttp2_session_get_outbound_queue_size(session)
    isBusy = true
    // Safe: nghttp2 reads exactly `bytes.count` bytes, during this call only.
    let result = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
    isBusy = false
    if result < 0 {
      let error = terminalError ?? HTTP2SessionError(code: Int32(truncatingIfNeeded: result))
      terminalError = error
      // nghttp2 returns fatal errors (bad preface, flooding) without queueing a GOAWAY; queue one.
      _ = nghttp2_session_terminate_session(session, HTTP2ErrorCode.protocolError.rawValue)
      collectOutput()
      throw error
    }
    // A connection error makes nghttp2 queue a GOAWAY and ignore further input while
    // mem_recv still reports success; the GOAWAY is recognised when taken from the queue.
    if nghttp2_session_get_outbound_queue_size(session) > queuedBefore {
      collectOutput()
    }
    if let terminalError { throw terminalError }
  }

  // MARK: - Output

  /// Gathers the frames nghttp2 has ready and lends the unwritten bytes to `body`, which returns how many it wrote.
  ///
  /// Bytes `body` did not take stay buffered, in order, and are offered first next
  /// time, so a partial or refused write (EAGAIN, TLS want-write) needs no copy on the
  /// caller's side. `body` is not called when there is nothing to send. The buffer is
  /// reused across calls, so steady-state output allocates nothing.
  ///
  /// Delegate callbacks may run while frames are gathered (a stream closes when the
  /// frame ending it is produced). `body` must not call back into this session.
  ///
  /// Use this when writes may be partial and the buffer should stay here; use
  /// ``drainOutput(into:)`` to move everything into a buffer of your own.
  ///
  /// - Returns: the number of bytes `body` reported written (0 when it was not called).
  @discardableResult
  public func withPendingOutput<E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> Int) throws(E) -> Int {
    precondition(!isBusy, "HTTP2Session.withPendingOutput(_:) called re-entrantly")
    collectOutput()
    let pending = output.count - outputHead
    guard pending > 0 else { return 0 }
    isBusy = true
    let head = outputHead
    let outcome = output.withUnsafeBytes { buffer in
      Result { () throws(E) -> Int in try body(UnsafeRawBufferPointer(rebasing: buffer[head...])) }
    }
    isBusy = false
    let written = try outcome.get()
    precondition(written >= 0 && written <= pending, "withPendingOutput body reported \(written) of \(pending) bytes")
    outputHead += written
    if outputHead == output.count {
      output.removeAll(keepingCapacity: true)
      outputHead = 0
    }
    return written
  }

  /// Appends every byte the session has to send to `buffer` and returns how many were appended.
  ///
  /// Bytes already gathered come first, then every frame nghttp2 can produce now, without a
  /// batch limit (flow control bounds DATA), appended straight into `buffer`: reuse it across
  /// loop turns (`removeAll(keepingCapacity: true)`) and output allocates nothing in steady
  /// state. Delegate callbacks may run meanwhile; they must not touch `buffer`.
  ///
  /// This and ``withPendingOutput(_:)`` are two views of the same output; use either.
  @discardableResult
  public func drainOutput(into buffer: inout [UInt8]) -> Int {
    precondition(!isBusy, "HTTP2Session.drainOutput(into:) called re-entrantly")
    let start = buffer.count
    if outputHead < output.count {
      buffer.append(contentsOf: output[outputHead...])
    }
    output.removeAll(keepingCapacity: true)
    outputHead = 0
    guard !outputFailed else { return buffer.count - start }
    isBusy = true
    defer { isBusy = false }
    while true {
      var chunk: UnsafePointer<UInt8>?
      let count = nghttp2_session_mem_send(session, &chunk)
      if count < 0 {
        recordOutputFailure(count)
        break
      }
      guard count > 0, let chunk else { break }
      // Safe: nghttp2 keeps `chunk` valid until its next call on this session; it is copied right away.
      buffer.append(contentsOf: UnsafeBufferPointer(start: chunk, count: count))
    }
    return buffer.count - start
  }

  /// Moves frames from nghttp2 into `output` until it has none or `outputBatchLimit` bytes wait.
  func collectOutput() {
    if outputHead > 0 {
      output.removeSubrange(0..<outputHead)
      outputHead = 0
    }
    guard !outputFailed else { return }
    isBusy = true
    defer { isBusy = false }
    while output.count < outputBatchLimit {
      var chunk: UnsafePointer<UInt8>?
      let count = nghttp2_session_mem_send(session, &chunk)
      if count < 0 {
        recordOutputFailure(count)
        return
      }
      guard count > 0, let chunk else { return }
      // Safe: nghttp2 keeps `chunk` valid until its next call on this session; it is copied right away.
      output.append(contentsOf: UnsafeBufferPointer(start: chunk, count: count))
    }
  }

  /// Marks output as failed after `nghttp2_session_mem_send` returned the fatal error `code`.
  private func recordOutputFailure(_ code: Int) {
    outputFailed = true
    if terminalError == nil { terminalError = HTTP2SessionError(code: Int32(truncatingIfNeeded: code)) }
  }

  /// The number of bytes already taken from nghttp2 and waiting to be written.
  public var pendingOutputCount: Int { output.count - outputHead }

  /// The error that ended the session (a connection error found in the peer's input, or a fatal
  /// output failure), once there is one; `nil` while the session is healthy or after a graceful end.
  public var terminationError: HTTP2SessionError? { terminalError }

  /// Whether the session still expects input. False once a GOAWAY has been sent or received
  /// and no stream is left, or after a fatal error.
  public var wantsRead: Bool {
    terminalError == nil && nghttp2_session_want_read(session) != 0
  }

  /// Whether the session has output: buffered bytes, or frames nghttp2 can produce now.
  ///
  /// When both ``wantsRead`` and ``wantsWrite`` are false the connection should be closed.
  public var wantsWrite: Bool {
    pendingOutputCount > 0 || (!outputFailed && nghttp2_session_want_write(session) != 0)
  }

  // MARK: - Connection state

  /// Whether a new request may be submitted (client role): false for a server, after a GOAWAY
  /// was sent or received, or when stream IDs have run out (`nghttp2_session_check_request_allowed`).
  public var isRequestAllowed: Bool {
    role == .client && nghttp2_session_check_request_allowed(session) != 0
  }

  /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS in force: how many streams this side may have open.
  ///
  /// Before the peer's first SETTINGS arrives nghttp2 assumes 100.
  public var remoteMaxConcurrentStreams: UInt32 {
    nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
  }

  /// Streams not yet closed: requests submitted (sent or still queued) on a client, requests
  /// received on a server.
  public var activeStreamCount: Int { streams.count }

  /// The highest peer-initiated stream ID the session has processed a frame for: the value a
  /// graceful GOAWAY announces.
  public var lastProcessedStreamID: Int32 { nghttp2_session_get_last_proc_stream_id(session) }

  /// Whether `streamID` is open from the session's point of view (submitted or received, not yet closed).
  public func isStreamActive(_ streamID: Int32) -> Bool { streams[streamID] != nil }

  /// Whether this side's END_STREAM (or a RST_STREAM) has gone out on `streamID`: false while
  /// queued request or response data still waits for flow-control window, and for a stream
  /// nghttp2 has not opened yet (its HEADERS still queued).
  public func hasClosedLocalSide(_ streamID: Int32) -> Bool {
    nghttp2_session_get_stream_local_close(session, streamID) == 1
  }
}

@available(*, unavailable, message: "an HTTP2Session is confined to the thread that owns its connection")
extension HTTP2Session: Sendable {}

/// What the `:status` pseudo-header of a header block being received announced.
enum HeaderBlockStatus {
  /// No `:status` field (yet): a request or trailers.
  case none
  /// `:status` is 1xx.
  case informational
  /// `:status` is 2xx or above.
  case final
}
