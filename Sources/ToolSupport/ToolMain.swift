// Sources/ToolSupport/ToolMain.swift - parsing, running and exiting the same way in every tool

package import ArgumentParser

#if canImport(Glibc)
  import Glibc
#endif

/// A failure that ends a tool with `exit`'s code, after writing `message` to standard error.
package struct ToolFailure: Error, CustomStringConvertible {
  /// The exit status.
  package var exit: ToolExit
  /// One line for standard error (without the tool's name, which is added).
  package var message: String

  package init(_ exit: ToolExit, _ message: String) {
    self.exit = exit
    self.message = message
  }

  package var description: String { message }
}

extension ParsableCommand {
  /// Parses the command line and runs the command it names, then exits with the scheme of
  /// ``ToolExit``: 0 after a normal return, 2 for any usage error (ArgumentParser's own code
  /// would be 64), a ``ToolFailure``'s code with its message on standard error, an `ExitCode`'s
  /// code as it is. `--help` and `--version` print and exit 0.
  package static func runAsTool(arguments: [String]? = nil) async -> Never {
    do {
      var command = try parseAsRoot(arguments)
      if var asyncCommand = command as? any AsyncParsableCommand {
        try await asyncCommand.run()
      } else {
        try command.run()
      }
      Glibc.exit(ToolExit.success.rawValue)
    } catch let failure as ToolFailure {
      StandardError.write("\(configuration.commandName ?? "tool"): \(failure.message)\n")
      Glibc.exit(failure.exit.rawValue)
    } catch let code as ExitCode {
      Glibc.exit(code.rawValue)
    } catch {
      let code = exitCode(for: error)
      if code == .validationFailure || code.rawValue == 64 {
        StandardError.write(fullMessage(for: error) + "\n")
        Glibc.exit(ToolExit.usage.rawValue)
      }
      self.exit(withError: error)
    }
  }
}
