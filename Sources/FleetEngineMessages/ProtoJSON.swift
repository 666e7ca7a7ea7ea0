// Sources/FleetEngineMessages/ProtoJSON.swift - the proto3 JSON mapping of the messages
//
// The canonical proto3 JSON mapping (https://protobuf.dev/programming-guides/json/)
// as Python's `google.protobuf.json_format.MessageToJson` prints it by default:
// lowerCamelCase names, fields at their proto3 default left out, messages and
// oneof members printed when present, enums by name (unnamed values as numbers),
// 64-bit integers as strings, NaN and infinities as strings, bytes as padded
// base64, and the well-known types in their special forms. Each message type
// lists its fields in a `+JSON.swift` file; the writer below does the rest.
// No Foundation: numbers, dates and base64 are formatted here.

import Primitives
public import ProtoWire

/// How ``ProtoJSONEncodable/jsonString(options:)`` prints a message.
public struct ProtoJSONOptions: Sendable, Hashable {
  /// Use the field names of the .proto file (`vehicle_id`) instead of their
  /// lowerCamelCase JSON names (`vehicleId`), like `preserving_proto_field_name`.
  public var preservingProtoFieldNames: Bool
  /// Spaces per nesting level, each member and element on a line of its own; 0
  /// prints the whole value on one line without any whitespace. Clamped to 0...64.
  public var indent: Int
  /// Escape every character outside printable ASCII as `\uXXXX` (surrogate pairs
  /// above U+FFFF), as Python's `json.dumps` does with `ensure_ascii=True`, the
  /// default of `MessageToJson`. Off, strings stay UTF-8 and only `"`, `\` and
  /// control characters are escaped; either way the JSON parses to the same strings.
  public var escapingNonASCII: Bool

  /// Options with Python's defaults for names and indentation, and UTF-8 strings.
  public init(preservingProtoFieldNames: Bool = false, indent: Int = 2, escapingNonASCII: Bool = false) {
    self.preservingProtoFieldNames = preservingProtoFieldNames
    self.indent = indent
    self.escapingNonASCII = escapingNonASCII
  }
}

/// A value the proto3 JSON mapping cannot represent, which Python's
/// `MessageToJson` refuses with a `ValueError`.
public enum ProtoJSONEncodingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A `google.protobuf.Timestamp` outside 0001-01-01T00:00:00Z...9999-12-31T23:59:59.999999999Z,
  /// or with `nanos` outside 0..<1_000_000_000.
  case timestampOutOfRange(seconds: Int64, nanos: Int32)
  /// A `google.protobuf.Duration` beyond ±315,576,000,000 seconds, with `|nanos|` of
  /// a second or more, or with `seconds` and `nanos` of opposite signs.
  case durationOutOfRange(seconds: Int64, nanos: Int32)
  /// A `google.protobuf.FieldMask` path with an uppercase letter, or an underscore
  /// not followed by a lowercase letter: its lowerCamelCase form would not convert back.
  case fieldMaskPathNotConvertible(String)

  public var description: String {
    switch self {
    case .timestampOutOfRange(let seconds, let nanos):
      "Timestamp out of range for JSON: seconds \(seconds) (must be in [-62135596800, 253402300799]), "
        + "nanos \(nanos) (must be in [0, 999999999])"
    case .durationOutOfRange(let seconds, let nanos):
      "Duration out of range for JSON: seconds \(seconds) (must be in [-315576000000, 315576000000]), "
        + "nanos \(nanos) (must be in [-999999999, 999999999], with the sign of seconds)"
    case .fieldMaskPathNotConvertible(let path):
      "FieldMask path \(path) has an uppercase letter or an underscore not followed by a lowercase letter"
    }
  }
}

/// A message with a proto3 JSON form.
///
/// Conforming types write their value with ``writeJSON(to:)``: a regular message
/// as an object of its set fields, in field-number order, through the writer's
/// field methods; a well-known type as its special value.
public protocol ProtoJSONEncodable: ProtoMessage {
  /// Writes this message's JSON value.
  func writeJSON(to writer: inout ProtoJSONWriter)
}

extension ProtoJSONEncodable {
  /// The message in the proto3 JSON mapping, as Python's `MessageToJson` prints it.
  ///
  /// Never fails. Where `MessageToJson` raises (see ``ProtoJSONEncodingError``),
  /// the value is printed anyway, in a form a proto3 JSON parser rejects rather
  /// than misreads: a Timestamp as the instant it denotes (nanos carried into
  /// seconds), years outside 0...9999 written with a sign and at least six digits
  /// (`+275760-09-13T00:00:00Z`, as JavaScript's `toISOString` does); a Duration as
  /// its exact signed value in seconds, however large; a FieldMask path with the
  /// characters that cannot convert kept as they are. Use
  /// ``validatedJSONString(options:)`` to get the error instead.
  public func jsonString(options: ProtoJSONOptions = .init()) -> String {
    var writer = ProtoJSONWriter(options: options)
    writeJSON(to: &writer)
    return writer.finish()
  }

