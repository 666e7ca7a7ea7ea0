// Tests/TripRelayTests/RelayFakes.swift - stand-ins for NATS in the relay's in-memory tests
//
// The relay's parts meet NATS only through three seams: the `TripsStore` the downstream reads, the
// `UpdateSink` followed trips write to, and the `LeaseKeeper` that ends leases. These fakes implement them in
// memory, so the hub, the watch service and the followed trips run on the in-memory transport and the virtual
// clock, deterministic and fast. Every suite that uses them says so in its name; the end-to-end suites run the
// same parts against a real nats-server.

import FleetEngineMessages
import Foundation
import GRPCProtocol
import JSONWebToken
import NATSClient
import Primitives
import TestSupport

@testable import TripRelay

/// `TRIPS` (one partition) and `TRIPSTATE` in memory, with a feed, counting what is read.
final class InMemoryTripsStore: TripsStore, @unchecked Sendable {
  // @unchecked: every field is guarded by `mutex`.
  struct Stored {
    var sequence: UInt64
    var tripID: String
    var body: [UInt8]
    var update: TripUpdate?
    var isFinal: Bool
    var refusal: GRPCStatus?
  }

  private let mutex = Locked(())
  private var messages: [Stored] = []
  private var states: [String: StoredTripState] = [:]
  private var feeds: [Int: @Sendable (FeedEvent) -> Void] = [:]
  private var nextFeed = 0
  private(set) var firstSequence: UInt64 = 1
  private var lastSequence: UInt64 = 0
  /// What was read: state reads, messages read by catch-ups and resumes, follow requests enqueued.
  private(set) var stateReads = 0
  private(set) var messagesRead = 0
  private(set) var submitted: [String] = []
  /// Trips whose follow request is pending: a second submit says so.
  private var pending: Set<String> = []
  /// While set, state reads wait (catch-ups stay under way); the most that waited at once.
  private var holding = false
  private var readsUnderWay = 0
  private(set) var mostReadsUnderWay = 0

  /// Holds (or lets go of) state reads.
  func holdStateReads(_ hold: Bool) { locked { holding = hold } }

  private func locked<T>(_ body: () -> T) -> T { mutex.withLock { _ in body() } }

  /// Stores `update` of `tripID` (as a relay would) and hands it to the feeds; returns its sequence.
  @discardableResult
  func append(_ tripID: String, _ update: TripUpdate, final: Bool = false) -> UInt64 {
    let (stored, handlers) = locked { () -> (Stored, [@Sendable (FeedEvent) -> Void]) in
      lastSequence += 1
      let stored = Stored(
        sequence: lastSequence, tripID: tripID, body: update.serializedBytes(), update: update,
        isFinal: final || update.trip?.isFinal == true, refusal: nil)
      messages.append(stored)
      return (stored, Array(feeds.values))
    }
    for handler in handlers { handler(.messages([Self.message(stored)])) }
    return stored.sequence
  }

  /// Stores a refusal of `tripID` and hands it to the feeds.
  func appendRefusal(_ tripID: String, _ status: GRPCStatus) {
    let (stored, handlers) = locked { () -> (Stored, [@Sendable (FeedEvent) -> Void]) in
      lastSequence += 1
      let stored = Stored(sequence: lastSequence, tripID: tripID, body: [], update: nil, isFinal: true, refusal: status)
      messages.append(stored)
      states[tripID] = StoredTripState(
        sequence: lastSequence, trip: nil, isFinal: true, refusal: status, storedAt: 1_800_000_000)
      return (stored, Array(feeds.values))
    }
    for handler in handlers { handler(.messages([Self.message(stored)])) }
  }

  /// Keeps `trip` as `tripID`'s latest state, as of `sequence`.
  func setState(_ tripID: String, _ trip: Trip, sequence: UInt64) {
    locked {
      states[tripID] = StoredTripState(
        sequence: sequence, trip: trip, isFinal: trip.isFinal, refusal: nil, storedAt: 1_800_000_000)
    }
  }

  /// Drops every message before `sequence` (the history expired).
  func expire(before sequence: UInt64) {
    locked {
      messages.removeAll { $0.sequence < sequence }
      firstSequence = sequence
    }
  }

  /// Forgets pending follow requests (their trips ended).
  func clearPending() { locked { pending.removeAll() } }

  private static func message(_ stored: Stored) -> TripsMessage {
    TripsMessage(
      tripID: stored.tripID, sequence: stored.sequence, storedAtNanoseconds: 0, body: stored.body,
      update: stored.update, isFinal: stored.isFinal, refusal: stored.refusal)
  }

  func startFeed(partition: Int, _ handler: @escaping @Sendable (FeedEvent) -> Void) -> any TripsFeedHandle {
    let (key, after) = locked { () -> (Int, UInt64) in
      nextFeed += 1
      feeds[nextFeed] = handler
      return (nextFeed, lastSequence)
    }
    handler(.reading(after: after))
    return FakeFeedHandle { [weak self] in self?.locked { _ = self?.feeds.removeValue(forKey: key) } }
  }

  func latestState(of name: TripName) async throws -> StoredTripState? {
    locked {
      stateReads += 1
      readsUnderWay += 1
      mostReadsUnderWay = max(mostReadsUnderWay, readsUnderWay)
    }
    while locked({ holding }) { try await Task.sleep(for: .milliseconds(5)) }
    return locked {
      readsUnderWay -= 1
      return states[name.tripID]
    }
  }

