// Tests/GRPCProtocolTests/CompressionTests.swift - gzip and deflate: round trips, bounded inflate, negotiation headers,
// and compressed responses through the client call

import GRPCCompression
import GRPCProtocol
import Testing

/// "hello gRPC" as Python's `gzip.compress(b"hello gRPC", mtime=0)` writes it (RFC 1952).
let helloGzip: [UInt8] = [
  31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 203, 72, 205, 201, 201, 87, 72, 15, 10, 112, 6, 0, 237, 145, 216, 88, 10, 0, 0, 0,
]
/// "hello gRPC" as Python's `zlib.compress(b"hello gRPC")` writes it (RFC 1950, gRPC's deflate).
let helloDeflate: [UInt8] = [120, 156, 203, 72, 205, 201, 201, 87, 72, 15, 10, 112, 6, 0, 20, 170, 3, 129]

/// `bytes` compressed with `algorithm`.
func compressed(_ bytes: [UInt8], _ algorithm: GRPCCompressionAlgorithm) -> [UInt8] {
  bytes.withUnsafeBytes { raw in
    (try? GRPCMessageCompression.compress(raw, with: algorithm)) ?? []
  }
}

/// One DATA chunk holding `bytes` compressed with `algorithm` and framed with the flag set.
func compressedFrame(_ bytes: [UInt8], _ algorithm: GRPCCompressionAlgorithm) -> [UInt8] {
  (try? GRPCMessageFramer.framed(bytes, compressedWith: algorithm)) ?? []
}

/// The result of decompressing `bytes`.
func decompressed(
  _ bytes: [UInt8], _ algorithm: GRPCCompressionAlgorithm, limit: Int = 4 << 20
) -> Result<[UInt8], GRPCError> {
  bytes.withUnsafeBytes { raw in
    Result { () throws(GRPCError) in try GRPCMessageCompression.decompress(raw, with: algorithm, limit: limit) }
  }
}

@Suite("Compression: zlib codecs")
struct CodecTests {
  static let algorithms: [GRPCCompressionAlgorithm] = [.gzip, .deflate]

  @Test("round trips of empty, tiny, compressible and incompressible messages", arguments: algorithms)
  func roundTrip(algorithm: GRPCCompressionAlgorithm) {
    var generator = SplitMix64(seed: 42)
    let random = (0..<100_000).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    for original in [[], [7], [UInt8](repeating: 0, count: 300_000), random] as [[UInt8]] {
      let packed = compressed(original, algorithm)
      #expect(!packed.isEmpty)
      #expect(decompressed(packed, algorithm) == .success(original))
    }
    #expect(compressed([UInt8](repeating: 0, count: 300_000), algorithm).count < 2_000)
  }

  @Test("reads what other zlib users (Python's gzip and zlib modules) wrote")
  func knownBytes() {
    #expect(decompressed(helloGzip, .gzip) == .success(Array("hello gRPC".utf8)))
    #expect(decompressed(helloDeflate, .deflate) == .success(Array("hello gRPC".utf8)))
  }

  @Test("the wrapper must match the encoding: gzip bytes are not deflate and the other way round")
  func wrongWrapper() {
    #expect(decompressed(helloGzip, .deflate).failure?.code == .internalError)
    #expect(decompressed(helloDeflate, .gzip).failure?.code == .internalError)
  }

  @Test("exactly the limit is fine, one byte more is RESOURCE_EXHAUSTED", arguments: algorithms)
  func limit(algorithm: GRPCCompressionAlgorithm) {
    let body = [UInt8](repeating: 0x41, count: 10_000)
    let packed = compressed(body, algorithm)
    #expect(decompressed(packed, algorithm, limit: 10_000) == .success(body))
    let refused = decompressed(packed, algorithm, limit: 9_999)
    #expect(refused.failure?.code == .resourceExhausted)
    #expect(refused.failure?.message == "decompressed message exceeds the limit of 9999 bytes")
    #expect(decompressed(packed, algorithm, limit: 0).failure?.code == .resourceExhausted)
  }

