// Tests/NATSClientTests/JetStreamPublisherTests.swift - the pipelined publisher against a real nats-server,
// and its PubAck reader on well-formed and hostile replies

import NATSClient
import NATSTestSupport
import Synchronization
import TestSupport
import Testing

/// The outcomes a publisher reported, by tag.
private final class Outcomes: Sendable {
  private let results = Mutex<[UInt64: Result<JetStream.PubAck, NATSError>]>([:])
  private let repeats = Atomic<Int>(0)

  func record(_ tag: UInt64, _ result: Result<JetStream.PubAck, NATSError>) {
    results.withLock { results in
      if results[tag] != nil { repeats.add(1, ordering: .relaxed) }
      results[tag] = result
    }
  }

  var count: Int { results.withLock { $0.count } }
  var repeated: Int { repeats.load(ordering: .relaxed) }
  subscript(tag: UInt64) -> Result<JetStream.PubAck, NATSError>? { results.withLock { $0[tag] } }
}

extension NATSClientTests {
  @Suite("JetStream pipelined publisher")
  struct JetStreamPublisherTests {
    @Test(
      "2,000 publishes pipelined: one outcome each, stored in order with their headers; repeats are duplicates; a wrong expectation, an unrouted subject and a bad header fail with their codes"
    )
    func pipelinedPublishes() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        var stream = JetStream.StreamConfiguration(name: "TRIPS", subjects: ["trips.>"])
        stream.duplicateWindow = .seconds(60)
        _ = try await js.createOrUpdateStream(stream)
        let outcomes = Outcomes()
        // A small in-flight bound: the pool job has to wait for acks to go on.
        let publisher = try js.makePublisher(timeout: .seconds(10), maxPending: 64) { tag, result in
          outcomes.record(tag, result)
        }
        let count = 2_000
        for index in 0..<count {
          publisher.publish(
            JetStream.OutboundMessage(
              subject: "trips.p.t\(index % 20)", data: bytes("u\(index)"),
              headers: ["X-Index": "\(index)"], messageID: "id-\(index)"),
            tag: UInt64(index))
        }
        #expect(await eventually(timeout: .seconds(30)) { outcomes.count == count })
        let acks = (0..<count).compactMap { try? outcomes[UInt64($0)]?.get() }
        #expect(acks.count == count)
        // One pool job writes them in order, so the stream stores them in order.
        #expect(acks.map(\.sequence) == (1...UInt64(count)).map { $0 })
        #expect(acks.allSatisfy { $0.stream == "TRIPS" && !$0.isDuplicate })

        // Repeats of stored IDs: duplicates, with the first one's sequence.
        for index in 0..<10 {
          publisher.publish(
            JetStream.OutboundMessage(
              subject: "trips.p.t\(index % 20)", data: bytes("again"), messageID: "id-\(index)"),
            tag: UInt64(10_000 + index))
        }
        // The last message on trips.p.t0 is 1,981, not 5: JetStream refuses with 10071.
        var expecting = JetStream.OutboundMessage(subject: "trips.p.t0", data: bytes("fenced"))
        expecting.expectedLastSubjectSequence = 5
        publisher.publish(expecting, tag: 20_000)
        var expectingNone = JetStream.OutboundMessage(subject: "trips.p.new", data: bytes("first"))
        expectingNone.expectedLastSubjectSequence = 0
        publisher.publish(expectingNone, tag: 20_001)
        publisher.publish(JetStream.OutboundMessage(subject: "nowhere.at.all", data: bytes("lost")), tag: 20_002)
        publisher.publish(
          JetStream.OutboundMessage(subject: "trips.p.t1", data: bytes("x"), headers: ["Bad\r\nName": "v"]),
          tag: 20_003)
        publisher.publish(
          JetStream.OutboundMessage(subject: "trips.p.t1", data: bytes("x"), headers: ["X-Split": "a\r\nb"]),
          tag: 20_004)
        publisher.publish(JetStream.OutboundMessage(subject: "has space", data: bytes("x")), tag: 20_005)
        publisher.publish(
          JetStream.OutboundMessage(subject: "trips.p.t1", data: bytes("x"), headers: ["X-Empty": ""]), tag: 20_006)
        #expect(await eventually(timeout: .seconds(30)) { outcomes.count == count + 17 })
        for index in 0..<10 {
          let ack = try #require(try? outcomes[UInt64(10_000 + index)]?.get())
          #expect(ack.isDuplicate)
          #expect(ack.sequence == UInt64(index + 1))
        }
        guard case .failure(let wrong)? = outcomes[20_000] else {
          Issue.record("a wrong expected subject sequence was stored: \(String(describing: outcomes[20_000]))")
          return
        }
        #expect(wrong.jetStreamCode == NATSError.JetStreamCode.wrongLastSequence, "\(wrong)")
        #expect(wrong.message.contains("trips.p.t0"))
        #expect((try? outcomes[20_001]?.get())?.sequence == UInt64(count + 1))
        guard case .failure(let unrouted)? = outcomes[20_002] else {
          Issue.record("an unrouted publish did not fail")
          return
        }
        #expect(unrouted.code == .noResponders, "\(unrouted)")
        for tag: UInt64 in [20_003, 20_004, 20_006] {
          guard case .failure(let bad)? = outcomes[tag] else {
            Issue.record("a header with a line break or an empty value was published (tag \(tag))")
            continue
          }
          #expect(bad.code == .invalidArgument, "\(bad)")
        }
        guard case .failure(let badSubject)? = outcomes[20_005] else {
          Issue.record("a subject with a space was published")
          return
        }
        #expect(badSubject.code == .invalidSubject)
        #expect(outcomes.repeated == 0)
        #expect(publisher.pendingCount == 0)

