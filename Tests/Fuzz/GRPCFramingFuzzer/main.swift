// Tests/Fuzz/GRPCFramingFuzzer/main.swift - libFuzzer target for gRPC's length-prefixed message framing
//
// Drives GRPCMessageDeframer, and GRPCClientCall's receive path around it, with
// arbitrary response bytes cut into arbitrary DATA chunks, compressed messages
// included (gzip and deflate through zlib). Input layout:
//
//   byte 0       configuration (see `Configuration`): size limit, call kind, how the call ends,
//                the grpc-encoding the response declares (none, gzip, deflate, an unsupported one)
//   byte 1       k, how many bytes at the end of the input are chunk sizes (byte 1 % 64)
//   bytes 2…     the response body: what the server put in its DATA frames
//   last k bytes chunk sizes, used in turn until the body is consumed (0: an empty chunk)
//
// Invariants, each a trap when violated:
// - the messages, the error and what is left buffered are the same whether the
//   body arrives in one piece, in the chunks the input chose, or byte by byte;
// - they are what a straightforward reading of the framing gives (`ReferenceFraming`),
//   compressed messages inflated by a plain, unbounded zlib loop (`referenceInflate`);
// - no message is longer than the limit, on the wire or inflated;
// - `processMessages` reports each message's flag and its share of the chunk: the shares
//   and the bytes of a message still incomplete add up to the chunk;
// - after an error every later call rethrows it and delivers nothing;
// - the client call delivers the same messages (one at most for unary), decides
//   its status exactly once with the code the framing calls for, and ignores
//   everything after that; its lazy form (`receiveMessages`) hands out the same
//   messages still compressed, which inflate to what the eager form delivered.
// The chunks the input chose are each copied into an allocation of exactly their
// size, so AddressSanitizer sees a read past a chunk's end.
//
// Built by scripts/build-fuzzer.sh and run by scripts/fuzz.sh.

import CZlib
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

  let reference = ReferenceFraming(body, maxMessageSize: configuration.maxMessageSize, mode: .plain)
  for message in reference.messages {
    require(message.count <= configuration.maxMessageSize, "the reference reading broke the limit")
  }
  let whole = deframe(body, [0..<body.count], configuration)
  let pieces = deframe(body, chunks, configuration)
  let bytes = deframe(body, (0..<body.count).map { $0..<($0 + 1) }, isolated: false, configuration)
  for (name, outcome) in [("whole", whole), ("chunked", pieces), ("byte by byte", bytes)] {
    outcome.check(against: reference, name, configuration)
  }

  let raw = ReferenceFraming(body, maxMessageSize: configuration.maxMessageSize, mode: .raw)
  deframeRaw(body, chunks, configuration).check(against: raw, "processMessages", configuration)

  let decoded = ReferenceFraming(
    body, maxMessageSize: configuration.maxMessageSize, mode: .decoded(configuration.encoding))
  checkClientCall(body, chunks, decoded, configuration)
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
  /// The `grpc-encoding` the response headers declare.
  let encoding: Encoding

  init(_ byte: UInt8) {
    maxMessageSize = Self.limits[Int(byte & 7)]
    kind = byte & 8 == 0 ? .serverStreaming : .unary
    ending = Ending.allCases[Int(byte >> 4) & 3]
    encoding = Encoding.allCases[Int(byte >> 6)]
  }
}

/// The response's declared encoding: none, the two this client decodes, and one it does not.
enum Encoding: CaseIterable, Equatable {
  case none, gzip, deflate, unsupported

  /// The `grpc-encoding` value, if one is sent.
  var header: String? {
    switch self {
    case .none: nil
    case .gzip: "gzip"
    case .deflate: "deflate"
    case .unsupported: "snappy"
    }
  }

  /// zlib's windowBits for the wrapper (gzip RFC 1952, deflate RFC 1950), if the client decodes it.
  var windowBits: Int32? {
    switch self {
    case .gzip: 15 + 16
    case .deflate: 15
    case .none, .unsupported: nil
    }
  }
}

