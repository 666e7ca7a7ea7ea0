// Sources/GRPCProtocol/GRPCMessageFramer.swift - the 5-byte length prefix on outgoing messages

/// Writes gRPC's length-prefixed message framing:
/// one Compressed-Flag byte (always 0: this library sends no compressed
/// messages, so it never declares a `grpc-encoding`), a 4-byte big-endian
/// length, then the message bytes.
public enum GRPCMessageFramer {
  /// The size of the prefix in front of every message.
  public static let prefixSize = 5

  /// Appends `message`, framed, to `buffer`.
  ///
  /// - Precondition: `message` is shorter than 4 GiB, the most the prefix can describe.
  public static func frame(_ message: UnsafeRawBufferPointer, into buffer: inout [UInt8]) {
    precondition(message.count <= Int(UInt32.max), "a gRPC message cannot exceed 4 GiB - 1 bytes")
    let length = UInt32(truncatingIfNeeded: message.count)
    buffer.reserveCapacity(buffer.count + prefixSize + message.count)
    buffer.append(0)
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
}
