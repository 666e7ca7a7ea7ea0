// Tests/HTTP2TransportTests/RawHTTP2Client.swift - an HTTP/2 client that sends what a test scripts, for server bounds
//
// A real client (nghttp2 through HTTP2Session) over a non-blocking TCP socket to 127.0.0.1, driven by
// the test: it opens gRPC request streams and sends exactly the bytes the test gives, ends streams only
// when told, and records every response header block, reset, GOAWAY and the end of the connection. It
// behaves as a client that never finishes its requests, which the project's own channel never does.

import HTTP2Session
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What a ``RawHTTP2Client`` saw.
struct RawClientEvents {
  /// Header blocks received, per stream, in order.
  var headers: [Int32: [[HTTP2HeaderField]]] = [:]
  /// Streams closed, with the code (NO_ERROR for a normal end, else the RST_STREAM code).
  var closed: [Int32: HTTP2ErrorCode] = [:]
  /// DATA bytes received, per stream.
  var dataBytes: [Int32: Int] = [:]
  /// The GOAWAY received, if any: its error code.
  var goAway: HTTP2ErrorCode?
  /// Whether the server's SETTINGS arrived (the HTTP/2 connection is up).
  var settingsReceived = false
  /// Bytes received from the server in all.
  var bytesReceived = 0
  /// Whether the server closed the connection (read returned 0 or failed).
  var ended = false
}

/// A scripted HTTP/2 client. Not thread-safe: one test task drives it.
final class RawHTTP2Client: HTTP2SessionDelegate {
  private let fd: Int32
  private var session: HTTP2Session!
  private var outbound: [UInt8] = []
  private(set) var events = RawClientEvents()
  /// Whether DATA payloads are kept (``keptData``), besides being counted.
  var keepsData = false
  /// Each stream's DATA payloads, in order, while ``keepsData`` is set.
  private(set) var keptData: [Int32: [UInt8]] = [:]

