// Tests/GRPCProtocolTests/ClientCallTests.swift - the per-call client state machine, event by event

import GRPCProtocol
import Testing

typealias Fields = [(name: String, value: String)]
typealias Action = GRPCClientCall.Action

let cancelCode = HTTP2ErrorCode.cancel

/// Response headers of a well-formed gRPC response, plus `extra` fields.
func grpcHeaders(_ extra: Fields = []) -> Fields {
  [(":status", "200"), ("content-type", "application/grpc")] + extra
}

/// Trailers carrying `status` (and `message` when given), plus `extra` fields.
func trailerFields(_ status: String, _ message: String? = nil, _ extra: Fields = []) -> Fields {
  [("grpc-status", status)] + (message.map { [("grpc-message", $0)] } ?? []) + extra
}

/// One DATA chunk holding each of `messages`, framed.
func frames(_ messages: [UInt8]...) -> [UInt8] {
  messages.flatMap(GRPCMessageFramer.framed)
}

extension GRPCClientCall {
  /// Feeds one DATA chunk and returns the action and the messages delivered.
  mutating func data(_ bytes: [UInt8], endStream: Bool = false) -> (action: Action, messages: [[UInt8]]) {
    var messages: [[UInt8]] = []
    let action = bytes.withUnsafeBytes { raw in
      receiveData(raw, endStream: endStream) { messages.append(Array($0)) }
    }
    return (action, messages)
  }

  /// A call that has received valid response headers.
  static func started(_ kind: Kind, maxReceiveMessageSize: Int = 4 << 20, headers: Fields = []) -> GRPCClientCall {
    var call = GRPCClientCall(kind: kind, maxReceiveMessageSize: maxReceiveMessageSize)
    let action = call.receiveHeaders(grpcHeaders(headers), endStream: false)
    precondition(action.deliveredHeaders != nil)
    return call
  }
}

func finish(_ code: GRPCStatusCode, _ message: String = "") -> Action {
  .finish(GRPCStatus(code: code, message: message))
}

func reset(_ code: GRPCStatusCode, _ message: String) -> Action {
  .resetAndFinish(http2ErrorCode: cancelCode, GRPCStatus(code: code, message: message))
}

extension Action {
  /// The status the action finishes with, if any.
  var finalStatus: GRPCStatus? {
    switch self {
    case .none, .deliverHeaders: nil
    case .finish(let status), .resetAndFinish(_, let status), .retryOrFinish(let status): status
    }
  }

  /// The response headers the action hands to the caller, if any.
  var deliveredHeaders: GRPCMetadata? {
    if case .deliverHeaders(let headers) = self { return headers }
    return nil
  }

  /// Whether the action lets the transport start the call again.
  var retries: Bool {
    if case .retryOrFinish = self { return true }
    return false
  }

  /// The code of the status the action finishes with, if any.
  var code: GRPCStatusCode? { finalStatus?.code }

  /// Whether the action resets the stream.
  var resets: Bool {
    if case .resetAndFinish = self { return true }
    return false
  }
}

@Suite("Client call: Trailers-Only")
struct TrailersOnlyTests {
  @Test("Trailers-Only OK ends a server-streaming call with no messages")
  func okStreaming() {
    var call = GRPCClientCall(kind: .serverStreaming)
    let action = call.receiveHeaders(grpcHeaders(trailerFields("0") + [("x-served-by", "a")]), endStream: true)
    #expect(action == .finish(.ok))
    #expect(call.isFinished)
    #expect(call.status == .ok)
    #expect(call.error == nil)
    #expect(call.messagesReceived == 0)
    #expect(call.responseHeaders.isEmpty)
    #expect(call.trailers.first("x-served-by") == "a")
    #expect(call.trailers.count == 1)  // :status, content-type and grpc-status are stripped
  }

