// Tests/FleetSimTests/LoadGenerationTests.swift - FleetSim's load-generation mode over real sockets
//
// A stream in load mode gets the full trip, then small updates numbered without gaps and stamped with the
// send time; without a rate, the sender stops when the stream's flow-control window is full and resumes
// when the client reads.

import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import ProtoWire
import Testing

#if canImport(Glibc)
  import Glibc
#endif

private func now() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_REALTIME, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

private func withLoadServer<R>(
  _ load: LoadGeneration, trips: Int = 4, _ body: (FleetSim, GRPCChannel) async throws -> R
) async throws -> R {
  var simulation = SimulationConfiguration(provider: "load", tripCount: trips, seed: 3)
  simulation.startTime = now()
  let sim = try FleetSim(configuration: FleetSimConfiguration(simulation: simulation, load: load))
  let port = try sim.start()
  let channel = try GRPCChannel(
    host: "127.0.0.1", port: port, configuration: GRPCChannelConfiguration(security: .plaintext))
  defer { channel.close() }
  do {
    let result = try await body(sim, channel)
    await sim.shutdown()
    return result
  } catch {
    await sim.shutdown()
    throw error
  }
}

private func stream(_ channel: GRPCChannel, trip: Int) -> GRPCServerStreamingResponse {
  var request = StreamTripRequest()
  request.name = "providers/load/trips/trip-\(trip)"
  return channel.serverStreaming(path: FleetEngineMethods.streamingGetTrip, request: request.serializedBytes())
}

@Suite("FleetSim load generation", .timeLimit(.minutes(1)))
struct LoadGenerationTests {
  /// Past the first 1,024 trips, a stream's first message is a simulated trip made for another index, renamed:
  /// its name and every trip ID in it are the followed trip's, and it is otherwise that trip's whole.
  @Test func aTripPastTheTemplatesIsARenamedTemplate() async throws {
    try await withLoadServer(LoadGeneration(updatesPerSecond: 1), trips: 1_030) { _, channel in
      func first(_ trip: Int) async throws -> Trip {
        let response = stream(channel, trip: trip)
        var iterator = response.makeAsyncIterator()
        let update = try TripUpdate(serializedBytes: try #require(try await iterator.next()))
        response.cancel()
        #expect(update.fullTrip)
        return try #require(update.trip)
      }
      let template = try await first(3)
      let renamed = try await first(1_027)
      #expect(renamed.name == "providers/load/trips/trip-1027")
      #expect(!renamed.remainingWaypoints.isEmpty)
      let ownIDs = renamed.remainingWaypoints.map(\.tripId).filter { !$0.isEmpty }
      #expect(!ownIDs.isEmpty && ownIDs.allSatisfy { $0 == "trip-1027" })
      #expect(renamed.route == template.route)
      #expect(renamed.remainingWaypoints.map(\.pathToWaypoint) == template.remainingWaypoints.map(\.pathToWaypoint))
    }
  }

  @Test func aStreamGetsTheFullTripThenNumberedSmallUpdatesAtTheRate() async throws {
    try await withLoadServer(LoadGeneration(updatesPerSecond: 50)) { sim, channel in
      let response = stream(channel, trip: 2)
      var iterator = response.makeAsyncIterator()
      let first = try TripUpdate(serializedBytes: try #require(try await iterator.next()))
      #expect(first.fullTrip)
      #expect(first.sequence == 1)
      #expect(first.trip?.name == "providers/load/trips/trip-2")
      var sequence = first.sequence
      var previousLocation = first.trip?.lastLocation?.location
      for _ in 0..<20 {
        let update = try TripUpdate(serializedBytes: try #require(try await iterator.next()))
        #expect(!update.fullTrip)
        #expect(update.sequence == sequence + 1)
        #expect(update.updatedFields == [11, 12, 13])
        let location = try #require(update.trip?.lastLocation?.location)
        #expect(location != previousLocation)
        #expect(update.trip?.remainingDistanceMeters != nil)
        #expect(update.trip?.etaToFirstWaypoint != nil)
        let sent = try #require(update.sendTime).unixTime
        #expect(abs(now() - sent) < 5)
        sequence = update.sequence
        previousLocation = location
      }
      let stats = await sim.stats()
      #expect(stats.streamsOpen == 1)
      #expect(stats.updatesSent >= 21)
    }
  }

  @Test func withoutARateTheSenderWaitsForTheFlowControlWindow() async throws {
    try await withLoadServer(LoadGeneration(updatesPerSecond: nil, maxBufferedBytes: 4096)) { sim, channel in
      // The client reads nothing after the first message: the stream's window fills and the sender stops.
      let response = stream(channel, trip: 1)
      var iterator = response.makeAsyncIterator()
      _ = try #require(try await iterator.next())
      var settled = await sim.stats().updatesSent
      var stable = false
      for _ in 0..<50 {
        try await Task.sleep(for: .milliseconds(100))
        let sent = await sim.stats().updatesSent
        if sent == settled {
          stable = true
          break
        }
        settled = sent
      }
      #expect(stable, "the sender kept sending into a full window")
      // A few kilobytes of window plus the send buffer: thousands of small updates at most, not unbounded.
      #expect(settled < 20_000)
      // Reading resumes the flow: updates keep arriving, in order.
      var sequence: UInt64 = 1
      for _ in 0..<(settled + 200) {
        let update = try TripUpdate(serializedBytes: try #require(try await iterator.next()))
        #expect(update.sequence == sequence + 1)
        sequence = update.sequence
      }
      #expect(await sim.stats().updatesSent > settled)
    }
  }

  @Test func cancelledStreamsAreDroppedFromTheSender() async throws {
    try await withLoadServer(LoadGeneration(updatesPerSecond: 100)) { sim, channel in
      for trip in 0..<3 {
        let response = stream(channel, trip: trip)
        var iterator = response.makeAsyncIterator()
        _ = try await iterator.next()
        _ = try await iterator.next()
        response.cancel()
      }
      var open = -1
      for _ in 0..<100 {
        open = await sim.stats().streamsOpen
        if open == 0 { break }
        try await Task.sleep(for: .milliseconds(50))
      }
      #expect(open == 0)
    }
  }
}
