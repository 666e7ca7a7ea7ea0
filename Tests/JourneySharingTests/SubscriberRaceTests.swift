// Tests/JourneySharingTests/SubscriberRaceTests.swift - register and unregister from any thread, in any order
//
// Regression tests for three defects: a registration and an unregistration racing on one model could
// reach the follower in reverse order and leave it following for nobody; two subscribers unregistering
// each other from their callbacks spun forever, each waiting for the other's delivery to end; and a
// subscriber that unregistered itself inside a callback still got the rest of that delivery's callbacks.
// The first two follow a server nobody can reach, the third FleetSim's service, in memory.

import FleetEngineMessages
import FleetSim
import Foundation
import GRPCProtocol
import JourneySharing
import Primitives
import TestSupport
import Testing

/// Never asked: its transport is unreachable.
private final class NoService: GRPCService {
  func handle(_ call: any GRPCServerCallContext) {
    call.finish(GRPCStatus(code: .unimplemented, message: "no service"))
  }
}

/// Services whose server nobody can reach, in memory: every call fails UNAVAILABLE at once, as one to a port
/// nothing listens on does. Following starts (and keeps retrying: the retries wait on a virtual clock that
/// never moves), so a model's state says whether its follower thinks anyone is registered.
private struct ServicesWithoutServer {
  let scheduler = VirtualScheduler()
  let services: JourneySharingServices

  init(deliveryThreads: Int = 4) {
    let transport = InMemoryTransport(service: NoService(), scheduler: scheduler)
    transport.setUnreachable(GRPCStatus(code: .unavailable, message: "connection refused"))
    var configuration = followClientConfiguration(port: 1)
    configuration.deliveryThreads = deliveryThreads
    services = JourneySharingServices(configuration: configuration, transport: transport)
  }

  func shutdown() async {
    await services.shutdown()
    scheduler.waitUntilIdle()
    scheduler.shutdown()
  }
}

/// A subscriber that does nothing.
private final class Quiet: TripModelSubscriber {}

/// Blocks until `count` parties arrived (a one-shot barrier for two delivery threads).
private final class Rendezvous: Sendable {
  private let arrived = Locked(0)
  private let count: Int
  init(count: Int) { self.count = count }
  func arriveAndWait(timeout: Double = 10) -> Bool {
    arrived.withLock { $0 += 1 }
    let end = unixTime() + timeout
    while arrived.withLock({ $0 }) < count {
      if unixTime() > end { return false }
      usleep(100)
    }
    return true
  }
}

/// On its first error callback, meets its partner there, then unregisters the partner's subscriber.
private final class MutualCloser: TripModelSubscriber {
  let rendezvous: Rendezvous
  private let state = Locked<(other: (TripModel, any TripModelSubscriber)?, fired: Bool, done: Bool, met: Bool)>(
    (nil, false, false, false))

  init(rendezvous: Rendezvous) { self.rendezvous = rendezvous }

  func setPartner(_ model: TripModel, _ subscriber: any TripModelSubscriber) {
    state.withLock { $0.other = (model, subscriber) }
  }

  var done: Bool { state.withLock { $0.done } }
  var met: Bool { state.withLock { $0.met } }

  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) {
    let other = state.withLock { state -> (TripModel, any TripModelSubscriber)? in
      if state.fired { return nil }
      state.fired = true
      return state.other
    }
    guard let (model, subscriber) = other else { return }
    // Both subscribers are inside a callback now, on two delivery threads.
    let met = rendezvous.arriveAndWait()
    model.unregisterSubscriber(subscriber)
    state.withLock {
      $0.met = met
      $0.done = true
    }
  }
}

/// Records every callback; unregisters itself in the first whole-trip callback it gets.
private final class SelfCloser: TripModelSubscriber {
  private let log = Locked<[String]>([])
  var events: [String] { log.withLock { $0 } }

  private func record(_ name: String) { log.withLock { $0.append(name) } }

