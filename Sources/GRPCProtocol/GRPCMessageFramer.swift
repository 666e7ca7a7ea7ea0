// Sources/GRPCProtocol/GRPCMessageFramer.swift - the 5-byte length prefix on outgoing messages

/// Writes gRPC's length-prefixed message framing: one Compressed-Flag byte (1 when the
/// bytes are encoded with the call's `grpc-encoding`, else 0), a 4-byte big-endian
/// length, then the message bytes.
public enum GRPCMessageFramer {
  /// The size of the prefix in front of every message.
  public static let prefixSize = 5

  /// Appends `message`, framed, to `buffer`; `compressed` sets the Compressed-Flag.
  ///
  /// - Precondition: `message` is shorter than 4 GiB, the most the prefix can describe.
  public static func frame(_ message: UnsafeRawBufferPointer, compressed: Bool = false, into buffer: inout [UInt8]) {
    precondition(message.count <= Int(UInt32.max), "a gRPC message cannot exceed 4 GiB - 1 bytes")
    let length = UInt32(truncatingIfNeeded: message.count)
    buffer.reserveCapacity(buffer.count + prefixSize + message.count)
    buffer.append(compressed ? 1 : 0)
    buffer.append(UInt8(truncatingIfNeeded: length >> 24))
    buffer.append(UInt8(truncatingIfNeeded: length >> 16))
    buffer.append(UInt8(truncatingIfNeeded: length >> 8))
    buffer.append(UInt8(truncatingIfNeeded: length))
    buffer.append(contentsOf: message)
  }

  /// `message` with the prefix in front of it, as a new array.
  public static func framed(_ message: [UInt8]) -> [UInt8] {
    var buffer: [UInt8] = []
    message.withUnsafeBytes { frame($0, into: &buffer) }
    return buffer
  }

  /// `message` encoded with `algorithm` and framed: compressed with the Compressed-Flag set,
  /// unless `algorithm` is identity, which frames it as it is.
  ///
  /// - Throws: ``GRPCError`` with INTERNAL when compressing fails.
  public static func framed(
    _ message: [UInt8], compressedWith algorithm: GRPCCompressionAlgorithm
  ) throws(GRPCError) -> [UInt8] {
    guard algorithm != .identity else { return framed(message) }
    let compressed = try message.withUnsafeBytes { bytes in
      Result { () throws(GRPCError) in try GRPCMessageCompression.compress(bytes, with: algorithm) }
    }.get()
    var buffer: [UInt8] = []
    compressed.withUnsafeBytes { frame($0, compressed: true, into: &buffer) }
    return buffer
  }
}
