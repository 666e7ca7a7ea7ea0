// Sources/GRPCValues/GRPCMetadata.swift - ordered gRPC metadata and its header encoding
//
// Metadata is a multimap: the same name may appear several times and the order
// of values for one name matters to applications, so it is stored as a flat
// array of entries in arrival order rather than a dictionary. Metadata blocks
// are small (a handful of entries), so linear lookups are the cheap choice.

import Primitives

/// Ordered gRPC metadata: custom request headers, response headers or trailers.
///
/// Names are lowercase. Names ending in `-bin` carry binary values, which go
/// over the wire as base64; all other names carry printable-ASCII strings.
///
/// Printing metadata (``description``, `debugDescription`, `dump`, or a value
/// that holds it, such as `CallOptions`) never shows the values of credential
/// names (``isSensitive(_:)``: `authorization` and the like), nor binary values;
/// read them with ``first(_:)`` or the subscript.
///
/// ```swift
/// var metadata: GRPCMetadata = ["authorization": "Bearer \(token)"]
/// metadata.add("x-trace-bin", binary: traceBytes)
/// ```
public struct GRPCMetadata: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
  /// One metadata value.
  ///
  /// `Value` is also the value type of the dictionary literal, because a nested
  /// type named `Value` is what `ExpressibleByDictionaryLiteral` picks up. It is
  /// expressible by string literals and interpolations, so
  /// `["authorization": "Bearer \(token)"]` reads as string pairs; a `String`
  /// variable is written `.string(text)`, and bytes `.binary(bytes)`.
  public enum Value: Sendable, Hashable, ExpressibleByStringInterpolation {
    /// The value of a name without the `-bin` suffix: printable ASCII.
    case string(String)
    /// The value of a `-bin` name: arbitrary bytes, base64 on the wire.
    case binary([UInt8])

    /// A string value from a literal.
    public init(stringLiteral value: String) {
      self = .string(value)
    }

    /// A string value from an interpolated literal.
    public init(stringInterpolation: DefaultStringInterpolation) {
      self = .string(String(stringInterpolation: stringInterpolation))
    }
  }

  /// One entry, stored as a struct because tuples cannot be `Hashable`.
  struct Entry: Sendable, Hashable {
    var name: String
    var value: Value
  }

  /// The entries in insertion order.
  private var entries: [Entry]

  /// Empty metadata.
  public init() {
    self.entries = []
  }

  /// Metadata from a literal, in order: string values as ``add(_:_:)`` stores
  /// them, binary values as ``add(_:binary:)`` does (so only under `-bin` names).
  public init(dictionaryLiteral elements: (String, Value)...) {
    self.entries = []
    entries.reserveCapacity(elements.count)
    for (name, value) in elements {
      switch value {
      case .string(let text): add(name, text)
      case .binary(let bytes): add(name, binary: bytes)
      }
    }
  }

  /// The number of entries (a name with two values counts twice).
  public var count: Int { entries.count }

  /// Whether there are no entries.
  public var isEmpty: Bool { entries.isEmpty }

  // MARK: - Adding

  /// Appends a string value under `name`, lowercased.
  ///
  /// A `-bin` name always holds binary values, so a string added under one is
  /// stored as its UTF-8 bytes (and sent base64-encoded).
  public mutating func add(_ name: String, _ value: String) {
    let name = name.lowercased()
    if Self.isBinaryName(name) {
      entries.append(Entry(name: name, value: .binary(Array(value.utf8))))
    } else {
      entries.append(Entry(name: name, value: .string(value)))
    }
  }

  /// Appends a binary value under `name`, lowercased.
  ///
  /// - Precondition: `name` ends in `-bin`. Only those names can carry bytes on
  ///   the wire; passing another name is a programming error and traps.
  public mutating func add(_ name: String, binary value: [UInt8]) {
    let name = name.lowercased()
    precondition(Self.isBinaryName(name), "binary metadata names must end in \"-bin\": \(name)")
    entries.append(Entry(name: name, value: .binary(value)))
  }

  /// Removes every value stored under `name` (compared lowercased).
  public mutating func removeAll(_ name: String) {
    let name = name.lowercased()
    entries.removeAll { $0.name == name }
  }

  // MARK: - Lookup

  /// Every value stored under `name` (compared lowercased), in order.
  public subscript(name: String) -> [Value] {
    let name = name.lowercased()
    return entries.compactMap { $0.name == name ? $0.value : nil }
  }

  /// The first string value stored under `name`, or `nil` (also for `-bin` names, which hold bytes).
  public func first(_ name: String) -> String? {
    let name = name.lowercased()
    for entry in entries where entry.name == name {
      if case .string(let value) = entry.value { return value }
    }
    return nil
  }

  /// The first binary value stored under `name`, or `nil`.
  public func firstBinary(_ name: String) -> [UInt8]? {
    let name = name.lowercased()
    for entry in entries where entry.name == name {
      if case .binary(let value) = entry.value { return value }
    }
    return nil
  }

  // MARK: - Sequence

  /// An entry as seen by callers: its name and value.
  public typealias Element = (name: String, value: Value)

  /// Iterates the entries in order.
  public struct Iterator: IteratorProtocol {
    fileprivate var base: IndexingIterator<[Entry]>

    /// The next entry, or `nil` at the end.
    public mutating func next() -> Element? {
      guard let entry = base.next() else { return nil }
      return (entry.name, entry.value)
    }
  }

  /// An iterator over the entries in order.
  public func makeIterator() -> Iterator { Iterator(base: entries.makeIterator()) }

  /// The number of entries, so `Array(metadata)` allocates once.
  public var underestimatedCount: Int { entries.count }

  // MARK: - Header fields

  /// Header fields the transport consumes itself. They never reach applications
  /// as metadata: pseudo-headers (`:status`, …) and these names.
  static let transportHeaderNames: Set<String> = [
    "content-type", "grpc-status", "grpc-message", "grpc-encoding", "grpc-accept-encoding",
  ]

  /// Metadata from received header fields (response headers, trailers or a
  /// Trailers-Only block).
  ///
  /// - Pseudo-headers and the transport's own fields (`content-type`,
  ///   `grpc-status`, `grpc-message`, `grpc-encoding`, `grpc-accept-encoding`)
  ///   are skipped; everything else is kept, duplicates included, in order.
  /// - Values of `-bin` names are base64, padded or not. A value holding several
  ///   comma-separated pieces (how HTTP joins repeated fields) yields one entry per
  ///   piece. A piece that is not valid base64 is dropped: it cannot be turned into
  ///   the bytes the server meant, and passing its text on as if it were those
  ///   bytes would be worse. The call itself is not failed over custom metadata.
  public init(decodingHeaderFields fields: [(name: String, value: String)]) {
    self.entries = []
    entries.reserveCapacity(fields.count)
    for (rawName, value) in fields {
      guard !rawName.hasPrefix(":") else { continue }
      let name = rawName.lowercased()
      guard !Self.transportHeaderNames.contains(name) else { continue }
      if Self.isBinaryName(name) {
        for piece in value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
          if let bytes = Base64.decode(Self.trimmingSpaces(piece), strict: false) {
            entries.append(Entry(name: name, value: .binary(bytes)))
          }
        }
      } else {
        entries.append(Entry(name: name, value: .string(value)))
      }
    }
  }

  /// The entries as header fields, in order: binary values as unpadded base64
  /// (what gRPC senders should send), strings as they are.
  ///
  /// No filtering happens here; `GRPCRequestHead.headerFields()` (GRPCProtocol) drops
  /// reserved and invalid entries from requests.
  public var headerFields: [(name: String, value: String)] {
    entries.map { entry in
      switch entry.value {
      case .string(let value): (entry.name, value)
      case .binary(let bytes): (entry.name, Base64.encode(bytes, padded: false))
      }
    }
  }

  // MARK: - Validation

  /// Whether `name` is a valid metadata name: one or more of `0-9 a-z _ . -`.
  public static func isValidName(_ name: String) -> Bool {
    guard !name.isEmpty else { return false }
    return name.utf8.allSatisfy { byte in
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"):
        true
      case UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"):
        true
      default:
        false
      }
    }
  }

  /// Whether `value` may be sent as an ASCII (non-`-bin`) value: printable
  /// ASCII, 0x20 through 0x7E. The empty string is valid.
  public static func isValidASCIIValue(_ value: String) -> Bool {
    value.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
  }

  /// Whether applications must not set `name` (compared lowercased): anything
  /// starting with `:` or `grpc-`, the call-definition headers `te`,
  /// `content-type` and `user-agent`, and the HTTP connection-specific headers
  /// HTTP/2 forbids (`connection`, `keep-alive`, `proxy-connection`,
  /// `transfer-encoding`, `upgrade`) plus `host`, which `:authority` replaces.
  public static func isReserved(_ name: String) -> Bool {
    let name = name.lowercased()
    if name.hasPrefix(":") || name.hasPrefix("grpc-") { return true }
    return reservedNames.contains(name)
  }

  private static let reservedNames: Set<String> = [
    "te", "content-type", "user-agent",
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host",
  ]

  /// Whether `name` (already lowercase) is a binary name.
  static func isBinaryName(_ name: String) -> Bool { name.hasSuffix("-bin") }

  /// `piece` without leading and trailing spaces and tabs (HTTP joins with `", "`).
  private static func trimmingSpaces(_ piece: Substring.UTF8View) -> Substring.UTF8View {
    var piece = piece
    while let first = piece.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
      piece = piece.dropFirst()
    }
    while let last = piece.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
      piece = piece.dropLast()
    }
    return piece
  }
}

