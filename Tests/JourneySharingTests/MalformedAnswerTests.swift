// Tests/JourneySharingTests/MalformedAnswerTests.swift - answers that do not decode, headers above the limit
//
// Against ScriptedFleetEngine (a server whose answers the test writes): a trip that does not decode reaches
// subscribers as INTERNAL and following goes on (in memory); response headers above the channel's header list
// limit are RESOURCE_EXHAUSTED, and the limit is reachable from JourneySharingConfiguration.connection (an
// HTTP/2 limit: over sockets, against a real GRPCServer).

import FleetEngineMessages
import Foundation
import GRPCProtocol
import HTTP2Session
import HTTP2Transport
import JourneySharing
import Logging
import Testing

@Suite("Malformed answers (in memory)", .timeLimit(.minutes(2)))
struct MalformedAnswerTests {
  @Test(
    "A response that is not a Trip (poll) or TripUpdate (stream): INTERNAL to subscribers, then the next answer is followed",
    arguments: [JourneySharingConfiguration.FetchMode.stream, .poll])
  func malformedProtobuf(mode: JourneySharingConfiguration.FetchMode) async throws {
    let valid = scriptedTrip()
    try await ScriptedFleetEngine.with(
      .inMemory,
      script: { path, number in
        let streaming = path == FleetEngineMethods.streamingGetTrip
        if number == 1 {
          return ScriptedReply(messages: [ScriptedReply.malformed], status: streaming ? nil : .ok)
        }
        return streaming ? .stream(valid) : .trip(valid)
      },
      client: { scriptedClient($0, mode: mode) }
    ) { _, fixture in
      let services = fixture.services
      let recorder = RecordingSubscriber()
      let model = services.tripService.tripModel(forTripName: scriptedTripName)
      model.register(recorder)
      #expect(await fixture.wait { !recorder.trips().isEmpty })
      let errors = recorder.errors()
      #expect(errors.count == 1, "\(errors)")
      #expect(errors.first?.domain == "io.grpc")
      #expect(errors.first?.code == GRPCStatusCode.internalError.rawValue)
      #expect(errors.first?.message.contains("malformed") == true, "\(errors)")
      #expect(recorder.trips().map(\.trip) == [heldTrip(valid)])
      #expect(await model.modelState() == .active)
      model.unregisterSubscriber(recorder)
    }
  }
}

@Suite("Oversized response headers end to end (a GRPCServer over sockets)", .timeLimit(.minutes(2)))
struct HeaderListLimitEndToEndTests {
  @Test(
    "Response headers above 16 KiB: RESOURCE_EXHAUSTED; JourneySharingConfiguration.channel raises the limit",
    arguments: [false, true])
  func headerListLimitIsReachable(raised: Bool) async throws {
    var big = ScriptedReply.trip(scriptedTrip())
    big.headers = ["x-padding": .string(String(repeating: "p", count: 20 * 1024))]
    let reply = big
    // The header list limit is HTTP/2's (SETTINGS_MAX_HEADER_LIST_SIZE): only a real connection has it.
    try await ScriptedFleetEngine.with(
      .sockets,
      script: { _, _ in reply },
      client: { base in
        var configuration = scriptedClient(base, mode: .poll)
        if raised { configuration.connection.maxResponseHeaderListSize = 64 * 1024 }
        return configuration
      }
    ) { _, fixture in
      let services = fixture.services
      let recorder = RecordingSubscriber()
      let model = services.tripService.tripModel(forTripName: scriptedTripName)
      model.register(recorder)
      if raised {
        #expect(await fixture.wait { !recorder.trips().isEmpty })
        #expect(recorder.errors().isEmpty, "\(recorder.errors())")
      } else {
        #expect(await fixture.wait { !recorder.errors().isEmpty })
        let error = try #require(recorder.errors().first)
        #expect(error.code == GRPCStatusCode.resourceExhausted.rawValue, "\(error.description)")
        #expect(error.message.contains("header list"), "\(error.message)")
        #expect(recorder.trips().isEmpty)
      }
      model.unregisterSubscriber(recorder)
    }
  }
}
