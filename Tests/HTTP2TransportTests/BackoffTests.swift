// Tests/HTTP2TransportTests/BackoffTests.swift - connection backoff: the pure schedule, and a channel
// to a port where nothing listens

import GRPCProtocol
import HTTP2Transport
import Primitives
import TestSupport
import Testing

@Suite("Connection backoff", .timeLimit(.minutes(1)))
struct BackoffTests {
  @Test(
    "the default schedule: 1 s, then ×1.6 per retry, capped at 120 s",
    arguments: zip(
      [0, 1, 2, 3, 4, 5, 10, 11, 12, 20, 100],
      [1.0, 1.0, 1.6, 2.56, 4.096, 6.5536, 68.719476736, 109.9511627776, 120, 120, 120]))
  func defaultSchedule(retry: Int, expectedSeconds: Double) {
    let delay = seconds(RetryBackoff(maximum: .seconds(120)).baseDelay(retry: retry))
    #expect(abs(delay - expectedSeconds) < 1e-6, "retry \(retry): \(delay) s")
  }

  @Test("a custom schedule doubles from 50 ms up to 400 ms")
  func customSchedule() {
    let backoff = RetryBackoff(
      initial: .milliseconds(50), multiplier: 2, jitter: 0.2, maximum: .milliseconds(400))
    let delays = (1...7).map { seconds(backoff.baseDelay(retry: $0)) }
    let expected = [0.05, 0.1, 0.2, 0.4, 0.4, 0.4, 0.4]
    #expect(zip(delays, expected).allSatisfy { abs($0 - $1) < 1e-9 }, "\(delays)")
  }

  @Test("jittered delays stay within ±jitter of the base and spread over the range", arguments: [1, 2, 5, 12, 30])
  func jitterBounds(retry: Int) {
    let backoff = RetryBackoff(maximum: .seconds(120))
    let base = seconds(backoff.baseDelay(retry: retry))
    var generator = SplitMix64(seed: UInt64(retry) * 7919)
    let delays = (0..<2000).map { _ in seconds(backoff.delay(retry: retry, using: &generator)) }
    let low = base * 0.8 - 1e-9
    let high = base * 1.2 + 1e-9
    #expect(delays.allSatisfy { $0 >= low && $0 <= high })
    #expect(delays.min()! < base * 0.82)
    #expect(delays.max()! > base * 1.18)
    #expect(delays.contains { $0 < base } && delays.contains { $0 > base })
  }

  @Test("the same seed gives the same delays; no jitter gives the base delay")
  func seededAndUnjittered() {
    let backoff = RetryBackoff(
      initial: .milliseconds(50), multiplier: 2, jitter: 0.2, maximum: .milliseconds(400))
    var first = SplitMix64(seed: 1234)
    var second = SplitMix64(seed: 1234)
    let a = (1...10).map { backoff.delay(retry: $0, using: &first) }
    let b = (1...10).map { backoff.delay(retry: $0, using: &second) }
    #expect(a == b)

    let flat = RetryBackoff(
      initial: .milliseconds(50), multiplier: 2, jitter: 0, maximum: .milliseconds(400))
    var generator = SplitMix64(seed: 99)
    for retry in 1...8 {
      #expect(flat.delay(retry: retry, using: &generator) == flat.baseDelay(retry: retry))
    }
    // Jitter outside 0...1 is clamped.
    #expect(RetryBackoff(jitter: 3).jitter == 1)
    #expect(RetryBackoff(jitter: -1).jitter == 0)
  }