  @Test("Trailers-Only OK on a unary call is a cardinality violation: INTERNAL")
  func okUnary() {
    var call = GRPCClientCall(kind: .unary)
    let action = call.receiveHeaders(grpcHeaders(trailerFields("0")), endStream: true)
    #expect(action == finish(.internalError, "unary call ended OK without a response message"))
  }

  @Test(
    "Trailers-Only error with a percent-encoded message and trailing metadata",
    arguments: [
      GRPCClientCall.Kind.unary, .serverStreaming,
    ])
  func error(kind: GRPCClientCall.Kind) throws {
    var call = GRPCClientCall(kind: kind)
    let fields = grpcHeaders(trailerFields("5", "trip%20%22t-1%22 not found %E2%9C%97", [("x-debug", "1")]))
    #expect(call.receiveHeaders(fields, endStream: true) == finish(.notFound, "trip \"t-1\" not found ✗"))
    let error = try #require(call.error)
    #expect(error.code == .notFound)
    #expect(error.errorCode == 5)
    #expect(error.trailers.first("x-debug") == "1")
  }

  @Test("grpc-status wins over a missing content-type (Envoy, grpc-swift #926)")
  func noContentType() {
    var call = GRPCClientCall(kind: .unary)
    #expect(
      call.receiveHeaders([(":status", "200"), ("grpc-status", "12")], endStream: true) == finish(.unimplemented))
  }

  @Test("grpc-status wins over a bad content-type and a non-200 :status", arguments: [200, 404, 503])
  func grpcStatusWins(httpStatus: Int) {
    var call = GRPCClientCall(kind: .unary)
    let fields: Fields = [(":status", "\(httpStatus)"), ("content-type", "text/html"), ("grpc-status", "14")]
    #expect(call.receiveHeaders(fields, endStream: true) == finish(.unavailable))
  }

  @Test("an unparsable grpc-status is UNKNOWN; the server's message is kept when there is one")
  func unparsableStatus() {
    var call = GRPCClientCall(kind: .unary)
    #expect(
      call.receiveHeaders(grpcHeaders(trailerFields("OK")), endStream: true)
        == finish(.unknown, "unparsable grpc-status \"OK\""))
    var other = GRPCClientCall(kind: .unary)
    #expect(other.receiveHeaders(grpcHeaders(trailerFields("99", "why")), endStream: true) == finish(.unknown, "why"))
  }

  @Test("a gRPC Trailers-Only block without grpc-status is UNKNOWN")
  func missingStatus() {
    var call = GRPCClientCall(kind: .serverStreaming)
    #expect(
      call.receiveHeaders(grpcHeaders(), endStream: true)
        == finish(.unknown, "missing grpc-status in Trailers-Only response"))
  }
}

@Suite("Client call: non-gRPC responses")
struct NonGRPCResponseTests {
  static let mapped: [(Int, GRPCStatusCode)] = [
    (400, .internalError), (401, .unauthenticated), (403, .permissionDenied), (404, .unimplemented),
    (429, .unavailable), (431, .internalError), (502, .unavailable), (503, .unavailable), (504, .unavailable),
    (500, .unknown), (302, .unknown), (418, .unknown),
  ]

  @Test("a non-200 response without grpc-status that ends the stream gets the HTTP mapping", arguments: mapped)
  func endingStream(httpStatus: Int, code: GRPCStatusCode) {
    var call = GRPCClientCall(kind: .unary)
    let action = call.receiveHeaders([(":status", "\(httpStatus)"), ("content-type", "text/html")], endStream: true)
    #expect(action == finish(code, "HTTP status \(httpStatus) without grpc-status, content-type \"text/html\""))
  }

  @Test("a non-200 response with a body is mapped and the stream reset; the body is ignored", arguments: mapped)
  func withBody(httpStatus: Int, code: GRPCStatusCode) {
    var call = GRPCClientCall(kind: .serverStreaming)
    let action = call.receiveHeaders([(":status", "\(httpStatus)")], endStream: false)
    #expect(action == reset(code, "HTTP status \(httpStatus) without grpc-status"))
    let (after, messages) = call.data(Array("<html>".utf8))
    #expect(after == .none)
    #expect(messages.isEmpty)
  }

