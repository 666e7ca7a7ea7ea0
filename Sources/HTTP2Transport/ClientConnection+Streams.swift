// Sources/HTTP2Transport/ClientConnection+Streams.swift - a client connection's streams: calls on them, their events
//
// The part of the connection driver that carries calls: it opens a stream per call, feeds the stream's HTTP/2
// events to the call's GRPCClientCall and performs the actions it returns, writes requests with back-pressure,
// and returns window for manually flow-controlled calls. Connection-wide events are in ClientConnection.swift.

import GRPCProtocol
import HTTP2Session
import Logging

extension ClientConnection {
  // MARK: - Calls

  /// Opens a stream for `call`. Precondition: `canStartStream`.
  func start(_ call: PendingCall) {
    loop.assertInEventLoop()
    guard let session else {
      delegate?.connection(self, retry: call)
      return
    }
    let headers = call.requestHeaders(
      authority: authority, scheme: scheme, acceptEncodings: configuration.compression.acceptedEncodings)
    // A request-streaming call always gets a data provider, so even an empty request ends with an empty DATA
    // frame carrying END_STREAM rather than END_STREAM on HEADERS: grpc-go's server (1.33) never sees the end
    // of a streaming request that came in HEADERS alone.
    let body: [UInt8] = call.singleRequest ?? call.outbound
    let streamID: Int32
    do {
      streamID = try session.submitRequest(headers: headers, body: body, endStream: call.requestEnded)
    } catch {
      // Stream IDs exhausted or the session is going away: let the channel place it elsewhere.
      machine.drain(goAway: nil)
      delegate?.connection(self, retry: call)
      return
    }
    if call.singleRequest == nil {
      call.requestHandedOver = call.requestHandedOver || !body.isEmpty || call.requestEnded
      call.outbound = []
    }
    call.streamID = streamID
    let machineForCall = GRPCClientCall(
      kind: call.kind, maxReceiveMessageSize: call.options.maxReceiveMessageSize ?? configuration.maxReceiveMessageSize,
      acceptedEncodings: configuration.compression.acceptedEncodings)
    machine.opened(ClientStream(call: call, machine: machineForCall), id: streamID)
    if !call.writeWaiters.isEmpty { streamsWithWaitingWriters.insert(streamID) }
    scheduleFlush()
  }

  /// Cancels the call on `streamID`: CANCELLED, or DEADLINE_EXCEEDED when `deadline`.
  func cancel(streamID: Int32, deadline: Bool) {
    guard let active = machine.stream(streamID) else { return }
    perform(deadline ? active.machine.deadlineExceeded() : active.machine.cancel(), on: streamID, remoteEnded: false)
  }

  /// Ends the call on `streamID` with `status` found by its consumer (RST_STREAM(CANCEL)).
  func abort(streamID: Int32, status: GRPCStatus) {
    guard let active = machine.stream(streamID) else { return }
    perform(active.machine.abort(status), on: streamID, remoteEnded: false)
  }

  /// Returns the window of messages the consumer took (their full wire sizes) to a manually flow-controlled
  /// stream.
  func release(streamID: Int32, bytes: Int) {
    guard let session, let active = machine.stream(streamID) else { return }
    let released = active.window.release(bytes) + active.window.releasePartialIfClear()
    if released > 0 { session.consumeStream(streamID: streamID, bytes: released) }
    scheduleFlush()
  }

  /// Queues framed request bytes (and the end of the request with `end`) on `streamID`. `waiter`, if given, is
  /// resumed once the stream's unsent request bytes are within ``requestBufferLimit`` (at once if they already
  /// are), or when the call ends.
  func write(streamID: Int32, bytes: [UInt8], end: Bool, waiter: CheckedContinuation<GRPCStatus?, Never>?) {
    guard let session, let active = machine.stream(streamID) else {
      waiter?.resume(returning: GRPCStatus(code: .unavailable, message: "the call's stream is gone"))
      return
    }
    if !bytes.isEmpty || end {
      active.call.requestHandedOver = true
      let sent = bytes.withUnsafeBytes { raw in
        Result { () throws(HTTP2SessionError) in try session.sendData(streamID: streamID, bytes: raw, endStream: end) }
      }
      if case .failure(let error) = sent {
        // This side already ended the stream (a second finish, or the stream was reset): nothing to send.
        logger.trace("request data not sent", metadata: ["stream": "\(streamID)", "error": "\(error.message)"])
      }
      scheduleFlush()
    }
    guard let waiter else { return }
    if session.outboundBufferedBytes(streamID: streamID) <= Self.requestBufferLimit {
      waiter.resume(returning: nil)
    } else {
      active.call.writeWaiters.append(waiter)
      streamsWithWaitingWriters.insert(streamID)
    }
  }

  // MARK: - Stream events

  func session(
    _ session: HTTP2Session, didReceiveHeaders headers: [HTTP2HeaderField], kind: HTTP2HeadersKind, streamID: Int32,
    endStream: Bool
  ) {
    guard let active = machine.stream(streamID) else { return }
    let outcome = active.machine.receiveHeaderBlock(
      headers.map { (name: $0.name, value: $0.value) }, endStream: endStream)
    if let accepted = outcome.serverAcceptedEncodings { delegate?.connection(self, serverAcceptsEncodings: accepted) }
    perform(outcome.action, on: streamID, remoteEnded: endStream)
  }

