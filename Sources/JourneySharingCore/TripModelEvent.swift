// Sources/JourneySharingCore/TripModelEvent.swift - what a followed trip hands its subscribers

package import GRPCValues

/// What a trip model hands to its subscribers: the latest snapshot, the most recent
/// error and the model state. Change bits say which of them (and which trip
/// properties) are new since a subscriber's previous delivery.
package struct TripModelEvent: Sendable {
  /// The trip as of this event (nil until the first fetch succeeded).
  package let snapshot: TripSnapshot?
  /// The most recent failure, if any since following started.
  package let error: GRPCError?
  /// Whether following is on.
  package let modelState: TripModelState
  /// When the server sent the update this event carries (its `send_time`, Unix seconds), if it said.
  package let sendTime: Double?

  package static let errorBit: UInt64 = 1 << 62
  package static let stateBit: UInt64 = 1 << 63

  package init(snapshot: TripSnapshot?, error: GRPCError?, modelState: TripModelState, sendTime: Double? = nil) {
    self.snapshot = snapshot
    self.error = error
    self.modelState = modelState
    self.sendTime = sendTime
  }
}
