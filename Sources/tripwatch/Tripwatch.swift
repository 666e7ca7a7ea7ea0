// Sources/tripwatch/Tripwatch.swift - the tripwatch command line

import ArgumentParser
import CLinuxSystem

#if canImport(Glibc)
  import Glibc
#endif

@main
struct Tripwatch: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "tripwatch",
    abstract: "Follow ride-sharing trips over gRPC, or make raw gRPC calls.",
    subcommands: [Demo.self, Follow.self, RawCall.self]
  )

  /// Usage errors exit 2 (like grpcurl and most Unix tools), not ArgumentParser's 64.
  static func main() async {
    do {
      var command = try parseAsRoot()
      if var asyncCommand = command as? any AsyncParsableCommand {
        try await asyncCommand.run()
      } else {
        try command.run()
      }
    } catch let exit as ExitCode {
      Glibc.exit(exit.rawValue)
    } catch {
      let code = exitCode(for: error)
      if code == .validationFailure || code.rawValue == 64 {
        FileHandleStderr.write(fullMessage(for: error) + "\n")
        Glibc.exit(2)
      }
      self.exit(withError: error)
    }
  }
}

/// Writes to standard error without Foundation.
enum FileHandleStderr {
  static func write(_ text: String) {
    var text = text
    text.withUTF8 { buffer in _ = Glibc.write(2, buffer.baseAddress, buffer.count) }
  }
}

/// `HOST:PORT`, `[IPv6]:PORT`, or `HOST` (port 443).
struct Target {
  var host: String
  var port: Int

  init(parsing text: String) throws {
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]") else { throw ValidationError("bad target \(text)") }
      host = String(text[text.index(after: text.startIndex)..<close])
      let rest = text[text.index(after: close)...]
      if rest.isEmpty {
        port = 443
      } else {
        guard rest.hasPrefix(":"), let p = Int(rest.dropFirst()), (1...65535).contains(p) else {
          throw ValidationError("bad port in target \(text)")
        }
        port = p
      }
    } else if let colon = text.lastIndex(of: ":") {
      host = String(text[..<colon])
      guard let p = Int(text[text.index(after: colon)...]), (1...65535).contains(p) else {
        throw ValidationError("bad port in target \(text)")
      }
      port = p
    } else {
      host = text
      port = 443
    }
    guard !host.isEmpty else { throw ValidationError("bad target \(text)") }
  }
}

