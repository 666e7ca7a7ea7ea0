// Benchmarks/Sources/tripload/Clients.swift - the two clients tripload compares
//
// Both follow trips `providers/load/trips/trip-{i}`, i < trips, on a FleetSim in load mode,
// and record every update in a LoadRecorder: ours through the public consumer API (one
// subscriber per trip, the whole-snapshot callback, which carries the update's send time),
// grpc-swift-2's through GRPCSwiftFollower (one server-streaming call per trip, swift-protobuf
// decoding of every message).

import CoreMetrics
import FleetEngineMessages
import Foundation
import GRPCSwiftFollower
import HTTP2Transport
import JourneySharing
import Logging
import SwiftProtobuf
import SwiftProtobufMessages
import Synchronization

/// A client under test.
protocol LoadClient: Sendable {
  /// Starts following every trip; returns once following has been requested (not completed).
  func start(trips: Int, recorder: LoadRecorder) async throws
  /// Errors the client has seen so far (nil when the client cannot tell without stopping).
  func errorCount() -> Int?
}

func tripName(_ index: Int) -> String { "providers/load/trips/trip-\(index)" }

/// The errors subscribers were told of, by description (the first 20 kinds), for the client's closing lines.
let errorKinds = Mutex<[String: Int]>([:])

func tallyError(_ error: (any Error)?) {
  let text = error.map { "\($0)" } ?? "nil"
  errorKinds.withLock { kinds in
    if kinds[text] != nil || kinds.count < 20 { kinds[text, default: 0] += 1 }
  }
}

/// One trip's subscriber: records the update behind each delivered snapshot.
final class RecordingSubscriber: LoadSubscriber {
  let index: Int
  let recorder: LoadRecorder
  let errors: Atomic<Int>

  init(index: Int, recorder: LoadRecorder) {
    self.index = index
    self.recorder = recorder
    self.errors = Atomic(0)
  }

  var errorCount: Int { errors.load(ordering: .relaxed) }

  func tripModel(
    _ tripModel: TripModel, didUpdateSnapshot snapshot: TripSnapshot, updatedPropertyFields: TripPropertyFields
  ) {
    recorder.record(trip: index, sequence: snapshot.updateSequence, sentAt: snapshot.updateSendTime, now: wallClock())
  }

  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {
    errors.add(1, ordering: .relaxed)
    tallyError(error)
  }
}

/// What this project's load clients give every trip: a subscriber made from the trip's index, counting the
/// errors it is told of.
protocol LoadSubscriber: TripModelSubscriber {
  init(index: Int, recorder: LoadRecorder)
  var errorCount: Int { get }
}

/// This project's client: JourneySharingServices over its own gRPC channel, a `Subscriber` per trip.
final class JourneySharingLoadClient<Subscriber: LoadSubscriber>: LoadClient, @unchecked Sendable {
  let services: JourneySharingServices
  private var subscriptions: [(TripModel, Subscriber)] = []

  init(configuration: JourneySharingConfiguration) throws {
    services = try JourneySharingServices(configuration: configuration)
  }

  func start(trips: Int, recorder: LoadRecorder) async throws {
    subscriptions.reserveCapacity(trips)
    for index in 0..<trips {
      let model = services.tripService.tripModel(forTripName: tripName(index))
      let subscriber = Subscriber(index: index, recorder: recorder)
      model.register(subscriber)
      subscriptions.append((model, subscriber))
    }
  }

  func errorCount() -> Int? {
    subscriptions.reduce(0) { $0 + $1.1.errorCount }
  }
}

/// This project's streaming client, recording every delivered update.
func journeySharingStreamClient(
  host: String, port: Int, connections: Int, deliveryThreads: Int, eventLoops: Int?, readCoalescing: Duration = .zero
) throws -> JourneySharingLoadClient<RecordingSubscriber> {
  var configuration = JourneySharingConfiguration(
    host: host, port: port, security: .plaintext, providerID: "load", fetchMode: .stream,
    logger: Logger(label: "tripload"))
  configuration.connection.maxConnections = connections
  if eventLoops != nil || readCoalescing > .zero {
    configuration.connection.eventLoops = JourneySharingEventLoops(
      loopCount: eventLoops ?? JourneySharingEventLoops.coreCount, readCoalescing: readCoalescing)
  }
  configuration.deliveryThreads = deliveryThreads
  // A million trips asked for at once wait minutes for their streams; the default 30 s of silence before a
  // stream's first messages would cancel and restart queued calls over and over (the load server is never
  // silent once a stream is open, and grpc-swift-2's client has no such watchdog).
  configuration.streamWatchdog = StreamWatchdog(initial: .seconds(1_200))
  return try JourneySharingLoadClient(configuration: configuration)
}

/// The grpc-swift-2 client (NIO HTTP/2 transport, raw-bytes serializer, swift-protobuf decoding).
final class GRPCSwiftLoadClient: LoadClient, @unchecked Sendable {
  let follower: GRPCSwiftFollower
  private var task: Task<GRPCSwiftFollower.Summary, any Error>?

