// Sources/ProtoWire/WireReader.swift - a cursor over borrowed protobuf bytes
//
// The reader never copies its input: it walks a pointer handed to it by
// `withUnsafeBytes`, and only the decoded values (strings, byte arrays,
// repeated fields) get storage of their own.

/// A cursor that decodes protobuf fields from a borrowed byte buffer.
///
/// A reader is created by ``ProtoMessage/init(serializedBytes:options:)`` (or
/// ``WireReader/withReader(over:options:_:)``) and lives only inside that
/// scope: it points into memory it does not own, so it must not escape.
///
/// Message types drive it in a loop:
///
/// ```swift
/// while let tag = try reader.nextTag() {
///   switch tag.fieldNumber {
///   case 1: name = try reader.readString(tag)
///   case 5: try reader.readMessage(tag, into: &pickupPoint)
///   default: try reader.skipField(tag, into: &unknownFields)
///   }
/// }
/// ```
///
/// `nextTag()` returns `nil` at the end of the message being decoded, which for
/// an embedded message is the end of its length-delimited payload.
public struct WireReader {
  /// The start of the top-level input. Offsets in errors are relative to it.
  @usableFromInline let base: UnsafeRawPointer?
  /// The next byte to read.
  @usableFromInline var position: Int
  /// The end of the message currently being decoded.
  @usableFromInline var limit: Int
  /// Where the most recent tag started, for preserving unknown fields byte-exact.
  @usableFromInline var tagStart: Int
  /// How many more levels of nesting are allowed.
  @usableFromInline var depthBudget: Int
  /// The configured nesting limit, for error reports.
  @usableFromInline let recursionLimit: Int
  /// The most elements one repeated field may hold (``WireDecodingOptions/maxRepeatedCount``).
  @usableFromInline let maxRepeatedCount: Int
  /// The limits of the element budgets, by slot.
  @usableFromInline let budgetLimits: WireBudgetSlots
  /// What is left of each whole-input budget, by slot.
  @usableFromInline var budgetRemaining: WireBudgetSlots

  /// Creates a reader over `buffer`, which must outlive the reader.
  @inlinable
  public init(_ buffer: UnsafeRawBufferPointer, options: WireDecodingOptions = .init()) {
    self.base = buffer.baseAddress
    self.position = 0
    self.limit = buffer.count
    self.tagStart = 0
    self.depthBudget = options.recursionLimit
    self.recursionLimit = options.recursionLimit
    self.maxRepeatedCount = options.maxRepeatedCount
    self.budgetLimits = options.budgetLimits
    self.budgetRemaining = options.budgetLimits
  }

  /// Runs `body` with a reader over the bytes of `bytes`, after checking the size limit.
  // Inlinable so that it is specialized for the caller's byte container and result type:
  // unspecialized, every decode looked up generic metadata for `Swift.Result<Result, _>`.
  @inlinable
  public static func withReader<Bytes: Sequence<UInt8>, Result>(
    over bytes: Bytes,
    options: WireDecodingOptions = .init(),
    _ body: (inout WireReader) throws(WireDecodingError) -> Result
  ) throws(WireDecodingError) -> Result {
    // `withContiguousStorageIfAvailable` borrows arrays, slices and buffers in place;
    // anything else is gathered into an array once.
    let outcome: Swift.Result<Result, WireDecodingError>? = bytes.withContiguousStorageIfAvailable { buffer in
      Swift.Result { () throws(WireDecodingError) -> Result in
        try withReader(over: UnsafeRawBufferPointer(buffer), options: options, body)
      }
    }
    if let outcome { return try outcome.get() }
    let array = Array(bytes)
    return try array.withUnsafeBytes { raw in
      Swift.Result { () throws(WireDecodingError) -> Result in
        try withReader(over: raw, options: options, body)
      }
    }.get()
  }

