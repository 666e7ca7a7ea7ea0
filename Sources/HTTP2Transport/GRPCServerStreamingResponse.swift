// Sources/HTTP2Transport/GRPCServerStreamingResponse.swift - server streaming as an AsyncSequence

import Primitives
public import GRPCProtocol
import Synchronization

/// The response messages of a server-streaming call, as an `AsyncSequence`.
///
/// Single consumer. The sequence ends after the last message when the call
/// ends OK and throws ``GRPCError`` otherwise. Flow control follows the
/// consumer: received bytes return to the stream's HTTP/2 window only as
/// messages are taken, so a consumer that stops reading stops the server
/// (within one window) instead of growing a buffer. Dropping the response
/// before its end cancels the call.
public final class GRPCServerStreamingResponse: AsyncSequence, Sendable {
  public typealias Element = [UInt8]
  public typealias Failure = GRPCError

  let receiver = Receiver()

  init() {}

  deinit { receiver.cancelIfUnfinished() }

  /// Cancels the call (the sequence then throws CANCELLED unless it already ended).
  public func cancel() { receiver.cancelIfUnfinished() }

  /// Waits for the end of the call and returns its status, headers and trailers
  /// (whether or not the messages were all read).
  public func result() async -> GRPCCallResult {
    await receiver.result()
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
  final class Receiver: GRPCCallHandler, @unchecked Sendable {
    private struct State {
      var messages: [[UInt8]] = []
      var head = 0
      var headers = GRPCMetadata()
      var final: GRPCCallResult?
      var waiter: CheckedContinuation<Void, Never>?
      var resultWaiters: [CheckedContinuation<GRPCCallResult, Never>] = []
      var handle: GRPCCallHandle?
      var cancelRequested = false
      var releasePending = 0
    }
    private let state = Locked(State())

    func setHandle(_ handle: GRPCCallHandle) {
      let cancel = state.withLock { state -> Bool in
        state.handle = handle
        return state.cancelRequested && state.final == nil
      }
      if cancel { handle.cancel() }
    }

    func cancelIfUnfinished() {
      let handle = state.withLock { state -> GRPCCallHandle? in
        guard state.final == nil else { return nil }
        state.cancelRequested = true
        return state.handle
      }
      handle?.cancel()
    }

    func callDidReceiveHeaders(_ headers: GRPCMetadata) {
      state.withLock { $0.headers = headers }
    }

    func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
      let copy = [UInt8](message)
      let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
        state.messages.append(copy)
        let waiter = state.waiter
        state.waiter = nil
        return waiter
      }
      waiter?.resume()
    }

    func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
      let (waiter, resultWaiters, result) = state.withLock { state in
        let result = GRPCCallResult(status: status, headers: state.headers, trailers: trailers)
        state.final = result
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
      while true {
        enum Step {
          case message([UInt8], release: GRPCCallHandle?, bytes: Int)
          case finished(GRPCCallResult)
          case wait
        }
        let step = state.withLock { state -> Step in
          if state.head < state.messages.count {
            let message = state.messages[state.head]
            state.head += 1
            if state.head == state.messages.count {
              state.messages.removeAll(keepingCapacity: true)
              state.head = 0
            }
            // Hand the bytes back to the window in batches, not per message.
            state.releasePending += message.count + 5
            if state.releasePending >= 16 * 1024 || state.messages.isEmpty {
              let bytes = state.releasePending
              state.releasePending = 0
              return .message(message, release: state.handle, bytes: bytes)
            }
            return .message(message, release: nil, bytes: 0)
          }
          if let final = state.final { return .finished(final) }
          return .wait
        }
        switch step {
        case .message(let message, let handle, let bytes):
          if let handle, bytes > 0 { handle.release(bytes: bytes) }
          return message
        case .finished(let result):
          if result.status.code == .ok { return nil }
          throw GRPCError(status: result.status, trailers: result.trailers)
        case .wait:
          await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
              if state.head < state.messages.count || state.final != nil { return true }
              state.waiter = continuation
              return false
            }
            if resumeNow { continuation.resume() }
          }
        }
      }
    }

    func result() async -> GRPCCallResult {
      await withCheckedContinuation { continuation in
        let ready = state.withLock { state -> GRPCCallResult? in
          if let final = state.final { return final }
          state.resultWaiters.append(continuation)
          return nil
        }
        if let ready { continuation.resume(returning: ready) }
      }
    }
  }
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
