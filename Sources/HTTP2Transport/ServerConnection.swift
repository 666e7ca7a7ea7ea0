// Sources/HTTP2Transport/ServerConnection.swift - one accepted HTTP/2 connection serving gRPC calls

import GRPCProtocol
import HTTP2Session
import Logging
import Primitives
import Synchronization

/// One accepted connection. Confined to its loop (the server's, or one of its group's); what it counts with
/// the server's other connections goes through ``ServerCore/shared``.
final class ServerConnection: ByteStreamDelegate, HTTP2SessionDelegate {
  /// The client's address (numeric host, no port).
  let peer: String
  /// A request whose stream is still arriving. A class, so that its message buffer is appended to in
  /// place: a copy of the request taken out of the dictionary and written back would copy the whole
  /// buffer for every DATA frame, a cost growing with the square of the message size.
  private final class PendingRequest {
    var path = ""
    var authority = ""
    var metadata = GRPCMetadata()
    var timeout: Duration?
    var deframer: GRPCMessageDeframer
    var message: [UInt8]?
    /// Answered with this status when the stream ends (a request the server does not serve).
    var failed: GRPCStatus?
    /// Answered and reset while arriving (``ServerConnection/refuse(_:_:status:)``); later DATA is discarded.
    var refused = false
    /// The bytes of it held, as counted against the request memory limits.
    var heldBytes = 0
    /// When its HEADERS arrived (monotonic nanoseconds), for the request deadline.
    var startedAt: UInt64 = 0

    init(deframer: GRPCMessageDeframer) { self.deframer = deframer }
  }

  let core: ServerCore
  /// The loop it runs on.
  let loop: EventLoop
  /// The connections of its loop, which it leaves when it closes.
  private let registry: LoopBound<ServerConnections>
  let stream: ByteStream
  /// What the connection's peer holds over all its connections (under ``ServerCore/shared``'s lock).
  let usage: PeerUsage
  private var session: HTTP2Session?
  private var requests: [Int32: PendingRequest] = [:]
  /// The decoded header bytes each open stream holds (0 once its headers were let go), counted against the
  /// peer's and the server's header budgets; an entry per stream counted against the peer's streams.
  private var streamHolds: [Int32: Int] = [:]
  /// The handshake deadline's timer, until the client's first SETTINGS frame.
  private var handshakeTimer: EventLoop.TimerID?
  /// The request deadline's timer: at most one, due when the oldest unfinished request's deadline is.
  private var requestTimer: EventLoop.TimerID?
  /// Set inside the session's callbacks when the connection must end (a peer opening streams too fast):
  /// it is closed once the session has returned.
  private var closeAfterInput = false
  /// Calls whose request is complete, waiting to be handed to the service: after the input that completed
  /// them has been read to its end (a request reset in the same input never reaches the service), at most
  /// ``callsPerTurn`` a loop turn.
  private var readyCalls: [GRPCServerCall] = []
  private var readyCallsHead = 0
  /// Why reading is paused: the socket's output is backed up, or the connection used its turn.
  private var pausedForOutput = false
  private var pausedForTurn = false
  /// The connection's next turn is scheduled.
  private var turnScheduled = false
  /// Decoded header bytes (refused lists and trailers included) since the connection's last turn began.
  private var turnHeaderBytes = 0
  /// Calls handed to the service since the connection's last turn began.
  private var turnCalls = 0
  /// Calls handed to a service on another loop that it has not taken yet (at most one hand-over at a time).
  private var handOverPending = false
  /// When the connection's output backed up (monotonic nanoseconds), while it is; its stall timer.
  private var outputStallTimer: EventLoop.TimerID?
  /// Input read but not yet given to the session: what a turn ended before (at most one read's worth).
  private var pendingInput: [UInt8] = []
  /// How much input the session is given at a time, between checks of the connection's turn.
  static let inputSlice = 1 << 10