  /// Runs `body` with a reader over `buffer`, after checking the size limit.
  @inlinable
  public static func withReader<Result>(
    over buffer: UnsafeRawBufferPointer,
    options: WireDecodingOptions = .init(),
    _ body: (inout WireReader) throws(WireDecodingError) -> Result
  ) throws(WireDecodingError) -> Result {
    guard buffer.count <= options.maxMessageSize else { throw tooLarge(buffer.count, options: options) }
    var reader = WireReader(buffer, options: options)
    return try body(&reader)
  }

  @usableFromInline
  static func tooLarge(_ size: Int, options: WireDecodingOptions) -> WireDecodingError {
    WireDecodingError(.messageTooLarge(size: size, limit: options.maxMessageSize), offset: 0)
  }

  /// The number of bytes left in the message currently being decoded.
  public var remainingInMessage: Int { limit - position }

  /// The offset of the next byte from the start of the top-level input.
  public var offset: Int { position }

  // MARK: - Raw reads

  @inlinable
  func byte(at index: Int) -> UInt8 {
    // Safe: callers check `index < limit`, and `limit` never exceeds the buffer's count.
    base.unsafelyUnwrapped.load(fromByteOffset: index, as: UInt8.self)
  }

  /// Reads a varint of up to ten bytes. Bits past the 64th are discarded, as protobuf's runtimes do.
  @inlinable
  public mutating func readRawVarint() throws(WireDecodingError) -> UInt64 {
    // Fast path, inlined into every field read: most varints (tags, lengths, enums,
    // small numbers) are one byte.
    if position < limit {
      let first = byte(at: position)
      if first < 0x80 {
        position += 1
        return UInt64(first)
      }
    }
    return try readMultiByteVarint()
  }

  /// The general case of ``readRawVarint()``, kept out of line.
  @usableFromInline
  mutating func readMultiByteVarint() throws(WireDecodingError) -> UInt64 {
    var result: UInt64 = 0
    var shift: UInt64 = 0
    var index = position
    while true {
      guard index < limit else { throw WireDecodingError(.truncated, offset: index) }
      let byte = self.byte(at: index)
      index += 1
      result |= UInt64(byte & 0x7F) << shift
      if byte & 0x80 == 0 {
        position = index
        return result
      }
      shift += 7
      if shift >= 70 { throw WireDecodingError(.malformedVarint, offset: position) }
    }
  }

  /// Reads four little-endian bytes.
  @inlinable
  public mutating func readRawFixed32() throws(WireDecodingError) -> UInt32 {
    guard limit - position >= 4 else { throw WireDecodingError(.truncated, offset: position) }
    let value = base.unsafelyUnwrapped.loadUnaligned(fromByteOffset: position, as: UInt32.self)
    position += 4
    return UInt32(littleEndian: value)
  }

  /// Reads eight little-endian bytes.
  @inlinable
  public mutating func readRawFixed64() throws(WireDecodingError) -> UInt64 {
    guard limit - position >= 8 else { throw WireDecodingError(.truncated, offset: position) }
    let value = base.unsafelyUnwrapped.loadUnaligned(fromByteOffset: position, as: UInt64.self)
    position += 8
    return UInt64(littleEndian: value)
  }

  /// Reads a varint length and checks that that many bytes remain in the current message.
  /// Returns the start of the payload; the cursor is left at its start.
  @inlinable
  mutating func readLength() throws(WireDecodingError) -> Int {
    let lengthOffset = position
    let length = try readRawVarint()
    guard length <= UInt64(limit - position) else {
      throw WireDecodingError(.lengthPastEnd(length: length), offset: lengthOffset)
    }
    return Int(truncatingIfNeeded: length)
  }

  /// Reads a length-delimited payload and hands it to `body` as a borrowed buffer.
  @inlinable
  public mutating func withLengthDelimitedBytes<R>(
    _ body: (UnsafeRawBufferPointer) throws(WireDecodingError) -> R
  ) throws(WireDecodingError) -> R {
    let length = try readLength()
    let start = position
    position += length
    return try body(UnsafeRawBufferPointer(start: base.map { $0 + start }, count: length))
  }

