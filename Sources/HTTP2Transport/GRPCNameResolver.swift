// Sources/HTTP2Transport/GRPCNameResolver.swift - the resolver seam: DNS and a static list
//
// A channel asks its resolver for the target's addresses when it first needs a connection, again
// when a connection fails or the server sends GOAWAY, periodically, and whenever the resolver says
// its addresses changed. Resolvers run off the event loops: a channel calls `resolve()` from a task,
// and the DNS resolver runs getaddrinfo on a thread of its own (never a loop, never Swift's
// cooperative pool, which callers may be keeping busy).

public import GRPCProtocol
import Primitives

/// Resolves a channel's target to the server addresses to connect to.
///
/// Implement it to plug in another name system (a service registry, a file): return every current
/// address from ``resolve()``, and call the observers given to ``addObserver(_:)`` whenever the
/// addresses change, so channels resolve again at once rather than at their next periodic resolution.
public protocol GRPCNameResolver: Sendable {
  /// The target's addresses now, in the order connections should be spread over them.
  ///
  /// Called from a task, never on an event loop; an implementation that blocks must do so on a
  /// thread of its own, not on the task's (Swift's cooperative pool).
  ///
  /// - Throws: ``GRPCError`` (UNAVAILABLE) when the name cannot be resolved. The channel keeps using
  ///   the addresses it had, if any; if it has none, the calls waiting for a connection fail.
  func resolve() async throws(GRPCError) -> [GRPCAddress]

  /// Registers `observer`, to be called (on any thread) every time the addresses may have changed.
  /// The default implementation never calls it: such a resolver is polled (failures, GOAWAY, the
  /// periodic ``GRPCChannelConfiguration/resolutionInterval``).
  func addObserver(_ observer: @escaping @Sendable () -> Void)
}

extension GRPCNameResolver {
  /// Never calls `observer`: the resolver is polled.
  public func addObserver(_ observer: @escaping @Sendable () -> Void) {}
}

/// Resolves a host name with getaddrinfo: every A and AAAA address (and `/etc/hosts`), numeric
/// hosts as they are. Each resolution runs on a thread of its own.
public struct GRPCDNSResolver: GRPCNameResolver, DirectNameResolver {
  /// The name to resolve.
  public let host: String
  /// The port of every address.
  public let port: Int

  /// A resolver of `host`, giving `port` with each address.
  public init(host: String, port: Int) {
    self.host = host
    self.port = port
  }

  /// The addresses getaddrinfo gives now, duplicates dropped, in its order.
  public func resolve() async throws(GRPCError) -> [GRPCAddress] {
    let host = host
    let port = port
    let result: Result<[GRPCAddress], GRPCError>
    if resolvesWithoutBlocking {
      result = .success([GRPCAddress(host: host, port: port)])
    } else {
      result = await withCheckedContinuation { continuation in
        // getaddrinfo blocks: a thread of its own, not a loop and not the cooperative pool.
        detachThread { continuation.resume(returning: Self.lookUp(host: host, port: port)) }
      }
    }
    return try result.get()
  }

  /// Whether the host is numeric (no lookup).
  var resolvesWithoutBlocking: Bool {
    GRPCAddress(host: host, port: port).isIPv4 || GRPCAddress(host: host, port: port).isIPv6
  }

  func resolveDirectly() -> Result<[GRPCAddress], GRPCError> {
    resolvesWithoutBlocking ? .success([GRPCAddress(host: host, port: port)]) : Self.lookUp(host: host, port: port)
  }

  private static func lookUp(host: String, port: Int) -> Result<[GRPCAddress], GRPCError> {
    do {
      var seen: Set<GRPCAddress> = []
      var addresses: [GRPCAddress] = []
      for socketAddress in try SocketAddress.resolve(host: host, port: port) {
        let (numeric, resolvedPort) = socketAddress.hostAndPort
        let address = GRPCAddress(host: numeric, port: resolvedPort)
        if seen.insert(address).inserted { addresses.append(address) }
      }
      return .success(addresses)
    } catch {
      let failure = ConnectionError.resolutionFailed(
        host: host, reason: error.resolutionFailure ?? error.description)
      return .failure(GRPCError(code: .unavailable, message: failure.description, cause: failure))
    }
  }
}

/// A list of addresses the caller sets, and changes at runtime with ``update(_:)``: every channel
/// using the resolver follows (connects to new addresses, drains removed ones).
public final class GRPCStaticResolver: GRPCNameResolver, DirectNameResolver {
  private struct State {
    var addresses: [GRPCAddress]
    var observers: [@Sendable () -> Void] = []
  }
  private let state: Locked<State>

  /// A resolver giving `addresses`.
  public init(addresses: [GRPCAddress]) {
    state = Locked(State(addresses: addresses))
  }

  /// The current list.
  public var addresses: [GRPCAddress] { state.withLock { $0.addresses } }

  /// Replaces the list; the channels using the resolver resolve again at once.
  public func update(_ addresses: [GRPCAddress]) {
    let observers = state.withLock { state in
      state.addresses = addresses
      return state.observers
    }
    for observer in observers { observer() }
  }

  /// The current list (an empty list fails: there is nothing to connect to).
  public func resolve() async throws(GRPCError) -> [GRPCAddress] {
    let addresses = self.addresses
    guard !addresses.isEmpty else {
      let failure = ConnectionError.resolutionFailed(host: "static list", reason: "no addresses")
      throw GRPCError(code: .unavailable, message: failure.description, cause: failure)
    }
    return addresses
  }

  var resolvesWithoutBlocking: Bool { true }

  func resolveDirectly() -> Result<[GRPCAddress], GRPCError> {
    Result { () throws(GRPCError) -> [GRPCAddress] in
      let addresses = self.addresses
      guard !addresses.isEmpty else {
        let failure = ConnectionError.resolutionFailed(host: "static list", reason: "no addresses")
        throw GRPCError(code: .unavailable, message: failure.description, cause: failure)
      }
      return addresses
    }
  }

  /// Calls `observer` after every ``update(_:)``.
  public func addObserver(_ observer: @escaping @Sendable () -> Void) {
    state.withLock { $0.observers.append(observer) }
  }
}