  @Test(
    "C10: a non-gRPC 200 is UNKNOWN (http-grpc-status-mapping), reset while the stream is open",
    arguments: [
      ("text/html", "invalid content-type \"text/html\""),
      ("application/grpc-web", "invalid content-type \"application/grpc-web\""),
      ("application/json", "invalid content-type \"application/json\""),
    ])
  func badContentType(contentType: String, message: String) {
    var open = GRPCClientCall(kind: .unary)
    #expect(
      open.receiveHeaders([(":status", "200"), ("content-type", contentType)], endStream: false)
        == reset(.unknown, message))
    var ended = GRPCClientCall(kind: .unary)
    #expect(
      ended.receiveHeaders([(":status", "200"), ("content-type", contentType)], endStream: true)
        == finish(.unknown, message))
  }

  @Test("C10: a 200 without content-type or grpc-status is UNKNOWN, open or ended")
  func missingContentType() {
    var call = GRPCClientCall(kind: .unary)
    #expect(
      call.receiveHeaders([(":status", "200")], endStream: false)
        == reset(.unknown, "response without content-type"))
    var ended = GRPCClientCall(kind: .serverStreaming)
    #expect(
      ended.receiveHeaders([(":status", "200")], endStream: true) == finish(.unknown, "response without content-type"))
  }

  @Test("a bad content-type with grpc-status in headers that do not end the stream: the grpc-status is used")
  func badContentTypeWithStatus() {
    var call = GRPCClientCall(kind: .unary)
    let fields: Fields = [(":status", "200"), ("content-type", "text/plain"), ("grpc-status", "7")]
    #expect(
      call.receiveHeaders(fields, endStream: false)
        == .resetAndFinish(
          http2ErrorCode: cancelCode, GRPCStatus(code: .permissionDenied)))
  }

  @Test(
    "a response without a valid :status is INTERNAL",
    arguments: [
      [("content-type", "application/grpc")], [(":status", "2000"), ("content-type", "application/grpc")],
      [(":status", "abc"), ("content-type", "application/grpc")],
    ] as [Fields])
  func missingHTTPStatus(fields: Fields) {
    var call = GRPCClientCall(kind: .unary)
    #expect(call.receiveHeaders(fields, endStream: false) == reset(.internalError, "response without a valid :status"))
  }

  @Test("1xx blocks are skipped, then the response proceeds normally", arguments: ["100", "102", "103"])
  func informationalSkipped(status: String) {
    var call = GRPCClientCall(kind: .unary)
    #expect(call.receiveHeaders([(":status", status), ("link", "</x>")], endStream: false) == .none)
    #expect(call.receiveHeaders([(":status", status)], endStream: false) == .none)
    #expect(call.responseHeaders.isEmpty)
    let headers = call.receiveHeaders(grpcHeaders([("x-h", "1")]), endStream: false)
    #expect(headers.deliveredHeaders?.first("x-h") == "1")
    #expect(call.responseHeaders.first("x-h") == "1")
    #expect(call.data(frames([1, 2])).messages == [[1, 2]])
    #expect(call.receiveHeaders(trailerFields("0"), endStream: true) == .finish(.ok))
  }

  @Test("a 1xx block that ends the stream is INTERNAL")
  func informationalEndingStream() {
    var call = GRPCClientCall(kind: .unary)
    #expect(
      call.receiveHeaders([(":status", "100")], endStream: true)
        == finish(.internalError, "informational :status 100 ended the stream"))
  }
}

