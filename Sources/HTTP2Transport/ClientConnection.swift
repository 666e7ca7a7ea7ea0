// Sources/HTTP2Transport/ClientConnection.swift - the I/O driver of one HTTP/2 client connection
//
// A connection owns a ByteStream (TCP, maybe TLS), an nghttp2 client session and its timers. It feeds what
// happens to its ConnectionStateMachine (lifecycle, streams, keepalive) and to each stream's GRPCClientCall,
// and performs the actions they return: it decides nothing itself. When it fails, the calls on it end
// UNAVAILABLE with the ConnectionError as the status's cause. Everything here runs on the channel's event loop.

import GRPCProtocol
import HTTP2Session
import Logging
import Primitives
import TLSCrypto

/// One HTTP/2 connection to the target. Confined to the channel's loop.
final class ClientConnection: ByteStreamDelegate, HTTP2SessionDelegate {
  /// A writer waits once this many request bytes of its call are queued and not yet sent.
  static let requestBufferLimit = 64 << 10
  /// Unsent output past which the connection leaves further frames in the session until the socket drains: a
  /// server that does not read cannot make the client buffer without bound. The client keeps reading meanwhile
  /// (unlike the server, which stops): what it reads adds no output but acknowledgements, which nghttp2 bounds,
  /// and a client that stopped reading too could deadlock with a server doing the same.
  static let maxOutboundBytes = 1 << 20

  let loop: EventLoop
  let id: Int
  let address: SocketAddress
  weak var delegate: (any ClientConnectionDelegate)?
  // Shared with the streams' part (ClientConnection+Streams.swift); nothing outside the connection uses them.
  var machine: ConnectionStateMachine
  let configuration: GRPCChannelConfiguration
  let authority: String
  let scheme: String
  var logger: Logger
  private var stream: ByteStream?
  var session: HTTP2Session?
  /// Streams with writers waiting for their queued request bytes to drain.
  var streamsWithWaitingWriters: Set<Int32> = []
  /// Output coalescing: one flush at the end of the current event.
  private lazy var flush = EndOfEventAction(loop: loop) { [weak self] in self?.flushNow() }
  private var connectTimer: EventLoop.TimerID?
  private var keepaliveTimer: EventLoop.TimerID?
  private var keepaliveTimeoutTimer: EventLoop.TimerID?

  /// Streams open on this connection.
  var activeStreamCount: Int { machine.streams.count }
  /// The state as the pool sees it.
  var phase: ConnectionStateMachine.Phase { machine.phase }
  /// Whether a new call can get a stream now.
  var canStartStream: Bool {
    guard let session else { return false }
    return machine.canStartStream(
      sessionAllowsRequests: session.isRequestAllowed, maxConcurrentStreams: session.remoteMaxConcurrentStreams)
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
    self.machine = ConnectionStateMachine(keepalive: configuration.keepalive)
    self.logger = logger
    self.logger[metadataKey: "grpc.connection"] = "\(id)"
    if case .plaintext = configuration.security { scheme = "http" } else { scheme = "https" }
  }

  // MARK: - Connecting

  /// Starts the TCP connect (and TLS). Loop thread only.
  func connect(tlsContext: TLSContext?, serverName: String?) {
    loop.assertInEventLoop()
    let byteStream: ByteStream
    do {
      byteStream = try ByteStream.connecting(to: address, loop: loop, tlsContext: tlsContext, serverName: serverName)
    } catch {
      closed(error)
      return
    }
    byteStream.delegate = self
    stream = byteStream
    let timeout = configuration.connectTimeout
    connectTimer = loop.scheduleTimer(after: timeout) { [weak self] in
      guard let self else { return }
      switch self.machine.connectTimerFired(timeout: timeout) {
      case .none: break
      case .abandonSocket: self.stream?.close(error: .connectTimedOut(address: self.address.description))
      case .close(let error): self.close(error: error)
      }
    }
    byteStream.start()
  }

