// Tests/HTTP2SessionTests/TestSupport.swift - a recording delegate, an in-memory client/server pair, raw frames
//
// No sockets: bytes produced by one session are fed straight into the other
// until neither has anything left to send.

import HTTP2Session
import Testing

/// One delegate callback, recorded with copies of its arguments.
enum Event: Equatable, CustomStringConvertible {
  case headers([HTTP2HeaderField], HTTP2HeadersKind, stream: Int32, endStream: Bool)
  case data([UInt8], stream: Int32)
  case endOfStream(Int32)
  case closed(Int32, HTTP2ErrorCode)
  case goAway(lastStreamID: Int32, HTTP2ErrorCode, debugData: [UInt8])
  case settings(HTTP2RemoteSettings)
  case pingAck(UInt64)
  case headerListRefused(size: Int, limit: Int, stream: Int32)

  var description: String {
    switch self {
    case .headers(let fields, let kind, let stream, let end): "headers(\(stream), \(kind), end: \(end), \(fields))"
    case .data(let bytes, let stream): "data(\(stream), \(bytes.count) bytes)"
    case .endOfStream(let stream): "endOfStream(\(stream))"
    case .closed(let stream, let code): "closed(\(stream), \(code))"
    case .goAway(let last, let code, let debug): "goAway(\(last), \(code), \(debug.count) bytes)"
    case .settings(let settings): "settings(\(settings))"
    case .pingAck(let value): "pingAck(\(value))"
    case .headerListRefused(let size, let limit, let stream): "headerListRefused(\(stream), \(size) > \(limit))"
    }
  }
}

/// Records every event; consumes received DATA at once unless `autoConsume` is off.
final class Recorder: HTTP2SessionDelegate {
  var events: [Event] = []
  var autoConsume = true
  /// Called after a header block is recorded, to answer from inside the callback.
  var onHeaders: ((HTTP2Session, Int32, HTTP2HeadersKind) -> Void)?

  func session(
    _ session: HTTP2Session,
    didReceiveHeaders headers: [HTTP2HeaderField],
    kind: HTTP2HeadersKind,
    streamID: Int32,
    endStream: Bool
  ) {
    events.append(.headers(headers, kind, stream: streamID, endStream: endStream))
    onHeaders?(session, streamID, kind)
  }

  func session(_ session: HTTP2Session, didReceiveData data: UnsafeRawBufferPointer, streamID: Int32) {
    events.append(.data(Array(data), stream: streamID))
    if autoConsume { session.consume(streamID: streamID, bytes: data.count) }
  }

  func session(_ session: HTTP2Session, didReceiveEndOfStream streamID: Int32) {
    events.append(.endOfStream(streamID))
  }

  func session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
    events.append(.closed(streamID, errorCode))
  }

  func session(
    _ session: HTTP2Session,
    didReceiveGoAway lastStreamID: Int32,
    errorCode: HTTP2ErrorCode,
    debugData: [UInt8]
  ) {
    events.append(.goAway(lastStreamID: lastStreamID, errorCode, debugData: debugData))
  }

  func session(_ session: HTTP2Session, didReceiveSettings settings: HTTP2RemoteSettings) {
    events.append(.settings(settings))
  }

  func session(_ session: HTTP2Session, didReceivePingAck opaqueData: UInt64) {
    events.append(.pingAck(opaqueData))
  }

  func session(_ session: HTTP2Session, didRefuseHeaderListOfSize size: Int, limit: Int, streamID: Int32) {
    events.append(.headerListRefused(size: size, limit: limit, stream: streamID))
  }

  /// Events concerning `stream`, in order.
  func events(on stream: Int32) -> [Event] {
    events.filter {
      switch $0 {
      case .headers(_, _, let id, _), .data(_, let id): id == stream
      case .endOfStream(let id), .closed(let id, _): id == stream
      case .headerListRefused(_, _, let id): id == stream
      default: false
      }
    }
  }

  /// All DATA bytes received on `stream`, concatenated.
  func bytes(on stream: Int32) -> [UInt8] {
    events.flatMap { event -> [UInt8] in
      if case .data(let bytes, let id) = event, id == stream { return bytes }
      return []
    }
  }

  /// The header blocks received, with kind and stream.
  var headerBlocks: [(fields: [HTTP2HeaderField], kind: HTTP2HeadersKind, stream: Int32, endStream: Bool)] {
    events.compactMap { event in
      if case .headers(let fields, let kind, let stream, let end) = event { return (fields, kind, stream, end) }
      return nil
    }
  }

  /// The close events received, as (stream, code).
  var closes: [(Int32, HTTP2ErrorCode)] {
    events.compactMap { event in
      if case .closed(let stream, let code) = event { return (stream, code) }
      return nil
    }
  }
}

