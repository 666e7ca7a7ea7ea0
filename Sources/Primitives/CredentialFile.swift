// Sources/Primitives/CredentialFile.swift - reading a key, token, secret or certificate file without trusting it
//
// A path to a secret comes from a flag or a configuration, and a wrong one must fail fast and clearly: a FIFO
// would block the reader for ever, /dev/zero would fill its memory, a 300 MB file would take seconds. A
// credential file must be a regular file under a size cap (64 KiB is plenty for a key or a token; a CA
// bundle gets 1 MiB), is opened without blocking, and is read against a deadline (a regular file cannot
// block, but one on a network file system can stall). The error names the file, never its contents.

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Why a credential file could not be read; its description names the file and the problem, never the contents.
package struct CredentialFileError: Error, Sendable, Hashable, CustomStringConvertible {
  package let description: String
  package init(_ description: String) { self.description = description }
}

/// Reads and checks credential files (see the file comment).
package enum CredentialFile {
  /// The cap on a key, token, secret or certificate file.
  package static let defaultMaxBytes = 64 << 10
  /// The cap on a bundle of CA certificates (Debian's whole trust store is about 200 KiB).
  package static let caBundleMaxBytes = 1 << 20
  /// How long a read may take.
  package static let readTimeout: Duration = .seconds(5)

  /// The bytes of the file at `path`, `what` naming it in errors (for example `--token-file`).
  package static func read(
    _ path: String, what: String, maxBytes: Int = defaultMaxBytes, timeout: Duration = readTimeout
  ) throws(CredentialFileError) -> [UInt8] {
    // Checked before opening, so that a device is not even opened (opening some has effects), and again on
    // the descriptor, in case the path changed in between.
    try check(path, what: what, maxBytes: maxBytes)
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
    guard fd >= 0 else { throw CredentialFileError("cannot open \(what) \(path): \(describe(errno))") }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw CredentialFileError("cannot read \(what) \(path): \(describe(errno))") }
    try checkKind(info, path: path, what: what, maxBytes: maxBytes)
    let deadline = monotonicNanoseconds() &+ timeout.nonNegativeNanoseconds
    // Read to the end, whatever the size said: a file that grew since is read whole or refused, never cut.
    var bytes = [UInt8](repeating: 0, count: min(maxBytes, max(Int(info.st_size), 4096)) + 1)
    var count = 0
    while true {
      if count == bytes.count {
        guard count <= maxBytes else { break }
        bytes += [UInt8](repeating: 0, count: min(bytes.count, maxBytes + 1 - bytes.count))
      }
      let read = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
      if read == 0 { break }
      if read < 0 {
        guard errno == EINTR || errno == EAGAIN else {
          throw CredentialFileError("cannot read \(what) \(path): \(describe(errno))")
        }
      } else {
        count += read
      }
      guard monotonicNanoseconds() < deadline else {
        throw CredentialFileError("reading \(what) \(path) took longer than \(timeout)")
      }
    }
    guard count <= maxBytes else { throw CredentialFileError("\(what) \(path) is larger than \(maxBytes) bytes") }
    return Array(bytes[0..<count])
  }

  /// Checks that `path` is a regular file of at most `maxBytes`, for a reader (OpenSSL's) that opens it itself.
  package static func check(_ path: String, what: String, maxBytes: Int = defaultMaxBytes)
    throws(CredentialFileError)
  {
    var info = stat()
    guard stat(path, &info) == 0 else { throw CredentialFileError("cannot read \(what) \(path): \(describe(errno))") }
    try checkKind(info, path: path, what: what, maxBytes: maxBytes)
  }

  private static func checkKind(_ info: stat, path: String, what: String, maxBytes: Int) throws(CredentialFileError) {
    guard info.st_mode & S_IFMT == S_IFREG else {
      throw CredentialFileError("\(what) \(path) is not a regular file (a FIFO, a device or a directory)")
    }
    guard info.st_size <= maxBytes else {
      throw CredentialFileError("\(what) \(path) is larger than \(maxBytes) bytes")
    }
  }

  private static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}
