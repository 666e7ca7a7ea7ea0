// Sources/ProtoWire/UnknownFields.swift - fields a message does not know, kept verbatim

/// The raw bytes of fields that a message type does not declare, in the order
/// they arrived, tags included. They are written back unchanged after the known
/// fields when the message is encoded, so a message passes through this
/// process without losing what a newer peer put in it.
public struct UnknownFields: Sendable, Hashable {
  /// The preserved bytes.
  @inlinable public var bytes: [UInt8] { storage }

  // Stored under another name so that the initializers can be inlinable (every decoded
  // message creates an empty one) while `bytes` stays read-only outside this module.
  @usableFromInline var storage: [UInt8]

  /// No unknown fields.
  @inlinable public init() { storage = [] }

  /// Unknown fields made of `bytes`, which must be whole encoded fields.
  @inlinable public init(bytes: [UInt8]) { storage = bytes }

  /// Whether there are none.
  @inlinable public var isEmpty: Bool { storage.isEmpty }

  /// How many bytes they take on the wire.
  @inlinable public var count: Int { storage.count }

  /// Appends whole encoded fields.
  public mutating func append(_ raw: UnsafeRawBufferPointer) {
    storage.append(contentsOf: raw)
  }
}
