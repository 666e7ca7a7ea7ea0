// Tests/NATSClientTests/ConnectionTests.swift - connecting, typed errors, events across a server restart, core pub/sub

import NATSClient
import NATSTestSupport
import TestSupport
import Testing

extension NATSClientTests {
  @Suite("NATS connection")
  struct ConnectionTests {
    @Test("connecting to a port where no server listens throws NATSError noServer, no crash")
    func connectToServerThatIsDown() async throws {
      let port = try freeLocalPort()
      let error = await #expect(throws: NATSError.self) {
        _ = try await connect(["nats://127.0.0.1:\(port)"])
      }
      #expect(error?.code == .noServer)
      #expect(error?.jetStreamCode == 0)
      #expect(error?.message.contains("No server") == true, "\(String(describing: error))")
    }

    @Test("connecting with no server URL, or a malformed one, throws a NATSError")
    func connectWithBadURLs() async throws {
      let empty = await #expect(throws: NATSError.self) { _ = try await connect([]) }
      #expect(empty?.code == .addressMissing)
      let malformed = await #expect(throws: NATSError.self) { _ = try await connect(["nats://127.0.0.1:notaport"]) }
      #expect(malformed != nil)
    }

    @Test("with retryOnFailedConnect, a connection made before the server exists connects once it starts")
    func retryOnFailedConnect() async throws {
      let directory = try makeTemporaryDirectory(prefix: "nats-late")
      defer { removeDirectory(directory) }
      let configuration = try NATSServerProcess.Configuration(name: "late", directory: directory)
      let connection = try await connect([configuration.port].map { "nats://127.0.0.1:\($0)" }) {
        $0.retryOnFailedConnect = true
      }
      #expect(connection.state == .connecting)
      let events = connection.events()
      let server = try NATSServerProcess(configuration)
      defer { server.stop() }
      let connected = await firstEvent(in: events, timeout: .seconds(30)) {
        if case .connected = $0 { return true } else { return false }
      }
      guard case .connected(let url) = connected else {
        Issue.record("no connected event: \(String(describing: connected))")
        return
      }
      #expect(url == server.url)
      #expect(connection.state == .connected)
      try await connection.flush()
      await connection.close()
      #expect(connection.state == .closed)
    }

    @Test("a killed server gives disconnected, its restart reconnected, and the connection works again")
    func eventsAcrossServerRestart() async throws {
      let capture = LogCapture()
      try await withNATSServer { server in
        let connection = try await connect([server.url], logger: testLogger(capture))
        #expect(connection.state == .connected)
        #expect(await connection.connectedServer() == server.url)
        let events = connection.events()

        server.server.kill()
        let disconnected = await firstEvent(in: events, timeout: .seconds(20)) { $0 == .disconnected }
        #expect(disconnected == .disconnected)
        #expect(connection.state == .reconnecting)
        // A publish while disconnected waits in the reconnect buffer.
        try await connection.publish(subject: "while.down", data: bytes("buffered"))

        try server.server.restart()
        let reconnected = await firstEvent(in: events, timeout: .seconds(30)) {
          if case .reconnected = $0 { return true } else { return false }
        }
        #expect(reconnected == .reconnected(server: server.url))
        #expect(connection.state == .connected)
        try await connection.flush()

        let subscription = try await connection.subscribe(subject: "after.restart")
        try await connection.publish(subject: "after.restart", data: bytes("hello again"))
        let message = try await subscription.next(timeout: .seconds(10))
        #expect(message.map { text($0.data) } == "hello again")

        await connection.close()
        #expect(connection.state == .closed)
        #expect(capture.all.contains { $0.message.contains("disconnected") })
        #expect(capture.all.contains { $0.message.contains("reconnected") })
      }
    }

    @Test("core publish and subscribe carry subject, payload and headers; next returns nil at its timeout")
    func corePublishSubscribe() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let subscription = try await connection.subscribe(subject: "greetings.*")
        var headers = NATSHeaders()
        headers.add(name: "X-Trip", value: "providers/p/trips/t1")
        headers.add(name: "X-Trip", value: "second")
        try await connection.publish(subject: "greetings.en", data: bytes("hello"), headers: headers)
        try await connection.publish(subject: "greetings.fr", data: [])
        let first = try #require(try await subscription.next(timeout: .seconds(10)))
        #expect(first.subject == "greetings.en")
        #expect(text(first.data) == "hello")
        #expect(first.headers.values(for: "X-Trip") == ["providers/p/trips/t1", "second"])
        let second = try #require(try await subscription.next(timeout: .seconds(10)))
        #expect(second.subject == "greetings.fr")
        #expect(second.data.isEmpty)
        #expect(try await subscription.next(timeout: .milliseconds(200)) == nil)

        // Request/reply through a queue subscriber answering on another task.
        let responder = try await connection.subscribe(subject: "echo", queue: "workers")
        let answering = Task {
          if let request = try await responder.next(timeout: .seconds(10)), let reply = request.replySubject {
            try await connection.publish(subject: reply, data: request.data.reversed())
          }
        }
        let reply = try await connection.request(subject: "echo", data: bytes("abc"), timeout: .seconds(10))
        #expect(text(reply.data) == "cba")
        try await answering.value
        try await subscription.unsubscribe()
        try await subscription.unsubscribe()  // twice is fine
        try await connection.drain(timeout: .seconds(10))
        #expect(connection.state == .closed)
      }
    }

    @Test("bad subjects and headers are refused with a NATSError before anything is sent")
    func invalidInputIsRefused() async throws {
      try await withNATSServer { server in
        let connection = try await connect([server.url])
        let subject = await #expect(throws: NATSError.self) {
          try await connection.publish(subject: "has space", data: [])
        }
        #expect(subject?.code == .invalidSubject)
        let emptySubject = await #expect(throws: NATSError.self) { try await connection.publish(subject: "", data: []) }
        #expect(emptySubject?.code == .invalidSubject)
        let header = await #expect(throws: NATSError.self) {
          try await connection.publish(subject: "ok", data: [], headers: ["X-Bad": "line\r\nbreak"])
        }
        #expect(header?.code == .invalidArgument)
        let headerName = await #expect(throws: NATSError.self) {
          try await connection.publish(subject: "ok", data: [], headers: ["Bad:Name": "v"])
        }
        #expect(headerName?.code == .invalidArgument)
        // The connection is unharmed.
        try await connection.publish(subject: "ok", data: bytes("fine"))
        try await connection.flush()
        await connection.close()
        // Calls on a closed connection fail with a NATSError too.
        let closed = await #expect(throws: NATSError.self) { try await connection.publish(subject: "ok", data: []) }
        #expect(closed?.code == .connectionClosed)
      }
    }
  }
}
