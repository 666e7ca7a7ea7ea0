// Sources/ProtoWire/ProtoMessage.swift - what a hand-written message type provides

/// A protobuf message type with a hand-written codec.
///
/// Conforming types decode field by field from a ``WireReader`` and encode in
/// two passes: ``encodedSize()`` computes the exact size, then
/// ``encodeFields(to:)`` writes into storage of exactly that size. Known fields
/// are written in field-number order, then the ``unknownFields`` verbatim,
/// which is the order protobuf's own runtimes use.
public protocol ProtoMessage: Sendable, Equatable {
  /// The fully qualified protobuf name, for example `maps.fleetengine.v1.Trip`.
  static var protoMessageName: String { get }

  /// The empty message: every field at its default.
  init()

  /// Fields received that this type does not declare.
  var unknownFields: UnknownFields { get set }

  /// Decodes fields until the end of the message the reader is positioned in,
  /// merging them into `self` (scalars: last one wins; messages: merged;
  /// repeated fields: appended).
  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError)

  /// The exact number of bytes ``encodeFields(to:)`` writes.
  func encodedSize() -> Int

  /// Writes every field that is not at its default, then the unknown fields.
  func encodeFields(to writer: inout WireWriter)
}

extension ProtoMessage {
  /// Decodes a message from its binary encoding.
  ///
  /// - Throws: ``WireDecodingError`` for malformed input or input beyond `options`' limits.
  @inlinable
  public init<Bytes: Sequence<UInt8>>(
    serializedBytes bytes: Bytes,
    options: WireDecodingOptions = .init()
  ) throws(WireDecodingError) {
    self.init()
    try merge(serializedBytes: bytes, options: options)
  }

  /// Decodes a message from a borrowed buffer, without copying it.
  @inlinable
  public init(
    serializedBuffer buffer: UnsafeRawBufferPointer,
    options: WireDecodingOptions = .init()
  ) throws(WireDecodingError) {
    self.init()
    try WireReader.withReader(over: buffer, options: options) { (reader) throws(WireDecodingError) in
      try self.decodeFields(from: &reader)
    }
  }

  /// Merges the fields encoded in `bytes` into this message.
  @inlinable
  public mutating func merge<Bytes: Sequence<UInt8>>(
    serializedBytes bytes: Bytes,
    options: WireDecodingOptions = .init()
  ) throws(WireDecodingError) {
    try WireReader.withReader(over: bytes, options: options) { (reader) throws(WireDecodingError) in
      try self.decodeFields(from: &reader)
    }
  }

  /// The binary encoding, in one exactly sized allocation.
  @inlinable
  public func serializedBytes() -> [UInt8] {
    let size = encodedSize()
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(buffer))
      encodeFields(to: &writer)
      precondition(writer.written == size, "\(Self.protoMessageName): encodedSize() disagrees with encodeFields(to:)")
      initialized = size
    }
  }

  /// Whether every field is at its default and nothing unknown is held.
  @inlinable
  public var isEmpty: Bool { self == Self() }
}

/// A protobuf enum. Proto3 enums are open: a value the type does not name is
/// kept as its number (``init(rawValue:)`` never fails) and written back as received.
public protocol ProtoEnum: Sendable, Hashable {
  /// The enum for a wire value; unnamed values are preserved.
  init(rawValue: Int32)
  /// The wire value.
  var rawValue: Int32 { get }
  /// The value's name in the .proto file, or its number for an unnamed value.
  var protoName: String { get }
}

/// A container of a repeated message field other than `Array`, which
/// ``WireReader/readRepeatedMessage(_:into:budget:)`` can decode into (for example a path of points
/// stored more compactly than an array of messages).
public protocol WireRepeatedMessageStorage {
  /// The message type of the field.
  associatedtype Element: ProtoMessage
  /// The number of elements held.
  var count: Int { get }
  /// The number of elements the storage can hold without allocating.
  var capacity: Int { get }
  /// Makes room for at least `minimumCapacity` elements.
  mutating func reserveCapacity(_ minimumCapacity: Int)
  /// Appends one element.
  mutating func append(_ element: Element)
}
