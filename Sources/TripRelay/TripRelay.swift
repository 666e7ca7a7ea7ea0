// Sources/TripRelay/TripRelay.swift - one relay of a relay cluster: its parts, put together, and their lifecycle
//
// A relay follows each trip once per cluster and serves it to any number of watchers, on NATS JetStream:
// - `FollowWorkQueue`: follow requests from `FOLLOW`, held by leases it keeps confirming;
// - `TripFollowing` / `FollowedTrip`: each lease followed upstream through the consumer API, its updates
//   written to an `UpdateSink` (`JetStreamSink`: `TRIPS` and `TRIPSTATE`), fenced by the lease's delivery;
// - `RelayWatchService` / `TripHub`: the streaming GetTrip served from a `TripsStore` (`JetStreamTripsStore`),
//   authorized, with `grpc.health.v1` on the same port.
// The parts never wait for each other: leases come from the queue's tasks, updates from the trips' event
// loops, acks from libnats' threads, watchers' calls on the server's loop.
//
// Lifecycle: ``start(_:onEvent:)`` starts the downstream server (NOT_SERVING) and connects to NATS in the
// background: a relay whose NATS is down at start keeps trying and stays not ready, it never exits for that.
// ``run()`` makes sure the streams exist, then takes requests while ready, until ``shutdown()``, which hands
// every request back to the cluster.

internal import CoreMetrics
package import FleetEngineMessages
internal import GRPCProtocol
internal import HTTP2Transport
internal import JourneySharing
internal import Logging
package import NATSClient
internal import Primitives

