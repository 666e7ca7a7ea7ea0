// Sources/GRPCProtocol/GRPCUnaryCall.swift - a unary call awaited, on any transport
//
// The callback form of a call (GRPCCallHandler) is the hot path; a caller that wants one answer awaits it here
// instead of writing a collector of its own. LateCallHandle is the one guard for a cancellation that comes
// before the call's handle does (a task cancelled while the call is being started).

import Primitives

/// The result of a unary or client-streaming call that ended OK.
public struct GRPCUnaryResponse: Sendable {
  /// The serialized response message (decompressed).
  public var message: [UInt8]
  /// The response headers.
  public var headers: GRPCMetadata
  /// The trailers.
  public var trailers: GRPCMetadata
  /// The encoding the message arrived compressed with, or `nil` when it arrived uncompressed.
  public var compression: GRPCCompressionAlgorithm?

  /// A response of `message`, with its headers, trailers and the encoding it arrived in.
  public init(
    message: [UInt8], headers: GRPCMetadata = GRPCMetadata(), trailers: GRPCMetadata = GRPCMetadata(),
    compression: GRPCCompressionAlgorithm? = nil
  ) {
    self.message = message
    self.headers = headers
    self.trailers = trailers
    self.compression = compression
  }
}

/// A call's handle that may arrive after its cancellation was asked for: the cancellation then reaches the call
/// as soon as the handle does.
package final class LateCallHandle: Sendable {
  private struct State {
    var handle: GRPCCallHandle?
    var cancelRequested = false
  }

  private let state = Locked(State())

  package init() {}

  /// Whether the call's cancellation was asked for.
  package var cancelRequested: Bool { state.withLock { $0.cancelRequested } }

  /// The call's handle, once it arrived.
  package var current: GRPCCallHandle? { state.withLock { $0.handle } }

  /// The call's handle arrived: cancels the call at once when its cancellation came first.
  package func set(_ handle: GRPCCallHandle) {
    let cancel = state.withLock { state -> Bool in
      state.handle = handle
      return state.cancelRequested
    }
    if cancel { handle.cancel() }
  }

  /// Cancels the call now, or as soon as its handle arrives.
  package func cancel() {
    state.withLock { state -> GRPCCallHandle? in
      state.cancelRequested = true
      return state.handle
    }?.cancel()
  }
}

/// Starts a unary call with `start` (given the handler that collects its answer) and awaits the answer;
/// cancelling the awaiting task cancels the call.
package func awaitUnaryResponse(
  start: (any GRPCCallHandler) -> GRPCCallHandle
) async -> Result<GRPCUnaryResponse, GRPCError> {
  let collector = UnaryResponseCollector()
  return await withTaskCancellationHandler {
    await withCheckedContinuation { continuation in
      collector.setContinuation(continuation)
      collector.handle.set(start(collector))
    }
  } onCancel: {
    collector.handle.cancel()
  }
}

extension GRPCClientTransport {
  /// Makes a unary call on `scheduler` (the transport's first by default) and awaits its answer.
  ///
  /// - Returns: The response message with the response headers and trailers.
  /// - Throws: ``GRPCError`` for any status other than OK; task cancellation cancels the call (CANCELLED).
  public func unary(
    path: String, request: [UInt8], options: CallOptions = CallOptions(), on scheduler: (any GRPCScheduler)? = nil
  ) async throws(GRPCError) -> GRPCUnaryResponse {
    try await awaitUnaryResponse { handler in
      startCall(
        path: path, request: request, kind: .unary, options: options, on: scheduler ?? schedulers[0],
        handler: handler)
    }.get()
  }
}

/// Collects one unary answer and resumes the awaiting task.
///
/// `@unchecked Sendable`: the fields are guarded by `state`'s lock.
private final class UnaryResponseCollector: GRPCCallHandler, @unchecked Sendable {
  private struct State {
    var continuation: CheckedContinuation<Result<GRPCUnaryResponse, GRPCError>, Never>?
    var headers = GRPCMetadata()
    var message: [UInt8]?
    var compression: GRPCCompressionAlgorithm?
  }

  private let state = Locked(State())
  let handle = LateCallHandle()

  func setContinuation(_ continuation: CheckedContinuation<Result<GRPCUnaryResponse, GRPCError>, Never>) {
    state.withLock { $0.continuation = continuation }
  }

  func callDidReceiveHeaders(_ headers: GRPCMetadata) {
    state.withLock { $0.headers = headers }
  }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    callDidReceiveMessage(message, compression: nil)
  }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer, compression: GRPCCompressionAlgorithm?) {
    let copy = [UInt8](message)
    state.withLock {
      $0.message = copy
      $0.compression = compression
    }
  }

  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    let (continuation, headers, message, compression) = state.withLock { state in
      defer { state.continuation = nil }
      return (state.continuation, state.headers, state.message, state.compression)
    }
    guard let continuation else { return }
    if status.code == .ok {
      continuation.resume(
        returning: .success(
          GRPCUnaryResponse(message: message ?? [], headers: headers, trailers: trailers, compression: compression)))
    } else {
      continuation.resume(returning: .failure(GRPCError(status: status, trailers: trailers)))
    }
  }
}
