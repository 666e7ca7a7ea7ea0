// Sources/HTTP2Transport/ClientConnection.swift - one HTTP/2 client connection carrying gRPC calls
//
// A connection owns a ByteStream (TCP, maybe TLS) and an nghttp2 client
// session, and runs one GRPCClientCall state machine per stream, acting on the
// actions it returns. Its own lifecycle is one State enum. When it fails, the
// calls on it end UNAVAILABLE with the ConnectionError as the status's cause.
// Everything here runs on the channel's event loop: no locks.

import GRPCProtocol
import HTTP2Session
import Logging
import Primitives

#if canImport(Glibc)
  import Glibc
#endif

/// A call waiting for, or carried by, a stream.
final class PendingCall {
  let id: UInt64
  let path: String
  let kind: GRPCCallKind
  let options: CallOptions
  let handler: any GRPCCallHandler
  /// The handler again when it takes messages undecoded and returns window itself (manual flow control).
  let receiver: (any GRPCMessageReceiver)?
  /// Monotonic deadline in nanoseconds, if the call has a timeout.
  let deadline: UInt64?
  /// The `grpc-encoding` of the request messages (identity: none).
  let requestEncoding: GRPCCompressionAlgorithm
  /// The one framed request of a unary or server-streaming call, kept for a transparent retry.
  let singleRequest: [UInt8]?
  /// Framed request bytes written before the call had a stream (request-streaming calls).
  var outbound: [UInt8] = []
  /// The request side is complete: END_STREAM follows the bytes already given.
  var requestEnded: Bool
  /// Request bytes or the end were handed to a stream: a retry could not resend them.
  var requestHandedOver = false
  /// Writers waiting for the buffered request bytes to drain, resumed with `nil` (go on) or
  /// the call's final status (it ended).
  var writeWaiters: [CheckedContinuation<GRPCStatus?, Never>] = []
  /// Transparent retries left (a stream refused before the server saw it).
  var retriesLeft = 1
  /// The stream carrying the call, once it has one.
  var streamID: Int32?
  var deadlineTimer: EventLoop.TimerID?
  var finished = false
  /// The status the call ended with, for writers that come later.
  var finalStatus: GRPCStatus?

  /// A call with a single request (`request` unframed) or, for request-streaming kinds, none yet.
  init(
    id: UInt64, path: String, kind: GRPCCallKind, singleRequest: [UInt8]?, options: CallOptions,
    handler: any GRPCCallHandler, receiver: (any GRPCMessageReceiver)?, deadline: UInt64?,
    requestEncoding: GRPCCompressionAlgorithm
  ) {
    self.id = id
    self.path = path
    self.kind = kind
    self.singleRequest = singleRequest
    self.requestEnded = singleRequest != nil
    self.options = options
    self.handler = handler
    self.receiver = receiver
    self.deadline = deadline
    self.requestEncoding = requestEncoding
  }

  /// Resumes every waiting writer: with `nil` while the call goes on, with the final status once it ended.
  func resumeWriters(_ status: GRPCStatus?) {
    let waiters = writeWaiters
    writeWaiters.removeAll()
    for waiter in waiters { waiter.resume(returning: status) }
  }
}

/// What a connection tells the channel. Called on the loop thread.
protocol ClientConnectionDelegate: AnyObject {
  func connectionDidBecomeReady(_ connection: ClientConnection)
  func connectionHasCapacity(_ connection: ClientConnection)
  /// The connection closed: `error` says why, `nil` for a clean close (drained, or shut down while
  /// connecting); `wasReady` whether it had become ready.
  func connection(_ connection: ClientConnection, didCloseWithError error: ConnectionError?, wasReady: Bool)
  func connection(_ connection: ClientConnection, didFinish call: PendingCall)
  func connection(_ connection: ClientConnection, retry call: PendingCall)
  func connectionDidCountPing(_ connection: ClientConnection, ack: Bool)
  /// The keepalive interval in force (the configured one, doubled after each `too_many_pings`).
  var keepaliveInterval: Duration? { get }
  /// The server answered our pings with GOAWAY ENHANCE_YOUR_CALM "too_many_pings".
  func connectionReceivedTooManyPings(_ connection: ClientConnection)
  /// The server sent GOAWAY: counted for stats; the connection drains (a reason to resolve the
  /// target again).
  func connectionReceivedGoAway(_ connection: ClientConnection)
  /// The server listed the encodings it accepts (`grpc-accept-encoding`).
  func connection(_ connection: ClientConnection, serverAcceptsEncodings encodings: [String])
}

