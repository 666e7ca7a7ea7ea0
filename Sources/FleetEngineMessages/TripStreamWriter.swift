// Sources/FleetEngineMessages/TripStreamWriter.swift - the one writer of a followed trip's stream of TripUpdates
//
// Every server of the streaming GetTrip writes the same stream: the whole trip first (`full_trip`), then only
// the fields that changed, named in `updated_fields`, each message numbered (`sequence`) and stamped
// (`send_time`). FleetSim writes it from whole trips it diffs; the relay writes the same updates into JetStream
// from the fields its follower saw change, and serves them to its watchers, numbered by their place in the
// stream. All three write through here, so they cannot disagree on what a message holds.
//
// Nothing here builds a `TripUpdate` or a projected `Trip`: the fields are encoded straight from the trip
// (``Trip/encodeFields(_:includingUnknownFields:to:)``) into one exactly sized buffer.

import ProtoWire

/// Writes `journeysharing.v1.TripUpdate` messages (see the file comment).
public enum TripStreamWriter {
  /// The encoding of a `TripUpdate` whose trip is `trip` whole (`fields` nil: `full_trip`, unknown fields
  /// included) or only its fields in `fields` (bit n: `Trip` field n, listed in `updated_fields`; a listed
  /// field not set in `trip` is one the update clears). `sequence` 0 and `sendTime` nil are left out, as is
  /// `discontinuity` false.
  public static func encode(
    _ trip: Trip, fields: UInt64?, sequence: UInt64 = 0, sendTime: Timestamp? = nil, discontinuity: Bool = false
  ) -> [UInt8] {
    let projection = fields.map { $0 & Trip.allFieldBits } ?? Trip.allFieldBits
    let unknown = fields == nil
    let tripSize = trip.encodedSize(fields: projection, includingUnknownFields: unknown)
    var size = WireSize.lengthDelimited(tripSize, field: 1)
    var packedSize = 0
    if fields == nil {
      size += WireSize.bool(true, field: 2)
    } else if projection != 0 {
      var rest = projection
      while rest != 0 {
        packedSize += Varint.size(of: UInt64(rest.trailingZeroBitCount))
        rest &= rest - 1
      }
      size += WireSize.lengthDelimited(packedSize, field: 3)
    }
    size += positionSize(sequence: sequence, sendTime: sendTime)
    if discontinuity { size += WireSize.bool(true, field: 6) }
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(buffer))
      writer.writeTag(1, .lengthDelimited)
      writer.writeRawVarint(UInt64(tripSize))
      trip.encodeFields(projection, includingUnknownFields: unknown, to: &writer)
      if fields == nil {
        writer.writeBool(true, field: 2)
      } else if projection != 0 {
        writer.writeTag(3, .lengthDelimited)
        writer.writeRawVarint(UInt64(packedSize))
        var rest = projection
        while rest != 0 {
          writer.writeRawVarint(UInt64(rest.trailingZeroBitCount))
          rest &= rest - 1
        }
      }
      writePosition(sequence: sequence, sendTime: sendTime, to: &writer)
      if discontinuity { writer.writeBool(true, field: 6) }
      precondition(writer.written == size, "TripStreamWriter: size and encoding disagree")
      initialized = size
    }
  }

  /// `body`, an encoded `TripUpdate` without `sequence` and `send_time`, followed by their encoding: decoded,
  /// the update with both set (protobuf merges fields that come later).
  public static func stamped(_ body: UnsafeRawBufferPointer, sequence: UInt64, sendTime: Timestamp?) -> [UInt8] {
    let size = body.count + positionSize(sequence: sequence, sendTime: sendTime)
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(buffer))
      writer.writeRawBytes(body)
      writePosition(sequence: sequence, sendTime: sendTime, to: &writer)
      initialized = writer.written
    }
  }

  /// ``stamped(_:sequence:sendTime:)-(UnsafeRawBufferPointer,_,_)`` of an array.
  public static func stamped(_ body: [UInt8], sequence: UInt64, sendTime: Timestamp?) -> [UInt8] {
    body.withUnsafeBytes { stamped($0, sequence: sequence, sendTime: sendTime) }
  }

  private static func positionSize(sequence: UInt64, sendTime: Timestamp?) -> Int {
    var size = 0
    if sequence != 0 { size += WireSize.uint64(sequence, field: 4) }
    if let sendTime { size += WireSize.message(sendTime, field: 5) }
    return size
  }

  private static func writePosition(sequence: UInt64, sendTime: Timestamp?, to writer: inout WireWriter) {
    if sequence != 0 { writer.writeUInt64(sequence, field: 4) }
    if let sendTime { writer.writeMessage(sendTime, field: 5) }
  }

  /// One stream written from whole trips: the first message holds the trip, each later one the fields that
  /// differ from the trip sent before it, numbered from 1.
  public struct Stream: Sendable {
    /// The last message's `sequence` (0 before the first).
    public private(set) var sequence: UInt64 = 0
    /// The trip as the client holds it after the last message (nil before the first).
    public private(set) var last: Trip?

    /// A stream that has sent nothing yet.
    public init() {}

    /// The next message for `trip` as it is now, sent at `sendTime`: the whole trip first, then the changed
    /// fields; nil when nothing changed since the last message.
    public mutating func next(_ trip: Trip, sendTime: Timestamp?) -> [UInt8]? {
      let fields: UInt64?
      if let last {
        let changed = trip.changedFieldBits(from: last)
        guard changed != 0 else { return nil }
        fields = changed
      } else {
        fields = nil
      }
      sequence += 1
      last = trip
      return TripStreamWriter.encode(trip, fields: fields, sequence: sequence, sendTime: sendTime)
    }
  }
}
