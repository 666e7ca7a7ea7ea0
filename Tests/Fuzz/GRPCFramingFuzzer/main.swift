// Tests/Fuzz/GRPCFramingFuzzer/main.swift - libFuzzer target for gRPC's length-prefixed message framing
//
// Drives GRPCMessageDeframer, and GRPCClientCall's receive path around it, with
// arbitrary response bytes cut into arbitrary DATA chunks. Input layout:
//
//   byte 0       configuration (see `Configuration`): size limit, call kind, how the call ends
//   byte 1       k, how many bytes at the end of the input are chunk sizes (byte 1 % 64)
//   bytes 2…     the response body: what the server put in its DATA frames
//   last k bytes chunk sizes, used in turn until the body is consumed (0: an empty chunk)
//
// Invariants, each a trap when violated:
// - the messages, the error and what is left buffered are the same whether the
//   body arrives in one piece, in the chunks the input chose, or byte by byte;
// - they are what a straightforward reading of the framing gives (`ReferenceFraming`);
// - no message is longer than the limit;
// - after an error every later call rethrows it and delivers nothing;
// - the client call delivers the same messages (one at most for unary), decides
//   its status exactly once with the code the framing calls for, and ignores
//   everything after that.
// The chunks the input chose are each copied into an allocation of exactly their
// size, so AddressSanitizer sees a read past a chunk's end.
//
// Built by scripts/build-fuzzer.sh and run by scripts/fuzz.sh.

import GRPCProtocol

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 2 else { return 0 }
  // Safe: libFuzzer keeps `data` alive for the duration of this call, and nothing here outlives it.
  let input = UnsafeBufferPointer(start: data, count: size)
  let configuration = Configuration(input[0])
  let sizeCount = min(Int(input[1]) % 64, size - 2)
  let body = Array(input[2..<(size - sizeCount)])
  let chunks = chunkRanges(count: body.count, sizes: Array(input[(size - sizeCount)...]))

  let reference = ReferenceFraming(body, maxMessageSize: configuration.maxMessageSize)
  for message in reference.messages {
    require(message.count <= configuration.maxMessageSize, "the reference reading broke the limit")
  }
  let whole = deframe(body, [0..<body.count], configuration)
  let pieces = deframe(body, chunks, configuration)
  let bytes = deframe(body, (0..<body.count).map { $0..<($0 + 1) }, isolated: false, configuration)
  for (name, outcome) in [("whole", whole), ("chunked", pieces), ("byte by byte", bytes)] {
    outcome.check(against: reference, name, configuration)
  }

  checkClientCall(body, chunks, reference, configuration)
  return 0
}

/// Traps with `message` unless `condition` holds (`precondition` drops its message under -O).
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { fatalError(message()) }
}

/// What the first input byte chooses.
struct Configuration {
  /// Limits worth telling apart: none at all, below and at the prefix size, small, and the default.
  static let limits = [0, 1, 5, 16, 100, 1000, 65536, GRPCMessageDeframer.defaultMaxMessageSize]

  /// How the call ends when the framing itself does not end it.
  enum Ending: CaseIterable {
    /// Trailers with `grpc-status: 0`.
    case okTrailers
    /// The last DATA frame carries END_STREAM (no trailers).
    case dataEndStream
    /// RST_STREAM(NO_ERROR), or the stream closed without trailers.
    case closedNoError
    /// RST_STREAM(CANCEL).
    case closedCancel
  }

  let maxMessageSize: Int
  let kind: GRPCClientCall.Kind
  let ending: Ending
  /// Whether the response headers declare `grpc-encoding: gzip` (which this client cannot decode).
  let declaresEncoding: Bool

  init(_ byte: UInt8) {
    maxMessageSize = Self.limits[Int(byte & 7)]
    kind = byte & 8 == 0 ? .serverStreaming : .unary
    ending = Ending.allCases[Int(byte >> 4) & 3]
    declaresEncoding = byte & 0x40 != 0
  }
}

/// The body cut at the sizes given, used in turn; all-zero sizes mean one byte at a time.
func chunkRanges(count: Int, sizes: [UInt8]) -> [Range<Int>] {
  guard !sizes.isEmpty else { return [0..<count] }
  let sizes = sizes.allSatisfy { $0 == 0 } ? [1] : sizes.map(Int.init)
  var ranges: [Range<Int>] = []
  var offset = 0
  var next = 0
  while offset < count {
    let end = min(offset + sizes[next % sizes.count], count)
    ranges.append(offset..<end)
    offset = end
    next += 1
  }
  return ranges
}

/// The kinds of framing error, as the specification names them.
enum FramingError: Equatable {
  case compressed
  case invalidFlag(UInt8)
  case tooLarge(Int)

  var code: GRPCStatusCode {
    switch self {
    case .compressed, .invalidFlag: .internalError
    case .tooLarge: .resourceExhausted
    }
  }
}

