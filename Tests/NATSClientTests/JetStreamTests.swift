// Tests/NATSClientTests/JetStreamTests.swift - streams, deduplicated publishing, pull consumers, acks, ordered reads
//
// Against one real nats-server with JetStream per test. Timed checks (AckWait, in-progress acks) use waits
// several times longer than the intervals they test, for a loaded 2-core machine.

import NATSClient
import NATSTestSupport
import Synchronization
import TestSupport
import Testing

extension NATSClientTests {
  @Suite("JetStream on one server")
  struct JetStreamTests {
    @Test("publishing one Nats-Msg-Id twice: the second ack is a duplicate and the stream holds one message")
    func duplicateMessageID() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        var configuration = JetStream.StreamConfiguration(name: "TRIPS", subjects: ["trips.>"])
        configuration.duplicateWindow = .seconds(60)
        let created = try await js.createOrUpdateStream(configuration)
        #expect(created.configuration.name == "TRIPS")
        #expect(created.configuration.duplicateWindow == .seconds(60))
        #expect(created.state.messages == 0)

        let update = JetStream.OutboundMessage(
          subject: "trips.p.t1", data: bytes("update 1"), headers: ["X-Kind": "final"], messageID: "t1-final")
        let first = try await js.publish(update)
        #expect(first.stream == "TRIPS")
        #expect(first.sequence == 1)
        #expect(!first.isDuplicate)
        let second = try await js.publish(update)
        #expect(second.isDuplicate)
        #expect(second.sequence == 1)
        let other = try await js.publish(subject: "trips.p.t2", data: bytes("other"), messageID: "t2-final")
        #expect(!other.isDuplicate)
        #expect(other.sequence == 2)

