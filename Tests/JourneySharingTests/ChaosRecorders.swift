// Tests/JourneySharingTests/ChaosRecorders.swift - subscribers that count what the chaos suite checks

import FleetEngineMessages
import Foundation
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Primitives
import Synchronization

/// The index of `providers/{p}/trips/trip-{i}`.
func tripIndex(_ model: TripModel) -> Int {
  Int(model.parsedName?.tripID.split(separator: "-").last ?? "") ?? -1
}

/// What one subscriber saw of every trip, by index: updates, final statuses, errors by code, and when the
/// latest update arrived and how old it was (server send time to callback).
final class TripLedger: TripModelSubscriber {
  struct Trip {
    var updates = 0
    var finals: [TripStatus] = []
    var errorsByCode: [Int: Int] = [:]
    var lastUpdateWallTime = 0.0
  }

  private let trips: Locked<[Trip]>
  /// Delivery delays (server send time to callback, seconds) of updates since ``startMeasuringDelays()``.
  private let delays = Locked<[Double]>([])
  private let measuringDelays = Atomic<Bool>(false)
  private let errorDomains = Locked<Set<String>>([])

  init(tripCount: Int) { trips = Locked(Array(repeating: Trip(), count: tripCount)) }

  /// Records delivery delays from now on.
  func startMeasuringDelays() { measuringDelays.store(true, ordering: .relaxed) }

  func tripModel(
    _ tripModel: TripModel, didUpdateSnapshot snapshot: TripSnapshot, updatedPropertyFields: TripPropertyFields
  ) {
    let now = unixTime()
    let index = tripIndex(tripModel)
    trips.withLock { trips in
      guard trips.indices.contains(index) else { return }
      trips[index].updates += 1
      trips[index].lastUpdateWallTime = now
    }
    if measuringDelays.load(ordering: .relaxed), let sent = snapshot.updateSendTime {
      delays.withLock { $0.append(now - sent) }
    }
  }

  func tripModel(_ tripModel: TripModel, didUpdate tripStatus: TripStatus) {
    guard isFinal(tripStatus) else { return }
    let index = tripIndex(tripModel)
    trips.withLock { trips in
      if trips.indices.contains(index) { trips[index].finals.append(tripStatus) }
    }
  }

  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {
    let index = tripIndex(tripModel)
    let code = (error as? GRPCError)?.code.rawValue ?? -1
    if let error { _ = errorDomains.withLock { $0.insert((error as NSError).domain) } }
    trips.withLock { trips in
      if trips.indices.contains(index) { trips[index].errorsByCode[code, default: 0] += 1 }
    }
  }

  /// Every trip's record.
  var all: [Trip] { trips.withLock { $0 } }
  func trip(_ index: Int) -> Trip { trips.withLock { $0[index] } }
  /// The error domains seen (the SDK's `error.domain` check).
  var domains: Set<String> { errorDomains.withLock { $0 } }
  var measuredDelays: [Double] { delays.withLock { $0 } }
}

/// A subscriber that leaves: once it has seen `leaveAfter` updates it asks to be unregistered (the test
/// does it from outside the callbacks), and counts any callback that arrives after it was unregistered.
final class LeavingSubscriber: TripModelSubscriber {
  let leaveAfter: Int
  private let seen = Atomic<Int>(0)
  private let leftFlag = Atomic<Bool>(false)
  private let lateCallbacks = Atomic<Int>(0)

  init(leaveAfter: Int) { self.leaveAfter = leaveAfter }

  var wantsToLeave: Bool { seen.load(ordering: .relaxed) >= leaveAfter && !hasLeft }
  var hasLeft: Bool { leftFlag.load(ordering: .sequentiallyConsistent) }
  /// Callbacks that ran after ``markLeft()``: must stay 0.
  var callbacksAfterLeaving: Int { lateCallbacks.load(ordering: .relaxed) }

  /// Called right after `unregisterSubscriber` returned.
  func markLeft() { leftFlag.store(true, ordering: .sequentiallyConsistent) }

  private func callback() {
    if leftFlag.load(ordering: .sequentiallyConsistent) { lateCallbacks.add(1, ordering: .relaxed) }
  }

  func tripModel(_ tripModel: TripModel, didUpdate modelState: TripModelState) { callback() }
  func tripModel(
    _ tripModel: TripModel, didUpdate trip: FleetEngineMessages.Trip?, updatedPropertyFields: TripPropertyFields
  ) {
    callback()
    seen.add(1, ordering: .relaxed)
  }
  func tripModel(_ tripModel: TripModel, didUpdate tripStatus: TripStatus) { callback() }
  func tripModel(_ tripModel: TripModel, didUpdate vehicleLocation: VehicleLocation?) { callback() }
  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) { callback() }
}

/// A subscriber whose every callback blocks for `blockFor`.
final class BlockingSubscriber: TripModelSubscriber {
  let blockFor: Duration
  private let sequences = Locked<[UInt64]>([])

  init(blockFor: Duration) { self.blockFor = blockFor }

  /// The update sequence number of each delivery, in order.
  var sequencesSeen: [UInt64] { sequences.withLock { $0 } }
  var deliveryCount: Int { sequences.withLock { $0.count } }

  func tripModel(
    _ tripModel: TripModel, didUpdateSnapshot snapshot: TripSnapshot, updatedPropertyFields: TripPropertyFields
  ) {
    let sequence = snapshot.updateSequence
    sequences.withLock { $0.append(sequence) }
    usleep(UInt32(seconds(blockFor) * 1e6))
  }
}
