// Sources/NATSClient/NATSHeaders.swift - NATS message headers (NATS/1.0 name: value fields)

/// The headers of a NATS message: an ordered list of name/value fields; a name may repeat.
///
/// Names are case-sensitive, as libnats treats them. JetStream's own headers are plain fields here, for
/// example `Nats-Msg-Id` (``messageIDName``), which ``JetStream/OutboundMessage/messageID`` sets for you.
/// Received headers come grouped by name (libnats does not keep the order across different names).
package struct NATSHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
  /// One header field.
  package struct Field: Sendable, Hashable {
    /// The field name, for example `Nats-Msg-Id`.
    package var name: String
    /// The field value.
    package var value: String

    /// Makes a field.
    package init(name: String, value: String) {
      self.name = name
      self.value = value
    }
  }

  /// `Nats-Msg-Id`: the header JetStream deduplicates publishes on, within the stream's duplicate window.
  package static let messageIDName = "Nats-Msg-Id"

  /// The fields, in order.
  package var fields: [Field] = []

  /// No headers.
  package init() {}

  /// Headers with one field per pair, in order.
  package init(dictionaryLiteral elements: (String, String)...) {
    fields = elements.map { Field(name: $0.0, value: $0.1) }
  }

  /// The first value of `name`; setting replaces every field named `name` (nil removes them).
  package subscript(name: String) -> String? {
    get { fields.first { $0.name == name }?.value }
    set {
      fields.removeAll { $0.name == name }
      if let newValue { fields.append(Field(name: name, value: newValue)) }
    }
  }

  /// Every value of `name`, in order.
  package func values(for name: String) -> [String] {
    fields.filter { $0.name == name }.map(\.value)
  }

  /// Appends a field (keeping any earlier ones with the same name).
  package mutating func add(name: String, value: String) {
    fields.append(Field(name: name, value: value))
  }

  /// True when there are no fields.
  package var isEmpty: Bool { fields.isEmpty }

  /// The fields, in order.
  package func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

  /// Rejects names and values that would break the header block (libnats writes them as they are): a name
  /// must be non-empty printable ASCII without `:`; a value must be non-empty (libnats' reader would take the
  /// next line for an empty one) and may not contain CR or LF.
  func validate(operation: String) throws(NATSError) {
    for field in fields {
      let nameIsValid =
        !field.name.isEmpty && field.name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }
      guard nameIsValid else {
        throw NATSError(code: .invalidArgument, message: "\(operation): invalid header name \"\(field.name)\"")
      }
      guard !field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) else {
        throw NATSError(code: .invalidArgument, message: "\(operation): header \(field.name) has a line break")
      }
      // libnats' reader takes the next line as an empty value's (and trims spaces around values).
      guard !field.value.isEmpty else {
        throw NATSError(code: .invalidArgument, message: "\(operation): header \(field.name) has an empty value")
      }
    }
  }
}
