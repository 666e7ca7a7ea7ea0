// Benchmarks/Sources/tripload/Pipeline.swift - the pipeline benchmark's loop alone, for profilers
//
// `tripload pipeline` runs what PipelineBenchmarks measures (small updates in round-robin through N trips'
// merge → derive → diff → hand-off, one delivery thread, a wake every 1,000 updates) as a plain process, so
// that heaptrack, perf and valgrind can look at it: the benchmark executables only run under the benchmark
// plugin.

import ArgumentParser
import BenchmarkFixtures
import FleetEngineMessages
import Foundation
@_spi(Benchmarks) import JourneySharing
import Synchronization

/// Counts deliveries of the vehicle's location, as PipelineBenchmarks' subscriber does.
final class LocationCountingSubscriber: TripModelSubscriber {
  let deliveries = Atomic<Int>(0)
  func tripModel(_ tripModel: TripModel, didUpdate vehicleLocation: VehicleLocation?) {
    deliveries.add(1, ordering: .relaxed)
  }
}

struct PipelineCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "pipeline",
    abstract: "The pipeline benchmark's loop as a plain process (for heaptrack, perf, valgrind); prints ns per update.")

  @Option(help: "Trips, each with one subscriber.") var trips = 1_000
  @Option(help: "Updates in all (round-robin over the trips).") var updates = 2_000_000
  @Flag(help: "Push the updates encoded (decoded as a followed trip's stream does).") var encoded = false

  func run() async throws {
    guard trips > 0, updates > 0 else { throw ValidationError("--trips and --updates must be positive") }
    let subscriber = LocationCountingSubscriber()
    let harness = try TripPipelineHarness(tripCount: trips, subscriber: subscriber, deliveryThreads: 1)
    let small = (0..<64).map { Fixtures.smallUpdate(step: $0) }
    let smallEncoded = small.map { $0.serializedBytes() }
    // The options as locals: reading an @Option property in the loop looked up generic metadata each time.
    let trips = trips
    let updates = updates
    let encoded = encoded
    let start = monotonicSeconds()
    var changed = 0
    for cursor in 0..<updates {
      let trip = cursor % trips
      let round = cursor / trips
      let changes =
        encoded
        ? smallEncoded[round & 63].withUnsafeBytes { harness.push(encoded: $0, toTrip: trip) }
        : harness.push(small[round & 63], toTrip: trip)
      if !changes.isEmpty { changed += 1 }
      if cursor % 1_000 == 999 { harness.flush() }
    }
    harness.flush()
    let seconds = monotonicSeconds() - start
    while harness.hasPendingDeliveries { try await Task.sleep(for: .milliseconds(1)) }
    emit(
      String(
        format: "pipeline: %d updates through %d trips in %.3f s: %.0f ns per update, %d changed, %d deliveries",
        updates, trips, seconds, seconds / Double(updates) * 1e9, changed,
        subscriber.deliveries.load(ordering: .relaxed)))
    await harness.shutdown()
  }
}