@Suite("Client call: headers, messages, trailers")
struct FullResponseTests {
  @Test("unary: headers, one message, OK trailers")
  func unaryOK() {
    var call = GRPCClientCall(kind: .unary)
    let headers = call.receiveHeaders(grpcHeaders([("x-h", "v"), ("grpc-accept-encoding", "gzip")]), endStream: false)
    #expect(headers == .deliverHeaders(call.responseHeaders))
    #expect(headers.deliveredHeaders?.map(\.name) == ["x-h"])
    #expect(call.responseHeaders.map(\.name) == ["x-h"])
    let (action, messages) = call.data(frames([0x0A, 0x03, 0x61, 0x62, 0x63]))
    #expect(action == .none)
    #expect(messages == [[0x0A, 0x03, 0x61, 0x62, 0x63]])
    #expect(call.messagesReceived == 1)
    #expect(!call.isFinished)
    #expect(call.receiveHeaders(trailerFields("0", nil, [("x-t", "w")]), endStream: true) == .finish(.ok))
    #expect(call.trailers.map(\.name) == ["x-t"])
    #expect(call.status == .ok)
  }

  @Test("server streaming: many messages across many chunks, then trailers")
  func streaming() {
    var call = GRPCClientCall.started(.serverStreaming)
    let bodies = (0..<50).map { message($0 * 3, seed: $0) }
    let bytes = bodies.flatMap(GRPCMessageFramer.framed)
    var delivered: [[UInt8]] = []
    for chunk in chunked(bytes, size: 7) {
      let (action, messages) = call.data(chunk)
      #expect(action == .none)
      delivered += messages
    }
    #expect(delivered == bodies)
    #expect(call.messagesReceived == 50)
    #expect(call.receiveHeaders(trailerFields("0"), endStream: true) == .finish(.ok))
  }

  @Test("server streaming: zero messages then OK is fine")
  func streamingEmpty() {
    var call = GRPCClientCall.started(.serverStreaming)
    #expect(call.receiveHeaders(trailerFields("0"), endStream: true) == .finish(.ok))
  }

  @Test("messages, then error trailers: messages delivered, then the error")
  func messagesThenError() {
    var call = GRPCClientCall.started(.serverStreaming)
    #expect(call.data(frames([1], [2])).messages == [[1], [2]])
    #expect(
      call.receiveHeaders(trailerFields("14", "going%20away"), endStream: true) == finish(.unavailable, "going away"))
    #expect(call.error == GRPCError(code: .unavailable, message: "going away"))
  }

  @Test("a grpc-status in headers that do not end the stream is not a status (connect-swift #268)")
  func statusInHeadersIgnored() {
    var call = GRPCClientCall(kind: .unary)
    #expect(call.receiveHeaders(grpcHeaders(trailerFields("13", "nope")), endStream: false).deliveredHeaders != nil)
    #expect(call.data(frames([5])).action == .none)
    #expect(call.receiveHeaders(trailerFields("0"), endStream: true) == .finish(.ok))
  }

  @Test(
    "trailers without grpc-status are UNKNOWN (never a fabricated OK)",
    arguments: [
      GRPCClientCall.Kind.unary, .serverStreaming,
    ])
  func missingStatusInTrailers(kind: GRPCClientCall.Kind) {
    var call = GRPCClientCall.started(kind)
    _ = call.data(frames([1]))
    #expect(
      call.receiveHeaders([("x-only", "1")], endStream: true) == finish(.unknown, "missing grpc-status in trailers"))
    #expect(call.trailers.first("x-only") == "1")
  }

  @Test("a second HEADERS block without END_STREAM is INTERNAL and resets")
  func trailersWithoutEndStream() {
    var call = GRPCClientCall.started(.serverStreaming)
    #expect(
      call.receiveHeaders(trailerFields("0"), endStream: false)
        == reset(.internalError, "second HEADERS block without END_STREAM"))
  }

  @Test("OK trailers while a message is incomplete are INTERNAL; an error status is kept")
  func trailersMidMessage() {
    let partial = Array(GRPCMessageFramer.framed([1, 2, 3, 4]).prefix(7))
    var ok = GRPCClientCall.started(.serverStreaming)
    _ = ok.data(partial)
    #expect(
      ok.receiveHeaders(trailerFields("0"), endStream: true)
        == finish(.internalError, "stream ended in the middle of a message (7 bytes received)"))
    var failed = GRPCClientCall.started(.serverStreaming)
    _ = failed.data(partial)
    #expect(
      failed.receiveHeaders(trailerFields("8", "too big"), endStream: true) == finish(.resourceExhausted, "too big"))
  }

  @Test("DATA before the response headers is INTERNAL")
  func dataBeforeHeaders() {
    var open = GRPCClientCall(kind: .unary)
    #expect(open.data(frames([1])) == (reset(.internalError, "DATA received before response headers"), []))
    var ended = GRPCClientCall(kind: .unary)
    #expect(
      ended.data(frames([1]), endStream: true).action
        == finish(.internalError, "DATA received before response headers"))
  }

  @Test(
    "DATA with END_STREAM and no trailers is INTERNAL, after delivering its messages",
    arguments: [
      GRPCClientCall.Kind.unary, .serverStreaming,
    ])
  func dataEndsStream(kind: GRPCClientCall.Kind) {
    var call = GRPCClientCall.started(kind)
    let (action, messages) = call.data(frames([9]), endStream: true)
    #expect(messages == [[9]])
    #expect(action == finish(.internalError, "stream ended by a DATA frame without trailers"))
    #expect(!action.resets)
  }

  @Test("an empty DATA frame with END_STREAM is INTERNAL too")
  func emptyDataEndsStream() {
    var call = GRPCClientCall.started(.serverStreaming)
    #expect(
      call.data([], endStream: true).action == finish(.internalError, "stream ended by a DATA frame without trailers"))
  }
}

