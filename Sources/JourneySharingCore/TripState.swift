// Sources/JourneySharingCore/TripState.swift - one followed trip's state: merge an update, derive, diff
//
// Pure value code with no I/O and no transport: each trip's TripPipeline (its coordinator's, on the trip's
// scheduler) owns one, the pipeline benchmarks drive many, and the trip-merge fuzzer
// (Tests/Fuzz/TripMergeFuzzer) compiles this file with TripSnapshot.swift and
// TripPropertyFields.swift on their own, against FleetEngineMessages only.

package import FleetEngineMessages
package import ProtoWire

/// A streamed update as the stream decoded it: flat when it names only a vehicle's progress (the usual
/// update, see `TripProgressUpdate`), whole otherwise.
package enum StreamedTripUpdate {
  /// A progress update, decoded without building a `Trip`.
  case progress(TripProgressUpdate)
  /// Any other update.
  case full(TripUpdate)

  /// Decodes `bytes`, an encoded `TripUpdate`, as a followed trip's stream does: flat when it is a progress
  /// update, whole otherwise (the whole decode reports what is wrong with bytes that do not decode).
  package static func decode(
    _ bytes: UnsafeRawBufferPointer, options: WireDecodingOptions = .init()
  ) throws(WireDecodingError) -> StreamedTripUpdate {
    if let progress = TripProgressUpdate.decode(bytes, options: options) { return .progress(progress) }
    return .full(try TripUpdate(serializedBuffer: bytes, options: options))
  }

  /// The update's `send_time`.
  package var sendTime: Timestamp? {
    switch self {
    case .progress(let update): update.sendTime
    case .full(let update): update.sendTime
    }
  }
}

/// One followed trip's merged state: the current snapshot, and how an update or a polled
/// trip becomes the next one (merge, derive, diff). Its snapshot's storage is reused when
/// nothing else holds it any more, so a steady stream of updates allocates nothing here.
package struct TripState {
  package let tripID: String
  package private(set) var snapshot: TripSnapshot?

  package init(tripID: String) {
    self.tripID = tripID
  }

  /// The merged trip (empty before the first fetch).
  package var trip: Trip { snapshot?.trip ?? Trip() }

  /// Merges a streaming update; returns what changed for subscribers.
  package mutating func apply(_ update: TripUpdate) -> TripPropertyFields {
    (try? apply(update, within: nil).get()) ?? []
  }

  /// Merges a streamed update as decoded; a progress update goes into the snapshot's own storage when
  /// nobody else holds it (no `Trip` built at all), else takes the path of its equivalent `TripUpdate`.
  package mutating func apply(
    _ update: StreamedTripUpdate, within limits: TripLimits?
  ) -> Result<TripPropertyFields, TripLimitViolation> {
    switch update {
    case .full(let update):
      return apply(update, within: limits)
    case .progress(let progress):
      if snapshot != nil, isKnownUniquelyReferenced(&snapshot!) {
        let changes = snapshot!.mergeInPlace(progress)
        snapshot!.setUpdate(sendTime: progress.sendTime?.unixTime, sequence: progress.sequence)
        return .success(changes)
      }
      return apply(progress.tripUpdate, within: limits)
    }
  }

  /// Merges a streaming update unless the trip it makes is above `limits`; returns what changed for
  /// subscribers, or why the trip was refused (then the state is unchanged). Updates that only carry
  /// the vehicle's progress concern no limit and are not checked.
  package mutating func apply(
    _ update: TripUpdate, within limits: TripLimits?
  ) -> Result<TripPropertyFields, TripLimitViolation> {
    // The common case, a vehicle's progress, merges into the snapshot's own storage when nobody
    // else holds it: no copy of the trip at all.
    if !update.fullTrip, snapshot != nil, isKnownUniquelyReferenced(&snapshot!),
      let changes = snapshot!.mergeInPlace(update)
    {
      snapshot!.setUpdate(sendTime: update.sendTime?.unixTime, sequence: update.sequence)
      return .success(changes)
    }
    var trip = snapshot?.values.trip ?? Trip()
    trip.apply(update)
    if let limits, !TripLimits.cannotConcern(update), let violation = limits.violation(in: trip) {
      return .failure(violation)
    }
    return .success(install(trip, sendTime: update.sendTime?.unixTime, sequence: update.sequence))
  }

  /// Replaces the trip with a polled one (already merged with what was held); returns what changed.
  package mutating func replace(with trip: Trip) -> TripPropertyFields {
    install(trip, sendTime: nil, sequence: 0)
  }

  private mutating func install(_ trip: Trip, sendTime: Double?, sequence: UInt64) -> TripPropertyFields {
    guard snapshot != nil else {
      var values = TripSnapshot.Values(trip: trip, tripID: tripID, previous: nil)
      values.updateSendTime = sendTime
      values.updateSequence = sequence
      let first = TripSnapshot(values: values)
      snapshot = first
      return first.presentProperties
    }
    var values = TripSnapshot.Values(trip: trip, tripID: tripID, previous: snapshot!.values)
    values.updateSendTime = sendTime
    values.updateSequence = sequence
    let changes = values.changedProperties(from: snapshot!.values)
    if isKnownUniquelyReferenced(&snapshot!) {
      snapshot!.replace(with: values)
    } else {
      snapshot = TripSnapshot(values: values)
    }
    return changes
  }
}
