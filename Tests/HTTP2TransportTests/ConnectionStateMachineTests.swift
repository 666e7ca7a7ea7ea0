// Tests/HTTP2TransportTests/ConnectionStateMachineTests.swift - a client connection's decisions, without a socket
//
// ConnectionStateMachine takes events and returns actions; these tests feed it the sequences that went wrong
// before (a GOAWAY while connecting, a close while a request is being written, a keepalive timeout while
// draining, a refused stream during a retry) and check what it decides, with the call machines of its streams.
// No socket, no loop, no clock: times are plain numbers.

import GRPCProtocol
import HTTP2Session
import Testing

@testable import HTTP2Transport

/// Records what a call's handler heard.
private final class RecordingHandler: GRPCCallHandler {
  var finished: [GRPCStatus] = []
  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {}
  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) { finished.append(status) }
}

private func makeCall(id: UInt64 = 1, kind: GRPCCallKind = .unary, handler: RecordingHandler = RecordingHandler())
  -> PendingCall
{
  PendingCall(
    id: id, path: "/test.Service/Method", kind: kind, singleRequest: kind.streamsRequests ? nil : [1, 2, 3],
    options: CallOptions(), handler: handler, receiver: nil, deadline: nil, requestEncoding: .identity)
}

private func makeStream(_ call: PendingCall) -> ClientStream {
  ClientStream(call: call, machine: GRPCClientCall(kind: call.kind, maxReceiveMessageSize: 1 << 20))
}

private let second: UInt64 = 1_000_000_000

@Suite("ConnectionStateMachine (no socket)")
struct ConnectionStateMachineTests {
  @Test("SETTINGS make a connecting connection ready; later SETTINGS report capacity")
  func settingsMakeReady() {
    var machine = ConnectionStateMachine(keepalive: nil)
    #expect(machine.phase == .connecting)
    #expect(!machine.canStartStream(sessionAllowsRequests: true, maxConcurrentStreams: 100))
    let outcome1 = machine.settingsReceived(maxConcurrentStreams: 100)
    #expect(outcome1 == .becameReady)
    #expect(machine.phase == .ready)
    #expect(machine.wasReady)
    #expect(machine.canStartStream(sessionAllowsRequests: true, maxConcurrentStreams: 100))
    #expect(!machine.canStartStream(sessionAllowsRequests: false, maxConcurrentStreams: 100))
    let outcome2 = machine.settingsReceived(maxConcurrentStreams: 100)
    #expect(outcome2 == .hasCapacity)
  }

  @Test("A server allowing no streams keeps the connection connecting until its connect timer closes it")
  func noStreamsAllowed() {
    var machine = ConnectionStateMachine(keepalive: nil)
    #expect(machine.connectTimerFired(timeout: .seconds(5)) == .abandonSocket)
    let outcome3 = machine.settingsReceived(maxConcurrentStreams: 0)
    #expect(outcome3 == .waitingForStreams(firstTime: true))
    let outcome4 = machine.settingsReceived(maxConcurrentStreams: 0)
    #expect(outcome4 == .waitingForStreams(firstTime: false))
    #expect(machine.phase == .connecting)
    #expect(machine.connectTimerFired(timeout: .seconds(5)) == .close(.noStreamsAllowed(waited: .seconds(5))))
    // Once ready, the connect timer means nothing.
    let outcome5 = machine.settingsReceived(maxConcurrentStreams: 1)
    #expect(outcome5 == .becameReady)
    #expect(machine.connectTimerFired(timeout: .seconds(5)) == .none)
  }

  @Test("The stream limit counts open streams")
  func streamLimit() {
    var machine = ConnectionStateMachine(keepalive: nil)
    _ = machine.settingsReceived(maxConcurrentStreams: 1)
    machine.opened(makeStream(makeCall()), id: 1)
    #expect(!machine.canStartStream(sessionAllowsRequests: true, maxConcurrentStreams: 1))
    let removed = machine.removeStream(1)
    #expect(removed?.then == .hasCapacity)
    let outcome6 = machine.removeStream(1)
    #expect(outcome6 == nil)
    #expect(machine.canStartStream(sessionAllowsRequests: true, maxConcurrentStreams: 1))
  }

  @Test("GOAWAY during connect: draining, never ready, closed soon, and the close reports an attempt that failed")
  func goAwayDuringConnect() {
    var machine = ConnectionStateMachine(keepalive: nil)
    let goAway = ConnectionError.goAway(errorCode: .noError, debugData: [])
    let outcome7 = machine.goAwayReceived(goAway)
    #expect(outcome7 == .closeSoon)
    #expect(machine.phase == .draining)
    #expect(!machine.wasReady)
    // SETTINGS after it do not make the connection ready.
    let outcome8 = machine.settingsReceived(maxConcurrentStreams: 100)
    #expect(outcome8 == .none)
    #expect(!machine.canStartStream(sessionAllowsRequests: true, maxConcurrentStreams: 100))
    #expect(machine.connectTimerFired(timeout: .seconds(1)) == .none)
    // The server then closes: the GOAWAY says more than the close.
    #expect(machine.closeReason(socket: .closedByPeer) == goAway)
    #expect(machine.drainedCloseDue)
    let step1 = machine.closeStarted()
    #expect(step1)
    let closed = machine.closed()
    #expect(closed?.wasReady == false)
    #expect(closed?.streams.isEmpty == true)
  }

