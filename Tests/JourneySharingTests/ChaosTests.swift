// Tests/JourneySharingTests/ChaosTests.swift - following trips while the server dies, misbehaves and heals
//
// `make chaos` (part of `make test`) runs this suite on its own (the other passes skip it). Each test prints its figures as
// `chaos: …` lines. The bounds these tests state:
//
// - every trip's final state reaches its subscriber exactly once, and it is the simulator's final state;
// - no callback reaches a subscriber after `unregisterSubscriber` returned;
// - while the server is down, the channel starts no more connection attempts than its backoff allows
//   (one at once, then one per backoff delay, each at least (1 - jitter) times its base), and every
//   delay it chose lies within [(1 - jitter) × initial, (1 + jitter) × max];
// - resident memory once every trip ended and was let go is within `rssBound` of where it started;
// - a subscriber blocking 3 s in every callback delays other trips' deliveries by at most 1 s (p99,
//   server send time to callback), and gets the latest state rather than a backlog;
// - each client-error class is reported to subscribers as io.grpc/code, retried no faster than the
//   backoff allows, and updates resume once the server heals.

import FleetEngineMessages
import FleetSim
import Foundation
import GRPCProtocol
import HTTP2Transport
import JourneySharing
import Logging
import Primitives
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The backoff of the chaos clients, for connections and for each trip's retries: 100 ms growing to 1 s.
let chaosBackoff = RetryBackoff(initial: .milliseconds(100), multiplier: 1.6, jitter: 0.2, maximum: .seconds(1))

/// How far above its starting level resident memory may stay once every trip ended and was let go.
/// glibc keeps freed memory in its per-thread arenas (the event loop's and each delivery thread's), so
/// the process's own figure is checked, and also the figure once the arenas are trimmed: that one is
/// what is still allocated.
let rssBound = 48 << 20
let rssTrimmedBound = 24 << 20

func chaosClientConfiguration(port: Int, provider: String) -> JourneySharingConfiguration {
  var configuration = JourneySharingConfiguration(
    host: "127.0.0.1", port: port, security: .plaintext, providerID: provider, fetchMode: .stream,
    logger: quietLogger("journeysharing.chaos"))
  configuration.retryBackoff = chaosBackoff
  configuration.connection.reconnectBackoff = chaosBackoff
  configuration.connection.connectTimeout = .seconds(5)
  return configuration
}

