// Sources/JourneySharing/Operating/ServicesLifecycle.swift - JourneySharingServices as a Service, and the scoped form
//
// `run()` waits for the ServiceGroup's graceful shutdown (or for its task to be cancelled, or for someone
// to call `shutdown()`), then shuts the services down gracefully and returns. `shutdown()` runs once;
// whoever calls it again, or `run()` meanwhile, waits until that one shutdown has finished.

import Primitives
public import ServiceLifecycle

extension JourneySharingServices: Service {
  /// Runs until the `ServiceGroup`'s graceful shutdown (or this task's cancellation, or a call to
  /// ``shutdown()``), then shuts down gracefully as ``shutdown()`` describes, and returns once that is done.
  ///
  /// ```swift
  /// let services = try JourneySharingServices(configuration: configuration)
  /// let group = ServiceGroup(
  ///   services: [services, myFollowingService], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
  /// try await group.run()
  /// ```
  ///
  /// Following does not wait for `run()`: trips may be followed as soon as the services exist.
  public func run() async throws {
    let lifecycle = core.lifecycle
    await withTaskCancellationOrGracefulShutdownHandler {
      await lifecycle.waitUntilShutdownRequested()
    } onCancelOrGracefulShutdown: {
      lifecycle.requestShutdown()
    }
    await shutdown()
  }
}

/// Runs `body` with services made from `configuration`, and shuts them down gracefully (see
/// ``JourneySharingServices/shutdown()``) when it returns or throws: the scoped form, for scripts and tests,
/// in the spirit of grpc-swift-2's `withGRPCClient`.
///
/// ```swift
/// let status = try await withJourneySharingServices(configuration: configuration) { services in
///   let model = services.tripService.tripModel(forTripName: "providers/my-project/trips/trip-7")
///   for await update in model.updates() where update.snapshot?.isFinal == true {
///     return update.snapshot?.tripStatus
///   }
///   return nil
/// }
/// ```
///
/// - Throws: ``GRPCError`` (`INVALID_ARGUMENT`) when the TLS settings cannot be loaded, or what `body` throws.
public func withJourneySharingServices<Result>(
  configuration: JourneySharingConfiguration,
  isolation: isolated (any Actor)? = #isolation,
  _ body: (JourneySharingServices) async throws -> Result
) async throws -> Result {
  let services = try JourneySharingServices(configuration: configuration)
  let result: Result
  do {
    result = try await body(services)
  } catch {
    await services.shutdown()
    throw error
  }
  await services.shutdown()
  return result
}

/// Where the services are in their life: running, asked to shut down, shutting down, shut down; and who
/// waits for which step.
final class ServicesLifecycle: Sendable {
  private enum Phase {
    case running
    case shuttingDown
    case shutDown
  }

  private struct State {
    var phase = Phase.running
    var requested = false
    var requestWaiters: [CheckedContinuation<Void, Never>] = []
    var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
  }

  private let state = Locked(State())

  /// Asks ``JourneySharingServices/run()`` to shut down (graceful shutdown, cancellation, or
  /// ``JourneySharingServices/shutdown()`` called directly).
  func requestShutdown() {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.requested = true
      defer { state.requestWaiters.removeAll() }
      return state.requestWaiters
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Returns once ``requestShutdown()`` has been called.
  func waitUntilShutdownRequested() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state -> Bool in
        if state.requested { return true }
        state.requestWaiters.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Whether the caller is the one to shut down (the first); also counts as a shutdown request.
  func beginShutdown() -> Bool {
    requestShutdown()
    return state.withLock { state in
      guard state.phase == .running else { return false }
      state.phase = .shuttingDown
      return true
    }
  }

  /// The shutdown has finished: wakes whoever waits for it.
  func finishShutdown() {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.phase = .shutDown
      defer { state.shutdownWaiters.removeAll() }
      return state.shutdownWaiters
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Returns once the shutdown under way has finished.
  func waitUntilShutDown() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state -> Bool in
        if state.phase == .shutDown { return true }
        state.shutdownWaiters.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Whether ``JourneySharingServices/shutdown()`` has begun.
  var isShuttingDown: Bool {
    state.withLock { $0.phase != .running }
  }
}
