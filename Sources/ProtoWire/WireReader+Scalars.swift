// Sources/ProtoWire/WireReader+Scalars.swift - typed reads of scalar fields
//
// Each read checks the tag's wire type against the field's declared type and
// throws `wrongWireType` on a mismatch. Repeated scalar reads accept both the
// packed (one length-delimited run) and the unpacked (one tag per element)
// encodings, as protobuf requires of parsers.

extension WireReader {
  // MARK: - Singular varint fields

  /// Reads an `int32` field (a varint truncated to 32 bits).
  @inlinable
  public mutating func readInt32(_ tag: FieldTag) throws(WireDecodingError) -> Int32 {
    try expect(tag, .varint)
    return Int32(truncatingIfNeeded: try readRawVarint())
  }

  /// Reads an `int64` field.
  @inlinable
  public mutating func readInt64(_ tag: FieldTag) throws(WireDecodingError) -> Int64 {
    try expect(tag, .varint)
    return Int64(bitPattern: try readRawVarint())
  }

  /// Reads a `uint32` field (a varint truncated to 32 bits).
  @inlinable
  public mutating func readUInt32(_ tag: FieldTag) throws(WireDecodingError) -> UInt32 {
    try expect(tag, .varint)
    return UInt32(truncatingIfNeeded: try readRawVarint())
  }

  /// Reads a `uint64` field.
  @inlinable
  public mutating func readUInt64(_ tag: FieldTag) throws(WireDecodingError) -> UInt64 {
    try expect(tag, .varint)
    return try readRawVarint()
  }

  /// Reads a `sint32` field (zigzag).
  @inlinable
  public mutating func readSInt32(_ tag: FieldTag) throws(WireDecodingError) -> Int32 {
    try expect(tag, .varint)
    return ZigZag.decoded(UInt32(truncatingIfNeeded: try readRawVarint()))
  }

  /// Reads a `sint64` field (zigzag).
  @inlinable
  public mutating func readSInt64(_ tag: FieldTag) throws(WireDecodingError) -> Int64 {
    try expect(tag, .varint)
    return ZigZag.decoded(try readRawVarint())
  }

  /// Reads a `bool` field: any non-zero varint is `true`.
  @inlinable
  public mutating func readBool(_ tag: FieldTag) throws(WireDecodingError) -> Bool {
    try expect(tag, .varint)
    return try readRawVarint() != 0
  }

  /// Reads an enum field; values the enum does not know are kept.
  @inlinable
  public mutating func readEnum<E: ProtoEnum>(_ tag: FieldTag) throws(WireDecodingError) -> E {
    try expect(tag, .varint)
    return E(rawValue: Int32(truncatingIfNeeded: try readRawVarint()))
  }

  // MARK: - Singular fixed-width fields

  /// Reads a `fixed32` field.
  @inlinable
  public mutating func readFixed32(_ tag: FieldTag) throws(WireDecodingError) -> UInt32 {
    try expect(tag, .fixed32)
    return try readRawFixed32()
  }

  /// Reads a `fixed64` field.
  @inlinable
  public mutating func readFixed64(_ tag: FieldTag) throws(WireDecodingError) -> UInt64 {
    try expect(tag, .fixed64)
    return try readRawFixed64()
  }

  /// Reads an `sfixed32` field.
  @inlinable
  public mutating func readSFixed32(_ tag: FieldTag) throws(WireDecodingError) -> Int32 {
    try expect(tag, .fixed32)
    return Int32(bitPattern: try readRawFixed32())
  }

  /// Reads an `sfixed64` field.
  @inlinable
  public mutating func readSFixed64(_ tag: FieldTag) throws(WireDecodingError) -> Int64 {
    try expect(tag, .fixed64)
    return Int64(bitPattern: try readRawFixed64())
  }

  /// Reads a `float` field.
  @inlinable
  public mutating func readFloat(_ tag: FieldTag) throws(WireDecodingError) -> Float {
    try expect(tag, .fixed32)
    return Float(bitPattern: try readRawFixed32())
  }

  /// Reads a `double` field.
  @inlinable
  public mutating func readDouble(_ tag: FieldTag) throws(WireDecodingError) -> Double {
    try expect(tag, .fixed64)
    return Double(bitPattern: try readRawFixed64())
  }

  // MARK: - Fast paths for the package's own message types

