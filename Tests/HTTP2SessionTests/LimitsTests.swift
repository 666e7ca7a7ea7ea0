// Tests/HTTP2SessionTests/LimitsTests.swift - the nghttp2 flood and size limits, set explicitly (HTTP2Limits)
//
// Each limit is exercised with a value below nghttp2's default, so a test passes only if the
// session really hands that value to nghttp2; the default-valued checks pin the defaults.

import HTTP2Session
import Testing

@Suite("nghttp2 limits (HTTP2Limits)")
struct LimitsTests {
  /// A client session that has sent its preface and SETTINGS and read the server's empty SETTINGS.
  private func client(_ limits: HTTP2Limits) throws -> (HTTP2Session, Recorder) {
    let events = Recorder()
    let session = try HTTP2Session(role: .client, settings: HTTP2Settings(limits: limits), delegate: events)
    _ = drain(session)
    try feed(session, rawFrame(RawType.settings))
    _ = drain(session)
    return (session, events)
  }

  /// A SETTINGS frame with `count` entries of SETTINGS_HEADER_TABLE_SIZE (harmless, repeatable).
  private func settingsFrame(entries count: Int) -> [UInt8] {
    rawFrame(RawType.settings, Array(repeating: [0x00, 0x01, 0, 0, 0x10, 0], count: count).flatMap { $0 })
  }

  @Test("the defaults are nghttp2's, written out")
  func defaults() {
    let limits = HTTP2Limits()
    #expect(limits.maxSettingsEntries == 32)
    #expect(limits.maxOutboundAcks == 1_000)
    #expect(limits.maxSendHeaderBlockLength == 64 << 10)
    #expect(limits.maxContinuations == 8)
    #expect(limits.streamResetBurst == 1_000)
    #expect(limits.streamResetRatePerSecond == 33)
    #expect(HTTP2Settings().limits == limits)
  }

  @Test("a SETTINGS frame with more entries than maxSettingsEntries ends the session")
  func maxSettings() throws {
    // The recorders are the sessions' unowned delegates: keep them alive.
    let (ok, okEvents) = try client(HTTP2Limits(maxSettingsEntries: 4))
    try feed(ok, settingsFrame(entries: 4))
    let (flooded, floodedEvents) = try client(HTTP2Limits(maxSettingsEntries: 4))
    #expect(throws: HTTP2SessionError.self) { try feed(flooded, settingsFrame(entries: 5)) }
    #expect(!flooded.wantsRead)
    withExtendedLifetime((okEvents, floodedEvents)) {}
  }

  @Test("more CONTINUATION frames than maxContinuations after one HEADERS end the session")
  func maxContinuations() throws {
    // HEADERS on stream 1 without END_HEADERS, then CONTINUATIONs, each carrying one literal field.
    func block(continuations: Int) -> [UInt8] {
      var bytes = rawFrame(RawType.headers, stream: 1, [0x88])
      for index in 0..<continuations {
        let last = index == continuations - 1
        bytes += rawFrame(0x9, flags: last ? RawFlag.endHeaders : 0, stream: 1, literal("x-c\(index)", "v"))
      }
      return bytes
    }
    let (ok, okEvents) = try client(HTTP2Limits(maxContinuations: 2))
    _ = try ok.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    _ = drain(ok)
    try feed(ok, block(continuations: 2))
    #expect(okEvents.headerBlocks.count == 1)

    let (flooded, floodedEvents) = try client(HTTP2Limits(maxContinuations: 2))
    _ = try flooded.submitRequest(headers: requestHeaders(), body: nil, endStream: true)
    _ = drain(flooded)
    #expect(throws: HTTP2SessionError.self) { try feed(flooded, block(continuations: 3)) }
    #expect(floodedEvents.headerBlocks.isEmpty)
  }

  @Test("a peer provoking more unsent ACKs than maxOutboundAcks is cut off")
  func maxOutboundAcks() throws {
    let ping = rawFrame(RawType.ping, [1, 2, 3, 4, 5, 6, 7, 8])
    let (ok, okEvents) = try client(HTTP2Limits(maxOutboundAcks: 3))
    try feed(ok, Array(repeating: ping, count: 3).flatMap { $0 })
    // Nothing read in between: the fourth PING's ACK would be one too many.
    let (flooded, floodedEvents) = try client(HTTP2Limits(maxOutboundAcks: 3))
    #expect(throws: HTTP2SessionError.self) { try feed(flooded, Array(repeating: ping, count: 5).flatMap { $0 }) }
    withExtendedLifetime((okEvents, floodedEvents)) {}
  }

  @Test("a header block above maxSendHeaderBlockLength is not sent; the stream is reported closed, not refused")
  func maxSendHeaderBlock() throws {
    let (session, events) = try client(HTTP2Limits(maxSendHeaderBlockLength: 1_024))
    let id = try session.submitRequest(
      headers: requestHeaders(extra: [field("x-big", String(repeating: "b", count: 2_000))]), body: nil,
      endStream: true)
    let sent = parseFrames(drain(session))
    #expect(!sent.contains { $0.type == RawType.headers })
    #expect(events.closes.map(\.0) == [id])
    #expect(events.closes.first?.1 != .refusedStream)
  }

  @Test("limits that are not positive are refused when the session is made")
  func invalid() {
    let events = Recorder()
    #expect(throws: HTTP2SessionError.self) {
      _ = try HTTP2Session(
        role: .client, settings: HTTP2Settings(limits: HTTP2Limits(maxSettingsEntries: 0)), delegate: events)
    }
  }

  @Test("hasClosedLocalSide is false while request data waits for window, true once END_STREAM is out")
  func localSide() throws {
    let events = Recorder()
    let session = try HTTP2Session(role: .client, delegate: events)
    _ = drain(session)
    // The server allows 10 bytes per stream.
    try feed(session, rawFrame(RawType.settings, [0x00, 0x04, 0, 0, 0, 10]))
    let id = try session.submitRequest(headers: requestHeaders(), body: Array(repeating: 1, count: 25), endStream: true)
    _ = drain(session)
    #expect(session.isStreamActive(id))
    #expect(!session.hasClosedLocalSide(id))
    // WINDOW_UPDATE of 100 on the stream and the connection: the rest and END_STREAM go out.
    try feed(
      session,
      rawFrame(RawType.windowUpdate, stream: UInt32(id), [0, 0, 0, 100])
        + rawFrame(RawType.windowUpdate, [0, 0, 0, 100]))
    let sent = parseFrames(drain(session))
    #expect(sent.last?.type == RawType.data && sent.last?.flags == RawFlag.endStream)
    #expect(session.hasClosedLocalSide(id))
  }
}
