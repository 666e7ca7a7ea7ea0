// Tests/FleetSimTests/FleetSimSpreadingTests.swift - one channel over several FleetSims on loopback addresses
//
// Three FleetSims with the same simulation (seed, start time, speed-up) serve on 127.0.0.2, 127.0.0.3
// and 127.0.0.4 over real sockets; one channel with an `ipv4:` target follows every trip over
// streaming GetTrip. The servers' own stats say how the streams were shared. One server is then
// stopped at once (its streams cut), and every trip must still reach its final state through the
// others: a follower restarts a stream that failed, as JourneySharing's followers do.

import FleetEngineMessages
import FleetSim
import GRPCProtocol
import HTTP2Transport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

private func unixNow() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_REALTIME, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes.
private func waitFor(timeout: Duration = .seconds(20), _ condition: () async -> Bool) async -> Bool {
  let clock = ContinuousClock()
  let end = clock.now.advanced(by: timeout)
  while true {
    if await condition() { return true }
    if clock.now >= end { return false }
    try? await Task.sleep(for: .milliseconds(10))
  }
}

/// Follows trip `name` over streaming GetTrip until a stream ends OK, restarting it after a failure.
/// Returns the trip's status at the end and the streams it took.
private func followTrip(_ channel: GRPCChannel, name: String) async -> (status: TripStatus?, streams: Int) {
  for attempt in 1...200 {
    var request = StreamTripRequest()
    request.name = name
    request.view = .journeySharingV1S
    let response = channel.serverStreaming(
      path: FleetEngineMethods.streamingGetTrip, request: request.serializedBytes(),
      options: CallOptions(timeout: .seconds(60)))
    var state = Trip()
    do {
      for try await message in response { state.apply(try TripUpdate(serializedBytes: message)) }
      return (state.tripStatus, attempt)
    } catch {
      try? await Task.sleep(for: .milliseconds(50))
    }
  }
  return (nil, 200)
}

@Suite("FleetSims sharing a channel", .timeLimit(.minutes(2)))
struct FleetSimSpreadingTests {
  @Test("three FleetSims share one channel's trip streams; stopping one moves its trips, every trip ends final")
  func threeServersShareAndSurviveAKill() async throws {
    let tripCount = 30
    let seed: UInt64 = 31
    let simulation = SimulationConfiguration(tripCount: tripCount, seed: seed)
    let planner = TripSimulator(configuration: simulation)
    let lastFinish = (0..<tripCount).map { planner.plan(index: $0).finishTime }.max() ?? 1
    // Every trip ends within about 8 s of real time.
    let speedup = max(lastFinish / 8, 1)
    let startTime = unixNow()
    var sims: [FleetSim] = []
    var addresses: [GRPCAddress] = []
    for host in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
      let sim = try FleetSim(
        configuration: FleetSimConfiguration(
          simulation: SimulationConfiguration(tripCount: tripCount, seed: seed, startTime: startTime, speedup: speedup),
          updateInterval: .milliseconds(100)),
        listen: GRPCServerConfiguration(host: host))
      addresses.append(GRPCAddress(host: host, port: try sim.start()))
      sims.append(sim)
    }
    let channel = try GRPCChannel(
      target: "ipv4:" + addresses.map(\.description).joined(separator: ","),
      configuration: GRPCChannelConfiguration(
        security: .plaintext,
        backoff: RetryBackoff(initial: .milliseconds(50), maximum: .milliseconds(200))))

    // One call opens a connection to every address; wait until each server has it.
    var probe = GetTripRequest()
    probe.name = planner.tripName(index: 0)
    _ = try? await channel.unary(path: FleetEngineMethods.unaryGetTrip, request: probe.serializedBytes())
    #expect(
      await waitFor {
        var connected = 0
        for sim in sims where await sim.serverStats().openConnections == 1 { connected += 1 }
        return connected == sims.count
      })

    let followers = (0..<tripCount).map { index in
      Task { await followTrip(channel, name: planner.tripName(index: index)) }
    }
    #expect(
      await waitFor {
        var started = 0
        for sim in sims { started += await sim.stats().streamsStarted }
        return started == tripCount
      })
    var shares: [Int] = []
    for sim in sims { shares.append(await sim.stats().streamsStarted) }
    // Least-loaded picking: 10 each, give or take the trips that ended while the others started.
    #expect(shares.reduce(0, +) == tripCount)
    #expect(shares.allSatisfy { $0 >= 5 }, "streams started per server: \(shares)")
    let channelStats = await channel.statistics()
    #expect(channelStats.connectionsPerAddress.count == 3, "\(channelStats.connectionsPerAddress)")

    // The second server goes away at once: its open streams are cut.
    let openOnKilled = await sims[1].stats().streamsOpen
    await sims[1].shutdown()

    var finals = 0
    var restarted = 0
    var extraStreams = 0
    for follower in followers {
      let (status, streams) = await follower.value
      if status == .complete || status == .canceled { finals += 1 }
      if streams > 1 { restarted += 1 }
      extraStreams += streams - 1
    }
    #expect(finals == tripCount, "every trip reached its final state")
    // A stream may have ended on its own between the count and the stop.
    #expect(restarted <= openOnKilled, "only the killed server's streams were restarted")
    #expect(openOnKilled == 0 || restarted >= 1)
    var survivors = 0
    for index in [0, 2] { survivors += await sims[index].stats().streamsStarted }
    #expect(survivors == shares[0] + shares[2] + extraStreams, "the restarted streams went to the two others")

    await channel.shutdown()
    await sims[0].shutdown()
    await sims[2].shutdown()
  }
}