  // MARK: - Tags

  /// Reads the next tag, or returns `nil` at the end of the current message.
  ///
  /// Throws for field number 0, wire types 6 and 7, a tag longer than five
  /// bytes, and an end-group tag (groups are only ever skipped, by ``skipField(_:into:)``).
  @inlinable
  public mutating func nextTag() throws(WireDecodingError) -> FieldTag? {
    guard position < limit else { return nil }
    tagStart = position
    // Fast path: one-byte tags cover field numbers 1...15.
    let first = byte(at: position)
    let raw: UInt64
    if first & 0x80 == 0 {
      position += 1
      raw = UInt64(first)
    } else {
      raw = try readRawVarint()
      guard raw <= UInt64(UInt32.max), position - tagStart <= 5 else {
        throw WireDecodingError(.malformedVarint, offset: tagStart)
      }
    }
    let tag = try Self.validTag(raw, offset: tagStart)
    if tag.wireType == .endGroup {
      throw WireDecodingError(.unmatchedEndGroup(field: tag.fieldNumber), offset: tagStart)
    }
    return tag
  }

  @inlinable
  static func validTag(_ raw: UInt64, offset: Int) throws(WireDecodingError) -> FieldTag {
    let wire = UInt8(truncatingIfNeeded: raw & 7)
    guard let wireType = WireType(rawValue: wire) else {
      throw WireDecodingError(.invalidWireType(wire), offset: offset)
    }
    let number = Int(truncatingIfNeeded: raw >> 3)
    guard number >= 1 else { throw WireDecodingError(.invalidFieldNumber, offset: offset) }
    return FieldTag(fieldNumber: number, wireType: wireType)
  }

  /// Throws ``WireDecodingError/Kind/wrongWireType(field:wireType:)`` unless `tag` has `expected`.
  @inlinable
  public func expect(_ tag: FieldTag, _ expected: WireType) throws(WireDecodingError) {
    guard tag.wireType == expected else {
      throw WireDecodingError(.wrongWireType(field: tag.fieldNumber, wireType: tag.wireType), offset: tagStart)
    }
  }

  // MARK: - Unknown fields and groups

  /// Skips the value of `tag` and appends the whole field, tag included, to `unknownFields`
  /// byte for byte. A group is skipped together with everything up to its matching end tag.
  @inlinable
  public mutating func skipField(_ tag: FieldTag, into unknownFields: inout UnknownFields) throws(WireDecodingError) {
    let start = tagStart
    try skipValue(tag)
    unknownFields.append(UnsafeRawBufferPointer(start: base.map { $0 + start }, count: position - start))
  }

  /// Skips the value of `tag` without keeping it.
  @usableFromInline
  mutating func skipValue(_ tag: FieldTag) throws(WireDecodingError) {
    switch tag.wireType {
    case .varint: _ = try readRawVarint()
    case .fixed64: _ = try readRawFixed64()
    case .fixed32: _ = try readRawFixed32()
    case .lengthDelimited: position += try readLength()
    case .startGroup: try skipGroup(fieldNumber: tag.fieldNumber)
    case .endGroup:
      throw WireDecodingError(.unmatchedEndGroup(field: tag.fieldNumber), offset: tagStart)
    }
  }

  /// Skips a group's contents up to and including the end tag with the same field number.
  @usableFromInline
  mutating func skipGroup(fieldNumber: Int) throws(WireDecodingError) {
    let groupStart = tagStart
    guard depthBudget > 0 else {
      throw WireDecodingError(.recursionLimitExceeded(limit: recursionLimit), offset: groupStart)
    }
    depthBudget -= 1
    defer { depthBudget += 1 }
    while true {
      guard position < limit else {
        throw WireDecodingError(.unterminatedGroup(field: fieldNumber), offset: groupStart)
      }
      let innerStart = position
      let raw = try readRawVarint()
      guard raw <= UInt64(UInt32.max), position - innerStart <= 5 else {
        throw WireDecodingError(.malformedVarint, offset: innerStart)
      }
      let inner = try Self.validTag(raw, offset: innerStart)
      if inner.wireType == .endGroup {
        guard inner.fieldNumber == fieldNumber else {
          throw WireDecodingError(.unmatchedEndGroup(field: inner.fieldNumber), offset: innerStart)
        }
        return
      }
      tagStart = innerStart
      try skipValue(inner)
    }
  }