  func session(_ session: HTTP2Session, didReceiveData data: UnsafeRawBufferPointer, streamID: Int32) {
    guard let active = machine.stream(streamID) else {
      session.consume(streamID: streamID, bytes: data.count)
      return
    }
    let (action, streamWindowBytes) = active.receive(data)
    if let streamWindowBytes {
      session.consumeConnection(bytes: data.count)
      if streamWindowBytes > 0 { session.consumeStream(streamID: streamID, bytes: streamWindowBytes) }
    } else {
      session.consume(streamID: streamID, bytes: data.count)
    }
    perform(action, on: streamID, remoteEnded: false)
  }

  func session(_ session: HTTP2Session, didReceiveEndOfStream streamID: Int32) {
    guard let active = machine.stream(streamID) else { return }
    let action = active.machine.receiveData(UnsafeRawBufferPointer(start: nil, count: 0), endStream: true) { _ in }
    perform(action, on: streamID, remoteEnded: true)
  }

  func session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
    guard let active = machine.stream(streamID) else { return }
    // A stream the server refused (REFUSED_STREAM, or above a GOAWAY's last stream id) before any response
    // comes back as .retryOrFinish: it starts again once on another connection, if its request can be resent.
    // The machine decides a status for every close it had not decided before.
    perform(active.machine.streamClosed(http2ErrorCode: errorCode), on: streamID, remoteEnded: true)
    // The session forgets the stream now: a call still in the table (its machine had nothing left to decide)
    // must not be left hanging.
    finishGone(streamID, status: GRPCStatus(code: .internalError, message: "stream closed"))
  }

  /// Ends the call of a stream the session has already closed, if it is still in the table: nothing is sent.
  private func finishGone(_ streamID: Int32, status: GRPCStatus) {
    guard let (gone, then) = machine.removeStream(streamID) else { return }
    streamsWithWaitingWriters.remove(streamID)
    finish(gone.call, status: status, trailers: GRPCMetadata())
    scheduleFlush()
    after(then)
  }

  func session(_ session: HTTP2Session, didRefuseHeaderListOfSize size: Int, limit: Int, streamID: Int32) {
    // The session has already reset the stream (CANCEL): the call ends with why, and nothing more is sent.
    guard let active = machine.stream(streamID) else { return }
    let status = GRPCStatus(
      code: .resourceExhausted,
      message:
        "response header list of \(size) bytes exceeds the limit of \(limit) bytes (HTTP2Settings.maxHeaderListSize)")
    _ = active.machine.abort(status)
    finishGone(streamID, status: status)
  }

  // MARK: - Acting on a call's machine

  /// Carries out what the call's state machine decided for the stream: deliver the response headers, or end
  /// the call (resetting the stream where needed, or starting the call again elsewhere when the server refused
  /// the stream).
  private func perform(_ action: GRPCClientCall.Action, on streamID: Int32, remoteEnded: Bool) {
    let status: GRPCStatus
    var mayRetry = false
    switch action {
    case .none:
      return
    case .deliverHeaders(let headers):
      machine.stream(streamID)?.call.handler.callDidReceiveHeaders(headers)
      return
    case .finish(let decided):
      status = decided
      if !remoteEnded {
        // A local decision (a malformed response) while the server may still be sending: cancel the stream.
        session?.resetStream(streamID, errorCode: .cancel)
      } else if let session, session.isStreamActive(streamID), !session.hasClosedLocalSide(streamID) {
        // The server completed the call while our request was still going out: end our side with
        // RST_STREAM(NO_ERROR), RFC 9113 §8.1, rather than leave the stream holding a slot.
        session.resetStream(streamID, errorCode: .noError)
      }
    case .resetAndFinish(let code, let decided):
      status = decided
      session?.resetStream(streamID, errorCode: code)
    case .retryOrFinish(let decided):
      status = decided  // The stream is closed already (refused): nothing to send on it.
      mayRetry = true
    }
    guard let (active, then) = machine.removeStream(streamID) else { return }
    streamsWithWaitingWriters.remove(streamID)
    end(active, status: status, mayRetry: mayRetry)
    scheduleFlush()
    after(then)
  }

  /// Ends the call of a stream out of the table: starts it again on another stream when `mayRetry` and it has a
  /// retry left and its request can be sent again, else finishes it with `status`.
  func end(_ active: ClientStream, status: GRPCStatus, mayRetry: Bool) {
    let call = active.call
    if mayRetry, call.takeRetry() {
      delegate?.connection(self, retry: call)
    } else {
      finish(call, status: status, trailers: active.machine.trailers)
    }
  }

  func finish(_ call: PendingCall, status: GRPCStatus, trailers: GRPCMetadata) {
    if call.finish(status, trailers: trailers, loop: loop) { delegate?.connection(self, didFinish: call) }
  }

  /// Wakes the writers of streams whose unsent request bytes went down to the limit.
  func resumeWritersWithRoom() {
    guard !streamsWithWaitingWriters.isEmpty, let session else { return }
    for streamID in streamsWithWaitingWriters
    where session.outboundBufferedBytes(streamID: streamID) <= Self.requestBufferLimit {
      streamsWithWaitingWriters.remove(streamID)
      machine.stream(streamID)?.call.resumeWriters(nil)
    }
  }
}