@Suite("Chaos", .serialized)
struct ChaosTests {
  @Test("2,000 trips through kills, restarts, GOAWAY, resets, drops and UNAVAILABLE: every final state once")
  func followingSurvivesAHostileServer() async throws {
    let tripCount = 2_000
    let provider = "chaos"
    let seed: UInt64 = 41
    let planner = TripSimulator(
      configuration: SimulationConfiguration(provider: provider, tripCount: tripCount, seed: seed))
    let plans = (0..<tripCount).map { planner.plan(index: $0) }
    let longest = plans.map(\.finishTime).max() ?? 1
    // Time-compressed so the longest trip ends 36 s after the trips begin; they begin 3 s from now.
    let runSeconds = 36.0
    let speedup = longest / runSeconds
    let lead = 3.0
    let startTime = unixTime() + lead
    let simulator = TripSimulator(
      configuration: SimulationConfiguration(
        provider: provider, tripCount: tripCount, seed: seed, startTime: startTime, speedup: speedup))
    let expectedFinal = plans.map { plan in
      simulator.trip(index: plan.index, atSimulatedSeconds: plan.finishTime + 1_000).tripStatus
    }

    let failRate = 0.03
    let resetRate = 0.002
    let arguments = [
      "--trips", "\(tripCount)", "--provider", provider, "--seed", "\(seed)", "--start-time", "\(startTime)",
      "--speedup", "\(speedup)", "--update-interval", "0.5", "--fail-rate", "\(failRate)", "--fail-code",
      "UNAVAILABLE", "--reset-rate", "\(resetRate)", "--goaway-every", "3", "--drop-every", "4",
      "--max-concurrent-streams", "250",
    ]
    let executable = try fleetsimExecutable()
    var server = try FleetSimProcess(executable: executable, arguments: arguments, port: 0)
    let port = try await server.waitUntilListening()

    let rssStart = residentBytes()
    let peak = Atomic<Int>(rssStart)
    let services = try JourneySharingServices(configuration: chaosClientConfiguration(port: port, provider: provider))
    let ledger = TripLedger(tripCount: tripCount)
    var leavers: [(index: Int, subscriber: LeavingSubscriber)] = []
    for index in 0..<tripCount {
      let model = services.tripService.tripModel(forTripName: simulator.tripName(index: index))
      model.register(ledger)
      if index % 10 == 0 {
        let leaver = LeavingSubscriber(leaveAfter: 2 + index % 7)
        model.register(leaver)
        leavers.append((index, leaver))
      }
    }
    let leaversLeft = Atomic<Int>(0)
    let background = Task.detached { [leavers] in
      while !Task.isCancelled {
        let rss = residentBytes()
        var current = peak.load(ordering: .relaxed)
        while rss > current {
          let (exchanged, original) = peak.compareExchange(expected: current, desired: rss, ordering: .relaxed)
          if exchanged { break }
          current = original
        }
        for (index, leaver) in leavers where leaver.wantsToLeave {
          // From outside any callback: once this returns, nothing may reach the leaver.
          services.tripService.tripModel(forTripName: simulator.tripName(index: index)).unregisterSubscriber(leaver)
          leaver.markLeft()
          leaversLeft.add(1, ordering: .relaxed)
        }
        try? await Task.sleep(for: .milliseconds(100))
      }
    }

    // Three kills: SIGKILL, 1.5 s down, a restart on the same port with the same simulation.
    var incarnations: [[String: Int]] = []
    var windows: [(down: Double, attempts: Int, allowed: Int, recovery: Double?)] = []
    for killAt in [8.0, 16.0, 24.0] {
      try await Task.sleep(for: .seconds(max(0, startTime - lead + killAt - unixTime())))
      incarnations.append(server.lastStats)
      server.kill()
      let killed = unixTime()
      let before = await services.statistics().connections
      try await Task.sleep(for: .milliseconds(1_500))
      let after = await services.statistics().connections
      let down = unixTime() - killed
      server = try FleetSimProcess(executable: executable, arguments: arguments, port: port)
      #expect(try await server.waitUntilListening() == port)
      let restarted = unixTime()
      let attempts = after.connectAttempts - before.connectAttempts
      // +1: an attempt already scheduled when the kill was noticed.
      let allowed = maxAttempts(within: down, backoff: chaosBackoff) + 1
      #expect(attempts >= 1, "no reconnect attempt in \(down) s down")
      #expect(attempts <= allowed, "\(attempts) connection attempts in \(down) s down; backoff allows \(allowed)")
      // Recovery: every trip under way gets an update after the restart.
      // (Trips that end within 2 s of the restart may end before they are reached again.)
      let restartedAt = simulator.simulatedSeconds(atUnixTime: restarted)
      let underWay = (0..<tripCount).filter {
        ledger.trip($0).finals.isEmpty && plans[$0].finishTime > restartedAt + 2 * speedup
      }
      let recovered = await eventually(timeout: .seconds(20)) {
        underWay.allSatisfy { ledger.trip($0).lastUpdateWallTime > restarted }
      }
      #expect(recovered, "trips without an update since the restart")
      windows.append((down, attempts, allowed, recovered ? unixTime() - restarted : nil))
    }

    // Every trip ends; its final state arrives once.
    let allFinal = await eventually(timeout: .seconds(120)) { ledger.all.allSatisfy { !$0.finals.isEmpty } }
    try await Task.sleep(for: .seconds(1))  // time for a duplicate to show up
    let records = ledger.all
    #expect(allFinal, "\(records.count { $0.finals.isEmpty }) trips without a final state")
    let duplicated = records.indices.filter { records[$0].finals.count > 1 }
    #expect(duplicated.isEmpty, "trips with the final state more than once: \(duplicated.prefix(10))")
    let wrong = records.indices.filter { index in
      records[index].finals.first.map { $0 != expectedFinal[index] } ?? false
    }
    #expect(wrong.isEmpty, "trips whose final state is not the simulator's: \(wrong.prefix(10))")
    let late = leavers.reduce(0) { $0 + $1.subscriber.callbacksAfterLeaving }
    #expect(late == 0, "\(late) callbacks after unregisterSubscriber returned")

    background.cancel()
    _ = await background.value
    let exitStatus = await server.stop()
    #expect(exitStatus == 0)
    incarnations.append(server.lastStats)  // the final stats line of a server stopped with SIGTERM
    let channel = await services.statistics().connections
    let delays = channel.recentBackoffDelays.map(seconds)
    let lowest = seconds(chaosBackoff.initial) * (1 - chaosBackoff.jitter)
    let highest = seconds(chaosBackoff.maximum) * (1 + chaosBackoff.jitter)
    #expect(delays.allSatisfy { $0 >= lowest - 1e-9 && $0 <= highest + 1e-9 }, "backoff delays \(delays)")

    // Let every trip go: the memory of 2,000 followed trips must go with them.
    for index in 0..<tripCount {
      services.tripService.tripModel(forTripName: simulator.tripName(index: index)).unregisterSubscriber(ledger)
    }
    for (index, leaver) in leavers where !leaver.hasLeft {
      services.tripService.tripModel(forTripName: simulator.tripName(index: index)).unregisterSubscriber(leaver)
    }
    #expect(await eventually(timeout: .seconds(10)) { services.tripService.allTripModels.isEmpty })
    try await Task.sleep(for: .seconds(1))
    let rssFinal = residentBytes()
    trimMallocArenas()
    let rssTrimmed = residentBytes()
    #expect(rssFinal - rssStart <= rssBound, "RSS \(mebibytes(rssStart)) → \(mebibytes(rssFinal))")
    #expect(
      rssTrimmed - rssStart <= rssTrimmedBound, "RSS \(mebibytes(rssStart)) → \(mebibytes(rssTrimmed)) trimmed")
    await services.shutdown()

