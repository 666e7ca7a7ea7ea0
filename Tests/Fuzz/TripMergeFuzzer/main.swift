// Tests/Fuzz/TripMergeFuzzer/main.swift - libFuzzer target for merging streamed TripUpdates into a trip's state
//
// The input is a sequence of TripUpdate encodings, each applied to a followed
// trip's `TripState` as the streaming GetTrip delivers them. Input layout:
//
//   byte 0      the followed trip's ID: bit 0 clear "trip-1", set "" (then every waypoint with a trip ID is foreign)
//   records     op (1 byte), length (2 bytes, little-endian), that many bytes of TripUpdate encoding
//               (cut short at the end of the input); at most 64 records
//
// op bit 0 applies the update twice in a row; op bit 1 installs the update's trip as a
// polled trip would be (`replace(with:)`) instead of applying it. A record that does not
// decode is skipped, as the follower drops a malformed update.
//
// Every step goes through `TripPipeline`, the one per-update step the follower and the
// benchmarks use (merge, derive, diff, offer to the subscribers' mailboxes). Two pipelines
// follow the same records: `alone`, whose subscriber lets go of each snapshot at once (so
// progress updates merge into its storage in place), and `held`, whose subscriber keeps the
// last snapshot offered (so every update derives a new one). After each step:
// - both hold the same values, floating point compared by bit pattern;
// - the derived values equal those a fresh state derives from scratch from the merged trip;
// - no waypoint of another trip is left;
// - the reported changes are exactly the properties that differ from before
//   (`expectedChanges`, computed here without the library's shortcuts), and are what the
//   subscriber was offered, with the new snapshot (nothing offered when nothing changed);
// - a snapshot a subscriber holds never changes afterwards;
// - the update's sequence and send time are recorded;
// - applying an update (or installing a polled trip) twice changes nothing the second time
//   (replace semantics).
// Any violation traps, and libFuzzer saves the input.
//
// Built by scripts/build-fuzzer.sh against the JourneySharingCore target (and the targets it
// imports), and run by scripts/fuzz.sh.

import FleetEngineMessages
import GRPCValues
import ProtoWire

@testable import JourneySharingCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 1 else { return 0 }
  // Safe: libFuzzer keeps `data` alive for the duration of this call, and nothing here outlives it.
  let input = UnsafeRawBufferPointer(start: data, count: size)
  let tripID = input[0] & 1 == 0 ? "trip-1" : ""
  let aloneSubscriber = RecordingTarget(holdsSnapshots: false)
  let heldSubscriber = RecordingTarget(holdsSnapshots: true)
  var alone = TripPipeline(tripID: tripID)
  var held = TripPipeline(tripID: tripID)
  alone.add(aloneSubscriber)
  held.add(heldSubscriber)
  var offset = 1
  var records = 0
  while offset + 3 <= size, records < 64 {
    let op = input[offset]
    let length = min(Int(input[offset + 1]) | Int(input[offset + 2]) << 8, size - offset - 3)
    let body = UnsafeRawBufferPointer(rebasing: input[(offset + 3)..<(offset + 3 + length)])
    offset += 3 + length
    records += 1
    guard let update = try? TripUpdate(serializedBuffer: body) else {
      require(TripProgressUpdate.decode(body) == nil, "the flat decoder took bytes the full decoder rejects")
      continue
    }
    // As the follower decodes it: flat when it is a progress update. Flat, it must carry what the full
    // decode does (compared through the equivalent update's encoding, so NaNs compare by bit pattern).
    let flat = TripProgressUpdate.decode(body)
    if let flat {
      guard let full = TripProgressUpdate(update) else { fatalError("decoded flat, not a progress update in full") }
      require(
        flat.tripUpdate.serializedBytes() == full.tripUpdate.serializedBytes(), "flat and full decodes differ")
    }
    let streamed = flat.map { StreamedTripUpdate.progress($0) } ?? .full(update)
    let step = op & 2 == 0 ? Step.apply(update, streamed) : Step.poll(update.trip ?? Trip())
    perform(step, alone: &alone, held: &held, subscribers: (aloneSubscriber, heldSubscriber), tripID: tripID)
    if op & 1 != 0 {
      perform(
        step, alone: &alone, held: &held, subscribers: (aloneSubscriber, heldSubscriber), tripID: tripID, again: true)
    }
  }
  return 0
}