@Suite("Client call: unary cardinality and message limits")
struct CardinalityTests {
  @Test("a second message in the same chunk is INTERNAL; only the first is delivered")
  func twoInOneChunk() {
    var call = GRPCClientCall.started(.unary)
    let (action, messages) = call.data(frames([1], [2]))
    #expect(messages == [[1]])
    #expect(action == reset(.internalError, "unary call received more than one response message"))
    #expect(call.messagesReceived == 1)
  }

  @Test("a second message in a later chunk is INTERNAL")
  func twoInTwoChunks() {
    var call = GRPCClientCall.started(.unary)
    #expect(call.data(frames([1])) == (.none, [[1]]))
    #expect(call.data(frames([2])) == (reset(.internalError, "unary call received more than one response message"), []))
    // Trailers that follow cannot change the decision.
    #expect(call.receiveHeaders(trailerFields("0"), endStream: true) == .none)
    #expect(call.status?.code == .internalError)
  }

  @Test("a second message in a chunk that ends the stream: INTERNAL, no reset")
  func twoEndingStream() {
    var call = GRPCClientCall.started(.unary)
    #expect(
      call.data(frames([1], [2]), endStream: true).action
        == finish(.internalError, "unary call received more than one response message"))
  }

  @Test("zero messages then OK trailers is INTERNAL; then an error status is kept")
  func zeroMessages() {
    var ok = GRPCClientCall.started(.unary)
    #expect(
      ok.receiveHeaders(trailerFields("0"), endStream: true)
        == finish(.internalError, "unary call ended OK without a response message"))
    var failed = GRPCClientCall.started(.unary)
    #expect(failed.receiveHeaders(trailerFields("5"), endStream: true) == finish(.notFound))
  }

  @Test("past maxEmptyMessagesInARow empty messages in a row the stream ends RESOURCE_EXHAUSTED; content resets it")
  func emptyMessageFlood() {
    let limit = GRPCClientCall.maxEmptyMessagesInARow
    var call = GRPCClientCall.started(.serverStreaming)
    let empties = [UInt8](repeating: 0, count: 5 * limit)
    let first = call.data(empties)
    #expect(first.action == .none)
    #expect(first.messages.count == limit)
    // One with content starts the count again.
    #expect(call.data(frames([7])) == (.none, [[7]]))
    #expect(call.data(empties).action == .none)
    let over = call.data(frames([]))
    #expect(
      over.action
        == reset(.resourceExhausted, "the server sent \(limit + 1) empty messages in a row, which carry nothing"))
    #expect(over.messages.isEmpty)
  }

  @Test("a zero-length message counts as the one unary message")
  func zeroLengthMessage() {
    var call = GRPCClientCall.started(.unary)
    #expect(call.data(frames([])) == (.none, [[]]))
    #expect(call.receiveHeaders(trailerFields("0"), endStream: true) == .finish(.ok))
  }

  @Test("a message over the receive limit is RESOURCE_EXHAUSTED, exactly the limit is fine")
  func oversize() {
    var call = GRPCClientCall.started(.serverStreaming, maxReceiveMessageSize: 8)
    #expect(call.data(frames(message(8))) == (.none, [message(8)]))
    let (action, messages) = call.data(frames(message(9)))
    #expect(messages.isEmpty)
    #expect(action == reset(.resourceExhausted, "received message of 9 bytes exceeds the limit of 8 bytes"))
  }

  @Test("a compressed message without grpc-encoding is INTERNAL")
  func compressedWithoutEncoding() {
    var call = GRPCClientCall.started(.unary)
    #expect(call.responseEncoding == nil)
    #expect(
      call.data([1, 0, 0, 0, 1, 0]).action
        == reset(.internalError, "compressed message received but no grpc-encoding was negotiated"))
  }

  @Test("grpc-encoding identity is no encoding; a compressed message is still INTERNAL")
  func identityEncoding() {
    var call = GRPCClientCall.started(.unary, headers: [("grpc-encoding", "identity")])
    #expect(call.responseEncoding == nil)
    #expect(call.data([1, 0, 0, 0, 0]).action.code == .internalError)
  }

  @Test("an unsupported grpc-encoding is remembered; its compressed messages are INTERNAL")
  func unsupportedEncoding() {
    var call = GRPCClientCall.started(.serverStreaming, headers: [("grpc-encoding", "snappy")])
    #expect(call.responseEncoding == "snappy")
    #expect(call.responseCompression == nil)
    // Uncompressed messages are still fine: the flag is per message.
    #expect(call.data(frames([3])).messages == [[3]])
    #expect(
      call.data([1, 0, 0, 0, 1, 0x1F]).action
        == reset(
          .internalError,
          "compressed message received with grpc-encoding \"snappy\", which is not supported (accepted: identity,gzip,deflate)"
        ))
  }

  @Test("an encoding the call did not announce is not accepted, even one the library knows")
  func encodingNotAnnounced() {
    var call = GRPCClientCall(kind: .unary, acceptedEncodings: [.deflate])
    #expect(call.receiveHeaders(grpcHeaders([("grpc-encoding", "gzip")]), endStream: false).deliveredHeaders != nil)
    #expect(call.responseCompression == nil)
    let compressed = compressedFrame([7, 7, 7], .gzip)
    #expect(call.data(compressed).action.code == .internalError)
  }

  @Test("an undefined compressed-flag is INTERNAL")
  func invalidFlag() {
    var call = GRPCClientCall.started(.serverStreaming)
    #expect(call.data([2, 0, 0, 0, 0]).action == reset(.internalError, "invalid compressed-flag 2 in message prefix"))
  }
}