    func total(_ key: String) -> Int { incarnations.reduce(0) { $0 + ($1[key] ?? 0) } }
    let finals = records.reduce(0) { $0 + $1.finals.count }
    let completed = records.count { $0.finals.first == .complete }
    let errors = records.reduce(into: [Int: Int]()) { sums, record in
      for (code, count) in record.errorsByCode { sums[code, default: 0] += count }
    }
    print(
      """
      chaos: trips=\(tripCount) speedup=\(String(format: "%.1f", speedup)) updates_delivered=\(records.reduce(0) { $0 + $1.updates })
      chaos: faults: kills=3 goaways=\(total("fault_goaways")) drops=\(total("fault_drops")) \
      resets=\(total("fault_resets")) unavailable=\(total("fault_status")) (server counters; a killed server's last \
      0.25 s is not counted)
      chaos: reconnects: connection_attempts=\(channel.connectAttempts) failed=\(channel.connectFailures) \
      streams_started=\(total("streams"))
      """)
    for (number, window) in windows.enumerated() {
      print(
        "chaos: kill \(number + 1): down \(String(format: "%.2f", window.down)) s, \(window.attempts) connection "
          + "attempts (backoff allows \(window.allowed)), every trip under way updated again within "
          + (window.recovery.map { String(format: "%.2f s", $0) } ?? "-") + " of the restart")
    }
    print(
      """
      chaos: finals delivered=\(finals) (complete \(completed), canceled \(finals - completed)) duplicates=\(duplicated.count) \
      missing=\(records.count { $0.finals.isEmpty })
      chaos: leavers=\(leavers.count) left=\(leaversLeft.load(ordering: .relaxed)) callbacks_after_leaving=\(late)
      chaos: errors seen by subscribers: \(errors.sorted { $0.key < $1.key }.map { "\(GRPCStatusCode(rawValue: $0.key)?.name ?? "\($0.key)")=\($0.value)" }.joined(separator: " ")) domains=\(ledger.domains.sorted())
      chaos: rss start=\(mebibytes(rssStart)) peak=\(mebibytes(peak.load(ordering: .relaxed))) final=\(mebibytes(rssFinal)) \
      (bound: start + \(mebibytes(rssBound))), after malloc_trim=\(mebibytes(rssTrimmed)) (bound: start + \(mebibytes(rssTrimmedBound)))
      """)
  }
}