  // MARK: - Embedded messages

  /// Decodes the length-delimited message of `tag` and merges it into `message`,
  /// as protobuf does when an embedded message field appears more than once.
  @inlinable
  public mutating func readMessage<M: ProtoMessage>(_ tag: FieldTag, into message: inout M) throws(WireDecodingError) {
    try expect(tag, .lengthDelimited)
    let fieldStart = tagStart
    let length = try readLength()
    guard depthBudget > 0 else {
      throw WireDecodingError(.recursionLimitExceeded(limit: recursionLimit), offset: fieldStart)
    }
    let savedLimit = limit
    limit = position + length
    depthBudget -= 1
    try message.decodeFields(from: &self)
    depthBudget += 1
    limit = savedLimit
  }

  /// Decodes the message of `tag` into `message`, creating it first if it is absent.
  @inlinable
  public mutating func readMessage<M: ProtoMessage>(_ tag: FieldTag, into message: inout M?) throws(WireDecodingError) {
    // Merged in place through the optional: no copy of the (possibly large) message
    // is made, and what it holds stays uniquely referenced while it is merged.
    // (Not `message == nil`: with `M: Equatable` that picks `Optional.==` and compares
    // whole messages.)
    if case .none = message { message = M() }
    try readMessage(tag, into: &message!)
  }

  /// Decodes the message of `tag` and appends it to `messages`, within the element limits.
  ///
  /// The element counts against ``WireDecodingOptions/maxRepeatedCount`` and, when given, against
  /// `budget`; over either limit it throws ``WireDecodingError/Kind/elementLimitExceeded(field:limit:budget:)``
  /// at its tag, before decoding it.
  ///
  /// When `messages` is full, the fields of the same tag that follow this one back to
  /// back (a repeated field's usual encoding) are counted first and room is reserved
  /// for all of them, so decoding a repeated field allocates its array once. The room
  /// reserved never goes past what the limits still allow, nor past what the bytes left
  /// in the message can hold.
  @inlinable
  public mutating func readRepeatedMessage<M: ProtoMessage>(
    _ tag: FieldTag, into messages: inout [M], budget: WireElementBudget? = nil
  ) throws(WireDecodingError) {
    let room = try elementRoom(tag, count: messages.count, budget: budget)
    if messages.count == messages.capacity {
      let run = countLengthDelimitedRun(upTo: room)
      if run > 1 {
        // Doubling at least keeps appends amortized when a field's elements are interleaved with others;
        // each element takes at least two bytes (tag and length), which bounds what the input can still hold.
        let byBytes = 1 + Swift.max(0, limit - position - 1) / 2
        messages.reserveCapacity(messages.count + Swift.min(Swift.max(run, messages.count), room, byBytes))
      }
    }
    if let budget, budget.scope == .wholeInput { budgetRemaining[budget.slot] -= 1 }
    var value = M()
    try readMessage(tag, into: &value)
    messages.append(consume value)
  }