  @Test("calls to a port with nothing listening fail fast UNAVAILABLE; attempts back off")
  func refusedConnections() async throws {
    let reserved = try ReservedPort()
    defer { reserved.release() }
    let port = reserved.port
    let backoff = RetryBackoff(
      initial: .milliseconds(50), multiplier: 2, jitter: 0.2, maximum: .milliseconds(400))
    let channel = try GRPCChannel(
      host: "127.0.0.1", port: port,
      configuration: GRPCChannelConfiguration(security: .plaintext, backoff: backoff, connectTimeout: .seconds(20)))

    // Well under the 20 s connect timeout: the refusal itself fails the call.
    let first = await unaryError(channel, path: Method.unary, request: [1])
    #expect(first?.code == .unavailable)
    #expect(first?.message.contains("refused") == true, "message: \(first?.message ?? "")")
    #expect(first?.cause as? ConnectionError == .connectionRefused(address: "127.0.0.1:\(port)"))

    let calls = 16
    for _ in 1..<calls {
      try await Task.sleep(for: .milliseconds(100))
      let error = await unaryError(channel, path: Method.unary, request: [1])
      #expect(error?.code == .unavailable)
    }
    // Streaming calls fail the same way.
    let response = channel.serverStreaming(path: Method.stream, request: StreamSpec(count: 1).encoded)
    #expect(await response.result().status.code == .unavailable)

    let stats = await channel.statistics()
    #expect(stats.connectAttempts >= 3)
    #expect(stats.connectAttempts < calls, "every call made an attempt: backoff did not hold any off")
    #expect(stats.connectFailures == stats.connectAttempts)
    #expect(stats.openConnections == 0)
    #expect(stats.activeCalls == 0 && stats.queuedCalls == 0)
    // Every failure chose a delay within ±20 % of the schedule, consecutive retries 1, 2, 3, …
    #expect(stats.recentBackoffDelays.count == stats.connectFailures)
    for (index, delay) in stats.recentBackoffDelays.enumerated() {
      let base = seconds(backoff.baseDelay(retry: index + 1))
      let value = seconds(delay)
      #expect(
        value >= base * 0.8 - 1e-9 && value <= base * 1.2 + 1e-9, "retry \(index + 1): \(value) s, base \(base) s")
      #expect(value <= 0.4 * 1.2 + 1e-9)
    }
    await channel.shutdown()
  }

  @Test("four loops calling a port with nothing listening make one backoff's attempts, not four")
  func oneBackoffForAllLoops() async throws {
    let reserved = try ReservedPort()
    defer { reserved.release() }
    let backoff = RetryBackoff(
      initial: .milliseconds(50), multiplier: 2, jitter: 0.2, maximum: .milliseconds(400))
    let loops = 4
    var configuration = GRPCChannelConfiguration(security: .plaintext, backoff: backoff, connectTimeout: .seconds(20))
    configuration.eventLoopGroup = GRPCEventLoopGroup(loopCount: loops, name: "backoff-test")
    let channel = try GRPCChannel(host: "127.0.0.1", port: reserved.port, configuration: configuration)

    // Calls all the time on every loop: with a backoff per loop, each loop would make an attempt every
    // backoff period (4 loops × 9 periods in the 1.6 s these calls take on an idle machine). A fixed number of
    // calls, not a time window: under load the tasks may start late, and the bound below follows the time taken.
    let clock = ContinuousClock()
    let started = clock.now
    let tasks = 2 * loops
    let callsPerTask = 40
    let failed = await withTaskGroup(of: Int.self) { group in
      for _ in 0..<tasks {
        group.addTask {
          var failed = 0
          for _ in 0..<callsPerTask {
            if await unaryError(channel, path: Method.unary, request: [1])?.code == .unavailable { failed += 1 }
            try? await Task.sleep(for: .milliseconds(40))
          }
          return failed
        }
      }
      return await group.reduce(0, +)
    }
    let elapsed = clock.now - started
    let stats = await channel.statistics()
    #expect(failed == tasks * callsPerTask, "\(failed) of \(tasks * callsPerTask) calls failed UNAVAILABLE")
    #expect(stats.connectFailures == stats.connectAttempts)
    // The most attempts one backoff allows in `elapsed`: a first round (one per loop, all at once while the
    // address had not failed yet), then one per period, each at least 0.8 × its base delay.
    var periods = 0
    var waited = Duration.zero
    while waited <= elapsed {
      periods += 1
      waited += backoff.baseDelay(retry: periods) * 0.8
    }
    #expect(
      stats.connectAttempts <= loops + periods + 1,
      "\(stats.connectAttempts) attempts in \(elapsed) over \(loops) loops; one backoff allows \(loops + periods + 1)")
    // One delay chosen per backoff period of the channel, not one per loop's failure.
    #expect(stats.recentBackoffDelays.count <= periods + 1, "\(stats.recentBackoffDelays)")
    #expect(stats.recentBackoffDelays.allSatisfy { seconds($0) <= 0.4 * 1.2 + 1e-9 })
    await channel.shutdown()
  }

  @Test("after the server comes up, the next call past the backoff window connects")
  func recovers() async throws {
    // Nothing listens on the port yet; a server can take it over later.
    let reserved = try ReservedPort(shareable: true)
    defer { reserved.release() }
    let port = reserved.port

    let backoff = RetryBackoff(
      initial: .milliseconds(20), multiplier: 1, jitter: 0, maximum: .milliseconds(20))
    let channel = try GRPCChannel(
      host: "127.0.0.1", port: port, configuration: GRPCChannelConfiguration(security: .plaintext, backoff: backoff))
    #expect(await unaryError(channel, path: Method.unary)?.code == .unavailable)

    let server = try GRPCServer(configuration: GRPCServerConfiguration(port: port), service: EchoService())
    try server.start()
    // Calls inside the 20 ms window may still fail fast; one after it connects.
    #expect(await eventually { await unaryError(channel, path: Method.unary, request: [8]) == nil })
    let stats = await channel.statistics()
    #expect(stats.connectFailures >= 1)
    #expect(stats.openConnections == 1)
    #expect(await server.stats().connectionsAccepted == 1)
    await channel.shutdown()
    await server.shutdown(graceful: false)
  }
}