/// Traps with `message` unless `condition` holds (`precondition` drops its message under -O).
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
  if !condition { fatalError(message()) }
}

enum Step {
  /// A streaming update, and as the follower decodes and applies it (flat when it is a progress update).
  case apply(TripUpdate, StreamedTripUpdate)
  /// A polled trip, as the follower installs it.
  case poll(Trip)
}

/// A subscriber's mailbox, as the pipeline sees it: records what it is offered; with `holdsSnapshots` it
/// keeps the last event (and its snapshot), as a subscriber that has not let go of it yet.
/// `@unchecked Sendable`: used on the fuzzer's one thread.
final class RecordingTarget: Deliverable, @unchecked Sendable {
  let holdsSnapshots: Bool
  var offers = 0
  var lastChanges: UInt64 = 0
  var lastSnapshot: ObjectIdentifier?
  var heldEvent: TripModelEvent?

  init(holdsSnapshots: Bool) { self.holdsSnapshots = holdsSnapshots }

  func offer(_ event: TripModelEvent, changes: UInt64) -> Bool {
    offers += 1
    lastChanges = changes
    lastSnapshot = event.snapshot.map { ObjectIdentifier($0) }
    if holdsSnapshots { heldEvent = event }
    return false
  }

  func reclaimPending() -> Bool { false }
}

/// Runs `step` through `pipeline`; returns the changes it reported (nothing is refused: no limits).
func run(_ step: Step, through pipeline: inout TripPipeline) -> TripPropertyFields {
  let event = { (snapshot: TripSnapshot?) in TripModelEvent(snapshot: snapshot, error: nil, modelState: .active) }
  let outcome =
    switch step {
    case .apply(_, let streamed): pipeline.apply(streamed, within: nil, event: event)
    case .poll(let trip): pipeline.replace(with: trip, within: nil, event: event)
    }
  guard case .applied(let changes, _) = outcome else { fatalError("a step was refused with no limits") }
  return changes
}

/// Performs `step` on both pipelines and checks them; `again`: the same step was just performed.
func perform(
  _ step: Step, alone: inout TripPipeline, held: inout TripPipeline,
  subscribers: (alone: RecordingTarget, held: RecordingTarget), tripID: String, again: Bool = false
) {
  // What each state held before: the values copied (which keeps no reference to the snapshot
  // object, so `alone` can still merge in place), and the snapshot a subscriber holds for `held`.
  let aloneBefore = alone.snapshot?.values
  let heldSnapshot = held.snapshot
  let heldBefore = heldSnapshot?.values

  var inPlaceFields: UInt64?
  if case .apply(let update, _) = step {
    inPlaceFields = aloneBefore == nil || update.fullTrip ? nil : progressMask(update.updatedFields)
  }
  let offersBefore = (subscribers.alone.offers, subscribers.held.offers)
  let aloneChanges = run(step, through: &alone)
  let heldChanges = run(step, through: &held)
  // What changed was offered, with the new snapshot; nothing was when nothing changed.
  for (subscriber, changes, before, pipeline) in [
    (subscribers.alone, aloneChanges, offersBefore.0, alone), (subscribers.held, heldChanges, offersBefore.1, held),
  ] {
    if changes.isEmpty {
      require(subscriber.offers == before, "an offer when nothing changed")
    } else {
      require(subscriber.offers == before + 1, "\(subscriber.offers - before) offers for one change")
      require(subscriber.lastChanges == changes.rawValue, "offered \(subscriber.lastChanges), reported \(changes)")
      require(
        subscriber.lastSnapshot == pipeline.snapshot.map { ObjectIdentifier($0) }, "offered another snapshot")
    }
  }
  guard let aloneAfter = alone.snapshot?.values, let heldAfter = held.snapshot?.values else {
    fatalError("no snapshot after an update")
  }
  if let heldSnapshot, let heldBefore {
    require(held.snapshot !== heldSnapshot, "a snapshot a subscriber holds was reused")
    checkSame(heldSnapshot.values, heldBefore, "a held snapshot changed", includingUpdate: true)
  }

  checkSame(aloneAfter, heldAfter, "merged in place vs derived anew", includingUpdate: true)
  var fresh = TripState(tripID: tripID)  // the state alone, derived from scratch
  _ = fresh.replace(with: aloneAfter.trip)
  checkSame(aloneAfter, fresh.snapshot!.values, "merged vs derived from scratch", includingUpdate: false)
  checkFiltered(aloneAfter.trip, tripID: tripID)

  switch step {
  case .apply(let update, _):
    require(
      aloneAfter.updateSequence == update.sequence, "sequence \(aloneAfter.updateSequence), sent \(update.sequence)")
    require(
      aloneAfter.updateSendTime?.bitPattern == update.sendTime?.unixTime.bitPattern,
      "send time \(String(describing: aloneAfter.updateSendTime)), sent \(String(describing: update.sendTime))")
  case .poll:
    require(
      aloneAfter.updateSequence == 0 && aloneAfter.updateSendTime == nil, "a polled trip kept an update's sequence")
  }

  // `alone` merged a progress update in place: the location counts as changed when `!=` says so
  // (the in-place merge's documented choice, so a NaN location counts as a change), and only when named.
  let locationRule: LocationRule = inPlaceFields.map { .inPlace(namesLocation: $0 & 1 << 11 != 0) } ?? .bitwise
  let expectedAlone = expectedChanges(from: aloneBefore, to: aloneAfter, location: locationRule)
  require(aloneChanges == expectedAlone, "reported \(aloneChanges), expected \(expectedAlone) (alone)")
  let expectedHeld = expectedChanges(from: heldBefore, to: heldAfter, location: .bitwise)
  require(heldChanges == expectedHeld, "reported \(heldChanges), expected \(expectedHeld) (held)")

  if again, let aloneBefore {
    // Replace semantics: the same update (or polled trip) a second time changes nothing. Only the
    // in-place merge's `!=` reports a location holding NaN as changed, as it documents.
    checkSame(aloneBefore, aloneAfter, "the same step again changed the state", includingUpdate: true)
    require(heldChanges.isEmpty, "the same step again reported \(heldChanges)")
    require(
      aloneChanges.subtracting(.routeLastVehicleLocation).isEmpty
        && (aloneChanges.isEmpty || aloneAfter.trip.lastLocation != aloneAfter.trip.lastLocation),
      "the same step again reported \(aloneChanges)")
  }
}

