// Sources/GRPCProtocol/GRPCClientCall.swift - the client side of one call, as a pure state machine
//
// The transport feeds in what happened on the stream (header blocks, DATA
// chunks, the stream's close, cancellation, the deadline) and gets back what
// to do: nothing, hand the response headers to the caller, finish with a
// status, reset the stream and finish, or start the call again elsewhere (a
// refused stream) or finish. The transport acts on the action alone and never
// inspects the state after feeding it. No I/O, no clocks, no locks: the
// transport's event loop owns one of these per stream and the tests drive it
// with plain values.
//
// The status is decided exactly once. Whatever arrives after it (a late
// RST_STREAM, more DATA) returns `.none` and changes nothing: java once turned
// OK into INTERNAL because of a RST_STREAM(NO_ERROR) after the trailers.
//
// Decisions the specification leaves open, and what this type does:
// - `grpc-status`, when present in a block that ends the stream, always wins
//   over `:status` and `content-type` (grpc-swift #926: Envoy's Trailers-Only
//   responses have no content-type).
// - A response block that does not look like gRPC (`:status` other than 200, or
//   a content-type that is missing or not `application/grpc…`) and carries no
//   `grpc-status` gets a synthesized status from the HTTP mapping
//   (http-grpc-status-mapping.md): 200 with a wrong or missing content-type is
//   UNKNOWN, as grpc-go, grpc-java and C-core report it.
// - A `grpc-status` in response headers that do not end the stream is not a
//   status (connect-swift #268); only trailers carry one.
// - Unary cardinality violations (OK with zero messages, or a second message,
//   on a unary or client-streaming call) are INTERNAL, as grpc-go, grpc-java and
//   grpc-node do, not the UNIMPLEMENTED the specification suggests: the server
//   did implement the method, it broke the protocol while answering.
// - A compressed message (flag 1) is accepted only under a declared
//   `grpc-encoding` that this client supports and announced; one with no
//   encoding, `identity`, or an unsupported one is INTERNAL (compression.md).
//   Decompressing can be done here (``receiveData(_:endStream:_:)``) or left to
//   the consumer (``receiveMessages(_:endStream:_:)``), who then decides while
//   inflating whether the message fits the receive limit.
// - Client-side aborts reset the stream with CANCEL, which tells the server to
//   stop working on the call; a stream the server already ended is not reset.

/// The client side of one call (any kind: the request side is the transport's), as a value-type state machine.
///
/// ```swift
/// var call = GRPCClientCall(kind: .serverStreaming, maxReceiveMessageSize: 4 << 20)
/// // on each event from the HTTP/2 session:
/// switch call.receiveData(chunk, endStream: false, { message in decode(message) }) {
/// case .none: break
/// case .deliverHeaders(let headers): handler.callDidReceiveHeaders(headers)
/// case .finish(let status): complete(status, call.trailers)
/// case .resetAndFinish(let code, let status): resetStream(code); complete(status, call.trailers)
/// case .retryOrFinish(let status): if canResend { startAgain() } else { complete(status, call.trailers) }
/// }
/// ```
public struct GRPCClientCall: Sendable {
  /// The shape of the call.
  /// The shape of the call (``GRPCCallKind``).
  public typealias Kind = GRPCCallKind

  /// One response message as ``receiveMessages(_:endStream:_:)`` hands it out.
  public struct InboundMessage {
    /// The message as it arrived: compressed when ``compression`` is set. Valid only
    /// during the callback.
    public var bytes: UnsafeRawBufferPointer
    /// The encoding the bytes are compressed with, or `nil` for a plain message.
    /// Decompress with ``GRPCMessageCompression/decompress(_:with:limit:)`` and the call's
    /// receive limit.
    public var compression: GRPCCompressionAlgorithm?
    /// How many bytes of the chunk being processed belong to this message (its prefix
    /// included); the bytes it had in earlier chunks are not counted. For flow control:
    /// a consumer that returns window as it takes messages returns this much, and the
    /// chunk's other bytes (those of a message not complete yet) at once.
    public var windowBytes: Int
  }

