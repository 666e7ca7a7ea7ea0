// Tests/HTTP2TransportTests/StreamingTests.swift - server streaming, flow control, deadlines and cancellation

import GRPCProtocol
import HTTP2Transport
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Counts messages in callbacks on the channel's loop thread and reports once the call ends.
///
/// `@unchecked Sendable`: the counters are only touched inside the callbacks, which all
/// run on the channel's one event loop thread, one after another; the outcome leaves
/// through the continuation, once.
final class CountingHandler: GRPCCallHandler, @unchecked Sendable {
  struct Outcome: Sendable {
    var status: GRPCStatus
    var messages: Int
    var inOrder: Bool
    var headersReceived: Bool
    var oneThread: Bool
  }

  private var messages = 0
  private var inOrder = true
  private var headersReceived = false
  private var thread: pthread_t?
  private var oneThread = true
  private var continuation: CheckedContinuation<Outcome, Never>?

  init(_ continuation: CheckedContinuation<Outcome, Never>) {
    self.continuation = continuation
  }

  private func checkThread() {
    let current = pthread_self()
    if let thread {
      if pthread_equal(thread, current) == 0 { oneThread = false }
    } else {
      thread = current
    }
  }

  func callDidReceiveHeaders(_ headers: GRPCMetadata) {
    checkThread()
    headersReceived = true
  }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    checkThread()
    let index = message.count >= 4 ? message.prefix(4).reduce(0) { $0 << 8 | Int($1) } : -1
    if index != messages { inOrder = false }
    messages += 1
  }

  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    checkThread()
    let outcome = Outcome(
      status: status, messages: messages, inOrder: inOrder, headersReceived: headersReceived, oneThread: oneThread)
    continuation?.resume(returning: outcome)
    continuation = nil
  }
}

@Suite("Server streaming", .timeLimit(.minutes(1)))
struct StreamingTests {
  @Test("1000 messages arrive in order through the AsyncSequence")
  func asyncSequence() async throws {
    try await Fixture.with { fixture in
      let response = fixture.channel.serverStreaming(
        path: Method.stream, request: StreamSpec(count: 1000, size: 100).encoded)
      var indexes: [Int] = []
      for try await message in response {
        #expect(message.count == 100)
        indexes.append(StreamSpec.index(of: message) ?? -1)
      }
      #expect(indexes == Array(0..<1000))
      let result = await response.result()
      #expect(result.status.code == .ok)
      #expect(fixture.service.cancellations == 0)
    }
  }

  @Test("iterating the call directly, without keeping the response, reads the stream to its end")
  func iterateWithoutKeepingTheResponse() async throws {
    try await Fixture.with { fixture in
      // Only the iterator the loop makes is kept; the stream ends 100 ms after its messages.
      var indexes: [Int] = []
      for try await message in fixture.channel.serverStreaming(
        path: Method.stream, request: StreamSpec(count: 3, finishAfterMilliseconds: 100).encoded)
      {
        indexes.append(StreamSpec.index(of: message) ?? -1)
      }
      #expect(indexes == [0, 1, 2])
      #expect(fixture.service.cancellations == 0)
      #expect(await fixture.server.stats().callsCancelledByClient == 0)
    }
  }

  @Test("1000 messages arrive in order through the callback form, on the loop thread")
  func callbacks() async throws {
    try await Fixture.with { fixture in
      let channel = fixture.channel
      let outcome = await withCheckedContinuation { continuation in
        channel.startCall(
          path: Method.stream, request: StreamSpec(count: 1000, size: 64).encoded, kind: .serverStreaming,
          handler: CountingHandler(continuation))
      }
      #expect(outcome.status.code == .ok)
      #expect(outcome.messages == 1000)
      #expect(outcome.inOrder)
      #expect(outcome.headersReceived)
      #expect(outcome.oneThread)
    }
  }

  @Test("an empty stream ends OK with no message")
  func emptyStream() async throws {
    try await Fixture.with { fixture in
      let response = fixture.channel.serverStreaming(path: Method.stream, request: StreamSpec(count: 0).encoded)
      var count = 0
      for try await _ in response { count += 1 }
      #expect(count == 0)
      #expect(await response.result().status.code == .ok)
    }
  }

  @Test("a stream that fails throws the status after the messages")
  func failingStream() async throws {
    try await Fixture.with { fixture in
      let status = GRPCStatus(code: .aborted, message: "stopped")
      let response = fixture.channel.serverStreaming(path: Method.fail, request: FailSpec.encode(status))
      let outcome = await drain(response)
      #expect(outcome.failure?.code == .aborted)
      #expect(outcome.failure?.message == "stopped")
      #expect(await response.result().status == status)
    }
  }

