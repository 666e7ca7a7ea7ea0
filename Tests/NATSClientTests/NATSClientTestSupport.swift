// Tests/NATSClientTests/NATSClientTestSupport.swift - the suite's parent, connecting, waiting for conditions

import Logging
import NATSClient
import NATSTestSupport
import TestSupport
import Testing

/// Every NATSClient suite runs under this one, one test at a time: each test starts its own nats-server
/// processes, and timed tests (AckWait, redelivery, a cluster losing a node) stay far from their bounds
/// only when they do not share the machine's two cores with each other.
@Suite(.serialized)
struct NATSClientTests {}

/// A logger that keeps what it logs in `capture`, at trace level.
func testLogger(_ capture: LogCapture, label: String = "nats-test") -> Logger {
  capture.logger(label)
}

/// A logger that drops everything.
func silentLogger(label: String = "nats-test") -> Logger {
  Logger(label: label) { _ in SwiftLogNoOpLogHandler() }
}

/// Connects to `urls` with a short reconnect wait, so that tests that kill servers move on quickly.
func connect(
  _ urls: [String], name: String = "nats-client-tests", logger: Logger = silentLogger(),
  configure: (inout NATSConnectionConfiguration) -> Void = { _ in }
) async throws -> NATSConnection {
  var configuration = NATSConnectionConfiguration(servers: urls, name: name)
  configuration.reconnect = .forever(wait: .milliseconds(250))
  configuration.connectTimeout = .seconds(2)
  configure(&configuration)
  return try await NATSConnection.connect(configuration, logger: logger)
}

/// Waits for the first event of `stream` that satisfies `predicate`, at most `timeout`.
func firstEvent(
  in stream: AsyncStream<NATSConnectionEvent>, timeout: Duration,
  where predicate: @escaping @Sendable (NATSConnectionEvent) -> Bool
) async -> NATSConnectionEvent? {
  await withTaskGroup(of: NATSConnectionEvent?.self) { group in
    group.addTask {
      for await event in stream where predicate(event) { return event }
      return nil
    }
    group.addTask {
      try? await Task.sleep(for: timeout)
      return nil
    }
    let first = await group.next() ?? nil
    group.cancelAll()
    return first
  }
}

/// The bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The text of `bytes`.
func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
