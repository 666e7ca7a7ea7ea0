// Sources/ToolSupport/MetricsHTTPServer.swift - `GET /metrics` over HTTP/1.1, on a thread of its own
//
// The endpoint a Prometheus server scrapes (`--metrics-listen HOST:PORT`): one thread polling the listener and
// every open connection (non-blocking), one request per connection, answered and closed. Small on purpose: no
// keep-alive, no chunking, no request bodies. Each connection gets `requestTimeout` in all, from its accept to
// the last byte of the answer (a whole-request deadline, not one per `recv`), and its request head is at most
// 8 KiB. Up to 64 connections are served at once; when a 65th arrives the oldest is closed. A client that
// trickles its request a byte at a time holds one slot for at most the deadline, and scrapes go on beside it.

import Primitives

#if canImport(Glibc)
  import Glibc
#endif

/// A small HTTP/1.1 server for a metrics endpoint: `GET` (and `HEAD`) of ``path`` answers 200 with
/// what `render` returns, another method on it 405, any other path 404, a malformed request 400.
///
/// ```swift
/// let server = try MetricsHTTPServer(listen: "127.0.0.1:9464") { registry.emitToBuffer() }
/// print("metrics on \(server.address)")
/// …
/// server.stop()
/// ```
package final class MetricsHTTPServer: Sendable {
  /// The bound address as `HOST:PORT` (`[HOST]:PORT` for IPv6), with the port the system picked for 0.
  package let address: String
  /// The bound port.
  package let port: Int
  /// The path served.
  package let path: String
  private let listenFD: Int32
  /// Written to once by ``stop()`` to wake the accept loop.
  private let wakeWriteFD: Int32
  private let thread = Locked<pthread_t?>(nil)

  /// The largest request head read (request line and headers).
  static let maxRequestHead = 8 << 10

  /// Binds `listen` (`HOST:PORT`, `[IPv6]:PORT`; port 0 picks a free one) and starts serving.
  ///
  /// - Parameters:
  ///   - contentType: the `Content-Type` of a 200 answer; default Prometheus' text format 0.0.4.
  ///   - requestTimeout: how long a client has, from its accept, to send its request head and take the answer.
  ///   - render: the body of a 200 answer, called on the server's thread for each request.
  /// - Throws: ``ToolFailure`` (``ToolExit/usage`` for a malformed address, ``ToolExit/cannotListen``
  ///   when it cannot be bound).
  package init(
    listen: String, path: String = "/metrics", contentType: String = "text/plain; version=0.0.4; charset=utf-8",
    requestTimeout: Duration = .seconds(2), render: @escaping @Sendable () -> [UInt8]
  ) throws(ToolFailure) {
    guard let (host, requestedPort) = ListenAddress.parse(listen) else {
      throw ToolFailure(.usage, "--metrics-listen must be HOST:PORT, not \(listen)")
    }
    let fd = try Self.bind(host: host, port: requestedPort, option: listen)
    var pipeFDs: [Int32] = [-1, -1]
    guard pipe(&pipeFDs) == 0 else {
      close(fd)
      throw ToolFailure(.cannotListen, "metrics endpoint: pipe failed (errno \(errno))")
    }
    for pipeFD in pipeFDs { _ = fcntl(pipeFD, F_SETFD, FD_CLOEXEC) }
    let bound = Self.boundPort(fd) ?? requestedPort
    self.listenFD = fd
    self.wakeWriteFD = pipeFDs[1]
    self.port = bound
    self.path = path
    self.address = "\(host.contains(":") ? "[\(host)]" : host):\(bound)"
    let loop = AcceptLoop(
      listenFD: fd, wakeReadFD: pipeFDs[0], path: path, contentType: contentType, requestTimeout: requestTimeout,
      render: render)
    let box = Unmanaged.passRetained(loop)
    var tid = pthread_t()
    let rc = pthread_create(
      &tid, nil,
      { raw in
        Unmanaged<AcceptLoop>.fromOpaque(raw!).takeRetainedValue().run()
        return nil
      }, box.toOpaque())
    guard rc == 0 else {
      box.release()
      close(fd)
      close(pipeFDs[0])
      close(pipeFDs[1])
      throw ToolFailure(.cannotListen, "metrics endpoint: no thread could be started (\(rc))")
    }
    thread.withLock { $0 = tid }
  }

  deinit { stop() }

  /// Stops serving: the listener closes and the thread ends (after the request it may be answering).
  /// Safe to call more than once.
  package func stop() {
    guard
      let tid = thread.withLock({ current -> pthread_t? in
        defer { current = nil }
        return current
      })
    else { return }
    var one: UInt8 = 1
    _ = write(wakeWriteFD, &one, 1)
    pthread_join(tid, nil)
    close(wakeWriteFD)
  }

  // MARK: - Addresses

  /// A listening socket on the first address of `host` that binds.
  private static func bind(host: String, port: Int, option: String) throws(ToolFailure) -> Int32 {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
    var list: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host, String(port), &hints, &list)
    guard rc == 0, let list else {
      throw ToolFailure(.cannotListen, "metrics endpoint \(option): \(String(cString: gai_strerror(rc)))")
    }
    defer { freeaddrinfo(list) }
    var lastError: Int32 = 0
    var entry: UnsafeMutablePointer<addrinfo>? = list
    while let current = entry {
      entry = current.pointee.ai_next
      let fd = socket(current.pointee.ai_family, current.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), 0)
      if fd < 0 {
        lastError = errno
        continue
      }
      var on: Int32 = 1
      _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
      if Glibc.bind(fd, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0, listen(fd, 16) == 0 {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
      }
      lastError = errno
      close(fd)
    }
    throw ToolFailure(.cannotListen, "metrics endpoint \(option): \(String(cString: strerror(lastError)))")
  }

  private static func boundPort(_ fd: Int32) -> Int? {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let rc = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard rc == 0 else { return nil }
    switch Int32(storage.ss_family) {
    case AF_INET:
      return withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
      }
    case AF_INET6:
      return withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
      }
    default:
      return nil
    }
  }
}

