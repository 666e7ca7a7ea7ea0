// Sources/HTTP2Transport/PendingCall.swift - a call of a channel, from its start to its end, and what a connection tells the pool
//
// A PendingCall is created when a caller starts a call and lives until the call ends: queued in a ChannelCore,
// then carried by a stream of a ClientConnection (or several, when a refused stream is retried). It holds what
// a retry needs (the request) and what request writers wait on. Everything here runs on the channel's loop.

import GRPCProtocol
import HTTP2Session
import Primitives

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

  /// The request's header fields, for a stream to `authority` (unless the call names its own) over `scheme`.
  func requestHeaders(authority: String, scheme: String, acceptEncodings: [GRPCCompressionAlgorithm])
    -> [HTTP2HeaderField]
  {
    let head = GRPCRequestHead(
      path: path, authority: options.authority ?? authority, scheme: scheme,
      timeout: deadline.map { .nanoseconds(Int64(clamping: max(1, $0 &- monotonicNanoseconds()))) },
      metadata: options.metadata, encoding: requestEncoding, acceptEncodings: acceptEncodings)
    return head.headerFields().map { HTTP2HeaderField($0.name, $0.value) }
  }

  /// Keeps framed request bytes (and the end, with `end`) written before the call has a stream: they go out when
  /// it starts. `waiter` resumes at once while the kept bytes are within ``ClientConnection/requestBufferLimit``,
  /// else once they went out (or the call ended).
  func keepUnsent(_ bytes: [UInt8], end: Bool, waiter: CheckedContinuation<GRPCStatus?, Never>?) {
    guard !requestEnded else {
      waiter?.resume(returning: nil)
      return
    }
    outbound.append(contentsOf: bytes)
    if end { requestEnded = true }
    guard let waiter else { return }
    if outbound.count <= ClientConnection.requestBufferLimit {
      waiter.resume(returning: nil)
    } else {
      writeWaiters.append(waiter)
    }
  }

  /// Whether the call may start again on another stream after its stream was refused: it has a retry left, and
  /// its request can be sent again (the whole single request is kept, or nothing of a streamed one was handed
  /// over). Takes the retry when it may.
  func takeRetry() -> Bool {
    guard retriesLeft > 0, !requestHandedOver || singleRequest != nil else { return false }
    retriesLeft -= 1
    streamID = nil
    return true
  }

  /// Ends the call with `status`, once: stops its deadline timer on `loop`, tells the handler, then wakes the
  /// writers (which then find the response ended too). False when it had ended already.
  @discardableResult
  func finish(_ status: GRPCStatus, trailers: GRPCMetadata = GRPCMetadata(), loop: EventLoop) -> Bool {
    guard !finished else { return false }
    finished = true
    finalStatus = status
    if let deadlineTimer { loop.cancelTimer(deadlineTimer) }
    handler.callDidFinish(status: status, trailers: trailers)
    resumeWriters(status)
    return true
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