  init(host: String, port: Int, connections: Int) {
    follower = GRPCSwiftFollower(host: host, port: port, connections: connections)
  }

  func start(trips: Int, recorder: LoadRecorder) async throws {
    let names = (0..<trips).map(tripName)
    let follower = follower
    task = Task {
      try await follower.follow(tripNames: names) { trip, update, receivedAt in
        let sent = update.hasSendTime ? Double(update.sendTime.seconds) + Double(update.sendTime.nanos) / 1e9 : nil
        recorder.record(trip: trip, sequence: update.sequence, sentAt: sent, now: receivedAt)
      }
    }
  }

  /// Stream errors are counted inside `follow` and reported only when it returns, which for 100,000
  /// open streams takes longer than the measurement: unknown here (restarts are counted instead).
  func errorCount() -> Int? { nil }
}

/// The small update the load server sends, for sizing h2load's payload alike.
enum TripUpdateSample {
  static func make() -> TripUpdate {
    var location = VehicleLocation()
    location.location = LatLng(latitude: 52.37123456, longitude: 4.89123456)
    location.heading = Int32Value(123)
    location.updateTime = Timestamp(unixTime: 1_750_000_000.123456)
    var trip = Trip()
    trip.lastLocation = location
    trip.remainingDistanceMeters = Int32Value(4321)
    trip.etaToFirstWaypoint = Timestamp(seconds: 1_750_000_600)
    var update = TripUpdate()
    update.trip = trip
    update.updatedFields = [11, 12, 13]
    update.sendTime = Timestamp(unixTime: 1_750_000_000.123456)
    return update
  }
}

// MARK: - Polling

/// Records the library's poll round trips (its `poll_round_trip_seconds` timer) as answered polls; every
/// other metric goes nowhere.
final class PollMetricsFactory: MetricsFactory, TimerHandler, @unchecked Sendable {
  let recorder: LoadRecorder

  init(recorder: LoadRecorder) { self.recorder = recorder }

  func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
    label.hasSuffix("poll_round_trip_seconds") ? self : NOOPMetricsHandler.instance
  }
  func recordNanoseconds(_ duration: Int64) { recorder.recordPoll(seconds: Double(duration) / 1e9) }

  func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
    NOOPMetricsHandler.instance
  }
  func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
    NOOPMetricsHandler.instance
  }
  func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler { NOOPMetricsHandler.instance }
  func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
    NOOPMetricsHandler.instance
  }
  func destroyCounter(_ handler: any CounterHandler) {}
  func destroyMeter(_ handler: any MeterHandler) {}
  func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
  func destroyRecorder(_ handler: any RecorderHandler) {}
  func destroyTimer(_ handler: any TimerHandler) {}
}

/// One polled trip's subscriber: marks the trip started at its first snapshot, counts errors.
final class PollingSubscriber: LoadSubscriber {
  let index: Int
  let recorder: LoadRecorder
  let errors = Atomic<Int>(0)

  init(index: Int, recorder: LoadRecorder) {
    self.index = index
    self.recorder = recorder
  }

  var errorCount: Int { errors.load(ordering: .relaxed) }

  func tripModel(
    _ tripModel: TripModel, didUpdateSnapshot snapshot: TripSnapshot, updatedPropertyFields: TripPropertyFields
  ) {
    recorder.markStarted(trip: index)
  }

  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {
    errors.add(1, ordering: .relaxed)
    tallyError(error)
  }
}

/// This project's client polling Fleet Engine's unary GetTrip (with the *_version fields), with no
/// request budget (the benchmark's server is not Fleet Engine and has no quota).
func journeySharingPollClient(
  host: String, port: Int, connections: Int, deliveryThreads: Int, interval: Duration, recorder: LoadRecorder
) throws -> JourneySharingLoadClient<PollingSubscriber> {
  var configuration = JourneySharingConfiguration(
    host: host, port: port, security: .plaintext, providerID: "load", fetchMode: .poll, pollInterval: interval,
    logger: Logger(label: "tripload"))
  configuration.connection.maxConnections = connections
  configuration.deliveryThreads = deliveryThreads
  configuration.maxRequestsPerSecond = nil
  configuration.metricsFactory = PollMetricsFactory(recorder: recorder)
  return try JourneySharingLoadClient(configuration: configuration)
}

/// The grpc-swift-2 unary client polling the same trips the same way (GRPCSwiftPoller).
final class GRPCSwiftPollClient: LoadClient, @unchecked Sendable {
  let poller: GRPCSwiftPoller
  private var task: Task<Int, any Error>?

  init(host: String, port: Int, connections: Int, interval: Duration) {
    poller = GRPCSwiftPoller(host: host, port: port, connections: connections, interval: interval)
  }

  func start(trips: Int, recorder: LoadRecorder) async throws {
    let names = (0..<trips).map(tripName)
    let poller = poller
    task = Task {
      try await poller.poll(tripNames: names) { trip, seconds in
        recorder.markStarted(trip: trip)
        recorder.recordPoll(seconds: seconds)
      }
    }
  }

  /// Failed polls are counted inside `poll` and reported only when it returns: unknown here.
  func errorCount() -> Int? { nil }
}