        // What the stream stored: every message once, with its headers and ID.
        let stored = try await js.readStream("TRIPS")
        #expect(stored.count == count + 1)
        #expect(stored.first?.headers["X-Index"] == "0")
        #expect(stored.first?.messageID == "id-0")
        #expect(stored.dropLast().map { $0.headers["X-Index"] } == (0..<count).map { "\($0)" })
        publisher.close()
        await connection.close()
      }
    }

    @Test("a publish nobody acks fails with a timeout; after close, publishes fail at once")
    func timeoutsAndClose() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let js = try connection.jetStream()
        // A subscriber that never answers: the request has a responder, so only the timeout can end it.
        let silent = try await connection.subscribe(subject: "silent.>")
        let outcomes = Outcomes()
        let publisher = try js.makePublisher(timeout: .milliseconds(500), maxPending: 16) { tag, result in
          outcomes.record(tag, result)
        }
        for tag in 0..<3 {
          publisher.publish(JetStream.OutboundMessage(subject: "silent.x", data: bytes("?")), tag: UInt64(tag))
        }
        #expect(await eventually(timeout: .seconds(10)) { outcomes.count == 3 })
        for tag in 0..<3 {
          guard case .failure(let error)? = outcomes[UInt64(tag)] else {
            Issue.record("an unanswered publish did not fail")
            continue
          }
          #expect(error.code == .timeout, "\(error)")
          #expect(error.message.contains("silent.x"))
        }
        #expect(publisher.pendingCount == 0)
        publisher.close()
        publisher.publish(JetStream.OutboundMessage(subject: "silent.x", data: bytes("late")), tag: 99)
        guard case .failure(let closed)? = outcomes[99] else {
          Issue.record("a publish after close did not fail at once")
          return
        }
        #expect(closed.code == .connectionClosed)
        #expect(outcomes.repeated == 0)
        try await silent.unsubscribe()
        await connection.close()
      }
    }
  }
}

@Suite("PubAck replies")
struct PubAckReplyTests {
  private func parse(_ text: String) -> PubAckReply? {
    Array(text.utf8).withUnsafeBytes { PubAckReply.parse($0) }
  }

  @Test("acks, duplicates, domains and API errors as nats-server writes them")
  func wellFormed() {
    #expect(
      parse(#"{"stream":"TRIPS","seq":7}"#) == .ack(JetStream.PubAck(stream: "TRIPS", sequence: 7, isDuplicate: false)))
    #expect(
      parse(#" { "stream" : "S", "domain":"hub", "seq": 18446744073709551615, "duplicate" : true } "#)
        == .ack(JetStream.PubAck(stream: "S", sequence: .max, isDuplicate: true, domain: "hub")))
    #expect(
      parse(
        #"{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1981"},"stream":"TRIPS","seq":0}"#)
        == .error(code: 400, jetStreamCode: 10071, description: "wrong last sequence: 1981"))
    #expect(
      parse(#"{"error":{"code":503,"description":"a \"quoted\" \u00e9 \/ text","extra":[1,{"a":null}]}}"#)
        == .error(code: 503, jetStreamCode: 0, description: "a \"quoted\" é / text"))
    // Unknown fields of every kind are skipped.
    #expect(
      parse(#"{"x":[true,false,null,-1.5e3,"s",{"y":{}}],"stream":"T","seq":1,"z":{}}"#)
        == .ack(JetStream.PubAck(stream: "T", sequence: 1, isDuplicate: false)))
    // Saturating, never overflowing.
    #expect(
      parse(#"{"stream":"T","seq":99999999999999999999999}"#)
        == .ack(JetStream.PubAck(stream: "T", sequence: .max, isDuplicate: false)))
  }

  @Test("malformed, truncated, deep and hostile replies are no PubAck, and never trap")
  func malformed() {
    let deepObject: String = String(repeating: #"{"a":"#, count: 20) + "1" + String(repeating: "}", count: 20)
    let deepArray: String = #"{"a":"# + String(repeating: "[", count: 20) + String(repeating: "]", count: 20) + "}"
    let bad: [String] = [
      "", "null", "[]", "{", "}", #"{"stream":"T"}"#, #"{"seq":1}"#, #"{"stream":"T","seq":-1}"#,
      #"{"stream":"T","seq":1"#, #"{"stream":"T","seq":1}x"#, #"{"stream":"T" "seq":1}"#, #"{"stream":T,"seq":1}"#,
      #"{"stream":"T","seq":1,}"#, #"{"stream":"T\u12","seq":1}"#, #"{"stream":"T\q","seq":1}"#,
      "{\"stream\":\"T\n\",\"seq\":1}", #"{"error":{"code":"x"}}"#, #"{"error":[]}"#,
      #"{"stream":"T","seq":1,"duplicate":yes}"#,
      deepObject, deepArray,
    ]
    for text in bad { #expect(parse(text) == nil, "\(text)") }
    // Every prefix of a valid reply, and random bytes.
    let valid = #"{"error":{"code":400,"err_code":10071,"description":"d"},"stream":"TRIPS","seq":0}"#
    for length in 0..<valid.utf8.count { #expect(parse(String(valid.utf8.prefix(length))!) == nil) }
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<2_000 {
      let noise = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in
        UInt8.random(in: 0...255, using: &generator)
      }
      _ = noise.withUnsafeBytes { PubAckReply.parse($0) }
    }
  }
}