/// One HTTP/2 connection to the target. Confined to the channel's loop.
final class ClientConnection: ByteStreamDelegate, HTTP2SessionDelegate {
  /// Where the connection is. Every fact about its lifecycle lives here, in the case it belongs to.
  ///
  /// ```
  /// connecting ──SETTINGS allow a stream──▶ ready
  ///   │   │                                   │ GOAWAY received or sent, stream IDs used up
  ///   │   └──GOAWAY received────────────────▶ draining ──no stream left: close after this event──┐
  ///   │                                                                                         ▼
  ///   └──connect timeout, failure, shutdown──▶ closing (last frames out, socket closed) ──▶ closed
  /// ```
  /// Any state but closed can fail straight to closed (the socket closed, a read failed).
  enum State {
    /// TCP connect, TLS handshake, then the HTTP/2 preface, until the server's SETTINGS allow a
    /// stream. `serverAllowsNoStreams`: SETTINGS came with MAX_CONCURRENT_STREAMS = 0; the connect
    /// timer keeps running until a later SETTINGS raises the limit.
    case connecting(serverAllowsNoStreams: Bool)
    /// Calls may start streams.
    case ready
    /// No new stream starts: a GOAWAY came or went, or the stream IDs ran out. The open streams
    /// finish, then the connection closes.
    case draining(Drain)
    /// ``close(error:)`` is under way: the last frames go out and the socket closes, then the calls
    /// fail. `wasReady` is what the close reports.
    case closing(wasReady: Bool)
    /// Closed and reported; nothing happens any more.
    case closed
  }

  /// What a draining connection knows.
  struct Drain {
    /// Whether the connection had become ready (a GOAWAY may come before SETTINGS allowed a stream;
    /// such a connection counts as a failed attempt).
    var wasReady: Bool
    /// The server's GOAWAY, if one came: why the calls still open fail if the server then closes
    /// the connection.
    var goAway: ConnectionError?
    /// No stream is left and the close runs right after the current event (often inside an nghttp2
    /// callback, where the session cannot produce output yet).
    var closeScheduled = false
  }

  /// Where the connection is, as the pool counts connections.
  enum Phase {
    case connecting, ready, draining, closed
  }

  /// Per-stream state. A class, so the state machine (and its deframer buffer) is
  /// mutated in place rather than copied out of and back into the dictionary per event.
  private final class ActiveStream {
    let call: PendingCall
    var machine: GRPCClientCall
    // Manual flow control (the stream's receive window), in wire bytes:
    /// Received and not yet returned to the window.
    var unreleasedBytes = 0
    /// Bytes of the message being assembled that are still held.
    var partialHeld = 0
    /// Bytes of the message being assembled that were returned early (so it can complete).
    var partialReleased = 0
    /// Bytes returned early for messages now complete and queued for the consumer, to be
    /// withheld from what the consumer returns until paid back.
    var completedDebt = 0

    init(call: PendingCall, machine: GRPCClientCall) {
      self.call = call
      self.machine = machine
    }
  }

  /// A writer waits once this many request bytes of its call are queued and not yet sent.
  static let requestBufferLimit = 64 << 10

  let loop: EventLoop
  let id: Int
  let address: SocketAddress
  private var state: State = .connecting(serverAllowsNoStreams: false)
  weak var delegate: (any ClientConnectionDelegate)?
  private let configuration: GRPCChannelConfiguration
  private let authority: String
  private let scheme: String
  private var logger: Logger

  private var stream: ByteStream?
  private var session: HTTP2Session?
  private var streams: [Int32: ActiveStream] = [:]
  /// Streams with writers waiting for their queued request bytes to drain.
  private var streamsWithWaitingWriters: Set<Int32> = []
  /// Output coalescing, not lifecycle: a flush is queued for the end of the current event, in any
  /// state (the flush itself checks whether there is a session and an open stream).
  private var flushScheduled = false
  private var keepaliveTimer: EventLoop.TimerID?
  private var keepaliveTimeoutTimer: EventLoop.TimerID?
  /// When bytes last arrived from the server (monotonic nanoseconds).
  private var lastReadTime: UInt64 = 0
  private var connectTimer: EventLoop.TimerID?

  /// Streams open on this connection.
  var activeStreamCount: Int { streams.count }

  /// Whether a new call can get a stream now.
  var canStartStream: Bool {
    guard case .ready = state, let session, session.isRequestAllowed else { return false }
    return streams.count < Int(min(session.remoteMaxConcurrentStreams, UInt32(Int32.max)))
  }

