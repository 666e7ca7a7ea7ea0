// Sources/HTTP2Transport/ClientConnection.swift - one HTTP/2 client connection carrying gRPC calls
//
// A connection owns a ByteStream (TCP, maybe TLS) and an nghttp2 client
// session, and runs one GRPCClientCall state machine per stream. Everything
// here runs on the channel's event loop: no locks.

import Primitives
import GRPCProtocol
import HTTP2Session
import Logging

#if canImport(Glibc)
  import Glibc
#endif

/// A call waiting for, or carried by, a stream.
final class PendingCall {
  let id: UInt64
  let path: String
  let framedRequest: [UInt8]
  let kind: GRPCCallKind
  let options: CallOptions
  let handler: any GRPCCallHandler
  /// Monotonic deadline in nanoseconds, if the call has a timeout.
  let deadline: UInt64?
  let manualFlowControl: Bool
  /// Transparent retries left (a stream refused before the server saw it).
  var retriesLeft = 1
  /// The stream carrying the call, once it has one.
  var streamID: Int32?
  var deadlineTimer: EventLoop.TimerID?
  var finished = false

  init(
    id: UInt64, path: String, framedRequest: [UInt8], kind: GRPCCallKind, options: CallOptions,
    handler: any GRPCCallHandler, deadline: UInt64?, manualFlowControl: Bool
  ) {
    self.id = id
    self.path = path
    self.framedRequest = framedRequest
    self.kind = kind
    self.options = options
    self.handler = handler
    self.deadline = deadline
    self.manualFlowControl = manualFlowControl
  }
}

/// What a connection tells the channel. Called on the loop thread.
protocol ClientConnectionDelegate: AnyObject {
  func connectionDidBecomeReady(_ connection: ClientConnection)
  func connectionHasCapacity(_ connection: ClientConnection)
  func connection(_ connection: ClientConnection, didCloseWithError error: String?, wasReady: Bool)
  func connection(_ connection: ClientConnection, didFinish call: PendingCall)
  func connection(_ connection: ClientConnection, retry call: PendingCall)
  func connectionDidCountPing(_ connection: ClientConnection, ack: Bool)
}

/// One HTTP/2 connection to the target. Confined to the channel's loop.
final class ClientConnection: ByteStreamDelegate, HTTP2SessionDelegate {
  enum State {
    case connecting
    case ready
    case draining
    case closed
  }

  /// Per-stream state. A class, so the state machine (and its deframer buffer) is
  /// mutated in place rather than copied out of and back into the dictionary per event.
  private final class ActiveStream {
    let call: PendingCall
    var machine: GRPCClientCall
    var unreleasedBytes = 0
    var headersDelivered = false

    init(call: PendingCall, machine: GRPCClientCall) {
      self.call = call
      self.machine = machine
    }
  }

  let loop: EventLoop
  let id: Int
  let address: SocketAddress
  private(set) var state: State = .connecting
  weak var delegate: (any ClientConnectionDelegate)?
  private let configuration: GRPCChannelConfiguration
  private let authority: String
  private let scheme: String
  private var logger: Logger

  private var stream: ByteStream?
  private var session: HTTP2Session?
  private var streams: [Int32: ActiveStream] = [:]
  private var flushScheduled = false
  private var closing = false
  private var closeScheduled = false
  private var keepaliveTimer: EventLoop.TimerID?
  private var keepaliveTimeoutTimer: EventLoop.TimerID?
  private var connectTimer: EventLoop.TimerID?
  private var outputScratch: [UInt8] = []

  /// Streams open on this connection.
  var activeStreamCount: Int { streams.count }

