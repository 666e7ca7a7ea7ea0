// Sources/FleetEngineMessages/TripStream.swift - the project's server-streaming GetTrip messages
//
// journeysharing.v1.StreamTripRequest and TripUpdate (Protos/journeysharing/v1/trip_stream.proto).
// The first TripUpdate on a stream carries the whole Trip; later ones carry only
// the fields named, by Trip field number, in `updated_fields`.

public import ProtoWire

/// `journeysharing.v1.StreamTripRequest`: which trip to follow, and how.
public struct StreamTripRequest: ProtoMessage, Hashable {
  public static let protoMessageName = "journeysharing.v1.StreamTripRequest"

  /// `header` (field 1): the standard Fleet Engine request header.
  public var header: RequestHeader?
  /// `name` (field 2): the trip, `providers/{provider}/trips/{trip}`.
  public var name: String = ""
  /// `view` (field 3): the subset of trip fields to return, as in `GetTripRequest.view`.
  public var view: TripView = .tripViewUnspecified
  /// `route_format_type` (field 4): the route format, as in `GetTripRequest.route_format_type`.
  public var routeFormatType: PolylineFormatType = .unknownFormatType
  /// `after_sequence` (field 5): resume after the update with this `sequence` (0: send the whole trip).
  public var afterSequence: UInt64 = 0
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &header)
      case 2: name = try reader.readString(tag)
      case 3: view = try reader.readEnum(tag)
      case 4: routeFormatType = try reader.readEnum(tag)
      case 5: afterSequence = try reader.readUInt64(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if let header { size += WireSize.message(header, field: 1) }
    if !name.isEmpty { size += WireSize.string(name, field: 2) }
    if view.rawValue != 0 { size += WireSize.enum(view, field: 3) }
    if routeFormatType.rawValue != 0 { size += WireSize.enum(routeFormatType, field: 4) }
    if afterSequence != 0 { size += WireSize.uint64(afterSequence, field: 5) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if let header { writer.writeMessage(header, field: 1) }
    if !name.isEmpty { writer.writeString(name, field: 2) }
    if view.rawValue != 0 { writer.writeEnum(view, field: 3) }
    if routeFormatType.rawValue != 0 { writer.writeEnum(routeFormatType, field: 4) }
    if afterSequence != 0 { writer.writeUInt64(afterSequence, field: 5) }
    writer.writeUnknown(unknownFields)
  }
}

/// `journeysharing.v1.TripUpdate`: one step of a followed trip.
public struct TripUpdate: ProtoMessage, Hashable {
  public static let protoMessageName = "journeysharing.v1.TripUpdate"

  /// `trip` (field 1): the whole trip when `full_trip` is set, else only the changed fields.
  public var trip: Trip?
  /// `full_trip` (field 2): when set, `trip` replaces all state held for the trip.
  public var fullTrip: Bool = false
  /// `updated_fields` (field 3): the `Trip` field numbers this update replaces (ignored when `full_trip` is set);
  /// written packed, read packed or not.
  public var updatedFields: [Int32] = []
  /// `sequence` (field 4): the position of this update in the trip's history; it grows from one update to the
  /// next (FleetSim counts each stream's updates from 1; a relay numbers them by their place in its stream).
  public var sequence: UInt64 = 0
  /// `send_time` (field 5): when the server sent this update, for measuring delivery latency.
  public var sendTime: Timestamp?
  /// `discontinuity` (field 6): a whole trip sent in place of updates the server no longer has (a resume
  /// point too old): updates were merged.
  public var discontinuity: Bool = false
  public var unknownFields = UnknownFields()

  public init() {}

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while let tag = try reader.nextTag() {
      switch tag.fieldNumber {
      case 1: try reader.readMessage(tag, into: &trip)
      case 2: fullTrip = try reader.readBool(tag)
      case 3: try reader.readRepeatedInt32(tag, into: &updatedFields)
      case 4: sequence = try reader.readUInt64(tag)
      case 5: try reader.readMessage(tag, into: &sendTime)
      case 6: discontinuity = try reader.readBool(tag)
      default: try reader.skipField(tag, into: &unknownFields)
      }
    }
  }

  public func encodedSize() -> Int {
    var size = unknownFields.count
    if let trip { size += WireSize.message(trip, field: 1) }
    if fullTrip { size += WireSize.bool(fullTrip, field: 2) }
    size += WireSize.packedInt32(updatedFields, field: 3)
    if sequence != 0 { size += WireSize.uint64(sequence, field: 4) }
    if let sendTime { size += WireSize.message(sendTime, field: 5) }
    if discontinuity { size += WireSize.bool(discontinuity, field: 6) }
    return size
  }

  public func encodeFields(to writer: inout WireWriter) {
    if let trip { writer.writeMessage(trip, field: 1) }
    if fullTrip { writer.writeBool(fullTrip, field: 2) }
    writer.writePackedInt32(updatedFields, field: 3)
    if sequence != 0 { writer.writeUInt64(sequence, field: 4) }
    if let sendTime { writer.writeMessage(sendTime, field: 5) }
    if discontinuity { writer.writeBool(discontinuity, field: 6) }
    writer.writeUnknown(unknownFields)
  }
}
