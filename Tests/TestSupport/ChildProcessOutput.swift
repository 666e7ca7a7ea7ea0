// The lines a child process writes to standard output, for tests that run `fleetsim` or `tripwatch`
// as processes of their own.

public import Foundation
import Primitives

/// The lines a child process writes to a pipe, read on a thread of its own as they come, so that a
/// process writing much never blocks on a full pipe; `isClosed` once the process closed its end.
public final class ChildProcessOutput: Sendable {
  private let state = Locked<(lines: [String], closed: Bool)>(([], false))

  /// Starts reading `pipe` (the process's `standardOutput`, set before it runs) until it closes.
  public init(reading pipe: Pipe) {
    let handle = pipe.fileHandleForReading
    Thread.detachNewThread { [self] in
      var pending = Data()
      while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        pending.append(chunk)
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
          let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
          pending.removeSubrange(pending.startIndex...newline)
          self.state.withLock { $0.lines.append(line) }
        }
      }
      self.state.withLock { $0.closed = true }
    }
  }

  /// The whole lines read so far.
  public var lines: [String] { state.withLock { $0.lines } }

  /// Whether the process closed its end (it exited, or closed its standard output).
  public var isClosed: Bool { state.withLock { $0.closed } }

  /// The port of the first `listening on HOST:PORT` line, if one came.
  public var listeningPort: Int? {
    state.withLock { state in
      guard let line = state.lines.first(where: { $0.hasPrefix("listening on ") }),
        let colon = line.lastIndex(of: ":")
      else { return nil }
      return Int(line[line.index(after: colon)...])
    }
  }
}