  /// The message in the proto3 JSON mapping, or the first value that mapping
  /// cannot represent, where Python's `MessageToJson` raises `ValueError`.
  public func validatedJSONString(
    options: ProtoJSONOptions = .init()
  ) throws(ProtoJSONEncodingError) -> String {
    var writer = ProtoJSONWriter(options: options)
    writeJSON(to: &writer)
    if let refusal = writer.refusal { throw refusal }
    return writer.finish()
  }
}

/// Writes one JSON value, pretty-printed or compact, into a byte buffer.
///
/// Containers are opened and closed explicitly; a member is a ``writeKey(_:)``
/// followed by one value, an array element just the value. The field methods
/// (`stringField`, `messageField`, …) write a whole member and leave it out when
/// proto3 would not print it.
public struct ProtoJSONWriter: Sendable {
  /// The options the value is written with.
  public let options: ProtoJSONOptions
  /// The first value written that the proto3 JSON mapping cannot represent, if any.
  public private(set) var refusal: ProtoJSONEncodingError?

  var bytes: [UInt8] = []
  private var depth = 0
  /// Whether the innermost open container already holds a member or element.
  private var containerHasElement = false
  private let indent: Int

  init(options: ProtoJSONOptions) {
    self.options = options
    self.indent = min(max(options.indent, 0), 64)
    bytes.reserveCapacity(256)
  }

  func finish() -> String { String(decoding: bytes, as: UTF8.self) }

  /// Records that the value being written cannot be represented (the first such value is kept).
  public mutating func refuse(_ error: ProtoJSONEncodingError) {
    if refusal == nil { refusal = error }
  }

  // MARK: Structure

  /// Opens an object (`{`).
  public mutating func beginObject() { openContainer(UInt8(ascii: "{")) }
  /// Closes the innermost object (`}`).
  public mutating func endObject() { closeContainer(UInt8(ascii: "}")) }
  /// Opens an array (`[`).
  public mutating func beginArray() { openContainer(UInt8(ascii: "[")) }
  /// Closes the innermost array (`]`).
  public mutating func endArray() { closeContainer(UInt8(ascii: "]")) }

  /// Starts a member of the innermost object: the field named `protoName` in the
  /// .proto file, written under its JSON name unless the options preserve proto names.
  public mutating func writeKey(_ protoName: String) {
    startElement()
    bytes.append(UInt8(ascii: "\""))
    if options.preservingProtoFieldNames {
      bytes.append(contentsOf: protoName.utf8)
    } else {
      appendJSONName(protoName)
    }
    bytes.append(UInt8(ascii: "\""))
    bytes.append(UInt8(ascii: ":"))
    if indent > 0 { bytes.append(UInt8(ascii: " ")) }
    // The value that follows completes this member; it is not an element of its own.
    pendingKey = true
  }

  /// Whether a key was just written, so the next value completes its member.
  private var pendingKey = false

  private mutating func openContainer(_ byte: UInt8) {
    startValue()
    bytes.append(byte)
    depth += 1
    containerHasElement = false
  }

  private mutating func closeContainer(_ byte: UInt8) {
    depth -= 1
    if containerHasElement { newline() }
    bytes.append(byte)
    containerHasElement = true
  }

  /// Before a member or element: the separator and line break it needs.
  private mutating func startElement() {
    if depth == 0 { return }
    if containerHasElement { bytes.append(UInt8(ascii: ",")) }
    newline()
  }

  /// Before any value: an array element starts here; a member's value follows its key.
  private mutating func startValue() {
    if pendingKey {
      pendingKey = false
    } else {
      startElement()
    }
  }

  /// Marks the end of a scalar value.
  private mutating func endValue() { containerHasElement = true }

