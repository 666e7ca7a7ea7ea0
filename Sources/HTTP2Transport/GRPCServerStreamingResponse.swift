// Sources/HTTP2Transport/GRPCServerStreamingResponse.swift - streamed responses as an AsyncSequence

public import GRPCProtocol
import Primitives
import Synchronization

/// The response messages of a streaming call (server-streaming, bidirectional, or the one
/// message of a client-streaming call), as an `AsyncSequence`.
public typealias GRPCStreamingResponse = GRPCServerStreamingResponse

/// The response messages of a streaming call, as an `AsyncSequence`.
///
/// Single consumer. The sequence ends after the last message when the call
/// ends OK and throws ``GRPCError`` otherwise. Flow control follows the
/// consumer: the bytes of received messages return to the stream's HTTP/2
/// window only as the messages are taken, so a consumer that stops reading
/// stops the server (within one window) instead of growing a buffer. The bytes
/// of a message still arriving return at once, so a message larger than the
/// window (up to the receive limit) still completes. Compressed messages are
/// kept compressed until taken, then inflated within the receive limit: one
/// that exceeds it, or does not decompress, ends the call (RESOURCE_EXHAUSTED
/// or INTERNAL, the stream reset with CANCEL). Dropping the response before
/// its end cancels the call.
public final class GRPCServerStreamingResponse: AsyncSequence, Sendable {
  public typealias Element = [UInt8]
  public typealias Failure = GRPCError

  let receiver: Receiver

  init(maxReceiveMessageSize: Int) {
    receiver = Receiver(maxReceiveMessageSize: maxReceiveMessageSize)
  }

  deinit { receiver.cancelIfUnfinished() }

  /// Cancels the call (the sequence then throws CANCELLED unless it already ended).
  public func cancel() { receiver.cancelIfUnfinished() }

  /// Waits for the end of the call and returns its status, headers and trailers
  /// (whether or not the messages were all read).
  public func result() async -> GRPCCallResult {
    await receiver.result()
  }

  /// The next message with the encoding it arrived compressed with; `nil` at the end of an
  /// OK call. The same messages as the iterator's (do not mix the two): for callers that
  /// check how the server encoded each message.
  public func nextReceivedMessage() async throws(GRPCError) -> GRPCReceivedMessage? {
    try await receiver.nextReceived()
  }

  public func makeAsyncIterator() -> Iterator { Iterator(receiver: receiver, response: self) }

  /// Iterates the messages.
  public struct Iterator: AsyncIteratorProtocol {
    let receiver: Receiver
    /// Keeps the response alive while the iterator is: `for try await message in
    /// channel.serverStreaming(...)` holds only the iterator, and releasing the
    /// response cancels the call.
    let response: GRPCServerStreamingResponse

    public mutating func next() async throws(GRPCError) -> [UInt8]? {
      try await receiver.next()
    }

    public mutating func next(isolation actor: isolated (any Actor)?) async throws(GRPCError) -> [UInt8]? {
      try await receiver.next()
    }
  }

  /// Buffers messages between the event loop and the consumer.
  ///
  /// `@unchecked Sendable`: all mutable state is inside `state`'s mutex.
  final class Receiver: GRPCMessageReceiver, @unchecked Sendable {
    /// A message as it arrived, with what it costs in stream window.
    private struct Entry {
      var bytes: [UInt8]
      var compression: GRPCCompressionAlgorithm?
      var windowBytes: Int
    }

    private struct State {
      var messages: [Entry] = []
      var head = 0
      var headers = GRPCMetadata()
      var final: GRPCCallResult?
      /// A failure the consumer found (a message that does not decompress); wins over `final`.
      var consumerFailure: GRPCCallResult?
      var waiter: CheckedContinuation<Void, Never>?
      var resultWaiters: [CheckedContinuation<GRPCCallResult, Never>] = []
      var releasePending = 0

      var outcome: GRPCCallResult? { consumerFailure ?? final }
    }
    private let state = Locked(State())
    /// The call's handle; a cancellation asked for before it arrived reaches the call when it does.
    private let lateHandle = LateCallHandle()
    private let maxReceiveMessageSize: Int

    init(maxReceiveMessageSize: Int) {
      self.maxReceiveMessageSize = maxReceiveMessageSize
    }

    /// Whether the call has ended, or its end was asked for (cancelled, or failed by the consumer).
    var isEndedOrEnding: Bool {
      lateHandle.cancelRequested || state.withLock { $0.final != nil || $0.consumerFailure != nil }
    }

    func setHandle(_ handle: GRPCCallHandle) {
      lateHandle.set(handle)
    }

    func cancelIfUnfinished() {
      guard state.withLock({ $0.final == nil }) else { return }
      lateHandle.cancel()
    }

    func callDidReceiveHeaders(_ headers: GRPCMetadata) {
      state.withLock { $0.headers = headers }
    }

    func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
      callDidReceive(message, compression: nil, windowBytes: 0)
    }

