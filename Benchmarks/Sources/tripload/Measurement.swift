// Benchmarks/Sources/tripload/Measurement.swift - what a tripload client measures
//
// Latency is the subscriber's wall clock at the callback minus the server's `send_time`
// of the update (both CLOCK_REALTIME on this machine), kept in a 1 µs histogram of
// atomic counters so the delivery threads record without locks. Sequence numbers tell
// gaps and duplicates per trip; CPU comes from getrusage(RUSAGE_SELF) (the whole client
// process, every thread), memory from /proc/self/statm.

import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

func wallClock() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_REALTIME, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func monotonicSeconds() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// User plus system CPU seconds of this process so far.
func processCPUSeconds() -> Double {
  var usage = rusage()
  getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
  return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
    + Double(usage.ru_stime.tv_usec) / 1e6
}

/// Resident memory of this process in bytes.
func residentBytes() -> Int {
  guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
  let fields = text.split(separator: " ")
  guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
  return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Counters the delivery threads bump, readable at any time.
final class LoadRecorder: @unchecked Sendable {
  /// Histogram range: 1 µs buckets up to this many microseconds; beyond goes to `overflow`.
  static let bucketCount = 2_000_000
  private let buckets: UnsafeMutablePointer<Atomic<UInt32>>
  let overflow = Atomic<Int>(0)
  let maxMicros = Atomic<Int>(0)
  let delivered = Atomic<Int>(0)
  let gaps = Atomic<Int>(0)
  let duplicates = Atomic<Int>(0)
  let restarts = Atomic<Int>(0)
  let tripsStarted = Atomic<Int>(0)
  let recording = Atomic<Bool>(false)
  /// Per trip: the last sequence seen. Each trip's callbacks run one at a time (the library's
  /// guarantee per subscriber; grpc-swift: one task per stream), so each slot has one writer at a time.
  private let lastSequence: UnsafeMutablePointer<UInt64>

  init(trips: Int) {
    buckets = .allocate(capacity: Self.bucketCount)
    for index in 0..<Self.bucketCount { (buckets + index).initialize(to: Atomic(0)) }
    lastSequence = .allocate(capacity: max(1, trips))
    lastSequence.initialize(repeating: 0, count: max(1, trips))
  }

  /// One update of trip `trip`, numbered `sequence` on its stream, sent at `sentAt`, seen now.
  func record(trip: Int, sequence: UInt64, sentAt: Double?, now: Double) {
    let last = lastSequence[trip]
    lastSequence[trip] = sequence
    if last == 0 { tripsStarted.add(1, ordering: .relaxed) }
    guard recording.load(ordering: .relaxed) else { return }
    delivered.add(1, ordering: .relaxed)
    if sequence <= 1 || last == 0 {
      if last != 0 { restarts.add(1, ordering: .relaxed) }
    } else if sequence <= last {
      duplicates.add(1, ordering: .relaxed)
    } else if sequence > last + 1 {
      gaps.add(Int(sequence - last - 1), ordering: .relaxed)
    }
    guard let sentAt else { return }
    recordLatency(micros: max(0, Int(((now - sentAt) * 1e6).rounded())))
  }

  private func recordLatency(micros: Int) {
    if micros < Self.bucketCount {
      buckets[micros].add(1, ordering: .relaxed)
    } else {
      overflow.add(1, ordering: .relaxed)
    }
    var seen = maxMicros.load(ordering: .relaxed)
    while micros > seen {
      let (exchanged, original) = maxMicros.compareExchange(expected: seen, desired: micros, ordering: .relaxed)
      if exchanged { break }
      seen = original
    }
  }

  /// Trip `trip` has its first answer (polling clients: a poll answered).
  func markStarted(trip: Int) {
    if lastSequence[trip] == 0 {
      lastSequence[trip] = 1
      tripsStarted.add(1, ordering: .relaxed)
    }
  }

  /// One poll answered after `seconds` (request sent to answer handled), counted while recording.
  func recordPoll(seconds: Double) {
    guard recording.load(ordering: .relaxed) else { return }
    delivered.add(1, ordering: .relaxed)
    recordLatency(micros: max(0, Int((seconds * 1e6).rounded())))
  }

  /// Latency percentiles in milliseconds (p50, p99, p99.9) and the sample count.
  func percentiles() -> (p50: Double, p99: Double, p999: Double, samples: Int) {
    var counts = [UInt32](repeating: 0, count: Self.bucketCount)
    var total = overflow.load(ordering: .relaxed)
    for index in 0..<Self.bucketCount {
      counts[index] = buckets[index].load(ordering: .relaxed)
      total += Int(counts[index])
    }
    guard total > 0 else { return (0, 0, 0, 0) }
    func at(_ fraction: Double) -> Double {
      let rank = Int((Double(total) * fraction).rounded(.up))
      var seen = 0
      for index in 0..<Self.bucketCount {
        seen += Int(counts[index])
        if seen >= rank { return Double(index) / 1000 }
      }
      return Double(maxMicros.load(ordering: .relaxed)) / 1000
    }
    return (at(0.5), at(0.99), at(0.999), total)
  }
}

/// One client run's figures, printed as JSON for the orchestrator.
struct ClientResult: Codable {
  var client: String
  /// "stream" (server-streaming GetTrip: `updates` are updates) or "poll" (unary GetTrip: `updates` are
  /// answered polls, latency is the poll's round trip).
  var mode: String?
  /// Seconds between two polls of a trip (poll mode).
  var pollInterval: Double?
  var trips: Int
  var connections: Int
  var rate: Double?  // updates per trip per second, nil = saturating
  var seconds: Double
  var tripsStarted: Int
  var updates: Int
  var updatesPerSecond: Double
  /// Updates the client took in per second: delivered plus those merged into a later delivery (gaps).
  var updatesReceivedPerSecond: Double
  var cpuSeconds: Double
  var cpuSecondsPerMillionUpdates: Double
  var rssBaselineBytes: Int
  var rssBytes: Int
  var rssPerTripBytes: Double
  var latencyP50Ms: Double
  var latencyP99Ms: Double
  var latencyP999Ms: Double
  var latencyMaxMs: Double
  var latencySamples: Int
  var gaps: Int
  var duplicates: Int
  var restarts: Int
  var errors: Int?
  /// The client stopped starting trips at its memory cap (`--max-resident-gib`): `tripsStarted` and the
  /// memory figures are how far it got; nothing was measured.
  var stoppedAtMemoryCap: Bool? = nil
}

/// Writes a line to standard output at once (unbuffered: the parent reads it through a pipe).
func emit(_ text: String) {
  FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// Writes a progress line to standard error.
func progress(_ text: String) {
  FileHandle.standardError.write(Data((text + "\n").utf8))
}