  /// Calls one connection hands to the service per loop turn: a client sending thousands of requests in one
  /// read waits for its later ones while the other connections on the loop get their turn.
  static let callsPerTurn = 32
  /// Decoded header bytes one connection may cost per loop turn (HPACK lets a few bytes on the wire stand
  /// for kilobytes decoded): past it, reading pauses until its next turn.
  static let headerBytesPerTurn = 256 << 10
  private var calls: [Int32: GRPCServerCall] = [:]
  /// Calls answered from another loop whose stream has a backlog: after each flush, each gets its new one.
  private var watchedBacklogs: [Int32: GRPCServerCall] = [:]
  private lazy var flush = EndOfEventAction(loop: loop) { [weak self] in self?.flushNow() }
  /// Where ``sendMessage(streamID:_:)`` frames a message.
  private var messageScratch: [UInt8] = []
  private var closed = false
  /// Bytes of requests still arriving held by this connection.
  private var requestBytes = 0
  /// When the connection last became idle (no open stream), while it is; nil while a stream is open.
  private var idleSince: UInt64?
  /// The pending idle check, if any (at most one).
  private var idleTimer: EventLoop.TimerID?

  init(core: ServerCore, stream: ByteStream, peer: String, usage: PeerUsage, registry: LoopBound<ServerConnections>) {
    self.core = core
    self.loop = registry.loop
    self.registry = registry
    self.stream = stream
    self.peer = peer
    self.usage = usage
  }

  func start() {
    stream.delegate = self
    stream.start()
    schedule(\.handshakeTimer, after: core.configuration.handshakeTimeout) { connection in
      guard !connection.closed else { return }
      connection.core.shared.count { $0.handshakesTimedOut += 1 }
      connection.core.logger.debug(
        "closing a connection that did not complete its handshake",
        metadata: [
          "peer": "\(connection.peer)", "handshake_timeout": "\(connection.core.configuration.handshakeTimeout)",
        ])
      connection.drop()
    }
    becameIdleIfNoStreams()
  }

  func byteStreamDidBecomeReady(_ stream: ByteStream) {
    do {
      var settings = HTTP2Settings()
      settings.maxConcurrentStreams = core.configuration.maxConcurrentStreams
      settings.maxHeaderListSize = UInt32(clamping: core.configuration.maxHeaderListSize)
      session = try HTTP2Session(role: .server, settings: settings, delegate: self)
      scheduleFlush()
    } catch {
      stream.close(error: .internalError("starting the HTTP/2 session: \(error)"))
    }
  }

  func byteStream(_ stream: ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    guard pendingInput.isEmpty, !pausedForTurn else {
      // Read before a pause took effect: it waits its turn behind what is already waiting.
      pendingInput.append(contentsOf: bytes)
      return
    }
    process(bytes)
  }