  /// What the transport must do after an input. The statuses that end a call come with it;
  /// the call's ``trailers`` are final once one of them was returned.
  public enum Action: Sendable, Equatable {
    /// Nothing (yet): keep the stream going.
    case none
    /// Valid gRPC response headers arrived (returned once, never for a Trailers-Only
    /// response): hand their metadata to the caller; the call goes on.
    case deliverHeaders(GRPCMetadata)
    /// The call is over with this status. The stream is already closed, or
    /// closes by itself; nothing needs to be sent.
    case finish(GRPCStatus)
    /// Send RST_STREAM with `http2ErrorCode` (if the stream was opened and is
    /// not closed yet), then complete the call with the status.
    case resetAndFinish(http2ErrorCode: HTTP2ErrorCode, GRPCStatus)
    /// The request never reached the server's application (REFUSED_STREAM before any
    /// response, or a connection failure the transport reported as such): the transport may
    /// start the call again, once, on another stream, if it can still send the whole request;
    /// otherwise it completes the call with the status. Nothing needs to be sent on this stream.
    case retryOrFinish(GRPCStatus)
  }

  /// Where the call is.
  private enum State: Sendable {
    /// The request is out (or going out); no final response headers yet. 1xx blocks keep it here.
    case awaitingHeaders
    /// Valid gRPC response headers arrived; messages and then trailers follow.
    case receivingMessages
    /// The status is decided and never changes again.
    case finished(GRPCStatus)
  }

  /// Whether the call is unary or server-streaming.
  public let kind: Kind
  private var state: State = .awaitingHeaders
  private var deframer: GRPCMessageDeframer
  /// Empty response messages received in a row (``maxEmptyMessagesInARow``).
  private var emptyMessagesInARow = 0

  /// The most empty response messages (length 0) a call takes in a row: past it, the server is sending
  /// nothing at the cost of the client's CPU, and the call ends with RESOURCE_EXHAUSTED (a non-empty
  /// message starts the count again).
  public static let maxEmptyMessagesInARow = 1_000

  /// The response headers' metadata (empty for a Trailers-Only response).
  public private(set) var responseHeaders: GRPCMetadata = [:]
  /// The trailers' metadata, or the metadata of a Trailers-Only response.
  public private(set) var trailers: GRPCMetadata = [:]
  /// How many response messages were handed to the caller.
  public private(set) var messagesReceived = 0
  /// The `grpc-encoding` the server declared in the response headers, when other than `identity`.
  public private(set) var responseEncoding: String?
  /// The encoding of the response's compressed messages: ``responseEncoding`` when it is
  /// one this call accepts, else `nil` (compressed messages then fail the call INTERNAL).
  public private(set) var responseCompression: GRPCCompressionAlgorithm?
  /// The encodings the server said it accepts (`grpc-accept-encoding` in the response
  /// headers, or the trailers of a Trailers-Only response), lowercased; `nil` when it said nothing.
  public private(set) var serverAcceptedEncodings: [String]?
  /// The encodings this call accepts on responses (besides identity).
  public let acceptedEncodings: [GRPCCompressionAlgorithm]

  /// Creates the state of a call whose request is about to be sent.
  ///
  /// - Parameters:
  ///   - maxReceiveMessageSize: the largest response message accepted, on the wire and
  ///     once decompressed; a larger one fails the call with RESOURCE_EXHAUSTED.
  ///   - acceptedEncodings: the encodings the request's `grpc-accept-encoding` announced;
  ///     a message compressed with any other fails the call with INTERNAL. Identity is
  ///     always accepted.
  public init(
    kind: Kind,
    maxReceiveMessageSize: Int = GRPCMessageDeframer.defaultMaxMessageSize,
    acceptedEncodings: [GRPCCompressionAlgorithm] = [.gzip, .deflate]
  ) {
    self.kind = kind
    self.deframer = GRPCMessageDeframer(maxMessageSize: maxReceiveMessageSize)
    self.acceptedEncodings = acceptedEncodings.filter { $0 != .identity }
  }

