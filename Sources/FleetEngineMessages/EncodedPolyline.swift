// Sources/FleetEngineMessages/EncodedPolyline.swift - Google's encoded polyline algorithm format
//
// Fleet Engine sends routes either as LatLng lists or as encoded polylines
// (Trip.current_route_segment, TripWaypoint.encoded_path_to_waypoint,
// ConsumableTrafficPolyline.encoded_path_to_waypoint). The mobile Consumer SDK
// documents the latter as "decoding not yet supported"; this is the decoder
// (and the encoder the simulator needs to produce them).

/// Google's encoded polyline algorithm format: each coordinate is rounded to
/// `precision` decimal digits, stored as the difference from the previous
/// point's, zigzag-folded so small negative numbers stay small, and written as
/// 5-bit groups, least significant first, in the printable ASCII range `?`…`~`
/// (a group ORed with `0x20` means "more groups follow").
///
/// Decoding never traps: malformed or hostile input gives `nil`, the work is
/// linear in the input's length, and the memory is bounded by the points the
/// input really holds (and by `maxPoints`), never by its length alone.
public enum EncodedPolyline {
  /// The precisions (decimal digits) accepted. Fleet Engine and the Directions
  /// API use 5; OSRM and Valhalla use 6. Up to 10 digits a coordinate stays far
  /// from Int64's range, which is what makes the arithmetic overflow-free.
  public static let supportedPrecisions: ClosedRange<Int> = 0...10

  /// At most this many 5-bit groups make one value: 12 groups carry 60 bits,
  /// more than any coordinate at a supported precision needs (and than ±2^53,
  /// the clamp `encode` applies). A longer run of continuation groups is
  /// malformed, and rejecting it keeps shifts within 64 bits.
  static let maximumGroupsPerValue = 12

  /// The largest magnitude, in units of the precision, `encode` writes: the
  /// largest range of consecutive integers a Double holds exactly.
  static let maximumScaledMagnitude: Double = 9_007_199_254_740_992  // 2^53