  /// Whether a new call can get a stream now.
  var canStartStream: Bool {
    guard state == .ready, let session, session.isRequestAllowed else { return false }
    return streams.count < Int(min(session.remoteMaxConcurrentStreams, UInt32(Int32.max)))
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
    do {
      let fd = try Socket.makeNonBlocking(family: address.family)
      var tls: TLSEngine?
      if let tlsContext {
        do {
          tls = try TLSEngine(context: tlsContext, serverName: serverName)
        } catch {
          Glibc.close(fd)
          fail(error.description, wasReady: false)
          return
        }
      }
      let done = try Socket.connect(fd, to: address)
      let byteStream = ByteStream(loop: loop, fd: fd, tls: tls, connecting: !done)
      byteStream.delegate = self
      stream = byteStream
      connectTimer = loop.scheduleTimer(after: configuration.connectTimeout) { [weak self] in
        guard let self, self.state == .connecting else { return }
        self.stream?.close(error: "connect to \(self.address) timed out")
      }
      byteStream.start()
    } catch {
      fail(error.description, wasReady: false)
    }
  }

  func byteStreamDidBecomeReady(_ stream: ByteStream) {
    do {
      let session = try HTTP2Session(role: .client, settings: configuration.http2Settings, delegate: self)
      self.session = session
      // The preface and SETTINGS go out now; the connection counts as ready once the
      // server's SETTINGS arrive (its stream limit is known then).
      scheduleFlush()
    } catch {
      stream.close(error: "starting the HTTP/2 session: \(error)")
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
      metadata: call.options.metadata
    )
    let headers = head.headerFields().map { HTTP2HeaderField($0.name, $0.value) }
    let streamID: Int32
    do {
      streamID = try session.submitRequest(headers: headers, body: call.framedRequest, endStream: true)
    } catch {
      // Stream IDs exhausted or the session is going away: let the channel place it elsewhere.
      state = .draining
      delegate?.connection(self, retry: call)
      return
    }
    let maxSize = call.options.maxReceiveMessageSize ?? configuration.maxReceiveMessageSize
    let machineKind: GRPCClientCall.Kind = call.kind == .unary ? .unary : .serverStreaming
    call.streamID = streamID
    streams[streamID] = ActiveStream(call: call, machine: GRPCClientCall(kind: machineKind, maxReceiveMessageSize: maxSize))
    scheduleFlush()
  }

  /// Cancels the call on `streamID` with `status` (CANCELLED or DEADLINE_EXCEEDED).
  func cancel(streamID: Int32, deadline: Bool) {
    guard let active = streams[streamID] else { return }
    let action = deadline ? active.machine.deadlineExceeded() : active.machine.cancel()
    perform(action, streamID: streamID, remoteEnded: false)
  }

  /// Returns received bytes to a manually flow-controlled stream's window.
  func release(streamID: Int32, bytes: Int) {
    guard let session, let active = streams[streamID] else { return }
    let released = min(bytes, active.unreleasedBytes)
    guard released > 0 else { return }
    active.unreleasedBytes -= released
    session.consumeStream(streamID: streamID, bytes: released)
    scheduleFlush()
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
    // The first final header block without END_STREAM is the response headers;
    // with END_STREAM it is a Trailers-Only response, reported through the status.
    let isResponseHeaders = !active.headersDelivered && kind != .informational && !endStream
    let action = active.machine.receiveHeaders(fields, endStream: endStream)
    if isResponseHeaders && active.machine.status == nil {
      active.headersDelivered = true
      active.call.handler.callDidReceiveHeaders(active.machine.responseHeaders)
    }
    perform(action, streamID: streamID, remoteEnded: endStream)
  }