  /// The receive limit: the largest message accepted, compressed or decompressed.
  public var maxReceiveMessageSize: Int { deframer.maxMessageSize }

  /// Whether the status has been decided.
  public var isFinished: Bool {
    if case .finished = state { return true }
    return false
  }

  /// The final status, once decided.
  public var status: GRPCStatus? {
    if case .finished(let status) = state { return status }
    return nil
  }

  /// The final status as an error with the trailers, when it is not OK.
  public var error: GRPCError? {
    guard let status, !status.isOK else { return nil }
    return GRPCError(status: status, trailers: trailers)
  }

  // MARK: - Header blocks

  /// Handles one complete HEADERS block (names lowercase, as HTTP/2 delivers them).
  ///
  /// - 1xx blocks are skipped (one that ends the stream is INTERNAL).
  /// - The first final block is checked: `:status` 200 and a gRPC content-type
  ///   make it the response headers (``Action/deliverHeaders(_:)``),
  ///   unless it ends the stream with a `grpc-status` (Trailers-Only), which
  ///   then decides the status whatever the rest says. A non-gRPC response
  ///   without `grpc-status` fails with the HTTP mapping (UNKNOWN for a 200 with a
  ///   missing or wrong content-type), resetting the stream if it is still open.
  /// - The next block is the trailers; it carries the status. No `grpc-status`
  ///   there is UNKNOWN ("missing grpc-status").
  ///
  /// If trailers arrive before the client half-closed its side, the transport
  /// should also send RST_STREAM(NO_ERROR) (PROTOCOL-HTTP2.md, early server
  /// closure); this type does not know what was sent, so that is left to it.
  public mutating func receiveHeaders(_ fields: [(name: String, value: String)], endStream: Bool) -> Action {
    switch state {
    case .finished:
      return .none
    case .awaitingHeaders:
      return receiveResponseHeaders(fields, endStream: endStream)
    case .receivingMessages:
      return receiveTrailers(fields, endStream: endStream)
    }
  }

  /// What one block of headers did to the call: the action to perform, and the encodings the server listed
  /// in it (`grpc-accept-encoding`) when they differ from what the call knew, for a transport that remembers
  /// them per server (a Trailers-Only UNIMPLEMENTED often carries them).
  public struct HeadersOutcome: Sendable, Equatable {
    /// What the transport does: as ``receiveHeaders(_:endStream:)`` returns.
    public var action: Action
    /// The server's accepted encodings, when this block changed them.
    public var serverAcceptedEncodings: [String]?
  }

  /// ``receiveHeaders(_:endStream:)``, also saying what the block taught about the server's encodings.
  public mutating func receiveHeaderBlock(_ fields: [(name: String, value: String)], endStream: Bool) -> HeadersOutcome
  {
    let before = serverAcceptedEncodings
    let action = receiveHeaders(fields, endStream: endStream)
    let learned = serverAcceptedEncodings != before ? serverAcceptedEncodings : nil
    return HeadersOutcome(action: action, serverAcceptedEncodings: learned)
  }