  @Test("A GOAWAY with streams open drains: the last stream out closes the connection, once")
  func goAwayDrainsStreams() {
    var machine = ConnectionStateMachine(keepalive: nil)
    _ = machine.settingsReceived(maxConcurrentStreams: 10)
    machine.opened(makeStream(makeCall(id: 1)), id: 1)
    machine.opened(makeStream(makeCall(id: 2)), id: 3)
    let outcome9 = machine.goAwayReceived(.goAway(errorCode: .noError, debugData: []))
    #expect(outcome9 == .none)
    #expect(!machine.drainedCloseDue)
    let outcome10 = machine.removeStream(1)?.then
    #expect(outcome10 == ConnectionStateMachine.AfterStream.none)
    let outcome11 = machine.removeStream(3)?.then
    #expect(outcome11 == .closeSoon)
    #expect(machine.drainedCloseDue)
    #expect(machine.wasReady)
    // A second GOAWAY schedules nothing more.
    let outcome12 = machine.goAwayReceived(.goAway(errorCode: .noError, debugData: []))
    #expect(outcome12 == .none)
  }

  @Test("Close during a write: the streamed call fails UNAVAILABLE once, is not retried, and close is not re-entered")
  func closeDuringWrite() {
    var machine = ConnectionStateMachine(keepalive: nil)
    _ = machine.settingsReceived(maxConcurrentStreams: 10)
    let call = makeCall(kind: .clientStreaming)
    call.requestHandedOver = true  // request bytes went to the stream
    machine.opened(makeStream(call), id: 1)
    let step2 = machine.closeStarted()
    #expect(step2)
    let step3 = machine.closeStarted()
    #expect(!step3)  // the socket's close reporting back starts nothing again
    #expect(machine.phase == .draining)
    #expect(!machine.canStartStream(sessionAllowsRequests: true, maxConcurrentStreams: 10))
    let closed = machine.closed()
    #expect(closed?.wasReady == true)
    #expect(closed?.streams.count == 1)
    let step4 = machine.closed()
    #expect(step4 == nil)
    #expect(machine.phase == .closed)
    // What the driver then does with the stream: its machine decides UNAVAILABLE; no retry (bytes went out).
    let stream = closed!.streams[0]
    let action = stream.machine.connectionFailed("connection reset", cause: ConnectionError.closedByPeer)
    guard case .finish(let status) = action else {
      Issue.record("expected finish, got \(action)")
      return
    }
    #expect(status.code == .unavailable)
    #expect(!call.takeRetry())
  }

  @Test("Keepalive: a PING after an interval of silence with a call open, none while one is unanswered")
  func keepalivePing() {
    var machine = ConnectionStateMachine(keepalive: Keepalive(interval: .seconds(10), timeout: .seconds(5)))
    let interval = Duration.seconds(10)
    _ = machine.settingsReceived(maxConcurrentStreams: 10)
    let outcome13 = machine.keepaliveDelay(now: 100 * second, interval: interval)
    #expect(outcome13 == .seconds(10))
    // No call open and pings without calls not permitted: nothing.
    let outcome14 = machine.keepaliveTimerFired(now: 110 * second, interval: interval)
    #expect(outcome14 == .wait)
    machine.opened(makeStream(makeCall()), id: 1)
    // Bytes read at 105 s push the check back.
    let step5 = machine.bytesRead(at: 105 * second)
    #expect(!step5)
    let outcome15 = machine.keepaliveTimerFired(now: 110 * second, interval: interval)
    #expect(outcome15 == .wait)
    let outcome16 = machine.keepaliveDelay(now: 110 * second, interval: interval)
    #expect(outcome16 == .seconds(5))
    let outcome17 = machine.keepaliveTimerFired(now: 115 * second, interval: interval)
    #expect(outcome17 == .ping(115 * second))
    #expect(machine.awaitingPingAnswer)
    let outcome18 = machine.keepaliveTimerFired(now: 125 * second, interval: interval)
    #expect(outcome18 == .wait)
    // Any bytes answer it.
    let step6 = machine.bytesRead(at: 116 * second)
    #expect(step6)
    let step7 = machine.keepaliveTimeoutFired()
    #expect(!step7)
  }