  /// Connects to 127.0.0.1:`port` from `source` (another loopback address is another peer to the server)
  /// and queues the connection preface and SETTINGS, unless `handshake` is false (a client that sends nothing).
  init(port: Int, from source: String = "127.0.0.1", handshake: Bool = true, receiveBuffer: Int? = nil) throws {
    silent = !handshake
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RawClientError("socket: errno \(errno)") }
    if let receiveBuffer {
      var size = Int32(receiveBuffer)
      _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    local.sin_addr.s_addr = inet_addr(source)
    let bound = withUnsafePointer(to: &local) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else {
      close(fd)
      throw RawClientError("bind \(source): errno \(errno)")
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard rc == 0 else {
      close(fd)
      throw RawClientError("connect: errno \(errno)")
    }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    session = try HTTP2Session(role: .client, settings: HTTP2Settings(), delegate: self)
  }

  /// Whether this client never sends anything (not even the preface): a slowloris.
  private let silent: Bool

  deinit { close(fd) }

  /// Opens a gRPC request stream on `path` (HEADERS only, the stream left open); returns its ID.
  func openRequest(path: String, metadata: [HTTP2HeaderField] = []) throws -> Int32 {
    try session.submitRequest(
      headers: [
        HTTP2HeaderField(":method", "POST"), HTTP2HeaderField(":scheme", "http"),
        HTTP2HeaderField(":authority", "127.0.0.1"), HTTP2HeaderField(":path", path),
        HTTP2HeaderField("content-type", "application/grpc"), HTTP2HeaderField("te", "trailers"),
      ] + metadata, body: nil, endStream: false)
  }

  /// Queues `bytes` of DATA on `streamID`, with END_STREAM when `end`.
  func send(_ bytes: [UInt8], on streamID: Int32, end: Bool = false) throws {
    try bytes.withUnsafeBytes { try session.sendData(streamID: streamID, bytes: $0, endStream: end) }
  }

  /// Sends `bytes` on `streamID` as DATA frames of `frameSize` bytes each (the last may be shorter), the
  /// last with END_STREAM when `end`. Each piece is framed before the next is queued, so nghttp2 cannot
  /// join them: when the peer's window has no room for a piece, this pumps until it has.
  func send(_ bytes: [UInt8], on streamID: Int32, frameSize: Int, end: Bool = false) async throws {
    var offset = 0
    repeat {
      let upper = min(bytes.count, offset + frameSize)
      try bytes[offset..<upper].withUnsafeBytes {
        try session.sendData(streamID: streamID, bytes: $0, endStream: end && upper == bytes.count)
      }
      session.drainOutput(into: &outbound)
      if outbound.count > 256 << 10 { pump() }
      while session.outboundBufferedBytes(streamID: streamID) > 0 && !events.ended {
        pump()
        if session.outboundBufferedBytes(streamID: streamID) > 0 { try await Task.sleep(for: .milliseconds(1)) }
      }
      offset = upper
    } while offset < bytes.count
  }

  /// Resets `streamID` with CANCEL.
  func cancel(_ streamID: Int32) { session.resetStream(streamID, errorCode: .cancel) }

  /// Half-closes the connection (FIN): this side sends nothing more, and can still read.
  func shutdownWrites() {
    shutdown(fd, Int32(SHUT_WR))
  }

  /// Ends the connection from this side (the server reads its end).
  func disconnect() {
    shutdown(fd, Int32(SHUT_RDWR))
    events.ended = true
  }

  /// Sends what the session has queued, as far as the socket takes it, and reads nothing: a client that
  /// does not read.
  func pumpWritesOnly() {
    session.drainOutput(into: &outbound)
    while !outbound.isEmpty {
      let n = outbound.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      guard n > 0 else { return }
      outbound.removeFirst(n)
    }
  }

  /// Moves bytes both ways without blocking: everything the session has to send, then everything readable.
  func pump() {
    if !silent { session.drainOutput(into: &outbound) }
    while !outbound.isEmpty {
      let n = outbound.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      if n > 0 {
        outbound.removeFirst(n)
      } else {
        break  // EAGAIN (the server is not reading), or the connection is gone and the read below sees it
      }
    }
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while !events.ended {
      let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if n > 0 {
        events.bytesReceived += n
        do {
          try buffer.withUnsafeBytes { try session.receive(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        } catch {
          events.ended = true
        }
      } else if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        events.ended = true
      } else {
        break
      }
    }
  }

  /// Pumps until `condition` holds or `timeout` passes; returns whether it held.
  func pump(until condition: (RawClientEvents) -> Bool, timeout: Duration = .seconds(20)) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now.advanced(by: timeout)
    while true {
      pump()
      if condition(events) { return true }
      if clock.now >= end { return false }
      try? await Task.sleep(for: .milliseconds(5))
    }
  }

  /// The `grpc-status` the server answered `streamID` with, if it has.
  func grpcStatus(of streamID: Int32) -> Int? {
    for block in events.headers[streamID] ?? [] {
      if let value = block.first(where: { $0.name == "grpc-status" })?.value { return Int(value) }
    }
    return nil
  }

  /// The `grpc-message` the server answered `streamID` with, if any.
  func grpcMessage(of streamID: Int32) -> String? {
    for block in events.headers[streamID] ?? [] {
      if let value = block.first(where: { $0.name == "grpc-message" })?.value { return value }
    }
    return nil
  }

  // MARK: - HTTP2SessionDelegate

  func session(
    _ session: HTTP2Session, didReceiveHeaders headers: [HTTP2HeaderField], kind: HTTP2HeadersKind, streamID: Int32,
    endStream: Bool
  ) {
    events.headers[streamID, default: []].append(headers)
  }

  func session(_ session: HTTP2Session, didReceiveData data: UnsafeRawBufferPointer, streamID: Int32) {
    events.dataBytes[streamID, default: 0] += data.count
    if keepsData { keptData[streamID, default: []].append(contentsOf: data) }
    session.consume(streamID: streamID, bytes: data.count)
  }

  func session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: HTTP2ErrorCode) {
    events.closed[streamID] = errorCode
  }

  func session(
    _ session: HTTP2Session, didReceiveGoAway lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: [UInt8]
  ) {
    events.goAway = errorCode
  }

  func session(_ session: HTTP2Session, didReceiveSettings settings: HTTP2RemoteSettings) {
    events.settingsReceived = true
  }
}

struct RawClientError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// A gRPC message prefix: flag 0, then `length` big-endian.
func grpcPrefix(length: Int) -> [UInt8] {
  [0] + withUnsafeBytes(of: UInt32(truncatingIfNeeded: length).bigEndian) { Array($0) }
}