  func updates(
    of name: TripName, after: UInt64, limit: Int, _ batch: @escaping @Sendable ([TripsMessage]) -> Void
  ) async throws -> UpdatesRead {
    let (found, missing) = locked { () -> ([Stored], Bool) in
      (messages.filter { $0.tripID == name.tripID && $0.sequence > after }, after > 0 && firstSequence > after + 1)
    }
    if found.count > limit { return UpdatesRead(lastSequence: after, truncated: true, historyMissing: missing) }
    locked { messagesRead += found.count }
    if !found.isEmpty { batch(found.map(Self.message)) }
    return UpdatesRead(lastSequence: found.last?.sequence ?? after, truncated: false, historyMissing: missing)
  }

  func submitFollow(_ name: TripName) async throws -> Bool {
    locked {
      guard !pending.contains(name.tripID) else { return false }
      pending.insert(name.tripID)
      submitted.append(name.tripID)
      return true
    }
  }
}

struct FakeFeedHandle: TripsFeedHandle {
  let onStop: @Sendable () -> Void
  func stop() { onStop() }
}

/// An `UpdateSink` that keeps every record and answers as the test scripts (stored, by default).
final class RecordingSink: UpdateSink, @unchecked Sendable {
  // @unchecked: every field is guarded by `mutex`.
  private let mutex = Locked(())
  private var records: [RelayRecord] = []
  private var scripted: [SinkOutcome] = []
  private var position: UInt64 = 0

  private func locked<T>(_ body: () -> T) -> T { mutex.withLock { _ in body() } }

  /// The records published so far, in order.
  var published: [RelayRecord] { locked { records } }

  /// The next publishes get these outcomes, in order (then stored again).
  func script(_ outcomes: [SinkOutcome]) { locked { scripted += outcomes } }

  func publish(_ record: RelayRecord, completion: @escaping @Sendable (SinkOutcome) -> Void) {
    let outcome = locked { () -> SinkOutcome in
      records.append(record)
      if !scripted.isEmpty { return scripted.removeFirst() }
      position += 1
      return .stored(position: position, duplicate: false)
    }
    completion(outcome)
  }
}

/// A `LeaseKeeper` that remembers how each lease ended.
final class RecordingLeaseKeeper: LeaseKeeper {
  private let state = Locked<(held: Int, releases: [(trip: String, how: LeaseRelease)])>((0, []))

  func took() { state.withLock { $0.held += 1 } }

  var heldCount: Int { state.withLock { $0.held } }

  var released: [(trip: String, how: LeaseRelease)] { state.withLock { $0.releases } }

  func release(_ lease: FollowLease, _ how: LeaseRelease) async {
    guard lease.end() else { return }
    state.withLock { state in
      state.releases.append((lease.name.description, how))
      state.held -= 1
    }
  }
}

extension LeaseRelease {
  /// The release's kind, for comparing in tests.
  var kind: String {
    switch self {
    case .ack: "ack"
    case .nak: "nak"
    case .term: "term"
    case .abandon: "abandon"
    }
  }
}

/// Collects one call's messages and status (on whatever thread the transport calls back on).
final class CallCollector: GRPCCallHandler {
  private let state = Locked<(updates: [TripUpdate], status: GRPCStatus?)>(([], nil))

  var updates: [TripUpdate] { state.withLock { $0.updates } }

  var status: GRPCStatus? { state.withLock { $0.status } }

  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) {
    let update = (try? TripUpdate(serializedBuffer: message)) ?? TripUpdate()
    state.withLock { $0.updates.append(update) }
  }

  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    state.withLock { $0.status = status }
  }
}

/// The HS256 secret of the relay tests' consumer tokens.
let relayTestSecret = Array("relay-test-secret-of-at-least-32-bytes".utf8)

/// A consumer token for `tripID` (or `*`) from `subject`, valid at `now`.
func consumerToken(tripID: String, subject: String = "watcher@test", now: Double) throws -> String {
  var claims = JWTClaims(
    issuer: subject, subject: subject, audience: [ConsumerTokenVerifier.fleetEngineAudience], expiresAt: now + 600,
    issuedAt: now - 10)
  claims.tripID = tripID
  return try JSONWebToken.sign(claims: claims, key: .hs256(secret: relayTestSecret))
}

/// A trip of `tripID` at `status`, with its vehicle at `latitude`.
func testTrip(_ name: TripName, status: TripStatus = .enrouteToPickup, latitude: Double = 52) -> Trip {
  var trip = Trip()
  trip.name = name.description
  trip.tripStatus = status
  var location = VehicleLocation()
  location.location = LatLng(latitude: latitude, longitude: 4.9)
  trip.lastLocation = location
  return trip
}

/// A whole-trip update.
func fullUpdate(_ trip: Trip) -> TripUpdate {
  var update = TripUpdate()
  update.trip = trip
  update.fullTrip = true
  return update
}

/// An update that moves the vehicle of `name` to `latitude`.
func moveUpdate(_ name: TripName, latitude: Double) -> TripUpdate {
  var update = TripUpdate()
  update.trip = testTrip(name, latitude: latitude).projected(onto: [11])
  update.updatedFields = [11]
  return update
}
