// Tests/FleetEngineMessagesTests/TripNameTests.swift - trip name validation

import FleetEngineMessages
import Testing

@Suite("TripName")
struct TripNameTests {
  @Test(
    "valid names split into provider and trip",
    arguments: [
      ("providers/demo/trips/trip-0", "demo", "trip-0"),
      ("providers/my-project-123/trips/a", "my-project-123", "a"),
      ("providers/p/trips/\u{00E9}t\u{00E9}-42", "p", "\u{00E9}t\u{00E9}-42"),
      ("providers/p/trips/" + String(repeating: "x", count: 64), "p", String(repeating: "x", count: 64)),
    ])
  func valid(name: String, provider: String, trip: String) throws {
    let parsed = try #require(TripName(parsing: name))
    #expect(parsed.providerID == provider)
    #expect(parsed.tripID == trip)
    #expect(parsed.description == name)
  }

  @Test(
    "invalid names are rejected",
    arguments: [
      "", "trip-0", "providers/demo/trips/", "providers//trips/t", "providers/demo/trips/a/b",
      "provider/demo/trips/t", "providers/demo/trip/t", "providers/Demo/trips/t", "providers/1demo/trips/t",
      "providers/demo-/trips/t", "providers/demo/trips/a:b", "providers/demo/trips/a?b", "providers/demo/trips/a#b",
      "providers/demo/trips/a\\b", "providers/demo/trips/a\u{0}b", "providers/demo/trips/a\nb",
      "providers/demo/trips/" + String(repeating: "x", count: 65),
      "providers/" + String(repeating: "p", count: 31) + "/trips/t", "/providers/demo/trips/t",
    ])
  func invalid(name: String) {
    #expect(TripName(parsing: name) == nil)
  }
}
