// Sources/TripRelay/RelayNaming.swift - the relay's names on NATS: streams, subjects, message IDs, headers
//
// Every name derives from a cluster name (an environment: `prod`, `staging`) and the provider, so several
// providers and environments share one NATS without seeing each other's streams:
// - `FOLLOW_{cluster}_{provider}` (WorkQueue retention, a max age and size), subjects
//   `follow.{cluster}.{provider}.{trip}`: one message per follow request, its payload the trip's name. Relays
//   pull from the durable consumer `relays` on it; a request stays un-acked while a relay follows the trip.
// - `TRIPS_{cluster}_{provider}` (limits retention), subjects `trips.{cluster}.{provider}.{trip}`: every
//   update, its payload an encoded `journeysharing.v1.TripUpdate` without `sequence` and `send_time` (a
//   message's place in the stream is its sequence). With N partitions, the server maps each trip to one of N
//   streams `TRIPS_{cluster}_{provider}_{k}`, subjects `trips.{cluster}.{provider}.{k}.{trip}`, by a subject
//   mapping (`partition(N, …)` on the trip token, which hashes it with FNV-1a); ``RelayNames/partition(of:)``
//   computes the same k, so readers know where a trip is.
// - `TRIPSTATE_{cluster}_{provider}` (one message per subject), subjects `tripstate.{cluster}.{provider}.{trip}`:
//   a trip's whole state as of a `TRIPS` sequence, refreshed every few updates, so that a late joiner reads one
//   message and a short tail instead of the trip's history; and a refused trip's status (the cluster's negative
//   cache).
//
// Message IDs (`Nats-Msg-Id`) make publishing idempotent within a stream's duplicate window:
// - a follow request: `{trip name}`;
// - an update: `{trip name}:{delivery}:{sequence}`, where `delivery` is JetStream's delivery count of the
//   follow request the relay holds (1 for the first relay, 2 for the one that takes over, …) and `sequence` the
//   update's number within that delivery;
// - the final update (COMPLETE or CANCELED): `{trip name}:final`, whichever relay publishes it, so that the
//   final state is stored once. Only relays may publish to `trips.>` (the NATS permissions in the README), so
//   nobody else can claim that ID.

package import FleetEngineMessages

