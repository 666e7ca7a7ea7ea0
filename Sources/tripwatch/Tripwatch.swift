// Sources/tripwatch/Tripwatch.swift - the tripwatch command line

import ArgumentParser
import ToolSupport

@main
struct Tripwatch: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "tripwatch",
    abstract: "Follow ride-sharing trips over gRPC, or make raw gRPC calls.",
    discussion: ToolExit.helpText,
    version: toolVersion,
    subcommands: [Demo.self, Follow.self, Get.self, RawCall.self, Relay.self]
  )

  static func main() async { await runAsTool() }
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