/// The framing read the obvious way, from a complete body: prefix, then that many bytes, again.
struct ReferenceFraming {
  var messages: [[UInt8]] = []
  var error: FramingError?
  /// Bytes after the last complete message (meaningless after an error).
  var leftover = 0

  init(_ body: [UInt8], maxMessageSize: Int) {
    var offset = 0
    while body.count - offset >= 5 {
      let flag = body[offset]
      let length = body[(offset + 1)..<(offset + 5)].reduce(0) { $0 << 8 | Int($1) }
      switch flag {
      case 0: break
      case 1: error = .compressed
      default: error = .invalidFlag(flag)
      }
      if error == nil, length > maxMessageSize { error = .tooLarge(length) }
      if error != nil { return }
      guard body.count - offset - 5 >= length else { break }
      messages.append(Array(body[(offset + 5)..<(offset + 5 + length)]))
      offset += 5 + length
    }
    leftover = body.count - offset
  }
}

/// What one deframer made of the body.
struct DeframeOutcome {
  var messages: [[UInt8]] = []
  var error: GRPCError?
  var hasPartialMessage = false
  var bufferedBytes = 0

  func check(against reference: ReferenceFraming, _ name: String, _ configuration: Configuration) {
    require(
      messages == reference.messages,
      "\(name): \(messages.count) messages \(messages.map(\.count)), expected \(reference.messages.map(\.count))")
    for message in messages {
      require(message.count <= configuration.maxMessageSize, "\(name): a message exceeds the limit")
    }
    switch (error, reference.error) {
    case (nil, nil):
      require(
        bufferedBytes == reference.leftover && hasPartialMessage == (reference.leftover > 0),
        "\(name): \(bufferedBytes) bytes buffered (partial: \(hasPartialMessage)), expected \(reference.leftover)")
    case (let error?, let expected?):
      require(error.code == expected.code, "\(name): \(error) but the framing calls for \(expected)")
      if case .invalidFlag(let flag) = expected {
        require(error.message.contains("\(flag)"), "\(name): \(error) does not name flag \(flag)")
      }
    case (let error, let expected):
      fatalError("\(name): error \(String(describing: error)), expected \(String(describing: expected))")
    }
  }
}

/// Runs `body[range]` for each range through `process`, until it returns false. With `isolated`, each
/// chunk is copied into an allocation of exactly its size, so AddressSanitizer sees a read past its end;
/// otherwise the chunks are slices of one exact copy of the body (cheaper for many tiny chunks).
func feed(
  _ body: [UInt8], _ ranges: [Range<Int>], isolated: Bool,
  _ process: (UnsafeRawBufferPointer, _ isLast: Bool) -> Bool
) {
  let whole = UnsafeMutableRawBufferPointer.allocate(byteCount: body.count, alignment: 1)
  defer { whole.deallocate() }
  whole.copyBytes(from: body)
  for (index, range) in ranges.enumerated() {
    let isLast = index == ranges.count - 1
    guard isolated else {
      guard process(UnsafeRawBufferPointer(rebasing: whole[range]), isLast) else { return }
      continue
    }
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: range.count, alignment: 1)
    defer { chunk.deallocate() }
    chunk.copyMemory(from: UnsafeRawBufferPointer(rebasing: whole[range]))
    guard process(UnsafeRawBufferPointer(chunk), isLast) else { return }
  }
}

func deframe(
  _ body: [UInt8], _ ranges: [Range<Int>], isolated: Bool = true, _ configuration: Configuration
) -> DeframeOutcome {
  var deframer = GRPCMessageDeframer(maxMessageSize: configuration.maxMessageSize)
  var outcome = DeframeOutcome()
  feed(body, ranges, isolated: isolated) { chunk, _ in
    do throws(GRPCError) {
      try deframer.process(chunk) { outcome.messages.append(Array($0)) }
      return true
    } catch {
      outcome.error = error
      return false
    }
  }
  if let failure = outcome.error {
    // Broken for good: the same error again, nothing delivered, whatever comes next.
    for extra: [UInt8] in [[], [0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 42]] {
      let again: Result<Void, GRPCError> = extra.withUnsafeBytes { raw in
        Result { () throws(GRPCError) in
          try deframer.process(raw) { _ in fatalError("a broken deframer delivered a message") }
        }
      }
      guard case .failure(let error) = again else {
        fatalError("a broken deframer accepted more bytes after \(failure)")
      }
      require(error == failure, "a broken deframer threw \(failure), then \(error)")
    }
  } else {
    outcome.hasPartialMessage = deframer.hasPartialMessage
    outcome.bufferedBytes = deframer.bufferedBytes
  }
  return outcome
}

