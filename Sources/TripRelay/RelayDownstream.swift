// Sources/TripRelay/RelayDownstream.swift - the relay's gRPC side: the streaming GetTrip, served from TRIPS
//
// The relay serves `journeysharing.v1.TripStreamService/GetTrip`, the contract FleetSim serves: the whole
// trip first (`full_trip`), then the changed fields, until the trip ends (then OK) or the client cancels.
//
// What it serves comes from JetStream, not from the relay's own following: a trip has one hub per relay
// while anyone watches it there, and the hub reads the trip's subject of `TRIPS` from its first message
// through one consumer, folding each update into the trip. So any relay of the cluster serves any
// trip, whichever relay follows it upstream; a late joiner gets the trip as folded so far, then the
// updates; and however many clients watch a trip, it is followed upstream once (by whichever relay holds its
// follow request) and read from JetStream once per relay. When the trip's history has no final state and
// `submitOnWatch` is set, the hub enqueues a follow request for it (none is enqueued while one is pending).
//
// Threading: the service and its hubs live on the server's event loop (GRPCService's contract); each hub's
// reader is a task that hands every update to the loop with `execute`.

internal import FleetEngineMessages
internal import GRPCProtocol
internal import HTTP2Transport
internal import Logging
internal import NATSClient
internal import Primitives

/// The downstream gRPC server and its service.
final class RelayDownstream: Sendable {
  let server: GRPCServer
  let service: RelayWatchService
  let port: Int

  init(configuration: RelayConfiguration, server: GRPCServerConfiguration, jetStream: JetStream) throws {
    service = RelayWatchService(configuration: configuration, jetStream: jetStream)
    self.server = try GRPCServer(configuration: server, service: service, logger: configuration.logger)
    port = try self.server.start()
  }

  var watcherCount: Int { service.watchers.withLock { $0 } }

  func shutdown() async {
    await server.shutdown(graceful: true)
    service.server(stopped: server)
  }
}

/// Serves the streaming GetTrip from `TRIPS`. `@unchecked Sendable`: `hubs` is touched only on the
/// server's event loop, where every ``handle(_:)`` runs.
final class RelayWatchService: GRPCService, @unchecked Sendable {
  let configuration: RelayConfiguration
  let jetStream: JetStream
  /// Watchers open now, over every hub (read from any thread).
  let watchers = Locked(0)
  private var hubs: [String: TripHub] = [:]

  init(configuration: RelayConfiguration, jetStream: JetStream) {
    self.configuration = configuration
    self.jetStream = jetStream
  }

  func handle(_ call: any GRPCServerCallContext) {
    guard call.path == FleetEngineMethods.streamingGetTrip else {
      call.finish(GRPCStatus(code: .unimplemented, message: "method \(call.path) is not implemented"))
      return
    }
    let request: StreamTripRequest
    do {
      request = try StreamTripRequest(serializedBytes: call.request)
    } catch {
      call.finish(GRPCStatus(code: .invalidArgument, message: "malformed StreamTripRequest: \(error)"))
      return
    }
    guard let name = TripName(parsing: request.name) else {
      call.finish(
        GRPCStatus(
          code: .invalidArgument,
          message: "trip name must be in the format providers/{provider_id}/trips/{trip_id}"))
      return
    }
    let key = name.description
    let hub: TripHub
    if let existing = hubs[key] {
      hub = existing
    } else {
      hub = TripHub(name: name, service: self, scheduler: call.scheduler)
      hubs[key] = hub
      hub.startReading()
    }
    hub.add(call)
  }

  /// Loop only: `hub` has no watcher left, or its trip ended.
  func remove(_ hub: TripHub) {
    let key = hub.name.description
    if hubs[key] === hub { hubs[key] = nil }
    hub.stopReading()
  }

  /// After the server stopped: stop every hub's reader.
  func server(stopped server: GRPCServer) {
    server.execute { [self] in
      for hub in hubs.values { hub.stopReading() }
      hubs.removeAll()
    }
  }
}

