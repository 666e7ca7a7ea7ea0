// Sources/HTTP2Transport/ConnectionStateMachine.swift - a client connection's lifecycle, streams and keepalive, without I/O
//
// ClientConnection is the I/O driver: it owns the socket, the nghttp2 session and the timers, feeds this machine
// what happened (SETTINGS, GOAWAY, a stream closed, bytes read, a timer fired, a close asked for) and performs
// what the machine returns. The machine decides; it never calls out, so every transition can be tested without
// a socket (ConnectionStateMachineTests), as GRPCClientCall is for one call.

import GRPCProtocol
import Primitives

/// The lifecycle, the stream table and the keepalive deadlines of one client connection.
///
/// ```
/// connecting ──SETTINGS allow a stream──▶ ready
///   │   │                                   │ GOAWAY received or sent, stream IDs used up
///   │   └──GOAWAY received────────────────▶ draining ──no stream left: close after this event──┐
///   │                                                                                         ▼
///   └──connect timeout, failure, shutdown──▶ closing (last frames out, socket closed) ──▶ closed
/// ```
/// Any state but closed can fail straight to closed (the socket closed, a read failed).
struct ConnectionStateMachine {
  /// Where the connection is. Every fact about its lifecycle lives here, in the case it belongs to.
  enum State: Equatable {
    /// TCP connect, TLS handshake, then the HTTP/2 preface, until the server's SETTINGS allow a stream.
    /// `serverAllowsNoStreams`: SETTINGS came with MAX_CONCURRENT_STREAMS = 0; the connect timer keeps running
    /// until a later SETTINGS raises the limit.
    case connecting(serverAllowsNoStreams: Bool)
    /// Calls may start streams.
    case ready
    /// No new stream starts: a GOAWAY came or went, or the stream IDs ran out. The open streams finish, then
    /// the connection closes.
    case draining(Drain)
    /// The close is under way: the last frames go out and the socket closes, then the calls fail. `wasReady`
    /// is what the close reports.
    case closing(wasReady: Bool)
    /// Closed and reported; nothing happens any more.
    case closed
  }

  /// What a draining connection knows.
  struct Drain: Equatable {
    /// Whether the connection had become ready (a GOAWAY may come before SETTINGS allowed a stream; such a
    /// connection counts as a failed attempt).
    var wasReady: Bool
    /// The server's GOAWAY, if one came: why the calls still open fail if the server then closes the connection.
    var goAway: ConnectionError?
    /// No stream is left and the close runs right after the current event (often inside an nghttp2 callback,
    /// where the session cannot produce output yet).
    var closeScheduled = false
  }

  /// Where the connection is, as the pool counts connections.
  enum Phase {
    case connecting, ready, draining, closed
  }

  /// What to do after a stream left the table.
  enum AfterStream: Equatable {
    /// Nothing more.
    case none
    /// The connection is ready and has room for another call.
    case hasCapacity
    /// The connection drained its last stream: close it right after the current event.
    case closeSoon
  }

  /// What the server's SETTINGS mean.
  enum SettingsAction: Equatable {
    case none
    /// The connection became ready: stop the connect timer, start keepalive, tell the pool.
    case becameReady
    /// A ready connection's limits changed: calls waiting may fit now.
    case hasCapacity
    /// The server allows no stream yet; `firstTime` when it had not said so before (worth a log line).
    case waitingForStreams(firstTime: Bool)
  }

  /// What the connect timer's firing means.
  enum ConnectTimeoutAction: Equatable {
    case none
    /// Still connecting (TCP, TLS or the preface): abandon the socket.
    case abandonSocket
    /// Connected, but the server's SETTINGS never allowed a stream: close with why.
    case close(ConnectionError)
  }

  /// What the keepalive timer's firing means.
  enum KeepaliveAction: Equatable {
    /// Keepalive stops: the connection is not up (or no longer).
    case stop
    /// Nothing to send now; check again at the next deadline.
    case wait
    /// Send a PING (its opaque data the time) and arm its timeout; then check again at the next deadline.
    case ping(UInt64)
  }