  func byteStreamDidBecomeReady(_ stream: ByteStream) {
    do {
      session = try HTTP2Session(role: .client, settings: configuration.http2Settings, delegate: self)
      // The preface and SETTINGS go out now; the connection counts as ready once the server's SETTINGS arrive.
      scheduleFlush()
    } catch {
      stream.close(error: .internalError("starting the HTTP/2 session: \(error)"))
    }
  }

  // MARK: - Connection events

  func session(
    _ session: HTTP2Session, didReceiveGoAway lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: [UInt8]
  ) {
    logger.debug("GOAWAY received", metadata: ["last_stream_id": "\(lastStreamID)", "error_code": "\(errorCode)"])
    delegate?.connectionReceivedGoAway(self)
    if errorCode == .enhanceYourCalm, debugData.elementsEqual("too_many_pings".utf8) {
      delegate?.connectionReceivedTooManyPings(self)
    }
    after(machine.goAwayReceived(.goAway(errorCode: errorCode, debugData: debugData)))
  }

  func session(_ session: HTTP2Session, didReceiveSettings settings: HTTP2RemoteSettings) {
    switch machine.settingsReceived(maxConcurrentStreams: session.remoteMaxConcurrentStreams) {
    case .none:
      break
    case .waitingForStreams(let firstTime):
      if firstTime { logger.debug("the server allows no streams (SETTINGS_MAX_CONCURRENT_STREAMS = 0); waiting") }
    case .becameReady:
      cancel(&connectTimer)
      scheduleKeepalive()
      delegate?.connectionDidBecomeReady(self)
    case .hasCapacity:
      delegate?.connectionHasCapacity(self)
    }
  }

  func session(_ session: HTTP2Session, didReceivePingAck opaqueData: UInt64) {
    delegate?.connectionDidCountPing(self, ack: true)
    if machine.pingAcknowledged() { cancel(&keepaliveTimeoutTimer) }
  }

  /// Acts on what the machine said after a stream left or a GOAWAY came.
  func after(_ next: ConnectionStateMachine.AfterStream) {
    switch next {
    case .none: break
    case .hasCapacity: delegate?.connectionHasCapacity(self)
    case .closeSoon:
      // Often inside an nghttp2 callback, where the session cannot produce output: close right after the
      // current event, when the last frames can still be flushed.
      loop.executeSoon { [weak self] in
        guard let self, self.machine.drainedCloseDue else { return }
        self.close(error: nil)
      }
    }
  }

  // MARK: - Output

  /// Writes the session's pending frames once the current event has been handled, so all frames produced in
  /// one loop turn leave in one write.
  func scheduleFlush() {
    flush.request()
  }

  private func flushNow() {
    flushOutput()
    resumeWritersWithRoom()
    guard let session, stream?.isOpen == true, !session.wantsRead && !session.wantsWrite else { return }
    if let error = session.terminationError {
      close(error: .protocolError(error))  // A connection error nghttp2 found and answered with GOAWAY.
    } else if case .draining = machine.state {
      close(error: nil)
    } else {
      close(error: .internalError("the HTTP/2 session ended"))
    }
  }

  /// Hands the frames nghttp2 has queued to the socket while its backlog is under ``maxOutboundBytes``; the
  /// rest follows on ``byteStreamDidDrainOutput(_:)``.
  private func flushOutput() {
    guard let session, let stream, stream.isOpen else { return }
    _ = stream.writeOutput(of: session, limit: Self.maxOutboundBytes)
  }

  func byteStreamDidDrainOutput(_ stream: ByteStream) {
    scheduleFlush()
  }

  // MARK: - ByteStream events

  func byteStream(_ stream: ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    guard let session else { return }
    if machine.bytesRead(at: monotonicNanoseconds()) { cancel(&keepaliveTimeoutTimer) }
    do {
      try session.receive(bytes)
    } catch {
      // A protocol violation: nghttp2 queued a GOAWAY, which the close sends first; the calls on this
      // connection fail UNAVAILABLE with this message. Other connections are untouched.
      logger.debug("closing the connection: the server broke HTTP/2", metadata: ["error": "\(error.message)"])
      close(error: .protocolError(error))
    }
  }