/// `data` inflated the plain way: no limit, the output grown as needed. Returns everything zlib
/// produced and whether `data` is exactly one complete stream of the wrapper (bad data, truncation
/// and trailing bytes are not). A client that stops at its limit sees the output, not a later fault.
func referenceInflate(_ data: [UInt8], windowBits: Int32) -> (output: [UInt8], complete: Bool) {
  let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
  stream.initialize(to: z_stream())
  defer {
    inflateEnd(stream)
    stream.deinitialize(count: 1)
    stream.deallocate()
  }
  guard js_inflateInit2(stream, windowBits) == Z_OK else { fatalError("inflateInit2 failed") }
  var input = data
  var output: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 64 << 10)
  return input.withUnsafeMutableBufferPointer { inputBuffer -> ([UInt8], Bool) in
    stream.pointee.next_in = inputBuffer.baseAddress
    stream.pointee.avail_in = UInt32(inputBuffer.count)
    while true {
      let (rc, produced) = chunk.withUnsafeMutableBufferPointer { out -> (Int32, Int) in
        stream.pointee.next_out = out.baseAddress
        stream.pointee.avail_out = UInt32(out.count)
        let rc = inflate(stream, Z_NO_FLUSH)
        return (rc, out.count - Int(stream.pointee.avail_out))
      }
      output += chunk[0..<produced]
      switch rc {
      case Z_STREAM_END: return (output, stream.pointee.avail_in == 0)
      case Z_OK: continue
      case Z_BUF_ERROR where produced > 0: continue
      default: return (output, false)
      }
    }
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
  /// A compressed message where none can be taken (no usable grpc-encoding).
  case compressed
  case invalidFlag(UInt8)
  case tooLarge(Int)
  /// A compressed message that does not inflate (compression.md: INTERNAL).
  case notDecompressible
  /// A compressed message that inflates beyond the limit.
  case inflatedTooLarge

  var code: GRPCStatusCode {
    switch self {
    case .compressed, .invalidFlag, .notDecompressible: .internalError
    case .tooLarge, .inflatedTooLarge: .resourceExhausted
    }
  }
}

/// The framing read the obvious way, from a complete body: prefix, then that many bytes, again.
struct ReferenceFraming {
  /// How compressed messages (flag 1) are read.
  enum Mode {
    /// They are an error: GRPCMessageDeframer.process.
    case plain
    /// They are messages, flagged, not inflated: GRPCMessageDeframer.processMessages.
    case raw
    /// They are inflated under the declared encoding, or an error without a usable one: the client call.
    case decoded(Encoding)
  }

  var messages: [[UInt8]] = []
  /// Whether each message arrived compressed.
  var compressed: [Bool] = []
  var error: FramingError?
  /// Bytes after the last complete message (meaningless after an error).
  var leftover = 0