/// The Trip fields named, as a bit mask, when every one is a progress field; nil when the update
/// names anything else (then the merge cannot happen in place).
func progressMask(_ fields: [Int32]) -> UInt64? {
  var mask: UInt64 = 0
  for number in fields {
    guard TripProgressUpdate.isProgressField(number) else { return nil }
    mask |= 1 << UInt64(number)
  }
  return mask
}

/// Element-wise bitwise equality, with no shortcut for shared storage.
func elementsEqual<C: Collection>(_ a: C, _ b: C) -> Bool where C.Element: BitwiseComparable {
  a.count == b.count && zip(a, b).allSatisfy { $0.isBitwiseEqual(to: $1) }
}

func sameBits(_ a: Double?, _ b: Double?) -> Bool { a?.bitPattern == b?.bitPattern }

/// Whether two trips are equal field by field, floating point by bit pattern, unknown fields included.
func tripsEqual(_ a: Trip, _ b: Trip) -> Bool {
  a.changedFields(from: b).isEmpty && a.unknownFields == b.unknownFields
}

/// Traps unless every stored value of `a` and `b` is the same (floating point by bit pattern).
func checkSame(_ a: TripSnapshot.Values, _ b: TripSnapshot.Values, _ what: String, includingUpdate: Bool) {
  func check(_ equal: Bool, _ field: String) {
    require(equal, "\(what): \(field) differs")
  }
  if !tripsEqual(a.trip, b.trip) {
    fatalError("\(what): trip fields \(a.trip.changedFields(from: b.trip)) differ")
  }
  check(bitwiseEqual(a.pickupLocation, b.pickupLocation), "pickupLocation")
  check(bitwiseEqual(a.dropoffLocation, b.dropoffLocation), "dropoffLocation")
  check(elementsEqual(a.activeRoute, b.activeRoute), "activeRoute")
  check(a.activeRouteTraffic == b.activeRouteTraffic, "activeRouteTraffic")
  check(a.activeRouteRemainingDistance == b.activeRouteRemainingDistance, "activeRouteRemainingDistance")
  check(elementsEqual(a.remainingRoute, b.remainingRoute), "remainingRoute")
  check(a.remainingRouteTraffic == b.remainingRouteTraffic, "remainingRouteTraffic")
  check(a.remainingRouteDistance == b.remainingRouteDistance, "remainingRouteDistance")
  check(sameBits(a.etaToNextWaypoint, b.etaToNextWaypoint), "etaToNextWaypoint")
  check(sameBits(a.pickupETA, b.pickupETA), "pickupETA")
  check(sameBits(a.dropoffETA, b.dropoffETA), "dropoffETA")
  if includingUpdate {
    check(a.updateSequence == b.updateSequence, "updateSequence")
    check(sameBits(a.updateSendTime, b.updateSendTime), "updateSendTime")
  }
}

