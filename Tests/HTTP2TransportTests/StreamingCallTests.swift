// Tests/HTTP2TransportTests/StreamingCallTests.swift - client-streaming and bidirectional calls, compression and
// big streamed messages against grpcio (gRPC C-core), over h2c and TLS

import Foundation
import GRPCProtocol
import HTTP2Transport
import Synchronization
import TestSupport
import Testing

private let service = GRPCIOFixture.service

extension PythonPeerTests {
  @Suite("Client streaming and bidirectional calls (grpcio peer)", .timeLimit(.minutes(2)))
  struct StreamingCallTests {
    @Test("client streaming: four requests, one aggregated response", arguments: Transport.allCases)
    func clientStreaming(transport: Transport) async throws {
      try await GRPCIOFixture.with(transport) { fixture in
        let response = try await fixture.channel.clientStreaming(path: service + "StreamingInputCall") { writer in
          for size in [27182, 8, 1828, 45904] { try await writer.write(Proto.inputRequest(size: size)) }
        }
        #expect(Proto.aggregatedSize(response.message) == 74_922)
      }
    }

    @Test("client streaming with no request at all ends with an empty stream and gets 0", arguments: Transport.allCases)
    func clientStreamingEmpty(transport: Transport) async throws {
      try await GRPCIOFixture.with(transport) { fixture in
        let response = try await fixture.channel.clientStreaming(path: service + "StreamingInputCall") { _ in }
        #expect(Proto.aggregatedSize(response.message) ?? 0 == 0)
      }
    }

    @Test(
      "bidirectional: each request's response arrives before the next request is written", arguments: Transport.allCases
    )
    func pingPong(transport: Transport) async throws {
      try await GRPCIOFixture.with(transport) { fixture in
        let call = fixture.channel.makeStreamingCall(path: service + "FullDuplexCall")
        var responses = call.responses.makeAsyncIterator()
        for size in [31415, 9, 2653, 58979] {
          try await call.requests.write(Proto.outputRequest(sizes: [size], payloadSize: size / 2))
          let message = try #require(try await responses.next())
          #expect(Proto.payloadSize(message) == size)
        }
        call.requests.finish()
        #expect(try await responses.next() == nil)
        #expect(await call.responses.result().status == .ok)
      }
    }

    @Test(
      "bidirectionalStreaming: a producer and a reader run together; the reader's result is returned",
      arguments: Transport.allCases)
    func scopedBidirectional(transport: Transport) async throws {
      try await GRPCIOFixture.with(transport) { fixture in
        let sizes = try await fixture.channel.bidirectionalStreaming(path: service + "FullDuplexCall") { writer in
          for size in 1...20 { try await writer.write(Proto.outputRequest(sizes: [size * 100])) }
        } onResponse: { responses in
          var sizes: [Int] = []
          for try await message in responses { sizes.append(Proto.payloadSize(message) ?? -1) }
          return sizes
        }
        #expect(sizes == (1...20).map { $0 * 100 })
      }
    }

    @Test("a producer that throws cancels the call; its error is the one rethrown", arguments: Transport.allCases)
    func producerFails(transport: Transport) async throws {
      struct ProducerGaveUp: Error {}
      try await GRPCIOFixture.with(transport) { fixture in
        await #expect(throws: ProducerGaveUp.self) {
          _ = try await fixture.channel.bidirectionalStreaming(path: service + "FullDuplexCall") { writer in
            try await writer.write(Proto.outputRequest(sizes: [10]))
            throw ProducerGaveUp()
          } onResponse: { responses in
            var count = 0
            for try await _ in responses { count += 1 }
            return count
          }
        }
        // The channel goes on.
        let response = try await fixture.channel.clientStreaming(path: service + "StreamingInputCall") { writer in
          try await writer.write(Proto.inputRequest(size: 5))
        }
        #expect(Proto.aggregatedSize(response.message) == 5)
      }
    }