  /// Feeds `bytes` to the session a slice at a time, handing ready calls to the service after each; once the
  /// connection has used its turn, the rest waits in ``pendingInput`` for the next one. A slice of a few
  /// kilobytes can still stand for megabytes of decoded headers, never for the whole read.
  private func process(_ bytes: UnsafeRawBufferPointer) {
    guard let session else { return }
    var offset = 0
    do {
      while offset < bytes.count {
        let end = min(bytes.count, offset + Self.inputSlice)
        try session.receive(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
        offset = end
        if closeAfterInput {
          flushNow()
          stream.close(error: nil)
          return
        }
        dispatchReadyCalls()
        if turnHeaderBytes > Self.headerBytesPerTurn { yieldTurn() }
        if pausedForTurn && offset < bytes.count {
          pendingInput.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
          return
        }
      }
    } catch {
      // A client that breaks the protocol gets its GOAWAY and is closed; others are unaffected.
      core.logger.debug(
        "closing a connection that broke the HTTP/2 protocol",
        metadata: ["error": "\(error)", "open_calls": "\(calls.count)"])
      flushNow()
      stream.close(error: .protocolError(error))
    }
  }

  func byteStreamDidFinishReading(_ stream: ByteStream) { scheduleFlush() }

  func byteStream(_ stream: ByteStream, didCloseWithError error: ConnectionError?) {
    guard !closed else { return }
    closed = true
    if let error {
      core.logger.debug("connection closed", metadata: ["error": "\(error)", "open_calls": "\(calls.count)"])
    }
    for timer in [idleTimer, handshakeTimer, requestTimer, outputStallTimer] {
      if let timer { loop.cancelTimer(timer) }
    }
    idleTimer = nil
    handshakeTimer = nil
    requestTimer = nil
    outputStallTimer = nil
    readyCalls.removeAll()
    readyCallsHead = 0
    let open = calls
    calls.removeAll()
    for call in watchedBacklogs.values { call.backlogSeen.store(0, ordering: .relaxed) }
    watchedBacklogs.removeAll()
    for streamID in Array(requests.keys) { removeRequest(streamID) }
    for streamID in Array(streamHolds.keys) { releaseStream(streamID) }
    let openCount = open.count
    core.shared.count { $0.openCalls -= openCount }
    for (_, call) in open where !call.connectionEnded { call.closedByPeer() }
    session = nil
    registry.value.connections[ObjectIdentifier(self)] = nil
    core.connectionClosed(peer: peer)
  }

  // MARK: - HTTP/2 events

  func session(
    _ session: HTTP2Session, didReceiveHeaders headers: [HTTP2HeaderField], kind: HTTP2HeadersKind, streamID: Int32,
    endStream: Bool
  ) {
    guard kind == .request else {
      // Request trailers are not part of unary or server-streaming calls; ignore them (their decoding
      // still counts against the turn).
      for header in headers { turnHeaderBytes += header.name.utf8.count + header.value.utf8.count + 32 }
      if endStream { requestEnded(streamID) }
      return
    }
    guard !closeAfterInput else { return }
    var headerBytes = 0
    for header in headers { headerBytes += header.name.utf8.count + header.value.utf8.count + 32 }
    turnHeaderBytes += headerBytes
    guard let held = holdStream(streamID, headerBytes: headerBytes) else {
      endForStreamRate(session)
      return
    }
    let limits = core.configuration
    let maxMessageSize = min(
      limits.maxReceiveMessageSize,
      headers.first { $0.name == ":path" }.flatMap {
        core.service.maxRequestMessageSize(forMethod: $0.value)
      } ?? .max)
    let request = PendingRequest(deframer: GRPCMessageDeframer(maxMessageSize: maxMessageSize))
    request.startedAt = monotonicNanoseconds()
    var fields: [(name: String, value: String)] = []
    var contentType = ""
    var method = ""
    for header in headers {
      switch header.name {
      case ":path": request.path = header.value
      case ":authority": request.authority = header.value
      case ":method": method = header.value
      case "content-type": contentType = header.value
      case "grpc-timeout": request.timeout = GRPCTimeout.parse(header.value)
      default: fields.append((header.name, header.value))
      }
    }
    request.metadata = GRPCMetadata(decodingHeaderFields: fields)
    if method != "POST" || !GRPCStatusMapping.isGRPCContentType(contentType) {
      request.failed = GRPCStatus(code: .internalError, message: "not a gRPC request (\(method), \(contentType))")
    }
    requests[streamID] = request
    if held.peerStreams > limits.maxStreamsPerPeer {
      refuse(
        streamID, request,
        status: GRPCStatus(
          code: .resourceExhausted, message: "this client has more than \(limits.maxStreamsPerPeer) streams open"))
    } else if held.peerHeaderBytes > limits.maxHeaderBytesPerPeer {
      refuse(
        streamID, request,
        status: GRPCStatus(
          code: .resourceExhausted,
          message: "this client's open streams hold more than \(limits.maxHeaderBytesPerPeer) bytes of headers"))
    } else if held.serverHeaderBytes > limits.maxHeaderBytes {
      refuse(
        streamID, request,
        status: GRPCStatus(
          code: .resourceExhausted,
          message: "the server's open streams hold more than \(limits.maxHeaderBytes) bytes of headers"))
    }
    if endStream {
      requestEnded(streamID)
    } else if requestTimer == nil {
      scheduleRequestCheck(after: limits.requestTimeout)
    }
  }

  /// The peer opens streams faster than its rate: the connection ends (GOAWAY(ENHANCE_YOUR_CALM)) once the
  /// session has returned, and the peer's next connections are refused for a while. nghttp2's own
  /// rapid-reset limit works per connection; this one holds over reconnects.
  private func endForStreamRate(_ session: HTTP2Session) {
    core.logger.debug(
      "ending a connection whose peer opens streams too fast",
      metadata: [
        "peer": "\(peer)", "streams_per_second": "\(core.configuration.streamOpensPerSecondPerPeer)",
        "penalty": "\(core.configuration.peerPenalty)",
      ])
    session.goAway(errorCode: .enhanceYourCalm, debugData: Array("streams opened too fast".utf8))
    closeAfterInput = true
    core.scheduleSweep()
  }

  // MARK: - What streams hold

  /// What the peer and the server hold once a stream is counted in.
  private struct Held {
    var peerStreams: Int
    var peerHeaderBytes: Int
    var serverHeaderBytes: Int
  }

  /// Counts a newly opened stream against the peer's stream rate, and it and its decoded headers against
  /// the peer's and the server's budgets; nil when the peer opens streams too fast (nothing is counted).
  private func holdStream(_ streamID: Int32, headerBytes: Int) -> Held? {
    let (core, usage) = (core, usage)
    let held: Held? = core.shared.withLock { state in
      guard core.streamOpened(by: usage, &state) else { return nil }
      usage.streams += 1
      usage.headerBytes += headerBytes
      state.stats.heldHeaderBytes += headerBytes
      return Held(
        peerStreams: usage.streams, peerHeaderBytes: usage.headerBytes, serverHeaderBytes: state.stats.heldHeaderBytes)
    }
    if held != nil { streamHolds[streamID] = headerBytes }
    return held
  }

  /// Lets go of the headers `streamID` holds (its request was refused: its metadata is dropped).
  private func releaseHeaders(_ streamID: Int32) {
    guard let held = streamHolds[streamID], held > 0 else { return }
    streamHolds[streamID] = 0
    let usage = usage
    core.shared.withLock { state in
      usage.headerBytes -= held
      state.stats.heldHeaderBytes -= held
    }
  }

  /// The stream closed: it no longer counts.
  private func releaseStream(_ streamID: Int32) {
    guard let held = streamHolds.removeValue(forKey: streamID) else { return }
    let usage = usage
    core.shared.withLock { state in
      usage.streams -= 1
      usage.headerBytes -= held
      state.stats.heldHeaderBytes -= held
    }
  }

  // MARK: - Request deadline

  private func scheduleRequestCheck(after delay: Duration) {
    schedule(\.requestTimer, after: delay) { $0.checkRequestDeadlines() }
  }

  /// Refuses every request still arriving past its deadline with DEADLINE_EXCEEDED; comes back when the
  /// next one's is due.
  private func checkRequestDeadlines() {
    guard !closed else { return }
    let timeout = core.configuration.requestTimeout.nonNegativeNanoseconds
    let now = monotonicNanoseconds()
    var nextDue: UInt64?
    for (streamID, request) in requests where !request.refused {
      let due = request.startedAt &+ timeout
      if due <= now {
        core.shared.count { $0.requestsTimedOut += 1 }
        refuse(
          streamID, request,
          status: GRPCStatus(
            code: .deadlineExceeded,
            message: "the request did not end within \(core.configuration.requestTimeout) of its headers"))
      } else {
        nextDue = min(nextDue ?? due, due)
      }
    }
    if let nextDue { scheduleRequestCheck(after: .nanoseconds(Int64(nextDue - now))) }
  }

  /// DATA of a request. Checked before the window is reopened: the message's length prefix against
  /// the size limit (by the deframer, before it buffers anything), then the bytes held against the
  /// connection's and the server's request memory limits. Only a request that passes reopens its
  /// stream's window; a refused one reopens only the connection's (the bytes were received).
  func session(_ session: HTTP2Session, didReceiveData data: UnsafeRawBufferPointer, streamID: Int32) {
    guard let request = requests[streamID] else {
      session.consume(streamID: streamID, bytes: data.count)
      return
    }
    if request.refused {
      session.consumeConnection(bytes: data.count)
      return
    }
    if request.failed != nil {
      // Answered when the stream ends; what arrives until then is discarded.
      session.consume(streamID: streamID, bytes: data.count)
      return
    }
    var refusal: GRPCStatus?
    do {
      try request.deframer.process(data) { message in
        if request.message == nil {
          request.message = [UInt8](message)
        } else {
          request.failed = GRPCStatus(code: .unimplemented, message: "more than one request message")
        }
      }
    } catch {
      // RESOURCE_EXHAUSTED for a prefix above the size limit; INTERNAL for a compressed message or a bad flag.
      refusal = error.status
    }
    if refusal == nil {
      let held = setHeldBytesAndCount(of: request, to: request.deframer.bufferedBytes + (request.message?.count ?? 0))
      let limits = core.configuration
      if requestBytes > limits.maxRequestBytesPerConnection {
        refusal = GRPCStatus(
          code: .resourceExhausted,
          message: "the connection's unfinished requests exceed \(limits.maxRequestBytesPerConnection) bytes")
      } else if held.peer > limits.maxRequestBytesPerPeer {
        refusal = GRPCStatus(
          code: .resourceExhausted,
          message: "this client's unfinished requests exceed \(limits.maxRequestBytesPerPeer) bytes")
      } else if held.server > limits.maxRequestBytes {
        refusal = GRPCStatus(
          code: .resourceExhausted, message: "the server's unfinished requests exceed \(limits.maxRequestBytes) bytes")
      }
    }
    if let refusal {
      refuse(streamID, request, status: refusal)
      session.consumeConnection(bytes: data.count)
    } else {
      session.consume(streamID: streamID, bytes: data.count)
    }
  }

  /// Answers a request that is still arriving with `status` (Trailers-Only), then RST_STREAM(NO_ERROR)
  /// so the client stops sending it, as grpc-go does; its bytes are released at once.
  private func refuse(_ streamID: Int32, _ request: PendingRequest, status: GRPCStatus) {
    request.refused = true
    request.message = nil
    request.metadata = GRPCMetadata()
    request.deframer = GRPCMessageDeframer(maxMessageSize: 0)
    setHeldBytes(of: request, to: 0)
    releaseHeaders(streamID)
    core.shared.count { $0.requestsRefused += 1 }
    core.logger.debug(
      "refused a request while it arrived",
      metadata: ["stream": "\(streamID)", "path": "\(request.path)", "status": "\(status)"])
    submitHeaders(
      streamID: streamID, GRPCServerCall.refusalFields(status), endStream: true)
    // Not now: nghttp2 drops a stream's queued HEADERS once RST_STREAM is submitted for it. The flush
    // submitHeaders scheduled runs first (tasks run in order) and sends the HEADERS; then the reset.
    loop.executeSoon { [weak self] in
      guard let self else { return }
      self.session?.resetStream(streamID, errorCode: .noError)
      self.scheduleFlush()
    }
  }

  /// Sets what `request` holds, keeping the connection's, the peer's and the server's counts in step.
  private func setHeldBytes(of request: PendingRequest, to bytes: Int) {
    guard bytes != request.heldBytes else { return }
    setHeldBytesAndCount(of: request, to: bytes)
  }

  /// ``setHeldBytes(of:to:)``, returning what the peer's and the server's requests hold now.
  @discardableResult
  private func setHeldBytesAndCount(of request: PendingRequest, to bytes: Int) -> (peer: Int, server: Int) {
    let delta = bytes - request.heldBytes
    request.heldBytes = bytes
    requestBytes += delta
    let usage = usage
    return core.shared.withLock { state in
      if delta != 0 {
        usage.requestBytes += delta
        state.stats.bufferedRequestBytes += delta
        state.stats.peakBufferedRequestBytes = max(
          state.stats.peakBufferedRequestBytes, state.stats.bufferedRequestBytes)
      }
      return (usage.requestBytes, state.stats.bufferedRequestBytes)
    }
  }

  /// Forgets the request of `streamID`, releasing what it held.
  @discardableResult
  private func removeRequest(_ streamID: Int32) -> PendingRequest? {
    guard let request = requests.removeValue(forKey: streamID) else { return nil }
    setHeldBytes(of: request, to: 0)
    return request
  }

  func session(_ session: HTTP2Session, didReceiveEndOfStream streamID: Int32) {
    requestEnded(streamID)
  }

  private func requestEnded(_ streamID: Int32) {
    guard let request = removeRequest(streamID) else { return }
    if request.refused {
      becameIdleIfNoStreams()
      return
    }
    let call = GRPCServerCall(
      path: request.path, requestMetadata: request.metadata, authority: request.authority,
      request: request.message ?? [], timeout: request.timeout, peerAddress: peer, loop: core.loop, connection: self,
      connectionLoop: loop, streamID: streamID)
    calls[streamID] = call
    idleSince = nil
    core.shared.count {
      $0.callsStarted += 1
      $0.openCalls += 1
    }
    if let failed = request.failed {
      answer(call, failed)
    } else if request.message == nil || request.deframer.hasPartialMessage {
      answer(call, GRPCStatus(code: .internalError, message: "the request message is missing or incomplete"))
    } else {
      readyCalls.append(call)
    }
    scheduleFlush()
  }

  /// Ends a call the service never sees (a request it cannot serve) with a Trailers-Only `status`.
  private func answer(_ call: GRPCServerCall, _ status: GRPCStatus) {
    call.connectionEnded = true
    submitHeaders(
      streamID: call.streamID, GRPCServerCall.refusalFields(status), endStream: true
    )
  }

  // MARK: - Handing calls to the service

  /// Hands up to ``callsPerTurn`` ready calls to the service, skipping those the client reset meanwhile. With
  /// more waiting, reading pauses and the rest go on the next loop turn (a timer: timers run after the loop
  /// has handled the other sockets' events). A service on another loop gets them there, in one hand-over.
  private func dispatchReadyCalls() {
    var handOver: [GRPCServerCall] = []
    while readyCallsHead < readyCalls.count, turnCalls < Self.callsPerTurn, !closed, !handOverPending {
      let call = readyCalls[readyCallsHead]
      readyCallsHead += 1
      guard !call.connectionEnded else { continue }
      turnCalls += 1
      if call.crossesLoops {
        handOver.append(call)
      } else {
        core.service.handle(call)
      }
    }
    if !handOver.isEmpty {
      // One hand-over at a time: the next waits until the service has taken this one, so that a connection
      // with thousands of ready calls queues at most a turn's worth on the service's loop, ahead of the others.
      handOverPending = true
      let (service, calls) = (core.service, LoopBound(unchecked: handOver, loop: core.loop))
      let connection = LoopBound(unchecked: self, loop: loop)
      core.loop.execute {
        // A call whose stream closed meanwhile (the client reset it) never reaches the service.
        for call in calls.value where !call.isClosed && !call.closedOnConnection.load(ordering: .acquiring) {
          service.handle(call)
        }
        connection.loop.execute { connection.value.serviceTookHandOver() }
      }
    }
    if readyCallsHead == readyCalls.count {
      readyCalls.removeAll(keepingCapacity: readyCalls.count <= 1024)
      readyCallsHead = 0
      return
    }
    yieldTurn()
  }

  /// The connection used its turn: reading pauses, and the next turn (a timer: timers run after the loop has
  /// handled the other sockets' events) hands over more calls and reads again once none wait.
  private func yieldTurn() {
    guard !closed else { return }
    if !pausedForTurn {
      pausedForTurn = true
      updateReading()
    }
    // While a hand-over is with the service, its acknowledgement schedules the next turn.
    guard !turnScheduled, !handOverPending else { return }
    scheduleTurn()
  }

  /// The service took the last hand-over: the connection's next turn may hand over more.
  private func serviceTookHandOver() {
    handOverPending = false
    guard !closed, pausedForTurn, !turnScheduled else { return }
    scheduleTurn()
  }

  private func scheduleTurn() {
    turnScheduled = true
    loop.scheduleTimer(after: .zero) { [weak self] in
      guard let self, !self.closed else { return }
      self.turnScheduled = false
      self.turnHeaderBytes = 0
      self.turnCalls = 0
      self.pausedForTurn = false
      self.dispatchReadyCalls()
      if !self.pausedForTurn && !self.pendingInput.isEmpty {
        let input = self.pendingInput
        self.pendingInput = []
        input.withUnsafeBytes { self.process($0) }
      }
      self.scheduleFlush()
      if !self.pausedForTurn { self.updateReading() }
    }
  }

  func session(_ session: HTTP2Session, didRefuseHeaderListOfSize size: Int, limit: Int, streamID: Int32) {
    // nghttp2 decoded the list before it was refused: it counts against the connection's turn, and the
    // stream against the peer's rate.
    turnHeaderBytes += size
    // Trailers of a stream already counted take no second token.
    guard !closeAfterInput, streamHolds[streamID] == nil else { return }
    let (core, usage) = (core, usage)
    guard !core.shared.withLock({ core.streamOpened(by: usage, &$0) }) else { return }
    endForStreamRate(session)
  }

  /// Pauses or resumes reading from the socket as the reasons say.
  private func updateReading() {
    guard stream.isOpen else { return }
    if pausedForOutput || pausedForTurn {
      if !stream.isReadingPaused { stream.pauseReading() }
    } else if stream.isReadingPaused {
      stream.resumeReading()
    }
  }

  func session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
    removeRequest(streamID)
    releaseStream(streamID)
    defer { becameIdleIfNoStreams() }
    guard let call = calls.removeValue(forKey: streamID) else { return }
    if watchedBacklogs.removeValue(forKey: streamID) != nil { call.backlogSeen.store(0, ordering: .relaxed) }
    let cancelled = !call.connectionEnded
    core.shared.count {
      $0.openCalls -= 1
      if cancelled { $0.callsCancelledByClient += 1 }
    }
    if cancelled { call.closedByPeer() }
  }

