// Sources/HTTP2Transport/GRPCServerCall.swift - one call on a GRPCServer, answered from the service's loop
//
// The service runs on the server's loop; the call's connection runs on that loop or on one of a group's.
// What the service does to a call (headers, messages, the end) is turned into the fields or bytes to send
// there, and performed on the connection's loop: at once when it is the same loop, else handed over in
// order. What the connection learns (the client cancelled) comes back to the service's loop the same way.

public import GRPCProtocol
import HTTP2Session
import Primitives
import Synchronization

/// One call on a ``GRPCServer``: the request, and the way to answer it.
///
/// Every method must be called on ``scheduler``'s thread, the server's loop (the service's handler is
/// called there; to answer later, schedule with ``schedule(after:_:)`` or ``execute(_:)``).
///
/// `@unchecked Sendable`: it can be handed to other threads only to be sent back to its
/// loop; every method checks (in debug builds) that it runs on the loop. The connection's side of it
/// (``connectionEnded``) is confined to the connection's loop; the backlog it reports across loops is atomic.
public final class GRPCServerCall: GRPCServerCallContext, @unchecked Sendable {
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
  /// The client's address (its numeric host), for per-client limits and logs.
  public let peerAddress: String

  /// The service's loop (the server's).
  let loop: EventLoop
  /// The call's event loop, where its methods run and its timers fire: the server's loop.
  public var scheduler: any GRPCScheduler { loop }
  /// The connection, reached only on its loop (``connectionLoop``); weak, so that a call a service keeps
  /// does not keep a closed connection's buffers.
  private weak var connection: ServerConnection?
  let connectionLoop: EventLoop
  /// Whether the connection runs on another loop than the service: then every step hops.
  let crossesLoops: Bool
  let streamID: Int32
  /// What the service's steps turn into on the wire, and which come too late.
  private var machine = GRPCServerCallMachine()
  /// Whether the call has ended (finished, reset, or cancelled by the client), as the service sees it.
  public var isClosed: Bool { machine.isClosed }
  private var cancelHandlers: [() -> Void] = []

  /// On the connection's loop: whether the connection has sent the call's end, or seen its stream close.
  var connectionEnded = false
  /// Set on the connection's loop when the stream closed before the call ended, read on the service's: a
  /// call the client reset before the service got it is never handed over.
  let closedOnConnection = Atomic<Bool>(false)
  /// Across loops: bytes of messages the service sent that the connection has not queued yet, and the
  /// stream's backlog the connection last saw (``outboundBufferedBytes``).
  let bytesInHandOff = Atomic<Int>(0)
  let backlogSeen = Atomic<Int>(0)

  init(
    path: String, requestMetadata: GRPCMetadata, authority: String, request: [UInt8], timeout: Duration?,
    peerAddress: String, loop: EventLoop, connection: ServerConnection, connectionLoop: EventLoop, streamID: Int32
  ) {
    self.peerAddress = peerAddress
    self.path = path
    self.requestMetadata = requestMetadata
    self.authority = authority
    self.request = request
    self.timeout = timeout
    self.loop = loop
    self.connection = connection
    self.connectionLoop = connectionLoop
    self.crossesLoops = loop !== connectionLoop
    self.streamID = streamID
  }

  /// Runs `step` with the connection on its loop: now when it is the service's, else after what was handed
  /// over before it.
  private func perform(_ step: @escaping (ServerConnection, GRPCServerCall) -> Void) {
    guard crossesLoops else {
      if let connection { step(connection, self) }
      return
    }
    let handOff = LoopBound(unchecked: (step, self), loop: connectionLoop)
    connectionLoop.execute {
      let (step, call) = handOff.value
      if let connection = call.connection { step(connection, call) }
    }
  }

  /// The header fields for the session.
  static func fields(_ fields: GRPCServerCallMachine.HeaderFields) -> [HTTP2HeaderField] {
    fields.map { HTTP2HeaderField($0.name, $0.value) }
  }

  /// A Trailers-Only response's fields, for a call the server refuses before any service sees it.
  static func refusalFields(_ status: GRPCStatus) -> [HTTP2HeaderField] {
    fields(GRPCServerCallMachine.trailerFields(status, GRPCMetadata(), headersSent: false))
  }

  /// Sends the response headers (optional: the first message sends them if needed).
  public func sendHeaders(_ metadata: GRPCMetadata = GRPCMetadata()) {
    loop.assertInEventLoop()
    guard let headers = machine.sendHeaders(metadata) else { return }
    submit(headers)
  }