/// Takes every byte `session` has to send.
func drain(_ session: HTTP2Session) -> [UInt8] {
  var bytes: [UInt8] = []
  while session.withPendingOutput({ chunk in
    bytes.append(contentsOf: chunk)
    return chunk.count
  }) > 0 {}
  return bytes
}

/// Feeds `bytes` to `session`.
func feed(_ session: HTTP2Session, _ bytes: [UInt8]) throws(HTTP2SessionError) {
  let result = bytes.withUnsafeBytes { buffer in
    Result { () throws(HTTP2SessionError) in try session.receive(buffer) }
  }
  try result.get()
}

/// A client and a server session joined in memory.
final class SessionPair {
  let clientEvents = Recorder()
  let serverEvents = Recorder()
  let client: HTTP2Session
  let server: HTTP2Session
  /// Every byte the client sent, preface included, and every byte the server sent.
  var clientWire: [UInt8] = []
  var serverWire: [UInt8] = []

  init(client clientSettings: HTTP2Settings = .init(), server serverSettings: HTTP2Settings = .init()) throws {
    client = try HTTP2Session(role: .client, settings: clientSettings, delegate: clientEvents)
    server = try HTTP2Session(role: .server, settings: serverSettings, delegate: serverEvents)
  }

  /// Moves bytes both ways until neither side has output.
  func pump(sourceLocation: SourceLocation = #_sourceLocation) throws {
    for _ in 0..<100_000 {
      let fromClient = drain(client)
      clientWire += fromClient
      if !fromClient.isEmpty { try feed(server, fromClient) }
      let fromServer = drain(server)
      serverWire += fromServer
      if !fromServer.isEmpty { try feed(client, fromServer) }
      if fromClient.isEmpty && fromServer.isEmpty { return }
    }
    Issue.record("sessions kept talking", sourceLocation: sourceLocation)
  }
}

// MARK: - Raw frames

/// The client connection preface, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".
let clientPreface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

/// Frame type codes (RFC 9113 §6).
enum RawType {
  static let data: UInt8 = 0x0
  static let headers: UInt8 = 0x1
  static let rstStream: UInt8 = 0x3
  static let settings: UInt8 = 0x4
  static let ping: UInt8 = 0x6
  static let goAway: UInt8 = 0x7
  static let windowUpdate: UInt8 = 0x8
}

/// Frame flags (RFC 9113 §6).
enum RawFlag {
  static let endStream: UInt8 = 0x1
  static let ack: UInt8 = 0x1
  static let endHeaders: UInt8 = 0x4
  static let padded: UInt8 = 0x8
}

/// One parsed frame.
struct RawFrame: Equatable {
  var type: UInt8
  var flags: UInt8
  var streamID: UInt32
  var payload: [UInt8]

  /// The error code of a RST_STREAM, or of a GOAWAY (after its last-stream-ID).
  var errorCode: UInt32? {
    switch type {
    case RawType.rstStream: be32(payload, 0)
    case RawType.goAway: be32(payload, 4)
    default: nil
    }
  }
}

/// Reads a big-endian 32-bit integer at `offset`.
func be32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
  bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
}

/// Serialises a frame: 24-bit length, type, flags, 31-bit stream ID, payload.
func rawFrame(_ type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, _ payload: [UInt8] = []) -> [UInt8] {
  let length = UInt32(payload.count)
  return [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
    + [UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)]
    + payload
}

/// Splits `bytes` into frames, skipping a leading client preface.
func parseFrames(_ bytes: [UInt8]) -> [RawFrame] {
  var index = bytes.starts(with: clientPreface) ? clientPreface.count : 0
  var frames: [RawFrame] = []
  while index + 9 <= bytes.count {
    let length = Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
    let stream = be32(bytes, index + 5) & 0x7FFF_FFFF
    let end = index + 9 + length
    guard end <= bytes.count else { break }
    frames.append(
      RawFrame(
        type: bytes[index + 3], flags: bytes[index + 4], streamID: stream, payload: Array(bytes[index + 9..<end])))
    index = end
  }
  return frames
}

/// HPACK "literal header field without indexing, new name" (RFC 7541 §6.2.2), lengths below 127.
func literal(_ name: String, _ value: String) -> [UInt8] {
  [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
}

/// HPACK "literal header field without indexing, indexed name" for a static-table index below 15.
func literal(index: UInt8, _ value: String) -> [UInt8] {
  [index, UInt8(value.utf8.count)] + Array(value.utf8)
}

/// Shorthand for a header field.
func field(_ name: String, _ value: String) -> HTTP2HeaderField { HTTP2HeaderField(name, value) }

/// A gRPC-style request header block for `path`.
func requestHeaders(_ path: String = "/pkg.Service/Method", extra: [HTTP2HeaderField] = []) -> [HTTP2HeaderField] {
  [
    field(":method", "POST"), field(":scheme", "http"), field(":path", path), field(":authority", "localhost"),
    field("content-type", "application/grpc"), field("te", "trailers"),
  ] + extra
}
