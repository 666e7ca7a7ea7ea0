// Tests/JourneySharingTests/PollBudgetTests.swift - many polled trips under one request budget (virtual clock)
//
// 10,000 trips polled through an in-memory transport on a virtual clock: every GetTrip the server sees
// is stamped with the virtual time, so the test can check exactly that no second ever holds more
// requests than the budget allows, that polls spread over the interval instead of coming in lockstep,
// and that every trip keeps being polled. A minute of polling runs in a few seconds.

import FleetEngineMessages
import GRPCProtocol
import Primitives
import TestSupport
import Testing

@testable import JourneySharing

/// Answers every GetTrip with the same small trip and records when (virtual nanoseconds) and for which trip.
private final class CountingTripServer: GRPCService {
  private let log = Locked<[(time: UInt64, trip: String)]>([])

  func handle(_ call: any GRPCServerCallContext) {
    guard call.path == FleetEngineMethods.unaryGetTrip, let request = try? GetTripRequest(serializedBytes: call.request)
    else {
      call.finish(GRPCStatus(code: .unimplemented, message: "only the unary GetTrip"))
      return
    }
    let time = call.scheduler.monotonicNanoseconds
    log.withLock { $0.append((time, request.name)) }
    var trip = Trip()
    trip.name = request.name
    trip.tripStatus = .enrouteToPickup
    call.send(trip.serializedBytes())
    call.finish(GRPCStatus(code: .ok, message: ""))
  }

  var requests: [(time: UInt64, trip: String)] { log.withLock { $0 } }
}

private final class Quiet: TripModelSubscriber {}

/// The most requests in any window of `window` nanoseconds.
private func busiestWindow(_ times: [UInt64], window: UInt64) -> Int {
  let sorted = times.sorted()
  var best = 0
  var start = 0
  for end in sorted.indices {
    while sorted[end] - sorted[start] >= window { start += 1 }
    best = max(best, end - start + 1)
  }
  return best
}

private let second: UInt64 = 1_000_000_000

@Suite("Polling under a request budget (in-memory transport, virtual clock)", .timeLimit(.minutes(3)))
struct PollBudgetTests {
  /// Follows `trips` polled trips for `duration` of virtual time under a budget of `perSecond`.
  private func poll(trips: Int, interval: Duration, perSecond: Double, for duration: Duration) async throws
    -> (requests: [(time: UInt64, trip: String)], statistics: RequestBudgetStatistics, start: UInt64)
  {
    let scheduler = VirtualScheduler()
    let server = CountingTripServer()
    let transport = InMemoryTransport(service: server, scheduler: scheduler)
    var configuration = JourneySharingConfiguration(
      host: "in-memory", port: 0, security: .plaintext, providerID: "demo", fetchMode: .poll,
      pollInterval: interval, logger: quietLogger("poll-budget"))
    configuration.maxRequestsPerSecond = perSecond
    configuration.deliveryThreads = 1
    let services = JourneySharingServices(configuration: configuration, transport: transport)
    let start = scheduler.monotonicNanoseconds
    let subscriber = Quiet()
    let models = (0..<trips).map { services.tripService.tripModel(forTripName: "providers/demo/trips/trip-\($0)") }
    for model in models { model.register(subscriber) }
    scheduler.advance(by: duration)
    let statistics = await services.statistics().requestBudget
    for model in models { model.unregisterSubscriber(subscriber) }
    scheduler.waitUntilIdle()
    await services.shutdown()
    scheduler.shutdown()
    return (server.requests, statistics, start)
  }