  @Test("a zip bomb (64 MiB of zeros in 64 KiB) stops at the limit")
  func zipBomb() throws {
    let zeros = [UInt8](repeating: 0, count: 64 << 20)
    var bomb: [UInt8] = []
    try zeros.withUnsafeBytes { try Zlib.compress($0, format: .gzip, into: &bomb) }
    #expect(bomb.count < 100_000)
    var output: [UInt8] = []
    let outcome = bomb.withUnsafeBytes { raw in
      Result { () throws(ZlibError) in try Zlib.decompress(raw, format: .gzip, limit: 4 << 20, into: &output) }
    }
    #expect(outcome.failure == .outputLimitExceeded(limit: 4 << 20))
    // The output buffer never grew past the limit and the byte that proved the excess.
    #expect(output.count <= (4 << 20) + 1)
  }

  @Test("truncated data, garbage and bytes after the end are INTERNAL, naming the problem", arguments: algorithms)
  func corrupt(algorithm: GRPCCompressionAlgorithm) {
    let packed = compressed(Array("a message that will be cut short".utf8), algorithm)
    let truncated = decompressed(Array(packed.dropLast(6)), algorithm)
    #expect(truncated.failure?.code == .internalError)
    #expect(truncated.failure?.message.contains("truncated") == true)
    #expect(decompressed([], algorithm).failure?.code == .internalError)
    #expect(decompressed([0xDE, 0xAD, 0xBE, 0xEF, 0x00], algorithm).failure?.code == .internalError)
    let trailing = decompressed(packed + [0x00], algorithm)
    #expect(trailing.failure?.code == .internalError)
    #expect(trailing.failure?.message.contains("follow the end") == true)
    // A flipped byte inside the data breaks the checksum or the stream.
    var flipped = packed
    flipped[flipped.count - 2] ^= 0xFF
    #expect(decompressed(flipped, algorithm).failure?.code == .internalError)
  }

  @Test("identity passes bytes through, still within the limit")
  func identity() {
    #expect(decompressed([1, 2, 3], .identity) == .success([1, 2, 3]))
    #expect(decompressed([1, 2, 3], .identity, limit: 2).failure?.code == .resourceExhausted)
    #expect(compressed([1, 2, 3], .identity) == [1, 2, 3])
  }
}

@Suite("Compression: names and headers")
struct CompressionHeaderTests {
  @Test("names parse case-insensitively; unknown names are nil")
  func names() {
    #expect(GRPCCompressionAlgorithm(name: "gzip") == .gzip)
    #expect(GRPCCompressionAlgorithm(name: " GZip ") == .gzip)
    #expect(GRPCCompressionAlgorithm(name: "deflate") == .deflate)
    #expect(GRPCCompressionAlgorithm(name: "identity") == .identity)
    #expect(GRPCCompressionAlgorithm(name: "snappy") == nil)
    #expect(GRPCCompressionAlgorithm(name: "") == nil)
  }

  @Test("grpc-accept-encoding lists identity first, no duplicates; parsing keeps unknown names")
  func acceptEncoding() {
    #expect(GRPCCompressionAlgorithm.acceptEncodingHeader([.gzip, .deflate]) == "identity,gzip,deflate")
    #expect(GRPCCompressionAlgorithm.acceptEncodingHeader([.deflate, .identity, .deflate]) == "identity,deflate")
    #expect(GRPCCompressionAlgorithm.acceptEncodingHeader([]) == "identity")
    #expect(GRPCCompressionAlgorithm.parseAcceptEncoding("identity, GZIP,,snappy ") == ["identity", "gzip", "snappy"])
  }

  @Test("the request head sends grpc-encoding and grpc-accept-encoding after content-type, before te")
  func requestHead() {
    let head = GRPCRequestHead(
      path: "/a.B/C", authority: "h:1", scheme: "http", encoding: .gzip, acceptEncodings: [.gzip, .deflate])
    let names = head.headerFields().map(\.name)
    #expect(
      names == [
        ":method", ":scheme", ":path", ":authority", "content-type", "grpc-encoding",
        "grpc-accept-encoding", "te", "user-agent",
      ])
    let fields = Dictionary(head.headerFields().map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
    #expect(fields["grpc-encoding"] == "gzip")
    #expect(fields["grpc-accept-encoding"] == "identity,gzip,deflate")
    let identity = GRPCRequestHead(path: "/a.B/C", authority: "h:1", scheme: "http", encoding: .identity)
    #expect(!identity.headerFields().contains { $0.name == "grpc-encoding" || $0.name == "grpc-accept-encoding" })
  }