  /// What a shutdown asks of the driver.
  enum ShutdownAction: Equatable {
    case none
    /// Close now, cleanly (nothing was under way).
    case close
    /// Send GOAWAY and let the open streams finish; `closeSoon` when none is open.
    case drain(closeSoon: Bool)
    /// Send GOAWAY, flush, close now: the open calls fail.
    case abort
  }

  /// The calls to fail when the connection closed, and what the close reports.
  struct Closed {
    var streams: [ClientStream]
    var wasReady: Bool
  }

  private(set) var state: State = .connecting(serverAllowsNoStreams: false)
  /// The open streams, by stream ID.
  private(set) var streams: [Int32: ClientStream] = [:]
  /// When bytes last arrived from the server, or a keepalive PING went out (monotonic nanoseconds; 0 before).
  private(set) var lastActivity: UInt64 = 0
  /// A keepalive PING is out and nothing has come back since: its timeout runs.
  private(set) var awaitingPingAnswer = false
  /// Keepalive settings, nil without keepalive.
  let keepalive: Keepalive?

  init(keepalive: Keepalive?) {
    self.keepalive = keepalive
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
  var wasReady: Bool {
    switch state {
    case .connecting, .closed: false
    case .ready: true
    case .draining(let drain): drain.wasReady
    case .closing(let wasReady): wasReady
    }
  }

  /// Whether a new call can get a stream, given what the session allows.
  func canStartStream(sessionAllowsRequests: Bool, maxConcurrentStreams: UInt32) -> Bool {
    guard case .ready = state, sessionAllowsRequests else { return false }
    return streams.count < Int(min(maxConcurrentStreams, UInt32(Int32.max)))
  }

  // MARK: - Connecting

  /// The server's SETTINGS arrived, allowing `maxConcurrentStreams` streams.
  mutating func settingsReceived(maxConcurrentStreams: UInt32) -> SettingsAction {
    switch state {
    case .connecting(let serverAllowedNoStreams):
      guard maxConcurrentStreams > 0 else {
        state = .connecting(serverAllowsNoStreams: true)
        return .waitingForStreams(firstTime: !serverAllowedNoStreams)
      }
      state = .ready
      return .becameReady
    case .ready:
      return .hasCapacity
    case .draining, .closing, .closed:
      return .none
    }
  }

  /// The connect timer of `timeout` fired.
  func connectTimerFired(timeout: Duration) -> ConnectTimeoutAction {
    guard case .connecting(let serverAllowsNoStreams) = state else { return .none }
    return serverAllowsNoStreams ? .close(.noStreamsAllowed(waited: timeout)) : .abandonSocket
  }

  // MARK: - Streams

  /// The stream on `id`, while it is open.
  func stream(_ id: Int32) -> ClientStream? { streams[id] }

  /// A stream opened for a call.
  mutating func opened(_ stream: ClientStream, id: Int32) {
    streams[id] = stream
  }

  /// Takes the stream on `id` out of the table (its call ended or moves elsewhere); nil if it was gone.
  mutating func removeStream(_ id: Int32) -> (stream: ClientStream, then: AfterStream)? {
    guard let stream = streams.removeValue(forKey: id) else { return nil }
    if case .ready = state { return (stream, .hasCapacity) }
    return (stream, closeIfDrained() ? .closeSoon : .none)
  }

  // MARK: - Draining

  /// Stops new streams: connecting or ready becomes draining; a draining connection learns of the server's
  /// GOAWAY (`goAway`) if it had none yet.
  mutating func drain(goAway: ConnectionError?) {
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

  /// The server sent GOAWAY (`error` describes it): drain. `.closeSoon` when no stream is left.
  mutating func goAwayReceived(_ error: ConnectionError) -> AfterStream {
    drain(goAway: error)
    return closeIfDrained() ? .closeSoon : .none
  }

  /// Marks a draining connection with no stream left for a close after the current event; true when it did.
  private mutating func closeIfDrained() -> Bool {
    guard case .draining(var drain) = state, !drain.closeScheduled, streams.isEmpty else { return false }
    drain.closeScheduled = true
    state = .draining(drain)
    return true
  }

  /// The close scheduled by `.closeSoon` is due: whether the connection is still draining with no stream (no
  /// stream can start meanwhile: only a ready connection takes one).
  var drainedCloseDue: Bool {
    guard case .draining = state else { return false }
    return streams.isEmpty
  }

  // MARK: - Keepalive

  /// Bytes arrived at `now`: anything from the server proves it alive, not only a PING's answer. True when a
  /// PING's timeout was running and is to stop.
  mutating func bytesRead(at now: UInt64) -> Bool {
    if keepalive != nil { lastActivity = now }
    defer { awaitingPingAnswer = false }
    return awaitingPingAnswer
  }

  /// A PING's ACK arrived. True when a keepalive PING's timeout was running and is to stop.
  mutating func pingAcknowledged() -> Bool {
    defer { awaitingPingAnswer = false }
    return awaitingPingAnswer
  }

  /// How long from `now` until the next keepalive check with `interval`: `interval` after the last activity.
  mutating func keepaliveDelay(now: UInt64, interval: Duration) -> Duration {
    if lastActivity == 0 { lastActivity = now }
    let due = lastActivity &+ interval.nonNegativeNanoseconds
    return due > now ? .nanoseconds(Int64(clamping: due - now)) : .zero
  }

  /// The keepalive check with `interval` at `now`: after `interval` of silence from the server, with calls open
  /// (or pings without calls allowed) and no PING unanswered, a PING goes out, counted as activity so the next
  /// comes an interval after it.
  mutating func keepaliveTimerFired(now: UInt64, interval: Duration) -> KeepaliveAction {
    guard let keepalive else { return .stop }
    switch state {
    case .ready, .draining: break
    case .connecting, .closing, .closed: return .stop
    }
    guard now &- lastActivity >= interval.nonNegativeNanoseconds,
      keepalive.permitWithoutCalls || !streams.isEmpty, !awaitingPingAnswer
    else { return .wait }
    lastActivity = now
    awaitingPingAnswer = true
    return .ping(now)
  }

  /// The PING's timeout fired. True when it was still unanswered: the connection is to close.
  mutating func keepaliveTimeoutFired() -> Bool {
    guard awaitingPingAnswer else { return false }
    awaitingPingAnswer = false
    switch state {
    case .closing, .closed: return false
    case .connecting, .ready, .draining: return true
    }
  }

  // MARK: - Closing

  /// The channel shuts the connection down: `graceful` lets the open streams finish.
  mutating func shutdown(graceful: Bool) -> ShutdownAction {
    switch state {
    case .closing, .closed:
      return .none
    case .connecting where graceful:
      return .close
    case .connecting, .ready, .draining:
      guard graceful else { return .abort }
      drain(goAway: nil)
      return .drain(closeSoon: closeIfDrained())
    }
  }

  /// A close starts (the driver then flushes and closes the socket). False when one already did.
  mutating func closeStarted() -> Bool {
    switch state {
    case .closing, .closed: return false
    case .connecting, .ready, .draining:
      state = .closing(wasReady: wasReady)
      return true
    }
  }

  /// Why the connection closed, given the socket's reason: the server closing after its GOAWAY is the GOAWAY.
  func closeReason(socket error: ConnectionError?) -> ConnectionError? {
    if error == .closedByPeer, case .draining(let drain) = state, let goAway = drain.goAway { return goAway }
    return error
  }

  /// The connection is closed: the streams left, to fail, and what to report; nil when it was closed already.
  mutating func closed() -> Closed? {
    if case .closed = state { return nil }
    let report = Closed(streams: Array(streams.values), wasReady: wasReady)
    state = .closed
    streams.removeAll()
    awaitingPingAnswer = false
    return report
  }
}
