// Sources/FleetSim/LoadGenerator.swift - synthetic update streams for load tests
//
// In load-generation mode (FleetSimConfiguration.load) every stream, after its first
// message (the simulated trip in full), gets small updates: the vehicle's location, the
// ETA to the next waypoint and the remaining distance, with `sequence` and `send_time`.
// With a rate, the streams are spread over 10 ms slots of the period so the load is even
// rather than one burst per period; without one, each pass sends one update to every
// stream whose flow-control window has room. Runs on the server's event loop; no locks.

import CoreMetrics
import FleetEngineMessages
import GRPCProtocol
import HTTP2Transport
import Primitives
import ProtoWire

#if canImport(Glibc)
  import Glibc
#endif

final class LoadGenerator {
  final class Stream {
    let call: any GRPCServerCallContext
    var sequence: UInt64
    var latitude: Double
    var longitude: Double
    var remainingMeters: Int32
    var eta: Int64
    var step: Int32 = 0

    init(call: any GRPCServerCallContext, sequence: UInt64, trip: Trip) {
      self.call = call
      self.sequence = sequence
      let point = trip.lastLocation?.location ?? trip.pickupPoint?.point ?? LatLng(latitude: 52.37, longitude: 4.89)
      latitude = point.latitude
      longitude = point.longitude
      remainingMeters = trip.remainingDistanceMeters?.value ?? 5000
      eta = trip.etaToFirstWaypoint?.seconds ?? 0
    }
  }

  /// Wall-clock slot length for rate mode.
  static let slotNanoseconds: UInt64 = 10_000_000
  static let updatedFields: [Int32] = [11, 12, 13]  // last_location, remaining_distance_meters, eta_to_first_waypoint

  let profile: LoadGeneration
  /// Rate mode: streams by slot; saturating mode: one slot.
  private var slots: [[Stream]]
  private var nextSlot = 0
  private var running = false
  private var anchor: (any GRPCServerCallContext)?
  private var slotStart: UInt64 = 0
  private var encodeBuffer: [UInt8] = []
  private(set) var sent = 0
  private var placed = 0
  /// Counts updates sent, once per pass rather than per update.
  private let updatesSent: Counter

  init(profile: LoadGeneration, updatesSent: Counter) {
    self.profile = profile
    self.updatesSent = updatesSent
    if let rate = profile.updatesPerSecond {
      let period = 1e9 / rate
      slots = Array(repeating: [], count: max(1, Int(period / Double(Self.slotNanoseconds))))
    } else {
      slots = [[]]
    }
  }

  /// Adds a stream (after its first message, numbered `sequence`) and starts the sender.
  func add(_ call: any GRPCServerCallContext, trip: Trip, sequence: UInt64) {
    let stream = Stream(call: call, sequence: sequence, trip: trip)
    // Round-robin placement spreads streams evenly over the period's slots.
    slots[placed % slots.count].append(stream)
    placed += 1
    anchor = call
    if !running {
      running = true
      slotStart = monotonicNanoseconds()
      schedule(after: .zero)
    }
  }

  private func schedule(after delay: Duration) {
    guard let anchor else {
      running = false
      return
    }
    anchor.schedule(after: delay) { [self] in pass() }
  }

  private func pass() {
    let sentBefore = sent
    defer { if sent > sentBefore { updatesSent.increment(by: Int64(sent - sentBefore)) } }
    let now = unixTime()
    if profile.updatesPerSecond == nil {
      serve(slot: 0, now: now, saturating: true)
      // Nothing had room: wait a little for WINDOW_UPDATEs instead of spinning.
      if slots[0].isEmpty { running = false; anchor = nil; return }
      schedule(after: sent == sentBefore ? .microseconds(200) : .zero)
      return
    }
    // Rate mode: serve every slot whose start time has come (catching up after a stall).
    let clock = monotonicNanoseconds()
    while slotStart <= clock {
      serve(slot: nextSlot, now: now, saturating: false)
      nextSlot = (nextSlot + 1) % slots.count
      slotStart += Self.slotNanoseconds
    }
    if slots.allSatisfy(\.isEmpty) {
      running = false
      anchor = nil
      return
    }
    schedule(after: .nanoseconds(Int64(slotStart - clock)))
  }

  private func serve(slot: Int, now: Double, saturating: Bool) {
    var streams = slots[slot]
    slots[slot] = []
    var kept = 0
    for index in streams.indices {
      let stream = streams[index]
      if stream.call.isClosed { continue }
      streams[kept] = stream
      kept += 1
      if saturating && stream.call.outboundBufferedBytes >= profile.maxBufferedBytes { continue }
      send(stream, now: now)
      anchor = stream.call
    }
    streams.removeLast(streams.count - kept)
    slots[slot] = streams
  }

  private func send(_ stream: Stream, now: Double) {
    stream.step &+= 1
    stream.sequence += 1
    stream.latitude += 1.1e-5
    stream.longitude += 0.7e-5
    if stream.remainingMeters > 0 { stream.remainingMeters -= 1 }
    let fields = LoadUpdateFields(
      latitude: stream.latitude, longitude: stream.longitude, heading: stream.step % 360,
      time: Timestamp(unixTime: now),
      remainingMeters: stream.remainingMeters, eta: stream.eta, sequence: stream.sequence)
    let size = fields.encodedSize
    if encodeBuffer.count < size { encodeBuffer = [UInt8](repeating: 0, count: max(size, 256)) }
    encodeBuffer.withUnsafeMutableBytes { buffer in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(rebasing: buffer[..<size]))
      fields.encode(to: &writer)
      stream.call.send(bytes: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<size]))
    }
    sent += 1
  }
}