  func byteStreamDidFinishReading(_ stream: ByteStream) {
    scheduleFlush()
  }

  func byteStream(_ stream: ByteStream, didCloseWithError error: ConnectionError?) {
    closed(machine.closeReason(socket: error))
  }

  // MARK: - Keepalive

  /// Arms the keepalive timer for the machine's next check.
  private func scheduleKeepalive() {
    guard let interval = delegate?.keepaliveInterval else { return }
    let delay = machine.keepaliveDelay(now: monotonicNanoseconds(), interval: interval)
    keepaliveTimer = loop.scheduleTimer(after: delay) { [weak self] in
      self?.keepaliveTimerFired(interval: interval)
    }
  }

  private func keepaliveTimerFired(interval: Duration) {
    keepaliveTimer = nil
    switch machine.keepaliveTimerFired(now: monotonicNanoseconds(), interval: interval) {
    case .stop:
      return
    case .wait:
      break
    case .ping(let opaqueData):
      session?.ping(opaqueData: opaqueData)
      delegate?.connectionDidCountPing(self, ack: false)
      scheduleFlush()
      guard let timeout = configuration.keepalive?.timeout else { break }
      keepaliveTimeoutTimer = loop.scheduleTimer(after: timeout) { [weak self] in
        guard let self else { return }
        self.keepaliveTimeoutTimer = nil
        guard self.machine.keepaliveTimeoutFired() else { return }
        self.logger.debug("keepalive ping not answered; closing the connection", metadata: ["timeout": "\(timeout)"])
        self.close(error: .keepaliveTimeout(timeout))
      }
    }
    scheduleKeepalive()
  }

  // MARK: - Closing

  /// Sends GOAWAY and closes once the open streams finish (graceful), or now.
  func shutdown(graceful: Bool) {
    switch machine.shutdown(graceful: graceful) {
    case .none:
      break
    case .close:
      close(error: nil)
    case .drain(let closeSoon):
      session?.goAway(errorCode: .noError)
      scheduleFlush()
      if closeSoon { after(.closeSoon) }
    case .abort:
      session?.goAway(errorCode: .noError)
      flushNow()
      close(error: .shutdown)
    }
  }

  /// Sends the frames still queued, closes the socket and fails what is left, once; `error` nil is a clean close.
  private func close(error: ConnectionError?) {
    guard machine.closeStarted() else { return }
    // Frames still queued (a RST_STREAM for a cancelled call, our GOAWAY) go out first. The socket is closed
    // without reporting back here: this close fails the calls itself.
    flushOutput()
    if let stream {
      stream.delegate = nil
      stream.close(error: error)
    }
    closed(error)
  }

  /// The connection is closed (`error` says why, nil for a clean close): fails every stream UNAVAILABLE with
  /// `error` as the cause and reports the close, once.
  private func closed(_ error: ConnectionError?) {
    guard let report = machine.closed() else { return }
    for timer in [connectTimer, keepaliveTimer, keepaliveTimeoutTimer].compactMap({ $0 }) { loop.cancelTimer(timer) }
    streamsWithWaitingWriters.removeAll()
    // A clean close leaves no stream behind (it waits for them, or there were none yet); were one left, this
    // side closed it.
    let reason = error ?? .shutdown
    for active in report.streams {
      switch active.machine.connectionFailed(reason.description, cause: reason) {
      case .finish(let status), .resetAndFinish(_, let status):
        end(active, status: status, mayRetry: false)
      case .retryOrFinish(let status):
        end(active, status: status, mayRetry: true)
      case .none, .deliverHeaders:
        finish(
          active.call, status: GRPCStatus(code: .unavailable, message: reason.description, cause: reason),
          trailers: GRPCMetadata())
      }
    }
    session = nil
    stream = nil
    delegate?.connection(self, didCloseWithError: error, wasReady: report.wasReady)
  }

  private func cancel(_ timer: inout EventLoop.TimerID?) {
    if let id = timer { loop.cancelTimer(id) }
    timer = nil
  }
}
