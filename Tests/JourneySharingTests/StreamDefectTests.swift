// Tests/JourneySharingTests/StreamDefectTests.swift - streams that end early, go silent, or race a refresh
//
// Regression tests on the in-memory transport and a virtual clock (so counts of calls over simulated
// minutes are exact and take milliseconds): a server that ends every stream OK after one update made
// following reconnect at once, thousands of times a second, with no error for subscribers; a server that
// stopped sending on an open stream went unnoticed forever; and a refresh() answered after newer streamed
// updates put the older trip back.

import FleetEngineMessages
import GRPCProtocol
import Primitives
import TestSupport
import Testing
import UpdatePipeline

@testable import JourneySharing

/// A streaming GetTrip whose behaviour a test scripts, and a unary GetTrip; counts calls.
private final class ScriptedStreamServer: GRPCService {
  struct Behaviour: Sendable {
    /// Updates after the first (whole) trip, one a second, each moving the vehicle's fix one second on.
    var updates = 0
    /// After the updates: end the stream OK (true) or keep it open without sending (false).
    var endsAfterUpdates = true
    /// How long a unary GetTrip is held before it is answered.
    var unaryDelay: Duration = .zero
    /// After this many updates, the next comes `pause` later than usual (a server that fell behind).
    var pauseAfter: Int?
    var pause: Duration = .zero
    /// The time between updates, and before the first one (nil: the same).
    var interval: Duration = .seconds(1)
    var firstUpdateAfter: Duration?
  }

  let behaviour: Behaviour
  private let counts = Locked<(streams: Int, unary: Int)>((0, 0))

  init(_ behaviour: Behaviour) { self.behaviour = behaviour }

  var streams: Int { counts.withLock { $0.streams } }
  var unaryCalls: Int { counts.withLock { $0.unary } }

  /// The trip as of `time` (Unix seconds): the vehicle's fix carries the time.
  static func trip(name: String, at time: Double) -> Trip {
    var trip = Trip()
    trip.name = name
    trip.tripStatus = .enrouteToPickup
    var location = VehicleLocation()
    location.location = LatLng(latitude: 52.37, longitude: 4.90)
    location.updateTime = Timestamp(unixTime: time.rounded(.down))
    trip.lastLocation = location
    return trip
  }

  func handle(_ call: any GRPCServerCallContext) {
    switch call.path {
    case FleetEngineMethods.streamingGetTrip:
      counts.withLock { $0.streams += 1 }
      guard let request = try? StreamTripRequest(serializedBytes: call.request) else { return }
      var first = TripUpdate()
      first.fullTrip = true
      first.trip = Self.trip(name: request.name, at: call.scheduler.unixTime)
      call.send(first.serializedBytes())
      sendUpdates(call, name: request.name, left: behaviour.updates)
    case FleetEngineMethods.unaryGetTrip:
      counts.withLock { $0.unary += 1 }
      guard let request = try? GetTripRequest(serializedBytes: call.request) else { return }
      // The trip as of when the call arrived, answered after the delay: older than the stream by then.
      let trip = Self.trip(name: request.name, at: call.scheduler.unixTime)
      call.schedule(after: behaviour.unaryDelay) {
        call.send(trip.serializedBytes())
        call.finish(GRPCStatus(code: .ok, message: ""))
      }
    default:
      call.finish(GRPCStatus(code: .unimplemented, message: ""))
    }
  }

  private func sendUpdates(_ call: any GRPCServerCallContext, name: String, left: Int) {
    guard left > 0 else {
      if behaviour.endsAfterUpdates { call.finish(GRPCStatus(code: .ok, message: "")) }
      return
    }
    let sent = behaviour.updates - left
    let gap = sent == 0 ? behaviour.firstUpdateAfter ?? behaviour.interval : behaviour.interval
    call.schedule(after: gap + (sent == behaviour.pauseAfter ? behaviour.pause : .zero)) { [self] in
      guard !call.isClosed else { return }
      var update = TripUpdate()
      update.trip = Self.trip(name: name, at: call.scheduler.unixTime)
      update.updatedFields = [11]  // last_location
      call.send(update.serializedBytes())
      sendUpdates(call, name: name, left: left - 1)
    }
  }
}