/// The small update load mode sends, written straight from its numbers: the bytes of the
/// `TripUpdate` that ``tripUpdate`` builds (its trip's last location with position, heading and update
/// time, remaining distance and ETA; the three field numbers; sequence and send time), without building
/// a `Trip` or `TripUpdate` for every update. A test checks the two encodings agree.
struct LoadUpdateFields {
  var latitude: Double
  var longitude: Double
  var heading: Int32
  /// The update time of the location, also the send time.
  var time: Timestamp
  var remainingMeters: Int32
  var eta: Int64
  var sequence: UInt64

  /// The same update as message values.
  var tripUpdate: TripUpdate {
    var location = VehicleLocation()
    location.location = LatLng(latitude: latitude, longitude: longitude)
    location.heading = Int32Value(heading)
    location.updateTime = time
    var trip = Trip()
    trip.lastLocation = location
    trip.remainingDistanceMeters = Int32Value(remainingMeters)
    trip.etaToFirstWaypoint = Timestamp(seconds: eta)
    var update = TripUpdate()
    update.trip = trip
    update.updatedFields = LoadGenerator.updatedFields
    update.sequence = sequence
    update.sendTime = time
    return update
  }

  // Sizes through ProtoWire's `WireSize`, call for call as `encode(to:)` writes (proto3: zero fields omitted).
  static func timestampSize(seconds: Int64, nanos: Int32) -> Int {
    (seconds != 0 ? WireSize.int64(seconds, field: 1) : 0) + (nanos != 0 ? WireSize.int32(nanos, field: 2) : 0)
  }
  static func int32ValueSize(_ value: Int32) -> Int { value != 0 ? WireSize.int32(value, field: 1) : 0 }

  var latLngSize: Int {
    (latitude.bitPattern != 0 ? WireSize.double(latitude, field: 1) : 0)
      + (longitude.bitPattern != 0 ? WireSize.double(longitude, field: 2) : 0)
  }
  var timeSize: Int { Self.timestampSize(seconds: time.seconds, nanos: time.nanos) }
  var locationSize: Int {
    WireSize.lengthDelimited(latLngSize, field: 1) + WireSize.lengthDelimited(Self.int32ValueSize(heading), field: 2)
      + WireSize.lengthDelimited(timeSize, field: 4)
  }
  var tripSize: Int {
    WireSize.lengthDelimited(locationSize, field: 11)
      + WireSize.lengthDelimited(Self.int32ValueSize(remainingMeters), field: 12)
      + WireSize.lengthDelimited(Self.timestampSize(seconds: eta, nanos: 0), field: 13)
  }
  /// The encoded update's size.
  var encodedSize: Int {
    WireSize.lengthDelimited(tripSize, field: 1) + WireSize.lengthDelimited(LoadGenerator.updatedFields.count, field: 3)
      + (sequence != 0 ? WireSize.uint64(sequence, field: 4) : 0) + WireSize.lengthDelimited(timeSize, field: 5)
  }

  private static func writeTimestamp(seconds: Int64, nanos: Int32, field: Int, to writer: inout WireWriter) {
    writer.writeTag(field, .lengthDelimited)
    writer.writeRawVarint(UInt64(timestampSize(seconds: seconds, nanos: nanos)))
    if seconds != 0 { writer.writeInt64(seconds, field: 1) }
    if nanos != 0 { writer.writeInt32(nanos, field: 2) }
  }

  private static func writeInt32Value(_ value: Int32, field: Int, to writer: inout WireWriter) {
    writer.writeTag(field, .lengthDelimited)
    writer.writeRawVarint(UInt64(int32ValueSize(value)))
    if value != 0 { writer.writeInt32(value, field: 1) }
  }

  /// Writes the update; `writer` must have room for ``encodedSize`` bytes.
  func encode(to writer: inout WireWriter) {
    writer.writeTag(1, .lengthDelimited)  // trip
    writer.writeRawVarint(UInt64(tripSize))
    writer.writeTag(11, .lengthDelimited)  // last_location
    writer.writeRawVarint(UInt64(locationSize))
    writer.writeTag(1, .lengthDelimited)  // location
    writer.writeRawVarint(UInt64(latLngSize))
    if latitude.bitPattern != 0 { writer.writeDouble(latitude, field: 1) }
    if longitude.bitPattern != 0 { writer.writeDouble(longitude, field: 2) }
    Self.writeInt32Value(heading, field: 2, to: &writer)
    Self.writeTimestamp(seconds: time.seconds, nanos: time.nanos, field: 4, to: &writer)
    Self.writeInt32Value(remainingMeters, field: 12, to: &writer)
    Self.writeTimestamp(seconds: eta, nanos: 0, field: 13, to: &writer)
    writer.writeTag(3, .lengthDelimited)  // updated_fields, packed (each number one byte)
    writer.writeRawVarint(UInt64(LoadGenerator.updatedFields.count))
    for number in LoadGenerator.updatedFields { writer.writeRawVarint(UInt64(number)) }
    if sequence != 0 { writer.writeUInt64(sequence, field: 4) }
    Self.writeTimestamp(seconds: time.seconds, nanos: time.nanos, field: 5, to: &writer)
  }
}