  /// Decodes the message of `tag` and appends it to `storage`, a container other than `Array` (a compact
  /// representation of a repeated message field), within the element limits and reserving room ahead for a
  /// run of elements exactly as ``readRepeatedMessage(_:into:budget:)`` does for an array.
  @inlinable
  public mutating func readRepeatedMessage<S: WireRepeatedMessageStorage>(
    _ tag: FieldTag, into storage: inout S, budget: WireElementBudget? = nil
  ) throws(WireDecodingError) {
    let count = storage.count
    let room = try elementRoom(tag, count: count, budget: budget)
    if count == storage.capacity {
      let run = countLengthDelimitedRun(upTo: room)
      if run > 1 {
        let byBytes = 1 + Swift.max(0, limit - position - 1) / 2
        storage.reserveCapacity(count + Swift.min(Swift.max(run, count), room, byBytes))
      }
    }
    if let budget, budget.scope == .wholeInput { budgetRemaining[budget.slot] -= 1 }
    var value = S.Element()
    try readMessage(tag, into: &value)
    storage.append(value)
  }

  /// How many more elements the repeated field of `tag`, holding `count`, may take: at least 1,
  /// or it throws ``WireDecodingError/Kind/elementLimitExceeded(field:limit:budget:)`` at the tag.
  @inlinable
  func elementRoom(_ tag: FieldTag, count: Int, budget: WireElementBudget?) throws(WireDecodingError) -> Int {
    var room = maxRepeatedCount - count
    if let budget {
      let budgetRoom = budget.scope == .eachField ? budgetLimits[budget.slot] - count : budgetRemaining[budget.slot]
      room = Swift.min(room, budgetRoom)
    }
    guard room > 0 else { throw elementLimitError(tag, count: count, budget: budget) }
    return room
  }

  /// The error for an element of `tag` over a limit: the budget's when that is the one reached.
  @usableFromInline
  func elementLimitError(_ tag: FieldTag, count: Int, budget: WireElementBudget?) -> WireDecodingError {
    var limit = maxRepeatedCount
    var name = "maxRepeatedCount"
    if let budget {
      let budgetRoom = budget.scope == .eachField ? budgetLimits[budget.slot] - count : budgetRemaining[budget.slot]
      if budgetRoom <= maxRepeatedCount - count {
        limit = budgetLimits[budget.slot]
        name = budget.name
      }
    }
    return WireDecodingError(
      .elementLimitExceeded(field: tag.fieldNumber, limit: limit, budget: name), offset: tagStart)
  }

  /// How many length-delimited fields with the tag just read follow back to back,
  /// starting with the one whose length is at the cursor, counting no further than `maxCount`.
  /// Reads ahead without moving the cursor and without throwing: it stops at the first byte
  /// that does not fit, and the decode proper reports what is wrong there.
  @usableFromInline
  func countLengthDelimitedRun(upTo maxCount: Int = .max) -> Int {
    guard let base else { return 0 }
    let tagLength = position &- tagStart
    let firstTagByte = base.load(fromByteOffset: tagStart, as: UInt8.self)
    var count = 0
    var index = position
    while true {
      // The length varint at `index`; one byte for payloads under 128 bytes.
      guard index < limit else { return count }
      var length = UInt64(base.load(fromByteOffset: index, as: UInt8.self))
      index &+= 1
      if length >= 0x80 {
        length &= 0x7F
        var shift: UInt64 = 7
        while true {
          guard index < limit, shift < 64 else { return count }
          let byte = base.load(fromByteOffset: index, as: UInt8.self)
          index &+= 1
          length |= UInt64(byte & 0x7F) << shift
          if byte & 0x80 == 0 { break }
          shift &+= 7
        }
      }
      // Safe: `index <= limit` here, so the subtraction cannot underflow.
      guard length <= UInt64(limit &- index) else { return count }
      count &+= 1
      if count >= maxCount { return count }
      index &+= Int(truncatingIfNeeded: length)
      // The next field must start with the same tag bytes.
      guard limit &- index > tagLength, base.load(fromByteOffset: index, as: UInt8.self) == firstTagByte else {
        return count
      }
      var offset = 1
      while offset < tagLength {
        let byte = base.load(fromByteOffset: index &+ offset, as: UInt8.self)
        guard byte == base.load(fromByteOffset: tagStart &+ offset, as: UInt8.self) else { return count }
        offset &+= 1
      }
      index &+= tagLength
    }
  }
}