/// 200 trips followed on `server` with a watchdog that may end 20 streams at once and 10 a second; the subscriber
/// registered on every model records whose stream the watchdog ended.
private func followManyWithWatchdog(
  _ server: ScriptedStreamServer
) -> (VirtualServices, WatchdogEndedTrips, RecordingSubscriber, [TripModel]) {
  let virtual = VirtualServices(service: server) { configuration in
    configuration.streamWatchdog = StreamWatchdog(endingBurst: 20, endingsPerSecond: 10)
  }
  let ended = WatchdogEndedTrips()
  let subscriber = RecordingSubscriber(hook: ended.record)
  let models = (0..<200).map(virtual.model)
  for model in models { model.register(subscriber) }
  return (virtual, ended, subscriber, models)
}

/// The trips whose stream the watchdog ended (a subscriber's hook).
private final class WatchdogEndedTrips: Sendable {
  private let names = Locked<Set<String>>([])

  var count: Int { names.withLock { $0.count } }
  func contains(_ name: String) -> Bool { names.withLock { $0.contains(name) } }

  @Sendable func record(_ model: TripModel, _ event: Recorded) {
    guard case .error(let error) = event, error.message.contains("watchdog") else { return }
    _ = names.withLock { $0.insert(model.tripName) }
  }
}

/// Services on an in-memory transport whose scheduler runs on a virtual clock.
private struct VirtualServices {
  let scheduler = VirtualScheduler()
  let transport: InMemoryTransport
  let services: JourneySharingServices

  init(service: any GRPCService, configure: (inout JourneySharingConfiguration) -> Void = { _ in }) {
    transport = InMemoryTransport(service: service, scheduler: scheduler)
    var configuration = JourneySharingConfiguration(
      host: "in-memory", port: 0, security: .plaintext, providerID: "demo", fetchMode: .stream,
      logger: quietLogger("stream-defects"))
    configuration.deliveryThreads = 2
    configure(&configuration)
    services = JourneySharingServices(configuration: configuration, transport: transport)
  }

  func model(_ index: Int) -> TripModel {
    services.tripService.tripModel(forTripName: "providers/demo/trips/trip-\(index)")
  }

  /// Advances the virtual clock until `condition` holds (true) or `limit` passed (false), in `step`s; the
  /// delivery threads finish what each step queued before the condition is read.
  func advance(until condition: () -> Bool, step: Duration = .milliseconds(50), limit: Duration) async -> Bool {
    var elapsed = Duration.zero
    while true {
      await settle()
      if condition() { return true }
      if elapsed >= limit { return false }
      scheduler.advance(by: step)
      elapsed += step
    }
  }

  /// Waits (real time, briefly) until the scheduler is idle and the delivery threads have run what it queued.
  func settle() async {
    scheduler.waitUntilIdle()
    _ = await eventually(timeout: .seconds(5)) { !services.core.executor.hasPendingWork }
    scheduler.waitUntilIdle()
  }

  func shutdown() async {
    await services.shutdown()
    scheduler.shutdown()
  }
}

@Suite(
  "Streams that end early, go silent, or race a refresh (in-memory transport, virtual clock)", .timeLimit(.minutes(2)))
