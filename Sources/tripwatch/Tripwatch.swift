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
