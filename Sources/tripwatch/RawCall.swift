// Sources/tripwatch/RawCall.swift - `tripwatch raw-call`: grpcurl without reflection

import ArgumentParser
import GRPCProtocol
import HTTP2Transport
import Logging
import Synchronization
import ToolSupport

struct RawCall: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "raw-call",
    abstract: "Call a gRPC method with raw request bytes and print the responses as JSON lines.",
    discussion: """
      Prints one line {"message_hex":"…"} per response message, then one line per finished call:
      {"status":{"code":N,"name":"…","message":"…","domain":"io.grpc"},"headers":{…},"trailers":{…}}
      ("call":i is added when there are several). Exit 0 when every call ended OK, 1 when any
      other status came back, 2 for a usage error, 3 when the request file or TLS files cannot be used.
      """)

  @Argument(
    help:
      "The server, in gRPC's name syntax, as `follow --target` takes it: HOST:PORT, dns:///NAME:PORT, ipv4:ADDR:PORT,…."
  )
  var target: String

  @Argument(help: "The method, /package.Service/Method.")
  var method: String

  @Flag(help: "Use cleartext HTTP/2 (h2c) instead of TLS.")
  var plaintext = false

  @Option(name: .customLong("ca-file"), help: "Trust only the CA certificates in this PEM file.")
  var caFile: String?

  @Option(help: "The :authority (and TLS server name) to use.")
  var authority: String?

  @Option(name: .customLong("data-hex"), help: "The request message bytes, in hex (default: empty).")
  var dataHex = ""

  @Option(
    name: [.customShort("d"), .customLong("data")],
    help: "The request message bytes from a file: @FILE, or @- for standard input.")
  var data: String?

  @Flag(name: .customLong("server-streaming"), help: "The method streams responses.")
  var serverStreaming = false

  @Option(help: "The call's deadline in seconds.")
  var timeout: Double?

  @Option(name: .customShort("H"), help: "A request header, 'key: value' (repeatable).")
  var header: [String] = []

  @Option(help: "Make N calls, one after another on the same channel.")
  var `repeat` = 1

  @Option(help: "Keep K calls in flight at once.")
  var concurrency = 1

  func validate() throws {
    do {
      _ = try GRPCTarget(parsing: target)
    } catch {
      throw ValidationError(error.message)
    }
    guard GRPCRequestHead.isValidMethodPath(method) else {
      throw ValidationError("METHOD must look like /package.Service/Method")
    }
    guard bytes(fromHex: dataHex) != nil else { throw ValidationError("--data-hex is not hex") }
    if let data {
      guard data.hasPrefix("@"), data.count > 1 else {
        throw ValidationError("-d takes @FILE or @- (standard input); give inline bytes with --data-hex")
      }
      guard dataHex.isEmpty else { throw ValidationError("give -d or --data-hex, not both") }
    }
    guard `repeat` >= 1, concurrency >= 1 else { throw ValidationError("--repeat and --concurrency must be ≥ 1") }
    if let timeout, !(timeout > 0) { throw ValidationError("--timeout must be positive") }
    if plaintext && caFile != nil { throw ValidationError("--ca-file needs TLS; drop --plaintext") }
    _ = try metadata()
  }

  func metadata() throws -> GRPCMetadata {
    var metadata = GRPCMetadata()
    for entry in header {
      guard let colon = entry.firstIndex(of: ":") else { throw ValidationError("-H needs 'key: value': \(entry)") }
      let name = entry[..<colon].trimmingSpaces().lowercased()
      let value = String(entry[entry.index(after: colon)...].trimmingSpaces())
      guard GRPCMetadata.isValidName(name), !GRPCMetadata.isReserved(name) else {
        throw ValidationError("-H: invalid or reserved header name \(name)")
      }
      if name.hasSuffix("-bin") {
        guard let raw = bytes(fromHex: value) else { throw ValidationError("-H \(name): give -bin values in hex") }
        metadata.add(name, binary: raw)
      } else {
        guard GRPCMetadata.isValidASCIIValue(value) else {
          throw ValidationError("-H \(name): value must be printable ASCII")
        }
        metadata.add(name, value)
      }
    }
    return metadata
  }

  func run() async throws {
    var tls = TLSConfiguration()
    if let caFile { tls.trustRoots = .caFile(caFile) }
    tls.serverNameOverride = authority
    let configuration = GRPCChannelConfiguration(
      security: plaintext ? .plaintext : .tls(tls), authority: authority)
    let channel: GRPCChannel
    do {
      channel = try GRPCChannel(
        target: target, configuration: configuration, logger: Logger(label: "journeysharing.grpc"))
    } catch {
      throw ToolFailure(.invalidInput, error.message)
    }
    var options = CallOptions()
    options.metadata = try metadata()
    if let timeout { options.timeout = .nanoseconds(Int64(timeout * 1e9)) }
    let request: [UInt8]
    if let data {
      let path = String(data.dropFirst())
      guard let contents = readBytes(path: path) else {
        throw ToolFailure(.invalidInput, "cannot read the request from \(path == "-" ? "standard input" : path)")
      }
      request = contents
    } else {
      request = bytes(fromHex: dataHex) ?? []
    }
    let several = `repeat` > 1
    let allOK = Atomic<Bool>(true)

    let total = `repeat`
    let callOptions = options
    let streaming = serverStreaming
    let method = method
    let inFlight = min(concurrency, total)
    await withTaskGroup(of: Bool.self) { group in
      for index in 0..<inFlight {
        group.addTask {
          await Self.call(
            channel: channel, method: method, request: request, streaming: streaming, options: callOptions,
            callIndex: several ? index : nil)
        }
      }
      var next = inFlight
      while let ok = await group.next() {
        if !ok { allOK.store(false, ordering: .relaxed) }
        if next < total {
          let index = next
          group.addTask {
            await Self.call(
              channel: channel, method: method, request: request, streaming: streaming, options: callOptions,
              callIndex: several ? index : nil)
          }
          next += 1
        }
      }
    }
    await channel.shutdown()
    if !allOK.load(ordering: .relaxed) { throw ExitCode(1) }
  }

  /// Makes one call and prints its lines; returns whether it ended OK.
  static func call(
    channel: GRPCChannel, method: String, request: [UInt8], streaming: Bool, options: CallOptions, callIndex: Int?
  ) async -> Bool {
    let result: GRPCCallResult
    if streaming {
      let stream = channel.serverStreaming(path: method, request: request, options: options)
      do {
        for try await message in stream { printMessage(message, callIndex: callIndex) }
      } catch {
        // The status line below reports it.
      }
      result = await stream.result()
    } else {
      do {
        let response = try await channel.unary(path: method, request: request, options: options)
        printMessage(response.message, callIndex: callIndex)
        result = GRPCCallResult(status: .ok, headers: response.headers, trailers: response.trailers)
      } catch {
        result = GRPCCallResult(status: error.status, headers: GRPCMetadata(), trailers: error.trailers)
      }
    }
    var members: [(String, JSONValue)] = []
    if let callIndex { members.append(("call", .int(callIndex))) }
    members.append(
      (
        "status",
        .object([
          ("code", .int(result.status.code.rawValue)),
          ("name", .string(result.status.code.name)),
          ("message", .string(result.status.message)),
          ("domain", .string(GRPCError.errorDomain)),
        ])
      ))
    members.append(("headers", metadataJSON(result.headers)))
    members.append(("trailers", metadataJSON(result.trailers)))
    print(JSONValue.object(members).rendered)
    return result.status.code == .ok
  }

  static func printMessage(_ message: [UInt8], callIndex: Int?) {
    var members: [(String, JSONValue)] = []
    if let callIndex { members.append(("call", .int(callIndex))) }
    members.append(("message_hex", .string(hexString(message))))
    print(JSONValue.object(members).rendered)
  }

  /// Metadata as a JSON object; repeated keys are joined with ", " as HTTP does;
  /// binary values appear in base64 as on the wire.
  static func metadataJSON(_ metadata: GRPCMetadata) -> JSONValue {
    var order: [String] = []
    var values: [String: [String]] = [:]
    for field in metadata.headerFields {
      if values[field.name] == nil { order.append(field.name) }
      values[field.name, default: []].append(field.value)
    }
    return .object(order.map { ($0, .string(values[$0]!.joined(separator: ", "))) })
  }
}

extension Substring {
  func trimmingSpaces() -> Substring {
    var s = self
    while s.first == " " || s.first == "\t" { s = s.dropFirst() }
    while s.last == " " || s.last == "\t" { s = s.dropLast() }
    return s
  }
}