  /// The state as the pool sees it: draining and closing connections take no call and are not closed yet.
  var phase: Phase {
    switch state {
    case .connecting: .connecting
    case .ready: .ready
    case .draining, .closing: .draining
    case .closed: .closed
    }
  }

  /// Whether the connection had become ready, for the report of its close.
  private var wasReady: Bool {
    switch state {
    case .connecting, .closed: false
    case .ready: true
    case .draining(let drain): drain.wasReady
    case .closing(let wasReady): wasReady
    }
  }

  init(
    loop: EventLoop, id: Int, address: SocketAddress, authority: String, configuration: GRPCChannelConfiguration,
    logger: Logger
  ) {
    self.loop = loop
    self.id = id
    self.address = address
    self.authority = authority
    self.configuration = configuration
    self.logger = logger
    self.logger[metadataKey: "grpc.connection"] = "\(id)"
    if case .plaintext = configuration.security { scheme = "http" } else { scheme = "https" }
  }

  // MARK: - Connecting

  /// Starts the TCP connect (and TLS). Loop thread only.
  func connect(tlsContext: TLSContext?, serverName: String?) {
    loop.assertInEventLoop()
    let fd: Int32
    do {
      fd = try Socket.makeNonBlocking(family: address.family)
    } catch {
      fail(.io(operation: "socket", errno: error.errnoCode), wasReady: false)
      return
    }
    var tls: TLSEngine?
    if let tlsContext {
      do {
        tls = try TLSEngine(context: tlsContext, serverName: serverName)
      } catch {
        Glibc.close(fd)
        fail(.tlsHandshakeFailed(reason: error.description), wasReady: false)
        return
      }
    }
    let done: Bool
    do {
      done = try Socket.connect(fd, to: address)
    } catch {
      Glibc.close(fd)
      fail(.connectFailed(to: address.description, errno: error.errnoCode), wasReady: false)
      return
    }
    let byteStream = ByteStream(loop: loop, fd: fd, tls: tls, connecting: !done, peer: address.description)
    byteStream.delegate = self
    stream = byteStream
    let timeout = configuration.connectTimeout
    connectTimer = loop.scheduleTimer(after: timeout) { [weak self] in
      guard let self, case .connecting(let serverAllowsNoStreams) = self.state else { return }
      if serverAllowsNoStreams {
        self.close(error: .noStreamsAllowed(waited: timeout))
      } else {
        self.stream?.close(error: .connectTimedOut(address: self.address.description))
      }
    }
    byteStream.start()
  }

  func byteStreamDidBecomeReady(_ stream: ByteStream) {
    do {
      let session = try HTTP2Session(role: .client, settings: configuration.http2Settings, delegate: self)
      self.session = session
      // The preface and SETTINGS go out now; the connection counts as ready once the
      // server's SETTINGS arrive (its stream limit is known then).
      scheduleFlush()
    } catch {
      stream.close(error: .internalError("starting the HTTP/2 session: \(error)"))
    }
  }

  // MARK: - Calls

  /// Opens a stream for `call`. Precondition: `canStartStream`.
  func start(_ call: PendingCall) {
    loop.assertInEventLoop()
    guard let session else {
      delegate?.connection(self, retry: call)
      return
    }
    let head = GRPCRequestHead(
      path: call.path,
      authority: call.options.authority ?? authority,
      scheme: scheme,
      timeout: call.deadline.map { remainingDuration(until: $0) },
      metadata: call.options.metadata,
      encoding: call.requestEncoding,
      acceptEncodings: configuration.compression.acceptedEncodings
    )
    let headers = head.headerFields().map { HTTP2HeaderField($0.name, $0.value) }
    // A request-streaming call always gets a data provider, so even an empty request ends with
    // an empty DATA frame carrying END_STREAM rather than END_STREAM on HEADERS: grpc-go's
    // server (1.33) never sees the end of a streaming request that came in HEADERS alone.
    let body: [UInt8] = call.singleRequest ?? call.outbound
    let streamID: Int32
    do {
      streamID = try session.submitRequest(headers: headers, body: body, endStream: call.requestEnded)
    } catch {
      // Stream IDs exhausted or the session is going away: let the channel place it elsewhere.
      drain(goAway: nil)
      delegate?.connection(self, retry: call)
      return
    }
    if call.singleRequest == nil {
      call.requestHandedOver = call.requestHandedOver || !body.isEmpty || call.requestEnded
      call.outbound = []
    }
    let maxSize = call.options.maxReceiveMessageSize ?? configuration.maxReceiveMessageSize
    call.streamID = streamID
    streams[streamID] = ActiveStream(
      call: call,
      machine: GRPCClientCall(
        kind: call.kind, maxReceiveMessageSize: maxSize,
        acceptedEncodings: configuration.compression.acceptedEncodings))
    if !call.writeWaiters.isEmpty { streamsWithWaitingWriters.insert(streamID) }
    scheduleFlush()
  }