struct StreamDefectTests {
  @Test("Streams that end OK after one update: following backs off (no reconnect storm) and reports UNAVAILABLE")
  func earlyOKEndsBackOff() async throws {
    let server = ScriptedStreamServer(ScriptedStreamServer.Behaviour(updates: 1, endsAfterUpdates: true))
    let virtual = VirtualServices(service: server)
    let subscriber = RecordingSubscriber()
    let models = (0..<50).map { virtual.model($0) }
    for model in models { model.register(subscriber) }
    _ = await virtual.advance(until: { false }, step: .milliseconds(100), limit: .seconds(30))
    // With the default backoff (1 s, ×1.6, ±20 %, at most 30 s) a trip retries about 7 times in 30 s; a
    // stream that lived 1 s is no success (it takes 10 s), so the delay keeps growing.
    let perTrip = Double(server.streams) / 50
    print("stream-defects: 50 trips, 30 s, \(server.streams) streams (\(perTrip) per trip)")
    #expect(perTrip <= 9, "\(server.streams) streams for 50 trips in 30 s: reconnecting without backoff")
    #expect(perTrip >= 3)
    for model in models {
      let errors = subscriber.errors(model.tripName)
      #expect(!errors.isEmpty, "no error reported for \(model.tripName)")
      #expect(errors.count >= 3, "\(model.tripName): \(errors.count) errors")
      #expect(
        errors.allSatisfy { $0.code == GRPCStatusCode.unavailable.rawValue && $0.message.contains("ended the stream") })
    }
    for model in models { model.unregisterSubscriber(subscriber) }
    await virtual.shutdown()
  }

  @Test("A stream that goes silent is UNAVAILABLE after the watchdog's timeout, and a new stream starts")
  func silentStreamIsNoticed() async throws {
    let server = ScriptedStreamServer(ScriptedStreamServer.Behaviour(updates: 5, endsAfterUpdates: false))
    let virtual = VirtualServices(service: server)
    let subscriber = RecordingSubscriber()
    let model = virtual.model(0)
    model.register(subscriber)
    // Five updates a second apart, then silence on an open stream: after max(5 s, 4 × 1 s) of it, the
    // watchdog ends the stream and following reconnects after the backoff.
    #expect(await virtual.advance(until: { subscriber.trips().count >= 6 }, limit: .seconds(10)))
    let silentFrom = virtual.scheduler.elapsed
    #expect(await virtual.advance(until: { !subscriber.errors().isEmpty }, limit: .seconds(30)))
    let noticedAfter = virtual.scheduler.elapsed - silentFrom
    #expect(noticedAfter >= .seconds(4) && noticedAfter <= .seconds(7), "noticed after \(noticedAfter)")
    let error = try #require(subscriber.errors().first)
    #expect(error.code == GRPCStatusCode.unavailable.rawValue && error.message.contains("watchdog"), "\(error)")
    #expect(await virtual.advance(until: { server.streams >= 2 }, limit: .seconds(10)))
    model.unregisterSubscriber(subscriber)
    await virtual.shutdown()
  }

  @Test("The gap from the whole trip to the first update does not set the watchdog: updates 10 s apart are not silence")
  func firstGapDoesNotSetTheWatchdog() async throws {
    // The first update half a second after the trip (a server updating on its own clock), then every 10 s: a
    // timeout taken from the first gap (5 s, the minimum) ended the stream before each later update.
    let server = ScriptedStreamServer(
      ScriptedStreamServer.Behaviour(
        updates: 6, endsAfterUpdates: false, interval: .seconds(10), firstUpdateAfter: .milliseconds(500)))
    let virtual = VirtualServices(service: server)
    let subscriber = RecordingSubscriber()
    let model = virtual.model(0)
    model.register(subscriber)
    #expect(
      await virtual.advance(until: { subscriber.trips().count >= 6 }, step: .milliseconds(250), limit: .seconds(60)))
    #expect(subscriber.errors().isEmpty, "\(subscriber.errors())")
    #expect(server.streams == 1)
    model.unregisterSubscriber(subscriber)
    await virtual.shutdown()
  }

  @Test(
    "Streams that go silent together are ended at the watchdog's rate (a burst, then so many a second), not all at once, and each in the end"
  )
  func silentStreamsAreEndedAtTheWatchdogsRate() async throws {
    let server = ScriptedStreamServer(ScriptedStreamServer.Behaviour(updates: 3, endsAfterUpdates: false))
    let (virtual, ended, subscriber, models) = followManyWithWatchdog(server)
    // Every stream: the trip, three updates a second apart, then silence; 5 s later all are due at once.
    #expect(await virtual.advance(until: { ended.count > 0 }, step: .milliseconds(100), limit: .seconds(15)))
    let firstEnding = virtual.scheduler.elapsed
    var most = 0
    let allEnded = await virtual.advance(
      until: {
        let since = Double((virtual.scheduler.elapsed - firstEnding).components.seconds)
        let count = ended.count
        // The burst at once, then 10 a second (one step of slack).
        most = max(most, count - 20 - Int(10 * (since + 1)))
        return count == models.count
      }, step: .milliseconds(100), limit: .seconds(600))
    #expect(allEnded, "\(ended.count) of \(models.count) silent streams ended")
    #expect(most <= 0, "ended \(most) more than the burst and the rate allow")
    for model in models { model.unregisterSubscriber(subscriber) }
    await virtual.shutdown()
  }

  @Test("A server that falls behind for a few seconds costs only the watchdog's burst of streams; the others live on")
  func briefSilenceEndsOnlyTheBurst() async throws {
    // Three updates, then the next 8 s late (9 s of silence against the 5 s timeout), then on as usual.
    let server = ScriptedStreamServer(
      ScriptedStreamServer.Behaviour(updates: 10, endsAfterUpdates: false, pauseAfter: 3, pause: .seconds(8)))
    let (virtual, ended, subscriber, models) = followManyWithWatchdog(server)
    #expect(await virtual.advance(until: { server.streams >= models.count }, limit: .seconds(2)))
    _ = await virtual.advance(until: { false }, step: .milliseconds(100), limit: .seconds(17))
    // Due at 5 s of silence, over by 9 s: the burst and at most 4 s × 10 a second.
    #expect(ended.count >= 20 && ended.count <= 20 + 50, "\(ended.count) streams ended")
    let lived = models.filter { !ended.contains($0.tripName) }
    #expect(lived.count >= models.count - 70)
    for model in lived {
      // The whole trip, the three updates before the pause and the ones after it, on one stream.
      #expect(subscriber.trips(model.tripName).count >= 7, "\(model.tripName)")
    }
    #expect(server.streams < models.count + 80, "\(server.streams) streams for \(models.count) trips")
    for model in models { model.unregisterSubscriber(subscriber) }
    await virtual.shutdown()
  }

  @Test("refresh() beside a stream never moves the trip back: an answer older than streamed updates is dropped")
  func refreshNeverMovesStateBackwards() async throws {
    let server = ScriptedStreamServer(
      ScriptedStreamServer.Behaviour(updates: 20, endsAfterUpdates: false, unaryDelay: .seconds(3)))
    let virtual = VirtualServices(service: server)
    let subscriber = RecordingSubscriber()
    let model = virtual.model(0)
    model.register(subscriber)
    #expect(await virtual.advance(until: { subscriber.trips().count >= 3 }, limit: .seconds(10)))
    // The refresh's answer is the trip as of now, sent 3 s later, after three newer streamed updates.
    model.refresh()
    #expect(await virtual.advance(until: { server.unaryCalls == 1 }, limit: .seconds(1)))
    _ = await virtual.advance(until: { false }, limit: .seconds(6))
    let times = subscriber.trips().compactMap { $0.trip?.lastLocation?.updateTime?.unixTime }
    #expect(times.count >= 8)
    #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }, "the vehicle's fix went back: \(times)")
    let snapshot = try #require(await model.currentSnapshot())
    #expect(snapshot.trip.lastLocation?.updateTime?.unixTime == times.last)
    model.unregisterSubscriber(subscriber)
    await virtual.shutdown()
  }

  @Test("A stream that stayed up past healthyStreamLifetime counts as a success: the next delay starts over")
  func healthyStreamResetsTheBackoff() async throws {
    // 15 updates a second apart (a stream up 15 s), then OK: a healthy stream's end, one failure.
    let server = ScriptedStreamServer(ScriptedStreamServer.Behaviour(updates: 15, endsAfterUpdates: true))
    let virtual = VirtualServices(service: server)
    let subscriber = RecordingSubscriber()
    let model = virtual.model(0)
    model.register(subscriber)
    for round in 1...3 {
      #expect(await virtual.advance(until: { server.streams > round }, limit: .seconds(40)), "round \(round)")
      #expect(model.health.consecutiveFailures <= 1, "round \(round): \(model.health)")
    }
    model.unregisterSubscriber(subscriber)
    await virtual.shutdown()
  }
}
