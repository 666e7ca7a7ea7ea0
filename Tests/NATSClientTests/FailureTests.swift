// Tests/NATSClientTests/FailureTests.swift - silent servers, blocking calls side by side, readers across a restart

import NATSClient
import NATSTestSupport
import Synchronization
import TestSupport
import Testing

extension NATSClientTests {
  @Suite("NATS failures and blocking calls")
  struct FailureTests {
    @Test("with the server suspended (SIGSTOP), publishes fail with timeouts instead of hanging; then all is well")
    func suspendedServer() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(JetStream.StreamConfiguration(name: "TRIPS", subjects: ["trips.>"]))
        _ = try await js.publish(subject: "trips.p.before", data: bytes("before"), messageID: "before")

        server.server.suspend()
        let single = await #expect(throws: NATSError.self) {
          _ = try await js.publish(
            JetStream.OutboundMessage(subject: "trips.p.t0", data: [], messageID: "t0"), timeout: .seconds(1))
        }
        #expect(single?.code == .timeout)
        let batch = (1...20).map {
          JetStream.OutboundMessage(subject: "trips.p.t\($0)", data: bytes("\($0)"), messageID: "t\($0)")
        }
        let results = await js.publish(batch: batch, timeout: .seconds(1))
        #expect(results.count == 20)
        let codes = results.map { result -> NATSError.Code? in
          if case .failure(let error) = result { return error.code }
          return nil
        }
        #expect(codes.allSatisfy { $0 == .timeout }, "\(codes)")
        server.server.resume()

        // The same messages again: each stored once, whether or not the server got them before it froze.
        let retried = await js.publish(
          batch: [JetStream.OutboundMessage(subject: "trips.p.t0", data: [], messageID: "t0")] + batch,
          timeout: .seconds(10))
        #expect(retried.allSatisfy { (try? $0.get()) != nil })
        let info = try await js.streamInfo("TRIPS")
        #expect(info.state.messages == 22)
        await connection.close()
      }
    }

    @Test("a batch still waiting for its acks when the connection closes ends with failures, not a hang")
    func batchOutlivingItsConnection() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(JetStream.StreamConfiguration(name: "TRIPS", subjects: ["trips.>"]))
        server.server.suspend()
        defer { server.server.resume() }
        let batch = (0..<10).map {
          JetStream.OutboundMessage(subject: "trips.p.t\($0)", data: [], messageID: "t\($0)")
        }
        let publishing = Task { await js.publish(batch: batch, timeout: .seconds(3)) }
        try await Task.sleep(for: .milliseconds(500))
        await connection.close()
        let results = await publishing.value
        #expect(results.count == 10)
        let errors = results.compactMap { result -> NATSError? in
          if case .failure(let error) = result { return error }
          return nil
        }
        #expect(errors.count == 10)
        #expect(errors.allSatisfy { $0.code == .timeout }, "\(errors)")
      }
    }

    @Test("a fetch waiting at the server holds up nothing: ten waiting fetches all get what is published meanwhile")
    func blockingCallsRunSideBySide() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(
          JetStream.StreamConfiguration(name: "FOLLOW", subjects: ["follow.>"], retention: .workQueue))
        _ = try await js.createOrUpdateConsumer(
          stream: "FOLLOW", JetStream.ConsumerConfiguration(durableName: "relays"))
        var subscriptions: [JetStream.PullSubscription] = []
        for _ in 0..<10 { subscriptions.append(try await js.pullSubscription(stream: "FOLLOW", consumer: "relays")) }

        let fetched = try await withThrowingTaskGroup(of: [JetStream.Message].self) { group in
          for subscription in subscriptions {
            // Each fetch blocks one thread for up to 60 s, unless a message comes first.
            group.addTask { try await subscription.fetch(batch: 1, timeout: .seconds(60)) }
          }
          // Only published once the fetches wait at the server.
          let waiting = try await eventually(timeout: .seconds(30)) {
            try await subscriptions[0].consumerInfo().numWaiting >= 10
          }
          #expect(waiting)
          for index in 0..<10 {
            _ = try await js.publish(subject: "follow.p.t\(index)", data: [], messageID: "t\(index)")
          }
          var all: [JetStream.Message] = []
          for try await messages in group { all += messages }
          return all
        }
        #expect(fetched.count == 10)
        #expect(Set(fetched.compactMap(\.messageID)) == Set((0..<10).map { "t\($0)" }))
        for message in fetched { try await message.ack() }
        await connection.close()
      }
    }

    @Test("an ordered consumer reads on across a server kill and restart: every message once, in order")
    func orderedConsumerAcrossRestart() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(JetStream.StreamConfiguration(name: "TRIPS", subjects: ["trips.>"]))
        let first = await js.publish(
          batch: (0..<100).map { JetStream.OutboundMessage(subject: "trips.p.t\($0)", data: [], messageID: "u\($0)") })
        #expect(first.allSatisfy { (try? $0.get()) != nil })

        let consumer = try await js.orderedConsumer(stream: "TRIPS")
        var sequences: [UInt64] = []
        while sequences.count < 50 {
          let message = try #require(try await consumer.next(timeout: .seconds(10)))
          sequences.append(message.metadata?.streamSequence ?? 0)
        }

        server.server.kill()
        try server.server.restart()
        try await server.server.waitUntilHealthy()
        var second: [Result<JetStream.PubAck, NATSError>] = []
        _ = await eventually(timeout: .seconds(30), interval: .milliseconds(250)) {
          second = await js.publish(
            batch: (100..<200).map {
              JetStream.OutboundMessage(subject: "trips.p.t\($0)", data: [], messageID: "u\($0)")
            })
          return second.allSatisfy { (try? $0.get()) != nil }
        }
        #expect(second.allSatisfy { (try? $0.get()) != nil })

        // libnats notices the lost server-side consumer by its missed heartbeats and re-creates it from the
        // next sequence; reads may report that as an error in between.
        let deadline = ContinuousClock.now + .seconds(90)
        while sequences.count < 200 && ContinuousClock.now < deadline {
          do {
            if let message = try await consumer.next(timeout: .seconds(5)) {
              sequences.append(message.metadata?.streamSequence ?? 0)
            }
          } catch let error as NATSError {
            #expect(error.isTransient || error.code == .missedHeartbeat || error.code == .mismatch, "\(error)")
          }
        }
        #expect(sequences == Array(1...200))
        try await consumer.unsubscribe()
        await connection.close()
      }
    }

    @Test("event streams end with closed; one made after close reports closed at once")
    func eventStreamsEnd() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let events = connection.events()
        await connection.close()
        var seen: [NATSConnectionEvent] = []
        for await event in events { seen.append(event) }
        // libnats may report the disconnect of a closing connection just before it is closed.
        #expect(seen == [.closed] || seen == [.disconnected, .closed], "\(seen)")
        var late: [NATSConnectionEvent] = []
        for await event in connection.events() { late.append(event) }
        #expect(late == [.closed])
        await connection.close()  // idempotent
      }
    }
  }
}