    @Test("onResponse returning early cancels the call and stops a producer that would write forever")
    func readerReturnsEarly() async throws {
      try await GRPCIOFixture.with(.h2c) { fixture in
        let written = Counter()
        let first = try await fixture.channel.bidirectionalStreaming(path: service + "FullDuplexCall") { writer in
          while true {
            try await writer.write(Proto.outputRequest(sizes: [7]))
            written.increment()
          }
        } onResponse: { responses in
          var iterator = responses.makeAsyncIterator()
          return try await iterator.next()
        }
        #expect(first.flatMap(Proto.payloadSize) == 7)
        // Returned, so the producer's task has ended: the count stays where it is.
        let count = written.value
        #expect(count >= 1)
        try await Task.sleep(for: .milliseconds(200))
        #expect(written.value == count)
      }
    }

    @Test("a deadline covers the request stream: a producer still writing sees DEADLINE_EXCEEDED")
    func deadline() async throws {
      try await GRPCIOFixture.with(.h2c) { fixture in
        var options = CallOptions()
        options.timeout = .milliseconds(300)
        let call = fixture.channel.makeStreamingCall(path: service + "FullDuplexCall", options: options)
        // The server sleeps 10 s before its response; the call outlives its deadline.
        try await call.requests.write(Proto.outputRequest(sizes: [1], intervalMicroseconds: 10_000_000))
        let result = await call.responses.result()
        #expect(result.status.code == .deadlineExceeded)
        let error = await writeError(call.requests)
        #expect(error?.code == .deadlineExceeded)
      }
    }

    @Test("cancelling the calling task cancels a client-streaming call (CANCELLED)")
    func taskCancellation() async throws {
      try await GRPCIOFixture.with(.h2c) { fixture in
        let started = Flag()
        let task = Task {
          try await fixture.channel.clientStreaming(path: service + "StreamingInputCall") { writer in
            try await writer.write(Proto.inputRequest(size: 1))
            started.set()
            try await Task.sleep(for: .seconds(30))
          }
        }
        #expect(await eventually { started.isSet })
        task.cancel()
        let outcome = await task.result
        guard case .failure(let error) = outcome else {
          Issue.record("the call succeeded after cancellation")
          return
        }
        #expect((error as? GRPCError)?.code == .cancelled)
      }
    }

    @Test("cancel_after_begin: a client stream cancelled before any request ends CANCELLED")
    func cancelAfterBegin() async throws {
      try await GRPCIOFixture.with(.h2c) { fixture in
        let call = fixture.channel.makeStreamingCall(path: service + "StreamingInputCall", kind: .clientStreaming)
        call.cancel()
        #expect(await call.responses.result().status.code == .cancelled)
        #expect(await writeError(call.requests)?.code == .cancelled)
      }
    }

    @Test("an invalid path fails the writer and the response with INVALID_ARGUMENT")
    func invalidPath() async throws {
      try await GRPCIOFixture.with(.h2c) { fixture in
        let call = fixture.channel.makeStreamingCall(path: "no-slash")
        #expect(await call.responses.result().status.code == .invalidArgument)
        #expect(await writeError(call.requests)?.code == .invalidArgument)
      }
    }
  }
}

/// A flag set once, read from any thread.
final class Flag: Sendable {
  private let value = Atomic<Bool>(false)
  func set() { value.store(true, ordering: .releasing) }
  var isSet: Bool { value.load(ordering: .acquiring) }
}

/// A counter shared between tasks.
final class Counter: Sendable {
  private let count = Atomic<Int>(0)
  func increment() { count.add(1, ordering: .relaxed) }
  var value: Int { count.load(ordering: .relaxed) }
}

/// The error the next write throws, or `nil` when it succeeds.
func writeError(_ writer: GRPCRequestWriter, _ message: [UInt8] = [0x0A, 0x00]) async -> GRPCError? {
  do {
    try await writer.write(message)
    return nil
  } catch {
    return error
  }
}

