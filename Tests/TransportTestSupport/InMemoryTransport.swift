// Tests/TransportTestSupport/InMemoryTransport.swift - gRPC calls served in memory, on a virtual clock
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
/// `@unchecked Sendable`: every field is touched only on the scheduler.
final class InMemoryServerCall: GRPCServerCallContext, @unchecked Sendable {
  let path: String
  let request: [UInt8]
  let kind: GRPCCallKind
  let requestMetadata: GRPCMetadata
  let authority = "in-memory"
  let timeout: Duration?
  let maxReceiveMessageSize: Int
  let virtualScheduler: VirtualScheduler
  var scheduler: any GRPCScheduler { virtualScheduler }
  private let handler: any GRPCCallHandler
  private weak var transport: InMemoryTransport?
  private(set) var isClosed = false
  private var headersSent = false
  private var messagesSent = 0
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
    self.maxReceiveMessageSize = maxReceiveMessageSize
    self.virtualScheduler = scheduler
    self.handler = handler
    self.transport = transport
  }

  var outboundBufferedBytes: Int { 0 }

  func armDeadline() {
    guard let timeout else { return }
    deadlineTimer = virtualScheduler.scheduleTimer(after: timeout) { [self] in
      deadlineTimer = nil
      guard !isClosed else { return }
      finishClient(GRPCStatus(code: .deadlineExceeded, message: "deadline exceeded"))
      notifyCancel()
    }
  }

  func sendHeaders(_ metadata: GRPCMetadata) {
    guard !isClosed, !headersSent else { return }
    headersSent = true
    virtualScheduler.executeSoon { [self] in
      if !finishDelivered { handler.callDidReceiveHeaders(metadata) }
    }
  }

  func send(_ message: [UInt8]) {
    guard !isClosed else { return }
    if !headersSent { sendHeaders(GRPCMetadata()) }
    if kind == .unary && messagesSent >= 1 {
      finishClient(GRPCStatus(code: .internalError, message: "unary call received more than one response message"))
      notifyCancel()
      return
    }
    if message.count > maxReceiveMessageSize {
      finishClient(
        GRPCStatus(
          code: .resourceExhausted,
          message: "response message of \(message.count) bytes exceeds the limit of \(maxReceiveMessageSize) bytes"))
      notifyCancel()
      return
    }
    messagesSent += 1
    virtualScheduler.executeSoon { [self] in
      // Messages already on their way arrive before the status; none after a local end (cancel, deadline).
      guard !finishDelivered else { return }
      message.withUnsafeBytes { handler.callDidReceiveMessage($0) }
    }
  }

  func send(bytes message: UnsafeRawBufferPointer) { send([UInt8](message)) }

  func finish(_ status: GRPCStatus, trailers: GRPCMetadata) {
    guard !isClosed else { return }
    var final = status
    if status.isOK && kind == .unary && messagesSent == 0 {
      final = GRPCStatus(code: .internalError, message: "unary call ended OK without a response message")
    }
    // After the messages already on their way.
    isClosed = true
    virtualScheduler.executeSoon { [self] in deliverFinish(final, trailers: trailers) }
  }

  func reset(errorCode: UInt32) {
    guard !isClosed else { return }
    let code = GRPCStatusMapping.code(forHTTP2ErrorCode: errorCode)
    isClosed = true
    virtualScheduler.executeSoon { [self] in
      deliverFinish(GRPCStatus(code: code, message: "stream reset by the server"), trailers: GRPCMetadata())
    }
  }

  func onCancel(_ handler: @escaping () -> Void) { cancelHandlers.append(handler) }

  func schedule(after delay: Duration, _ body: @escaping () -> Void) {
    _ = virtualScheduler.scheduleTimer(after: delay) { [self] in
      if !isClosed { body() }
    }
  }

  func cancelByClient() {
    guard !isClosed else { return }
    transport?.callCancelledByClient()
    finishClient(GRPCStatus(code: .cancelled, message: "call cancelled by the client"))
    notifyCancel()
  }

  /// Ends the call for the client now (a local decision: cancel, deadline, unreachable).
  func finishClient(_ status: GRPCStatus) {
    guard !isClosed else { return }
    isClosed = true
    deliverFinish(status, trailers: GRPCMetadata())
  }

  private var finishDelivered = false

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