  // MARK: - Handshake deadline

  func session(_ session: HTTP2Session, didReceiveSettings settings: HTTP2RemoteSettings) {
    guard let handshakeTimer else { return }
    loop.cancelTimer(handshakeTimer)
    self.handshakeTimer = nil
  }

  // MARK: - Idle timeout

  /// Starts the idle clock when no call is open (requests still arriving do not count: they have their own
  /// deadline), and makes sure one check is pending.
  private func becameIdleIfNoStreams() {
    guard !closed, calls.isEmpty, idleSince == nil else { return }
    idleSince = monotonicNanoseconds()
    if idleTimer == nil, let timeout = core.configuration.idleTimeout { scheduleIdleCheck(after: timeout) }
  }

  private func scheduleIdleCheck(after delay: Duration) {
    schedule(\.idleTimer, after: delay) { $0.checkIdle() }
  }

  /// Schedules `action` after `delay` on the connection's loop, keeping the timer in `slot` until it fires
  /// (then `slot` is cleared first): one of the connection's deadlines, which its close cancels.
  private func schedule(
    _ slot: ReferenceWritableKeyPath<ServerConnection, EventLoop.TimerID?>, after delay: Duration,
    _ action: @escaping (ServerConnection) -> Void
  ) {
    self[keyPath: slot] = loop.scheduleTimer(after: delay) { [weak self] in
      guard let self else { return }
      self[keyPath: slot] = nil
      action(self)
    }
  }

