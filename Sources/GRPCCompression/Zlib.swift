// Sources/GRPCCompression/Zlib.swift - gzip and zlib streams through the system zlib, inflated within a limit
//
// gRPC compresses each message on its own (compression.md), so both directions
// work on one whole buffer at a time: a z_stream is made, used once and freed.
// Inflating is the dangerous direction: a few kilobytes of a zip bomb expand to
// gigabytes. The output buffer therefore grows step by step and never beyond
// `limit + 1` bytes; the byte past the limit is how "larger than the limit" is
// told apart from "exactly the limit", so the decision is made while inflating
// and the rest of the input is never expanded.

internal import CZlib

/// The wrapper around the deflate data.
public enum ZlibFormat: Sendable, Hashable {
  /// RFC 1952 gzip: gRPC's `gzip` encoding.
  case gzip
  /// RFC 1950 zlib: gRPC's `deflate` encoding, as grpc-core and grpc-java write it.
  case zlib

  /// zlib's `windowBits` for this wrapper with a 32 KiB window.
  var windowBits: Int32 {
    switch self {
    case .gzip: 15 + 16
    case .zlib: 15
    }
  }
}

/// Why compressing or decompressing failed.
public enum ZlibError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The decompressed data would be longer than `limit` bytes; inflating stopped there.
  case outputLimitExceeded(limit: Int)
  /// The input is not valid data of the format: a bad header or checksum, a truncated
  /// stream, or bytes after its end. The associated text says which.
  case corrupt(String)
  /// zlib could not run (out of memory, or an input beyond 4 GiB).
  case failed(String)

  public var description: String {
    switch self {
    case .outputLimitExceeded(let limit): "decompressed data exceeds the limit of \(limit) bytes"
    case .corrupt(let reason): "corrupt compressed data: \(reason)"
    case .failed(let reason): "zlib failed: \(reason)"
    }
  }
}

/// One-shot deflate and bounded inflate of whole buffers.
public enum Zlib {
  /// Compresses `input` into `output` (replacing its contents) at zlib's default level.
  ///
  /// - Throws: ``ZlibError/failed(_:)`` when zlib cannot allocate its state or the
  ///   input is longer than 4 GiB - 1 bytes.
  public static func compress(
    _ input: UnsafeRawBufferPointer, format: ZlibFormat, into output: inout [UInt8]
  ) throws(ZlibError) {
    guard input.count <= Int(UInt32.max) else { throw .failed("input of \(input.count) bytes is too long") }
    let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    // A heap z_stream: zlib keeps a pointer back to it and refuses a stream that moved.
    stream.initialize(to: z_stream())
    defer {
      stream.deinitialize(count: 1)
      stream.deallocate()
    }
    guard js_deflateInit2(stream, Z_DEFAULT_COMPRESSION, format.windowBits) == Z_OK else {
      throw .failed("deflateInit2 could not start")
    }
    defer { deflateEnd(stream) }
    // deflateBound is enough room for the whole output of one Z_FINISH call.
    let bound = Int(deflateBound(stream, UInt(input.count)))
    output = [UInt8](repeating: 0, count: bound)
    // Safe: zlib reads `avail_in` bytes from `next_in` and never writes through it.
    stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
    stream.pointee.avail_in = UInt32(input.count)
    let (rc, written) = output.withUnsafeMutableBytes { buffer -> (Int32, Int) in
      stream.pointee.next_out = buffer.baseAddress?.assumingMemoryBound(to: Bytef.self)
      stream.pointee.avail_out = UInt32(buffer.count)
      let rc = deflate(stream, Z_FINISH)
      return (rc, buffer.count - Int(stream.pointee.avail_out))
    }
    guard rc == Z_STREAM_END else { throw .failed("deflate returned \(rc)") }
    output.removeLast(output.count - written)
  }

  /// Decompresses `input` into `output` (replacing its contents), refusing to produce more
  /// than `limit` bytes.
  ///
  /// The output grows in steps as inflating proceeds and is never larger than `limit + 1`
  /// bytes, so a small input that expands enormously costs at most `limit` bytes of memory
  /// and the time to produce them.
  ///
  /// - Throws: ``ZlibError/outputLimitExceeded(limit:)`` when the data expands beyond `limit`;
  ///   ``ZlibError/corrupt(_:)`` for input that is not one complete stream of `format` (bad
  ///   header or checksum, truncated, or followed by more bytes); ``ZlibError/failed(_:)`` when
  ///   zlib cannot run.
  public static func decompress(
    _ input: UnsafeRawBufferPointer, format: ZlibFormat, limit: Int, into output: inout [UInt8]
  ) throws(ZlibError) {
    precondition(limit >= 0, "limit must not be negative")
    output.removeAll(keepingCapacity: true)
    guard input.count <= Int(UInt32.max) else { throw .failed("input of \(input.count) bytes is too long") }
    let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    stream.initialize(to: z_stream())
    defer {
      stream.deinitialize(count: 1)
      stream.deallocate()
    }
    guard js_inflateInit2(stream, format.windowBits) == Z_OK else { throw .failed("inflateInit2 could not start") }
    defer { inflateEnd(stream) }
    stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
    stream.pointee.avail_in = UInt32(input.count)

    // The most the output may ever hold: one byte more than allowed, to see the excess.
    let ceiling = limit &+ 1
    var produced = 0
    while true {
      if produced == output.count {
        // Full: grow geometrically from a guess, but never past the ceiling.
        guard output.count < ceiling else { throw .outputLimitExceeded(limit: limit) }
        let step = max(output.count, min(max(input.count * 4, 4096), 1 << 20))
        output.append(contentsOf: repeatElement(0, count: min(step, ceiling - output.count)))
      }
      let rc = output.withUnsafeMutableBytes { buffer -> Int32 in
        // Safe: `produced < buffer.count`, so the output window lies inside the buffer.
        stream.pointee.next_out = buffer.baseAddress?.assumingMemoryBound(to: Bytef.self).advanced(by: produced)
        stream.pointee.avail_out = UInt32(buffer.count - produced)
        let rc = inflate(stream, Z_NO_FLUSH)
        produced = buffer.count - Int(stream.pointee.avail_out)
        return rc
      }
      if produced > limit { throw .outputLimitExceeded(limit: limit) }
      switch rc {
      case Z_STREAM_END:
        guard stream.pointee.avail_in == 0 else {
          throw .corrupt("\(stream.pointee.avail_in) bytes follow the end of the compressed data")
        }
        output.removeLast(output.count - produced)
        return
      case Z_OK:
        continue
      case Z_BUF_ERROR:
        // No progress was possible: out of output room (grow and go on) or out of input (truncated).
        guard stream.pointee.avail_in == 0 else { continue }
        throw .corrupt("the compressed data ends before its end marker (truncated)")
      case Z_DATA_ERROR, Z_NEED_DICT:
        throw .corrupt(Self.message(stream) ?? "invalid data")
      case Z_MEM_ERROR:
        throw .failed("out of memory")
      default:
        throw .failed("inflate returned \(rc)")
      }
    }
  }

  /// zlib's own description of the last error, if it left one.
  private static func message(_ stream: UnsafeMutablePointer<z_stream>) -> String? {
    // Safe: `msg` is null or a static NUL-terminated string owned by zlib.
    stream.pointee.msg.map { String(cString: $0) }
  }
}
