// Sources/FleetEngineMessages/TripProgressUpdate.swift - a streamed update of a vehicle's progress, decoded flat
//
// Most streamed updates only move the vehicle: `updated_fields` names some of last_location (11),
// remaining_distance_meters (12), eta_to_first_waypoint (13), number_of_passengers (10),
// last_location_snappable (26) and remaining_time_to_first_waypoint (27). Decoding one into a whole
// `TripUpdate` builds (and then destroys) a `Trip` with every other field at its default and an
// `updated_fields` array; this reads the same bytes into the six fields alone, the mask into a bit set,
// and allocates nothing for the usual update. Anything else (a full trip, another field, unknown fields,
// a field repeated where merging would matter, malformed bytes) is not a progress update: the decoder
// returns nil and the caller decodes a `TripUpdate`, which reports the error if there is one.

public import ProtoWire

/// A `journeysharing.v1.TripUpdate` that names only a vehicle's progress fields
/// (``progressFieldNumbers``), decoded without building a `Trip`.
///
/// Applying it has the effect `Trip.apply(_:)` has for the equivalent `TripUpdate`
/// (``tripUpdate``): each named field takes the value the update carries, or is
/// cleared when the update does not carry it; fields it does not name stay as they were.
public struct TripProgressUpdate: Sendable, Hashable {
  /// The `Trip` field numbers a progress update may name, as a bit set (bit n for field n):
  /// number_of_passengers (10), last_location (11), remaining_distance_meters (12),
  /// eta_to_first_waypoint (13), last_location_snappable (26), remaining_time_to_first_waypoint (27).
  public static let progressFieldNumbers: UInt64 = 1 << 10 | 1 << 11 | 1 << 12 | 1 << 13 | 1 << 26 | 1 << 27

  /// Whether `Trip` field `number` is one a progress update may name (``progressFieldNumbers``).
  @inlinable
  public static func isProgressField(_ number: Int32) -> Bool {
    number > 0 && number < 64 && progressFieldNumbers & (1 << UInt64(number)) != 0
  }

  /// The fields the update names (`updated_fields`), as a bit set of `Trip` field numbers.
  public var updatedFields: UInt64 = 0
  /// `last_location` (field 11) of the update's trip.
  public var lastLocation: VehicleLocation?
  /// `remaining_distance_meters` (field 12) of the update's trip.
  public var remainingDistanceMeters: Int32Value?
  /// `eta_to_first_waypoint` (field 13) of the update's trip.
  public var etaToFirstWaypoint: Timestamp?
  /// `number_of_passengers` (field 10) of the update's trip.
  public var numberOfPassengers: Int32 = 0
  /// `last_location_snappable` (field 26) of the update's trip.
  public var lastLocationSnappable: Bool = false
  /// `remaining_time_to_first_waypoint` (field 27) of the update's trip.
  public var remainingTimeToFirstWaypoint: ProtobufDuration?
  /// `sequence` (field 4) of the update.
  public var sequence: UInt64 = 0
  /// `send_time` (field 5) of the update.
  public var sendTime: Timestamp?

  /// An empty progress update (names no field).
  public init() {}

  /// The progress fields of `update`, or nil when it is not a progress update: a full trip, or a field
  /// number outside ``progressFieldNumbers``. (Its trip's other fields and unknown fields are not
  /// named, so applying the update leaves them alone: they are not kept.)
  public init?(_ update: TripUpdate) {
    guard !update.fullTrip else { return nil }
    for number in update.updatedFields {
      guard name(number) else { return nil }
    }
    if let trip = update.trip {
      lastLocation = trip.lastLocation
      remainingDistanceMeters = trip.remainingDistanceMeters
      etaToFirstWaypoint = trip.etaToFirstWaypoint
      numberOfPassengers = trip.numberOfPassengers
      lastLocationSnappable = trip.lastLocationSnappable
      remainingTimeToFirstWaypoint = trip.remainingTimeToFirstWaypoint
    }
    sequence = update.sequence
    sendTime = update.sendTime
  }

  /// Whether the update names `Trip` field `number`.
  @inlinable
  public func names(_ number: Int) -> Bool { updatedFields & (1 << UInt64(number)) != 0 }