  /// The pending check came due: close the connection if it has been idle for the whole timeout;
  /// otherwise check again when the current idle period would reach it.
  private func checkIdle() {
    guard !closed, let timeout = core.configuration.idleTimeout, let idleSince else { return }
    let timeoutNanos = timeout.nonNegativeNanoseconds
    let idleFor = monotonicNanoseconds() &- idleSince
    if idleFor >= timeoutNanos {
      core.shared.count { $0.connectionsClosedIdle += 1 }
      core.logger.debug("closing an idle connection", metadata: ["idle_timeout": "\(timeout)"])
      guard session != nil else {
        drop()
        return
      }
      goAway()
      // Requests still arriving keep the connection open after GOAWAY until they end or their deadline
      // refuses them; past that, it is closed whatever the client does.
      loop.scheduleTimer(after: core.configuration.requestTimeout + .seconds(1)) { [weak self] in
        guard let self, self.calls.isEmpty else { return }
        self.drop()
      }
    } else {
      scheduleIdleCheck(after: .nanoseconds(Int64(timeoutNanos - idleFor)))
    }
  }

  // MARK: - Sending (from GRPCServerCall)

  func submitHeaders(streamID: Int32, _ fields: [HTTP2HeaderField], endStream: Bool) {
    do {
      try session?.submitHeaders(streamID: streamID, headers: fields, endStream: endStream)
    } catch {
      core.logger.debug("submitting headers failed", metadata: ["stream": "\(streamID)", "error": "\(error)"])
    }
    scheduleFlush()
  }

