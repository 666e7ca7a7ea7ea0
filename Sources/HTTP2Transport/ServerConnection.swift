// Sources/HTTP2Transport/ServerConnection.swift - one accepted HTTP/2 connection serving gRPC calls

public import GRPCProtocol
import HTTP2Session
import Logging

/// One call on a ``GRPCServer``: the request, and the way to answer it.
///
/// Every method must be called on ``loop``'s thread (the handler is called there; to
/// answer later, schedule with ``schedule(after:_:)`` or ``execute(_:)``).
///
/// `@unchecked Sendable`: it can be handed to other threads only to be sent back to its
/// loop; every method checks (in debug builds) that it runs on the loop.
public final class GRPCServerCall: @unchecked Sendable {
  /// The method path, `/package.Service/Method`.
  public let path: String
  /// The request metadata (custom headers; `-bin` values decoded).
  public let requestMetadata: GRPCMetadata
  /// The request's `:authority`.
  public let authority: String
  /// The serialized request message.
  public let request: [UInt8]
  /// The deadline the client sent in `grpc-timeout`, if any, as a duration from arrival.
  public let timeout: Duration?

  let loop: EventLoop
  weak var connection: ServerConnection?
  let streamID: Int32
  private var headersSent = false
  /// Whether the call has ended (finished, reset, or cancelled by the client).
  public private(set) var isClosed = false
  private var cancelHandlers: [() -> Void] = []
  private var scratch: [UInt8] = []

  init(
    path: String, requestMetadata: GRPCMetadata, authority: String, request: [UInt8], timeout: Duration?,
    loop: EventLoop, connection: ServerConnection, streamID: Int32
  ) {
    self.path = path
    self.requestMetadata = requestMetadata
    self.authority = authority
    self.request = request
    self.timeout = timeout
    self.loop = loop
    self.connection = connection
    self.streamID = streamID
  }

  /// Sends the response headers (optional: the first message sends them if needed).
  public func sendHeaders(_ metadata: GRPCMetadata = GRPCMetadata()) {
    loop.assertInEventLoop()
    guard !isClosed, !headersSent, let connection else { return }
    headersSent = true
    var fields = [HTTP2HeaderField(":status", "200"), HTTP2HeaderField("content-type", "application/grpc")]
    for field in metadata.headerFields { fields.append(HTTP2HeaderField(field.name, field.value)) }
    connection.submitHeaders(streamID: streamID, fields, endStream: false)
  }

  /// Sends one response message.
  public func send(_ message: [UInt8]) {
    message.withUnsafeBytes { send(bytes: $0) }
  }

  /// Sends one response message from borrowed bytes.
  public func send(bytes message: UnsafeRawBufferPointer) {
    loop.assertInEventLoop()
    guard !isClosed, let connection else { return }
    if !headersSent { sendHeaders() }
    scratch.removeAll(keepingCapacity: true)
    GRPCMessageFramer.frame(message, into: &scratch)
    scratch.withUnsafeBytes { connection.sendData(streamID: streamID, $0) }
  }

  /// Bytes queued for this call that flow control has not let out yet. A producer
  /// should hold back (or coalesce) while this grows.
  public var outboundBufferedBytes: Int {
    connection?.outboundBufferedBytes(streamID: streamID) ?? 0
  }

  /// Ends the call with `status` and `trailers` (Trailers-Only when nothing was sent).
  public func finish(_ status: GRPCStatus, trailers: GRPCMetadata = GRPCMetadata()) {
    loop.assertInEventLoop()
    guard !isClosed, let connection else { return }
    isClosed = true
    var fields: [HTTP2HeaderField] = []
    if !headersSent {
      fields.append(HTTP2HeaderField(":status", "200"))
      fields.append(HTTP2HeaderField("content-type", "application/grpc"))
    }
    fields.append(HTTP2HeaderField("grpc-status", String(status.code.rawValue)))
    if !status.message.isEmpty {
      fields.append(HTTP2HeaderField("grpc-message", GRPCPercentEncoding.encode(status.message)))
    }
    for field in trailers.headerFields { fields.append(HTTP2HeaderField(field.name, field.value)) }
    connection.submitHeaders(streamID: streamID, fields, endStream: true)
  }

  /// Resets the stream (fault injection, or giving up on a slow client).
  public func reset(errorCode: UInt32 = 8) {
    loop.assertInEventLoop()
    guard !isClosed, let connection else { return }
    isClosed = true
    connection.resetStream(streamID: streamID, errorCode: errorCode)
  }

  /// Runs `handler` when the client cancels the call or the connection drops.
  public func onCancel(_ handler: @escaping () -> Void) {
    loop.assertInEventLoop()
    if isClosed { return }
    cancelHandlers.append(handler)
  }

  /// Runs `body` on the call's loop after `delay` (cancelled calls still run it; check ``isClosed``).
  public func schedule(after delay: Duration, _ body: @escaping () -> Void) {
    loop.assertInEventLoop()
    loop.scheduleTimer(after: delay, body)
  }

  /// Runs `body` on the call's loop, from any thread.
  public func execute(_ body: @escaping @Sendable () -> Void) {
    loop.execute(body)
  }

  func cancelledByPeer() {
    guard !isClosed else { return }
    isClosed = true
    let handlers = cancelHandlers
    cancelHandlers = []
    for handler in handlers { handler() }
  }
}

/// One accepted connection. Confined to the server's loop.
final class ServerConnection: ByteStreamDelegate, HTTP2SessionDelegate {
  private struct PendingRequest {
    var path = ""
    var authority = ""
    var metadata = GRPCMetadata()
    var timeout: Duration?
    var deframer: GRPCMessageDeframer
    var message: [UInt8]?
    var failed: GRPCStatus?
  }

