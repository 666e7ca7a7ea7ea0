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
    /// The repeated field `field` would hold more than `limit` elements: the limit named `budget`
    /// (`"maxRepeatedCount"`, or a ``WireElementBudget``'s name) in ``WireDecodingOptions``. Thrown
    /// at the tag of the first element over the limit (a packed run: at its tag), before that
    /// element is decoded or room is reserved for it.
    case elementLimitExceeded(field: Int, limit: Int, budget: String)
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

  /// Whether the input broke a limit of ``WireDecodingOptions`` on what a decode may build
  /// (``Kind/elementLimitExceeded(field:limit:budget:)``, ``Kind/messageTooLarge(size:limit:)``)
  /// rather than being malformed: a receiver reports it as a refused resource, not a broken peer.
  public var isResourceLimit: Bool {
    switch kind {
    case .elementLimitExceeded, .messageTooLarge: true
    default: false
    }
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
    case .malformedPackedField(let field):
      what = "packed field \(field) has a length that is not a multiple of its element size"
    case .elementLimitExceeded(let field, let limit, let budget):
      what = "repeated field \(field) exceeds the limit of \(limit) elements (\(budget))"
    }
    return "protobuf decoding failed at byte \(offset): \(what)"
  }
}

/// Limits applied while decoding untrusted bytes.
///
/// Besides nesting and size, they bound what a decode builds: the elements of repeated fields.
/// An element decodes to more memory than it takes on the wire (an empty embedded message is two
/// or three bytes of input and a whole struct of output), so the size limit alone lets a few
/// megabytes of input become hundreds of megabytes of values. ``maxRepeatedCount`` caps every
/// repeated field; ``WireElementBudget``s let message types cap chosen fields tighter, alone or
/// together. Both are checked as elements arrive, before each one is decoded, and every
/// reservation made ahead of a run of elements is capped by them and by the bytes left, so a
/// decode that fails on a limit has allocated no more than the limit allows.
public struct WireDecodingOptions: Sendable, Hashable {
  /// How deeply messages and groups may nest. The top-level message is depth 0;
  /// each embedded message or group adds one. Default 100, as in protobuf's runtimes.
  public var recursionLimit: Int
  /// The largest top-level input accepted, in bytes. Default 64 MiB.
  public var maxMessageSize: Int
  /// The most elements any one repeated field may hold in one message, every occurrence of the
  /// field counted (protobuf appends them). Default `Int.max`: no limit.
  public var maxRepeatedCount: Int
  /// The limits of the budgets, by slot; `Int.max` where none is set.
  @usableFromInline var budgetLimits: WireBudgetSlots

  /// Creates options; the defaults suit messages received from a server and set no element limits.
  @inlinable
  public init(recursionLimit: Int = 100, maxMessageSize: Int = 64 << 20, maxRepeatedCount: Int = .max) {
    self.recursionLimit = recursionLimit
    self.maxMessageSize = maxMessageSize
    self.maxRepeatedCount = max(0, maxRepeatedCount)
    self.budgetLimits = WireBudgetSlots(repeating: .max)
  }

  /// The limit of `budget`: `Int.max` (none) unless set with ``setLimit(_:for:)``.
  @inlinable
  public func limit(of budget: WireElementBudget) -> Int { budgetLimits[budget.slot] }

  /// Sets the limit of `budget` (negative limits count as 0).
  @inlinable
  public mutating func setLimit(_ limit: Int, for budget: WireElementBudget) {
    budgetLimits[budget.slot] = max(0, limit)
  }

  /// These options with `budget` limited to `limit`.
  @inlinable
  public func limiting(_ budget: WireElementBudget, to limit: Int) -> WireDecodingOptions {
    var options = self
    options.setLimit(limit, for: budget)
    return options
  }
}

/// A named limit on the elements of chosen repeated fields, tighter than
/// ``WireDecodingOptions/maxRepeatedCount``.
///
/// Message types choose the fields that draw on a budget
/// (``WireReader/readRepeatedMessage(_:into:budget:)``); the caller sets its limit in
/// ``WireDecodingOptions`` (none by default). A budget of scope ``Scope/eachField`` caps each of
/// its fields in each message on its own; one of scope ``Scope/wholeInput`` counts the elements
/// of all its fields together over the whole input, however they are nested.
///
/// ```swift
/// extension WireElementBudget {
///   static let routePoints = WireElementBudget(slot: 0, name: "route points", scope: .wholeInput)
/// }
/// let options = WireDecodingOptions().limiting(.routePoints, to: 20_000)
/// ```
public struct WireElementBudget: Sendable, Hashable, CustomStringConvertible {
  /// How a budget counts.
  public enum Scope: Sendable, Hashable {
    /// Each field drawing on the budget, in each message, may hold up to the limit.
    case eachField
    /// All fields drawing on the budget together, over the whole input, may hold up to the limit.
    case wholeInput
  }

  /// How many budgets can be told apart in one decode.
  public static let slotCount = WireBudgetSlots.count

  /// Which of the ``slotCount`` slots the budget uses; budgets used together need different slots.
  public let slot: Int
  /// A name for errors, for example `route points`.
  public let name: String
  /// How the budget counts.
  public let scope: Scope

  /// A budget in `slot` (0 ..< ``slotCount``).
  public init(slot: Int, name: String, scope: Scope) {
    precondition((0..<Self.slotCount).contains(slot), "a WireElementBudget slot is in 0..<\(Self.slotCount)")
    self.slot = slot
    self.name = name
    self.scope = scope
  }

  public var description: String { name }
}

/// Four counts, one per budget slot, stored inline (no allocation per decode).
@usableFromInline
struct WireBudgetSlots: Sendable, Hashable {
  @usableFromInline static let count = 4
  @usableFromInline var s0, s1, s2, s3: Int

  @inlinable init(repeating value: Int) {
    s0 = value
    s1 = value
    s2 = value
    s3 = value
  }

  @inlinable subscript(slot: Int) -> Int {
    get {
      switch slot {
      case 0: s0
      case 1: s1
      case 2: s2
      default: s3
      }
    }
    set {
      switch slot {
      case 0: s0 = newValue
      case 1: s1 = newValue
      case 2: s2 = newValue
      default: s3 = newValue
      }
    }
  }
}
