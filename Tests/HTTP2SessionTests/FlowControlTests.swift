// Tests/HTTP2SessionTests/FlowControlTests.swift - manual flow control: WINDOW_UPDATE only as the consumer consumes

import HTTP2Session
import Testing

@Suite("Manual flow control")
struct FlowControlTests {
  @Test("a message larger than the stream window completes only as the client consumes")
  func streamWindowPacesTheServer() throws {
    let window = 65_535
    let total = 200_000
    let pair = try SessionPair(client: HTTP2Settings(initialWindowSize: UInt32(window)))
    pair.clientEvents.autoConsume = false
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()

    let message = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    try pair.server.submitHeaders(streamID: id, headers: [field(":status", "200")], endStream: false)
    try message.withUnsafeBytes { try pair.server.sendData(streamID: id, bytes: $0, endStream: false) }
    try pair.server.submitHeaders(streamID: id, headers: [field("grpc-status", "0")], endStream: true)
    try pair.pump()

    // Without consume the server stops exactly at the window; the rest waits in its queue,
    // and the trailers wait behind it.
    #expect(pair.clientEvents.bytes(on: id).count == window)
    #expect(pair.server.outboundBufferedBytes(streamID: id) == total - window)
    #expect(pair.clientEvents.headerBlocks.count == 1)
    #expect(!parseFrames(pair.clientWire).contains { $0.type == RawType.windowUpdate && $0.streamID == UInt32(id) })

    var consumed = 0
    var rounds = 0
    while pair.client.isStreamActive(id) && rounds < 100 {
      let received = pair.clientEvents.bytes(on: id).count
      pair.client.consume(streamID: id, bytes: received - consumed)
      consumed = received
      try pair.pump()
      rounds += 1
    }
    #expect(rounds > 1)
    #expect(pair.clientEvents.bytes(on: id) == message)
    #expect(pair.server.outboundBufferedBytes(streamID: id) == 0)
    #expect(
      pair.clientEvents.events(on: id).suffix(2) == [
        .headers([field("grpc-status", "0")], .trailers, stream: id, endStream: true),
        .closed(id, .noError),
      ])
    #expect(parseFrames(pair.clientWire).contains { $0.type == RawType.windowUpdate && $0.streamID == UInt32(id) })
  }

  @Test("the connection window limits all streams together until consumed")
  func connectionWindow() throws {
    // Stream windows are large; the connection window is the protocol's 65 535.
    let pair = try SessionPair(client: HTTP2Settings(initialWindowSize: 1 << 20, connectionWindowSize: 65_535))
    pair.clientEvents.autoConsume = false
    let first = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    let second = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()
    let chunk = [UInt8](repeating: 0xAB, count: 50_000)
    for id in [first, second] {
      try pair.server.submitHeaders(streamID: id, headers: [field(":status", "200")], endStream: false)
      try chunk.withUnsafeBytes { try pair.server.sendData(streamID: id, bytes: $0, endStream: true) }
    }
    try pair.pump()
    let received = pair.clientEvents.bytes(on: first).count + pair.clientEvents.bytes(on: second).count
    #expect(received == 65_535)
    #expect(
      pair.server.outboundBufferedBytes(streamID: first) + pair.server.outboundBufferedBytes(streamID: second)
        == 100_000 - 65_535)

    // Consuming on one stream frees connection window for both.
    pair.client.consume(streamID: first, bytes: pair.clientEvents.bytes(on: first).count)
    pair.client.consume(streamID: second, bytes: pair.clientEvents.bytes(on: second).count)
    pair.clientEvents.autoConsume = true
    try pair.pump()
    #expect(pair.clientEvents.bytes(on: first) == chunk)
    #expect(pair.clientEvents.bytes(on: second) == chunk)
    #expect(pair.client.activeStreamCount == 0)
  }

  @Test("output is handed over in batches and a partial write keeps the rest in order")
  func partialWrites() throws {
    let pair = try SessionPair()
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()
    let message = (0..<40_000).map { UInt8(truncatingIfNeeded: $0) }
    try pair.server.submitHeaders(streamID: id, headers: [field(":status", "200")], endStream: false)
    try message.withUnsafeBytes { try pair.server.sendData(streamID: id, bytes: $0, endStream: true) }

    // Write 1000 bytes at a time, feeding them to the client as they go.
    var calls = 0
    while pair.server.wantsWrite {
      var slice: [UInt8] = []
      let written = pair.server.withPendingOutput { bytes in
        slice = Array(bytes.prefix(1000))
        return slice.count
      }
      #expect(written == slice.count)
      try feed(pair.client, slice)
      calls += 1
    }
    #expect(calls > 40)
    #expect(pair.server.pendingOutputCount == 0)
    #expect(pair.clientEvents.bytes(on: id) == message)
    #expect(pair.clientEvents.events(on: id).last == .closed(id, .noError))
    // Nothing to write: the body is not called.
    var called = false
    #expect(
      pair.server.withPendingOutput { _ in
        called = true; return 0
      } == 0)
    #expect(!called)
  }

  @Test("drainOutput appends everything, beyond the batch limit, into a reused buffer")
  func drainOutputIntoBuffer() throws {
    let pair = try SessionPair()
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()
    pair.server.outputBatchLimit = 1000
    let message = [UInt8](repeating: 0x5A, count: 50_000)
    try pair.server.submitHeaders(streamID: id, headers: [field(":status", "200")], endStream: false)
    try message.withUnsafeBytes { try pair.server.sendData(streamID: id, bytes: $0, endStream: true) }

    var buffer: [UInt8] = [0xEE]
    let appended = pair.server.drainOutput(into: &buffer)
    #expect(appended == buffer.count - 1)
    #expect(buffer.first == 0xEE)
    #expect(!pair.server.wantsWrite)
    try feed(pair.client, Array(buffer.dropFirst()))
    #expect(pair.clientEvents.bytes(on: id) == message)
    #expect(pair.clientEvents.events(on: id).last == .closed(id, .noError))
    #expect(pair.server.drainOutput(into: &buffer) == 0)
  }

  @Test("consumeConnection and consumeStream reopen the two windows separately")
  func splitConsumption() throws {
    let window = 65_535
    let pair = try SessionPair(client: HTTP2Settings(initialWindowSize: UInt32(window)))
    pair.clientEvents.autoConsume = false
    let id = try pair.client.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    try pair.pump()
    let message = [UInt8](repeating: 1, count: 100_000)
    try pair.server.submitHeaders(streamID: id, headers: [field(":status", "200")], endStream: false)
    try message.withUnsafeBytes { try pair.server.sendData(streamID: id, bytes: $0, endStream: true) }
    try pair.pump()
    #expect(pair.clientEvents.bytes(on: id).count == window)

    // The connection window alone does not let the stream continue.
    pair.client.consumeConnection(bytes: window)
    try pair.pump()
    #expect(pair.clientEvents.bytes(on: id).count == window)
    let updates = parseFrames(pair.clientWire).filter { $0.type == RawType.windowUpdate }
    #expect(updates.map(\.streamID).filter { $0 == UInt32(id) }.isEmpty)

    // The stream window then does, and the remaining 34 465 bytes arrive.
    pair.client.consumeStream(streamID: id, bytes: window)
    try pair.pump()
    #expect(pair.clientEvents.bytes(on: id) == message)
    #expect(pair.clientEvents.events(on: id).last == .closed(id, .noError))
  }
}
