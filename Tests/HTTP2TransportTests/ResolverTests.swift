// Tests/HTTP2TransportTests/ResolverTests.swift - targets, resolvers, load spreading, event-loop groups
//
// Real GRPCServers on several loopback addresses (127.0.0.2, 127.0.0.3, … and ::1), real sockets, one
// channel spreading its streams over them. Counts come from the servers' own stats and the channel's.

import GRPCProtocol
import HTTP2Transport
import Primitives
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

// MARK: - Target strings

/// A target string and what it must parse to, or the words its error must contain.
struct TargetCase: Sendable, CustomTestStringConvertible {
  var text: String
  var expected: GRPCTarget.Kind?
  var errorContains: String = ""
  var testDescription: String { text.isEmpty ? "(empty)" : text }
}

private func v4(_ host: String, _ port: Int) -> GRPCAddress { GRPCAddress(host: host, port: port) }

let targetCases: [TargetCase] = [
  TargetCase(text: "dns:///fleet.example:50051", expected: .dns(host: "fleet.example", port: 50051)),
  TargetCase(text: "dns:fleet.example:50051", expected: .dns(host: "fleet.example", port: 50051)),
  TargetCase(text: "DNS:///fleet.example", expected: .dns(host: "fleet.example", port: 443)),
  TargetCase(text: "fleet.example:8443", expected: .dns(host: "fleet.example", port: 8443)),
  TargetCase(text: "fleet.example", expected: .dns(host: "fleet.example", port: 443)),
  TargetCase(text: "localhost:50051", expected: .dns(host: "localhost", port: 50051)),
  TargetCase(text: "127.0.0.1:9", expected: .dns(host: "127.0.0.1", port: 9)),
  TargetCase(text: "[::1]:50051", expected: .dns(host: "::1", port: 50051)),
  TargetCase(text: "dns:///[::1]:50051", expected: .dns(host: "::1", port: 50051)),
  TargetCase(
    text: "ipv4:127.0.0.2:50051,127.0.0.3:50052",
    expected: .addresses([v4("127.0.0.2", 50051), v4("127.0.0.3", 50052)])),
  TargetCase(text: "ipv4:127.0.0.2", expected: .addresses([v4("127.0.0.2", 443)])),
  TargetCase(
    text: "ipv6:[::1]:50051,[fe80::1]:7", expected: .addresses([v4("::1", 50051), v4("fe80::1", 7)])),
  TargetCase(text: "ipv6:::1", expected: .addresses([v4("::1", 443)])),
  // Invalid: each with the words of its error.
  TargetCase(text: "", expected: nil, errorContains: "no host"),
  TargetCase(text: "dns:///", expected: nil, errorContains: "no host"),
  TargetCase(text: "dns://8.8.8.8/fleet.example:443", expected: nil, errorContains: "DNS authority"),
  TargetCase(text: "dns://fleet.example:443", expected: nil, errorContains: "slash after the authority"),
  TargetCase(text: "fleet.example:0", expected: nil, errorContains: "not a port"),
  TargetCase(text: "fleet.example:70000", expected: nil, errorContains: "not a port"),
  TargetCase(text: "fleet.example:http", expected: nil, errorContains: "not a port"),
  TargetCase(text: "fleet.example:", expected: nil, errorContains: "not a port"),
  TargetCase(text: "ipv4:", expected: nil, errorContains: "no address"),
  TargetCase(text: "ipv4:fleet.example:80", expected: nil, errorContains: "not a numeric IPv4 address"),
  TargetCase(text: "ipv4:127.0.0.1:80,,127.0.0.2:80", expected: nil, errorContains: "empty address"),
  TargetCase(text: "ipv4:[::1]:80", expected: nil, errorContains: "not a numeric IPv4 address"),
  TargetCase(text: "ipv4:300.1.1.1:80", expected: nil, errorContains: "not a numeric IPv4 address"),
  TargetCase(text: "ipv6:127.0.0.1:80", expected: nil, errorContains: "not a numeric IPv6 address"),
  TargetCase(text: "ipv6:[::1", expected: nil, errorContains: "unclosed ["),
  TargetCase(text: "ipv6:[::1]x", expected: nil, errorContains: "after \"]\""),
  TargetCase(text: "unix:/tmp/socket", expected: nil, errorContains: "not supported"),
  TargetCase(text: "xds:///fleet.example", expected: nil, errorContains: "unknown scheme \"xds\""),
  TargetCase(text: "fleet example:80", expected: nil, errorContains: "not a host name"),
]