/// The client call's receive path over the same body and chunks.
func checkClientCall(
  _ body: [UInt8], _ ranges: [Range<Int>], _ reference: ReferenceFraming, _ configuration: Configuration
) {
  var call = GRPCClientCall(kind: configuration.kind, maxReceiveMessageSize: configuration.maxMessageSize)
  var headers = [(name: ":status", value: "200"), (name: "content-type", value: "application/grpc")]
  if configuration.declaresEncoding { headers.append((name: "grpc-encoding", value: "gzip")) }
  require(call.receiveHeaders(headers, endStream: false) == .none, "valid response headers ended the call")

  var delivered: [[UInt8]] = []
  var decided: GRPCClientCall.Action?
  var endedByData = false
  let endWithData = configuration.ending == .dataEndStream
  // An empty body still ends with an (empty) DATA frame when that is how the stream ends.
  let dataRanges = ranges.isEmpty && endWithData ? [0..<0] : ranges
  feed(body, dataRanges, isolated: true) { chunk, isLast in
    let endStream = endWithData && isLast
    let action = call.receiveData(chunk, endStream: endStream) { delivered.append(Array($0)) }
    require(
      call.messagesReceived == delivered.count,
      "messagesReceived \(call.messagesReceived), \(delivered.count) delivered")
    guard action == .none else {
      decided = action
      endedByData = endStream
      return false
    }
    return true
  }

  let unary = configuration.kind == .unary
  let expectedMessages = unary ? Array(reference.messages.prefix(1)) : reference.messages
  require(
    delivered == expectedMessages,
    "the call delivered \(delivered.map(\.count)), expected \(expectedMessages.map(\.count))")

  // The codes the framing allows for a call that ends while receiving DATA: the framing error,
  // a unary call's second message (which of the two comes first depends on the chunks), or the
  // last DATA frame ending the stream without trailers.
  var earlyCodes: Set<GRPCStatusCode> = []
  if let error = reference.error { earlyCodes.insert(error.code) }
  if unary && reference.messages.count > 1 { earlyCodes.insert(.internalError) }
  if earlyCodes.isEmpty && endWithData { earlyCodes.insert(.internalError) }

  if let decided {
    let status: GRPCStatus
    switch decided {
    case .finish(let finished):
      require(endedByData, "finished without a reset on a DATA frame that did not end the stream: \(finished)")
      status = finished
    case .resetAndFinish(let code, let finished):
      require(!endedByData, "reset a stream its DATA frame had ended")
      require(code == 0x8, "reset with HTTP/2 error \(code), not CANCEL")
      status = finished
    case .none:
      fatalError("unreachable")
    }
    require(earlyCodes.contains(status.code), "ended with \(status) while receiving DATA; allowed: \(earlyCodes)")
    if reference.error == .compressed, !(unary && reference.messages.count > 1), configuration.declaresEncoding {
      require(status.message.contains("gzip"), "a compressed message's status does not name the encoding: \(status)")
    }
    require(call.status == status, "status \(String(describing: call.status)) differs from the action's \(status)")
  } else {
    require(earlyCodes.isEmpty, "the call is still going after DATA that should have ended it (\(earlyCodes))")
    let action: GRPCClientCall.Action
    let expected: GRPCStatusCode
    let complete = reference.leftover == 0 && (!unary || reference.messages.count == 1)
    switch configuration.ending {
    case .okTrailers:
      action = call.receiveHeaders([(name: "grpc-status", value: "0")], endStream: true)
      expected = complete ? .ok : .internalError
    case .dataEndStream:
      fatalError("unreachable: a DATA frame with END_STREAM always ends the call")
    case .closedNoError:
      action = call.streamClosed(http2ErrorCode: 0)
      expected = .internalError
    case .closedCancel:
      action = call.streamClosed(http2ErrorCode: 0x8)
      expected = .cancelled
    }
    guard case .finish(let status) = action else { fatalError("the end of the stream gave \(action)") }
    require(status.code == expected, "the call ended with \(status), expected \(expected)")
    require(call.status == status, "status \(String(describing: call.status)) differs from the action's \(status)")
  }

  // Decided once: nothing after it changes the status or delivers anything.
  let final = call.status
  require(call.isFinished && final != nil, "the call is not finished")
  let late = GRPCMessageFramer.framed([1, 2, 3])
  late.withUnsafeBytes { raw in
    let action = call.receiveData(raw, endStream: false) { _ in fatalError("a finished call delivered a message") }
    require(action == .none, "DATA after the status gave \(action)")
  }
  require(call.receiveHeaders([(name: "grpc-status", value: "13")], endStream: true) == .none, "late trailers acted")
  require(call.streamClosed(http2ErrorCode: 0x2) == .none, "a late RST_STREAM acted")
  require(call.cancel() == .none, "cancelling a finished call acted")
  require(call.status == final, "the status changed after it was decided")
}