@Suite("Client call: stream closure, cancellation, deadline")
struct ClosureTests {
  static let rstTable: [(UInt32, GRPCStatusCode)] = [
    (0x1, .internalError), (0x2, .internalError), (0x3, .internalError), (0x4, .internalError),
    (0x5, .internalError), (0x6, .internalError), (0x7, .unavailable), (0x8, .cancelled), (0x9, .internalError),
    (0xa, .internalError), (0xb, .resourceExhausted), (0xc, .permissionDenied), (0xd, .internalError),
    (0x2a, .internalError),
  ]

  @Test("RST_STREAM before any response maps the code; REFUSED_STREAM lets the transport retry", arguments: rstTable)
  func resetBeforeHeaders(errorCode: UInt32, code: GRPCStatusCode) {
    var call = GRPCClientCall(kind: .unary)
    let action = call.streamClosed(http2ErrorCode: HTTP2ErrorCode(rawValue: errorCode))
    let name = HTTP2ErrorCode(rawValue: errorCode).name
    let status = GRPCStatus(
      code: code, message: "stream closed with HTTP/2 error \(name) (0x\(String(errorCode, radix: 16)))")
    #expect(action == (errorCode == 0x7 ? .retryOrFinish(status) : .finish(status)))
    #expect(action.finalStatus == status)
    #expect(action.retries == (errorCode == 0x7))
    #expect(call.status == status)
  }

