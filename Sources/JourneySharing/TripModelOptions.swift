// Sources/JourneySharing/TripModelOptions.swift - one trip's own settings, and how its fetching is going

import FleetEngineMessages
import Synchronization

/// Settings of one ``TripModel`` that override the services' configuration for its trip: the counterpart
/// of the SDK's `GMTCTripModelOptions` (`autoRefreshTimeInterval`, `tripRequestHeader`).
public struct TripModelOptions: Sendable, Hashable {
  /// Time between polls of this trip (nil: ``JourneySharingConfiguration/pollInterval``).
  public var pollInterval: Duration?
  /// The request header sent with this trip's calls (nil: ``JourneySharingConfiguration/requestHeader``).
  public var requestHeader: RequestHeader?
  /// A trace id sent in the request header's `trace_id`, which Fleet Engine logs with the request, to find
  /// this trip's calls in its logs (nil: the header's own).
  public var traceID: String?

  /// Options; every one defaults to the services' configuration.
  public init(pollInterval: Duration? = nil, requestHeader: RequestHeader? = nil, traceID: String? = nil) {
    self.pollInterval = pollInterval
    self.requestHeader = requestHeader
    self.traceID = traceID
  }
}

/// How fetching one trip is going.
public struct TripModelHealth: Sendable, Hashable {
  /// When an update or a poll's answer last arrived (Unix seconds; nil: never).
  public var lastSuccess: Double?
  /// Failures since then (errors, streams that ended early, answers refused).
  public var consecutiveFailures: Int
  /// Since when the trip's data is stale: the first failure after the last success (Unix seconds; nil while
  /// fetching goes well).
  public var staleSince: Double?
}

/// A model's health, written by its coordinator (on every update: a few relaxed atomic stores) and read
/// from any thread.
final class TripHealthCell: Sendable {
  private let lastSuccessBits = Atomic<UInt64>(Double.nan.bitPattern)
  private let staleSinceBits = Atomic<UInt64>(Double.nan.bitPattern)
  private let failures = Atomic<Int>(0)
  private let active = Atomic<Bool>(false)

  // Relaxed throughout: each figure stands alone; a reader may see one a moment before another.

  func succeeded(at time: Double) {
    lastSuccessBits.store(time.bitPattern, ordering: .relaxed)
    if failures.load(ordering: .relaxed) != 0 { failures.store(0, ordering: .relaxed) }
    if !Double(bitPattern: staleSinceBits.load(ordering: .relaxed)).isNaN {
      staleSinceBits.store(Double.nan.bitPattern, ordering: .relaxed)
    }
  }

  func failed(at time: Double) {
    if failures.wrappingAdd(1, ordering: .relaxed).oldValue == 0 {
      staleSinceBits.store(time.bitPattern, ordering: .relaxed)
    }
  }

  func setActive(_ value: Bool) { active.store(value, ordering: .relaxed) }

  var isActive: Bool { active.load(ordering: .relaxed) }

  var snapshot: TripModelHealth {
    let last = Double(bitPattern: lastSuccessBits.load(ordering: .relaxed))
    let stale = Double(bitPattern: staleSinceBits.load(ordering: .relaxed))
    return TripModelHealth(
      lastSuccess: last.isNaN ? nil : last, consecutiveFailures: failures.load(ordering: .relaxed),
      staleSince: stale.isNaN ? nil : stale)
  }
}