@Suite("Targets")
struct TargetTests {
  @Test("target strings parse to their kind, or fail INVALID_ARGUMENT saying why", arguments: targetCases)
  func parse(_ testCase: TargetCase) {
    do {
      let target = try GRPCTarget(parsing: testCase.text)
      #expect(testCase.expected != nil, "\"\(testCase.text)\" parsed to \(target), expected an error")
      if let expected = testCase.expected { #expect(target.kind == expected) }
    } catch {
      #expect(testCase.expected == nil, "\"\(testCase.text)\" failed: \(error.message)")
      #expect(error.code == .invalidArgument)
      #expect(error.message.contains(testCase.errorContains), "message: \(error.message)")
      #expect(error.message.contains("\"\(testCase.text)\""), "the message names the target: \(error.message)")
    }
  }

  @Test("a parsed target prints in gRPC's syntax and parses back to itself")
  func roundTrip() throws {
    for text in ["dns:///fleet.example:443", "ipv4:127.0.0.2:1,127.0.0.3:2", "ipv6:[::1]:50051"] {
      let target = try GRPCTarget(parsing: text)
      #expect(target.description == text)
      #expect(try GRPCTarget(parsing: target.description) == target)
    }
  }

  @Test("a channel made from an invalid target string throws INVALID_ARGUMENT")
  func channelRejectsBadTarget() {
    #expect(throws: GRPCError.self) {
      _ = try GRPCChannel(
        target: "ipv4:not-an-address:1", configuration: GRPCChannelConfiguration(security: .plaintext))
    }
  }
}

// MARK: - Resolvers

@Suite("Resolvers")
struct ResolverTests {
  @Test("the DNS resolver gives what getaddrinfo gives for localhost, on a thread that is not the caller's")
  func dnsLocalhost() async throws {
    let addresses = try await GRPCDNSResolver(host: "localhost", port: 4321).resolve()
    let expected = try SocketAddress.resolve(host: "localhost", port: 4321).map(\.description)
    #expect(!addresses.isEmpty)
    #expect(Set(addresses.map(\.description)) == Set(expected))
    #expect(addresses.allSatisfy { $0.port == 4321 })
    #expect(addresses.contains { $0.host == "127.0.0.1" })
  }

  @Test("the DNS resolver fails UNAVAILABLE with the resolution error as the cause for an unknown name")
  func dnsUnknownName() async {
    do {
      _ = try await GRPCDNSResolver(host: "no-such-host.invalid", port: 1).resolve()
      Issue.record("an unknown name resolved")
    } catch {
      #expect(error.code == .unavailable)
      guard case .resolutionFailed(let host, _)? = error.cause as? ConnectionError else {
        Issue.record("cause: \(String(describing: error.cause))")
        return
      }
      #expect(host == "no-such-host.invalid")
    }
  }