  func tripModel(_ tripModel: TripModel, didUpdate modelState: TripModelState) { record("modelState") }
  func tripModel(
    _ tripModel: TripModel, didUpdateSnapshot snapshot: TripSnapshot, updatedPropertyFields: TripPropertyFields
  ) { record("snapshot") }
  func tripModel(_ tripModel: TripModel, didUpdate trip: Trip?, updatedPropertyFields: TripPropertyFields) {
    record("trip")
    if updatedPropertyFields.count(ofMembersIn: [.tripStatus, .pickupLocation, .dropoffLocation, .remainingWaypoints])
      >= 2
    {
      tripModel.unregisterSubscriber(self)
      record("unregistered")
    }
  }
  func tripModel(_ tripModel: TripModel, didUpdate tripStatus: TripStatus) { record("tripStatus") }
  func tripModel(_ tripModel: TripModel, didUpdate vehicleLocation: VehicleLocation?) { record("vehicleLocation") }
  func tripModel(_ tripModel: TripModel, didUpdatePickupLocation pickupLocation: TerminalLocation?) {
    record("pickupLocation")
  }
  func tripModel(_ tripModel: TripModel, didUpdateDropoffLocation dropoffLocation: TerminalLocation?) {
    record("dropoffLocation")
  }
  func tripModel(_ tripModel: TripModel, didUpdateRemaining remainingWaypoints: [TripWaypoint]?) {
    record("remainingWaypoints")
  }
  func tripModel(_ tripModel: TripModel, didUpdateActiveRoute activeRoute: [LatLng]?) { record("activeRoute") }
  func tripModel(_ tripModel: TripModel, didFailUpdateTripWithError error: (any Error)?) { record("error") }
}

extension TripPropertyFields {
  fileprivate func count(ofMembersIn members: [TripPropertyFields]) -> Int { members.count { contains($0) } }
}

@Suite("Subscriber races (in memory)", .timeLimit(.minutes(2)))
struct SubscriberRaceTests {
  @Test("20,000 register/unregister races on one model never leave it following for nobody")
  func registerUnregisterRacesLeakNoFollow() async throws {
    let unreachable = ServicesWithoutServer()
    let services = unreachable.services
    let model = services.tripService.tripModel(forTripName: "providers/\(followProvider)/trips/trip-1")
    let subscriber = Quiet()
    let rounds = 20_000
    var leaks = 0
    for round in 0..<rounds {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { model.register(subscriber) }
        group.addTask { model.unregisterSubscriber(subscriber) }
      }
      model.unregisterSubscriber(subscriber)
      // Every 500 rounds, and at the end: nobody is registered, so the follower must stop.
      if round % 500 == 499 {
        #expect(model.subscriberCount == 0)
        if await model.modelState() != .inactive { leaks += 1 }
      }
    }
    #expect(leaks == 0, "\(leaks) checks found the model following with no subscriber")
    await unreachable.shutdown()
  }

  @Test("Two subscribers unregistering each other from their callbacks at the same time both return")
  func mutualUnregisterDoesNotLivelock() async throws {
    let unreachable = ServicesWithoutServer(deliveryThreads: 4)
    let services = unreachable.services
    for round in 0..<20 {
      let rendezvous = Rendezvous(count: 2)
      let first = MutualCloser(rendezvous: rendezvous)
      let second = MutualCloser(rendezvous: rendezvous)
      // Two models, so the two deliveries run on two delivery threads at once.
      let a = services.tripService.tripModel(forTripName: "providers/\(followProvider)/trips/a-\(round)")
      let b = services.tripService.tripModel(forTripName: "providers/\(followProvider)/trips/b-\(round)")
      first.setPartner(b, second)
      second.setPartner(a, first)
      a.register(first)
      b.register(second)
      // Each gets UNAVAILABLE (nothing answers), meets the other inside its callback, and unregisters it. (The
      // errors need no virtual time: this waits for the delivery threads, in real time.)
      let finished = await eventually(timeout: .seconds(30)) { first.done && second.done }
      #expect(finished, "round \(round): the mutual unregistration did not return")
      #expect(first.met && second.met, "round \(round): the two callbacks did not overlap")
      #expect(a.subscriberCount == 0 && b.subscriberCount == 0)
      if !finished { break }
    }
    await unreachable.shutdown()
  }

  @Test("A subscriber that unregisters itself inside a callback gets none of the rest of that delivery")
  func noCallbackAfterSelfUnregister() async throws {
    try await withFollowFixture(
      .inMemory, simulation: { followSimConfiguration(simulatedNow: followNeverStarts, now: $0) }
    ) { fixture in
      let subscriber = SelfCloser()
      let model = fixture.model(0)
      model.register(subscriber)
      #expect(await fixture.wait { subscriber.events.contains("unregistered") })
      // Give anything still queued time to (wrongly) arrive.
      await fixture.pass(.milliseconds(300))
      let events = subscriber.events
      let index = try #require(events.firstIndex(of: "unregistered"))
      #expect(index == events.count - 1, "callbacks after unregistering: \(events[index...]) of \(events)")
      #expect(events[..<index].contains("trip"))
      #expect(model.subscriberCount == 0)
      #expect(await model.modelState() == .inactive)
    }
  }
}