  init(_ body: [UInt8], maxMessageSize: Int, mode: Mode) {
    var offset = 0
    while body.count - offset >= 5 {
      let flag = body[offset]
      let length = body[(offset + 1)..<(offset + 5)].reduce(0) { $0 << 8 | Int($1) }
      switch (flag, mode) {
      case (0, _): break
      case (1, .plain): error = .compressed  // before the length: process() takes plain messages only
      case (1, _): break
      default: error = .invalidFlag(flag)
      }
      if error == nil, length > maxMessageSize { error = .tooLarge(length) }
      if error != nil { return }
      guard body.count - offset - 5 >= length else { break }
      // Whether a compressed message can be taken is decided once it is complete, after its
      // length (grpc-go reads the whole message before checking its compression too).
      if flag == 1, case .decoded(let encoding) = mode, encoding.windowBits == nil {
        error = .compressed
        return
      }
      var message = Array(body[(offset + 5)..<(offset + 5 + length)])
      if flag == 1, case .decoded(let encoding) = mode, let windowBits = encoding.windowBits {
        let (inflated, complete) = referenceInflate(message, windowBits: windowBits)
        // Past the limit wins: inflating stops there, before any fault further on is seen.
        guard inflated.count <= maxMessageSize else {
          error = .inflatedTooLarge
          return
        }
        guard complete else {
          error = .notDecompressible
          return
        }
        message = inflated
      }
      messages.append(message)
      compressed.append(flag == 1)
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

/// GRPCMessageDeframer.processMessages over the chunks: the messages with their flags, and each
/// chunk's shares checked to add up (messages' shares, then the bytes of one still incomplete).
struct RawDeframeOutcome {
  var outcome = DeframeOutcome()
  var compressed: [Bool] = []

  func check(against reference: ReferenceFraming, _ name: String, _ configuration: Configuration) {
    outcome.check(against: reference, name, configuration)
    if outcome.error == nil {
      require(compressed == reference.compressed, "\(name): flags \(compressed), expected \(reference.compressed)")
    }
  }
}

func deframeRaw(_ body: [UInt8], _ ranges: [Range<Int>], _ configuration: Configuration) -> RawDeframeOutcome {
  var deframer = GRPCMessageDeframer(maxMessageSize: configuration.maxMessageSize)
  var result = RawDeframeOutcome()
  var carried = 0  // bytes of an incomplete message from earlier chunks
  feed(body, ranges, isolated: true) { chunk, _ in
    var previousEnd = 0
    var shares = 0
    do throws(GRPCError) {
      try deframer.processMessages(chunk) { message, info in
        require(info.endOffset > previousEnd, "message ends go backwards: \(info.endOffset) after \(previousEnd)")
        require(info.endOffset <= chunk.count, "a message ends at \(info.endOffset) in a chunk of \(chunk.count)")
        let share = info.endOffset - previousEnd
        // A message's wire size: its prefix and body; what it had before this chunk was carried.
        let wire = 5 + message.count
        let carriedHere = previousEnd == 0 ? carried : 0
        require(share + carriedHere == wire, "a share of \(share) (+\(carriedHere) carried) for a \(wire)-byte message")
        shares += share
        previousEnd = info.endOffset
        result.outcome.messages.append(Array(message))
        result.compressed.append(info.isCompressed)
      }
      if previousEnd == 0 { carried += chunk.count } else { carried = chunk.count - previousEnd }
      require(shares + (chunk.count - previousEnd) == chunk.count, "the shares do not add up")
      return true
    } catch {
      result.outcome.error = error
      return false
    }
  }
  if result.outcome.error == nil {
    result.outcome.hasPartialMessage = deframer.hasPartialMessage
    result.outcome.bufferedBytes = deframer.bufferedBytes
    require(carried == deframer.bufferedBytes, "\(carried) bytes carried, \(deframer.bufferedBytes) buffered")
  }
  return result
}

/// The client call's receive path over the same body and chunks.
func checkClientCall(
  _ body: [UInt8], _ ranges: [Range<Int>], _ reference: ReferenceFraming, _ configuration: Configuration
) {
  var call = GRPCClientCall(kind: configuration.kind, maxReceiveMessageSize: configuration.maxMessageSize)
  var headers = [(name: ":status", value: "200"), (name: "content-type", value: "application/grpc")]
  if let encoding = configuration.encoding.header { headers.append((name: "grpc-encoding", value: encoding)) }
  guard case .deliverHeaders = call.receiveHeaders(headers, endStream: false) else {
    fatalError("valid response headers were not delivered")
  }
  checkLazyCall(body, ranges, headers, configuration)

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
  // A unary call's second message is refused for being second once it is complete, before its
  // compression is looked at; only a bad prefix (its flag or length) is found earlier.
  if unary, !reference.messages.isEmpty,
    [.compressed, .notDecompressible, .inflatedTooLarge].contains(reference.error)
  {
    earlyCodes.insert(.internalError)
  }
  if earlyCodes.isEmpty && endWithData { earlyCodes.insert(.internalError) }

  if let decided {
    let status: GRPCStatus
    switch decided {
    case .finish(let finished):
      require(endedByData, "finished without a reset on a DATA frame that did not end the stream: \(finished)")
      status = finished
    case .resetAndFinish(let code, let finished):
      require(!endedByData, "reset a stream its DATA frame had ended")
      require(code == .cancel, "reset with HTTP/2 error \(code), not CANCEL")
      status = finished
    case .none, .deliverHeaders, .retryOrFinish:
      fatalError("unreachable: DATA gave \(decided)")
    }
    require(earlyCodes.contains(status.code), "ended with \(status) while receiving DATA; allowed: \(earlyCodes)")
    // (A unary call's second message fails for being second before its compression is looked at.)
    if reference.error == .compressed, !(unary && !reference.messages.isEmpty),
      let encoding = configuration.encoding.header
    {
      require(status.message.contains(encoding), "a compressed message's status does not name the encoding: \(status)")
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
      action = call.streamClosed(http2ErrorCode: .noError)
      expected = .internalError
    case .closedCancel:
      action = call.streamClosed(http2ErrorCode: .cancel)
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
  require(call.streamClosed(http2ErrorCode: .internalError) == .none, "a late RST_STREAM acted")
  require(call.cancel() == .none, "cancelling a finished call acted")
  require(call.status == final, "the status changed after it was decided")
}

/// The lazy form, `receiveMessages`, over the same chunks: the messages it hands out (compressed
/// ones still compressed, decompressed here within the limit) are the eager form's, up to where
/// either stops.
func checkLazyCall(
  _ body: [UInt8], _ ranges: [Range<Int>], _ headers: [(name: String, value: String)], _ configuration: Configuration
) {
  var eager = GRPCClientCall(kind: configuration.kind, maxReceiveMessageSize: configuration.maxMessageSize)
  var lazy = GRPCClientCall(kind: configuration.kind, maxReceiveMessageSize: configuration.maxMessageSize)
  _ = eager.receiveHeaders(headers, endStream: false)
  _ = lazy.receiveHeaders(headers, endStream: false)
  var eagerMessages: [[UInt8]] = []
  var eagerStatus: GRPCStatus?
  feed(body, ranges, isolated: false) { chunk, _ in
    let action = eager.receiveData(chunk, endStream: false) { eagerMessages.append(Array($0)) }
    if action != .none { eagerStatus = eager.status }
    return action == .none
  }
  var lazyMessages: [[UInt8]] = []
  var lazyFailure: GRPCError?
  feed(body, ranges, isolated: false) { chunk, _ in
    var shares = 0
    let action = lazy.receiveMessages(chunk, endStream: false) { message in
      shares += message.windowBytes
      guard lazyFailure == nil else { return }
      guard let algorithm = message.compression else {
        lazyMessages.append(Array(message.bytes))
        return
      }
      do throws(GRPCError) {
        lazyMessages.append(
          try GRPCMessageCompression.decompress(message.bytes, with: algorithm, limit: configuration.maxMessageSize))
      } catch {
        lazyFailure = error
      }
    }
    require(shares <= chunk.count, "receiveMessages gave shares of \(shares) for a chunk of \(chunk.count)")
    return action == .none && lazyFailure == nil
  }
  let common = min(eagerMessages.count, lazyMessages.count)
  require(
    Array(eagerMessages.prefix(common)) == Array(lazyMessages.prefix(common)),
    "the lazy form's messages differ from the eager form's")
  if let lazyFailure {
    // The eager form inflated the same message and failed the same way.
    require(eagerStatus?.code == lazyFailure.code, "lazy: \(lazyFailure); eager: \(String(describing: eagerStatus))")
    require(eagerMessages.count == lazyMessages.count, "the eager form went past the message that failed")
  }
}
