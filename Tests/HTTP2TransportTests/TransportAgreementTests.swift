// Tests/HTTP2TransportTests/TransportAgreementTests.swift - the in-memory stand-in and the real transport agree
//
// The same service and the same client code run twice: once over InMemoryTransport on a virtual clock (the fake
// the consumer tests use), once over a real GRPCServer and GRPCChannel on 127.0.0.1. Each observation (a timer
// scheduled on a call that has ended, a unary call answered with two messages, a message after the end, a
// cancellation) must come out the same on both: a stand-in that follows other rules than the real thing hides bugs.

import GRPCProtocol
import HTTP2Transport
import Primitives
import TestSupport
import Testing

private enum Probe {
  static let lateTimer = "/agree.Probe/LateTimer"
  static let twoMessages = "/agree.Probe/TwoMessages"
  static let afterEnd = "/agree.Probe/AfterEnd"
  static let hold = "/agree.Probe/Hold"
}

/// Answers each probe; records what its timers and cancel handlers saw.
private final class ProbeService: GRPCService, @unchecked Sendable {
  struct Seen: Equatable {
    /// For each late timer that ran: whether its call was closed then.
    var lateTimers: [Bool] = []
    var cancellations = 0
  }

  let seen = Locked(Seen())

  func handle(_ call: any GRPCServerCallContext) {
    switch call.path {
    case Probe.lateTimer:
      call.send([1])
      call.finish(.ok)
      call.schedule(after: .milliseconds(20)) { [seen] in seen.withLock { $0.lateTimers.append(call.isClosed) } }
    case Probe.twoMessages:
      call.send([1])
      call.send([2])
      call.finish(.ok)
    case Probe.afterEnd:
      call.send([1])
      call.finish(.ok)
      call.send([2])
      call.sendHeaders(["x-late": "1"])
    default:
      call.onCancel { [seen] in seen.withLock { $0.cancellations += 1 } }
      call.sendHeaders()
    }
  }
}

/// What a call's handler heard.
private final class Heard: GRPCCallHandler, @unchecked Sendable {
  struct State {
    var headers = 0
    var messages: [[UInt8]] = []
    var status: GRPCStatus?
  }

  let state = Locked(State())
  func callDidReceiveHeaders(_ headers: GRPCMetadata) { state.withLock { $0.headers += 1 } }
  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    state.withLock { $0.messages.append(Array(message)) }
  }
  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) { state.withLock { $0.status = status } }
}

/// Everything the probes showed, on one transport.
private struct Observed: Equatable {
  var lateTimerCode: GRPCStatusCode?
  var twoMessagesCode: GRPCStatusCode?
  var twoMessagesMessage: String?
  var afterEndMessages: [[UInt8]] = []
  var afterEndCode: GRPCStatusCode?
  var holdHeaders = 0
  var holdCode: GRPCStatusCode?
  var seen = ProbeService.Seen()
}

/// Runs every probe over `transport`; `settle` lets the calls' events happen (advances a virtual clock, or waits
/// until `done` holds on a real one).
private func observe(
  _ transport: any GRPCClientTransport, _ service: ProbeService,
  settle: (_ done: @escaping @Sendable () -> Bool) async -> Void
) async -> Observed {
  func start(_ path: String, _ kind: GRPCCallKind) -> (Heard, GRPCCallHandle) {
    let heard = Heard()
    let handle = transport.startCall(
      path: path, request: [0], kind: kind, options: CallOptions(), on: transport.schedulers[0], handler: heard)
    return (heard, handle)
  }
  let (late, _) = start(Probe.lateTimer, .unary)
  let (two, _) = start(Probe.twoMessages, .unary)
  let (after, _) = start(Probe.afterEnd, .serverStreaming)
  let (hold, holdHandle) = start(Probe.hold, .serverStreaming)
  await settle {
    late.state.withLock { $0.status != nil } && two.state.withLock { $0.status != nil }
      && after.state.withLock { $0.status != nil } && hold.state.withLock { $0.headers == 1 }
      && service.seen.withLock { $0.lateTimers.count == 1 }
  }
  holdHandle.cancel()
  await settle { hold.state.withLock { $0.status != nil } && service.seen.withLock { $0.cancellations == 1 } }
  var observed = Observed()
  observed.lateTimerCode = late.state.withLock { $0.status?.code }
  (observed.twoMessagesCode, observed.twoMessagesMessage) = two.state.withLock { ($0.status?.code, $0.status?.message) }
  (observed.afterEndMessages, observed.afterEndCode) = after.state.withLock { ($0.messages, $0.status?.code) }
  (observed.holdHeaders, observed.holdCode) = hold.state.withLock { ($0.headers, $0.status?.code) }
  observed.seen = service.seen.withLock { $0 }
  return observed
}

@Suite("The in-memory transport and the real one agree")
struct TransportAgreementTests {
  @Test("Same service, same client: in memory (virtual clock) and over 127.0.0.1 (GRPCServer, GRPCChannel)")
  func inMemoryAgreesWithSockets() async throws {
    let memoryService = ProbeService()
    let scheduler = VirtualScheduler()
    defer { scheduler.shutdown() }
    let memory = InMemoryTransport(service: memoryService, scheduler: scheduler)
    let inMemory = await observe(memory, memoryService) { _ in
      scheduler.advance(by: .milliseconds(100), step: .milliseconds(5))
    }

    let socketService = ProbeService()
    let overSockets = try await withStartedServer(GRPCServerConfiguration(port: 0), socketService) { _, port in
      let channel = try GRPCChannel(
        host: "127.0.0.1", port: port, configuration: GRPCChannelConfiguration(security: .plaintext))
      let observed = await observe(channel, socketService) { done in
        _ = await eventually(timeout: .seconds(20)) { done() }
      }
      await channel.shutdown()
      return observed
    }

    // Both ran the late timer although its call had ended, and saw the call closed.
    #expect(inMemory.seen.lateTimers == [true])
    #expect(inMemory.lateTimerCode == .ok)
    // A unary call answered with two messages is INTERNAL, decided by the client's rules on both.
    #expect(inMemory.twoMessagesCode == .internalError)
    #expect(inMemory.twoMessagesMessage == "unary call received more than one response message")
    // Nothing the service sends after the end arrives.
    #expect(inMemory.afterEndMessages == [[1]])
    #expect(inMemory.afterEndCode == .ok)
    // A cancelled call: CANCELLED for the client, the cancel handler once for the service.
    #expect(inMemory.holdHeaders == 1)
    #expect(inMemory.holdCode == .cancelled)
    #expect(inMemory.seen.cancellations == 1)
    #expect(overSockets == inMemory)
  }
}