  private mutating func receiveResponseHeaders(_ fields: [(name: String, value: String)], endStream: Bool) -> Action {
    let head = ResponseFields(fields)
    if let httpStatus = head.httpStatus, (100...199).contains(httpStatus) {
      // Informational: ignore it and wait for the final block, unless it ends the stream.
      guard endStream else { return .none }
      return finish(GRPCStatus(code: .internalError, message: "informational :status \(httpStatus) ended the stream"))
    }
    let serverStatus = head.grpcStatus.map { Self.serverStatus(grpcStatus: $0, grpcMessage: head.grpcMessage) }
    if let accepted = head.grpcAcceptEncoding {
      serverAcceptedEncodings = GRPCCompressionAlgorithm.parseAcceptEncoding(accepted)
    }
    if endStream {
      // Trailers-Only, or a non-gRPC response without a body.
      trailers = GRPCMetadata(decodingHeaderFields: fields)
      if let serverStatus { return finish(checked(serverStatus)) }
      let missing = GRPCStatus(code: .unknown, message: "missing grpc-status in Trailers-Only response")
      return finish(Self.notGRPCStatus(head) ?? missing)
    }
    responseHeaders = GRPCMetadata(decodingHeaderFields: fields)
    if let notGRPC = Self.notGRPCStatus(head) {
      // A proxy or a web server answered. Its body is not gRPC: stop the stream.
      return finish(serverStatus ?? notGRPC, reset: .cancel)
    }
    if let encoding = head.grpcEncoding, GRPCCompressionAlgorithm(name: encoding) != .identity {
      responseEncoding = encoding
      if let algorithm = GRPCCompressionAlgorithm(name: encoding), acceptedEncodings.contains(algorithm) {
        responseCompression = algorithm
      }
    }
    state = .receivingMessages
    return .deliverHeaders(responseHeaders)
  }

  private mutating func receiveTrailers(_ fields: [(name: String, value: String)], endStream: Bool) -> Action {
    trailers = GRPCMetadata(decodingHeaderFields: fields)
    guard endStream else {
      return finish(
        GRPCStatus(code: .internalError, message: "second HEADERS block without END_STREAM"),
        reset: .cancel)
    }
    let tail = ResponseFields(fields)
    guard let grpcStatus = tail.grpcStatus else {
      return finish(GRPCStatus(code: .unknown, message: "missing grpc-status in trailers"))
    }
    return finish(checked(Self.serverStatus(grpcStatus: grpcStatus, grpcMessage: tail.grpcMessage)))
  }

  // MARK: - DATA

  /// Handles one chunk of DATA payload: calls `onMessage` for each response
  /// message completed, in order, decompressed, then checks the stream's shape.
  ///
  /// The buffer given to `onMessage` is valid only during that call.
  ///
  /// Fails the call with INTERNAL for DATA before the response headers, DATA
  /// that ends the stream (no trailers), a second message on a unary or
  /// client-streaming call, a malformed prefix, or a compressed message the
  /// call cannot take (no `grpc-encoding`, `identity`, an unsupported one, or
  /// a body that does not decompress); with RESOURCE_EXHAUSTED for a message
  /// over the size limit, on the wire or once decompressed (decided while
  /// inflating). Messages completed before the failure are delivered.
  public mutating func receiveData(
    _ chunk: UnsafeRawBufferPointer,
    endStream: Bool,
    _ onMessage: (UnsafeRawBufferPointer) -> Void
  ) -> Action {
    receiveData(chunk, endStream: endStream) { message, _ in onMessage(message) }
  }

  /// Like ``receiveData(_:endStream:_:)``, also telling for each message the encoding it
  /// arrived compressed with (`nil`: it arrived uncompressed).
  public mutating func receiveData(
    _ chunk: UnsafeRawBufferPointer,
    endStream: Bool,
    _ onMessage: (UnsafeRawBufferPointer, GRPCCompressionAlgorithm?) -> Void
  ) -> Action {
    let limit = deframer.maxMessageSize
    let before = messagesReceived
    var handed = 0
    var failure: GRPCError?
    let action = receiveMessages(chunk, endStream: endStream) { message in
      guard failure == nil else { return }
      guard let algorithm = message.compression else {
        handed += 1
        onMessage(message.bytes, nil)
        return
      }
      do throws(GRPCError) {
        let plain = try GRPCMessageCompression.decompress(message.bytes, with: algorithm, limit: limit)
        handed += 1
        plain.withUnsafeBytes { onMessage($0, algorithm) }
      } catch {
        failure = error
      }
    }
    guard let failure else { return action }
    // Only the messages before the one that failed reached the caller.
    messagesReceived = before + handed
    // The messages after the one that failed were not delivered; the stream is abandoned.
    return abortAfterDelivery(failure.status, endStream: endStream, decided: action)
  }