  func session(_ session: HTTP2Session, didReceiveData data: UnsafeRawBufferPointer, streamID: Int32) {
    guard let active = streams[streamID] else {
      session.consume(streamID: streamID, bytes: data.count)
      return
    }
    let handler = active.call.handler
    let action = active.machine.receiveData(data, endStream: false) { message in
      handler.callDidReceiveMessage(message)
    }
    if active.call.manualFlowControl {
      // The connection window reopens now so other streams keep flowing; this stream's
      // window reopens only as its consumer takes the messages (release(streamID:bytes:)).
      session.consumeConnection(bytes: data.count)
      active.unreleasedBytes += data.count
    } else {
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
    // A stream the server refused (REFUSED_STREAM, or above a GOAWAY's last stream id)
    // never reached the application: retry it once on another connection.
    if errorCode == .refusedStream, active.machine.responseHeaders.isEmpty, active.machine.status == nil,
      active.call.retriesLeft > 0
    {
      streams[streamID] = nil
      active.call.retriesLeft -= 1
      active.call.streamID = nil
      delegate?.connection(self, retry: active.call)
      afterStreamClosed()
      return
    }
    let action = active.machine.streamClosed(http2ErrorCode: errorCode.rawValue)
    perform(action, streamID: streamID, remoteEnded: true)
    // Closed by the session: whatever the state machine decided, the stream is gone now.
    if let still = streams.removeValue(forKey: streamID) {
      let status = still.machine.status ?? GRPCStatus(code: .internalError, message: "stream closed")
      finish(still.call, status: status, trailers: still.machine.trailers)
    }
    afterStreamClosed()
  }

  func session(_ session: HTTP2Session, didReceiveGoAway lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: [UInt8]) {
    logger.debug(
      "GOAWAY received", metadata: ["last_stream_id": "\(lastStreamID)", "error_code": "\(errorCode)"])
    if state == .ready || state == .connecting { state = .draining }
    closeIfDrained()
  }

  func session(_ session: HTTP2Session, didReceiveSettings settings: HTTP2RemoteSettings) {
    if state == .connecting {
      state = .ready
      if let connectTimer { loop.cancelTimer(connectTimer) }
      connectTimer = nil
      startKeepalive()
      delegate?.connectionDidBecomeReady(self)
    } else if state == .ready {
      delegate?.connectionHasCapacity(self)
    }
  }

  func session(_ session: HTTP2Session, didRefuseHeaderListOfSize size: Int, limit: Int, streamID: Int32) {
    // The session has already reset the stream (CANCEL); end the call with why, and drop it
    // here so the close that follows finds nothing to report.
    guard let active = streams.removeValue(forKey: streamID) else { return }
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

  private func perform(_ action: GRPCClientCall.Action, streamID: Int32, remoteEnded: Bool) {
    switch action {
    case .none:
      return
    case .finish(let status):
      guard let active = streams[streamID] else { return }
      // The status is decided. When the server ended the stream, it closes by itself
      // (our request half-closed with its only message). When the status came from a
      // local check (a malformed response) the server may still be sending: cancel it.
      if !remoteEnded {
        session?.resetStream(streamID, errorCode: .cancel)
      }
      streams[streamID] = nil
      finish(active.call, status: status, trailers: active.machine.trailers)
      scheduleFlush()
      afterStreamClosed()
    case .resetAndFinish(let code, let status):
      guard let active = streams[streamID] else { return }
      session?.resetStream(streamID, errorCode: HTTP2ErrorCode(rawValue: code))
      streams[streamID] = nil
      finish(active.call, status: status, trailers: active.machine.trailers)
      scheduleFlush()
      afterStreamClosed()
    }
  }

  private func finish(_ call: PendingCall, status: GRPCStatus, trailers: GRPCMetadata) {
    guard !call.finished else { return }
    call.finished = true
    if let timer = call.deadlineTimer { loop.cancelTimer(timer) }
    call.handler.callDidFinish(status: status, trailers: trailers)
    delegate?.connection(self, didFinish: call)
  }

  private func afterStreamClosed() {
    if state == .ready {
      delegate?.connectionHasCapacity(self)
    }
    closeIfDrained()
  }

  private func closeIfDrained() {
    guard state == .draining, streams.isEmpty, !closeScheduled else { return }
    // Often called from inside an nghttp2 callback, where the session cannot produce output:
    // close right after the current event, when the last frames can still be flushed.
    closeScheduled = true
    loop.executeSoon { [weak self] in
      guard let self else { return }
      self.closeScheduled = false
      if self.state == .draining, self.streams.isEmpty { self.close(error: nil) }
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
    if let session, stream?.isOpen == true, !session.wantsRead && !session.wantsWrite {
      if let error = session.terminationError {
        // A connection error nghttp2 found in the server's input and answered with GOAWAY.
        close(error: "HTTP/2 protocol error from the server: \(error.message)")
      } else {
        close(error: state == .draining ? nil : "the HTTP/2 session ended")
      }
    }
  }

  /// Hands every frame nghttp2 has queued to the socket.
  private func flushOutput() {
    guard let session, let stream, stream.isOpen else { return }
    outputScratch.removeAll(keepingCapacity: true)
    session.drainOutput(into: &outputScratch)
    if !outputScratch.isEmpty {
      outputScratch.withUnsafeBytes { stream.write($0) }
      stream.flush()
    }
  }

  // MARK: - ByteStream events

  func byteStream(_ stream: ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    guard let session else { return }
    do {
      try session.receive(bytes)
    } catch {
      // A protocol violation: nghttp2 queued a GOAWAY; close() sends it first, then closes, and the
      // calls on this connection fail UNAVAILABLE with this message. Other connections are untouched.
      logger.debug("closing the connection: the server broke HTTP/2", metadata: ["error": "\(error.message)"])
      close(error: "HTTP/2 protocol error from the server: \(error.message)")
    }
  }

  func byteStreamDidFinishReading(_ stream: ByteStream) {
    scheduleFlush()
  }

  func byteStream(_ stream: ByteStream, didCloseWithError error: String?) {
    let wasReady = state == .ready || state == .draining
    fail(error ?? "connection closed", wasReady: wasReady)
  }

  // MARK: - Keepalive

  private func startKeepalive() {
    guard let keepalive = configuration.keepalive else { return }
    keepaliveTimer = loop.scheduleTimer(after: keepalive.interval) { [weak self] in
      guard let self, self.state == .ready || self.state == .draining else { return }
      if keepalive.permitWithoutCalls || !self.streams.isEmpty, self.keepaliveTimeoutTimer == nil {
        self.session?.ping(opaqueData: monotonicNanoseconds())
        self.delegate?.connectionDidCountPing(self, ack: false)
        self.scheduleFlush()
        self.keepaliveTimeoutTimer = self.loop.scheduleTimer(after: keepalive.timeout) { [weak self] in
          self?.stream?.close(error: "keepalive ping not answered within \(keepalive.timeout)")
        }
      }
      self.startKeepalive()
    }
  }

  // MARK: - Closing

  /// Sends GOAWAY and closes once the open streams finish (graceful), or now.
  func shutdown(graceful: Bool) {
    guard state != .closed else { return }
    if graceful {
      if state == .connecting {
        close(error: nil)
        return
      }
      state = .draining
      session?.goAway(errorCode: .noError)
      scheduleFlush()
      closeIfDrained()
    } else {
      session?.goAway(errorCode: .noError)
      flushNow()
      close(error: "channel closed")
    }
  }

  private func close(error: String?) {
    guard !closing else { return }
    closing = true
    // Frames still queued (a RST_STREAM for a cancelled call, our GOAWAY) go out first.
    flushOutput()
    if let stream, stream.isOpen || state != .closed {
      stream.close(error: error)  // Reports back through byteStream(_:didCloseWithError:).
      if state != .closed { fail(error ?? "connection closed", wasReady: state != .connecting) }
    } else {
      fail(error ?? "connection closed", wasReady: state != .connecting)
    }
  }

  /// Fails every stream UNAVAILABLE and reports the close, once.
  private func fail(_ message: String, wasReady: Bool) {
    guard state != .closed else { return }
    state = .closed
    for timer in [connectTimer, keepaliveTimer, keepaliveTimeoutTimer].compactMap({ $0 }) { loop.cancelTimer(timer) }
    let failing = streams
    streams.removeAll()
    for (_, active) in failing {
      if case .finish(let status) = active.machine.connectionFailed(message) {
        finish(active.call, status: status, trailers: active.machine.trailers)
      } else {
        finish(active.call, status: GRPCStatus(code: .unavailable, message: message), trailers: GRPCMetadata())
      }
    }
    session = nil
    stream = nil
    delegate?.connection(self, didCloseWithError: message, wasReady: wasReady)
  }
}
