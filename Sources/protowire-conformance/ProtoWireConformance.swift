// Sources/protowire-conformance/ProtoWireConformance.swift - the codec's conformance testee
//
// Reads frames from standard input until EOF, each a little-endian u32 length
// and that many bytes, decodes each as the message type named by --type and
// answers with one status byte (0 parsed, 1 rejected), a little-endian u32
// length, and the re-encoded message or a UTF-8 error text. The differential
// tests drive it from Python's protobuf runtime.

import ArgumentParser
import FleetEngineMessages
import ProtoWire

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

@main
struct ProtoWireConformance: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "protowire-conformance",
    abstract: "Decode and re-encode length-prefixed protobuf frames read from stdin.",
    discussion: "Supported types: \(MessageCodecs.all.keys.sorted().joined(separator: ", "))"
  )

  @Option(name: .customLong("type"), help: "The fully qualified message name, e.g. maps.fleetengine.v1.Trip.")
  var typeName: String

  func validate() throws {
    guard MessageCodecs.all[typeName] != nil else {
      throw ValidationError(
        "unknown type \(typeName); supported: \(MessageCodecs.all.keys.sorted().joined(separator: ", "))")
    }
  }

  func run() throws {
    guard let codec = MessageCodecs.all[typeName] else { throw ExitCode(2) }
    var input = FrameInput(fd: 0)
    while let frame = try input.nextFrame() {
      switch codec(frame) {
      case .success(let encoded):
        try writeReply(status: 0, payload: encoded)
      case .failure(let error):
        try writeReply(status: 1, payload: Array(String(describing: error).utf8))
      }
    }
  }
}

/// Decode-then-encode functions keyed by fully qualified message name.
enum MessageCodecs {
  typealias Codec = @Sendable ([UInt8]) -> Result<[UInt8], WireDecodingError>

  static func codec<M: ProtoMessage>(_: M.Type) -> (String, Codec) {
    (
      M.protoMessageName,
      { bytes in
        Result { () throws(WireDecodingError) -> [UInt8] in try M(serializedBytes: bytes).serializedBytes() }
      }
    )
  }

  static let all: [String: Codec] = Dictionary(
    uniqueKeysWithValues: [
      codec(Trip.self),
      codec(VehicleLocation.self),
      codec(TripWaypoint.self),
      codec(GetTripRequest.self),
      codec(TerminalLocation.self),
      codec(ConsumableTrafficPolyline.self),
      codec(TripUpdate.self),
      codec(StreamTripRequest.self),
      codec(RequestHeader.self),
      codec(StopLocation.self),
      codec(TrafficPolylineData.self),
    ])
}

/// Reads length-prefixed frames from a file descriptor.
struct FrameInput {
  let fd: Int32

  /// Reads exactly `count` bytes; `nil` on EOF before the first byte.
  mutating func readExactly(count: Int) throws -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
      let n = buffer.withUnsafeMutableBytes { raw in
        read(fd, raw.baseAddress! + filled, count - filled)
      }
      if n < 0 {
        if errno == EINTR { continue }
        throw ValidationError("read failed: errno \(errno)")
      }
      if n == 0 {
        if filled == 0 { return nil }
        throw ValidationError("input ended inside a frame (\(filled) of \(count) bytes)")
      }
      filled += n
    }
    return buffer
  }

  mutating func nextFrame() throws -> [UInt8]? {
    guard let header = try readExactly(count: 4) else { return nil }
    let length = Int(header[0]) | Int(header[1]) << 8 | Int(header[2]) << 16 | Int(header[3]) << 24
    if length == 0 { return [] }
    guard let body = try readExactly(count: length) else {
      throw ValidationError("input ended before a frame of \(length) bytes")
    }
    return body
  }
}

/// Writes one reply (status, length, payload) to stdout and flushes it.
func writeReply(status: UInt8, payload: [UInt8]) throws {
  let length = UInt32(payload.count)
  var reply: [UInt8] = [status]
  reply.reserveCapacity(payload.count + 5)
  for shift in stride(from: 0, to: 32, by: 8) { reply.append(UInt8(truncatingIfNeeded: length >> UInt32(shift))) }
  reply.append(contentsOf: payload)
  var written = 0
  while written < reply.count {
    let n = reply.withUnsafeBytes { raw in write(1, raw.baseAddress! + written, reply.count - written) }
    if n < 0 {
      if errno == EINTR { continue }
      throw ValidationError("write failed: errno \(errno)")
    }
    written += n
  }
}