  @Test(
    "RST_STREAM after headers, before trailers maps the code; REFUSED_STREAM is then not retryable", arguments: rstTable
  )
  func resetMidStream(errorCode: UInt32, code: GRPCStatusCode) {
    var call = GRPCClientCall.started(.serverStreaming)
    _ = call.data(frames([1]) + [0, 0])  // a message and a partial prefix
    let action = call.streamClosed(http2ErrorCode: HTTP2ErrorCode(rawValue: errorCode))
    #expect(action.finalStatus?.code == code)
    #expect(!action.retries)
  }

  @Test("RST_STREAM after complete trailers changes nothing", arguments: [UInt32(0)] + rstTable.map(\.0))
  func resetAfterTrailers(errorCode: UInt32) {
    var call = GRPCClientCall.started(.unary)
    _ = call.data(frames([1]))
    #expect(call.receiveHeaders(trailerFields("0"), endStream: true) == .finish(.ok))
    #expect(call.streamClosed(http2ErrorCode: HTTP2ErrorCode(rawValue: errorCode)) == .none)
    #expect(call.status == .ok)
  }

  @Test("a normal close without trailers is INTERNAL, whether or not a message was cut short")
  func closedWithoutTrailers() {
    var clean = GRPCClientCall.started(.serverStreaming)
    _ = clean.data(frames([1]))
    #expect(clean.streamClosed(http2ErrorCode: .noError) == finish(.internalError, "stream closed without trailers"))
    var cut = GRPCClientCall.started(.serverStreaming)
    _ = cut.data(Array(GRPCMessageFramer.framed(message(100)).prefix(40)))
    #expect(
      cut.streamClosed(http2ErrorCode: .noError)
        == finish(.internalError, "stream ended in the middle of a message (40 bytes received)"))
    var early = GRPCClientCall(kind: .unary)
    #expect(early.streamClosed(http2ErrorCode: .noError) == finish(.internalError, "stream closed without trailers"))
  }

  @Test("cancel resets with CANCEL and finishes CANCELLED, in any state before the status")
  func cancel() {
    for var call in [GRPCClientCall(kind: .unary), .started(.unary), .started(.serverStreaming)] {
      #expect(call.cancel() == reset(.cancelled, "call cancelled by the client"))
      #expect(call.status?.code == .cancelled)
      #expect(call.cancel() == .none)
    }
  }

  @Test("the deadline resets with CANCEL and finishes DEADLINE_EXCEEDED, using no trailers")
  func deadline() {
    var call = GRPCClientCall.started(.serverStreaming)
    _ = call.data(frames([1]))
    #expect(call.deadlineExceeded() == reset(.deadlineExceeded, "deadline exceeded"))
    // The server's CANCEL that follows, and late trailers, change nothing.
    #expect(call.streamClosed(http2ErrorCode: cancelCode) == .none)
    #expect(call.receiveHeaders(trailerFields("1"), endStream: true) == .none)
    #expect(call.status == GRPCStatus(code: .deadlineExceeded, message: "deadline exceeded"))
    #expect(call.trailers.isEmpty)
  }

  @Test("cancel and deadline after the status change nothing")
  func afterStatus() {
    var call = GRPCClientCall(kind: .serverStreaming)
    _ = call.receiveHeaders(grpcHeaders(trailerFields("0")), endStream: true)
    #expect(call.cancel() == .none)
    #expect(call.deadlineExceeded() == .none)
    #expect(call.status == .ok)
  }

  @Test("a connection failure is UNAVAILABLE, retryable as reported, with its cause")
  func connectionFailed() {
    var before = GRPCClientCall(kind: .unary)
    let refused = before.connectionFailed("connection refused", retryable: true)
    #expect(refused == .retryOrFinish(GRPCStatus(code: .unavailable, message: "connection refused")))
    #expect(refused.finalStatus == GRPCStatus(code: .unavailable, message: "connection refused"))
    #expect(refused.retries)
    var during = GRPCClientCall.started(.serverStreaming)
    #expect(during.connectionFailed("connection reset", retryable: false) == finish(.unavailable, "connection reset"))
    var unspecified = GRPCClientCall(kind: .unary)
    let gone = unspecified.connectionFailed("gone")
    #expect(gone == finish(.unavailable, "gone"))
    #expect(!gone.retries)  // retrying is opt-in
    var caused = GRPCClientCall.started(.unary)
    let action = caused.connectionFailed("keepalive ping not answered", cause: TestCause.silent)
    #expect(action == finish(.unavailable, "keepalive ping not answered"))
    #expect(action.finalStatus?.cause as? TestCause == .silent)
    #expect(caused.error?.cause as? TestCause == .silent)
  }

  /// A typed error standing in for a transport's connection error.
  enum TestCause: Error, Equatable { case silent }

  @Test("abort finishes with the given status and resets")
  func abort() {
    var call = GRPCClientCall.started(.unary)
    let status = GRPCStatus(code: .internalError, message: "response does not parse")
    #expect(call.abort(status) == .resetAndFinish(http2ErrorCode: cancelCode, status))
    #expect(call.abort(GRPCStatus(code: .unknown)) == .none)
  }
}