/// A FleetSim in this process on 127.0.0.1 with `tripCount` trips under way for minutes (in real time,
/// begun 30 s ago), sending every 100 ms, and services following on it with the chaos backoff.
func withRealTimeFleetSim<R>(
  tripCount: Int, provider: String, _ body: (FollowFixture) async throws -> R
) async throws -> R {
  try await FollowFixture.with(
    FleetSimConfiguration(
      simulation: SimulationConfiguration(
        provider: provider, tripCount: tripCount, seed: 5, startTime: unixTime() - 30, speedup: 1),
      updateInterval: .milliseconds(100)),
    client: { chaosClientConfiguration(port: $0, provider: provider) }, body)
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
  guard !values.isEmpty else { return .nan }
  let sorted = values.sorted()
  return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

extension ChaosTests {
  @Test("Two subscribers blocking 3 s per callback delay no other trip by more than 1 s, and get no backlog")
  func blockedSubscribersDelayNoOne() async throws {
    let tripCount = 300
    try await withRealTimeFleetSim(tripCount: tripCount, provider: "blocked") { fixture in
      let (sim, services) = (fixture.sim, fixture.services)
      // Two of the four delivery threads end up inside the blockers' callbacks.
      let blockers = [BlockingSubscriber(blockFor: .seconds(3)), BlockingSubscriber(blockFor: .seconds(3))]
      let ledger = TripLedger(tripCount: tripCount)
      let models = (0..<tripCount).map {
        services.tripService.tripModel(forTripName: sim.simulator.tripName(index: $0))
      }
      models[0].register(blockers[0])
      models[1].register(blockers[1])
      for model in models.dropFirst(2) { model.register(ledger) }
      #expect(await eventually(timeout: .seconds(20)) { blockers.allSatisfy { $0.deliveryCount >= 1 } })
      let rssBefore = residentBytes()
      let updatesBefore = ledger.all.reduce(0) { $0 + $1.updates }
      ledger.startMeasuringDelays()
      let window = 9.0
      try await Task.sleep(for: .seconds(window))
      let delays = ledger.measuredDelays
      let updates = ledger.all.reduce(0) { $0 + $1.updates } - updatesBefore
      let rssAfter = residentBytes()
      let p50 = percentile(delays, 0.5)
      let p99 = percentile(delays, 0.99)
      let worst = delays.max() ?? .nan
      #expect(delays.count >= 1_000, "only \(delays.count) deliveries measured")
      #expect(p99 <= 1.0, "p99 delivery delay \(p99) s while two subscribers block")
      // Each blocker saw at most one delivery per 3 s (plus the one in progress), and each was the
      // newest state at the time: sequence numbers jump by several updates (about ten per 3 s at full speed,
      // fewer when a loaded machine slows the simulator), nothing queued up behind (a backlog jumps by 1).
      for blocker in blockers {
        let sequences = blocker.sequencesSeen
        #expect(blocker.deliveryCount <= Int(window / 3) + 3, "\(blocker.deliveryCount) deliveries")
        let jumps = zip(sequences.dropFirst(), sequences).map { Int($0) - Int($1) }
        #expect(jumps.allSatisfy { $0 >= 3 }, "sequence jumps \(jumps): the blocker got a backlog")
      }
      // The memory a blocked subscriber holds is one pending event: nothing grows while it blocks.
      #expect(rssAfter - rssBefore <= 16 << 20, "RSS \(mebibytes(rssBefore)) → \(mebibytes(rssAfter))")
      print(
        """
        chaos: blocked subscribers: 2 blocking 3 s per callback, \(tripCount - 2) other trips, \(updates) other deliveries \
        in \(window) s; delay (send → callback) p50=\(String(format: "%.1f", p50 * 1000)) ms \
        p99=\(String(format: "%.1f", p99 * 1000)) ms max=\(String(format: "%.1f", worst * 1000)) ms (bound: p99 ≤ 1 s); \
        blockers' deliveries \(blockers.map(\.deliveryCount)), sequences \(blockers.map(\.sequencesSeen)); \
        rss \(mebibytes(rssBefore)) → \(mebibytes(rssAfter))
        """)
      for (index, blocker) in blockers.enumerated() { models[index].unregisterSubscriber(blocker) }
      for model in models.dropFirst(2) { model.unregisterSubscriber(ledger) }
    }
  }

  @Test("Each client-error class is reported, retried with backoff, and updates resume when the server heals")
  func clientErrorClassesRecover() async throws {
    let codes: [GRPCStatusCode] = [
      .invalidArgument, .notFound, .permissionDenied, .resourceExhausted, .unauthenticated,
    ]
    try await withRealTimeFleetSim(tripCount: 80, provider: "healing") { fixture in
      let (sim, services) = (fixture.sim, fixture.services)
      // 40 trips that are still under way when this test ends (the simulation runs in real time, 30 s in).
      let indices = (0..<80).filter { sim.simulator.plan(index: $0).finishTime > 400 }.prefix(40)
      let tripCount = indices.count
      try #require(tripCount == 40)
      let ledger = TripLedger(tripCount: 80)
      let models = indices.map { services.tripService.tripModel(forTripName: sim.simulator.tripName(index: $0)) }
      for model in models { model.register(ledger) }
      #expect(await eventually(timeout: .seconds(20)) { indices.allSatisfy { ledger.trip($0).updates > 0 } })
      var lines: [String] = []
      for code in codes {
        let errorsBefore = ledger.all.map { $0.errorsByCode[code.rawValue] ?? 0 }
        // Every call fails with `code` from now on; the open streams are cut so that following has to call again.
        sim.setFaults(FaultInjection(failureRate: 1, failureCode: code))
        let callsBefore = await sim.stats().streamsStarted
        let failingSince = unixTime()
        sim.dropConnections()
        let failingFor = 2.0
        try await Task.sleep(for: .seconds(failingFor))
        let calls = await sim.stats().streamsStarted - callsBefore
        let failedFor = unixTime() - failingSince
        let reported = indices.filter { (ledger.trip($0).errorsByCode[code.rawValue] ?? 0) > errorsBefore[$0] }
        #expect(reported.count == tripCount, "\(code.name): \(tripCount - reported.count) trips saw no such error")
        for model in models { #expect(await model.modelState() == .active, "\(code.name): following stopped") }
        // Per trip: one call after the cut, then at most one per backoff delay.
        let allowed = tripCount * maxAttempts(within: failedFor, backoff: chaosBackoff)
        #expect(calls >= tripCount, "\(code.name): \(calls) calls: following did not retry")
        #expect(calls <= allowed, "\(code.name): \(calls) calls in \(failedFor) s; backoff allows \(allowed)")

        sim.setFaults(FaultInjection())
        let healed = unixTime()
        let resumed = await eventually(timeout: .seconds(20)) {
          indices.allSatisfy { ledger.trip($0).lastUpdateWallTime > healed }
        }
        let resumedAfter = unixTime() - healed
        #expect(resumed, "\(code.name): updates did not resume on every trip after the server healed")
        lines.append(
          "chaos: \(code.name): \(reported.count) of \(tripCount) trips saw it, \(calls) calls in "
            + String(
              format: "%.1f s (backoff allows %d), updates resumed on every trip %.2f s after healing", failedFor,
              allowed, resumedAfter))
      }
      #expect(ledger.domains == ["io.grpc"])
      for line in lines { print(line) }
      for model in models { model.unregisterSubscriber(ledger) }
    }
  }
}