  unowned let core: ServerCore
  let stream: ByteStream
  private var session: HTTP2Session?
  private var requests: [Int32: PendingRequest] = [:]
  private var calls: [Int32: GRPCServerCall] = [:]
  private var flushScheduled = false
  private var outputScratch: [UInt8] = []
  private var closed = false

  init(core: ServerCore, stream: ByteStream) {
    self.core = core
    self.stream = stream
  }

  func start() {
    stream.delegate = self
    stream.start()
  }

  func byteStreamDidBecomeReady(_ stream: ByteStream) {
    do {
      var settings = HTTP2Settings()
      settings.maxConcurrentStreams = core.configuration.maxConcurrentStreams
      session = try HTTP2Session(role: .server, settings: settings, delegate: self)
      scheduleFlush()
    } catch {
      stream.close(error: "starting the HTTP/2 session: \(error)")
    }
  }

  func byteStream(_ stream: ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    guard let session else { return }
    do {
      try session.receive(bytes)
    } catch {
      // A client that breaks the protocol gets its GOAWAY and is closed; others are unaffected.
      flushNow()
      stream.close(error: "HTTP/2 protocol error from the client: \(error)")
    }
  }

  func byteStreamDidFinishReading(_ stream: ByteStream) { scheduleFlush() }

  func byteStream(_ stream: ByteStream, didCloseWithError error: String?) {
    guard !closed else { return }
    closed = true
    let open = calls
    calls.removeAll()
    requests.removeAll()
    for (_, call) in open {
      core.stats.openCalls -= 1
      call.cancelledByPeer()
    }
    session = nil
    core.connectionClosed(self)
  }

  // MARK: - HTTP/2 events

  func session(
    _ session: HTTP2Session, didReceiveHeaders headers: [HTTP2HeaderField], kind: HTTP2HeadersKind, streamID: Int32,
    endStream: Bool
  ) {
    guard kind == .request else {
      // Request trailers are not part of unary or server-streaming calls; ignore them.
      if endStream { requestEnded(streamID) }
      return
    }
    var request = PendingRequest(deframer: GRPCMessageDeframer(maxMessageSize: core.configuration.maxReceiveMessageSize))
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
    if endStream { requestEnded(streamID) }
  }

  func session(_ session: HTTP2Session, didReceiveData data: UnsafeRawBufferPointer, streamID: Int32) {
    session.consume(streamID: streamID, bytes: data.count)
    guard var request = requests[streamID], request.failed == nil else { return }
    do {
      try request.deframer.process(data) { message in
        if request.message == nil {
          request.message = [UInt8](message)
        } else {
          request.failed = GRPCStatus(code: .unimplemented, message: "more than one request message")
        }
      }
    } catch {
      request.failed = error.status
    }
    requests[streamID] = request
  }

  func session(_ session: HTTP2Session, didReceiveEndOfStream streamID: Int32) {
    requestEnded(streamID)
  }

  private func requestEnded(_ streamID: Int32) {
    guard let request = requests.removeValue(forKey: streamID) else { return }
    let call = GRPCServerCall(
      path: request.path, requestMetadata: request.metadata, authority: request.authority,
      request: request.message ?? [], timeout: request.timeout, loop: core.loop, connection: self, streamID: streamID)
    calls[streamID] = call
    core.stats.callsStarted += 1
    core.stats.openCalls += 1
    if let failed = request.failed {
      call.finish(failed)
    } else if request.message == nil || request.deframer.hasPartialMessage {
      call.finish(GRPCStatus(code: .internalError, message: "the request message is missing or incomplete"))
    } else {
      core.service.handle(call)
    }
    scheduleFlush()
  }

  func session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
    requests[streamID] = nil
    guard let call = calls.removeValue(forKey: streamID) else { return }
    core.stats.openCalls -= 1
    if !call.isClosed {
      core.stats.callsCancelledByClient += 1
      call.cancelledByPeer()
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

  func sendData(streamID: Int32, _ bytes: UnsafeRawBufferPointer) {
    do {
      try session?.sendData(streamID: streamID, bytes: bytes, endStream: false)
    } catch {
      core.logger.debug("sending data failed", metadata: ["stream": "\(streamID)", "error": "\(error)"])
    }
    scheduleFlush()
  }

  func resetStream(streamID: Int32, errorCode: UInt32) {
    session?.resetStream(streamID, errorCode: HTTP2ErrorCode(rawValue: errorCode))
    core.stats.streamsReset += 1
    scheduleFlush()
  }

  func outboundBufferedBytes(streamID: Int32) -> Int {
    session?.outboundBufferedBytes(streamID: streamID) ?? 0
  }

  func goAway() {
    guard let session else { return }
    session.goAway(errorCode: .noError)
    scheduleFlush()
  }

  func drop() {
    stream.close(error: "dropped by the server")
  }

  // MARK: - Output

  private func scheduleFlush() {
    guard !flushScheduled else { return }
    flushScheduled = true
    core.loop.executeSoon { [weak self] in
      guard let self else { return }
      self.flushScheduled = false
      self.flushNow()
    }
  }

  private func flushNow() {
    guard let session, stream.isOpen else { return }
    outputScratch.removeAll(keepingCapacity: true)
    session.drainOutput(into: &outputScratch)
    if !outputScratch.isEmpty {
      outputScratch.withUnsafeBytes { stream.write($0) }
      stream.flush()
    }
    if !session.wantsRead && !session.wantsWrite {
      stream.close(error: nil)
    }
  }
}
