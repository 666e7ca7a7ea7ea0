// Sources/NATSClient/CInterop.swift - C strings, durations, message bytes and headers across the libnats boundary

internal import CNATS

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// C copies of Swift strings that live until ``free()``: libnats configuration structs point at
/// application-owned strings for the length of one call.
final class CStringArena {
  private var allocations: [UnsafeMutableRawPointer] = []

  /// A NUL-terminated copy of `string` (nil for nil), valid until ``free()``.
  func copy(_ string: String?) -> UnsafePointer<CChar>? {
    guard let string else { return nil }
    let copy = strdup(string)!
    allocations.append(UnsafeMutableRawPointer(copy))
    return UnsafePointer(copy)
  }

  /// A C array of copies of `strings` (nil when `strings` is empty), valid until ``free()``.
  func copyArray(_ strings: [String]) -> UnsafeMutablePointer<UnsafePointer<CChar>?>? {
    guard !strings.isEmpty else { return nil }
    let array = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: strings.count)
    allocations.append(UnsafeMutableRawPointer(array))
    for (index, string) in strings.enumerated() { array[index] = copy(string) }
    return array
  }

  /// A C array of `values` (nil when empty), valid until ``free()``.
  func copyArray(_ values: [Int64]) -> UnsafeMutablePointer<Int64>? {
    guard !values.isEmpty else { return nil }
    let array = UnsafeMutablePointer<Int64>.allocate(capacity: values.count)
    array.initialize(from: values, count: values.count)
    allocations.append(UnsafeMutableRawPointer(array))
    return array
  }

  /// Frees every copy made so far.
  func free() {
    for allocation in allocations { Glibc.free(allocation) }
    allocations.removeAll()
  }

  deinit { free() }
}

/// A Swift string from a C string libnats owns (nil for NULL); bytes that are not UTF-8 become U+FFFD.
func string(_ pointer: UnsafePointer<CChar>?) -> String? {
  pointer.map { String(cString: $0) }
}

/// Same, for the `char *` fields of libnats' structs.
func string(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
  pointer.map { String(cString: $0) }
}

extension Duration {
  /// Whole nanoseconds, clamped to `Int64` (negative durations give 0).
  var clampedNanoseconds: Int64 {
    let (seconds, attoseconds) = components
    guard seconds >= 0 else { return 0 }
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return .max }
    let (sum, overflowAdding) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
    return overflowAdding ? .max : sum
  }

  /// Milliseconds, rounded up so that a positive duration never becomes 0, clamped to `Int64`.
  var clampedMilliseconds: Int64 {
    let nanoseconds = clampedNanoseconds
    return nanoseconds == .max ? .max / 1_000_000 : (nanoseconds + 999_999) / 1_000_000
  }
}

/// The bytes of a received message's payload.
func payload(of message: OpaquePointer) -> [UInt8] {
  let count = Int(natsMsg_GetDataLength(message))
  guard count > 0, let data = natsMsg_GetData(message) else { return [] }
  return [UInt8](UnsafeRawBufferPointer(start: data, count: count))
}

/// A received message's headers; a header block libnats cannot parse gives no headers rather than a crash
/// (the payload is still delivered).
func headers(of message: OpaquePointer) -> NATSHeaders {
  var keys: UnsafeMutablePointer<UnsafePointer<CChar>?>?
  var count: Int32 = 0
  guard natsMsgHeader_Keys(message, &keys, &count) == NATS_OK, let keys else { return NATSHeaders() }
  // libnats owns the strings; the array is ours to free.
  defer { Glibc.free(UnsafeMutableRawPointer(mutating: keys)) }
  var headers = NATSHeaders()
  for index in 0..<Int(count) {
    guard let key = keys[index] else { continue }
    var values: UnsafeMutablePointer<UnsafePointer<CChar>?>?
    var valueCount: Int32 = 0
    guard natsMsgHeader_Values(message, key, &values, &valueCount) == NATS_OK, let values else { continue }
    let name = String(cString: key)
    for valueIndex in 0..<Int(valueCount) {
      if let value = values[valueIndex] { headers.fields.append(.init(name: name, value: String(cString: value))) }
    }
    Glibc.free(UnsafeMutableRawPointer(mutating: values))
  }
  return headers
}

/// A new libnats message for `subject` with `data` and `headers`; the caller destroys it (or hands it to
/// libnats).
func makeMessage(
  subject: String, reply: String? = nil, data: [UInt8], headers: NATSHeaders, operation: String
) throws(NATSError) -> OpaquePointer {
  try validateSubject(subject, operation: operation)
  try headers.validate(operation: operation)
  var message: OpaquePointer?
  let status = data.withUnsafeBytes { bytes in
    natsMsg_Create(
      &message, subject, reply, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
  }
  try checkStatus(status, operation)
  guard let message else { throw NATSError(code: .noMemory, message: "\(operation): no message") }
  for field in headers.fields {
    let status = natsMsgHeader_Add(message, field.name, field.value)
    if status != NATS_OK {
      let error = NATSError(status, operation: "\(operation): header \(field.name)")
      natsMsg_Destroy(message)
      throw error
    }
  }
  return message
}

/// Rejects an empty subject or one with whitespace, which libnats would otherwise send as a broken protocol line.
func validateSubject(_ subject: String, operation: String) throws(NATSError) {
  guard !subject.isEmpty, !subject.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
    throw NATSError(code: .invalidSubject, message: "\(operation): invalid subject \"\(subject)\"")
  }
}

/// Rejects a stream or consumer name that JetStream does not allow (empty, or with `.`, `*`, `>`, `/`, `\`,
/// whitespace or control characters); libnats writes names into JSON and subjects without escaping them.
func validateName(_ name: String, kind: String, operation: String) throws(NATSError) {
  let forbidden: Set<UInt8> = [
    UInt8(ascii: "."), UInt8(ascii: "*"), UInt8(ascii: ">"), UInt8(ascii: "/"),
    UInt8(ascii: "\\"), UInt8(ascii: "\""),
  ]
  guard !name.isEmpty, !name.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F || forbidden.contains($0) }) else {
    throw NATSError(code: .invalidArgument, message: "\(operation): invalid \(kind) name \"\(name)\"")
  }
}

/// Rejects text that libnats would copy into a JSON string without escaping (quotes, backslashes, control
/// characters).
func validateJSONText(_ text: String, field: String, operation: String) throws(NATSError) {
  guard !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
    throw NATSError(
      code: .invalidArgument,
      message: "\(operation): \(field) may not contain quotes, backslashes or control characters")
  }
}
