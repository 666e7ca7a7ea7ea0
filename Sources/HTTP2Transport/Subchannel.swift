// Sources/HTTP2Transport/Subchannel.swift - one server address of a channel, shared by its loops: the reconnect backoff
//
// A channel keeps connections on each of its event loops (ChannelCore), but an address that fails gets one backoff
// for the whole channel, as gRPC's one subchannel per address does (connection-backoff.md): while an address is
// failing, one attempt at a time goes to it, from whichever loop comes first once the delay is over, and the other
// loops wait for that attempt's outcome. A healthy address takes attempts from every loop at once. Without this,
// N loops made N times the attempts against a server that is down. The delays are the channel's RetryBackoff.

import GRPCProtocol
import Primitives

/// One resolved address of a channel: whether connection attempts to it must wait, and why it last failed.
final class Subchannel: Sendable {
  private struct State {
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
    var random = SystemRandomNumberGenerator()
  }

  /// What a loop that would connect to the address may do.
  enum Start: Equatable {
    /// Connect; report the outcome with this generation.
    case connect(generation: Int)
    /// The address is backing off until then (monotonic nanoseconds).
    case backingOff(until: UInt64)
    /// Another loop's attempt to the failing address is under way; `wake` runs when it ends.
    case waitingForAnotherAttempt
  }

  /// The address, as `host:port`.
  let key: String
  private let backoff: RetryBackoff
  private let state = Locked(State())

  init(key: String, backoff: RetryBackoff) {
    self.key = key
    self.backoff = backoff
  }

  /// Why the last attempt failed, while the address is failing.
  var lastError: ConnectionError? { state.withLock { $0.failures > 0 ? $0.lastError : nil } }

  /// Until when attempts wait; 0 when they need not.
  var backingOffUntil: UInt64 { state.withLock { $0.until } }

  /// A loop would connect at `now`.
  func start(now: UInt64, wake: @escaping @Sendable () -> Void) -> Start {
    state.withLock { state in
      if state.failures == 0 { return .connect(generation: state.generation) }
      if state.until > now { return .backingOff(until: state.until) }
      if state.attemptInFlight {
        state.waiters.append(wake)
        return .waitingForAnotherAttempt
      }
      state.attemptInFlight = true
      return .connect(generation: state.generation)
    }
  }

  /// The attempt that started at `generation` failed at `now` with `error`. Returns the delay chosen for this many
  /// failures in a row when this failure starts a new backoff period; nil when another failure already counted
  /// for it (attempts that were under way together).
  func failed(generation: Int, now: UInt64, error: ConnectionError) -> Duration? {
    let (chosen, wake) = state.withLock { state -> (Duration?, [@Sendable () -> Void]) in
      guard state.generation == generation else { return (nil, []) }
      state.failures += 1
      state.generation += 1
      state.lastError = error
      let chosen = backoff.delay(retry: state.failures, using: &state.random)
      state.until = now + chosen.nonNegativeNanoseconds
      state.attemptInFlight = false
      defer { state.waiters = [] }
      return (chosen, state.waiters)
    }
    for waiter in wake { waiter() }
    return chosen
  }

  /// An attempt made a connection: the address is healthy again, and waiting loops connect too.
  func succeeded() {
    let wake = state.withLock { state -> [@Sendable () -> Void] in
      defer { state = State() }
      return state.waiters
    }
    for waiter in wake { waiter() }
  }

  /// The address left the resolution: loops waiting for an attempt to it look again.
  func forgotten() {
    let wake = state.withLock { state -> [@Sendable () -> Void] in
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in wake { waiter() }
  }
}

/// A channel's subchannels, one per address of its latest resolution, shared by its loops.
final class Subchannels: Sendable {
  private let backoff: RetryBackoff
  private let byKey = Locked<[String: Subchannel]>([:])

  init(backoff: RetryBackoff) {
    self.backoff = backoff
  }

  /// The subchannel of the address `key` (made on first use).
  subscript(key: String) -> Subchannel {
    byKey.withLock { byKey in
      if let existing = byKey[key] { return existing }
      let made = Subchannel(key: key, backoff: backoff)
      byKey[key] = made
      return made
    }
  }

  /// Forgets the addresses a resolution no longer gives (their backoff with them).
  func retain(_ keys: Set<String>) {
    let gone = byKey.withLock { byKey -> [Subchannel] in
      let gone = byKey.filter { !keys.contains($0.key) }.map(\.value)
      for subchannel in gone { byKey[subchannel.key] = nil }
      return gone
    }
    for subchannel in gone { subchannel.forgotten() }
  }
}