extension PythonPeerTests {
  @Suite("Compression (grpcio peer)", .timeLimit(.minutes(2)))
  struct CompressionCallTests {
    static let compressions: [(Transport, GRPCCompressionAlgorithm)] = [
      (.h2c, .gzip), (.h2c, .deflate), (.tls, .gzip), (.tls, .deflate),
    ]

    @Test("compressed requests: the server sees each message's flag, per call and per message", arguments: compressions)
    func requests(transport: Transport, algorithm: GRPCCompressionAlgorithm) async throws {
      try await GRPCIOFixture.with(transport) { fixture in
        var options = CallOptions()
        options.compression = algorithm
        // expect_compressed is checked by the server against the message's flag (INVALID_ARGUMENT otherwise).
        let unary = try await fixture.channel.unary(
          path: service + "UnaryCall",
          request: Proto.simpleRequest(responseSize: 10, payloadSize: 50_000, expectCompressed: true),
          options: options)
        #expect(Proto.payloadSize(unary.message) == 10)
        let streamed = try await fixture.channel.clientStreaming(path: service + "StreamingInputCall", options: options)
        {
          writer in
          #expect(writer.compression == algorithm)
          try await writer.write(Proto.inputRequest(size: 3_000, expectCompressed: true))
          try await writer.write(Proto.inputRequest(size: 4_000, expectCompressed: false), compressed: false)
          try await writer.write(Proto.inputRequest(size: 5_000, expectCompressed: true), compressed: true)
        }
        #expect(Proto.aggregatedSize(streamed.message) == 12_000)
        // And the check is real: an uncompressed request that expects compression is refused.
        let refused = await unaryError(
          fixture.channel, path: service + "UnaryCall",
          request: Proto.simpleRequest(responseSize: 1, expectCompressed: true))
        #expect(refused?.code == .invalidArgument)
      }
    }

    @Test("the channel's request encoding applies to calls that set none", arguments: Transport.allCases)
    func channelDefault(transport: Transport) async throws {
      try await GRPCIOFixture.with(transport, configure: { $0.compression.requestEncoding = .gzip }) { fixture in
        let response = try await fixture.channel.unary(
          path: service + "UnaryCall", request: Proto.simpleRequest(responseSize: 5, expectCompressed: true))
        #expect(Proto.payloadSize(response.message) == 5)
        var plain = CallOptions()
        plain.compression = .identity
        let uncompressed = try await fixture.channel.unary(
          path: service + "UnaryCall", request: Proto.simpleRequest(responseSize: 5, expectCompressed: false),
          options: plain)
        #expect(Proto.payloadSize(uncompressed.message) == 5)
      }
    }

    @Test("compressed responses are decompressed, unary and streamed, and say they were", arguments: Transport.allCases)
    func responses(transport: Transport) async throws {
      try await GRPCIOFixture.with(transport) { fixture in
        let compressed = try await fixture.channel.unary(
          path: service + "UnaryCall", request: Proto.simpleRequest(responseSize: 314_159, responseCompressed: true))
        #expect(Proto.payloadSize(compressed.message) == 314_159)
        #expect(compressed.compression == .gzip)
        let plain = try await fixture.channel.unary(
          path: service + "UnaryCall", request: Proto.simpleRequest(responseSize: 100, responseCompressed: false))
        #expect(plain.compression == nil)

        var request = Proto.outputRequest(sizes: [31415], compressed: true)
        request += Proto.outputRequest(sizes: [92653], compressed: false)
        let stream = fixture.channel.serverStreaming(path: service + "StreamingOutputCall", request: request)
        var received: [(Int?, GRPCCompressionAlgorithm?)] = []
        while let message = try await stream.nextReceivedMessage() {
          received.append((Proto.payloadSize(message.bytes), message.compression))
        }
        #expect(received.map(\.0) == [31415, 92653])
        #expect(received.map(\.1) == [.gzip, nil])
      }
    }

