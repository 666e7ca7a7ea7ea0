// Tests/JourneySharingTests/StreamResumeTests.swift - a stream that breaks resumes after the last update held
//
// A relay keeps each trip's history, so a client that reconnects asks for what came after the last update it
// holds (`StreamTripRequest.after_sequence`) and gets only that. A server that keeps no history (FleetSim)
// answers with the whole trip as ever; one whose history no longer reaches back sends the whole trip flagged
// `discontinuity`. In memory, on the virtual clock, against a server that records what each stream asked.

import FleetEngineMessages
import GRPCProtocol
import JourneySharing
import Primitives
import Testing

/// Streams `script(n)` for the n-th stream and records each request's `after_sequence`.
private final class ResumingServer: GRPCService, Sendable {
  private let asked = Locked<[UInt64]>([])
  private let script: @Sendable (_ number: Int, _ after: UInt64) -> ScriptedReply

  init(_ script: @escaping @Sendable (_ number: Int, _ after: UInt64) -> ScriptedReply) { self.script = script }

  var afterSequences: [UInt64] { asked.withLock { $0 } }

  func handle(_ call: any GRPCServerCallContext) {
    guard call.path == FleetEngineMethods.streamingGetTrip,
      let request = try? StreamTripRequest(serializedBytes: call.request)
    else {
      call.finish(GRPCStatus(code: .unimplemented, message: "streaming only"))
      return
    }
    let number = asked.withLock { asked -> Int in
      asked.append(request.afterSequence)
      return asked.count
    }
    let reply = script(number, request.afterSequence)
    for message in reply.messages { call.send(message) }
    if let status = reply.status { call.finish(status) }
  }
}

/// A delta moving the scripted trip's vehicle to `latitude`, numbered `sequence`.
private func move(_ latitude: Double, sequence: UInt64) -> TripUpdate {
  var trip = Trip()
  var location = VehicleLocation()
  location.location = LatLng(latitude: latitude, longitude: 13.4)
  trip.lastLocation = location
  var update = TripUpdate()
  update.trip = trip
  update.updatedFields = [11]
  update.sequence = sequence
  return update
}

@Suite("Stream resume (in memory, virtual clock)")
struct StreamResumeTests {
  @Test("a stream that ends resumes after the last update held; the updates after it apply to what is held")
  func resumesAfterTheLastUpdate() async throws {
    let server = ResumingServer { number, _ in
      var first = TripUpdate()
      first.trip = scriptedTrip()
      first.fullTrip = true
      first.sequence = 10
      switch number {
      case 1:
        return ScriptedReply(
          messages: [first, move(52.6, sequence: 12)].map { $0.serializedBytes() },
          status: GRPCStatus(code: .unavailable, message: "the relay went away"))
      default:
        // Only what came after: no whole trip.
        return ScriptedReply(messages: [move(52.7, sequence: 15)].map { $0.serializedBytes() }, status: nil)
      }
    }
    try await withServiceFixture(.inMemory, service: { _ in server }, client: { scriptedClient($0, mode: .stream) }) {
      _, fixture in
      let model = fixture.services.tripService.tripModel(forTripName: scriptedTripName)
      let recorder = RecordingSubscriber()
      model.register(recorder)
      #expect(
        await fixture.wait {
          guard server.afterSequences.count == 2 else { return false }
          return await model.currentSnapshot()?.updateSequence == 15
        })
      #expect(server.afterSequences == [0, 12])
      let snapshot = try #require(await model.currentSnapshot())
      #expect(snapshot.vehicleLocation?.location?.latitude == 52.7)
      #expect(snapshot.trip.route == scriptedTrip().route, "the delta applied to the trip held, not to nothing")
      model.unregisterSubscriber(recorder)
    }
  }

  @Test("a resume point the server no longer has: the whole trip, flagged, replaces what is held")
  func discontinuity() async throws {
    let server = ResumingServer { number, after in
      var whole = TripUpdate()
      whole.trip = scriptedTrip(step: number * 3)
      whole.fullTrip = true
      whole.sequence = number == 1 ? 5 : 400
      whole.discontinuity = after > 0
      return ScriptedReply(
        messages: [whole.serializedBytes()],
        status: number == 1 ? GRPCStatus(code: .unavailable, message: "gone") : nil)
    }
    try await withServiceFixture(.inMemory, service: { _ in server }, client: { scriptedClient($0, mode: .stream) }) {
      _, fixture in
      let model = fixture.services.tripService.tripModel(forTripName: scriptedTripName)
      let recorder = RecordingSubscriber()
      model.register(recorder)
      #expect(await fixture.wait { (await model.currentSnapshot())?.updateSequence == 400 })
      #expect(server.afterSequences == [0, 5])
      #expect((await model.currentSnapshot())?.trip.route == scriptedTrip(step: 6).route)
      model.unregisterSubscriber(recorder)
    }
  }
}
