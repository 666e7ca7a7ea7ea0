// Tests/TestSupport/LogCapture.swift - a swift-log handler that keeps what is logged, for tests
//
// Shared by the test targets that check what is (and is not) logged: tokens never, plaintext once.

public import Logging
import Primitives

/// Keeps every record logged through its loggers (at trace level), for tests of what is logged.
public final class LogCapture: Sendable {
  /// One record: label, level, message and metadata rendered as `key=value` pairs.
  public struct Record: Sendable, CustomStringConvertible {
    public var label: String
    public var level: Logger.Level
    public var message: String
    public var metadata: String
    public var description: String { "\(level) \(label): \(message) \(metadata)" }
  }

  private let records = Locked<[Record]>([])

  public init() {}

  /// A logger at trace level that records here.
  public func logger(_ label: String) -> Logger {
    var logger = Logger(label: label) { label in Handler(label: label, capture: self) }
    logger.logLevel = .trace
    return logger
  }

  /// Everything logged so far, in order.
  public var all: [Record] { records.withLock { $0 } }

  fileprivate func append(_ record: Record) { records.withLock { $0.append(record) } }

  private struct Handler: LogHandler {
    let label: String
    let capture: LogCapture
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
      get { metadata[key] }
      set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
      let merged = metadata.merging(event.metadata ?? [:]) { $1 }
      let rendered = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
      capture.append(Record(label: label, level: event.level, message: "\(event.message)", metadata: rendered))
    }
  }
}
