// Sources/ProtoWire/WireDecodingError.swift - why a decode failed, and where

/// The error thrown when bytes are not a valid encoding of the requested message.
///
/// Every error names the byte offset, counted from the first byte of the
/// top-level input, at which the decoder found the problem, so a failure on
/// bytes that came from the network can be located and reproduced.
public struct WireDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The kinds of failure. The set is closed: each case says when it is thrown.
  public enum Kind: Sendable, Hashable {
    /// The input ended inside a tag, a varint or a fixed-width value.
    case truncated
    /// A length-delimited field (string, bytes, message, packed run) claims
    /// `length` bytes but fewer remain in the enclosing message.
    case lengthPastEnd(length: UInt64)
    /// A varint ran past ten bytes (or a tag past five) without ending.
    case malformedVarint
    /// A tag carried wire type 6 or 7, which do not exist.
    case invalidWireType(UInt8)
    /// A tag carried field number 0.
    case invalidFieldNumber
    /// A field the message knows arrived with a wire type it cannot have
    /// (packed and unpacked encodings of repeated scalars are both accepted).
    case wrongWireType(field: Int, wireType: WireType)
    /// A `string` field held bytes that are not valid UTF-8.
    case invalidUTF8(field: Int)
    /// Messages and groups were nested deeper than the configured limit.
    case recursionLimitExceeded(limit: Int)
    /// The input is larger than the configured maximum message size.
    case messageTooLarge(size: Int, limit: Int)
    /// An end-group tag appeared without a matching start-group tag, or
    /// closed a group with another field number.
    case unmatchedEndGroup(field: Int)
    /// A group was still open when its enclosing message ended.
    case unterminatedGroup(field: Int)
    /// A packed run of fixed-width values whose length is not a multiple of the width.
    case malformedPackedField(field: Int)
  }

  /// What went wrong.
  public var kind: Kind
  /// The byte offset in the top-level input at which the problem was found.
  public var offset: Int

  /// Creates an error of `kind` found at byte `offset`.
  public init(_ kind: Kind, offset: Int) {
    self.kind = kind
    self.offset = offset
  }

  public var description: String {
    let what: String
    switch kind {
    case .truncated: what = "input truncated"
    case .lengthPastEnd(let length): what = "length \(length) runs past the end of the enclosing message"
    case .malformedVarint: what = "varint longer than 10 bytes"
    case .invalidWireType(let type): what = "invalid wire type \(type)"
    case .invalidFieldNumber: what = "field number 0"
    case .wrongWireType(let field, let wireType): what = "field \(field) cannot have wire type \(wireType)"
    case .invalidUTF8(let field): what = "field \(field) is not valid UTF-8"
    case .recursionLimitExceeded(let limit): what = "nesting deeper than \(limit)"
    case .messageTooLarge(let size, let limit): what = "message of \(size) bytes exceeds the limit of \(limit)"
    case .unmatchedEndGroup(let field): what = "end of group \(field) without its start"
    case .unterminatedGroup(let field): what = "group \(field) not terminated"
    case .malformedPackedField(let field): what = "packed field \(field) has a length that is not a multiple of its element size"
    }
    return "protobuf decoding failed at byte \(offset): \(what)"
  }
}

/// Limits applied while decoding untrusted bytes.
public struct WireDecodingOptions: Sendable, Hashable {
  /// How deeply messages and groups may nest. The top-level message is depth 0;
  /// each embedded message or group adds one. Default 100, as in protobuf's runtimes.
  public var recursionLimit: Int
  /// The largest top-level input accepted, in bytes. Default 64 MiB.
  public var maxMessageSize: Int

  /// Creates options; the defaults suit messages received from a server.
  @inlinable
  public init(recursionLimit: Int = 100, maxMessageSize: Int = 64 << 20) {
    self.recursionLimit = recursionLimit
    self.maxMessageSize = maxMessageSize
  }
}