  /// Like ``receiveData(_:endStream:_:)``, but hands out messages as they arrived,
  /// compressed ones still compressed (``InboundMessage/compression``), with the share
  /// of the chunk each one used, so a consumer can decompress later (on its own thread,
  /// when it takes the message) and return flow-control window per message.
  ///
  /// A consumer that decompresses must apply ``maxReceiveMessageSize`` and, when that
  /// fails, end the call with ``abort(_:)`` and the error's status.
  public mutating func receiveMessages(
    _ chunk: UnsafeRawBufferPointer,
    endStream: Bool,
    _ onMessage: (InboundMessage) -> Void
  ) -> Action {
    let resetUnlessEnded: HTTP2ErrorCode? = endStream ? nil : HTTP2ErrorCode.cancel
    switch state {
    case .finished:
      return .none
    case .awaitingHeaders:
      return finish(
        GRPCStatus(code: .internalError, message: "DATA received before response headers"), reset: resetUnlessEnded)
    case .receivingMessages:
      break
    }

    // Count in locals: the closure must not touch `self` while the deframer (part of `self`) is mutating.
    let single = kind.expectsSingleResponse
    let compression = responseCompression
    let unusableCompression = compression == nil ? compressedMessageError() : nil
    var delivered = messagesReceived
    var emptyInARow = emptyMessagesInARow
    var failure: GRPCStatus?
    var previousEnd = 0
    defer { emptyMessagesInARow = emptyInARow }
    do {
      try deframer.processMessages(chunk) { bytes, info in
        defer { previousEnd = info.endOffset }
        guard failure == nil else { return }
        if bytes.isEmpty {
          emptyInARow += 1
          if emptyInARow > Self.maxEmptyMessagesInARow {
            failure = GRPCStatus(
              code: .resourceExhausted,
              message: "the server sent \(emptyInARow) empty messages in a row, which carry nothing")
            return
          }
        } else {
          emptyInARow = 0
        }
        if single, delivered >= 1 {
          failure = GRPCStatus(code: .internalError, message: "unary call received more than one response message")
          return
        }
        if info.isCompressed, let unusableCompression {
          failure = unusableCompression
          return
        }
        delivered += 1
        onMessage(
          InboundMessage(
            bytes: bytes, compression: info.isCompressed ? compression : nil,
            windowBytes: info.endOffset - previousEnd))
      }
    } catch {
      messagesReceived = delivered
      return finish(failure ?? error.status, reset: resetUnlessEnded)
    }
    messagesReceived = delivered

    if let failure {
      return finish(failure, reset: resetUnlessEnded)
    }
    if endStream {
      return finish(GRPCStatus(code: .internalError, message: "stream ended by a DATA frame without trailers"))
    }
    return .none
  }

  /// The status for a compressed message when the response declared no usable encoding.
  private func compressedMessageError() -> GRPCStatus {
    guard let responseEncoding else {
      return GRPCStatus(code: .internalError, message: GRPCMessageDeframer.compressedMessageError)
    }
    let accepted = GRPCCompressionAlgorithm.acceptEncodingHeader(acceptedEncodings)
    return GRPCStatus(
      code: .internalError,
      message:
        "compressed message received with grpc-encoding \"\(responseEncoding)\", which is not supported (accepted: \(accepted))"
    )
  }

  /// Ends the call with `status` after `receiveMessages` already decided `decided` for the
  /// same chunk; a status decided there (e.g. a later bad prefix) stands.
  private mutating func abortAfterDelivery(_ status: GRPCStatus, endStream: Bool, decided: Action) -> Action {
    if case .none = decided {
      return endStream ? finishIfOpen(status) : abort(status)
    }
    // receiveMessages finished the call already; the decompression failure came first, so it wins.
    state = .finished(status)
    switch decided {
    case .resetAndFinish(let code, _): return .resetAndFinish(http2ErrorCode: code, status)
    default: return .finish(status)
    }
  }

