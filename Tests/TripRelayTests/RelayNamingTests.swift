// Tests/TripRelayTests/RelayNamingTests.swift - subjects and message IDs of the relay's streams

import FleetEngineMessages
import Testing

@testable import TripRelay

@Suite("Relay naming")
struct RelayNamingTests {
  @Test("subjects keep letters, digits, - and _; every other byte becomes %XX")
  func subjectTokens() throws {
    let name = try #require(TripName(parsing: "providers/demo-1/trips/a.b*c>d e_f"))
    #expect(RelayNaming.tripSubject(name) == "trips.demo-1.a%2Eb%2Ac%3Ed%20e_f")
    #expect(RelayNaming.followSubject(name) == "follow.demo-1.a%2Eb%2Ac%3Ed%20e_f")
    #expect(RelayNaming.token("ü%") == "%C3%BC%25")
  }

  @Test("update IDs differ per delivery; the final state has one ID whoever publishes it")
  func messageIDs() throws {
    let name = try #require(TripName(parsing: "providers/p/trips/t1"))
    #expect(RelayNaming.updateMessageID(name, delivery: 1, sequence: 3) == "providers/p/trips/t1:1:3")
    #expect(
      RelayNaming.updateMessageID(name, delivery: 2, sequence: 3)
        != RelayNaming.updateMessageID(name, delivery: 1, sequence: 3))
    #expect(RelayNaming.finalMessageID(name) == "providers/p/trips/t1:final")
    #expect(RelayNaming.followMessageID(name) == "providers/p/trips/t1")
  }

  @Test("an update encoded once, with a watcher's sequence and send time appended, decodes as the update with both")
  func encodedOnce() throws {
    var update = TripUpdate()
    var trip = Trip()
    trip.name = "providers/p/trips/t1"
    trip.tripStatus = .enrouteToPickup
    update.trip = trip
    update.updatedFields = [3, 7]
    update.sequence = 99  // replaced: the last value of a field wins
    let body = update.serializedBytes()
    let sendTime = Timestamp(seconds: 1_800_000_000, nanos: 250_000_000)
    let decoded = try TripUpdate(
      serializedBytes: TripHub.message(body: body, sequence: 5, sendTime: sendTime))
    var expected = update
    expected.sequence = 5
    expected.sendTime = sendTime
    #expect(decoded == expected)
    #expect(decoded.updatedFields == [3, 7])
  }
}
