// Sources/GRPCProtocol/GRPCCompression.swift - message encodings: names, negotiation headers, compress and decompress
//
// gRPC compresses message by message (compression.md): the request or response
// headers name the encoding (`grpc-encoding`), each message's Compressed-Flag
// says whether that message used it, and `grpc-accept-encoding` lists what a
// peer can decode. The codecs are zlib's, behind the GRPCCompression module;
// this file maps them to gRPC names and statuses.

internal import GRPCCompression

/// A message encoding of gRPC's: `identity` (none), `gzip` or `deflate`.
///
/// A struct rather than an enum so that encodings can be added without breaking
/// exhaustive switches in callers.
public struct GRPCCompressionAlgorithm: Sendable, Hashable, CustomStringConvertible {
  private enum Value: Sendable, Hashable {
    case identity, gzip, deflate
  }
  private let value: Value

  /// No compression. Sending it as the call's encoding is the same as sending none.
  public static let identity = GRPCCompressionAlgorithm(value: .identity)
  /// gzip (RFC 1952) through zlib.
  public static let gzip = GRPCCompressionAlgorithm(value: .gzip)
  /// deflate in the zlib wrapper (RFC 1950) through zlib, as grpc-core and grpc-java encode `deflate`.
  public static let deflate = GRPCCompressionAlgorithm(value: .deflate)

  /// Every encoding this library can encode and decode, identity included.
  public static let all: [GRPCCompressionAlgorithm] = [.identity, .gzip, .deflate]

  /// The name used in `grpc-encoding` and `grpc-accept-encoding`.
  public var name: String {
    switch value {
    case .identity: "identity"
    case .gzip: "gzip"
    case .deflate: "deflate"
    }
  }

  public var description: String { name }

  /// The encoding called `name` (compared case-insensitively, surrounding spaces ignored), or
  /// `nil` for one this library does not know.
  public init?(name: some StringProtocol) {
    var trimmed = Substring(name)
    while trimmed.first == " " || trimmed.first == "\t" { trimmed = trimmed.dropFirst() }
    while trimmed.last == " " || trimmed.last == "\t" { trimmed = trimmed.dropLast() }
    switch trimmed.lowercased() {
    case "identity": self = .identity
    case "gzip": self = .gzip
    case "deflate": self = .deflate
    default: return nil
    }
  }

  private init(value: Value) { self.value = value }

  /// The zlib wrapper, or `nil` for identity.
  var zlibFormat: ZlibFormat? {
    switch value {
    case .identity: nil
    case .gzip: .gzip
    case .deflate: .zlib
    }
  }

  /// A `grpc-accept-encoding` value listing `algorithms` in order, identity first when absent
  /// (a peer may always send uncompressed messages), duplicates dropped: `"identity,gzip,deflate"`.
  public static func acceptEncodingHeader(_ algorithms: [GRPCCompressionAlgorithm]) -> String {
    var names = ["identity"]
    for algorithm in algorithms where !names.contains(algorithm.name) { names.append(algorithm.name) }
    return names.joined(separator: ",")
  }

  /// The names in a `grpc-accept-encoding` value, lowercased, unknown ones included.
  public static func parseAcceptEncoding(_ value: String) -> [String] {
    value.split(separator: ",").map { piece in
      var name = Substring(piece)
      while name.first == " " || name.first == "\t" { name = name.dropFirst() }
      while name.last == " " || name.last == "\t" { name = name.dropLast() }
      return name.lowercased()
    }.filter { !$0.isEmpty }
  }
}

/// Compressing and decompressing one message body.
public enum GRPCMessageCompression {
  /// `message` compressed with `algorithm` (returned unchanged for identity).
  ///
  /// - Throws: ``GRPCError`` with INTERNAL when zlib cannot run (out of memory, or a
  ///   message beyond 4 GiB).
  public static func compress(
    _ message: UnsafeRawBufferPointer, with algorithm: GRPCCompressionAlgorithm
  ) throws(GRPCError) -> [UInt8] {
    guard let format = algorithm.zlibFormat else { return [UInt8](message) }
    var output: [UInt8] = []
    do {
      try Zlib.compress(message, format: format, into: &output)
    } catch {
      throw GRPCError(code: .internalError, message: "compressing a message with \(algorithm.name): \(error)")
    }
    return output
  }

  /// `bytes` decompressed with `algorithm`, refusing to produce more than `limit` bytes.
  ///
  /// The limit is enforced while inflating: the output never grows past `limit + 1`
  /// bytes, so a message that expands enormously costs no more than the limit.
  ///
  /// - Throws: ``GRPCError`` with RESOURCE_EXHAUSTED when the message expands beyond
  ///   `limit`; INTERNAL when it does not decompress (compression.md: a body that will
  ///   not decompress is INTERNAL).
  public static func decompress(
    _ bytes: UnsafeRawBufferPointer, with algorithm: GRPCCompressionAlgorithm, limit: Int
  ) throws(GRPCError) -> [UInt8] {
    guard let format = algorithm.zlibFormat else {
      guard bytes.count <= limit else { throw exceeded(limit) }
      return [UInt8](bytes)
    }
    var output: [UInt8] = []
    do {
      try Zlib.decompress(bytes, format: format, limit: limit, into: &output)
    } catch .outputLimitExceeded {
      throw exceeded(limit)
    } catch {
      throw GRPCError(code: .internalError, message: "\(algorithm.name) message does not decompress: \(error)")
    }
    return output
  }

  private static func exceeded(_ limit: Int) -> GRPCError {
    GRPCError(
      code: .resourceExhausted, message: "decompressed message exceeds the limit of \(limit) bytes")
  }
}
