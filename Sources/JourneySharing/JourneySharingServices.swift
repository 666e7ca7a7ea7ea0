// Sources/JourneySharing/JourneySharingServices.swift - the entry point and the trip service

public import GRPCProtocol
public import HTTP2Transport
import Logging
import Synchronization
import UpdatePipeline

/// The library's entry point: the counterpart of the SDK's `GMTCServices`, made for
/// a server process rather than a shared singleton.
///
/// ```swift
/// let services = try JourneySharingServices(configuration: JourneySharingConfiguration(
///   host: "fleetengine.googleapis.com", port: 443, providerID: "my-project",
///   authorization: MyTokenProvider()))
/// let tripModel = services.tripService.tripModel(forTripName: "providers/my-project/trips/trip-7")
/// tripModel.register(self)
/// // … later
/// tripModel.unregisterSubscriber(self)
/// await services.shutdown()
/// ```
public final class JourneySharingServices: Sendable {
  /// Trip models by name.
  public let tripService: TripService
  let core: ServicesCore

  /// Creates the services; no connection is made until a trip is followed.
  ///
  /// - Throws: ``GRPCError`` (`INVALID_ARGUMENT`) when the TLS settings cannot be loaded.
  public init(configuration: JourneySharingConfiguration) throws(GRPCError) {
    core = try ServicesCore(configuration: configuration)
    tripService = TripService(core: core)
  }

  /// The connection pool's counters: connections open, calls active and queued, connection attempts
  /// and failures, and the backoff delays chosen after recent failures.
  public func connectionStats() async -> GRPCChannelStats {
    await core.channel.stats()
  }

  /// Stops following every trip and closes the connections.
  public func shutdown() async {
    for model in tripService.allTripModels { model.follower.stopAll() }
    await core.channel.shutdown()
    core.executor.shutdown()
  }
}

/// What every trip model shares: configuration, channel, delivery threads.
final class ServicesCore: Sendable {
  let configuration: JourneySharingConfiguration
  let channel: GRPCChannel
  let executor: DeliveryExecutor
  var logger: Logger { configuration.logger }

  init(configuration: JourneySharingConfiguration) throws(GRPCError) {
    self.configuration = configuration
    var channelConfiguration = configuration.channel
    channelConfiguration.security = configuration.security
    channel = try GRPCChannel(
      host: configuration.host, port: configuration.port, configuration: channelConfiguration,
      logger: configuration.logger)
    executor = DeliveryExecutor(threads: max(1, configuration.deliveryThreads), name: "journeysharing-delivery")
  }

  /// Loop state: whether a wake of the delivery threads is scheduled.
  private nonisolated(unsafe) var deliveryWakeScheduled = false

  /// After delivery jobs were queued without waking: wakes the delivery threads once the event loop has
  /// handled the current event (a socket read with any number of messages) rather than once per queued
  /// delivery, one futex wake per batch instead of one per message (the executor itself wakes one every
  /// ``DeliveryExecutor/wakeBatch`` jobs meanwhile). Event loop only.
  func requestDeliveryWake() {
    channel.loop.assertInEventLoop()
    guard !deliveryWakeScheduled else { return }
    deliveryWakeScheduled = true
    channel.loop.executeSoon { [self] in
      deliveryWakeScheduled = false
      executor.wakeIfNeeded()
    }
  }
}

/// Hands out trip models: the counterpart of the SDK's `GMTCTripService`.
///
/// A model is kept while it is in use (a subscriber or an update sequence is registered) or while the
/// caller holds it; after that it is let go, with its trip state, so a process that follows trip after
/// trip for days holds only the trips it follows now. Asking again for such a name gives a new model.
public final class TripService: Sendable {
  let core: ServicesCore
  private let models = Locked<Models>(Models())

  /// The models by name, held weakly (a registered model holds itself, see ``TripModel/register(_:)``).
  private struct Models {
    struct Entry {
      weak var model: TripModel?
    }
    var byName: [String: Entry] = [:]
    /// Entries whose models are gone are swept when the table has doubled since the last sweep.
    var sweepAt = 64

    mutating func sweepIfDue() {
      guard byName.count >= sweepAt else { return }
      byName = byName.filter { $0.value.model != nil }
      sweepAt = max(64, byName.count * 2)
    }
  }

  init(core: ServicesCore) { self.core = core }

  /// The model of `tripName`, `providers/{provider_id}/trips/{trip_id}`: the same name gives the same
  /// model for as long as that model is held or has subscribers. An invalid name still gives a model,
  /// whose subscribers get INVALID_ARGUMENT at once (nothing is sent).
  public func tripModel(forTripName tripName: String) -> TripModel {
    models.withLock { models in
      if let model = models.byName[tripName]?.model { return model }
      models.sweepIfDue()
      let model = TripModel(tripName: tripName, services: core)
      models.byName[tripName] = Models.Entry(model: model)
      return model
    }
  }

  /// Whether a model for `tripName` exists (is held or has subscribers).
  public func hasTripModel(forTripName tripName: String) -> Bool {
    models.withLock { $0.byName[tripName]?.model != nil }
  }

  /// Every model that exists now.
  public var allTripModels: [TripModel] {
    models.withLock { $0.byName.values.compactMap(\.model) }
  }
}