  /// Frames `message` (gRPC's length prefix) in the connection's scratch buffer and queues it on the stream:
  /// one buffer for all of the connection's calls, which run on its loop (a buffer per call kept each
  /// call's largest message, its first, alive: 4 KiB a stream at 100,000 streams).
  func sendMessage(streamID: Int32, _ message: UnsafeRawBufferPointer) {
    messageScratch.removeAll(keepingCapacity: true)
    GRPCMessageFramer.frame(message, into: &messageScratch)
    messageScratch.withUnsafeBytes { sendData(streamID: streamID, $0) }
    if messageScratch.capacity > 1 << 20 { messageScratch = [] }
  }

  func sendData(streamID: Int32, _ bytes: UnsafeRawBufferPointer) {
    do {
      try session?.sendData(streamID: streamID, bytes: bytes, endStream: false)
    } catch {
      core.logger.debug("sending data failed", metadata: ["stream": "\(streamID)", "error": "\(error)"])
    }
    scheduleFlush()
  }

  func resetStream(streamID: Int32, errorCode: HTTP2ErrorCode) {
    session?.resetStream(streamID, errorCode: errorCode)
    core.shared.count { $0.streamsReset += 1 }
    scheduleFlush()
  }

  /// The stream's unsent bytes; while the connection's own output is backed up (reading paused for it), its
  /// backlog too: no stream on it is getting anything out, and producers should hold back (FleetSim merges
  /// updates, the relay sends only the latest state).
  func outboundBufferedBytes(streamID: Int32) -> Int {
    (session?.outboundBufferedBytes(streamID: streamID) ?? 0) + (pausedForOutput ? stream.outboundBufferedBytes : 0)
  }

