// Sources/HTTP2Transport/GRPCStreamingCall.swift - request writers and calls that stream requests
//
// A request-streaming call (client streaming, bidirectional) gets its requests one at a time
// from a writer, on any task. Each message is framed (and compressed) on the writer's task and
// handed to the channel's loop, which queues it on the call's stream; nghttp2 pulls it through
// the stream's data provider as the server's window allows (deferring when the queue is
// empty). A writer waits while more than 64 KiB of its call's requests are unsent, so a
// producer faster than the server is paced by the server, not buffered without end.

public import GRPCProtocol
import Primitives
import Synchronization

/// Writes the requests of a client-streaming or bidirectional call.
///
/// Writes are ordered; use one writer from one task at a time. ``finish()`` ends the request
/// side (half-close); the scoped calls (``GRPCChannel/clientStreaming(path:options:requestProducer:)``,
/// ``GRPCChannel/bidirectionalStreaming(path:options:requestProducer:onResponse:)``) call it when
/// their producer returns.
public final class GRPCRequestWriter: Sendable {
  private let call: LoopBound<PendingCall>?
  private let core: LoopBound<ChannelCore>
  private let handle: GRPCCallHandle
  private let finished = Atomic<Bool>(false)

  /// The encoding request messages are compressed with: the call's or channel's choice, or
  /// identity when the server said it does not accept that one.
  public let compression: GRPCCompressionAlgorithm

  init(
    call: LoopBound<PendingCall>?, core: LoopBound<ChannelCore>, encoding: GRPCCompressionAlgorithm,
    handle: GRPCCallHandle
  ) {
    self.call = call
    self.core = core
    self.compression = encoding
    self.handle = handle
  }

  /// Sends `message`, compressed with ``compression`` when that is not identity.
  ///
  /// Returns once the message is queued on the call and at most 64 KiB of the call's requests
  /// wait to be sent; while more wait (the server's flow-control window is closed), it waits
  /// too. Cancelling the task while it waits cancels the call.
  ///
  /// - Throws: ``GRPCError`` when the call has ended (its status, or CANCELLED with a message
  ///   saying the server already completed the call with OK and takes no more requests), or
  ///   INTERNAL after ``finish()`` or when compressing fails.
  public func write(_ message: [UInt8]) async throws(GRPCError) {
    try await write(message, compressed: true)
  }

  /// Sends `message`; `compressed: false` sends this one message uncompressed although the
  /// call compresses (compression.md's per-message disabling, for data that must not be
  /// compressed next to secrets). `compressed: true` is the same as ``write(_:)``.
  public func write(_ message: [UInt8], compressed: Bool) async throws(GRPCError) {
    guard let call else {
      throw GRPCError(code: .invalidArgument, message: "the call did not start (invalid method path)")
    }
    guard !finished.load(ordering: .acquiring) else {
      throw GRPCError(code: .internalError, message: "write after finish(): the request stream is already ended")
    }
    let framed =
      compressed
      ? try GRPCMessageFramer.framed(message, compressedWith: compression)
      : GRPCMessageFramer.framed(message)
    let core = core
    let handle = handle
    let ended: GRPCStatus? = await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        core.loop.execute { core.value.write(call.value, bytes: framed, end: false, waiter: continuation) }
      }
    } onCancel: {
      handle.cancel()
    }
    guard let ended else { return }
    if ended.isOK {
      throw GRPCError(
        code: .cancelled, message: "the server already completed the call with OK; it takes no more requests")
    }
    throw GRPCError(status: ended)
  }

  /// Ends the request side (END_STREAM after the messages written). Later calls do nothing.
  public func finish() {
    guard let call, !finished.exchange(true, ordering: .acquiringAndReleasing) else { return }
    let core = core
    core.loop.execute { core.value.write(call.value, bytes: [], end: true, waiter: nil) }
  }
}

/// A call whose requests are written one by one while its responses are read:
/// from ``GRPCChannel/makeStreamingCall(path:kind:options:)``.
public final class GRPCStreamingCall: Sendable {
  /// Writes the requests; ``GRPCRequestWriter/finish()`` ends them.
  public let requests: GRPCRequestWriter
  /// The responses, and with ``GRPCServerStreamingResponse/result()`` the status, headers and trailers.
  public let responses: GRPCStreamingResponse

  init(requests: GRPCRequestWriter, responses: GRPCStreamingResponse) {
    self.requests = requests
    self.responses = responses
  }

  /// Cancels the call: RST_STREAM(CANCEL) to the server, CANCELLED to the reader and writer,
  /// unless it already ended.
  public func cancel() { responses.cancel() }

  /// Runs `requestProducer` in a child task (finishing the requests when it returns) and
  /// `onResponse` here; the call lives as long as `onResponse` runs. See
  /// ``GRPCChannel/bidirectionalStreaming(path:options:requestProducer:onResponse:)``.
  func run<Result>(
    requestProducer: @escaping @Sendable (GRPCRequestWriter) async throws -> Void,
    onResponse: (GRPCStreamingResponse) async throws -> Result
  ) async throws -> Result {
    let requests = requests
    let responses = responses
    // The producer's error when it failed while the call was still running (it then cancelled
    // the call, and its error is the one to report).
    let producerFailure = Locked<(any Error)?>(nil)
    return try await withTaskCancellationHandler {
      try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
          do {
            try await requestProducer(requests)
            requests.finish()
          } catch {
            // Writes throw once the call ended or was cancelled, and the producer's task is cancelled
            // when the scope ends or the caller is cancelled: none of that is the producer's failure.
            guard !responses.receiver.isEndedOrEnding, !Task.isCancelled else { return }
            producerFailure.withLock { $0 = error }
            responses.cancel()
          }
        }
        let outcome: Swift.Result<Result, any Error>
        do {
          outcome = .success(try await onResponse(responses))
        } catch {
          outcome = .failure(error)
        }
        // The call is scoped to onResponse: whatever is still running stops now.
        responses.cancel()
        group.cancelAll()
        try? await group.waitForAll()
        if let failure = producerFailure.withLock({ $0 }) { throw failure }
        return try outcome.get()
      }
    } onCancel: {
      responses.cancel()
    }
  }
}
