// Sources/GRPCProtocol/GRPCClientTransport.swift - the seam between callers and a transport
//
// What a caller of gRPC methods needs from a transport, and nothing more: start a call of any kind and
// get its response parts through a handler; run work and timers on the serial context where those
// handlers run; statistics; shutdown. The HTTP/2 channel on nghttp2 (HTTP2Transport) is one transport;
// an in-memory transport with a virtual clock is another, for tests. JourneySharing depends on this
// seam, not on HTTP/2.

/// Runs work and timers on one serial context: an event loop thread, or a test's virtual clock.
///
/// Everything a transport's calls report runs on a scheduler; a caller confined to that scheduler (one
/// followed trip) needs no lock and no hop per message.
public protocol GRPCScheduler: AnyObject, Sendable {
  /// Runs `body` on the scheduler, after the work already queued. Any thread.
  func execute(_ body: @escaping @Sendable () -> Void)
  /// On the scheduler: runs `body` once the current event has been handled (a socket read with any
  /// number of messages), before the next one: the place to do once what many messages asked for.
  func executeSoon(_ body: @escaping () -> Void)
  /// On the scheduler: runs `body` on it once `delay` has passed, unless cancelled first.
  func scheduleTimer(after delay: Duration, _ body: @escaping () -> Void) -> GRPCTimerID
  /// On the scheduler: cancels a timer that has not run yet (nothing if it ran or was cancelled).
  func cancelTimer(_ timer: GRPCTimerID)
  /// Whether the caller runs on the scheduler.
  var inScheduler: Bool { get }
  /// The scheduler's monotonic clock, in nanoseconds (a virtual clock's own time in tests).
  var monotonicNanoseconds: UInt64 { get }
  /// The scheduler's wall clock, in Unix seconds (a virtual clock moves it with its monotonic time).
  var unixTime: Double { get }
}

/// A timer scheduled with ``GRPCScheduler/scheduleTimer(after:_:)``.
public typealias GRPCTimerID = UInt64

/// A transport for gRPC calls: the seam callers depend on (an HTTP/2 channel, an in-memory server).
///
/// Status codes a transport reports, as ``GRPCCallHandler/callDidFinish(status:trailers:)``: UNAVAILABLE when
/// no connection could be made or it failed (the message says why; ``GRPCStatus/cause`` holds the transport's
/// typed connection error, when it has one), DEADLINE_EXCEEDED when the call's timeout
/// ran out, CANCELLED after ``GRPCCallHandle/cancel()``, RESOURCE_EXHAUSTED for a response over the receive
/// limits, INTERNAL when the response breaks the protocol, and otherwise the server's status.
public protocol GRPCClientTransport: Sendable {
  /// The schedulers calls run on; at least one. A caller confined to one of them starts its calls on it.
  var schedulers: [any GRPCScheduler] { get }

  /// Starts a call whose response parts go to `handler` on `scheduler` (one of ``schedulers``).
  ///
  /// - Parameters:
  ///   - path: The method path, `/package.Service/Method`.
  ///   - request: The serialized request message (the only one: unary and server-streaming calls).
  ///   - kind: Unary or server streaming.
  ///   - options: Timeout, metadata, limits for this call.
  ///   - scheduler: Where the handler's callbacks run.
  ///   - handler: Receives headers, each message, and the final status exactly once.
  /// - Returns: A handle that cancels the call.
  func startCall(
    path: String, request: [UInt8], kind: GRPCCallKind, options: CallOptions, on scheduler: any GRPCScheduler,
    handler: any GRPCCallHandler
  ) -> GRPCCallHandle

  /// Connections and calls now.
  func statistics() async -> GRPCTransportStatistics

  /// Stops taking calls, lets the open ones finish, then closes (HTTP/2: GOAWAY).
  func shutdown() async
}

/// A transport's connections and calls at one moment.
public struct GRPCTransportStatistics: Sendable, Hashable {
  /// Connections connecting, ready or draining.
  public var openConnections: Int
  /// Calls holding a stream.
  public var activeCalls: Int
  /// Calls waiting for a connection or a stream.
  public var queuedCalls: Int
  /// Connection attempts started.
  public var connectAttempts: Int
  /// Connection attempts that failed before the connection was ready.
  public var connectFailures: Int
  /// Keepalive PINGs sent.
  public var pingsSent: Int
  /// Keepalive PING acknowledgements received.
  public var pingAcksReceived: Int
  /// GOAWAY frames received from the server, over all connections.
  public var goAwaysReceived: Int
  /// The backoff delays chosen after recent failures, oldest first.
  public var recentBackoffDelays: [Duration]
  /// Open connections per server address (`127.0.0.2:50051`); empty for a transport without addresses.
  public var connectionsPerAddress: [String: Int]
  /// Resolutions of the target's name that completed.
  public var resolutions: Int
  /// Resolutions that failed.
  public var resolutionFailures: Int = 0
  /// The addresses of the last successful resolution, in its order (`host:port`); empty without addresses.
  public var addresses: [String] = []
  /// Calls holding a stream, per server address.
  public var streamsPerAddress: [String: Int] = [:]
  /// Open connections on each of the transport's schedulers (event loops), in their order.
  public var connectionsPerLoop: [Int] = []
  /// The keepalive interval in force (an HTTP/2 channel doubles it after each `too_many_pings`); nil without
  /// keepalive.
  public var keepaliveInterval: Duration?

  /// Statistics with every figure given.
  public init(
    openConnections: Int = 0, activeCalls: Int = 0, queuedCalls: Int = 0, connectAttempts: Int = 0,
    connectFailures: Int = 0, pingsSent: Int = 0, pingAcksReceived: Int = 0, goAwaysReceived: Int = 0,
    recentBackoffDelays: [Duration] = [], connectionsPerAddress: [String: Int] = [:], resolutions: Int = 0
  ) {
    self.connectionsPerAddress = connectionsPerAddress
    self.resolutions = resolutions
    self.openConnections = openConnections
    self.activeCalls = activeCalls
    self.queuedCalls = queuedCalls
    self.connectAttempts = connectAttempts
    self.connectFailures = connectFailures
    self.pingsSent = pingsSent
    self.pingAcksReceived = pingAcksReceived
    self.goAwaysReceived = goAwaysReceived
    self.recentBackoffDelays = recentBackoffDelays
  }
}

/// A value confined to a scheduler, carried across threads to come back to it.
///
/// `@unchecked Sendable`: ``value`` may be read only on ``scheduler`` (checked in debug builds).
package struct SchedulerBound<Value>: @unchecked Sendable {
  private let unchecked: Value
  /// The scheduler the value belongs to.
  package let scheduler: any GRPCScheduler

  /// Binds `value` to `scheduler`.
  package init(_ value: Value, scheduler: any GRPCScheduler) {
    self.unchecked = value
    self.scheduler = scheduler
  }

  /// The value; only on ``scheduler``.
  package var value: Value {
    assert(scheduler.inScheduler, "a scheduler-bound value used off its scheduler")
    return unchecked
  }
}
