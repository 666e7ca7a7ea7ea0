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
    var location = VehicleLocation()
    location.location = LatLng(latitude: stream.latitude, longitude: stream.longitude)
    location.heading = Int32Value(stream.step % 360)
    location.updateTime = Timestamp(unixTime: now)
    var trip = Trip()
    trip.lastLocation = location
    trip.remainingDistanceMeters = Int32Value(stream.remainingMeters)
    trip.etaToFirstWaypoint = Timestamp(seconds: stream.eta)
    var update = TripUpdate()
    update.trip = trip
    update.updatedFields = Self.updatedFields
    update.sequence = stream.sequence
    update.sendTime = Timestamp(unixTime: now)
    let size = update.encodedSize()
    if encodeBuffer.count < size { encodeBuffer = [UInt8](repeating: 0, count: max(size, 256)) }
    encodeBuffer.withUnsafeMutableBytes { buffer in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(rebasing: buffer[..<size]))
      update.encodeFields(to: &writer)
      stream.call.send(bytes: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<size]))
    }
    sent += 1
  }
}