/// One relay of a relay cluster (see the file comment).
package final class TripRelay: Sendable {
  /// How it runs.
  package let configuration: RelayConfiguration
  /// The NATS connection (it may still be connecting).
  package let connection: NATSConnection
  /// JetStream on ``connection``.
  package let jetStream: JetStream
  private let services: JourneySharingServices
  private let metrics: RelayMetrics
  private let sink: JetStreamSink
  private let queue: FollowWorkQueue
  private let following: TripFollowing
  private let watchService: RelayWatchService?
  private let server: GRPCServer?
  private let state = Locked(State())
  private var logger: Logger { configuration.logger }

  private struct State {
    var streamsReady = false
    var connected = false
    var stopping = false
  }

  private init(
    configuration: RelayConfiguration, connection: NATSConnection, jetStream: JetStream,
    services: JourneySharingServices, metrics: RelayMetrics, sink: JetStreamSink, queue: FollowWorkQueue,
    following: TripFollowing, watchService: RelayWatchService?, server: GRPCServer?
  ) {
    self.configuration = configuration
    self.connection = connection
    self.jetStream = jetStream
    self.services = services
    self.metrics = metrics
    self.sink = sink
    self.queue = queue
    self.following = following
    self.watchService = watchService
    self.server = server
  }

  /// Starts the downstream server and the NATS connection (in the background while NATS is down); call
  /// ``run()`` next. `onEvent` hears of every follow that starts and stops (on any thread).
  ///
  /// - Throws: ``RelayConfigurationError`` for a configuration that cannot work; a `GRPCError` when the
  ///   downstream address cannot be bound or its TLS files loaded; a ``NATSError`` for unusable NATS options
  ///   (never because NATS is unreachable).
  package static func start(
    _ configuration: RelayConfiguration, onEvent: (@Sendable (RelayEvent) -> Void)? = nil
  ) async throws -> TripRelay {
    try configuration.validate()
    let logger = configuration.logger
    if case .insecureNoAuthorization = configuration.authorization, configuration.downstream != nil {
      logger.warning(
        "serving without authorization (--insecure-no-auth): anyone who reaches the port may watch every trip of the provider"
      )
    }
    var nats = configuration.nats
    nats.name = nats.name ?? "relay \(configuration.relayID)"
    nats.reconnect = .forever(wait: .milliseconds(500))
    nats.retryOnFailedConnect = true
    nats.pingInterval = min(nats.pingInterval, max(.seconds(1), configuration.ackWait / 4))
    nats.maxPingsOutstanding = 2
    let connection = try await NATSConnection.connect(nats, logger: logger)
    let metrics = RelayMetrics(factory: configuration.metricsFactory ?? MetricsSystem.factory)
    do {
      let jetStream = try connection.jetStream()
      let sink = try JetStreamSink(
        jetStream: jetStream, names: configuration.names, relayID: configuration.relayID, metrics: metrics,
        logger: logger)
      let services = try JourneySharingServices(configuration: configuration.upstream)
      let store = JetStreamTripsStore(
        jetStream: jetStream, names: configuration.names, limits: configuration.upstream.limits, metrics: metrics,
        logger: logger)
      var watchService: RelayWatchService?
      var server: GRPCServer?
      if let downstream = configuration.downstream {
        let service = RelayWatchService(configuration: configuration, store: store, metrics: metrics)
        let made = try GRPCServer(configuration: downstream, service: service, logger: logger)
        try made.start()
        watchService = service
        server = made
      }
      let relayBox = Locked<TripRelay?>(nil)
      let queue = FollowWorkQueue(
        jetStream: jetStream, configuration: configuration, metrics: metrics, logger: logger,
        ready: { relayBox.withLock { $0 }?.isReady ?? false },
        onAcquired: { lease in relayBox.withLock { $0 }?.following.acquired(lease) },
        onLost: { lease in relayBox.withLock { $0 }?.following.lost(lease) },
        onRejected: { relayBox.withLock { $0 }?.following.rejectedRequest() })
      let following = TripFollowing(
        configuration: configuration, sink: sink, services: services, queue: queue, metrics: metrics,
        onEvent: onEvent)
      let relay = TripRelay(
        configuration: configuration, connection: connection, jetStream: jetStream, services: services,
        metrics: metrics, sink: sink, queue: queue, following: following, watchService: watchService, server: server)
      relayBox.withLock { $0 = relay }
      relay.state.withLock { $0.connected = connection.state == .connected }
      return relay
    } catch {
      await connection.close()
      throw error
    }
  }

  /// The port the downstream gRPC server listens on (nil without one).
  package var downstreamPort: Int? { server?.localPort }

  /// Whether the relay takes requests and serves watchers: NATS connected and the streams there.
  package var isReady: Bool { state.withLock { $0.connected && $0.streamsReady && !$0.stopping } }

  /// The counters now.
  package func statistics() -> RelayStatistics {
    var statistics = following.statistics
    statistics.watchers = watchService?.watchers.withLock { $0 } ?? 0
    return statistics
  }

  /// Makes sure the streams exist, then takes follow requests and keeps the relay's readiness up to date,
  /// until ``shutdown()``.
  package func run() async {
    let events = connection.events()
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.watchConnection(events) }
      group.addTask {
        await self.ensureStreamsUntilDone()
        await self.queue.run()
      }
      await group.next()
      group.cancelAll()
    }
  }

  private func watchConnection(_ events: AsyncStream<NATSConnectionEvent>) async {
    for await event in events {
      switch event {
      case .connected, .reconnected:
        state.withLock { $0.connected = true }
      case .disconnected, .closed:
        state.withLock { $0.connected = false }
      case .lameDuckMode, .serversDiscovered, .asynchronousError:
        continue
      }
      publishReadiness()
      if state.withLock({ $0.stopping }) { return }
    }
  }

  private func ensureStreamsUntilDone() async {
    var failures = 0
    let backoff = RetryBackoff(initial: .milliseconds(500), maximum: .seconds(10))
    var generator = SystemRandomNumberGenerator()
    while !state.withLock({ $0.stopping }) {
      do {
        try await Self.ensureStreams(jetStream, configuration)
        state.withLock {
          $0.streamsReady = true
          $0.connected = connection.state == .connected || $0.connected
        }
        publishReadiness()
        logger.info("relay ready", metadata: ["relay": "\(configuration.relayID)"])
        return
      } catch {
        failures += 1
        if failures == 1 || failures % 10 == 0 {
          logger.warning(
            "NATS or its streams are not available yet; the relay is not ready and keeps trying",
            metadata: ["error": "\(error)"])
        }
        try? await Task.sleep(for: backoff.delay(retry: failures, using: &generator))
      }
    }
  }

  private func publishReadiness() {
    guard let server, let watchService else { return }
    let ready = isReady
    server.execute { watchService.setReady(ready) }
  }

  // MARK: - Streams

  /// Creates (or, with `updateExisting`, updates) `FOLLOW`, the `TRIPS` partitions, `TRIPSTATE` and the relays'
  /// consumer, as `configuration` describes them; without `updateExisting`, what exists is left as it is (a
  /// submitter does not reconfigure the relays' streams).
  package static func ensureStreams(
    _ jetStream: JetStream, _ configuration: RelayConfiguration, updateExisting: Bool = true
  ) async throws(NATSError) {
    let names = configuration.names
    var follow = JetStream.StreamConfiguration(name: names.followStream, subjects: [names.followSubjects])
    follow.description = "Follow requests for the trip relays of cluster \(names.cluster), provider \(names.providerID)"
    follow.retention = .workQueue
    follow.replicas = configuration.replicas
    follow.duplicateWindow = configuration.duplicateWindow
    follow.maxAge = configuration.followMaxAge
    follow.maxMessages = Int64(configuration.followMaxMessages)
    follow.discard = .new
    var streams = [follow]
    for partition in 0..<names.tripPartitions {
      var trips = JetStream.StreamConfiguration(
        name: names.tripsStream(partition: partition), subjects: [names.tripsStreamSubject(partition: partition)])
      trips.description = "Trip updates (journeysharing.v1.TripUpdate) of cluster \(names.cluster)"
      trips.replicas = configuration.replicas
      trips.duplicateWindow = configuration.duplicateWindow
      trips.maxAge = configuration.tripsMaxAge
      streams.append(trips)
    }
    var state = JetStream.StreamConfiguration(name: names.stateStream, subjects: [names.stateSubjects])
    state.description = "Trips' latest whole states and refusals, cluster \(names.cluster)"
    state.replicas = configuration.replicas
    state.duplicateWindow = configuration.duplicateWindow
    state.maxAge = configuration.tripsMaxAge
    state.maxMessagesPerSubject = 1
    streams.append(state)
    var consumer = JetStream.ConsumerConfiguration(
      durableName: names.followConsumer, filterSubject: names.followSubjects)
    consumer.description = "The trip relays of cluster \(names.cluster), provider \(names.providerID)"
    consumer.ackWait = configuration.ackWait
    consumer.maxAckPending = configuration.clusterMaxAckPending
    consumer.replicas = configuration.replicas
    try await retryingTransient(attempts: 30) { () throws(NATSError) in
      for stream in streams {
        if !updateExisting,
          try await exists({ () throws(NATSError) in _ = try await jetStream.streamInfo(stream.name) })
        {
          continue
        }
        _ = try await jetStream.createOrUpdateStream(stream)
      }
      if !updateExisting,
        try await exists({ () throws(NATSError) in
          _ = try await jetStream.consumerInfo(stream: follow.name, consumer: names.followConsumer)
        })
      {
        return
      }
      _ = try await jetStream.createOrUpdateConsumer(stream: follow.name, consumer)
    }
  }

  // MARK: - Follow requests

  /// Enqueues a follow request for each of `tripNames`. A trip that has a request pending already (followed
  /// now, or waiting) is not enqueued again. Returns how many were enqueued.
  @discardableResult
  package static func submit(
    _ tripNames: [TripName], names: RelayNames, to jetStream: JetStream
  ) async throws(NATSError) -> (submitted: Int, alreadyPending: Int) {
    var submitted = 0
    var pending = 0
    for name in tripNames {
      if try await submit(name, names: names, to: jetStream) { submitted += 1 } else { pending += 1 }
    }
    return (submitted, pending)
  }

  /// Enqueues one follow request; false when one is pending already.
  package static func submit(
    _ name: TripName, names: RelayNames, to jetStream: JetStream
  ) async throws(NATSError) -> Bool {
    var message = JetStream.OutboundMessage(
      subject: names.followSubject(name), data: Array(name.description.utf8),
      messageID: RelayNaming.followMessageID(name))
    message.expectedStream = names.followStream
    // No other request for this trip may be in the work queue: one acked is gone, one pending stays.
    message.expectedLastSubjectSequence = 0
    do throws(NATSError) {
      let ack = try await retryingTransient(attempts: 10) { () throws(NATSError) in
        try await jetStream.publish(message)
      }
      return !ack.isDuplicate
    } catch {
      if error.jetStreamCode == NATSError.JetStreamCode.wrongLastSequence { return false }
      throw error
    }
  }

  // MARK: - Stopping

  /// Stops taking requests, stops following (handing each request back), closes the downstream server, the
  /// upstream services and the NATS connection.
  package func shutdown() async {
    state.withLock { $0.stopping = true }
    queue.stop()
    await following.shutdown()
    if let server {
      await server.shutdown(graceful: true)
      let service = watchService
      server.execute { service?.stop() }
    }
    await services.shutdown()
    sink.close()
    try? await connection.drain(timeout: .seconds(5))
    await connection.close()
  }
}

/// Whether `lookup` finds what it looks up (false for NOT_FOUND; other errors are thrown).
private func exists(_ lookup: () async throws(NATSError) -> Void) async throws(NATSError) -> Bool {
  do throws(NATSError) {
    try await lookup()
    return true
  } catch {
    if error.isNotFound { return false }
    throw error
  }
}

/// Runs `body`, retrying failures that heal (no leader yet, a reconnect) up to `attempts` times.
func retryingTransient<Value>(
  attempts: Int, _ body: () async throws(NATSError) -> Value
) async throws(NATSError) -> Value {
  var attempt = 1
  while true {
    do throws(NATSError) {
      return try await body()
    } catch {
      guard error.isRetryable, attempt < attempts else { throw error }
      attempt += 1
      try? await Task.sleep(for: .milliseconds(500))
    }
  }
}
