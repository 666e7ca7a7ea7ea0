// Sources/ToolSupport/ToolIO.swift - standard error, files and the version, without Foundation

import Primitives

#if canImport(Glibc)
  import Glibc
#endif

/// The version every tool prints for `--version`: the package's release.
package let toolVersion = JourneySharingRelease.version

/// Writes to standard error, unbuffered.
package enum StandardError {
  /// Writes `text` as it is (add the newline yourself).
  package static func write(_ text: String) {
    var text = text
    text.withUTF8 { buffer in
      var offset = 0
      while offset < buffer.count {
        let written = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
        if written <= 0 { return }
        offset += written
      }
    }
  }
}

/// The bytes of the file at `path` (`-` reads standard input), or nil when it cannot be read.
package func readBytes(path: String) -> [UInt8]? {
  let file: UnsafeMutablePointer<FILE>?
  if path == "-" {
    file = fdopen(dup(0), "rb")
  } else {
    file = fopen(path, "rb")
  }
  guard let file else { return nil }
  defer { fclose(file) }
  var bytes: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 64 << 10)
  while true {
    let count = fread(&buffer, 1, buffer.count, file)
    if count <= 0 { break }
    bytes.append(contentsOf: buffer[0..<count])
  }
  return ferror(file) == 0 ? bytes : nil
}

/// The text of the file at `path` (`-`: standard input), or nil when it cannot be read.
package func readText(path: String) -> String? {
  readBytes(path: path).map { String(decoding: $0, as: UTF8.self) }
}

/// The bytes of a small file holding a key, a token, a secret or a certificate (``CredentialFile``): a regular
/// file (not a FIFO, a device such as /dev/zero, or a directory) of at most `maxBytes`, read against a deadline,
/// so that a wrong path can neither hang the tool nor fill its memory. Throws ``ToolFailure`` (invalid input)
/// naming `option` and the path, never the contents.
package func readCredentialFile(_ path: String, option: String, maxBytes: Int = CredentialFile.defaultMaxBytes)
  throws(ToolFailure) -> [UInt8]
{
  do {
    return try CredentialFile.read(path, what: option, maxBytes: maxBytes)
  } catch {
    throw ToolFailure(.invalidInput, error.description)
  }
}

/// ``readCredentialFile(_:option:maxBytes:)`` as text without surrounding whitespace; empty is refused.
package func readCredentialText(_ path: String, option: String) throws(ToolFailure) -> String {
  let text = String(decoding: try readCredentialFile(path, option: option), as: UTF8.self)
  let trimmed = String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
  guard !trimmed.isEmpty else { throw ToolFailure(.invalidInput, "\(option) \(path) is empty") }
  return trimmed
}