  /// Sends GOAWAY(NO_ERROR). What was queued before it (a health watcher's NOT_SERVING, a stream's last
  /// messages) is written first: nghttp2 sends control frames ahead of pending DATA, so a GOAWAY
  /// submitted in the same flush would overtake them.
  /// Starts reporting the backlog of `call`'s stream to its service on another loop, and reports it now.
  func watchBacklog(of call: GRPCServerCall) {
    let backlog = outboundBufferedBytes(streamID: call.streamID)
    call.backlogSeen.store(backlog, ordering: .relaxed)
    if backlog > 0 { watchedBacklogs[call.streamID] = call }
  }

  /// Reports each watched backlog anew; those that emptied are no longer watched.
  private func reportBacklogs() {
    for (streamID, call) in watchedBacklogs {
      let backlog = outboundBufferedBytes(streamID: streamID)
      call.backlogSeen.store(backlog, ordering: .relaxed)
      if backlog == 0 { watchedBacklogs[streamID] = nil }
    }
  }

  func goAway() {
    guard let session else { return }
    flushNow()
    session.goAway(errorCode: .noError)
    scheduleFlush()
  }

  func drop() {
    stream.close(error: .shutdown)
  }

  // MARK: - Output

  private func scheduleFlush() {
    flush.request()
  }