  /// Hands response headers to the connection.
  private func submit(_ headers: GRPCServerCallMachine.HeaderFields) {
    let fields = Self.fields(headers)
    perform { connection, call in
      guard !call.connectionEnded else { return }
      connection.submitHeaders(streamID: call.streamID, fields, endStream: false)
    }
  }

  /// Sends one response message.
  public func send(_ message: [UInt8]) {
    loop.assertInEventLoop()
    guard case .send(let headersFirst) = machine.sendMessage() else { return }
    if let headersFirst { submit(headersFirst) }
    guard crossesLoops else {
      message.withUnsafeBytes { connection?.sendMessage(streamID: streamID, $0) }
      return
    }
    let bytes = message.count + GRPCMessageFramer.prefixSize
    bytesInHandOff.add(bytes, ordering: .relaxed)
    perform { connection, call in
      call.bytesInHandOff.subtract(bytes, ordering: .relaxed)
      guard !call.connectionEnded else { return }
      message.withUnsafeBytes { connection.sendMessage(streamID: call.streamID, $0) }
      connection.watchBacklog(of: call)
    }
  }

  /// Sends one response message from borrowed bytes (copied when the connection runs on another loop).
  public func send(bytes message: UnsafeRawBufferPointer) {
    loop.assertInEventLoop()
    guard crossesLoops else {
      guard case .send(let headersFirst) = machine.sendMessage() else { return }
      if let headersFirst { submit(headersFirst) }
      connection?.sendMessage(streamID: streamID, message)
      return
    }
    send([UInt8](message))
  }

  /// Bytes queued for this call that flow control has not let out yet, plus the connection's whole unsent
  /// output while that is over ``GRPCServerConfiguration/maxOutboundBytesPerConnection``. A producer should
  /// hold back (or coalesce) while this grows. With the connection on another loop, what it last reported
  /// plus what is on its way to it.
  public var outboundBufferedBytes: Int {
    guard crossesLoops else { return connection?.outboundBufferedBytes(streamID: streamID) ?? 0 }
    return bytesInHandOff.load(ordering: .relaxed) + backlogSeen.load(ordering: .relaxed)
  }

  /// Ends the call with `status` and `trailers` (Trailers-Only when nothing was sent).
  public func finish(_ status: GRPCStatus, trailers: GRPCMetadata = GRPCMetadata()) {
    loop.assertInEventLoop()
    guard let trailerFields = machine.finish(status, trailers: trailers) else { return }
    let fields = Self.fields(trailerFields)
    perform { connection, call in
      guard !call.connectionEnded else { return }
      call.connectionEnded = true
      connection.submitHeaders(streamID: call.streamID, fields, endStream: true)
    }
  }

  /// Resets the stream with `errorCode` (fault injection, or giving up on a slow client).
  public func reset(errorCode: HTTP2ErrorCode = .cancel) {
    loop.assertInEventLoop()
    guard machine.reset() else { return }
    perform { connection, call in
      guard !call.connectionEnded else { return }
      call.connectionEnded = true
      connection.resetStream(streamID: call.streamID, errorCode: errorCode)
    }
  }

  /// Runs `handler` when the client cancels the call or the connection drops.
  public func onCancel(_ handler: @escaping () -> Void) {
    loop.assertInEventLoop()
    if machine.isClosed { return }
    cancelHandlers.append(handler)
  }

  /// Runs `body` on the call's loop after `delay`, whether or not the call has ended by then (check ``isClosed``).
  public func schedule(after delay: Duration, _ body: @escaping () -> Void) {
    loop.assertInEventLoop()
    loop.scheduleTimer(after: delay, body)
  }

  /// Runs `body` on the call's loop, from any thread.
  public func execute(_ body: @escaping @Sendable () -> Void) {
    loop.execute(body)
  }

  /// On the connection's loop: the stream closed before the call ended (the client cancelled, or the
  /// connection went). The service hears it on its loop.
  func closedByPeer() {
    connectionEnded = true
    closedOnConnection.store(true, ordering: .releasing)
    guard crossesLoops else {
      cancelledByPeer()
      return
    }
    let call = LoopBound(unchecked: self, loop: loop)
    loop.execute { call.value.cancelledByPeer() }
  }

  /// On the service's loop: runs the cancel handlers once.
  private func cancelledByPeer() {
    guard machine.peerClosed() else { return }
    let handlers = cancelHandlers
    cancelHandlers = []
    for handler in handlers { handler() }
  }
}