  /// Cancels the call on `streamID` with `status` (CANCELLED or DEADLINE_EXCEEDED).
  func cancel(streamID: Int32, deadline: Bool) {
    guard let active = streams[streamID] else { return }
    let action = deadline ? active.machine.deadlineExceeded() : active.machine.cancel()
    perform(action, streamID: streamID, remoteEnded: false)
  }

  /// Ends the call on `streamID` with `status` found by its consumer (RST_STREAM(CANCEL)).
  func abort(streamID: Int32, status: GRPCStatus) {
    guard let active = streams[streamID] else { return }
    perform(active.machine.abort(status), streamID: streamID, remoteEnded: false)
  }

  /// Returns the window of messages the consumer took (their full wire sizes) to a manually
  /// flow-controlled stream: first paying back what was returned early for them.
  func release(streamID: Int32, bytes: Int) {
    guard let session, let active = streams[streamID] else { return }
    let paid = min(bytes, active.completedDebt)
    active.completedDebt -= paid
    let released = min(bytes - paid, active.unreleasedBytes)
    if released > 0 {
      active.unreleasedBytes -= released
      session.consumeStream(streamID: streamID, bytes: released)
    }
    releasePartialIfClear(active, streamID: streamID, session: session)
    scheduleFlush()
  }

  /// Returns the held bytes of the message being assembled at once, unless window returned
  /// early for earlier messages is still owed: a message larger than the window can then
  /// complete, while the bytes buffered for the consumer stay within about one window plus
  /// one message.
  private func releasePartialIfClear(_ active: ActiveStream, streamID: Int32, session: HTTP2Session) {
    guard active.completedDebt == 0, active.partialHeld > 0 else { return }
    let early = min(active.partialHeld, active.unreleasedBytes)
    active.partialHeld = 0
    active.partialReleased += early
    active.unreleasedBytes -= early
    session.consumeStream(streamID: streamID, bytes: early)
  }

  /// Queues framed request bytes (and the end of the request with `end`) on `streamID`.
  /// `waiter`, if given, is resumed once the stream's unsent request bytes are within
  /// ``requestBufferLimit`` (at once if they already are), or when the call ends.
  func write(
    streamID: Int32, bytes: [UInt8], end: Bool, waiter: CheckedContinuation<GRPCStatus?, Never>?
  ) {
    guard let session, let active = streams[streamID] else {
      waiter?.resume(returning: GRPCStatus(code: .unavailable, message: "the call's stream is gone"))
      return
    }
    if !bytes.isEmpty || end {
      active.call.requestHandedOver = true
      let sent = bytes.withUnsafeBytes { raw in
        Result { () throws(HTTP2SessionError) in try session.sendData(streamID: streamID, bytes: raw, endStream: end) }
      }
      if case .failure(let error) = sent {
        // This side already ended the stream (a second finish, or the stream was reset): nothing to send.
        logger.trace("request data not sent", metadata: ["stream": "\(streamID)", "error": "\(error.message)"])
      }
      scheduleFlush()
    }
    guard let waiter else { return }
    if session.outboundBufferedBytes(streamID: streamID) <= Self.requestBufferLimit {
      waiter.resume(returning: nil)
    } else {
      active.call.writeWaiters.append(waiter)
      streamsWithWaitingWriters.insert(streamID)
    }
  }

  private func remainingDuration(until deadline: UInt64) -> Duration {
    let now = monotonicNanoseconds()
    let nanos = deadline > now ? deadline - now : 1
    return .nanoseconds(Int64(clamping: nanos))
  }

  // MARK: - HTTP/2 events

  func session(
    _ session: HTTP2Session, didReceiveHeaders headers: [HTTP2HeaderField], kind: HTTP2HeadersKind, streamID: Int32,
    endStream: Bool
  ) {
    guard let active = streams[streamID] else { return }
    let fields = headers.map { (name: $0.name, value: $0.value) }
    // The machine says whether the block is the response headers (.deliverHeaders), a
    // Trailers-Only response or the trailers (a status), or nothing to act on (1xx).
    let acceptedBefore = active.machine.serverAcceptedEncodings
    let action = active.machine.receiveHeaders(fields, endStream: endStream)
    if let accepted = active.machine.serverAcceptedEncodings, accepted != acceptedBefore {
      delegate?.connection(self, serverAcceptsEncodings: accepted)
    }
    perform(action, streamID: streamID, remoteEnded: endStream)
  }

