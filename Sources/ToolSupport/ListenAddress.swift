// Sources/ToolSupport/ListenAddress.swift - the address a tool listens on (`--listen`, `--metrics-listen`)

/// Where a tool listens: `HOST:PORT` or `[HOST]:PORT`.
package enum ListenAddress {
  /// `HOST:PORT` or `[HOST]:PORT` (a port 0…65535) as its parts; nil when malformed.
  package static func parse(_ text: String) -> (String, Int)? {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
      (0...65535).contains(port)
    else { return nil }
    var host = String(text[..<colon])
    if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    guard !host.isEmpty, !host.contains("[") else { return nil }
    return (host, port)
  }
}