/// The names of one relay cluster's streams and subjects for one provider (see the file comment).
package struct RelayNames: Sendable, Hashable {
  /// The cluster (environment) name.
  package let cluster: String
  /// The provider whose trips these streams hold.
  package let providerID: String
  /// How many streams `TRIPS` is split into (1: not split).
  package let tripPartitions: Int

  private let clusterToken: String
  private let providerToken: String

  /// The longest cluster name.
  package static let maxClusterLength = 32
  /// The most `TRIPS` partitions.
  package static let maxPartitions = 64

  /// Names for `cluster` and `providerID`, with `TRIPS` in `tripPartitions` streams.
  ///
  /// - Throws: ``RelayConfigurationError`` when the cluster name is not 1 to 32 letters, digits, `-` and `_`,
  ///   the provider is empty, or the partition count is not 1…64.
  package init(cluster: String, providerID: String, tripPartitions: Int = 1) throws(RelayConfigurationError) {
    guard !cluster.isEmpty, cluster.utf8.count <= Self.maxClusterLength,
      cluster.utf8.allSatisfy({ RelayNaming.isPlain($0) })
    else {
      throw RelayConfigurationError(
        "the cluster name must be 1 to \(Self.maxClusterLength) ASCII letters, digits, - and _")
    }
    guard !providerID.isEmpty else { throw RelayConfigurationError("the provider ID is empty") }
    guard (1...Self.maxPartitions).contains(tripPartitions) else {
      throw RelayConfigurationError("the TRIPS partition count must be 1…\(Self.maxPartitions)")
    }
    self.cluster = cluster
    self.providerID = providerID
    self.tripPartitions = tripPartitions
    clusterToken = cluster
    providerToken = RelayNaming.token(providerID)
  }

  // MARK: Streams and consumers

  /// The work queue of follow requests.
  package var followStream: String { "FOLLOW_\(clusterToken)_\(providerToken)" }
  /// The relays' durable consumer on ``followStream``.
  package var followConsumer: String { "relays" }
  /// The stream of trips' latest states.
  package var stateStream: String { "TRIPSTATE_\(clusterToken)_\(providerToken)" }

  /// The stream of updates of partition `k` (the only one when not split).
  package func tripsStream(partition k: Int) -> String {
    tripPartitions == 1 ? "TRIPS_\(clusterToken)_\(providerToken)" : "TRIPS_\(clusterToken)_\(providerToken)_\(k)"
  }

  /// Every stream of updates.
  package var tripsStreams: [String] { (0..<tripPartitions).map { tripsStream(partition: $0) } }

  /// The stream holding `name`'s updates.
  package func tripsStream(for name: TripName) -> String { tripsStream(partition: partition(of: name)) }

  /// The subjects the stream of partition `k` captures.
  package func tripsStreamSubject(partition k: Int) -> String {
    tripPartitions == 1 ? "trips.\(clusterToken).\(providerToken).*" : "trips.\(clusterToken).\(providerToken).\(k).*"
  }

  /// The partition of `name`: FNV-1a (32 bits) of its trip token, modulo the partition count, as NATS'
  /// `partition(N, …)` subject mapping computes it.
  package func partition(of name: TripName) -> Int {
    guard tripPartitions > 1 else { return 0 }
    var hash: UInt32 = 0x811C_9DC5
    for byte in RelayNaming.token(name.tripID).utf8 {
      hash ^= UInt32(byte)
      hash = hash &* 0x0100_0193
    }
    return Int(hash % UInt32(tripPartitions))
  }

  /// The subject mapping a NATS server needs for `partitions` partitions (the account's `mappings`): every
  /// `trips.{cluster}.{provider}.{trip}` to `trips.{cluster}.{provider}.{k}.{trip}`. One mapping serves every
  /// cluster and provider, so they must all use the same partition count.
  package static func partitionMapping(partitions: Int) -> (source: String, destination: String) {
    ("trips.*.*.*", "trips.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(\(partitions),3)}}.{{wildcard(3)}}")
  }

  // MARK: Subjects

  /// Where `name`'s follow request is published.
  package func followSubject(_ name: TripName) -> String {
    "follow.\(clusterToken).\(providerToken).\(RelayNaming.token(name.tripID))"
  }

  /// The subjects of every follow request of the provider (the relays' consumer's filter).
  package var followSubjects: String { "follow.\(clusterToken).\(providerToken).*" }

  /// Where `name`'s updates are published (the server maps it to ``storedTripSubject(_:)`` when split).
  package func tripSubject(_ name: TripName) -> String {
    "trips.\(clusterToken).\(providerToken).\(RelayNaming.token(name.tripID))"
  }

  /// The subject `name`'s updates are stored under.
  package func storedTripSubject(_ name: TripName) -> String {
    guard tripPartitions > 1 else { return tripSubject(name) }
    return "trips.\(clusterToken).\(providerToken).\(partition(of: name)).\(RelayNaming.token(name.tripID))"
  }

  /// Where relay `relayID` stores its heartbeats (in `TRIPSTATE`, one kept per relay): `%RL` and the relay's
  /// token, which no trip's token can be (``RelayNaming/token(_:)`` writes `%` only before two hex digits).
  package func heartbeatSubject(relayID: String) -> String {
    "tripstate.\(clusterToken).\(providerToken).%RL\(RelayNaming.token(relayID))"
  }

  /// Where `name`'s latest state is kept.
  package func stateSubject(_ name: TripName) -> String {
    "tripstate.\(clusterToken).\(providerToken).\(RelayNaming.token(name.tripID))"
  }

  /// The subjects of the state stream.
  package var stateSubjects: String { "tripstate.\(clusterToken).\(providerToken).*" }

  /// The trip ID of a stored update's or state's subject, or nil for a subject of another cluster or provider.
  package func tripID(ofSubject subject: String) -> String? {
    let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
    guard tokens.count >= 4, tokens[1] == clusterToken, tokens[2] == providerToken else { return nil }
    return RelayNaming.untoken(String(tokens[tokens.count - 1]))
  }
}

/// A relay configuration that cannot work: the message says what is wrong.
package struct RelayConfigurationError: Error, Sendable, CustomStringConvertible {
  package var description: String
  package init(_ description: String) { self.description = description }
}