  /// Reads the rest of the current message if it is exactly two fixed64 fields with the
  /// one-byte tags `first` then `second`, and returns their values; otherwise returns `nil`
  /// and leaves the reader as it was.
  ///
  /// A `google.type.LatLng` with both coordinates set is always encoded that way, and a
  /// route holds hundreds of them; the general field loop decodes those bytes to the same
  /// two values.
  @inlinable
  package mutating func readExactFixed64Pair(tags first: UInt8, _ second: UInt8) -> (UInt64, UInt64)? {
    guard limit - position == 18, let base else { return nil }
    guard base.load(fromByteOffset: position, as: UInt8.self) == first,
      base.load(fromByteOffset: position + 9, as: UInt8.self) == second
    else { return nil }
    let a = base.loadUnaligned(fromByteOffset: position + 1, as: UInt64.self)
    let b = base.loadUnaligned(fromByteOffset: position + 10, as: UInt64.self)
    tagStart = position + 9
    position += 18
    return (UInt64(littleEndian: a), UInt64(littleEndian: b))
  }

  // MARK: - Length-delimited scalars

  /// Reads a `string` field, rejecting bytes that are not valid UTF-8.
  @inlinable
  public mutating func readString(_ tag: FieldTag) throws(WireDecodingError) -> String {
    try expect(tag, .lengthDelimited)
    let fieldStart = tagStart
    return try withLengthDelimitedBytes { (raw) throws(WireDecodingError) -> String in
      let bytes = raw.bindMemoryIfNonEmpty()
      // ASCII (names, IDs) is valid UTF-8 as it stands; only other text needs the general
      // validator, which the standard library does not specialize.
      if bytes.isASCII { return String(decoding: bytes, as: UTF8.self) }
      guard let string = String(validating: bytes, as: UTF8.self) else {
        throw WireDecodingError(.invalidUTF8(field: tag.fieldNumber), offset: fieldStart)
      }
      return string
    }
  }

  /// Reads a `bytes` field.
  @inlinable
  public mutating func readBytes(_ tag: FieldTag) throws(WireDecodingError) -> [UInt8] {
    try expect(tag, .lengthDelimited)
    return try withLengthDelimitedBytes { (raw) throws(WireDecodingError) -> [UInt8] in [UInt8](raw) }
  }

  /// Reads a `string` field and appends it to `values`, within ``WireDecodingOptions/maxRepeatedCount``.
  @inlinable
  public mutating func readRepeatedString(_ tag: FieldTag, into values: inout [String]) throws(WireDecodingError) {
    _ = try elementRoom(tag, count: values.count, budget: nil)
    values.append(try readString(tag))
  }

  /// Reads a `bytes` field and appends it to `values`, within ``WireDecodingOptions/maxRepeatedCount``.
  @inlinable
  public mutating func readRepeatedBytes(_ tag: FieldTag, into values: inout [[UInt8]]) throws(WireDecodingError) {
    _ = try elementRoom(tag, count: values.count, budget: nil)
    values.append(try readBytes(tag))
  }

  // MARK: - Repeated scalars, packed or not

  /// Reads one element (unpacked) or a packed run of elements and appends them to `values`.
  ///
  /// Every element counts against ``WireDecodingOptions/maxRepeatedCount``: a packed run is counted
  /// before anything is reserved or decoded, and a run that would go over the limit is refused at
  /// its tag. The reservation is the run's own count, which its bytes bound.
  @inlinable
  mutating func readRepeated<T>(
    _ tag: FieldTag,
    elementWireType: WireType,
    into values: inout [T],
    _ element: (inout WireReader) throws(WireDecodingError) -> T
  ) throws(WireDecodingError) {
    let room = try elementRoom(tag, count: values.count, budget: nil)
    if tag.wireType == elementWireType {
      values.append(try element(&self))
      return
    }
    try expect(tag, .lengthDelimited)
    let fieldStart = tagStart
    let length = try readLength()
    let end = position + length
    switch elementWireType {
    case .fixed32, .fixed64:
      let width = elementWireType == .fixed32 ? 4 : 8
      guard length % width == 0 else {
        throw WireDecodingError(.malformedPackedField(field: tag.fieldNumber), offset: fieldStart)
      }
      guard length / width <= room else { throw packedLimitError(tag, at: fieldStart) }
      values.reserveCapacity(values.count + length / width)
    case .varint:
      // Every varint ends with the one byte of it that has the high bit clear.
      let count = countVarintEnds(from: position, to: end)
      guard count <= room else { throw packedLimitError(tag, at: fieldStart) }
      if values.count + count > values.capacity { values.reserveCapacity(values.count + count) }
    default:
      break
    }
    let savedLimit = limit
    limit = end
    while position < end {
      values.append(try element(&self))
    }
    limit = savedLimit
  }

  /// The error for a packed run of `tag` that would take its field over the limit.
  @usableFromInline
  func packedLimitError(_ tag: FieldTag, at offset: Int) -> WireDecodingError {
    let kind = WireDecodingError.Kind.elementLimitExceeded(
      field: tag.fieldNumber, limit: maxRepeatedCount, budget: "maxRepeatedCount")
    return WireDecodingError(kind, offset: offset)
  }