  func session(_ session: HTTP2Session, didReceiveData data: UnsafeRawBufferPointer, streamID: Int32) {
    guard let active = streams[streamID] else {
      session.consume(streamID: streamID, bytes: data.count)
      return
    }
    let action: GRPCClientCall.Action
    if let receiver = active.call.receiver {
      // Manual flow control: the connection window reopens now so other streams keep flowing;
      // this stream's window reopens as the consumer takes messages (release(streamID:bytes:)),
      // each returning its whole wire size. A message still being assembled is returned early
      // when nothing is owed (releasePartialIfClear), so one larger than the window completes.
      active.unreleasedBytes += data.count
      var firstInChunk = true
      var consumed = 0
      action = active.machine.receiveMessages(data, endStream: false) { message in
        var wireSize = message.windowBytes
        if firstInChunk {
          // The message begun in earlier chunks: its held and early-returned bytes are its too.
          wireSize += active.partialHeld + active.partialReleased
          active.completedDebt += active.partialReleased
          active.partialHeld = 0
          active.partialReleased = 0
          firstInChunk = false
        }
        consumed += message.windowBytes
        receiver.callDidReceive(message.bytes, compression: message.compression, windowBytes: wireSize)
      }
      active.partialHeld += data.count - consumed
      session.consumeConnection(bytes: data.count)
      releasePartialIfClear(active, streamID: streamID, session: session)
    } else {
      let handler = active.call.handler
      action = active.machine.receiveData(data, endStream: false) { message, compression in
        handler.callDidReceiveMessage(message, compression: compression)
      }
      session.consume(streamID: streamID, bytes: data.count)
    }
    perform(action, streamID: streamID, remoteEnded: false)
  }

  func session(_ session: HTTP2Session, didReceiveEndOfStream streamID: Int32) {
    guard let active = streams[streamID] else { return }
    let action = active.machine.receiveData(UnsafeRawBufferPointer(start: nil, count: 0), endStream: true) { _ in }
    perform(action, streamID: streamID, remoteEnded: true)
  }