        let info = try await js.streamInfo("TRIPS")
        #expect(info.state.messages == 2)
        #expect(info.state.firstSequence == 1)
        #expect(info.state.lastSequence == 2)
        let stored = try await js.readStream("TRIPS")
        #expect(stored.map(\.messageID) == ["t1-final", "t2-final"])
        #expect(stored.first?.headers["X-Kind"] == "final")
        await connection.close()
      }
    }

    @Test(
      "pull subscriptions dropped while their pull requests still bring messages are destroyed after a flush"
    )
    func droppedPullSubscriptionsAreDestroyedSafely() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(
          JetStream.StreamConfiguration(name: "HIST", subjects: ["hist.>"], retention: .limits, storage: .memory))
        let before = SubscriptionReaper.shared.destroyedCount
        let count = 40
        for index in 0..<count {
          var consumer = JetStream.ConsumerConfiguration(
            durableName: nil, filterSubject: "hist.\(index)", ackPolicy: .none)
          consumer.memoryStorage = true
          consumer.replicas = 1
          let info = try await js.createOrUpdateConsumer(stream: "HIST", consumer)
          let pull = try await js.pullSubscription(stream: "HIST", consumer: info.name, memoryStorage: true)
          // Nothing stored yet: the fetch times out and leaves its pull request open on the server, which
          // hands it the message published next, while the subscription is being dropped.
          let empty = try await pull.fetch(batch: 8, timeout: .milliseconds(20))
          #expect(empty.isEmpty)
          _ = try await js.publish(subject: "hist.\(index)", data: bytes("m\(index)"), messageID: "m\(index)")
        }
        // Each dropped subscription is unsubscribed, its connection flushed, then destroyed.
        let destroyed = await eventually(timeout: .seconds(20)) {
          SubscriptionReaper.shared.destroyedCount - before >= count
        }
        #expect(destroyed, "destroyed \(SubscriptionReaper.shared.destroyedCount - before) of \(count)")
        // The connection still works: every message is stored once and reads back in order.
        let stored = try await js.readStream("HIST")
        #expect(stored.map { text($0.data) } == (0..<count).map { "m\($0)" })
        await connection.close()
      }
    }

    @Test("createOrUpdateStream updates an existing stream; unknown streams are typed notFound errors")
    func streamManagement() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        var configuration = JetStream.StreamConfiguration(
          name: "EVENTS", subjects: ["events.>"], retention: .limits, storage: .memory)
        configuration.maxAge = .seconds(3600)
        _ = try await js.createOrUpdateStream(configuration)
        // The same configuration again is fine.
        _ = try await js.createOrUpdateStream(configuration)
        configuration.maxMessages = 1_000
        configuration.subjects = ["events.>", "audit.>"]
        let updated = try await js.createOrUpdateStream(configuration)
        #expect(updated.configuration.maxMessages == 1_000)
        #expect(updated.configuration.subjects == ["events.>", "audit.>"])
        #expect(updated.configuration.storage == .memory)
        #expect(updated.configuration.maxAge == .seconds(3600))

        let missing = await #expect(throws: NATSError.self) { _ = try await js.streamInfo("NOPE") }
        #expect(missing?.code == .notFound)
        #expect(missing?.jetStreamCode == 10059)  // JSStreamNotFoundErr

        // A stream name JetStream does not allow is refused before any request.
        let badName = await #expect(throws: NATSError.self) {
          _ = try await js.createOrUpdateStream(JetStream.StreamConfiguration(name: "a.b", subjects: ["x"]))
        }
        #expect(badName?.code == .invalidArgument)
        // A publish no stream captures fails with a typed error.
        let unrouted = await #expect(throws: NATSError.self) {
          _ = try await js.publish(subject: "nowhere.at.all", data: [])
        }
        #expect(unrouted?.code == .noResponders)

        try await js.purgeStream("EVENTS")
        try await js.deleteStream("EVENTS")
        let gone = await #expect(throws: NATSError.self) { _ = try await js.streamInfo("EVENTS") }
        #expect(gone?.code == .notFound)
        await connection.close()
      }
    }

    @Test("a batch publish reports every ack in order, marks repeated IDs as duplicates and reports failures")
    func batchPublish() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        // A small in-flight bound, so the batch has to wait for acks to go on.
        var jsConfiguration = JetStream.Configuration()
        jsConfiguration.maxPendingAsyncPublishes = 64
        let js = try connection.jetStream(jsConfiguration)
        _ = try await js.createOrUpdateStream(JetStream.StreamConfiguration(name: "TRIPS", subjects: ["trips.>"]))

        let first = (0..<500).map {
          JetStream.OutboundMessage(subject: "trips.p.t\($0 % 50)", data: bytes("u\($0)"), messageID: "id-\($0)")
        }
        let results = await js.publish(batch: first)
        #expect(results.count == 500)
        let acks = results.compactMap { try? $0.get() }
        #expect(acks.count == 500)
        #expect(acks.allSatisfy { !$0.isDuplicate && $0.stream == "TRIPS" })
        #expect(Set(acks.map(\.sequence)) == Set(1...500))

        // 250 repeats (ids 250..<500) and 250 new ones, plus one no stream captures.
        var second = (250..<750).map {
          JetStream.OutboundMessage(subject: "trips.p.t\($0 % 50)", data: bytes("u\($0)"), messageID: "id-\($0)")
        }
        second.append(JetStream.OutboundMessage(subject: "nowhere", data: bytes("lost"), messageID: "nowhere-1"))
        let secondResults = await js.publish(batch: second, timeout: .seconds(10))
        #expect(secondResults.count == 501)
        let duplicates = secondResults.prefix(250).filter { (try? $0.get())?.isDuplicate == true }
        #expect(duplicates.count == 250)
        let fresh = secondResults.dropFirst(250).prefix(250).filter { (try? $0.get())?.isDuplicate == false }
        #expect(fresh.count == 250)
        guard case .failure(let failure) = secondResults.last else {
          Issue.record("the unrouted publish did not fail: \(String(describing: secondResults.last))")
          return
        }
        #expect(failure.code == .noResponders || failure.code == .timeout, "\(failure)")

        let info = try await js.streamInfo("TRIPS")
        #expect(info.state.messages == 750)
        #expect(await js.publish(batch: []).isEmpty)
        await connection.close()
      }
    }

    @Test("work queue: a message not acked within AckWait is redelivered (numDelivered 2); ack removes it")
    func redeliveryAfterAckWait() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(
          JetStream.StreamConfiguration(name: "FOLLOW", subjects: ["follow.>"], retention: .workQueue))
        var consumer = JetStream.ConsumerConfiguration(durableName: "relays", filterSubject: "follow.>")
        consumer.ackWait = .seconds(2)
        let info = try await js.createOrUpdateConsumer(stream: "FOLLOW", consumer)
        #expect(info.name == "relays")
        #expect(info.configuration.ackWait == .seconds(2))
        #expect(info.configuration.ackPolicy == .explicit)

        _ = try await js.publish(subject: "follow.p.t1", data: bytes("follow t1"), messageID: "follow-t1")
        let subscription = try await js.pullSubscription(stream: "FOLLOW", consumer: "relays")
        let first = try await subscription.fetch(batch: 1, timeout: .seconds(10))
        #expect(first.count == 1)
        let delivered = try #require(first.first)
        #expect(delivered.subject == "follow.p.t1")
        #expect(text(delivered.data) == "follow t1")
        #expect(delivered.messageID == "follow-t1")
        let metadata = try #require(delivered.metadata)
        #expect(metadata.stream == "FOLLOW")
        #expect(metadata.consumer == "relays")
        #expect(metadata.streamSequence == 1)
        #expect(metadata.consumerSequence == 1)
        #expect(metadata.numDelivered == 1)
        #expect(metadata.timestampNanoseconds > 0)

        // Not acked: the waiting pull request gets it again once AckWait (2 s) has passed.
        let start = ContinuousClock.now
        let again = try await subscription.fetch(batch: 1, timeout: .seconds(20))
        let waited = ContinuousClock.now - start
        let redelivered = try #require(again.first)
        #expect(redelivered.metadata?.streamSequence == 1)
        #expect(redelivered.metadata?.numDelivered == 2)
        #expect(redelivered.metadata?.consumerSequence == 2)
        #expect(waited > .milliseconds(500), "redelivered after \(waited), before AckWait")

        try await redelivered.ack()
        // Acking the earlier delivery too is harmless.
        try await delivered.ack()
        let emptied = try await eventually(timeout: .seconds(10)) {
          try await js.streamInfo("FOLLOW").state.messages == 0
        }
        #expect(emptied)
        #expect(try await subscription.fetch(batch: 1, timeout: .seconds(1)).isEmpty)
        let after = try await subscription.consumerInfo()
        #expect(after.numAckPending == 0)
        await connection.close()
      }
    }

    @Test("in-progress acks well inside AckWait keep a message from being redelivered; ack then removes it")
    func inProgressPreventsRedelivery() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(
          JetStream.StreamConfiguration(name: "FOLLOW", subjects: ["follow.>"], retention: .workQueue))
        var consumer = JetStream.ConsumerConfiguration(durableName: "relays")
        consumer.ackWait = .seconds(3)
        _ = try await js.createOrUpdateConsumer(stream: "FOLLOW", consumer)
        _ = try await js.publish(subject: "follow.p.t1", data: bytes("t1"), messageID: "t1")

        let holder = try await js.pullSubscription(stream: "FOLLOW", consumer: "relays")
        let other = try await js.pullSubscription(stream: "FOLLOW", consumer: "relays")
        let held = try #require(try await holder.fetch(batch: 1, timeout: .seconds(10)).first)

        // For 2.5 × AckWait: the holder sends +WPI every 500 ms while another subscriber keeps asking.
        let stolen = Atomic<Int>(0)
        let keepAlive = Task {
          let until = ContinuousClock.now + .milliseconds(7_500)
          while ContinuousClock.now < until {
            try await held.inProgress()
            try await Task.sleep(for: .milliseconds(500))
          }
        }
        let competitor = Task {
          let until = ContinuousClock.now + .milliseconds(7_500)
          while ContinuousClock.now < until {
            let messages = try await other.fetch(batch: 1, timeout: .seconds(1))
            stolen.add(messages.count, ordering: .relaxed)
            for message in messages { try await message.nak() }
          }
        }
        try await keepAlive.value
        try await competitor.value
        #expect(stolen.load(ordering: .relaxed) == 0)

        let during = try await holder.consumerInfo()
        #expect(during.numAckPending == 1)
        #expect(during.numRedelivered == 0)

        try await held.ackSync()
        let emptied = try await eventually(timeout: .seconds(10)) {
          try await js.streamInfo("FOLLOW").state.messages == 0
        }
        #expect(emptied)
        let after = try await holder.consumerInfo()
        #expect(after.numAckPending == 0)
        #expect(after.numRedelivered == 0)
        // The message really is gone: nothing comes back after another AckWait.
        #expect(try await other.fetch(batch: 1, timeout: .seconds(4)).isEmpty)
        await connection.close()
      }
    }

    @Test("MaxAckPending bounds what one subscriber holds; acking frees room for the rest")
    func maxAckPendingBounds() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(
          JetStream.StreamConfiguration(name: "FOLLOW", subjects: ["follow.>"], retention: .workQueue))
        var consumer = JetStream.ConsumerConfiguration(durableName: "relays")
        consumer.maxAckPending = 5
        consumer.ackWait = .seconds(60)
        let info = try await js.createOrUpdateConsumer(stream: "FOLLOW", consumer)
        #expect(info.configuration.maxAckPending == 5)
        let results = await js.publish(
          batch: (0..<20).map { JetStream.OutboundMessage(subject: "follow.p.t\($0)", data: [], messageID: "t\($0)") })
        #expect(results.allSatisfy { (try? $0.get()) != nil })

        let subscription = try await js.pullSubscription(stream: "FOLLOW", consumer: "relays")
        var held: [JetStream.Message] = []
        // Ask for everything, several times: no more than 5 ever come while none is acked.
        for _ in 0..<3 {
          do {
            held += try await subscription.fetch(batch: 20, timeout: .seconds(2))
          } catch let error as NATSError {
            // nats-server answers a pull beyond MaxAckPending with 409 "Exceeded MaxAckPending".
            #expect(error.message.contains("MaxAckPending"), "\(error)")
          }
        }
        #expect(held.count == 5)
        #expect(Set(held.compactMap { $0.metadata?.streamSequence }) == Set(1...5))
        #expect(try await subscription.consumerInfo().numAckPending == 5)

        for message in held.prefix(2) { try await message.ack() }
        var more: [JetStream.Message] = []
        _ = await eventually(timeout: .seconds(10)) {
          more += (try? await subscription.fetch(batch: 20, timeout: .seconds(1))) ?? []
          return more.count >= 2
        }
        #expect(more.count == 2)
        #expect(try await subscription.consumerInfo().numAckPending == 5)
        for message in held.dropFirst(2) + more { try await message.ack() }
        // The other 13 come as room frees up (some may reach the subscription after a fetch gave up waiting;
        // the next fetch returns them): fetch and ack until the work queue is empty.
        var all = held + more
        let emptied = try await eventually(timeout: .seconds(60)) {
          let batch = try await subscription.fetch(batch: 5, timeout: .seconds(1))
          for message in batch { try await message.ack() }
          all += batch
          return try await js.streamInfo("FOLLOW").state.messages == 0
        }
        #expect(emptied)
        // Each of the 20 exactly once (AckWait is 60 s: nothing was redelivered).
        #expect(all.count == 20)
        #expect(Set(all.compactMap { $0.metadata?.streamSequence }) == Set(1...20))
        await connection.close()
      }
    }

    @Test("nak redelivers at once, nak with a delay redelivers later, term stops redelivery for good")
    func nakAndTerm() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(
          JetStream.StreamConfiguration(name: "WORK", subjects: ["work.>"], retention: .workQueue))
        var consumer = JetStream.ConsumerConfiguration(durableName: "workers")
        consumer.ackWait = .seconds(2)
        _ = try await js.createOrUpdateConsumer(stream: "WORK", consumer)
        _ = try await js.publish(subject: "work.a", data: bytes("a"))
        let subscription = try await js.pullSubscription(stream: "WORK", consumer: "workers")

        let first = try #require(try await subscription.fetch(batch: 1, timeout: .seconds(10)).first)
        #expect(first.metadata?.numDelivered == 1)
        try await first.nak()
        let second = try #require(try await subscription.fetch(batch: 1, timeout: .seconds(10)).first)
        #expect(second.metadata?.streamSequence == 1)
        #expect(second.metadata?.numDelivered == 2)
        try await second.nak(delay: .seconds(1))
        let third = try #require(try await subscription.fetch(batch: 1, timeout: .seconds(10)).first)
        #expect(third.metadata?.streamSequence == 1)
        #expect(third.metadata?.numDelivered == 3)

        try await third.term()
        // Terminated: not redelivered, not even after AckWait (2 s) has passed twice.
        #expect(try await subscription.fetch(batch: 1, timeout: .seconds(5)).isEmpty)
        let info = try await subscription.consumerInfo()
        #expect(info.numAckPending == 0)
        #expect(info.numPending == 0)
        await connection.close()
      }
    }

    @Test("acks from many tasks at once, and repeated acks of one message, all land")
    func concurrentAcks() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(
          JetStream.StreamConfiguration(name: "FOLLOW", subjects: ["follow.>"], retention: .workQueue))
        var consumer = JetStream.ConsumerConfiguration(durableName: "relays")
        consumer.maxAckPending = 1_000
        _ = try await js.createOrUpdateConsumer(stream: "FOLLOW", consumer)
        let results = await js.publish(
          batch: (0..<300).map { JetStream.OutboundMessage(subject: "follow.p.t\($0)", data: [], messageID: "t\($0)") })
        #expect(results.allSatisfy { (try? $0.get()) != nil })

        let subscription = try await js.pullSubscription(stream: "FOLLOW", consumer: "relays")
        var messages: [JetStream.Message] = []
        _ = try await eventually(timeout: .seconds(30)) {
          messages += try await subscription.fetch(batch: 100, timeout: .seconds(2))
          return messages.count >= 300
        }
        #expect(messages.count == 300)
        try await withThrowingTaskGroup(of: Void.self) { group in
          for message in messages {
            group.addTask { try await message.inProgress() }
            group.addTask { try await message.ack() }
            group.addTask { try await message.ack() }
          }
          try await group.waitForAll()
        }
        let emptied = try await eventually(timeout: .seconds(10)) {
          try await js.streamInfo("FOLLOW").state.messages == 0
        }
        #expect(emptied)
        #expect(try await subscription.consumerInfo().numAckPending == 0)
        await connection.close()
      }
    }

    @Test("an ordered consumer reads a whole stream in order; filtered and empty reads too")
    func orderedRead() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        _ = try await js.createOrUpdateStream(JetStream.StreamConfiguration(name: "TRIPS", subjects: ["trips.>"]))
        #expect(try await js.readStream("TRIPS", timeout: .seconds(5)).isEmpty)

        let batch = (0..<400).map {
          JetStream.OutboundMessage(
            subject: "trips.p\($0 % 4).t\($0)", data: bytes("update \($0)"), messageID: "u\($0)")
        }
        let acks = await js.publish(batch: batch)
        #expect(acks.allSatisfy { (try? $0.get()) != nil })

        let all = try await js.readStream("TRIPS")
        #expect(all.count == 400)
        #expect(all.compactMap { $0.metadata?.streamSequence } == Array(1...400))
        // Acks came back in any order, but libnats sent in order: payloads follow the sequences.
        #expect(all.map { text($0.data) } == (0..<400).map { "update \($0)" })
        #expect(all.last?.metadata?.numPending == 0)

        let p1 = try await js.readStream("TRIPS", filterSubject: "trips.p1.>")
        #expect(p1.count == 100)
        #expect(p1.allSatisfy { $0.subject.hasPrefix("trips.p1.") })
        #expect(
          p1.compactMap { $0.metadata?.streamSequence } == stride(from: 2, through: 400, by: 4).map { UInt64($0) })

        // The consumer API directly: from a start sequence.
        let consumer = try await js.orderedConsumer(stream: "TRIPS", deliverPolicy: .startSequence(398))
        let tail = [
          try await consumer.next(timeout: .seconds(10)), try await consumer.next(timeout: .seconds(10)),
          try await consumer.next(timeout: .seconds(10)),
        ]
        #expect(tail.compactMap { $0?.metadata?.streamSequence } == [398, 399, 400])
        #expect(try await consumer.next(timeout: .milliseconds(500)) == nil)
        try await consumer.unsubscribe()
        await connection.close()
      }
    }
  }
}
