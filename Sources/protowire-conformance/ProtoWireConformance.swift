// Sources/protowire-conformance/ProtoWireConformance.swift - the codec's conformance testee
//
// Reads frames from standard input until EOF, each a little-endian u32 length
// and that many bytes, decodes each as the message type named by --type and
// answers with one status byte (0 parsed, 1 rejected), a little-endian u32
// length, and the re-encoded message or a UTF-8 error text. The differential
// tests drive it from Python's protobuf runtime.
//
// With --json the answer to a frame is the message's proto3 JSON instead of its
// re-encoding (status 0), or status 1 with `refused: ` and the reason when the
// JSON mapping cannot represent a value in it (where Python's MessageToJson
// raises); --json-lenient answers the JSON printed regardless. --indent,
// --proto-names and --ascii set the JSON options.

import ArgumentParser
import FleetEngineMessages
import ProtoWire
import ToolSupport

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
    discussion: "Supported types: \(MessageCodecs.all.keys.sorted().joined(separator: ", ")). \(ToolExit.helpText)",
    version: toolVersion
  )

  static func main() async { await runAsTool() }

  @Option(name: .customLong("type"), help: "The fully qualified message name, e.g. maps.fleetengine.v1.Trip.")
  var typeName: String

  @Flag(name: .customLong("json"), help: "Answer with proto3 JSON; refuse what the mapping cannot represent.")
  var json = false

  @Flag(name: .customLong("json-lenient"), help: "Answer with proto3 JSON, printed even where --json refuses.")
  var jsonLenient = false

  @Option(name: .customLong("indent"), help: "JSON indentation; 0 prints one line.")
  var indent = 2

  @Flag(name: .customLong("proto-names"), help: "JSON member names as in the .proto file.")
  var protoNames = false

  @Flag(name: .customLong("ascii"), help: "Escape non-ASCII characters in JSON strings.")
  var ascii = false

  func validate() throws {
    guard MessageCodecs.all[typeName] != nil else {
      throw ValidationError(
        "unknown type \(typeName); supported: \(MessageCodecs.all.keys.sorted().joined(separator: ", "))")
    }
    if json && jsonLenient { throw ValidationError("--json and --json-lenient exclude each other") }
  }

  func run() throws {
    guard let codec = MessageCodecs.all[typeName] else { throw ExitCode(2) }
    let options = ProtoJSONOptions(preservingProtoFieldNames: protoNames, indent: indent, escapingNonASCII: ascii)
    let mode: MessageCodecs.Mode = json ? .json(options) : jsonLenient ? .lenientJSON(options) : .reencode
    var input = FrameInput(fd: 0)
    while let frame = try input.nextFrame() {
      switch codec(frame, mode) {
      case .success(let encoded):
        try writeReply(status: 0, payload: encoded)
      case .failure(let error):
        try writeReply(status: 1, payload: Array(error.utf8))
      }
    }
  }
}

/// Decode-then-answer functions keyed by fully qualified message name.
enum MessageCodecs {
  /// What a frame is answered with.
  enum Mode: Sendable {
    /// The re-encoded message.
    case reencode
    /// The proto3 JSON, or a refusal where the mapping cannot represent a value.
    case json(ProtoJSONOptions)
    /// The proto3 JSON, printed regardless.
    case lenientJSON(ProtoJSONOptions)
  }

  /// The answer to one frame: its payload, or the text of a decoding error or JSON refusal.
  typealias Codec = @Sendable ([UInt8], Mode) -> Result<[UInt8], CodecFailure>

  struct CodecFailure: Error {
    let utf8: [UInt8]
    init(_ text: String) { utf8 = Array(text.utf8) }
  }

  static func codec<M: ProtoJSONEncodable>(_: M.Type) -> (String, Codec) {
    (
      M.protoMessageName,
      { bytes, mode in
        let message: M
        do {
          message = try M(serializedBytes: bytes)
        } catch {
          return .failure(CodecFailure(String(describing: error)))
        }
        switch mode {
        case .reencode:
          return .success(message.serializedBytes())
        case .json(let options):
          do {
            return .success(Array(try message.validatedJSONString(options: options).utf8))
          } catch {
            return .failure(CodecFailure("refused: \(error)"))
          }
        case .lenientJSON(let options):
          return .success(Array(message.jsonString(options: options).utf8))
        }
      }
    )
  }

  /// Every message type of FleetEngineMessages.
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
      codec(VisualTrafficReportPolylineRendering.self),
      codec(VisualTrafficReportPolylineRendering.RoadStretch.self),
      codec(SpeedReadingInterval.self),
      codec(TerminalPointId.self),
      codec(VehicleAttribute.self),
      codec(TripAttribute.self),
      codec(Timestamp.self),
      codec(ProtobufDuration.self),
      codec(FieldMask.self),
      codec(LatLng.self),
      codec(DoubleValue.self),
      codec(FloatValue.self),
      codec(Int64Value.self),
      codec(UInt64Value.self),
      codec(Int32Value.self),
      codec(UInt32Value.self),
      codec(BoolValue.self),
      codec(StringValue.self),
      codec(BytesValue.self),
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