  @Test("a consumer that does not read stops the server at the window; then everything arrives")
  func flowControl() async throws {
    try await Fixture.with { fixture in
      let count = 64
      let size = 256 * 1024
      let response = fixture.channel.serverStreaming(
        path: Method.stream, request: StreamSpec(count: count, size: size).encoded)
      // The server queues all 16 MiB at once; the client's 1 MiB stream window lets
      // only that much through while nobody reads.
      #expect(await eventually { await fixture.service.bufferedBytesOfLastStream() != nil })
      try await Task.sleep(for: .seconds(1))
      let buffered = try #require(await fixture.service.bufferedBytesOfLastStream())
      let total = count * (size + 5)
      #expect(buffered >= total - (2 << 20), "only \(buffered) of \(total) bytes still queued at the server")
      #expect(buffered <= total)

      var received = 0
      var inOrder = true
      for try await message in response {
        if StreamSpec.index(of: message) != received || message.count != size { inOrder = false }
        received += 1
      }
      #expect(received == count)
      #expect(inOrder)
      #expect(await response.result().status.code == .ok)
    }
  }

  @Test("a deadline ends a hanging call DEADLINE_EXCEEDED and the server sees the cancellation")
  func deadline() async throws {
    try await Fixture.with { fixture in
      // Connect first, so the deadline runs out on the server's side of the call rather
      // than while the connection is being made.
      #expect(await unaryError(fixture.channel, path: Method.unary) == nil)
      let error = await unaryError(
        fixture.channel, path: Method.hang, request: [1], options: CallOptions(timeout: .milliseconds(200)))
      #expect(error?.code == .deadlineExceeded)
      #expect(fixture.service.callsHandled == 2)
      #expect(await eventually { fixture.service.cancellations == 1 })
      #expect(await eventually { await fixture.server.stats().callsCancelledByClient == 1 })
      #expect(await fixture.server.stats().openCalls == 0)

      // Streaming calls have deadlines too.
      let response = fixture.channel.serverStreaming(
        path: Method.hang, request: [], options: CallOptions(timeout: .milliseconds(100)))
      #expect(await response.result().status.code == .deadlineExceeded)
      #expect(await eventually { fixture.service.cancellations == 2 })
    }
  }

  @Test("a zero timeout fails at once without a call reaching the server")
  func zeroTimeout() async throws {
    try await Fixture.with { fixture in
      let error = await unaryError(fixture.channel, path: Method.unary, options: CallOptions(timeout: .zero))
      #expect(error?.code == .deadlineExceeded)
      #expect(await fixture.server.stats().callsStarted == 0)
    }
  }

  @Test("cancelling a stream after its first message ends it CANCELLED and the server sees it")
  func cancel() async throws {
    try await Fixture.with { fixture in
      let response = fixture.channel.serverStreaming(path: Method.held, request: [])
      var iterator = response.makeAsyncIterator()
      let first = try await iterator.next()
      #expect(first.flatMap(StreamSpec.index(of:)) == 0)
      response.cancel()
      #expect(await response.result().status.code == .cancelled)
      #expect(await next(&iterator).failure?.code == .cancelled)
      #expect(await eventually { fixture.service.cancellations == 1 })
      #expect(await eventually { await fixture.server.stats().callsCancelledByClient == 1 })
      // The connection carries on.
      #expect(await unaryResult(fixture.channel, path: Method.unary, request: [7]).map(\.message) == .success([7]))
    }
  }

  @Test("dropping the response before its end cancels the call")
  func dropResponse() async throws {
    try await Fixture.with { fixture in
      let first = try await firstMessageThenDrop(fixture.channel)
      #expect(first.flatMap(StreamSpec.index(of:)) == 0)
      #expect(await eventually { fixture.service.cancellations == 1 })
      #expect(await eventually { await fixture.server.stats().callsCancelledByClient == 1 })
      #expect(await eventually { await fixture.channel.statistics().activeCalls == 0 })
    }
  }

  @Test("cancelling the task of a unary call ends it CANCELLED")
  func taskCancellation() async throws {
    try await Fixture.with { fixture in
      let channel = fixture.channel
      let task = Task { await unaryError(channel, path: Method.hang, request: []) }
      #expect(await eventually { fixture.service.callsHandled == 1 })
      task.cancel()
      #expect(await task.value?.code == .cancelled)
      #expect(await eventually { fixture.service.cancellations == 1 })
    }
  }

  /// Reads one message of a held stream; the response is released when this returns.
  private func firstMessageThenDrop(_ channel: GRPCChannel) async throws -> [UInt8]? {
    let response = channel.serverStreaming(path: Method.held, request: [])
    var iterator = response.makeAsyncIterator()
    return try await iterator.next()
  }
}