  private mutating func newline() {
    guard indent > 0 else { return }
    bytes.append(UInt8(ascii: "\n"))
    bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * depth))
  }

  /// protoc's JSON name: underscores dropped, the letter after each one uppercased.
  private mutating func appendJSONName(_ protoName: String) {
    var capitalizeNext = false
    for byte in protoName.utf8 {
      if byte == UInt8(ascii: "_") {
        capitalizeNext = true
      } else if capitalizeNext, byte >= UInt8(ascii: "a"), byte <= UInt8(ascii: "z") {
        bytes.append(byte - 32)
        capitalizeNext = false
      } else {
        bytes.append(byte)
        capitalizeNext = false
      }
    }
  }

  // MARK: Values

  /// A JSON string.
  public mutating func writeString(_ value: String) {
    startValue()
    appendQuoted(value)
    endValue()
  }

  /// `true` or `false`.
  public mutating func writeBool(_ value: Bool) {
    startValue()
    bytes.append(contentsOf: (value ? "true" : "false").utf8)
    endValue()
  }

  /// An `int32`, `sint32` or `sfixed32` value: a JSON number.
  public mutating func writeInt32(_ value: Int32) {
    startValue()
    bytes.append(contentsOf: String(value).utf8)
    endValue()
  }

  /// A `uint32` or `fixed32` value: a JSON number.
  public mutating func writeUInt32(_ value: UInt32) {
    startValue()
    bytes.append(contentsOf: String(value).utf8)
    endValue()
  }

  /// An `int64`, `sint64` or `sfixed64` value: a decimal string.
  public mutating func writeInt64(_ value: Int64) {
    writeString(String(value))
  }

  /// A `uint64` or `fixed64` value: a decimal string.
  public mutating func writeUInt64(_ value: UInt64) {
    writeString(String(value))
  }

  /// A `double`: a JSON number as Python's `repr` prints it (shortest round-trip
  /// digits), or `"NaN"`, `"Infinity"`, `"-Infinity"`.
  public mutating func writeDouble(_ value: Double) {
    if let special = Self.nonFiniteName(value) {
      writeString(special)
      return
    }
    startValue()
    ProtoJSONNumber.appendDouble(value, to: &bytes)
    endValue()
  }

  /// A `float`: the shortest decimal of at least 6 significant digits that
  /// converts back to the same float (Python's `ToShortestFloat`), as a JSON
  /// number, or `"NaN"`, `"Infinity"`, `"-Infinity"`.
  public mutating func writeFloat(_ value: Float) {
    if let special = Self.nonFiniteName(Double(value)) {
      writeString(special)
      return
    }
    startValue()
    ProtoJSONNumber.appendFloat(value, to: &bytes)
    endValue()
  }

  /// A `bytes` value: standard base64 with padding.
  public mutating func writeBytes(_ value: [UInt8]) {
    startValue()
    bytes.append(UInt8(ascii: "\""))
    Base64.encode(value, padded: true, into: &bytes)
    bytes.append(UInt8(ascii: "\""))
    endValue()
  }

  /// An enum value: its name, or its number when this version does not name it.
  public mutating func writeEnum<E: ProtoEnum>(_ value: E) {
    let name = value.protoName
    if name == String(value.rawValue) {
      writeInt32(value.rawValue)
    } else {
      writeString(name)
    }
  }

  /// A message: its JSON value (an object, or a well-known type's special form).
  public mutating func writeMessage<M: ProtoJSONEncodable>(_ value: M) {
    value.writeJSON(to: &self)
  }

  static func nonFiniteName(_ value: Double) -> String? {
    if value.isNaN { return "NaN" }
    if value == .infinity { return "Infinity" }
    if value == -.infinity { return "-Infinity" }
    return nil
  }

  // MARK: Fields (proto3 presence)

  /// A `string` field, left out when empty.
  public mutating func stringField(_ protoName: String, _ value: String) {
    guard !value.isEmpty else { return }
    writeKey(protoName)
    writeString(value)
  }

  /// A `bool` field, left out when false.
  public mutating func boolField(_ protoName: String, _ value: Bool) {
    guard value else { return }
    writeKey(protoName)
    writeBool(value)
  }

  /// An `int32` field, left out when 0.
  public mutating func int32Field(_ protoName: String, _ value: Int32) {
    guard value != 0 else { return }
    writeKey(protoName)
    writeInt32(value)
  }

  /// A `uint64` field, left out when 0.
  public mutating func uint64Field(_ protoName: String, _ value: UInt64) {
    guard value != 0 else { return }
    writeKey(protoName)
    writeUInt64(value)
  }

  /// A `double` field, left out when its bits are all zero (-0.0 is printed, as protobuf's runtimes do).
  public mutating func doubleField(_ protoName: String, _ value: Double) {
    guard value.bitPattern != 0 else { return }
    writeKey(protoName)
    writeDouble(value)
  }

  /// An enum field, left out at value 0.
  public mutating func enumField<E: ProtoEnum>(_ protoName: String, _ value: E) {
    guard value.rawValue != 0 else { return }
    writeKey(protoName)
    writeEnum(value)
  }

  /// A message field, written when present (even when empty).
  public mutating func messageField<M: ProtoJSONEncodable>(_ protoName: String, _ value: M?) {
    guard let value else { return }
    writeKey(protoName)
    writeMessage(value)
  }

  /// A repeated message field, left out when empty.
  public mutating func repeatedMessageField<S: Collection>(_ protoName: String, _ values: S)
  where S.Element: ProtoJSONEncodable {
    guard !values.isEmpty else { return }
    writeKey(protoName)
    beginArray()
    for value in values { writeMessage(value) }
    endArray()
  }

  /// A repeated `int32` field, left out when empty.
  public mutating func repeatedInt32Field(_ protoName: String, _ values: [Int32]) {
    guard !values.isEmpty else { return }
    writeKey(protoName)
    beginArray()
    for value in values { writeInt32(value) }
    endArray()
  }

  // MARK: Strings

  /// Appends `value` as a quoted JSON string, escaped as Python's `json.dumps` does.
  mutating func appendQuoted(_ value: String) {
    JSONString.append(value, to: &bytes, escaping: .python(asciiOnly: options.escapingNonASCII))
  }
}