    @Test(
      "a compressed response that inflates past the receive limit is RESOURCE_EXHAUSTED", arguments: Transport.allCases)
    func inflatesPastLimit(transport: Transport) async throws {
      try await GRPCIOFixture.with(transport, configure: { $0.maxReceiveMessageSize = 64 << 10 }) { fixture in
        // 1 MiB of zeros compresses to about a kilobyte: only inflating finds it too large.
        let unary = await unaryError(
          fixture.channel, path: service + "UnaryCall",
          request: Proto.simpleRequest(responseSize: 1 << 20, responseCompressed: true))
        #expect(unary?.code == .resourceExhausted)
        #expect(unary?.message == "decompressed message exceeds the limit of 65536 bytes")
        let stream = fixture.channel.serverStreaming(
          path: service + "StreamingOutputCall",
          request: Proto.outputRequest(sizes: [100, 1 << 20, 100], compressed: true))
        var sizes: [Int?] = []
        do {
          for try await message in stream { sizes.append(Proto.payloadSize(message)) }
          Issue.record("the stream ended OK")
        } catch let error as GRPCError {
          #expect(error.code == .resourceExhausted)
        }
        #expect(sizes == [100])
        #expect(await stream.result().status.code == .resourceExhausted)
        // The channel is fine afterwards.
        #expect(await unaryError(fixture.channel, path: service + "EmptyCall") == nil)
      }
    }
  }
}

extension PythonPeerTests {
  @Suite("Big streamed messages (grpcio peer)", .timeLimit(.minutes(2)))
  struct BigMessageTests {
    /// A payload that makes the response message exactly 4 MiB (the default receive limit), its
    /// prefix not counted: StreamingOutputCallResponse{payload: Payload{body}} adds a tag and a
    /// 4-byte length twice, so 4 MiB - 10 bytes of body.
    static let bodyAtLimit = (4 << 20) - 10

    @Test(
      "regression: a 4 MiB message, four times the stream window, passes through serverStreaming",
      arguments: Transport.allCases)
    func fourMiBServerStreaming(transport: Transport) async throws {
      try await GRPCIOFixture.with(transport) { fixture in
        var options = CallOptions()
        options.timeout = .seconds(60)  // a deadlock shows as DEADLINE_EXCEEDED rather than a hang
        let stream = fixture.channel.serverStreaming(
          path: service + "StreamingOutputCall",
          request: Proto.outputRequest(sizes: [Self.bodyAtLimit, 10, Self.bodyAtLimit]),
          options: options)
        var sizes: [Int?] = []
        for try await message in stream {
          #expect(message.count <= 4 << 20)
          sizes.append(Proto.payloadSize(message))
        }
        #expect(sizes == [Self.bodyAtLimit, 10, Self.bodyAtLimit])
      }
    }

    @Test("4 MiB messages both ways on a bidirectional call, read one at a time")
    func fourMiBBidirectional() async throws {
      try await GRPCIOFixture.with(.h2c) { fixture in
        var options = CallOptions()
        options.timeout = .seconds(60)
        let call = fixture.channel.makeStreamingCall(path: service + "FullDuplexCall", options: options)
        var responses = call.responses.makeAsyncIterator()
        for _ in 0..<2 {
          try await call.requests.write(Proto.outputRequest(sizes: [Self.bodyAtLimit], payloadSize: 3 << 20))
          let message = try #require(try await responses.next())
          #expect(Proto.payloadSize(message) == Self.bodyAtLimit)
        }
        call.requests.finish()
        #expect(try await responses.next() == nil)
      }
    }

    @Test("one byte over the limit is still RESOURCE_EXHAUSTED, from the prefix")
    func overLimit() async throws {
      try await GRPCIOFixture.with(.h2c) { fixture in
        let stream = fixture.channel.serverStreaming(
          path: service + "StreamingOutputCall", request: Proto.outputRequest(sizes: [Self.bodyAtLimit + 1]))
        #expect(await drain(stream).failure?.code == .resourceExhausted)
      }
    }

  }
}