  private mutating func finishIfOpen(_ status: GRPCStatus) -> Action {
    guard !isFinished else { return .none }
    return finish(status)
  }

  // MARK: - Ending

  /// Handles the stream's close, with the RST_STREAM error code (0 for a normal close).
  ///
  /// After trailers this changes nothing. Before them, the code is mapped with
  /// ``GRPCStatusMapping/code(forHTTP2ErrorCode:)``: NO_ERROR (the stream ended
  /// with no status) is INTERNAL, REFUSED_STREAM is UNAVAILABLE, and before any
  /// response has started it is ``Action/retryOrFinish(_:)``: the server did not
  /// process the stream (RFC 9113 §8.7), so the request may be sent again.
  ///
  /// A server's RST_STREAM(CANCEL) that arrives after the call's deadline should
  /// be reported as DEADLINE_EXCEEDED: the transport, which owns the clock,
  /// calls ``deadlineExceeded()`` first in that case.
  public mutating func streamClosed(http2ErrorCode: HTTP2ErrorCode) -> Action {
    if case .finished = state { return .none }
    let codeName =
      "\(http2ErrorCode.name) (0x\(String(http2ErrorCode.rawValue, radix: 16)))"
    guard http2ErrorCode != HTTP2ErrorCode.noError else {
      let message =
        deframer.hasPartialMessage
        ? "stream ended in the middle of a message (\(deframer.bufferedBytes) bytes received)"
        : "stream closed without trailers"
      return finish(GRPCStatus(code: .internalError, message: message))
    }
    let code = GRPCStatusMapping.code(for: http2ErrorCode)
    let status = GRPCStatus(code: code, message: "stream closed with HTTP/2 error \(codeName)")
    if http2ErrorCode == HTTP2ErrorCode.refusedStream, case .awaitingHeaders = state {
      return finish(status, retry: true)
    }
    return finish(status)
  }

  /// The caller cancelled the call: CANCELLED, and reset the stream with CANCEL.
  public mutating func cancel() -> Action {
    guard !isFinished else { return .none }
    return finish(
      GRPCStatus(code: .cancelled, message: "call cancelled by the client"),
      reset: .cancel)
  }

  /// The call's deadline passed: DEADLINE_EXCEEDED, and reset the stream with CANCEL.
  public mutating func deadlineExceeded() -> Action {
    guard !isFinished else { return .none }
    return finish(
      GRPCStatus(code: .deadlineExceeded, message: "deadline exceeded"),
      reset: .cancel)
  }

  /// The connection failed or closed under the call: UNAVAILABLE with `message`, and `cause`
  /// (the transport's typed connection error) as the status's ``GRPCStatus/cause``.
  ///
  /// - Parameter retryable: whether the request never reached the server (the
  ///   connection failed before the stream started, or the stream was above a
  ///   GOAWAY's last stream id), so one transparent retry is safe: the action is
  ///   then ``Action/retryOrFinish(_:)``.
  public mutating func connectionFailed(
    _ message: String, cause: (any Error & Sendable)? = nil, retryable: Bool = false
  ) -> Action {
    guard !isFinished else { return .none }
    return finish(GRPCStatus(code: .unavailable, message: message, cause: cause), retry: retryable)
  }

  /// Ends the call locally with `status` and resets the stream with CANCEL; for
  /// failures found above this layer, such as a response message that does not
  /// parse (INTERNAL).
  public mutating func abort(_ status: GRPCStatus) -> Action {
    guard !isFinished else { return .none }
    return finish(status, reset: .cancel)
  }

  // MARK: - Helpers

