// Sources/ProtoWire/UnknownFields.swift - fields a message does not know, kept verbatim

/// The raw bytes of fields that a message type does not declare, in the order
/// they arrived, tags included. They are written back unchanged after the known
/// fields when the message is encoded, so a message passes through this
/// process without losing what a newer peer put in it.
public struct UnknownFields: Sendable, Hashable {
  /// The preserved bytes.
  public private(set) var bytes: [UInt8]

  /// No unknown fields.
  public init() { bytes = [] }

  /// Unknown fields made of `bytes`, which must be whole encoded fields.
  public init(bytes: [UInt8]) { self.bytes = bytes }

  /// Whether there are none.
  @inlinable public var isEmpty: Bool { bytes.isEmpty }

  /// How many bytes they take on the wire.
  @inlinable public var count: Int { bytes.count }

  /// Appends whole encoded fields.
  public mutating func append(_ raw: UnsafeRawBufferPointer) {
    bytes.append(contentsOf: raw)
  }
}