  @Test("10,000 trips polled every 10 s under 1,500 requests/s: no second above the budget, polls spread evenly")
  func tenThousandTripsSpreadUnderTheBudget() async throws {
    let (requests, statistics, start) = try await poll(
      trips: 10_000, interval: .seconds(10), perSecond: 1_500, for: .seconds(60))
    let times = requests.map(\.time)
    let busiest = busiestWindow(times, window: second)
    print(
      "poll-budget: \(requests.count) requests in 60 s, busiest second \(busiest) (budget 1500), waited \(statistics.waitedRequests)"
    )
    #expect(busiest <= 1_500, "a second held \(busiest) requests")
    // The first round goes out at the budget's pace (10,000 at 1,500/s, about 6.7 s), the second spread over
    // the interval, then each trip every 10 s ± 10 %: 1,000 a second on average.
    #expect(requests.count >= 10_000 * 5, "\(requests.count) requests")
    #expect(requests.count <= 10_000 * 7, "\(requests.count) requests")
    #expect(statistics.waitedRequests >= 8_000, "the first round must have waited: \(statistics.waitedRequests)")
    // Spread: from 20 s on, every second holds between half and one and a half times the average.
    var bins = [Int](repeating: 0, count: 40)
    for time in times where time >= start + 20 * second {
      let bin = Int((time - start - 20 * second) / second)
      if bin < bins.count { bins[bin] += 1 }
    }
    let mean = Double(bins.reduce(0, +)) / Double(bins.count)
    #expect(mean > 800 && mean < 1_200, "mean \(mean) per second")
    #expect(bins.allSatisfy { Double($0) >= mean * 0.5 && Double($0) <= mean * 1.5 }, "per second: \(bins)")
    // Every trip keeps being polled: the second poll half an interval to one and a half after the first (the
    // phase is chosen there), every later one 10 s ± 10 % after the one before.
    var perTrip: [String: [UInt64]] = [:]
    for request in requests { perTrip[request.trip, default: []].append(request.time) }
    #expect(perTrip.count == 10_000)
    let firstGaps = perTrip.values.compactMap { $0.count > 1 ? $0[1] - $0[0] : nil }
    #expect(firstGaps.count == 10_000)
    #expect(firstGaps.min().map { $0 >= 5 * second } ?? false, "shortest first gap \(firstGaps.min() ?? 0) ns")
    #expect(firstGaps.max().map { $0 <= 16 * second } ?? false, "longest first gap \(firstGaps.max() ?? 0) ns")
    let gaps = perTrip.values.flatMap { times in zip(times.dropFirst(2), times.dropFirst()).map { $0 - $1 } }
    #expect(gaps.min().map { $0 >= 9 * second } ?? false, "shortest gap \(gaps.min() ?? 0) ns")
    #expect(gaps.max().map { $0 <= 12 * second } ?? false, "longest gap \(gaps.max() ?? 0) ns")
  }

  @Test("Demand above the budget: polls wait, and no second ever holds more than the budget")
  func demandAboveTheBudgetWaits() async throws {
    let (requests, statistics, _) = try await poll(
      trips: 2_000, interval: .seconds(1), perSecond: 500, for: .seconds(20))
    let busiest = busiestWindow(requests.map(\.time), window: second)
    #expect(busiest <= 500, "a second held \(busiest) requests")
    // 2,000 trips want 2,000 a second: the budget's 500 a second are all used.
    #expect(requests.count >= 500 * 19 && requests.count <= 500 * 20 + 1, "\(requests.count)")
    #expect(statistics.waitedRequests > requests.count / 2, "\(statistics)")
    #expect(statistics.requestsPerSecond == 500)
  }

  @Test("Polls after a trip's first fall on a 5 ms grid: polls due together go out in one loop turn")
  func laterPollsAreAlignedToTheGrid() async throws {
    // No budget in the way (10,000 a second for 1,000 trips polled every second): every time is the trip's own.
    let (requests, _, _) = try await poll(trips: 1_000, interval: .seconds(1), perSecond: 10_000, for: .seconds(5))
    var perTrip: [String: [UInt64]] = [:]
    for request in requests { perTrip[request.trip, default: []].append(request.time) }
    #expect(perTrip.count == 1_000)
    let later = perTrip.values.flatMap { $0.dropFirst() }
    #expect(later.count >= 3_000, "\(later.count) later polls")
    // The server sees each request a little after its poll fired (the in-memory transport's hops and the
    // requests queued behind others due at the same instant): within half the grid of a grid point, where
    // polls at their jittered times would be spread evenly over the grid (half of them beyond that).
    let grid = PollingTripSource.pollGridNanoseconds
    let offsets = later.map { $0 % grid }
    let far = offsets.filter { $0 >= grid / 2 }
    #expect(far.isEmpty, "\(far.count) of \(later.count) later polls seen \(far.max() ?? 0) ns past a grid point")
    #expect(PollingTripSource.alignedToGrid(grid * 3) == grid * 3)
    #expect(PollingTripSource.alignedToGrid(grid * 3 + 1) == grid * 4)
  }
}
