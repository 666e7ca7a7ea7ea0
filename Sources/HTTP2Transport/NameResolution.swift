// Sources/HTTP2Transport/NameResolution.swift - when a channel resolves its target, and who hears of it
//
// One per channel, shared by its cores (one per event loop). A core asks for a resolution when it
// first needs a connection, when an attempt fails, when a connection is lost or gets GOAWAY; the
// resolver's observer asks when its addresses change; a periodic task asks every
// resolutionInterval once the channel is in use. Requests made while one runs are folded into one
// more run after it. Each outcome goes to every core on its own loop.

import GRPCProtocol
import Logging
import Primitives

/// A resolved address, with its numeric socket address and the key the pool counts it by.
struct ResolvedEndpoint: Sendable {
  /// `127.0.0.2:50051` or `[::1]:50051`: the numeric form, the same for equal addresses.
  let key: String
  let address: SocketAddress
}

/// Runs a channel's resolver off the event loops and hands every core the outcome.
///
/// `Sendable`: the mutable state is behind `state`'s lock.
final class NameResolution: Sendable {
  private struct State {
    var cores: [LoopBound<ChannelCore>] = []
    var running = false
    var again = false
    var closed = false
    var periodicStarted = false
    var periodic: Task<Void, Never>?
    var resolutions = 0
    var failures = 0
    /// Failed resolutions since the last success: they set the delay before calls stop failing fast.
    var consecutiveFailures = 0
    var random = SystemRandomNumberGenerator()
    var addresses: [String] = []
  }

  private let resolver: any GRPCNameResolver
  private let interval: Duration
  private let backoff: RetryBackoff
  private let logger: Logger
  /// What resolution failures name when the resolver gave no reason.
  private let name: String
  private let state = Locked(State())

  init(resolver: any GRPCNameResolver, name: String, interval: Duration, backoff: RetryBackoff, logger: Logger) {
    self.backoff = backoff
    self.resolver = resolver
    self.name = name
    self.interval = interval
    self.logger = logger
  }

  /// Gives the cores their resolutions from now on, and listens to the resolver.
  func attach(_ cores: [LoopBound<ChannelCore>]) {
    state.withLock { $0.cores = cores }
    resolver.addObserver { [weak self] in self?.request() }
  }

  /// Resolves now, or once more after the resolution under way. Any thread.
  func request() {
    let (start, startPeriodic) = state.withLock { state -> (Bool, Bool) in
      guard !state.closed else { return (false, false) }
      let periodic = !state.periodicStarted
      state.periodicStarted = true
      if state.running {
        state.again = true
        return (false, periodic)
      }
      state.running = true
      return (true, periodic)
    }
    if startPeriodic {
      let interval = interval
      let task = Task { [weak self] in
        while !Task.isCancelled {
          try? await Task.sleep(for: interval)
          guard !Task.isCancelled, let self else { return }
          self.request()
        }
      }
      let cancel = state.withLock { state -> Bool in
        state.periodic = task
        return state.closed
      }
      if cancel { task.cancel() }
    }
    if start { launch() }
  }

  /// Starts a resolution: the built-in resolvers without Swift's cooperative pool (a static list and a
  /// numeric host on the caller's thread, a DNS lookup on a thread of its own), so a busy pool never
  /// holds up a connection; a resolver of the user's own from a task.
  private func launch() {
    if let direct = resolver as? any DirectNameResolver {
      if direct.resolvesWithoutBlocking {
        finish(direct.resolveDirectly())
      } else {
        detachThread { self.finish(direct.resolveDirectly()) }
      }
    } else {
      Task { await self.run() }
    }
  }

  private func run() async {
    do {
      finish(.success(try await resolver.resolve()))
    } catch {
      finish(.failure(error))
    }
  }

  private func finish(_ outcome: Result<[GRPCAddress], GRPCError>) {
    let result: Result<[ResolvedEndpoint], ConnectionError>
    do {
      let found = try outcome.get()
      var endpoints: [ResolvedEndpoint] = []
      var keys = Set<String>()
      for address in found {
        guard let socketAddress = SocketAddress.numeric(host: address.host, port: address.port) else {
          logger.warning(
            "the resolver gave an address that is not a numeric IP address and port; skipped",
            metadata: ["address": "\(address)"])
          continue
        }
        let key = socketAddress.description
        if keys.insert(key).inserted { endpoints.append(ResolvedEndpoint(key: key, address: socketAddress)) }
      }
      result = endpoints.isEmpty ? .failure(.resolutionFailed(host: name, reason: "no addresses")) : .success(endpoints)
    } catch {
      result = .failure(
        (error.cause as? ConnectionError) ?? .resolutionFailed(host: name, reason: error.message))
    }
    let (cores, again, delay) = state.withLock { state -> ([LoopBound<ChannelCore>], Bool, Duration?) in
      state.resolutions += 1
      var delay: Duration?
      switch result {
      case .success(let endpoints):
        state.addresses = endpoints.map(\.key)
        state.consecutiveFailures = 0
      case .failure:
        state.failures += 1
        state.consecutiveFailures += 1
        delay = backoff.delay(retry: state.consecutiveFailures, using: &state.random)
      }
      state.running = false
      let again = state.again && !state.closed
      state.again = false
      if again { state.running = true }
      return (state.closed ? [] : state.cores, again, delay)
    }
    logger.debug("resolved", metadata: ["target": "\(name)", "result": "\(result.map { $0.map(\.key) })"])
    for core in cores { core.loop.execute { core.value.resolved(result, retryAfter: delay) } }
    if again { launch() }
  }

  /// Resolutions completed and failed, and the last good addresses.
  var counts: (resolutions: Int, failures: Int, addresses: [String]) {
    state.withLock { ($0.resolutions, $0.failures, $0.addresses) }
  }

  /// Stops resolving (the channel is shutting down) and lets go of the cores.
  func close() {
    let task = state.withLock { state -> Task<Void, Never>? in
      state.closed = true
      state.cores = []
      return state.periodic
    }
    task?.cancel()
  }
}

/// A built-in resolver the channel runs without a task: on the caller's thread when it does not block,
/// else on a thread of its own.
protocol DirectNameResolver: Sendable {
  /// Whether ``resolveDirectly()`` returns at once (no DNS lookup).
  var resolvesWithoutBlocking: Bool { get }
  /// The addresses now; may block when ``resolvesWithoutBlocking`` is false.
  func resolveDirectly() -> Result<[GRPCAddress], GRPCError>
}