  @Test("framing a compressed message sets the flag; identity frames it plainly")
  func framing() throws {
    let framed = try GRPCMessageFramer.framed(Array("hello gRPC".utf8), compressedWith: .gzip)
    #expect(framed.first == 1)
    let length = framed[1..<5].reduce(0) { $0 << 8 | Int($1) }
    #expect(length == framed.count - 5)
    #expect(decompressed(Array(framed.dropFirst(5)), .gzip) == .success(Array("hello gRPC".utf8)))
    #expect(try GRPCMessageFramer.framed([1, 2], compressedWith: .identity) == [0, 0, 0, 0, 2, 1, 2])
  }
}

@Suite("Compression: responses through the client call")
struct CompressedResponseTests {
  @Test(
    "gzip and deflate responses are decompressed; plain messages in between pass",
    arguments: [
      GRPCCompressionAlgorithm.gzip, .deflate,
    ])
  func decompresses(algorithm: GRPCCompressionAlgorithm) {
    var call = GRPCClientCall.started(.serverStreaming, headers: [("grpc-encoding", algorithm.name)])
    #expect(call.responseCompression == algorithm)
    let chunk = compressedFrame([1, 2, 3], algorithm) + frames([4]) + compressedFrame([], algorithm)
    #expect(call.data(chunk) == (.none, [[1, 2, 3], [4], []]))
    #expect(call.receiveHeaders(trailerFields("0"), endStream: true) == .finish(.ok))
  }

  @Test("a compressed message split into 1-byte chunks is reassembled, then decompressed")
  func split() {
    var call = GRPCClientCall.started(.unary, headers: [("grpc-encoding", "gzip")])
    var delivered: [[UInt8]] = []
    for byte in compressedFrame(Array(repeating: 9, count: 5_000), .gzip) {
      let (action, messages) = call.data([byte])
      #expect(action == .none)
      delivered += messages
    }
    #expect(delivered == [Array(repeating: 9, count: 5_000)])
  }

  @Test("a response that inflates beyond the receive limit is RESOURCE_EXHAUSTED, decided while inflating")
  func inflatesBeyondLimit() {
    var call = GRPCClientCall.started(
      .serverStreaming, maxReceiveMessageSize: 2_000, headers: [("grpc-encoding", "gzip")])
    let small = compressedFrame([1], .gzip)
    let bomb = compressedFrame([UInt8](repeating: 0, count: 1 << 20), .gzip)
    #expect(bomb.count < 2_000)  // passes the prefix check: only inflating can tell
    let (action, messages) = call.data(small + bomb + small)
    #expect(messages == [[1]])
    #expect(action == reset(.resourceExhausted, "decompressed message exceeds the limit of 2000 bytes"))
    // Found by the fuzzer: the message that failed is not counted as received.
    #expect(call.messagesReceived == 1)
  }

  @Test("a compressed body that does not decompress is INTERNAL and resets the stream")
  func corruptBody() {
    var call = GRPCClientCall.started(.unary, headers: [("grpc-encoding", "deflate")])
    let (action, messages) = call.data([1, 0, 0, 0, 3, 0xFF, 0xFF, 0xFF])
    #expect(messages.isEmpty)
    #expect(call.messagesReceived == 0)
    #expect(action.code == .internalError)
    #expect(action.resets)
    #expect(action.finalStatus?.message.hasPrefix("deflate message does not decompress") == true)
  }

  @Test("the compressed flag under grpc-encoding identity is INTERNAL")
  func identityWithFlag() {
    var call = GRPCClientCall.started(.unary, headers: [("grpc-encoding", "identity")])
    #expect(call.data(compressedFrame([1], .gzip)).action.code == .internalError)
  }