  /// The number of bytes in `start..<end` with the high bit clear: how many varints a
  /// well-formed packed run there holds.
  @usableFromInline
  func countVarintEnds(from start: Int, to end: Int) -> Int {
    guard let base else { return 0 }
    var count = 0
    for index in start..<end where base.load(fromByteOffset: index, as: UInt8.self) < 0x80 {
      count += 1
    }
    return count
  }

  /// Reads `repeated int32`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedInt32(_ tag: FieldTag, into values: inout [Int32]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .varint, into: &values) { (r) throws(WireDecodingError) in
      Int32(truncatingIfNeeded: try r.readRawVarint())
    }
  }

  /// Reads `repeated int64`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedInt64(_ tag: FieldTag, into values: inout [Int64]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .varint, into: &values) { (r) throws(WireDecodingError) in
      Int64(bitPattern: try r.readRawVarint())
    }
  }

  /// Reads `repeated uint32`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedUInt32(_ tag: FieldTag, into values: inout [UInt32]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .varint, into: &values) { (r) throws(WireDecodingError) in
      UInt32(truncatingIfNeeded: try r.readRawVarint())
    }
  }

  /// Reads `repeated uint64`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedUInt64(_ tag: FieldTag, into values: inout [UInt64]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .varint, into: &values) { (r) throws(WireDecodingError) in
      try r.readRawVarint()
    }
  }

  /// Reads `repeated sint32`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedSInt32(_ tag: FieldTag, into values: inout [Int32]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .varint, into: &values) { (r) throws(WireDecodingError) in
      ZigZag.decoded(UInt32(truncatingIfNeeded: try r.readRawVarint()))
    }
  }

  /// Reads `repeated sint64`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedSInt64(_ tag: FieldTag, into values: inout [Int64]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .varint, into: &values) { (r) throws(WireDecodingError) in
      ZigZag.decoded(try r.readRawVarint())
    }
  }

  /// Reads `repeated bool`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedBool(_ tag: FieldTag, into values: inout [Bool]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .varint, into: &values) { (r) throws(WireDecodingError) in
      try r.readRawVarint() != 0
    }
  }

  /// Reads a repeated enum field, packed or unpacked; unknown values are kept.
  @inlinable
  public mutating func readRepeatedEnum<E: ProtoEnum>(_ tag: FieldTag, into values: inout [E]) throws(WireDecodingError)
  {
    try readRepeated(tag, elementWireType: .varint, into: &values) { (r) throws(WireDecodingError) in
      E(rawValue: Int32(truncatingIfNeeded: try r.readRawVarint()))
    }
  }

  /// Reads `repeated fixed32`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedFixed32(_ tag: FieldTag, into values: inout [UInt32]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .fixed32, into: &values) { (r) throws(WireDecodingError) in
      try r.readRawFixed32()
    }
  }

  /// Reads `repeated fixed64`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedFixed64(_ tag: FieldTag, into values: inout [UInt64]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .fixed64, into: &values) { (r) throws(WireDecodingError) in
      try r.readRawFixed64()
    }
  }

  /// Reads `repeated sfixed32`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedSFixed32(_ tag: FieldTag, into values: inout [Int32]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .fixed32, into: &values) { (r) throws(WireDecodingError) in
      Int32(bitPattern: try r.readRawFixed32())
    }
  }

  /// Reads `repeated sfixed64`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedSFixed64(_ tag: FieldTag, into values: inout [Int64]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .fixed64, into: &values) { (r) throws(WireDecodingError) in
      Int64(bitPattern: try r.readRawFixed64())
    }
  }

  /// Reads `repeated float`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedFloat(_ tag: FieldTag, into values: inout [Float]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .fixed32, into: &values) { (r) throws(WireDecodingError) in
      Float(bitPattern: try r.readRawFixed32())
    }
  }

  /// Reads `repeated double`, packed or unpacked.
  @inlinable
  public mutating func readRepeatedDouble(_ tag: FieldTag, into values: inout [Double]) throws(WireDecodingError) {
    try readRepeated(tag, elementWireType: .fixed64, into: &values) { (r) throws(WireDecodingError) in
      Double(bitPattern: try r.readRawFixed64())
    }
  }
}

extension UnsafeBufferPointer<UInt8> {
  /// Whether every byte is below 0x80.
  @inlinable
  var isASCII: Bool {
    var high: UInt8 = 0
    for byte in self { high |= byte }
    return high < 0x80
  }
}

extension UnsafeRawBufferPointer {
  /// The bytes as `UInt8`s. An empty buffer may have no base address; it yields an empty buffer.
  @inlinable
  func bindMemoryIfNonEmpty() -> UnsafeBufferPointer<UInt8> {
    guard let base = baseAddress, count > 0 else { return UnsafeBufferPointer(start: nil, count: 0) }
    // Safe: protobuf input is plain bytes; viewing it as UInt8 never conflicts with another binding.
    return UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: count)
  }
}