  /// Decides the status, releases the deframer's buffer and says what to do: reset the stream
  /// first (`reset`), or let the transport start the call again if it can (`retry`).
  private mutating func finish(_ status: GRPCStatus, reset: HTTP2ErrorCode? = nil, retry: Bool = false) -> Action {
    state = .finished(status)
    deframer = GRPCMessageDeframer(maxMessageSize: deframer.maxMessageSize)
    if let reset { return .resetAndFinish(http2ErrorCode: reset, status) }
    return retry ? .retryOrFinish(status) : .finish(status)
  }

  /// A server's status, checked against what actually arrived. An OK status is
  /// only believed if the response was complete: no message cut short, and
  /// exactly one message for a unary call. A non-OK status is kept as sent,
  /// since it already says the call failed, and says more than our check would.
  private func checked(_ status: GRPCStatus) -> GRPCStatus {
    guard status.isOK else { return status }
    if deframer.hasPartialMessage {
      return GRPCStatus(
        code: .internalError,
        message: "stream ended in the middle of a message (\(deframer.bufferedBytes) bytes received)")
    }
    if kind.expectsSingleResponse, messagesReceived == 0 {
      return GRPCStatus(code: .internalError, message: "unary call ended OK without a response message")
    }
    return status
  }

  /// The status the server sent: the parsed code and the decoded message.
  private static func serverStatus(grpcStatus: String, grpcMessage: String?) -> GRPCStatus {
    let code = GRPCStatusCode.parse(grpcStatusHeader: grpcStatus)
    var message = grpcMessage.map(GRPCPercentEncoding.decode) ?? ""
    if code == .unknown, grpcStatus != "2", message.isEmpty {
      message = "unparsable grpc-status \"\(grpcStatus)\""
    }
    return GRPCStatus(code: code, message: message)
  }

  /// The status for a final response block that is not a gRPC response, or `nil` if it is one.
  private static func notGRPCStatus(_ head: ResponseFields) -> GRPCStatus? {
    guard let httpStatus = head.httpStatus else {
      return GRPCStatus(code: .internalError, message: "response without a valid :status")
    }
    guard httpStatus == 200 else {
      let code = GRPCStatusMapping.code(forHTTPStatus: httpStatus)
      let contentType = head.contentType.map { ", content-type \"\($0)\"" } ?? ""
      return GRPCStatus(code: code, message: "HTTP status \(httpStatus) without grpc-status\(contentType)")
    }
    // A 200 that is not gRPC maps like any status without grpc-status: 200 is UNKNOWN.
    guard let contentType = head.contentType else {
      return GRPCStatus(code: GRPCStatusMapping.code(forHTTPStatus: 200), message: "response without content-type")
    }
    guard GRPCStatusMapping.isGRPCContentType(contentType) else {
      return GRPCStatus(
        code: GRPCStatusMapping.code(forHTTPStatus: 200), message: "invalid content-type \"\(contentType)\"")
    }
    return nil
  }
}

/// The fields of a response block this state machine looks at; first occurrence wins.
private struct ResponseFields {
  var httpStatus: Int?
  var contentType: String?
  var grpcStatus: String?
  var grpcMessage: String?
  var grpcEncoding: String?
  var grpcAcceptEncoding: String?

  init(_ fields: [(name: String, value: String)]) {
    var sawStatus = false
    for (name, value) in fields {
      switch name {
      case ":status" where !sawStatus:
        sawStatus = true
        // Exactly three digits (RFC 9110 §15); anything else counts as no valid status.
        if value.utf8.count == 3, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
          httpStatus = Int(value)
        }
      case "content-type" where contentType == nil: contentType = value
      case "grpc-status" where grpcStatus == nil: grpcStatus = value
      case "grpc-message" where grpcMessage == nil: grpcMessage = value
      case "grpc-encoding" where grpcEncoding == nil: grpcEncoding = value
      case "grpc-accept-encoding" where grpcAcceptEncoding == nil: grpcAcceptEncoding = value
      default: break
      }
    }
  }
}