/// One trip's watchers on one relay, and the trip folded from `TRIPS`. `@unchecked Sendable`: its state is
/// touched only on the server's event loop; the reader task only calls ``GRPCScheduler/execute(_:)``.
final class TripHub: @unchecked Sendable {
  private final class Watcher {
    let call: any GRPCServerCallContext
    var sequence: UInt64 = 0
    init(call: any GRPCServerCallContext) { self.call = call }
  }

  let name: TripName
  private unowned let service: RelayWatchService
  private let scheduler: any GRPCScheduler
  private var trip: Trip?
  /// Updates were folded into `trip` without being sent (catching up).
  private var foldedUnsent = false
  private var ended = false
  private var watchers: [ObjectIdentifier: Watcher] = [:]
  private var reader: Task<Void, Never>?

  init(name: TripName, service: RelayWatchService, scheduler: any GRPCScheduler) {
    self.name = name
    self.service = service
    self.scheduler = scheduler
  }

  func add(_ call: any GRPCServerCallContext) {
    let watcher = Watcher(call: call)
    let key = ObjectIdentifier(call as AnyObject)
    watchers[key] = watcher
    service.watchers.withLock { $0 += 1 }
    call.onCancel { [weak self] in
      guard let self, self.watchers.removeValue(forKey: key) != nil else { return }
      self.service.watchers.withLock { $0 -= 1 }
      if self.watchers.isEmpty && !self.ended { self.service.remove(self) }
    }
    if let trip, !foldedUnsent { sendFull(trip, to: watcher) }
  }

  private func sendFull(_ trip: Trip, to watcher: Watcher) {
    var update = TripUpdate()
    update.trip = trip
    update.fullTrip = true
    send(update, to: watcher)
  }

  private func send(_ update: TripUpdate, to watcher: Watcher) {
    var update = update
    watcher.sequence += 1
    update.sequence = watcher.sequence
    update.sendTime = Timestamp(unixTime: scheduler.unixTime)
    watcher.call.send(update.serializedBytes())
  }

  /// Loop only: an update read from `TRIPS`. While the reader catches up with the trip's history
  /// (`catchingUp`: more messages are pending), updates are only folded; the first one after sends the
  /// folded trip whole, so a late joiner gets one full trip, not the history.
  func apply(_ update: TripUpdate, isFinal: Bool, catchingUp: Bool) {
    guard !ended else { return }
    var folded = trip ?? Trip()
    folded.apply(update)
    trip = folded
    if catchingUp && !isFinal {
      foldedUnsent = true
      return
    }
    let sendWhole = foldedUnsent || update.fullTrip
    foldedUnsent = false
    for watcher in watchers.values {
      if watcher.sequence == 0 || sendWhole {
        // A watcher that has nothing yet gets the trip as folded so far; a full update restarts everyone.
        sendFull(folded, to: watcher)
      } else {
        var delta = TripUpdate()
        delta.trip = update.trip
        delta.updatedFields = update.updatedFields
        send(delta, to: watcher)
      }
    }
    if isFinal {
      ended = true
      let finished = watchers.values.map(\.call)
      service.watchers.withLock { $0 -= watchers.count }
      watchers.removeAll()
      for call in finished { call.finish(.ok) }
      service.remove(self)
    }
  }

