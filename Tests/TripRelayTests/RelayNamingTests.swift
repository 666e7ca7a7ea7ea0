// Tests/TripRelayTests/RelayNamingTests.swift - streams, subjects, partitions and message IDs of a relay cluster

import FleetEngineMessages
import Testing

@testable import TripRelay

@Suite("Relay naming")
struct RelayNamingTests {
  @Test("subjects keep letters, digits, - and _; every other byte becomes %XX, and decodes back")
  func subjectTokens() throws {
    let names = try RelayNames(cluster: "prod", providerID: "demo-1")
    let name = try #require(TripName(parsing: "providers/demo-1/trips/a.b*c>d e_f"))
    #expect(names.tripSubject(name) == "trips.prod.demo-1.a%2Eb%2Ac%3Ed%20e_f")
    #expect(names.followSubject(name) == "follow.prod.demo-1.a%2Eb%2Ac%3Ed%20e_f")
    #expect(names.stateSubject(name) == "tripstate.prod.demo-1.a%2Eb%2Ac%3Ed%20e_f")
    #expect(RelayNaming.token("ü%") == "%C3%BC%25")
    #expect(RelayNaming.untoken("%C3%BC%25") == "ü%")
    #expect(RelayNaming.untoken("a.b") == nil)
    #expect(names.tripID(ofSubject: names.tripSubject(name)) == name.tripID)
    #expect(names.tripID(ofSubject: "trips.other.demo-1.x") == nil)
  }

  @Test("streams and the consumer are named by cluster and provider: two providers, two environments never meet")
  func streamsPerClusterAndProvider() throws {
    let a = try RelayNames(cluster: "prod", providerID: "a")
    let b = try RelayNames(cluster: "prod", providerID: "b")
    let staging = try RelayNames(cluster: "staging", providerID: "a")
    let all = [a, b, staging]
    #expect(Set(all.map(\.followStream)).count == 3)
    #expect(Set(all.map { $0.tripsStream(partition: 0) }).count == 3)
    #expect(Set(all.map(\.stateStream)).count == 3)
    #expect(Set(all.map(\.followSubjects)).count == 3)
    #expect(a.followStream == "FOLLOW_prod_a" && a.tripsStream(partition: 0) == "TRIPS_prod_a")
    #expect(throws: RelayConfigurationError.self) { try RelayNames(cluster: "a.b", providerID: "p") }
    #expect(throws: RelayConfigurationError.self) { try RelayNames(cluster: "p", providerID: "p", tripPartitions: 0) }
  }

  @Test("partitions: FNV-1a of the trip token, as NATS' partition() mapping computes it; every trip in one stream")
  func partitions() throws {
    let names = try RelayNames(cluster: "c", providerID: "p", tripPartitions: 2)
    #expect(names.tripsStreams == ["TRIPS_c_p_0", "TRIPS_c_p_1"])
    // FNV-1a 32 of "trip-0" is 0xef045e2f (odd), of "trip-1" 0xee045c9c (even).
    let zero = try #require(TripName(parsing: "providers/p/trips/trip-0"))
    let one = try #require(TripName(parsing: "providers/p/trips/trip-1"))
    #expect(names.partition(of: zero) == 1 && names.partition(of: one) == 0)
    #expect(names.storedTripSubject(zero) == "trips.c.p.1.trip-0")
    #expect(names.tripsStream(for: zero) == "TRIPS_c_p_1")
    #expect(names.tripsStreamSubject(partition: 1) == "trips.c.p.1.*")
    let spread = (0..<1_000).map { names.partition(of: TripName(parsing: "providers/p/trips/t\($0)")!) }
    #expect(spread.filter { $0 == 0 }.count > 400 && spread.filter { $0 == 1 }.count > 400)
    let (source, destination) = RelayNames.partitionMapping(partitions: 2)
    #expect(source == "trips.*.*.*")
    #expect(destination == "trips.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(2,3)}}.{{wildcard(3)}}")
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

  @Test("a stored update, stamped with a watcher's sequence and send time, decodes as the update with both")
  func stamped() throws {
    var trip = Trip()
    trip.name = "providers/p/trips/t1"
    trip.tripStatus = .enrouteToPickup
    let body = TripStreamWriter.encode(trip, fields: Trip.fieldBits([3, 7]))
    let sendTime = Timestamp(seconds: 1_800_000_000, nanos: 250_000_000)
    let decoded = try TripUpdate(serializedBytes: TripStreamWriter.stamped(body, sequence: 5, sendTime: sendTime))
    var expected = TripUpdate()
    expected.trip = trip.projected(onto: [3, 7])
    expected.updatedFields = [3, 7]
    expected.sequence = 5
    expected.sendTime = sendTime
    #expect(decoded == expected)
  }
}