  /// Moves the session's output to the socket, a batch at a time, while the connection's unsent output
  /// is under ``GRPCServerConfiguration/maxOutboundBytesPerConnection``. Past it, the rest waits in the
  /// session (responses in their streams, where producers see them) and reading stops until the socket
  /// drains (``byteStreamDidDrainOutput(_:)``): a client that does not read cannot make the server
  /// hold more than that, nor answer more requests.
  private func flushNow() {
    guard let session, stream.isOpen else { return }
    let backedUp = stream.writeOutput(of: session, limit: core.configuration.maxOutboundBytesPerConnection)
    guard stream.isOpen else { return }
    if backedUp && !pausedForOutput {
      pausedForOutput = true
      core.shared.count { $0.readPauses += 1 }
      updateReading()
      startOutputStallTimer()
      // Every stream's backlog now includes the connection's: services on another loop hear it.
      for call in calls.values where call.crossesLoops && !call.connectionEnded { watchBacklog(of: call) }
    }
    if !watchedBacklogs.isEmpty { reportBacklogs() }
    if backedUp { return }
    if !session.wantsRead && !session.wantsWrite {
      stream.close(error: nil)
    }
  }

  func byteStreamDidDrainOutput(_ stream: ByteStream) {
    if pausedForOutput {
      pausedForOutput = false
      if let outputStallTimer { loop.cancelTimer(outputStallTimer) }
      outputStallTimer = nil
      updateReading()
    }
    flushNow()
  }

  /// A connection whose output stays backed up for ``GRPCServerConfiguration/outputStallTimeout`` (the
  /// client reads nothing) is closed: it would otherwise hold its output, its streams and a connection slot
  /// for as long as the client keeps it open.
  private func startOutputStallTimer() {
    if let outputStallTimer { loop.cancelTimer(outputStallTimer) }
    schedule(\.outputStallTimer, after: core.configuration.outputStallTimeout) { connection in
      guard !connection.closed, connection.pausedForOutput else { return }
      connection.core.shared.count { $0.connectionsStalled += 1 }
      connection.core.logger.debug(
        "closing a connection that read none of its output",
        metadata: ["peer": "\(connection.peer)", "timeout": "\(connection.core.configuration.outputStallTimeout)"])
      connection.drop()
    }
  }
}