/// The server's thread: accepts, answers, closes; ends when the wake pipe is written to.
private final class AcceptLoop: Sendable {
  let listenFD: Int32
  let wakeReadFD: Int32
  let path: String
  let contentType: String
  let requestTimeout: Duration
  let render: @Sendable () -> [UInt8]

  init(
    listenFD: Int32, wakeReadFD: Int32, path: String, contentType: String, requestTimeout: Duration,
    render: @escaping @Sendable () -> [UInt8]
  ) {
    self.listenFD = listenFD
    self.wakeReadFD = wakeReadFD
    self.path = path
    self.contentType = contentType
    self.requestTimeout = requestTimeout
    self.render = render
  }

  /// The most connections served at once; a new one beyond it closes the oldest.
  static let maxConnections = 64

  /// One connection being served: what it sent so far, then the answer left to send.
  private struct Client {
    let fd: Int32
    /// When it must be done (monotonic nanoseconds).
    let deadline: UInt64
    var head: [UInt8] = []
    var answer: [UInt8]?
    var sent = 0
  }

  func run() {
    var clients: [Client] = []
    defer {
      for client in clients { close(client.fd) }
      close(listenFD)
      close(wakeReadFD)
    }
    let timeout = requestTimeout.nonNegativeNanoseconds
    var fds: [pollfd] = []
    while true {
      fds.removeAll(keepingCapacity: true)
      fds.append(pollfd(fd: wakeReadFD, events: Int16(POLLIN), revents: 0))
      fds.append(pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0))
      for client in clients {
        fds.append(pollfd(fd: client.fd, events: Int16(client.answer == nil ? POLLIN : POLLOUT), revents: 0))
      }
      let now = monotonicNanoseconds()
      let nextDeadline = clients.map(\.deadline).min()
      let wait = nextDeadline.map { Int32(clamping: ($0 > now ? $0 - now : 0) / 1_000_000 + 1) } ?? -1
      let ready = poll(&fds, nfds_t(fds.count), wait)
      if ready < 0 && errno != EINTR { return }
      if fds[0].revents != 0 { return }
      // Serve the ready connections (their pollfds follow the listener's, in order), then drop the finished
      // and the late.
      let after = monotonicNanoseconds()
      for index in clients.indices where fds[index + 2].revents != 0 {
        advance(&clients[index])
      }
      clients.removeAll { client in
        let done = client.answer.map { client.sent >= $0.count } ?? false
        let late = after >= client.deadline
        let failed = client.fd < 0
        if (done || late) && !failed { close(client.fd) }
        return done || late || failed
      }
      if fds[1].revents != 0 {
        acceptAll(into: &clients, deadline: after &+ timeout)
      }
    }
  }

  /// Accepts every pending connection; beyond ``maxConnections`` the oldest open one is closed.
  private func acceptAll(into clients: inout [Client], deadline: UInt64) {
    while true {
      let fd = accept(listenFD, nil, nil)
      if fd < 0 {
        // EAGAIN: none left; out of descriptors: wait a little rather than spin.
        if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM { usleep(100_000) }
        return
      }
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
      if clients.count >= Self.maxConnections {
        close(clients.removeFirst().fd)
      }
      clients.append(Client(fd: fd, deadline: deadline))
    }
  }

  /// Reads what `client` sent (answering once its head is whole), or sends more of its answer. A client
  /// whose connection failed gets fd -1 (closed here).
  private func advance(_ client: inout Client) {
    if client.answer == nil {
      var buffer = [UInt8](repeating: 0, count: 2048)
      while client.answer == nil {
        let count = buffer.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
        if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else {
          // Closed or failed before a whole head: nothing to answer.
          close(client.fd)
          client = Client(fd: -1, deadline: 0)
          return
        }
        // Only the new bytes (and the three before them) can complete the head: a head trickled a byte at a
        // time costs linear time, not quadratic.
        let searchFrom = max(0, client.head.count - 3)
        client.head.append(contentsOf: buffer[0..<count])
        if Self.endOfHead(in: client.head, from: searchFrom) != nil {
          client.answer = answer(to: client.head)
        } else if client.head.count >= MetricsHTTPServer.maxRequestHead {
          client.answer = Self.response(
            status: "431 Request Header Fields Too Large", body: Array("request head too large\n".utf8))
        }
      }
    }
    guard let answer = client.answer else { return }
    while client.sent < answer.count {
      let sent = answer.withUnsafeBytes {
        send(client.fd, $0.baseAddress! + client.sent, answer.count - client.sent, Int32(MSG_NOSIGNAL))
      }
      if sent < 0 && errno == EINTR { continue }
      if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
      guard sent > 0 else {
        close(client.fd)
        client = Client(fd: -1, deadline: 0)
        return
      }
      client.sent += sent
    }
  }

  /// The whole response to a request head.
  private func answer(to head: [UInt8]) -> [UInt8] {
    guard let request = Self.requestLine(head) else {
      return Self.response(status: "400 Bad Request", body: Array("malformed request\n".utf8))
    }
    let target = request.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    guard target == path else {
      return Self.response(status: "404 Not Found", body: Array("not found; metrics are at \(path)\n".utf8))
    }
    switch request.method {
    case "GET": return Self.response(status: "200 OK", contentType: contentType, body: render())
    case "HEAD": return Self.response(status: "200 OK", contentType: contentType, body: render(), headOnly: true)
    default:
      return Self.response(
        status: "405 Method Not Allowed", extraHeaders: "Allow: GET, HEAD\r\n",
        body: Array("method not allowed\n".utf8))
    }
  }

  /// The offset just past `\r\n\r\n` in `bytes`, if there is one.
  static func endOfHead(in bytes: [UInt8], from start: Int = 0) -> Int? {
    guard bytes.count >= 4, start <= bytes.count - 4 else { return nil }
    for index in start...(bytes.count - 4)
    where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
      return index + 4
    }
    return nil
  }

  /// The method and target of an `HTTP/1.x` request line; nil when malformed.
  static func requestLine(_ head: [UInt8]) -> (method: String, target: String)? {
    guard let end = head.firstIndex(of: 13) else { return nil }
    let parts = head[..<end].split(separator: 32, omittingEmptySubsequences: false)
    guard parts.count == 3, !parts[0].isEmpty, parts[1].first == UInt8(ascii: "/"),
      parts[2].starts(with: Array("HTTP/1.".utf8))
    else { return nil }
    return (String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self))
  }

  private static func response(
    status: String, contentType: String = "text/plain; charset=utf-8", extraHeaders: String = "",
    body: [UInt8], headOnly: Bool = false
  ) -> [UInt8] {
    let header =
      "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
      + "\(extraHeaders)Connection: close\r\n\r\n"
    return Array(header.utf8) + (headOnly ? [] : body)
  }
}
