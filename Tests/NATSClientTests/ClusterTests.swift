// Tests/NATSClientTests/ClusterTests.swift - a 3-node JetStream cluster losing a node (SIGKILL) and getting it back

import NATSClient
import NATSTestSupport
import TestSupport
import Testing

extension NATSClientTests {
  @Suite("JetStream on a 3-node cluster")
  struct ClusterTests {
    @Test("replicas 3: with the streams' leader killed, publishing and fetching go on; it rejoins after a restart")
    func nodeKilledAndRestarted() async throws {
      try await withNATSCluster(nodes: 3, name: "relay-test") { cluster in
        let connection = try await connect(cluster.urls, name: "cluster-test")
        let js = try connection.jetStream()
        _ = try await retrying {
          try await js.createOrUpdateStream(
            JetStream.StreamConfiguration(name: "FOLLOW", subjects: ["follow.>"], retention: .workQueue, replicas: 3))
        }
        let trips = try await retrying {
          try await js.createOrUpdateStream(
            JetStream.StreamConfiguration(name: "TRIPS", subjects: ["trips.>"], replicas: 3))
        }
        #expect(trips.configuration.replicas == 3)
        var consumer = JetStream.ConsumerConfiguration(durableName: "relays")
        consumer.ackWait = .seconds(5)
        let consumerInfo = try await retrying { try await js.createOrUpdateConsumer(stream: "FOLLOW", consumer) }
        #expect(consumerInfo.cluster?.replicas.count == 2)
        let subscription = try await js.pullSubscription(stream: "FOLLOW", consumer: "relays")
        let known = try await connection.knownServers()
        #expect(Set(cluster.urls).isSubset(of: Set(known)), "\(known)")

        // Before: 50 follow requests and 50 trip updates.
        try await publishAll(js, subject: "follow.p", ids: 0..<50)
        try await publishAll(js, subject: "trips.p", ids: 0..<50)
        var processed = Set<String>()
        try await drain(subscription, into: &processed, until: 50)
        #expect(processed.count == 50)

        // A second client on the server that leads the stream: killing that server takes both its
        // connection and the stream's leader (the other two elect a new one).
        let before = try await retrying { try await js.streamInfo("FOLLOW") }
        let leaderName = try #require(before.cluster?.leader)
        let victim = try #require(cluster.servers.first { $0.configuration.name == leaderName })
        let onLeader = try await connect([victim.url] + cluster.urls.filter { $0 != victim.url }, name: "on-leader") {
          $0.randomizeServers = false
        }
        #expect(await onLeader.connectedServer() == victim.url)
        let leaderJS = try onLeader.jetStream()
        let leaderSubscription = try await leaderJS.pullSubscription(stream: "FOLLOW", consumer: "relays")
        let events = onLeader.events()
        victim.kill()
        let reconnected = await firstEvent(in: events, timeout: .seconds(30)) {
          if case .reconnected = $0 { return true } else { return false }
        }
        guard case .reconnected(let newServer) = reconnected else {
          Issue.record("the client on the killed server did not reconnect: \(String(describing: reconnected))")
          return
        }
        #expect(newServer != nil && newServer != victim.url)

        // During: 50 more of each, with retries (the same Nats-Msg-Id makes a retry safe), and fetching.
        // Both clients publish and fetch: the one that lost its server, and the other.
        try await publishAll(leaderJS, subject: "follow.p", ids: 50..<75)
        try await publishAll(js, subject: "follow.p", ids: 75..<100)
        try await publishAll(leaderJS, subject: "trips.p", ids: 50..<100)
        try await drain(leaderSubscription, into: &processed, until: 75)
        try await drain(subscription, into: &processed, until: 100)
        #expect(processed == Set((0..<100).map { "follow.p-\($0)" }))
        let during = try await retrying { try await js.streamInfo("FOLLOW") }
        #expect(during.cluster?.leader != nil)
        #expect(during.cluster?.leader != leaderName)
        // Every request acked once: the work queue empties (acks reach the replicas a little later).
        let emptied = await eventually(timeout: .seconds(30), interval: .milliseconds(250)) {
          (try? await js.streamInfo("FOLLOW").state.messages) == 0
        }
        #expect(emptied)
        let tripsRead = try await retrying { try await js.readStream("TRIPS", timeout: .seconds(20)) }
        #expect(tripsRead.count == 100)
        #expect(Set(tripsRead.compactMap(\.messageID)) == Set((0..<100).map { "trips.p-\($0)" }))

        // After: the killed server comes back with its store and catches up.
        try victim.restart()
        try await victim.waitUntilHealthy(timeout: .seconds(90))
        let caughtUp = await eventually(timeout: .seconds(60), interval: .milliseconds(500)) {
          guard let info = try? await js.streamInfo("TRIPS"), let cluster = info.cluster else { return false }
          return cluster.leader != nil && cluster.replicas.count == 2
            && cluster.replicas.allSatisfy { $0.isCurrent && !$0.isOffline }
        }
        #expect(caughtUp)
        try await publishAll(js, subject: "follow.p", ids: 100..<110)
        try await drain(subscription, into: &processed, until: 110)
        #expect(processed.count == 110)
        await onLeader.close()
        await connection.close()
      }
    }
  }
}

/// Runs `operation` until it succeeds or fails with a non-transient error; transient errors (no leader yet,
/// a lost connection, a timeout) are retried for up to `timeout`.
private func retrying<Result: Sendable>(
  timeout: Duration = .seconds(60), _ operation: () async throws -> Result
) async throws -> Result {
  let deadline = ContinuousClock.now + timeout
  while true {
    do {
      return try await operation()
    } catch let error as NATSError {
      let retriable =
        error.isTransient || error.jetStreamCode == 10008 /* JSClusterNotAvailErr */
        || error.message.contains("leader")
      guard retriable, ContinuousClock.now < deadline else { throw error }
      try? await Task.sleep(for: .milliseconds(250))
    }
  }
}

/// Publishes `subject.N` messages with `Nats-Msg-Id` `subject-N`, each retried until it is acked.
private func publishAll(_ js: JetStream, subject: String, ids: Range<Int>) async throws {
  for id in ids {
    _ = try await retrying {
      try await js.publish(subject: "\(subject).\(id)", data: Array("\(id)".utf8), messageID: "\(subject)-\(id)")
    }
  }
}

/// Fetches and acks (confirmed) until `processed` holds `count` message IDs, at most 90 s; fetch errors
/// during an election are retried.
private func drain(_ subscription: JetStream.PullSubscription, into processed: inout Set<String>, until count: Int)
  async throws
{
  let deadline = ContinuousClock.now + .seconds(90)
  while processed.count < count && ContinuousClock.now < deadline {
    let messages: [JetStream.Message]
    do {
      messages = try await subscription.fetch(batch: 20, timeout: .seconds(2))
    } catch {
      try await Task.sleep(for: .milliseconds(250))
      continue
    }
    for message in messages {
      do {
        try await message.ackSync(timeout: .seconds(5))
        if let id = message.messageID { processed.insert(id) }
      } catch {
        // Not confirmed: the message comes back after AckWait and is processed then.
      }
    }
  }
}