    func callDidReceive(_ message: UnsafeRawBufferPointer, compression: GRPCCompressionAlgorithm?, windowBytes: Int) {
      let entry = Entry(bytes: [UInt8](message), compression: compression, windowBytes: windowBytes)
      let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
        guard state.consumerFailure == nil else { return nil }
        state.messages.append(entry)
        let waiter = state.waiter
        state.waiter = nil
        return waiter
      }
      waiter?.resume()
    }

    func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
      let (waiter, resultWaiters, result) = state.withLock { state in
        let final = GRPCCallResult(status: status, headers: state.headers, trailers: trailers)
        state.final = final
        let result = state.consumerFailure ?? final
        let waiter = state.waiter
        state.waiter = nil
        let resultWaiters = state.resultWaiters
        state.resultWaiters = []
        return (waiter, resultWaiters, result)
      }
      waiter?.resume()
      for waiter in resultWaiters { waiter.resume(returning: result) }
    }

    func next() async throws(GRPCError) -> [UInt8]? {
      try await nextReceived()?.bytes
    }

    func nextReceived() async throws(GRPCError) -> GRPCReceivedMessage? {
      while true {
        enum Step {
          case message(Entry, release: GRPCCallHandle?, bytes: Int)
          case finished(GRPCCallResult)
          case wait
        }
        let step = state.withLock { state -> Step in
          if let failure = state.consumerFailure { return .finished(failure) }
          if state.head < state.messages.count {
            let message = state.messages[state.head]
            state.head += 1
            if state.head == state.messages.count {
              state.messages.removeAll(keepingCapacity: true)
              state.head = 0
            }
            // Hand the bytes back to the window in batches, not per message.
            state.releasePending += message.windowBytes
            if state.releasePending >= 16 * 1024 || state.messages.isEmpty {
              let bytes = state.releasePending
              state.releasePending = 0
              return .message(message, release: lateHandle.current, bytes: bytes)
            }
            return .message(message, release: nil, bytes: 0)
          }
          if let final = state.final { return .finished(final) }
          return .wait
        }
        switch step {
        case .message(let message, let handle, let bytes):
          if let handle, bytes > 0 { handle.release(bytes: bytes) }
          guard let algorithm = message.compression else {
            return GRPCReceivedMessage(bytes: message.bytes, compression: nil)
          }
          do {
            let plain = try message.bytes.withUnsafeBytes { raw in
              Result { () throws(GRPCError) in
                try GRPCMessageCompression.decompress(raw, with: algorithm, limit: maxReceiveMessageSize)
              }
            }.get()
            return GRPCReceivedMessage(bytes: plain, compression: algorithm)
          } catch {
            throw failByConsumer(error)
          }
        case .finished(let result):
          if result.status.code == .ok { return nil }
          throw GRPCError(status: result.status, trailers: result.trailers)
        case .wait:
          await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
              if state.head < state.messages.count || state.outcome != nil { return true }
              state.waiter = continuation
              return false
            }
            if resumeNow { continuation.resume() }
          }
        }
      }
    }

    /// A message the consumer took does not decompress or exceeds the limit: the call ends
    /// with that status (the stream reset, if it is still open), the messages behind it are
    /// dropped, and the sequence and ``result()`` report it.
    private func failByConsumer(_ error: GRPCError) -> GRPCError {
      let (handle, resultWaiters, result) = state.withLock { state in
        let result = GRPCCallResult(status: error.status, headers: state.headers)
        state.consumerFailure = result
        state.messages.removeAll()
        state.head = 0
        let waiters = state.final == nil ? [] : state.resultWaiters
        if state.final != nil { state.resultWaiters = [] }
        return (lateHandle.current, waiters, result)
      }
      handle?.abort(error.status)
      for waiter in resultWaiters { waiter.resume(returning: result) }
      return error
    }

    func result() async -> GRPCCallResult {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state -> GRPCCallResult? in
          if let final = state.final { return state.consumerFailure ?? final }
          state.resultWaiters.append(continuation)
          return nil
        }
        if let ready { continuation.resume(returning: ready) }
      }
    }
  }
}

/// One response message and how it arrived.
public struct GRPCReceivedMessage: Sendable, Hashable {
  /// The message (decompressed).
  public var bytes: [UInt8]
  /// The encoding it arrived compressed with, or `nil` when it arrived uncompressed.
  public var compression: GRPCCompressionAlgorithm?
}

/// How a call ended: its status, response headers and trailers.
public struct GRPCCallResult: Sendable, Hashable {
  /// The final status.
  public var status: GRPCStatus
  /// The response headers (empty for a Trailers-Only response or a call that never got one).
  public var headers: GRPCMetadata
  /// The trailers (for a Trailers-Only response, its headers).
  public var trailers: GRPCMetadata

  /// A result of `status` with `headers` and `trailers`.
  public init(status: GRPCStatus, headers: GRPCMetadata = GRPCMetadata(), trailers: GRPCMetadata = GRPCMetadata()) {
    self.status = status
    self.headers = headers
    self.trailers = trailers
  }
}