/// Traps if a remaining waypoint of another trip is left in a snapshot.
func checkFiltered(_ trip: Trip, tripID: String) {
  for waypoint in trip.remainingWaypoints where !waypoint.tripId.isEmpty && waypoint.tripId != tripID {
    fatalError("waypoint of trip \(waypoint.tripId.debugDescription) kept for trip \(tripID.debugDescription)")
  }
}

enum LocationRule {
  /// Compared by bit pattern, as deriving a snapshot anew does.
  case bitwise
  /// Compared with `!=`, only when the update names the location, as the in-place merge does.
  case inPlace(namesLocation: Bool)
}

/// The properties that differ between `old` and `new` (all present ones when there was no `old`),
/// written out property by property without the library's storage shortcuts.
func expectedChanges(
  from old: TripSnapshot.Values?, to new: TripSnapshot.Values, location: LocationRule
) -> TripPropertyFields {
  guard let old else { return TripSnapshot(values: new).presentProperties }
  var fields: TripPropertyFields = []
  func mark(_ differs: Bool, _ field: TripPropertyFields) {
    if differs { fields.insert(field) }
  }
  let a = old.trip
  let b = new.trip
  mark(a.name != b.name, .tripName)
  mark(a.vehicleId != b.vehicleId, .vehicleID)
  mark(a.tripType.rawValue != b.tripType.rawValue, .tripType)
  mark(a.tripStatus.rawValue != b.tripStatus.rawValue, .tripStatus)
  mark(!bitwiseEqual(old.pickupLocation, new.pickupLocation), .pickupLocation)
  mark(a.pickupTime != b.pickupTime, .pickupTime)
  mark(!bitwiseEqual(old.dropoffLocation, new.dropoffLocation), .dropoffLocation)
  mark(a.dropoffTime != b.dropoffTime, .dropoffTime)
  switch location {
  case .bitwise: mark(!bitwiseEqual(a.lastLocation, b.lastLocation), .routeLastVehicleLocation)
  case .inPlace(let named): mark(named && a.lastLocation != b.lastLocation, .routeLastVehicleLocation)
  }
  mark(a.numberOfPassengers != b.numberOfPassengers, .numberOfPassengers)
  mark(!elementsEqual(a.remainingWaypoints, b.remainingWaypoints), .remainingWaypoints)
  mark(!elementsEqual(a.intermediateDestinations, b.intermediateDestinations), .intermediateDestinations)
  mark(a.intermediateDestinationIndex != b.intermediateDestinationIndex, .intermediateDestinationIndex)
  mark(old.activeRouteRemainingDistance != new.activeRouteRemainingDistance, .remainingDistanceOfActiveRouteInMeters)
  mark(old.remainingRouteDistance != new.remainingRouteDistance, .distanceOfRemainingRouteInMeters)
  mark(!elementsEqual(old.activeRoute, new.activeRoute), .activeRoute)
  mark(old.activeRouteTraffic != new.activeRouteTraffic, .activeRouteTraffic)
  mark(!elementsEqual(old.remainingRoute, new.remainingRoute), .remainingRoute)
  mark(old.remainingRouteTraffic != new.remainingRouteTraffic, .remainingRouteTraffic)
  mark(!sameBits(old.etaToNextWaypoint, new.etaToNextWaypoint), .etaToNextWaypoint)
  mark(!sameBits(old.pickupETA, new.pickupETA), .pickupETA)
  mark(!sameBits(old.dropoffETA, new.dropoffETA), .dropoffETA)
  return fields
}