  /// The encoded polyline of `points`.
  ///
  /// Coordinates are rounded half away from zero, as the format's reference
  /// implementations do. A non-finite coordinate is written as 0 and one beyond
  /// ±2^53 units is clamped, so the output is always decodable.
  ///
  /// - Precondition: `precision` is in ``supportedPrecisions``.
  public static func encode<Points: Collection<LatLng>>(_ points: Points, precision: Int = 5) -> String {
    precondition(supportedPrecisions.contains(precision), "polyline precision \(precision) is not in 0...10")
    let factor = powerOfTen(precision)
    var bytes: [UInt8] = []
    // Typical city-scale deltas take 3–4 groups per coordinate.
    bytes.reserveCapacity(points.count * 8)
    var previousLatitude: Int64 = 0
    var previousLongitude: Int64 = 0
    for point in points {
      let latitude = scaled(point.latitude, by: factor)
      let longitude = scaled(point.longitude, by: factor)
      appendValue(latitude - previousLatitude, to: &bytes)
      appendValue(longitude - previousLongitude, to: &bytes)
      previousLatitude = latitude
      previousLongitude = longitude
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// The points of an encoded polyline, or `nil` when `encoded` is malformed:
  /// a character outside `?`…`~`, a value cut short, a latitude without its
  /// longitude, a value longer than 12 groups, a running sum that overflows, or
  /// a `precision` outside ``supportedPrecisions``; or when it holds more than
  /// `maxPoints` points (found before any of them is decoded). The empty string
  /// is the empty polyline. Coordinates are not range-checked.
  public static func decode(_ encoded: String, precision: Int = 5, maxPoints: Int = .max) -> [LatLng]? {
    guard supportedPrecisions.contains(precision) else { return nil }
    let factor = powerOfTen(precision)
    if let decoded = encoded.utf8.withContiguousStorageIfAvailable({
      decode($0, factor: factor, maxPoints: maxPoints)
    }) {
      return decoded
    }
    // Bridged or otherwise non-contiguous strings: copy once, then decode the same way.
    return Array(encoded.utf8).withUnsafeBufferPointer { decode($0, factor: factor, maxPoints: maxPoints) }
  }

  /// How many points ``decode(_:precision:maxPoints:)`` returns for `encoded` when it is well
  /// formed; for malformed input, an upper bound. One pass over the bytes, nothing allocated:
  /// the way to check a polyline against a limit before decoding it.
  public static func pointCount(_ encoded: String) -> Int {
    if let count = encoded.utf8.withContiguousStorageIfAvailable({ pointCount($0) }) { return count }
    return Array(encoded.utf8).withUnsafeBufferPointer { pointCount($0) }
  }

  // MARK: - Implementation

  /// 10^exponent for exponent in 0...10 (exact in a Double).
  static func powerOfTen(_ exponent: Int) -> Double {
    var value = 1.0
    for _ in 0..<exponent { value *= 10 }
    return value
  }

  /// A coordinate in units of 10^-precision, rounded, with non-finite values as 0
  /// and magnitudes clamped so every difference fits the group limit.
  static func scaled(_ coordinate: Double, by factor: Double) -> Int64 {
    let value = (coordinate * factor).rounded(.toNearestOrAwayFromZero)
    guard !value.isNaN else { return 0 }
    return Int64(min(max(value, -maximumScaledMagnitude), maximumScaledMagnitude))
  }

  /// Appends one signed value: zigzag-folded, then 5-bit groups from the least significant.
  static func appendValue(_ value: Int64, to bytes: inout [UInt8]) {
    var folded = UInt64(bitPattern: value << 1)
    if value < 0 { folded = ~folded }
    while folded >= 0x20 {
      bytes.append(UInt8(truncatingIfNeeded: (0x20 | (folded & 0x1F)) + 63))
      folded >>= 5
    }
    bytes.append(UInt8(truncatingIfNeeded: folded + 63))
  }

  /// Values end with a group below 0x20, a byte in `?`…`^` (63...94); two values make a point.
  /// A trailing unpaired value counts as a point, so the count bounds what decoding can produce.
  static func pointCount(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
    var values = 0
    for byte in bytes where byte &- 63 < 0x20 { values += 1 }
    return (values + 1) / 2
  }

  /// Decodes pairs of values (latitude, longitude) until the input ends; `nil` at the first malformed
  /// value, or at once when the input holds more than `maxPoints` points.
  static func decode(_ bytes: UnsafeBufferPointer<UInt8>, factor: Double, maxPoints: Int = .max) -> [LatLng]? {
    // Counted first: the reservation is what the input really holds, not a guess from its length
    // (a long run of continuation groups holds no point at all).
    let count = pointCount(bytes)
    guard count <= maxPoints else { return nil }
    var points: [LatLng] = []
    points.reserveCapacity(count)
    var index = 0
    var latitude: Int64 = 0
    var longitude: Int64 = 0
    while index < bytes.count {
      guard let deltaLatitude = readValue(bytes, at: &index), index < bytes.count,
        let deltaLongitude = readValue(bytes, at: &index)
      else { return nil }
      let (newLatitude, latitudeOverflow) = latitude.addingReportingOverflow(deltaLatitude)
      let (newLongitude, longitudeOverflow) = longitude.addingReportingOverflow(deltaLongitude)
      guard !latitudeOverflow, !longitudeOverflow else { return nil }
      latitude = newLatitude
      longitude = newLongitude
      points.append(LatLng(latitude: Double(latitude) / factor, longitude: Double(longitude) / factor))
    }
    return points
  }

  /// Reads one value starting at `index`; `nil` when it is malformed or cut short.
  static func readValue(_ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int) -> Int64? {
    var folded: UInt64 = 0
    var shift: UInt64 = 0
    for _ in 0..<maximumGroupsPerValue {
      guard index < bytes.count else { return nil }
      let byte = bytes[index]
      guard byte >= 63, byte <= 126 else { return nil }
      index += 1
      let group = UInt64(byte - 63)
      folded |= (group & 0x1F) << shift
      shift += 5
      if group < 0x20 {
        let magnitude = Int64(bitPattern: folded >> 1)
        return folded & 1 == 0 ? magnitude : ~magnitude
      }
    }
    return nil
  }
}