  func startReading() {
    let subject = RelayNaming.tripSubject(name)
    let jetStream = service.jetStream
    let configuration = service.configuration
    let name = name
    let scheduler = scheduler
    // The task holds the hub until it ends: `stopReading()` (no watcher left, or the server stopped) cancels it.
    let hub = self
    reader = Task {
      let logger = configuration.logger
      // Read through an ephemeral pull consumer (no acks, deleted when idle for 30 s), re-created from the next
      // stream sequence when it is lost (a NATS node restart): an ordered consumer by hand. libnats 3.4.1's
      // own ordered consumers re-create themselves on a thread of their own, which can still run when the
      // subscription is destroyed (a hub ends), and that crashed relays.
      var pull: JetStream.PullSubscription?
      var consumerName: String?
      var lastSequence: UInt64 = 0
      var emptyFetches = 0
      var submitted = !configuration.submitOnWatch
      var sawFinal = false
      while !Task.isCancelled && !sawFinal {
        guard let reading = pull else {
          var consumer = JetStream.ConsumerConfiguration(durableName: nil, filterSubject: subject, ackPolicy: .none)
          consumer.deliverPolicy = lastSequence == 0 ? .all : .startSequence(lastSequence + 1)
          consumer.inactiveThreshold = .seconds(30)
          do throws(NATSError) {
            let info = try await jetStream.createOrUpdateConsumer(stream: configuration.tripsStream, consumer)
            consumerName = info.name
            pull = try await jetStream.pullSubscription(stream: configuration.tripsStream, consumer: info.name)
            // Nothing published for this trip yet: make sure someone follows it.
            if !submitted && lastSequence == 0 && info.numPending == 0 {
              submitted = await Self.submitFollow(name, jetStream, configuration)
            }
          } catch {
            logger.debug("cannot read \(subject) yet", metadata: ["error": "\(error)"])
            if let made = consumerName, pull == nil {
              try? await jetStream.deleteConsumer(stream: configuration.tripsStream, consumer: made)
              consumerName = nil
            }
            try? await Task.sleep(for: .seconds(1))
          }
          continue
        }
        let messages: [JetStream.Message]
        do throws(NATSError) {
          messages = try await reading.fetch(batch: 256, timeout: .seconds(1))
        } catch {
          logger.debug("reading \(subject) failed", metadata: ["error": "\(error)"])
          if !error.isTransient { pull = nil }
          try? await Task.sleep(for: .milliseconds(250))
          continue
        }
        if messages.isEmpty {
          // Idle, or the consumer is gone (its server restarted): check now and then.
          emptyFetches += 1
          if emptyFetches % 10 == 0, let consumerName {
            do throws(NATSError) {
              _ = try await jetStream.consumerInfo(stream: configuration.tripsStream, consumer: consumerName)
            } catch {
              if error.code == .notFound || error.jetStreamCode == 10014 { pull = nil }
            }
          }
          continue
        }
        emptyFetches = 0
        for message in messages {
          guard let metadata = message.metadata, metadata.streamSequence > lastSequence else { continue }
          lastSequence = metadata.streamSequence
          let update: TripUpdate
          do {
            update = try TripUpdate(serializedBytes: message.data)
          } catch {
            logger.warning("undecodable update on \(subject) skipped", metadata: ["error": "\(error)"])
            continue
          }
          let isFinal =
            message.headers[RelayNaming.finalHeader] == "true"
            || update.trip.map { $0.tripStatus == .complete || $0.tripStatus == .canceled } == true
          let catchingUp = metadata.numPending > 0
          scheduler.execute { hub.apply(update, isFinal: isFinal, catchingUp: catchingUp) }
          if isFinal {
            sawFinal = true
            break
          }
          // The history read to its end without a final state: the trip may not be followed.
          if !submitted && metadata.numPending == 0 {
            submitted = await Self.submitFollow(name, jetStream, configuration)
          }
        }
      }
      if let consumerName {
        try? await jetStream.deleteConsumer(stream: configuration.tripsStream, consumer: consumerName)
      }
    }
  }

  func stopReading() {
    reader?.cancel()
    reader = nil
  }

  private static func submitFollow(
    _ name: TripName, _ jetStream: JetStream, _ configuration: RelayConfiguration
  ) async -> Bool {
    do throws(NATSError) {
      _ = try await TripRelay.submit(name, to: jetStream, followStream: configuration.followStream)
      return true
    } catch {
      configuration.logger.warning(
        "cannot enqueue a follow request for a watched trip", metadata: ["trip": "\(name)", "error": "\(error)"])
      return false
    }
  }
}
