// Sources/TripRelay/RelayNaming.swift - the relay's names on NATS: streams, subjects, message IDs, headers
//
// Two JetStream streams carry the relay cluster's state:
// - `FOLLOW` (WorkQueue retention), subjects `follow.{provider}.{trip}`: one message per follow request, its
//   payload the trip's name. Relays pull from one shared durable consumer; a request stays un-acked while a
//   relay follows the trip and is acked once the trip's final state is published.
// - `TRIPS` (limits retention), subjects `trips.{provider}.{trip}`: every update the relays publish, its
//   payload an encoded `journeysharing.v1.TripUpdate`, with the headers below.
//
// Message IDs (`Nats-Msg-Id`) make publishing idempotent within the stream's duplicate window:
// - a follow request: `{trip name}`, so submitting a trip twice within the window enqueues it once;
// - an update: `{trip name}:{delivery}:{sequence}`, where `delivery` is the follow request's delivery count
//   (1 for the first relay to follow the trip, 2 for the one that takes over after it, …) and `sequence` the
//   update's number within that delivery; a retried publish is stored once, and a relay that takes over never
//   collides with the one before it;
// - the update that carries the final state (COMPLETE or CANCELED): `{trip name}:final`, whichever relay
//   publishes it, so the final state is stored once even when a relay that takes over publishes it again.

package import FleetEngineMessages

/// Names and header fields of the relay's JetStream streams.
package enum RelayNaming {
  /// The default name of the stream of trip updates.
  package static let tripsStream = "TRIPS"
  /// The default name of the work-queue stream of follow requests.
  package static let followStream = "FOLLOW"
  /// The default name of the durable consumer the relays share on the follow stream.
  package static let followConsumer = "relays"

  /// Header: the trip's resource name.
  package static let tripNameHeader = "Trip-Name"
  /// Header: the update's sequence within its delivery (as in the encoded `TripUpdate.sequence`).
  package static let sequenceHeader = "Trip-Sequence"
  /// Header: the follow request's delivery count when the relay published the update.
  package static let deliveryHeader = "Relay-Delivery"
  /// Header: `true` on the update that carries the trip's final state.
  package static let finalHeader = "Trip-Final"
  /// Header: the relay that published the update.
  package static let relayHeader = "Relay-ID"
  /// Header: `true` on an update that holds the whole trip (`full_trip`).
  package static let fullTripHeader = "Trip-Full"

  /// `follow.{provider}.{trip}` for `name`.
  package static func followSubject(_ name: TripName) -> String {
    "follow.\(token(name.providerID)).\(token(name.tripID))"
  }

  /// `trips.{provider}.{trip}` for `name`.
  package static func tripSubject(_ name: TripName) -> String {
    "trips.\(token(name.providerID)).\(token(name.tripID))"
  }

  /// The message ID of an update that is not final.
  package static func updateMessageID(_ name: TripName, delivery: UInt64, sequence: UInt64) -> String {
    "\(name.description):\(delivery):\(sequence)"
  }

  /// The message ID of the update that carries the final state.
  package static func finalMessageID(_ name: TripName) -> String { "\(name.description):final" }

  /// The message ID of a follow request.
  package static func followMessageID(_ name: TripName) -> String { name.description }

  /// `part` as one subject token: ASCII letters, digits, `-` and `_` stay; every other byte (`.`, `*`, `>`,
  /// whitespace, `%`, non-ASCII) becomes `%XX`, so that no trip ID can add a token or a wildcard.
  package static func token(_ part: String) -> String {
    var result = ""
    result.reserveCapacity(part.utf8.count)
    for byte in part.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
        result.unicodeScalars.append(Unicode.Scalar(byte))
      default:
        let digits = Array("0123456789ABCDEF".unicodeScalars)
        result.unicodeScalars.append("%")
        result.unicodeScalars.append(digits[Int(byte >> 4)])
        result.unicodeScalars.append(digits[Int(byte & 0xF)])
      }
    }
    return result
  }
}