// MARK: - Printing without credentials

extension GRPCMetadata: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
  /// Whether `name` (compared lowercased) carries credentials, so its values must never be logged or
  /// shown: `authorization`, `proxy-authorization`, `cookie`, `set-cookie`, `x-api-key`,
  /// `x-goog-api-key`, `x-goog-iam-authorization-token`.
  public static func isSensitive(_ name: String) -> Bool {
    SensitiveHeaders.contains(name)
  }

  /// An entry's value as printed: the string, `<redacted>` for a credential, `<N bytes>` for binary.
  private static func printedValue(name: String, value: Value) -> String {
    if isSensitive(name) { return "<redacted>" }
    switch value {
    case .string(let text): return text.debugDescription
    case .binary(let bytes): return "<\(bytes.count) bytes>"
    }
  }

  /// `["x-trip": "7", "authorization": <redacted>, "x-trace-bin": <3 bytes>]`: names in order,
  /// credentials and binary values left out.
  public var description: String {
    guard !entries.isEmpty else { return "[:]" }
    let pairs = entries.map { "\($0.name.debugDescription): \(Self.printedValue(name: $0.name, value: $0.value))" }
    return "[" + pairs.joined(separator: ", ") + "]"
  }

  /// The same as ``description``: credentials are left out of debug output too.
  public var debugDescription: String { description }

  /// The entries as name-value children, with credentials and binary values left out as in
  /// ``description`` (what `dump` and reflection-based printers show).
  public var customMirror: Mirror {
    Mirror(
      self,
      unlabeledChildren: entries.map { "\($0.name): \(Self.printedValue(name: $0.name, value: $0.value))" },
      displayStyle: .collection)
  }
}