@Suite("Client call: the status is decided once")
struct DecidedOnceTests {
  @Test("after the status, every input returns .none and delivers nothing")
  func everyInputIgnored() {
    var call = GRPCClientCall.started(.serverStreaming)
    #expect(call.receiveHeaders(trailerFields("5", "gone"), endStream: true) == finish(.notFound, "gone"))
    #expect(call.receiveHeaders(trailerFields("0"), endStream: true) == .none)
    #expect(call.receiveHeaders(grpcHeaders(), endStream: false) == .none)
    #expect(call.data(frames([1], [2])) == (.none, []))
    #expect(call.data(frames([1]), endStream: true) == (.none, []))
    #expect(call.streamClosed(http2ErrorCode: .noError) == .none)
    #expect(call.streamClosed(http2ErrorCode: .refusedStream) == .none)
    #expect(call.cancel() == .none)
    #expect(call.deadlineExceeded() == .none)
    #expect(call.connectionFailed("x", retryable: true) == .none)
    #expect(call.abort(.ok) == .none)
    #expect(call.status == GRPCStatus(code: .notFound, message: "gone"))
    #expect(call.messagesReceived == 0)
  }

  @Test("a local failure is not overwritten by trailers that arrive later")
  func localFailureSticks() {
    var call = GRPCClientCall.started(.serverStreaming, maxReceiveMessageSize: 1)
    #expect(call.data(frames([1, 2])).action.code == .resourceExhausted)
    #expect(call.receiveHeaders(trailerFields("0"), endStream: true) == .none)
    #expect(call.status?.code == .resourceExhausted)
  }
}
