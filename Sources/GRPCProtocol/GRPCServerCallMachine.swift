// Sources/GRPCProtocol/GRPCServerCallMachine.swift - one call as a server answers it, without I/O
//
// The mirror of GRPCClientCall: a value that takes what the service does to a call (headers, a message, the end, a
// reset) and what happens to it (the client went) and says what goes on the wire, as header fields, or that the
// step comes too late. GRPCServer's calls (HTTP2Transport) and the tests' InMemoryTransport both drive it, so the
// stand-in follows the real rules, not a copy of them.
//
// The rules (PROTOCOL-HTTP2.md): the response headers go once, before the first message, with `:status` 200 and
// `content-type: application/grpc`; the end is the trailers with `grpc-status` (and a percent-encoded
// `grpc-message`), or a Trailers-Only response carrying both when nothing went before; nothing goes after the end,
// a reset, or the client's cancellation.

/// What a server sends for one call, decided step by step.
///
/// ```swift
/// var machine = GRPCServerCallMachine()
/// switch machine.sendMessage() {
/// case .send(let headers): if let headers { submitHeaders(headers) }; submitMessage(bytes)
/// case .tooLate: break
/// }
/// if let fields = machine.finish(.ok, trailers: [:]) { submitTrailers(fields) }
/// ```
public struct GRPCServerCallMachine: Sendable {
  /// Header fields as they go on the wire, in order.
  public typealias HeaderFields = [(name: String, value: String)]

  /// Where the call is.
  public enum State: Sendable, Equatable {
    /// The service may still answer; `headersSent` once the response headers went.
    case open(headersSent: Bool)
    /// Finished, reset, or cancelled by the client: nothing more goes out.
    case closed
  }

  /// What to do with a message the service sends.
  public enum MessageStep {
    /// Send it, after these response headers when they have not gone yet.
    case send(headersFirst: HeaderFields?)
    /// The call has ended: drop it.
    case tooLate
  }

  /// Where the call is.
  public private(set) var state: State = .open(headersSent: false)

  /// A call not answered yet.
  public init() {}

  /// Whether the call has ended (finished, reset, or cancelled by the client).
  public var isClosed: Bool { state == .closed }

  /// Whether the response headers went.
  public var headersSent: Bool {
    if case .open(let sent) = state { return sent }
    return false
  }

  /// The service sends the response headers with `metadata`: their fields, or nil when they went already or the
  /// call has ended.
  public mutating func sendHeaders(_ metadata: GRPCMetadata) -> HeaderFields? {
    guard case .open(headersSent: false) = state else { return nil }
    state = .open(headersSent: true)
    return Self.responseHeaderFields(metadata)
  }

  /// The service sends a message.
  public mutating func sendMessage() -> MessageStep {
    switch state {
    case .closed: return .tooLate
    case .open(let headersSent): return .send(headersFirst: headersSent ? nil : sendHeaders(GRPCMetadata()))
    }
  }

  /// The service ends the call with `status`: the trailers' fields (a Trailers-Only response's when nothing went
  /// before), or nil when the call had ended.
  public mutating func finish(_ status: GRPCStatus, trailers: GRPCMetadata) -> HeaderFields? {
    guard case .open(let headersSent) = state else { return nil }
    state = .closed
    return Self.trailerFields(status, trailers, headersSent: headersSent)
  }

  /// The service resets the stream: true when it was open (send RST_STREAM), false when the call had ended.
  public mutating func reset() -> Bool {
    guard case .open = state else { return false }
    state = .closed
    return true
  }

  /// The client cancelled the call, or its connection went: true when the call was still open (the service's
  /// cancel handlers run), false when it had ended.
  public mutating func peerClosed() -> Bool {
    reset()
  }

  /// The response headers' fields: `:status`, `content-type` and `metadata`.
  public static func responseHeaderFields(_ metadata: GRPCMetadata) -> HeaderFields {
    [(":status", "200"), ("content-type", "application/grpc")] + metadata.headerFields
  }

  /// The trailers' fields, or a Trailers-Only response's when `headersSent` is false.
  public static func trailerFields(_ status: GRPCStatus, _ trailers: GRPCMetadata, headersSent: Bool) -> HeaderFields {
    var fields: HeaderFields = headersSent ? [] : [(":status", "200"), ("content-type", "application/grpc")]
    fields.append(("grpc-status", String(status.code.rawValue)))
    if !status.message.isEmpty { fields.append(("grpc-message", GRPCPercentEncoding.encode(status.message))) }
    fields += trailers.headerFields
    return fields
  }
}
