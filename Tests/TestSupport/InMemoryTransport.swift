// Tests/TestSupport/InMemoryTransport.swift - gRPC calls served in memory, on a virtual clock
//
// A client transport and a server in one object, with no bytes and no sockets in between: a call's request
// goes to a `GRPCService` (FleetSim's, or a test's) and its responses come back to the caller's handler,
// each one a scheduler task later, as if they had crossed a network. Deadlines run on the scheduler's
// (virtual) clock. Everything happens on one `VirtualScheduler`, so a test is deterministic.

public import GRPCProtocol
import Primitives

/// A ``GRPCClientTransport`` whose calls a ``GRPCService`` answers in memory.
public final class InMemoryTransport: GRPCClientTransport, Sendable {
  /// The scheduler every call and the service run on.
  public let scheduler: VirtualScheduler
  public var schedulers: [any GRPCScheduler] { [scheduler] }
  private let service: any GRPCService
  private let counters = Locked(Counters())
  private let failure = Locked<GRPCStatus?>(nil)

  private struct Counters {
    var started: [String: Int] = [:]
    var active = 0
    var cancelledByClient = 0
  }

  /// A transport whose calls `service` answers, on `scheduler`.
  public init(service: any GRPCService, scheduler: VirtualScheduler) {
    self.service = service
    self.scheduler = scheduler
  }

  /// While set, every new call fails at once with `status` (the server is unreachable); nil restores it.
  public func setUnreachable(_ status: GRPCStatus?) {
    failure.withLock { $0 = status }
  }

  /// How many calls of `path` were started (nil: all).
  public func callsStarted(_ path: String? = nil) -> Int {
    counters.withLock { counters in path.map { counters.started[$0] ?? 0 } ?? counters.started.values.reduce(0, +) }
  }

  /// Calls not finished yet.
  public var activeCalls: Int { counters.withLock { $0.active } }

  /// Calls the client cancelled while they were open (what a server sees as RST_STREAM from the client).
  public var callsCancelledByClient: Int { counters.withLock { $0.cancelledByClient } }

  public func startCall(
    path: String, request: [UInt8], kind: GRPCCallKind, options: CallOptions, on scheduler: any GRPCScheduler,
    handler: any GRPCCallHandler
  ) -> GRPCCallHandle {
    let call = InMemoryServerCall(
      path: path, request: request, kind: kind, metadata: options.metadata, timeout: options.timeout,
      maxReceiveMessageSize: options.maxReceiveMessageSize ?? (4 << 20), scheduler: self.scheduler, handler: handler,
      transport: self)
    counters.withLock {
      $0.started[path, default: 0] += 1
      $0.active += 1
    }
    let unreachable = failure.withLock { $0 }
    let service = service
    self.scheduler.execute {
      if let unreachable {
        call.finishClient(unreachable)
        return
      }
      call.armDeadline()
      service.handle(call)
    }
    return GRPCCallHandle(cancel: { [scheduler = self.scheduler] in
      scheduler.execute { call.cancelByClient() }
    })
  }

  fileprivate func callEnded() {
    counters.withLock { $0.active -= 1 }
  }

  fileprivate func callCancelledByClient() {
    counters.withLock { $0.cancelledByClient += 1 }
  }

  public func statistics() async -> GRPCTransportStatistics {
    GRPCTransportStatistics(openConnections: 1, activeCalls: activeCalls)
  }

  public func shutdown() async {}
}

/// One call, as the service sees it and as it reaches the client's handler. Confined to the scheduler.
///
/// It runs the real rules on both sides: the service's steps go through a ``GRPCServerCallMachine``, which turns
/// them into header fields and framed messages as a server would send them; each reaches the client one scheduler
/// task later, where a ``GRPCClientCall`` checks it and decides what the handler hears, as a channel's connection
/// would. A local end on the client's side (a cancel, the deadline, a response it refuses) reaches the service as a
/// cancellation, as RST_STREAM would. There is no copy of either side's rules here.
///
/// `@unchecked Sendable`: every field is touched only on the scheduler.
final class InMemoryServerCall: GRPCServerCallContext, @unchecked Sendable {
  let path: String
  let request: [UInt8]
  let kind: GRPCCallKind
  let requestMetadata: GRPCMetadata
  let authority = "in-memory"
  let timeout: Duration?
  let virtualScheduler: VirtualScheduler
  var scheduler: any GRPCScheduler { virtualScheduler }
  private let handler: any GRPCCallHandler
  private weak var transport: InMemoryTransport?
  /// The server's side: what the service's steps send.
  private var server = GRPCServerCallMachine()
  /// The client's side: what arrives, checked as a channel checks it.
  private var client: GRPCClientCall
  /// The handler heard the end: nothing more reaches it.
  private var finishDelivered = false
  private var cancelHandlers: [() -> Void] = []
  private var deadlineTimer: GRPCTimerID?

