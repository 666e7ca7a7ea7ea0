// Tests/TripRelayTests/RelayResumeEndToEndTests.swift - resuming after a sequence, and joining a long trip late
//
// Real nats-server, FleetSim and a relay; the watchers here are raw gRPC calls, so that the test sees every
// message the relay sends with its sequence.

import FleetEngineMessages
import FleetSim
import Foundation
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import MetricsTestKit
import NATSClient
import NATSTestSupport
import Primitives
import TestSupport
import Testing

@testable import TripRelay

/// Reads the messages of a streaming GetTrip until `count` arrived (nil: until the call ends).
private func read(
  _ channel: GRPCChannel, trip: String, after: UInt64 = 0, count: Int? = nil
) async throws -> [TripUpdate] {
  var request = StreamTripRequest()
  request.name = trip
  request.afterSequence = after
  let response = channel.serverStreaming(path: FleetEngineMethods.streamingGetTrip, request: request.serializedBytes())
  var updates: [TripUpdate] = []
  for try await message in response {
    updates.append(try TripUpdate(serializedBytes: message))
    if let count, updates.count >= count {
      response.cancel()
      break
    }
  }
  return updates
}

@Suite("Relay resume end to end (nats-server, FleetSim, raw gRPC watchers)", .serialized)
struct RelayResumeEndToEndTests {
  @Test("a watcher that reconnects with after_sequence gets exactly the updates it missed, then the rest")
  func afterSequence() async throws {
    try await withNATSServer { server in
      let (sim, simPort) = try RelayE2E.sim(trips: 1, seconds: 8)
      let relay = try await RelayE2E.start(
        try RelayE2E.configuration("a", nats: RelayE2E.nats(server.url), simPort: simPort))
      let port = try #require(relay.0.downstreamPort)
      let channel = try GRPCChannel(
        host: "127.0.0.1", port: port, configuration: GRPCChannelConfiguration(security: .plaintext))
      let trip = sim.simulator.tripName(index: 0)
      let first = try await read(channel, trip: trip, count: 5)
      try #require(first.count == 5)
      #expect(first[0].fullTrip && !first[0].discontinuity)
      #expect(zip(first, first.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
      let last = first[4].sequence
      // Away for a while: updates go on without it.
      try await Task.sleep(for: .seconds(2))
      let rest = try await read(channel, trip: trip, after: last)
      let names = try RelayE2E.names()
      let name = try #require(TripName(parsing: trip))
      let stored = try await relay.0.jetStream.readStream(
        names.tripsStream(for: name), filterSubject: names.storedTripSubject(name))
      let expected = stored.compactMap(\.metadata?.streamSequence).filter { $0 > last }
      #expect(
        rest.map(\.sequence) == expected,
        "resumed with \(rest.count) updates, TRIPS holds \(expected.count) after \(last)")
      #expect(rest.allSatisfy { !$0.fullTrip })
      // Folded together, what the watcher got is the trip's end.
      var trip0 = Trip()
      for update in first + rest { trip0.apply(update) }
      #expect(trip0.isFinal)
      await channel.shutdown()
      await RelayE2E.stop([relay])
      await sim.shutdown()
    }
  }

  @Test("a late joiner of a trip with 10,000 updates in TRIPS gets one whole trip, then live updates, in a few reads")
  func lateJoinerOfALongTrip() async throws {
    try await withNATSServer { server in
      let (sim, simPort) = try RelayE2E.sim(trips: 1)
      let metrics = TestMetrics()
      var configuration = try RelayE2E.configuration("a", nats: RelayE2E.nats(server.url), simPort: simPort)
      configuration.metricsFactory = metrics
      let relay = try await RelayE2E.start(configuration)
      let names = try RelayE2E.names()
      // The trip's history, as a relay's sink writes it: the whole trip, then 10,000 moves, a state every 32.
      let name = try #require(TripName(parsing: "providers/rt/trips/long"))
      let sink = try JetStreamSink(
        jetStream: relay.0.jetStream, names: names, relayID: "writer", metrics: RelayMetrics(factory: TestMetrics()),
        logger: silentLogger())
      defer { sink.close() }
      let stored = Locked(0)
      func write(_ update: TripUpdate, sequence: UInt64, checkpoint: Trip?) {
        let record = RelayRecord(
          name: name, kind: .update(full: update.fullTrip, final: false), body: update.serializedBytes(), delivery: 1,
          sequence: sequence, expectedPosition: nil, checkpoint: checkpoint.map { fullUpdate($0).serializedBytes() })
        sink.publish(record) { outcome in
          if case .stored = outcome { stored.withLock { $0 += 1 } }
        }
      }
      var trip = testTrip(name)
      write(fullUpdate(trip), sequence: 1, checkpoint: trip)
      for step in 1...10_000 {
        let update = moveUpdate(name, latitude: 52 + Double(step) * 1e-6)
        trip.apply(update)
        write(update, sequence: UInt64(step + 1), checkpoint: step % 32 == 0 ? trip : nil)
      }
      #expect(await eventually(timeout: .seconds(60)) { stored.withLock { $0 } == 10_001 })
      let port = try #require(relay.0.downstreamPort)
      let channel = try GRPCChannel(
        host: "127.0.0.1", port: port, configuration: GRPCChannelConfiguration(security: .plaintext))
      let before = (try? metrics.expectCounter("journeysharing_relay_history_messages_read_total").totalValue) ?? 0
      async let joined = read(channel, trip: name.description, count: 4)
      // The join has its trip once its first message is out: then three live updates.
      try await Task.sleep(for: .seconds(2))
      let after = (try? metrics.expectCounter("journeysharing_relay_history_messages_read_total").totalValue) ?? 0
      for step in 1...3 {
        let update = moveUpdate(name, latitude: 60 + Double(step))
        write(update, sequence: UInt64(10_001 + step), checkpoint: nil)
      }
      let updates = try await joined
      try #require(updates.count == 4)
      #expect(updates[0].fullTrip, "the first message is the whole trip")
      #expect(abs((updates[0].trip?.lastLocation?.location?.latitude ?? 0) - (52 + 10_000 * 1e-6)) < 1e-9)
      #expect(updates[0].sequence >= 10_001)
      #expect(updates.dropFirst().map { $0.trip?.lastLocation?.location?.latitude } == [61, 62, 63])
      #expect(zip(updates, updates.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
      // The join read the trip's state and the few updates after it, not its history.
      #expect(after - before < 32, "read \(after - before) messages to join")
      await channel.shutdown()
      await RelayE2E.stop([relay])
      await sim.shutdown()
    }
  }
}