  @Test("a numeric host resolves to itself")
  func dnsNumeric() async throws {
    #expect(try await GRPCDNSResolver(host: "::1", port: 7).resolve() == [GRPCAddress(host: "::1", port: 7)])
    #expect(
      try await GRPCDNSResolver(host: "127.0.0.3", port: 7).resolve() == [GRPCAddress(host: "127.0.0.3", port: 7)])
  }

  @Test("the static resolver gives its list, tells observers of updates, and fails when empty")
  func staticResolver() async throws {
    let resolver = GRPCStaticResolver(addresses: [v4("127.0.0.2", 1)])
    let notified = Atomic<Int>(0)
    resolver.addObserver { notified.add(1, ordering: .relaxed) }
    #expect(try await resolver.resolve() == [v4("127.0.0.2", 1)])
    resolver.update([v4("127.0.0.3", 2), v4("127.0.0.4", 3)])
    #expect(notified.load(ordering: .relaxed) == 1)
    #expect(try await resolver.resolve() == [v4("127.0.0.3", 2), v4("127.0.0.4", 3)])
    resolver.update([])
    await #expect(throws: GRPCError.self) { try await resolver.resolve() }
  }
}

// MARK: - Servers on many loopback addresses

/// Servers with an EchoService each, on the given loopback addresses (each on a port of its own, or
/// all on one port when `samePort`), stopped by `stopAll()`.
final class ServerSet: Sendable {
  let hosts: [String]
  let services: [EchoService]
  let servers: [GRPCServer]
  let ports: [Int]

  init(hosts: [String], samePort: Bool = false) throws {
    var services: [EchoService] = []
    var servers: [GRPCServer] = []
    var ports: [Int] = []
    for host in hosts {
      let service = EchoService()
      let port = samePort ? (ports.first ?? 0) : 0
      let server = try GRPCServer(configuration: GRPCServerConfiguration(host: host, port: port), service: service)
      ports.append(try server.start())
      services.append(service)
      servers.append(server)
    }
    self.hosts = hosts
    self.services = services
    self.servers = servers
    self.ports = ports
  }

  /// The servers' addresses, as a channel counts them.
  var addresses: [GRPCAddress] { zip(hosts, ports).map { GRPCAddress(host: $0, port: $1) } }

  /// Each server's open calls.
  func openCalls() async -> [Int] {
    var counts: [Int] = []
    for server in servers { counts.append(await server.stats().openCalls) }
    return counts
  }

  func stopAll() async {
    for server in servers { await server.shutdown(graceful: false) }
  }
}