  init(
    path: String, request: [UInt8], kind: GRPCCallKind, metadata: GRPCMetadata, timeout: Duration?,
    maxReceiveMessageSize: Int, scheduler: VirtualScheduler, handler: any GRPCCallHandler,
    transport: InMemoryTransport
  ) {
    self.path = path
    self.request = request
    self.kind = kind
    self.requestMetadata = metadata
    self.timeout = timeout
    self.virtualScheduler = scheduler
    self.handler = handler
    self.transport = transport
    self.client = GRPCClientCall(kind: kind, maxReceiveMessageSize: maxReceiveMessageSize)
  }

  var isClosed: Bool { server.isClosed }
  var outboundBufferedBytes: Int { 0 }

  func armDeadline() {
    guard let timeout else { return }
    deadlineTimer = virtualScheduler.scheduleTimer(after: timeout) { [self] in
      deadlineTimer = nil
      clientDecided(client.deadlineExceeded(), remoteEnded: false)
    }
  }

  // MARK: - The service's side

  func sendHeaders(_ metadata: GRPCMetadata) {
    guard let fields = server.sendHeaders(metadata) else { return }
    deliver { $0.receiveHeaders(fields, endStream: false) }
  }

  func send(_ message: [UInt8]) {
    guard case .send(let headersFirst) = server.sendMessage() else { return }
    if let headersFirst { deliver { $0.receiveHeaders(headersFirst, endStream: false) } }
    let framed = GRPCMessageFramer.framed(message)
    deliver { $0.receiveData(framed) }
  }

  func send(bytes message: UnsafeRawBufferPointer) { send([UInt8](message)) }

  func finish(_ status: GRPCStatus, trailers: GRPCMetadata) {
    guard let fields = server.finish(status, trailers: trailers) else { return }
    deliver { $0.receiveHeaders(fields, endStream: true) }
  }

  func reset(errorCode: HTTP2ErrorCode) {
    guard server.reset() else { return }
    deliver { call in call.clientDecided(call.client.streamClosed(http2ErrorCode: errorCode), remoteEnded: true) }
  }

  func onCancel(_ handler: @escaping () -> Void) {
    guard !server.isClosed else { return }
    cancelHandlers.append(handler)
  }

  /// Runs `body` after `delay` whether or not the call has ended, as ``GRPCServerCallContext`` says.
  func schedule(after delay: Duration, _ body: @escaping () -> Void) {
    _ = virtualScheduler.scheduleTimer(after: delay, body)
  }

  // MARK: - The client's side

  /// The caller cancelled the call.
  func cancelByClient() {
    guard !finishDelivered else { return }
    if !server.isClosed { transport?.callCancelledByClient() }
    clientDecided(client.cancel(), remoteEnded: false)
  }

  /// Ends the call for the client now, before the service saw it (the server is unreachable).
  func finishClient(_ status: GRPCStatus) {
    _ = server.peerClosed()
    deliverFinish(status, trailers: GRPCMetadata())
  }

  /// What the server sent reaches the client one scheduler task later, after what was sent before it.
  private func deliver(_ arrival: @escaping (InMemoryServerCall) -> Void) {
    virtualScheduler.executeSoon { [self] in
      guard !finishDelivered else { return }
      arrival(self)
    }
  }

  private func receiveHeaders(_ fields: GRPCServerCallMachine.HeaderFields, endStream: Bool) {
    clientDecided(client.receiveHeaders(fields, endStream: endStream), remoteEnded: endStream)
  }

  private func receiveData(_ framed: [UInt8]) {
    let handler = handler
    let action = framed.withUnsafeBytes { bytes in
      client.receiveData(bytes, endStream: false) { message, compression in
        handler.callDidReceiveMessage(message, compression: compression)
      }
    }
    clientDecided(action, remoteEnded: false)
  }

  /// Carries out what the client's machine decided, as a channel's connection does: the headers to the handler, or
  /// the end (a stream the client resets reaches the service as a cancellation). No retry in memory.
  private func clientDecided(_ action: GRPCClientCall.Action, remoteEnded: Bool) {
    switch action {
    case .none:
      return
    case .deliverHeaders(let headers):
      handler.callDidReceiveHeaders(headers)
    case .finish(let status), .retryOrFinish(let status):
      deliverFinish(status, trailers: client.trailers)
      if !remoteEnded, server.peerClosed() { notifyCancel() }
    case .resetAndFinish(_, let status):
      deliverFinish(status, trailers: client.trailers)
      if server.peerClosed() { notifyCancel() }
    }
  }

  private func deliverFinish(_ status: GRPCStatus, trailers: GRPCMetadata) {
    guard !finishDelivered else { return }
    finishDelivered = true
    if let deadlineTimer { virtualScheduler.cancelTimer(deadlineTimer) }
    deadlineTimer = nil
    handler.callDidFinish(status: status, trailers: trailers)
    transport?.callEnded()
  }

  private func notifyCancel() {
    let handlers = cancelHandlers
    cancelHandlers.removeAll()
    for handler in handlers { handler() }
  }
}