  @Test("Keepalive timeout while draining closes the connection")
  func keepaliveTimeoutWhileDraining() {
    var machine = ConnectionStateMachine(keepalive: Keepalive(interval: .seconds(10), timeout: .seconds(5)))
    let interval = Duration.seconds(10)
    _ = machine.settingsReceived(maxConcurrentStreams: 10)
    _ = machine.keepaliveDelay(now: second, interval: interval)
    machine.opened(makeStream(makeCall()), id: 1)
    let outcome19 = machine.goAwayReceived(.goAway(errorCode: .noError, debugData: []))
    #expect(outcome19 == .none)
    #expect(machine.phase == .draining)
    // Draining connections keep checking: the server may have gone silent with the call open.
    let outcome20 = machine.keepaliveTimerFired(now: 11 * second, interval: interval)
    #expect(outcome20 == .ping(11 * second))
    let step8 = machine.keepaliveTimeoutFired()
    #expect(step8)
    let step9 = machine.closeStarted()
    #expect(step9)
    let step10 = machine.closed()
    #expect(step10?.streams.count == 1)
    // Once closed, keepalive stops.
    let outcome21 = machine.keepaliveTimerFired(now: 30 * second, interval: interval)
    #expect(outcome21 == .stop)
    let step11 = machine.keepaliveTimeoutFired()
    #expect(!step11)
  }

  @Test("Keepalive is never armed while connecting, and a PING ACK clears the timeout")
  func keepaliveStates() {
    var machine = ConnectionStateMachine(keepalive: Keepalive(interval: .seconds(1), permitWithoutCalls: true))
    let outcome22 = machine.keepaliveTimerFired(now: 5 * second, interval: .seconds(1))
    #expect(outcome22 == .stop)
    _ = machine.settingsReceived(maxConcurrentStreams: 1)
    let outcome23 = machine.keepaliveTimerFired(now: 6 * second, interval: .seconds(1))
    #expect(outcome23 == .ping(6 * second))
    let step12 = machine.pingAcknowledged()
    #expect(step12)
    let step13 = machine.pingAcknowledged()
    #expect(!step13)
    let step14 = machine.keepaliveTimeoutFired()
    #expect(!step14)
    var without = ConnectionStateMachine(keepalive: nil)
    _ = without.settingsReceived(maxConcurrentStreams: 1)
    let outcome24 = without.keepaliveTimerFired(now: 6 * second, interval: .seconds(1))
    #expect(outcome24 == .stop)
  }

  @Test("A reset during a retry: a refused stream is retried once, a second refusal ends the call")
  func resetDuringRetry() {
    var machine = ConnectionStateMachine(keepalive: nil)
    _ = machine.settingsReceived(maxConcurrentStreams: 10)
    let call = makeCall()
    let first = makeStream(call)
    machine.opened(first, id: 1)
    let refused = HTTP2ErrorCode.refusedStream
    guard case .retryOrFinish = first.machine.streamClosed(http2ErrorCode: refused) else {
      Issue.record("a refused stream before any response may be retried")
      return
    }
    let outcome25 = machine.removeStream(1)?.then
    #expect(outcome25 == .hasCapacity)
    #expect(call.takeRetry())
    #expect(call.streamID == nil)
    // The retry gets a new stream; the server resets that one too.
    let retried = makeStream(call)
    machine.opened(retried, id: 3)
    guard case .retryOrFinish(let status) = retried.machine.streamClosed(http2ErrorCode: refused) else {
      Issue.record("expected retryOrFinish")
      return
    }
    #expect(machine.removeStream(3) != nil)
    #expect(!call.takeRetry())
    #expect(status.code == .unavailable)
    #expect(!call.finished)
  }

  @Test("A streamed call whose request went out is not retried; one with nothing sent is")
  func retryNeedsResendableRequest() {
    let streamed = makeCall(kind: .bidirectionalStreaming)
    #expect(streamed.takeRetry())
    let sent = makeCall(kind: .bidirectionalStreaming)
    sent.requestHandedOver = true
    #expect(!sent.takeRetry())
    let unary = makeCall()
    unary.requestHandedOver = true
    #expect(unary.takeRetry())
  }

  @Test("Shutdown: connecting closes at once, graceful drains until the last stream, abort closes now")
  func shutdown() {
    var connecting = ConnectionStateMachine(keepalive: nil)
    let outcome26 = connecting.shutdown(graceful: true)
    #expect(outcome26 == .close)
    let outcome27 = connecting.shutdown(graceful: false)
    #expect(outcome27 == .abort)

    var idle = ConnectionStateMachine(keepalive: nil)
    _ = idle.settingsReceived(maxConcurrentStreams: 1)
    let outcome28 = idle.shutdown(graceful: true)
    #expect(outcome28 == .drain(closeSoon: true))

    var busy = ConnectionStateMachine(keepalive: nil)
    _ = busy.settingsReceived(maxConcurrentStreams: 1)
    busy.opened(makeStream(makeCall()), id: 1)
    let outcome29 = busy.shutdown(graceful: true)
    #expect(outcome29 == .drain(closeSoon: false))
    let outcome30 = busy.removeStream(1)?.then
    #expect(outcome30 == .closeSoon)
    let step15 = busy.closeStarted()
    #expect(step15)
    let outcome31 = busy.shutdown(graceful: true)
    #expect(outcome31 == .none)
    let step16 = busy.closed()
    #expect(step16?.wasReady == true)
  }
}