  func session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
    guard let active = streams[streamID] else { return }
    // A stream the server refused (REFUSED_STREAM, or above a GOAWAY's last stream id) before
    // any response comes back as .retryOrFinish: perform retries it once on another
    // connection, if its request can be sent again.
    let action = active.machine.streamClosed(http2ErrorCode: errorCode.rawValue)
    perform(action, streamID: streamID, remoteEnded: true)
    // Closed by the session: the stream is gone now. The machine decides a status for every
    // close it has not decided before, so this is only a guard against a call left hanging.
    if let still = streams.removeValue(forKey: streamID) {
      streamsWithWaitingWriters.remove(streamID)
      finish(still.call, status: GRPCStatus(code: .internalError, message: "stream closed"), trailers: GRPCMetadata())
      afterStreamClosed()
    }
  }

  func session(
    _ session: HTTP2Session, didReceiveGoAway lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: [UInt8]
  ) {
    logger.debug(
      "GOAWAY received", metadata: ["last_stream_id": "\(lastStreamID)", "error_code": "\(errorCode)"])
    delegate?.connectionReceivedGoAway(self)
    if errorCode == .enhanceYourCalm, debugData.elementsEqual("too_many_pings".utf8) {
      delegate?.connectionReceivedTooManyPings(self)
    }
    drain(goAway: .goAway(errorCode: errorCode, debugData: debugData))
    closeIfDrained()
  }

  func session(_ session: HTTP2Session, didReceiveSettings settings: HTTP2RemoteSettings) {
    switch state {
    case .connecting(let serverAllowedNoStreams):
      // A server that allows no stream is not ready: the connection stays connecting (its
      // connect timer running) until a later SETTINGS raises the limit.
      guard session.remoteMaxConcurrentStreams > 0 else {
        if !serverAllowedNoStreams {
          logger.debug("the server allows no streams (SETTINGS_MAX_CONCURRENT_STREAMS = 0); waiting")
        }
        state = .connecting(serverAllowsNoStreams: true)
        return
      }
      state = .ready
      if let connectTimer { loop.cancelTimer(connectTimer) }
      connectTimer = nil
      scheduleKeepalive()
      delegate?.connectionDidBecomeReady(self)
    case .ready:
      delegate?.connectionHasCapacity(self)
    case .draining, .closing, .closed:
      break
    }
  }

  func session(_ session: HTTP2Session, didRefuseHeaderListOfSize size: Int, limit: Int, streamID: Int32) {
    // The session has already reset the stream (CANCEL); end the call with why, and drop it
    // here so the close that follows finds nothing to report.
    guard let active = streams.removeValue(forKey: streamID) else { return }
    streamsWithWaitingWriters.remove(streamID)
    let status = GRPCStatus(
      code: .resourceExhausted,
      message:
        "response header list of \(size) bytes exceeds the limit of \(limit) bytes (HTTP2Settings.maxHeaderListSize)")
    _ = active.machine.abort(status)
    finish(active.call, status: status, trailers: GRPCMetadata())
    scheduleFlush()
    afterStreamClosed()
  }

  func session(_ session: HTTP2Session, didReceivePingAck opaqueData: UInt64) {
    delegate?.connectionDidCountPing(self, ack: true)
    if let keepaliveTimeoutTimer { loop.cancelTimer(keepaliveTimeoutTimer) }
    keepaliveTimeoutTimer = nil
  }

  // MARK: - Acting on the state machine

  /// Carries out what the call's state machine decided for the stream: deliver the response
  /// headers, or end the call (resetting the stream where needed, or starting the call again
  /// elsewhere when the server refused the stream).
  private func perform(_ action: GRPCClientCall.Action, streamID: Int32, remoteEnded: Bool) {
    guard let active = streams[streamID] else { return }
    let status: GRPCStatus
    var mayRetry = false
    switch action {
    case .none:
      return
    case .deliverHeaders(let headers):
      active.call.handler.callDidReceiveHeaders(headers)
      return
    case .finish(let decided):
      status = decided
      if !remoteEnded {
        // The status came from a local check (a malformed response) while the server may
        // still be sending: cancel the stream.
        session?.resetStream(streamID, errorCode: .cancel)
      } else if let session, session.isStreamActive(streamID), !session.hasClosedLocalSide(streamID) {
        // The server completed the call while our request was still going out (flow control
        // held it, or the writer had not finished): end our side with RST_STREAM(NO_ERROR),
        // RFC 9113 §8.1, rather than leave the stream holding a slot.
        session.resetStream(streamID, errorCode: .noError)
      }
    case .resetAndFinish(let code, let decided):
      status = decided
      session?.resetStream(streamID, errorCode: HTTP2ErrorCode(rawValue: code))
    case .retryOrFinish(let decided):
      // The stream is closed already (refused): nothing to send on it.
      status = decided
      mayRetry = true
    }
    streams[streamID] = nil
    streamsWithWaitingWriters.remove(streamID)
    end(active, status: status, mayRetry: mayRetry)
    scheduleFlush()
    afterStreamClosed()
  }

  /// Ends the call of a stream already taken out of `streams`: starts it again on another
  /// stream when `mayRetry` and it has a retry left and its request can be sent again (the
  /// whole single request is kept, or nothing of a streamed one was handed over), else
  /// finishes it with `status`.
  private func end(_ active: ActiveStream, status: GRPCStatus, mayRetry: Bool) {
    let call = active.call
    if mayRetry, call.retriesLeft > 0, !call.requestHandedOver || call.singleRequest != nil {
      call.retriesLeft -= 1
      call.streamID = nil
      delegate?.connection(self, retry: call)
    } else {
      finish(call, status: status, trailers: active.machine.trailers)
    }
  }

  private func finish(_ call: PendingCall, status: GRPCStatus, trailers: GRPCMetadata) {
    guard !call.finished else { return }
    call.finished = true
    call.finalStatus = status
    if let timer = call.deadlineTimer { loop.cancelTimer(timer) }
    // The handler first: a writer woken by the end then finds the response ended too.
    call.handler.callDidFinish(status: status, trailers: trailers)
    call.resumeWriters(status)
    delegate?.connection(self, didFinish: call)
  }

  private func afterStreamClosed() {
    if case .ready = state {
      delegate?.connectionHasCapacity(self)
    }
    closeIfDrained()
  }

  /// Stops new streams: connecting or ready becomes draining; a draining connection learns of
  /// the server's GOAWAY (`goAway`) if it had none yet.
  private func drain(goAway: ConnectionError?) {
    switch state {
    case .connecting:
      state = .draining(Drain(wasReady: false, goAway: goAway))
    case .ready:
      state = .draining(Drain(wasReady: true, goAway: goAway))
    case .draining(var drain):
      guard drain.goAway == nil, let goAway else { return }
      drain.goAway = goAway
      state = .draining(drain)
    case .closing, .closed:
      break
    }
  }

  private func closeIfDrained() {
    guard case .draining(var drain) = state, !drain.closeScheduled, streams.isEmpty else { return }
    // Often called from inside an nghttp2 callback, where the session cannot produce output:
    // close right after the current event, when the last frames can still be flushed. No stream
    // can start meanwhile (only a ready connection takes one).
    drain.closeScheduled = true
    state = .draining(drain)
    loop.executeSoon { [weak self] in
      guard let self, case .draining = self.state, self.streams.isEmpty else { return }
      self.close(error: nil)
    }
  }

  // MARK: - Output

  /// Writes the session's pending frames once the current event has been handled,
  /// so all frames produced in one loop turn leave in one write.
  func scheduleFlush() {
    guard !flushScheduled else { return }
    flushScheduled = true
    loop.executeSoon { [weak self] in
      guard let self else { return }
      self.flushScheduled = false
      self.flushNow()
    }
  }

  private func flushNow() {
    flushOutput()
    resumeWritersWithRoom()
    if let session, stream?.isOpen == true, !session.wantsRead && !session.wantsWrite {
      if let error = session.terminationError {
        // A connection error nghttp2 found in the server's input and answered with GOAWAY.
        close(error: .protocolError(error))
      } else if case .draining = state {
        close(error: nil)
      } else {
        close(error: .internalError("the HTTP/2 session ended"))
      }
    }
  }

  /// Unsent output past which the connection leaves further frames in the session until the socket drains:
  /// a server that does not read cannot make the client buffer without bound. The client keeps reading
  /// meanwhile (unlike the server, which stops): what it reads adds no output but acknowledgements, which
  /// nghttp2 bounds, and a client that stopped reading too could deadlock with a server doing the same.
  static let maxOutboundBytes = 1 << 20

  /// Hands the frames nghttp2 has queued to the socket while its backlog is under ``maxOutboundBytes``
  /// (``ByteStream/writeOutput(of:limit:)``); the rest follows on ``byteStreamDidDrainOutput(_:)``.
  private func flushOutput() {
    guard let session, let stream, stream.isOpen else { return }
    _ = stream.writeOutput(of: session, limit: Self.maxOutboundBytes)
  }

  func byteStreamDidDrainOutput(_ stream: ByteStream) {
    scheduleFlush()
  }

  /// Wakes the writers of streams whose unsent request bytes went down to the limit.
  private func resumeWritersWithRoom() {
    guard !streamsWithWaitingWriters.isEmpty, let session else { return }
    for streamID in streamsWithWaitingWriters
    where session.outboundBufferedBytes(streamID: streamID) <= Self.requestBufferLimit {
      streamsWithWaitingWriters.remove(streamID)
      streams[streamID]?.call.resumeWriters(nil)
    }
  }

  // MARK: - ByteStream events

  func byteStream(_ stream: ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    guard let session else { return }
    if configuration.keepalive != nil { lastReadTime = monotonicNanoseconds() }
    if let keepaliveTimeoutTimer {
      // Anything from the server proves it alive, not only the PING's ACK.
      loop.cancelTimer(keepaliveTimeoutTimer)
      self.keepaliveTimeoutTimer = nil
    }
    do {
      try session.receive(bytes)
    } catch {
      // A protocol violation: nghttp2 queued a GOAWAY; close() sends it first, then closes, and the
      // calls on this connection fail UNAVAILABLE with this message. Other connections are untouched.
      logger.debug("closing the connection: the server broke HTTP/2", metadata: ["error": "\(error.message)"])
      close(error: .protocolError(error))
    }
  }

  func byteStreamDidFinishReading(_ stream: ByteStream) {
    scheduleFlush()
  }

  func byteStream(_ stream: ByteStream, didCloseWithError error: ConnectionError?) {
    // The server closing after its GOAWAY: the GOAWAY says more than the close.
    if error == .closedByPeer, case .draining(let drain) = state, let goAway = drain.goAway {
      fail(goAway, wasReady: drain.wasReady)
    } else {
      fail(error, wasReady: wasReady)
    }
  }

  // MARK: - Keepalive

  /// Arms the keepalive timer to fire `interval` after the last byte read (or now, at the start).
  private func scheduleKeepalive() {
    guard let keepalive = configuration.keepalive, let interval = delegate?.keepaliveInterval else { return }
    let now = monotonicNanoseconds()
    if lastReadTime == 0 { lastReadTime = now }
    let due = lastReadTime &+ UInt64(clamping: interval.wholeNanoseconds)
    let delay: Duration = due > now ? .nanoseconds(Int64(clamping: due - now)) : .zero
    keepaliveTimer = loop.scheduleTimer(after: delay) { [weak self] in
      self?.keepaliveTimerFired(keepalive, interval: interval)
    }
  }

  /// `interval` after the last read: silence from the server (and calls open, unless pings
  /// without calls are allowed) sends a PING; no byte from the server within the timeout closes
  /// the connection. Reads since then push the next check back.
  private func keepaliveTimerFired(_ keepalive: Keepalive, interval: Duration) {
    keepaliveTimer = nil
    switch state {
    case .ready, .draining: break
    case .connecting, .closing, .closed: return
    }
    defer { scheduleKeepalive() }
    let silent = monotonicNanoseconds() &- lastReadTime
    guard silent >= UInt64(clamping: interval.wholeNanoseconds) else { return }
    guard keepalive.permitWithoutCalls || !streams.isEmpty, keepaliveTimeoutTimer == nil, let session else { return }
    // Count the ping as activity, so the next one comes an interval after it (or its ACK).
    lastReadTime = monotonicNanoseconds()
    session.ping(opaqueData: lastReadTime)
    delegate?.connectionDidCountPing(self, ack: false)
    scheduleFlush()
    let timeout = keepalive.timeout
    keepaliveTimeoutTimer = loop.scheduleTimer(after: timeout) { [weak self] in
      guard let self else { return }
      self.keepaliveTimeoutTimer = nil
      self.logger.debug("keepalive ping not answered; closing the connection", metadata: ["timeout": "\(timeout)"])
      self.close(error: .keepaliveTimeout(timeout))
    }
  }

  // MARK: - Closing

  /// Sends GOAWAY and closes once the open streams finish (graceful), or now.
  func shutdown(graceful: Bool) {
    switch state {
    case .closing, .closed:
      return
    case .connecting where graceful:
      close(error: nil)
    case .connecting, .ready, .draining:
      if graceful {
        drain(goAway: nil)
        session?.goAway(errorCode: .noError)
        scheduleFlush()
        closeIfDrained()
      } else {
        session?.goAway(errorCode: .noError)
        flushNow()
        close(error: .shutdown)
      }
    }
  }

  /// Sends the frames still queued, closes the socket and fails what is left, once; `error` `nil`
  /// is a clean close.
  private func close(error: ConnectionError?) {
    switch state {
    case .closing, .closed: return
    case .connecting, .ready, .draining: state = .closing(wasReady: wasReady)
    }
    // Frames still queued (a RST_STREAM for a cancelled call, our GOAWAY) go out first.
    flushOutput()
    // Reports back through byteStream(_:didCloseWithError:), which fails the calls; if the
    // socket had closed already (a write just failed), that happened then, and this does nothing.
    stream?.close(error: error)
    fail(error, wasReady: wasReady)
  }

  /// Fails every stream UNAVAILABLE with `error` as the cause, and reports the close, once.
  private func fail(_ error: ConnectionError?, wasReady: Bool) {
    if case .closed = state { return }
    state = .closed
    for timer in [connectTimer, keepaliveTimer, keepaliveTimeoutTimer].compactMap({ $0 }) { loop.cancelTimer(timer) }
    let failing = streams
    streams.removeAll()
    streamsWithWaitingWriters.removeAll()
    // A clean close leaves no stream behind (it waits for them, or there were none yet); were one
    // left, this side closed it.
    let reason = error ?? .shutdown
    for (_, active) in failing {
      switch active.machine.connectionFailed(reason.description, cause: reason) {
      case .finish(let status), .resetAndFinish(_, let status):
        end(active, status: status, mayRetry: false)
      case .retryOrFinish(let status):
        end(active, status: status, mayRetry: true)
      case .none, .deliverHeaders:
        let status = GRPCStatus(code: .unavailable, message: reason.description, cause: reason)
        finish(active.call, status: status, trailers: GRPCMetadata())
      }
    }
    session = nil
    stream = nil
    delegate?.connection(self, didCloseWithError: error, wasReady: wasReady)
  }
}

extension Duration {
  /// The duration in whole nanoseconds, saturating at Int64's bounds.
  var wholeNanoseconds: Int64 {
    let (seconds, attoseconds) = components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    guard !overflow else { return seconds < 0 ? .min : .max }
    return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).overflow
      ? .max : scaled + attoseconds / 1_000_000_000
  }
}