  @Test("receiveMessages hands out compressed bytes and each message's share of the chunk")
  func lazy() {
    var call = GRPCClientCall.started(.bidirectionalStreaming, headers: [("grpc-encoding", "gzip")])
    let first = compressedFrame([5, 5, 5], .gzip)
    let second = frames([6, 6])
    let third = compressedFrame([7], .gzip)
    // Chunk 1: the first message, the second, and 3 bytes of the third; chunk 2: the rest.
    let all = first + second + third
    let cut = first.count + second.count + 3
    var seen: [(compression: GRPCCompressionAlgorithm?, bytes: [UInt8], window: Int)] = []
    for (chunk, isLast) in [(Array(all[..<cut]), false), (Array(all[cut...]), true)] {
      let action = chunk.withUnsafeBytes { raw in
        call.receiveMessages(raw, endStream: false) { seen.append(($0.compression, Array($0.bytes), $0.windowBytes)) }
      }
      #expect(action == .none, "chunk \(isLast ? 2 : 1)")
    }
    #expect(seen.map(\.compression) == [.gzip, nil, .gzip])
    #expect(seen.map(\.bytes) == [Array(first.dropFirst(5)), [6, 6], Array(third.dropFirst(5))])
    // The third message's first 3 bytes came in chunk 1, outside any message completed there.
    #expect(seen.map(\.window) == [first.count, second.count, third.count - 3])
  }

  @Test("grpc-accept-encoding from the server is remembered, from headers or a Trailers-Only response")
  func serverAccepts() {
    let call = GRPCClientCall.started(.unary, headers: [("grpc-accept-encoding", "identity,gzip")])
    #expect(call.serverAcceptedEncodings == ["identity", "gzip"])
    var trailersOnly = GRPCClientCall(kind: .unary)
    _ = trailersOnly.receiveHeaders(
      grpcHeaders(trailerFields("12", "unsupported encoding") + [("grpc-accept-encoding", "identity")]), endStream: true
    )
    #expect(trailersOnly.serverAcceptedEncodings == ["identity"])
    #expect(GRPCClientCall(kind: .unary).serverAcceptedEncodings == nil)
  }
}

@Suite("Client-streaming and bidirectional kinds")
struct StreamingKindTests {
  @Test("client streaming is single-response: zero or two messages with OK are INTERNAL")
  func clientStreamingCardinality() {
    var zero = GRPCClientCall.started(.clientStreaming)
    #expect(
      zero.receiveHeaders(trailerFields("0"), endStream: true)
        == finish(.internalError, "unary call ended OK without a response message"))
    var two = GRPCClientCall.started(.clientStreaming)
    #expect(
      two.data(frames([1], [2])).action == reset(.internalError, "unary call received more than one response message"))
    var one = GRPCClientCall.started(.clientStreaming)
    #expect(one.data(frames([1])).messages == [[1]])
    #expect(one.receiveHeaders(trailerFields("0"), endStream: true) == .finish(.ok))
  }

  @Test("bidirectional streaming takes any number of messages, none included")
  func bidirectional() {
    var none = GRPCClientCall.started(.bidirectionalStreaming)
    #expect(none.receiveHeaders(trailerFields("0"), endStream: true) == .finish(.ok))
    var many = GRPCClientCall.started(.bidirectionalStreaming)
    #expect(many.data(frames([1], [2], [3])).messages == [[1], [2], [3]])
    #expect(many.receiveHeaders(trailerFields("0"), endStream: true) == .finish(.ok))
    #expect(!GRPCClientCall.Kind.bidirectionalStreaming.expectsSingleResponse)
    #expect(GRPCClientCall.Kind.clientStreaming.expectsSingleResponse)
  }
}

extension Result {
  /// The error, or `nil` on success.
  var failure: Failure? {
    if case .failure(let error) = self { error } else { nil }
  }
}

/// SplitMix64: a small seeded generator, so random inputs are reproducible.
struct SplitMix64: RandomNumberGenerator {
  private var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
