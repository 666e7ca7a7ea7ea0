// Sources/GRPCProtocol/GRPCCallHandler.swift - the callback form of a call, as every transport gives it


/// Receives one call's response parts, on the channel's event loop thread.
///
/// This is the cheapest way to consume responses (no task hop, no copy: a
/// message is lent for the duration of the callback), meant for the hot path
/// of following many trips. Callbacks must return quickly and must not block:
/// they run on the thread that serves every call of the connection.
public protocol GRPCCallHandler: AnyObject, Sendable {
  /// The response headers arrived (not called for a Trailers-Only response).
  func callDidReceiveHeaders(_ headers: GRPCMetadata)
  /// One response message; the buffer is valid only during the call.
  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer)
  /// The call ended with `status`; nothing more follows.
  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata)
}

extension GRPCCallHandler {
  public func callDidReceiveHeaders(_ headers: GRPCMetadata) {}
}

/// Cancels a call started through a ``GRPCClientTransport``.
public struct GRPCCallHandle: Sendable {
  let cancelAction: @Sendable () -> Void
  let releaseAction: @Sendable (Int) -> Void

  /// A handle whose ``cancel()`` runs `cancel` and whose window releases (manual flow control) run
  /// `release`: for transports.
  package init(cancel: @escaping @Sendable () -> Void, release: @escaping @Sendable (Int) -> Void = { _ in }) {
    cancelAction = cancel
    releaseAction = release
  }

  /// Cancels the call: RST_STREAM(CANCEL) goes to the server and the handler
  /// finishes with CANCELLED, unless the call already ended.
  public func cancel() { cancelAction() }

  /// With manual flow control, returns `bytes` of received data to the stream's
  /// window so the server may send more.
  package func release(bytes: Int) { releaseAction(bytes) }
}

/// The shape of a call.
public enum GRPCCallKind: Sendable, Hashable {
  /// One request, one response.
  case unary
  /// One request, a stream of responses.
  case serverStreaming
}
