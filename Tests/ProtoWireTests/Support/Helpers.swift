// Tests/ProtoWireTests/Support/Helpers.swift - reading and writing raw bytes in tests

import ProtoWire

/// Runs `body` with a reader over `bytes` (no size-limit check: that is `WireReader.withReader`'s).
func withReader<R>(
  _ bytes: [UInt8],
  options: WireDecodingOptions = .init(),
  _ body: (inout WireReader) throws -> R
) rethrows -> R {
  try bytes.withUnsafeBytes { raw in
    var reader = WireReader(raw, options: options)
    return try body(&reader)
  }
}

/// Reads one raw varint from `bytes`, and how many bytes it took.
func readVarint(_ bytes: [UInt8]) throws(WireDecodingError) -> (value: UInt64, length: Int) {
  try WireReader.withReader(over: bytes) { (reader) throws(WireDecodingError) in
    let value = try reader.readRawVarint()
    return (value, reader.offset)
  }
}

/// What `body` writes, given room for `capacity` bytes.
func written(capacity: Int = 4096, _ body: (inout WireWriter) -> Void) -> [UInt8] {
  var storage = [UInt8](repeating: 0xEE, count: capacity)
  let count = storage.withUnsafeMutableBytes { raw in
    var writer = WireWriter(raw)
    body(&writer)
    return writer.written
  }
  return Array(storage.prefix(count))
}

/// The varint encoding of `value`.
func varint(_ value: UInt64) -> [UInt8] {
  written { $0.writeRawVarint(value) }
}

/// The nesting `Node.chain(depth:)` produces, built byte by byte (tag 0x12 = field 2,
/// length-delimited), and the offset of each level's tag in it.
func nestedNodeBytes(depth: Int, innermost: [UInt8] = []) -> (bytes: [UInt8], tagOffsets: [Int]) {
  var payload = innermost
  var headerSizes: [Int] = []
  for _ in 0..<depth {
    let header = [0x12] + varint(UInt64(payload.count))
    headerSizes.append(header.count)
    payload = header + payload
  }
  // The outermost header was added last; offsets run from the outside in.
  var offsets: [Int] = []
  var offset = 0
  for size in headerSizes.reversed() {
    offsets.append(offset)
    offset += size
  }
  return (payload, offsets)
}