/// Follows one "trip": a held stream (one message, then open until released) restarted after every
/// failure, as a follower does, until it ends OK with its message. Returns the attempts it took.
func follow(_ channel: GRPCChannel, attempts: Int = 200) async -> (ok: Bool, attempts: Int) {
  for attempt in 1...attempts {
    let response = channel.serverStreaming(path: Method.held, request: [])
    let drained = await drain(response)
    if drained == .success(1) { return (true, attempt) }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return (false, attempts)
}

@Suite("Load spreading", .timeLimit(.minutes(1)))
struct LoadSpreadingTests {
  static let plaintext = GRPCChannelConfiguration(security: .plaintext, maxConnections: 8)

  /// Waits until `channel` has a ready connection to every server in `set` (a warm-up call first).
  static func warmUp(_ channel: GRPCChannel, _ set: ServerSet) async -> Bool {
    guard await unaryError(channel, path: Method.unary, request: [1]) == nil else { return false }
    return await eventually {
      var accepted = 0
      for server in set.servers where await server.stats().openConnections == 1 { accepted += 1 }
      return accepted == set.servers.count
    }
  }

  @Test("an ipv4: list of three servers shares 30 streams evenly, one connection per address")
  func threeServersShareStreams() async throws {
    let set = try ServerSet(hosts: ["127.0.0.2", "127.0.0.3", "127.0.0.4"])
    let target = "ipv4:" + set.addresses.map(\.description).joined(separator: ",")
    let channel = try GRPCChannel(target: target, configuration: Self.plaintext)
    #expect(await Self.warmUp(channel, set))

    let responses = (0..<30).map { _ in channel.serverStreaming(path: Method.held, request: []) }
    #expect(await eventually { await set.openCalls() == [10, 10, 10] })
    let stats = await channel.statistics()
    #expect(stats.connectionsPerAddress == Dictionary(uniqueKeysWithValues: set.addresses.map { ($0.description, 1) }))
    #expect(stats.streamsPerAddress == Dictionary(uniqueKeysWithValues: set.addresses.map { ($0.description, 10) }))
    #expect(stats.addresses == set.addresses.map(\.description))
    #expect(stats.resolutions >= 1)

    for service in set.services { service.releaseHeld() }
    for response in responses { #expect(await drain(response) == .success(1)) }
    await channel.shutdown()
    await set.stopAll()
  }

  @Test("calls made on a fresh channel, before any connection is ready, are shared over every address")
  func coldStartShares() async throws {
    let set = try ServerSet(hosts: ["127.0.0.2", "127.0.0.3", "127.0.0.4"])
    let channel = try GRPCChannel(target: .addresses(set.addresses), configuration: Self.plaintext)
    // No warm-up: the first connection ready does not take every call.
    let responses = (0..<30).map { _ in channel.serverStreaming(path: Method.held, request: []) }
    #expect(await eventually { await set.openCalls().reduce(0, +) == 30 })
    let counts = await set.openCalls()
    #expect(counts.allSatisfy { $0 >= 5 }, "open calls per server: \(counts)")
    for service in set.services { service.releaseHeld() }
    for response in responses { #expect(await drain(response) == .success(1)) }
    await channel.shutdown()
    await set.stopAll()
  }

  @Test("killing one of three servers moves its streams to the others; every stream still ends OK")
  func killedServerMovesStreams() async throws {
    let set = try ServerSet(hosts: ["127.0.0.2", "127.0.0.3", "127.0.0.4"])
    let backoff = RetryBackoff(initial: .milliseconds(50), maximum: .milliseconds(200))
    var configuration = Self.plaintext
    configuration.backoff = backoff
    let channel = try GRPCChannel(target: .addresses(set.addresses), configuration: configuration)
    #expect(await Self.warmUp(channel, set))

    let followers = (0..<30).map { _ in Task { await follow(channel) } }
    #expect(await eventually { await set.openCalls() == [10, 10, 10] })

    // The second server dies: its connections close under its ten streams.
    await set.servers[1].shutdown(graceful: false)
    #expect(
      await eventually {
        let counts = await set.openCalls()
        return counts[0] + counts[2] == 30
      })
    let counts = await set.openCalls()
    #expect(counts[0] > 10 && counts[2] > 10, "the moved streams went to both others: \(counts)")
    let stats = await channel.statistics()
    #expect(stats.connectFailures >= 1, "the dead address was retried and refused")
    #expect(stats.resolutions >= 2, "the lost connection asked for a new resolution")

    set.services[0].releaseHeld()
    set.services[2].releaseHeld()
    var ended = 0
    var retried = 0
    for follower in followers {
      let (ok, attempts) = await follower.value
      if ok { ended += 1 }
      if attempts > 1 { retried += 1 }
    }
    #expect(ended == 30, "every followed stream reached its end")
    #expect(retried == 10, "exactly the dead server's streams were restarted")
    await channel.shutdown()
    await set.stopAll()
  }

  @Test("a static list changed at runtime is followed: a new address gets connections, a removed one drains")
  func staticListChanges() async throws {
    let set = try ServerSet(hosts: ["127.0.0.2", "127.0.0.3"])
    let resolver = GRPCStaticResolver(addresses: [set.addresses[0]])
    let channel = try GRPCChannel(
      target: .addresses([set.addresses[0]]), resolver: resolver, configuration: Self.plaintext)
    let first = (0..<4).map { _ in channel.serverStreaming(path: Method.held, request: []) }
    #expect(await eventually { await set.openCalls() == [4, 0] })

    // Added: the new address gets a connection (there are calls to carry), and new calls go there.
    resolver.update(set.addresses)
    #expect(await eventually { await set.servers[1].stats().openConnections == 1 })
    #expect(await eventually { await channel.statistics().addresses == set.addresses.map(\.description) })
    let second = (0..<4).map { _ in channel.serverStreaming(path: Method.held, request: []) }
    #expect(await eventually { await set.openCalls() == [4, 4] })

    // Removed: the first server gets GOAWAY; its four calls go on until they end, OK.
    resolver.update([set.addresses[1]])
    #expect(await eventually { await channel.statistics().addresses == [set.addresses[1].description] })
    #expect(await eventually { await set.servers[0].stats().openConnections == 1 }, "drained, not cut")
    #expect(await set.openCalls() == [4, 4])
    let third = (0..<4).map { _ in channel.serverStreaming(path: Method.held, request: []) }
    #expect(await eventually { await set.openCalls() == [4, 8] }, "new calls avoid the removed address")

    set.services[0].releaseHeld()
    for response in first { #expect(await drain(response) == .success(1)) }
    #expect(await eventually { await set.servers[0].stats().openConnections == 0 }, "closed once drained")
    #expect(await eventually { await channel.statistics().connectionsPerAddress[set.addresses[0].description] == nil })
    set.services[1].releaseHeld()
    for response in second + third { #expect(await drain(response) == .success(1)) }
    await channel.shutdown()
    await set.stopAll()
  }

  @Test("`localhost` spreads over every address it resolves to (getaddrinfo's answer, one server on each)")
  func localhostSpreads() async throws {
    let resolved = try SocketAddress.resolve(host: "localhost", port: 1).map { $0.hostAndPort.host }
    let hosts = Array(Set(resolved)).sorted()
    let set = try ServerSet(hosts: hosts, samePort: true)
    let channel = try GRPCChannel(target: "localhost:\(set.ports[0])", configuration: Self.plaintext)
    #expect(await Self.warmUp(channel, set))
    let responses = (0..<(4 * hosts.count)).map { _ in channel.serverStreaming(path: Method.held, request: []) }
    #expect(await eventually { await set.openCalls() == hosts.map { _ in 4 } })
    #expect(await channel.statistics().connectionsPerAddress.count == hosts.count)
    for service in set.services { service.releaseHeld() }
    for response in responses { #expect(await drain(response) == .success(1)) }
    await channel.shutdown()
    await set.stopAll()
  }

  @Test("a list of 127.0.0.1 and ::1 on one port (what localhost often means) spreads over IPv4 and IPv6")
  func ipv4AndIPv6Spread() async throws {
    let set = try ServerSet(hosts: ["127.0.0.1", "::1"], samePort: true)
    let channel = try GRPCChannel(
      target: .dns(host: "localhost", port: set.ports[0]), resolver: GRPCStaticResolver(addresses: set.addresses),
      configuration: Self.plaintext)
    #expect(await Self.warmUp(channel, set))
    let responses = (0..<8).map { _ in channel.serverStreaming(path: Method.held, request: []) }
    #expect(await eventually { await set.openCalls() == [4, 4] })
    #expect(
      await channel.statistics().connectionsPerAddress == ["127.0.0.1:\(set.ports[0])": 1, "[::1]:\(set.ports[0])": 1])
    for service in set.services { service.releaseHeld() }
    for response in responses { #expect(await drain(response) == .success(1)) }
    await channel.shutdown()
    await set.stopAll()
  }
}

// MARK: - Re-resolution

/// A resolver of its own (the seam users plug into), counting its resolutions.
final class CountingResolver: GRPCNameResolver {
  private let addresses: Locked<[GRPCAddress]>
  private let count = Atomic<Int>(0)

  init(_ addresses: [GRPCAddress]) { self.addresses = Locked(addresses) }

  var resolutions: Int { count.load(ordering: .relaxed) }

  func resolve() async throws(GRPCError) -> [GRPCAddress] {
    count.add(1, ordering: .relaxed)
    return addresses.withLock { $0 }
  }
}

@Suite("Re-resolution", .timeLimit(.minutes(1)))
struct ReResolutionTests {
  @Test("a resolver of the caller's own is used, and asked again after a GOAWAY")
  func goAwayResolvesAgain() async throws {
    let set = try ServerSet(hosts: ["127.0.0.2"])
    let resolver = CountingResolver(set.addresses)
    let channel = try GRPCChannel(
      target: .dns(host: "fleet.test", port: set.ports[0]), resolver: resolver,
      configuration: GRPCChannelConfiguration(security: .plaintext))
    #expect(await unaryError(channel, path: Method.unary, request: [1]) == nil)
    #expect(resolver.resolutions == 1)
    set.servers[0].sendGoAway()
    #expect(await eventually { resolver.resolutions >= 2 }, "resolutions: \(resolver.resolutions)")
    #expect(await unaryError(channel, path: Method.unary, request: [2]) == nil)
    await channel.shutdown()
    await set.stopAll()
  }

  @Test("a connection lost under its calls, and a refused attempt, each ask for a resolution")
  func failureResolvesAgain() async throws {
    let set = try ServerSet(hosts: ["127.0.0.2"])
    let resolver = CountingResolver(set.addresses)
    let channel = try GRPCChannel(
      target: .addresses(set.addresses), resolver: resolver,
      configuration: GRPCChannelConfiguration(
        security: .plaintext, backoff: RetryBackoff(initial: .milliseconds(20), jitter: 0)))
    let response = channel.serverStreaming(path: Method.held, request: [])
    #expect(await eventually { await set.openCalls() == [1] })
    let before = resolver.resolutions
    set.servers[0].dropConnections()
    #expect(await drain(response).failure?.code == .unavailable)
    #expect(await eventually { resolver.resolutions > before }, "lost connection: \(resolver.resolutions)")

    await set.servers[0].shutdown(graceful: false)
    let beforeRefused = resolver.resolutions
    #expect(await unaryError(channel, path: Method.unary)?.code == .unavailable)
    #expect(await eventually { resolver.resolutions > beforeRefused }, "refused: \(resolver.resolutions)")
    await channel.shutdown()
  }

  @Test("a channel in use resolves again periodically (resolutionInterval)")
  func periodic() async throws {
    let set = try ServerSet(hosts: ["127.0.0.2"])
    let resolver = CountingResolver(set.addresses)
    let channel = try GRPCChannel(
      target: .addresses(set.addresses), resolver: resolver,
      configuration: GRPCChannelConfiguration(security: .plaintext, resolutionInterval: .milliseconds(50)))
    #expect(resolver.resolutions == 0, "no resolution before the first call")
    #expect(await unaryError(channel, path: Method.unary, request: [1]) == nil)
    #expect(await eventually { resolver.resolutions >= 4 }, "resolutions: \(resolver.resolutions)")
    #expect(await channel.statistics().resolutions >= 4)
    await channel.shutdown()
    // Shut down: no more resolutions (the periodic task stopped).
    try await Task.sleep(for: .milliseconds(100))
    let after = resolver.resolutions
    try await Task.sleep(for: .milliseconds(300))
    #expect(resolver.resolutions == after)
    await set.stopAll()
  }

  @Test("the default resolution interval is 30 s")
  func defaultInterval() {
    #expect(GRPCChannelConfiguration().resolutionInterval == .seconds(30))
  }
}

// MARK: - Event-loop groups

/// Records, for every callback, whether it ran on the scheduler the call was started on.
final class SchedulerCheckingHandler: GRPCCallHandler {
  let scheduler: any GRPCScheduler
  private let state = Locked<(callbacks: Int, offScheduler: Int, status: GRPCStatus?)>((0, 0, nil))

  init(scheduler: any GRPCScheduler) { self.scheduler = scheduler }

  var callbacks: Int { state.withLock { $0.callbacks } }
  var offScheduler: Int { state.withLock { $0.offScheduler } }
  var status: GRPCStatus? { state.withLock { $0.status } }

  private func record() {
    let on = scheduler.inScheduler
    state.withLock {
      $0.callbacks += 1
      if !on { $0.offScheduler += 1 }
    }
  }

  func callDidReceiveHeaders(_ headers: GRPCMetadata) { record() }
  func callDidReceiveMessage(_ message: UnsafeRawBufferPointer) { record() }
  func callDidFinish(status: GRPCStatus, trailers: GRPCMetadata) {
    record()
    state.withLock { $0.status = status }
  }
}

@Suite("Event-loop groups", .timeLimit(.minutes(1)))
struct EventLoopGroupTests {
  @Test("the default group has one loop per core; a channel's own group has one loop")
  func sizes() throws {
    let group = GRPCEventLoopGroup()
    #expect(group.loopCount == GRPCEventLoopGroup.coreCount)
    #expect(GRPCEventLoopGroup.coreCount == Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    group.shutdown()
    let channel = try GRPCChannel(
      host: "127.0.0.1", port: 1, configuration: GRPCChannelConfiguration(security: .plaintext))
    #expect(channel.schedulers.count == 1)
  }

  @Test("calls started on each loop of a group run there, on connections of that loop")
  func callsRunOnTheirLoop() async throws {
    let set = try ServerSet(hosts: ["127.0.0.2"])
    let group = GRPCEventLoopGroup(loopCount: 3)
    let channel = try GRPCChannel(
      target: .addresses(set.addresses),
      configuration: GRPCChannelConfiguration(security: .plaintext, eventLoopGroup: group))
    #expect(channel.schedulers.count == 3)
    #expect(zip(channel.schedulers, group.schedulers).allSatisfy { $0 === $1 })

    var handlers: [SchedulerCheckingHandler] = []
    for scheduler in channel.schedulers {
      for _ in 0..<5 {
        let handler = SchedulerCheckingHandler(scheduler: scheduler)
        handlers.append(handler)
        _ = channel.startCall(
          path: Method.stream, request: StreamSpec(count: 3).encoded, kind: .serverStreaming, options: CallOptions(),
          on: scheduler, handler: handler)
      }
    }
    #expect(await eventually { handlers.allSatisfy { $0.status != nil } })
    for handler in handlers {
      #expect(handler.status?.code == .ok)
      #expect(handler.callbacks == 5, "headers, three messages, status")
      #expect(handler.offScheduler == 0, "every callback on the call's loop")
    }
    let stats = await channel.statistics()
    #expect(stats.connectionsPerLoop == [1, 1, 1], "each loop made a connection of its own")
    #expect(await set.servers[0].stats().connectionsAccepted == 3)
    await channel.shutdown()
    group.shutdown()
    await set.stopAll()
  }

  @Test("channels share a group; calls without a scheduler spread their connections over its loops")
  func sharedGroup() async throws {
    let set = try ServerSet(hosts: ["127.0.0.2", "127.0.0.3"])
    let group = GRPCEventLoopGroup(loopCount: 2)
    let configuration = GRPCChannelConfiguration(security: .plaintext, eventLoopGroup: group)
    let first = try GRPCChannel(target: .addresses(set.addresses), configuration: configuration)
    let second = try GRPCChannel(target: .addresses(set.addresses), configuration: configuration)
    let responses = (0..<8).flatMap { _ in
      [first, second].map { $0.serverStreaming(path: Method.held, request: []) }
    }
    #expect(await eventually { await set.openCalls().reduce(0, +) == 16 })
    for channel in [first, second] {
      let stats = await channel.statistics()
      #expect(stats.connectionsPerLoop.count == 2)
      #expect(stats.connectionsPerLoop.allSatisfy { $0 >= 1 }, "both loops carry calls: \(stats.connectionsPerLoop)")
      #expect(stats.connectionsPerAddress.count == 2, "both addresses: \(stats.connectionsPerAddress)")
    }
    for service in set.services { service.releaseHeld() }
    for response in responses { #expect(await drain(response) == .success(1)) }
    await first.shutdown()
    // The group outlives one channel: the other still works.
    #expect(await unaryError(second, path: Method.unary, request: [3]) == nil)
    await second.shutdown()
    group.shutdown()
    await set.stopAll()
  }
}