  /// The equivalent `TripUpdate`: its trip holds the named fields' values, and `updated_fields`
  /// lists the named fields in ascending order.
  public var tripUpdate: TripUpdate {
    var update = TripUpdate()
    var trip = Trip()
    if names(11) { trip.lastLocation = lastLocation }
    if names(12) { trip.remainingDistanceMeters = remainingDistanceMeters }
    if names(13) { trip.etaToFirstWaypoint = etaToFirstWaypoint }
    if names(10) { trip.numberOfPassengers = numberOfPassengers }
    if names(26) { trip.lastLocationSnappable = lastLocationSnappable }
    if names(27) { trip.remainingTimeToFirstWaypoint = remainingTimeToFirstWaypoint }
    update.trip = trip
    update.updatedFields = (1..<64).filter { names($0) }.map { Int32($0) }
    update.sequence = sequence
    update.sendTime = sendTime
    return update
  }

  /// Decodes `buffer`, an encoded `TripUpdate`, when it is a progress update; nil otherwise, and for
  /// anything the decoder does not take on itself (malformed bytes included): decode a `TripUpdate`
  /// with the same `options` then, which accepts or rejects the bytes as it always does.
  ///
  /// Accepted here: `trip` once, holding only the six progress fields (each message field once);
  /// `full_trip` false; `updated_fields` (packed or not) naming progress fields only; `sequence`;
  /// `send_time` once. The trip's fields the update does not name are decoded (so malformed ones still
  /// fall back) and dropped, as `Trip.apply(_:)` ignores them.
  public static func decode(_ buffer: UnsafeRawBufferPointer, options: WireDecodingOptions = .init()) -> Self? {
    guard buffer.count <= options.maxMessageSize, options.recursionLimit >= 2 else { return nil }
    var reader = WireReader(buffer, options: options)
    var update = TripProgressUpdate()
    var sawTrip = false
    var sawSendTime = false
    do throws(WireDecodingError) {
      while let tag = try reader.nextTag() {
        switch (tag.fieldNumber, tag.wireType) {
        case (1, .lengthDelimited):
          guard !sawTrip else { return nil }
          sawTrip = true
          // The trip is one level down: its reader gets one level less, as the nested decode would have.
          var nested = options
          nested.recursionLimit -= 1
          let decoded = try reader.withLengthDelimitedBytes { (bytes) throws(WireDecodingError) -> Bool in
            var tripReader = WireReader(bytes, options: nested)
            return try update.decodeTripFields(from: &tripReader)
          }
          guard decoded else { return nil }
        case (2, .varint):
          guard try !reader.readBool(tag) else { return nil }
        case (3, .varint), (3, .lengthDelimited):
          if tag.wireType == .varint {
            guard update.name(try reader.readInt32(tag)) else { return nil }
          } else {
            // Packed: read in place, no array.
            let named = try reader.withLengthDelimitedBytes { (bytes) throws(WireDecodingError) -> Bool in
              var packed = WireReader(bytes, options: options)
              while packed.remainingInMessage > 0 {
                let raw = try packed.readRawVarint()
                guard update.name(Int32(truncatingIfNeeded: raw)) else { return false }
              }
              return true
            }
            guard named else { return nil }
          }
        case (4, .varint):
          update.sequence = try reader.readUInt64(tag)
        case (5, .lengthDelimited):
          guard !sawSendTime else { return nil }
          sawSendTime = true
          try reader.readMessage(tag, into: &update.sendTime)
        default:
          return nil
        }
      }
    } catch {
      return nil
    }
    return update
  }

  /// Adds `number` to the named fields; false when it is not a progress field.
  private mutating func name(_ number: Int32) -> Bool {
    guard Self.isProgressField(number) else { return false }
    updatedFields |= 1 << UInt64(number)
    return true
  }

  /// Reads a trip's fields; false at a field that is not a progress field, or a message field seen twice.
  private mutating func decodeTripFields(from reader: inout WireReader) throws(WireDecodingError) -> Bool {
    var seen: UInt64 = 0
    while let tag = try reader.nextTag() {
      let number = tag.fieldNumber
      guard Self.isProgressField(Int32(truncatingIfNeeded: number)) else { return false }
      switch number {
      case 10: numberOfPassengers = try reader.readInt32(tag)
      case 26: lastLocationSnappable = try reader.readBool(tag)
      default:
        // A message field seen twice merges: leave that to the full decoder.
        guard seen & (1 << UInt64(number)) == 0 else { return false }
        seen |= 1 << UInt64(number)
        switch number {
        case 11: try reader.readMessage(tag, into: &lastLocation)
        case 12: try reader.readMessage(tag, into: &remainingDistanceMeters)
        case 13: try reader.readMessage(tag, into: &etaToFirstWaypoint)
        default: try reader.readMessage(tag, into: &remainingTimeToFirstWaypoint)
        }
      }
    }
    return true
  }
}