/// Message IDs, header names and subject tokens of the relay.
package enum RelayNaming {
  /// Header: the trip's resource name.
  package static let tripNameHeader = "Trip-Name"
  /// Header: the follow request's delivery count when the relay published the update (the fencing token).
  package static let deliveryHeader = "Relay-Delivery"
  /// Header: `true` on the update that carries the trip's final state.
  package static let finalHeader = "Trip-Final"
  /// Header: the relay that published the update.
  package static let relayHeader = "Relay-ID"
  /// Header: `true` on an update that holds the whole trip (`full_trip`).
  package static let fullTripHeader = "Trip-Full"
  /// Header of a state message: the `TRIPS` sequence of the last update folded into it.
  package static let tripsSequenceHeader = "Trips-Sequence"
  /// Header of a refusal (an update or state message without a trip): the gRPC status code upstream gave.
  package static let refusedHeader = "Trip-Refused"
  /// Header of a refusal: upstream's status message.
  package static let refusalMessageHeader = "Trip-Refusal-Message"

  /// The message ID of an update that is not final.
  package static func updateMessageID(_ name: TripName, delivery: UInt64, sequence: UInt64) -> String {
    "\(name.description):\(delivery):\(sequence)"
  }

  /// The message ID of the update that carries the final state.
  package static func finalMessageID(_ name: TripName) -> String { "\(name.description):final" }

  /// The message ID of a follow request.
  package static func followMessageID(_ name: TripName) -> String { name.description }

  /// Whether `byte` stays itself in a subject token.
  static func isPlain(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
      true
    default: false
    }
  }

  /// `part` as one subject token: ASCII letters, digits, `-` and `_` stay; every other byte (`.`, `*`, `>`,
  /// whitespace, `%`, non-ASCII) becomes `%XX`, so that no trip ID can add a token or a wildcard.
  package static func token(_ part: String) -> String {
    var result = ""
    result.reserveCapacity(part.utf8.count)
    let digits = Array("0123456789ABCDEF".unicodeScalars)
    for byte in part.utf8 {
      if isPlain(byte) {
        result.unicodeScalars.append(Unicode.Scalar(byte))
      } else {
        result.unicodeScalars.append("%")
        result.unicodeScalars.append(digits[Int(byte >> 4)])
        result.unicodeScalars.append(digits[Int(byte & 0xF)])
      }
    }
    return result
  }

  /// The text ``token(_:)`` made `token` from; nil when it is not such a token.
  package static func untoken(_ token: String) -> String? {
    var bytes: [UInt8] = []
    var iterator = token.utf8.makeIterator()
    while let byte = iterator.next() {
      if byte == UInt8(ascii: "%") {
        guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
          return nil
        }
        bytes.append(high << 4 | low)
      } else {
        guard isPlain(byte) else { return nil }
        bytes.append(byte)
      }
    }
    return String(validating: bytes, as: UTF8.self)
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}

/// The NATS subjects a kind of user of a relay cluster may publish and subscribe to: what an operator writes into
/// the server's `authorization` (or a user JWT's permissions). Relays alone may publish trips, states and acks;
/// readers only read; submitters only enqueue follow requests.
package struct RelayPermissions: Sendable, Hashable {
  /// Subjects the user may publish to.
  package var publish: [String]
  /// Subjects the user may subscribe to.
  package var subscribe: [String]

  /// A relay of `names`' cluster and provider: its streams and JetStream's API (it creates its streams), the
  /// acks of its follow requests, flow control of the ordered consumers that read `TRIPS`, and replies.
  package static func relay(_ names: RelayNames) -> RelayPermissions {
    let prefix = "\(names.cluster).\(RelayNaming.token(names.providerID))"
    return RelayPermissions(
      publish: [
        "trips.\(prefix).>", "tripstate.\(prefix).>", "follow.\(prefix).>", "$JS.API.>",
        "$JS.ACK.\(names.followStream).>",
      ] + names.tripsStreams.map { "$JS.FC.\($0).>" } + ["_INBOX.>"],
      subscribe: ["_INBOX.>"])
  }

  /// A reader of `names`' `TRIPS` and `TRIPSTATE` (a backend consuming updates over NATS): stream and consumer
  /// information, consumers of its own (ephemeral or durable) on those streams, direct gets of states, flow
  /// control and acks of its consumers; nothing that stores a message.
  package static func reader(_ names: RelayNames) -> RelayPermissions {
    var publish = ["$JS.API.INFO"]
    for stream in names.tripsStreams + [names.stateStream] {
      publish += [
        "$JS.API.STREAM.INFO.\(stream)", "$JS.API.CONSUMER.CREATE.\(stream)", "$JS.API.CONSUMER.CREATE.\(stream).>",
        "$JS.API.CONSUMER.DURABLE.CREATE.\(stream).*", "$JS.API.CONSUMER.INFO.\(stream).*",
        "$JS.API.CONSUMER.DELETE.\(stream).*", "$JS.API.CONSUMER.MSG.NEXT.\(stream).*", "$JS.ACK.\(stream).>",
      ]
    }
    publish += ["$JS.API.STREAM.MSG.GET.\(names.stateStream)"]
    // Flow control replies of push consumers (`$JS.FC.<stream>.<consumer>.<id>`).
    publish += (names.tripsStreams + [names.stateStream]).map { "$JS.FC.\($0).>" }
    return RelayPermissions(publish: publish, subscribe: ["_INBOX.>"])
  }

  /// A submitter of follow requests (`tripwatch relay submit`): the follow subjects, and the stream information
  /// it checks first.
  package static func submitter(_ names: RelayNames) -> RelayPermissions {
    let prefix = "\(names.cluster).\(RelayNaming.token(names.providerID))"
    return RelayPermissions(
      publish: [
        "follow.\(prefix).>", "$JS.API.INFO", "$JS.API.STREAM.INFO.*", "$JS.API.CONSUMER.INFO.\(names.followStream).*",
      ],
      subscribe: ["_INBOX.>"])
  }

  /// The permissions as a nats-server configuration's `permissions` block.
  package var serverConfig: String {
    func list(_ subjects: [String]) -> String { "[" + subjects.map { "\"\($0)\"" }.joined(separator: ", ") + "]" }
    return "{ publish: { allow: \(list(publish)) }, subscribe: { allow: \(list(subscribe)) } }"
  }
}
