// Sources/HTTP2Transport/AddressBackoff.swift - a channel's reconnect backoff per address, shared by its loops
//
// A channel keeps connections on each of its event loops (ChannelCore), but an address that fails gets one
// backoff for the whole channel, as gRPC's one subchannel per address does (connection-backoff.md): while
// an address is failing, one attempt at a time goes to it, from whichever loop comes first once the delay
// is over, and the other loops wait for that attempt's outcome. A healthy address takes attempts from every
// loop at once. Without this, N loops made N times the attempts against a server that is down.

import Primitives

final class AddressBackoff: Sendable {
  private struct Entry {
    /// Failed attempts in a row.
    var failures = 0
    /// Until when (monotonic nanoseconds) attempts wait.
    var until: UInt64 = 0
    /// Counts the failures that started a backoff period: an attempt's failure counts only when no other
    /// failure came since the attempt started.
    var generation = 0
    /// Why the last attempt failed.
    var lastError: ConnectionError?
    /// Whether a loop's attempt to this failing address is under way.
    var attemptInFlight = false
    /// Loops waiting for that attempt's outcome.
    var waiters: [@Sendable () -> Void] = []
  }

  /// What a loop that would connect to an address may do.
  enum Start: Equatable {
    /// Connect; report the outcome with this generation.
    case connect(generation: Int)
    /// The address is backing off until then (monotonic nanoseconds).
    case backingOff(until: UInt64)
    /// Another loop's attempt to the failing address is under way; `wake` runs when it ends.
    case waitingForAnotherAttempt
  }

  private let entries = Locked<[String: Entry]>([:])

  /// Why the last attempt to `key` failed, while it is failing.
  func lastError(_ key: String) -> ConnectionError? {
    entries.withLock { $0[key]?.lastError }
  }

  /// Until when attempts to `key` wait; 0 when they need not.
  func until(_ key: String) -> UInt64 {
    entries.withLock { $0[key]?.until ?? 0 }
  }

  /// A loop would connect to `key` at `now`.
  func start(_ key: String, now: UInt64, wake: @escaping @Sendable () -> Void) -> Start {
    entries.withLock { entries in
      var entry = entries[key] ?? Entry()
      defer { entries[key] = entry }
      if entry.failures == 0 { return .connect(generation: entry.generation) }
      if entry.until > now { return .backingOff(until: entry.until) }
      if entry.attemptInFlight {
        entry.waiters.append(wake)
        return .waitingForAnotherAttempt
      }
      entry.attemptInFlight = true
      return .connect(generation: entry.generation)
    }
  }

  /// The attempt to `key` that started at `generation` failed at `now` with `error`. Returns the delay `delay` chose for
  /// this many failures in a row when this failure starts a new backoff period; nil when another failure
  /// already counted for it (attempts that were under way together).
  func failed(
    _ key: String, generation: Int, now: UInt64, error: ConnectionError, delay: (Int) -> Duration
  ) -> Duration? {
    var wake: [@Sendable () -> Void] = []
    let chosen = entries.withLock { entries -> Duration? in
      guard var entry = entries[key] ?? (generation == 0 ? Entry() : nil), entry.generation == generation else {
        return nil
      }
      entry.failures += 1
      entry.generation += 1
      entry.lastError = error
      let chosen = delay(entry.failures)
      entry.until = now + chosen.nonNegativeNanoseconds
      entry.attemptInFlight = false
      wake = entry.waiters
      entry.waiters = []
      entries[key] = entry
      return chosen
    }
    for waiter in wake { waiter() }
    return chosen
  }

  /// An attempt to `key` made a connection: the address is healthy again, and waiting loops connect too.
  func succeeded(_ key: String) {
    let wake = entries.withLock { entries in entries.removeValue(forKey: key)?.waiters ?? [] }
    for waiter in wake { waiter() }
  }

  /// Forgets the addresses a resolution no longer gives (their waiting loops look again).
  func retain(_ keys: Set<String>) {
    let wake = entries.withLock { entries -> [@Sendable () -> Void] in
      let gone = entries.keys.filter { !keys.contains($0) }
      return gone.flatMap { entries.removeValue(forKey: $0)?.waiters ?? [] }
    }
    for waiter in wake { waiter() }
  }
}
