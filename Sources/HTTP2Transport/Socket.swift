// Sources/HTTP2Transport/Socket.swift - thin POSIX socket helpers
//
// Non-blocking TCP: resolve, connect, accept, read, write. Errors come back as
// `SocketError` values carrying errno and a readable text.

package import CLinuxSystem

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A failed socket call: which call, and errno's text (or getaddrinfo's, for a name that did not resolve).
package struct SocketError: Error, Sendable, CustomStringConvertible {
  package var call: String
  package var errnoCode: Int32
  /// getaddrinfo's reason (`gai_strerror`) when the call was a name resolution; errno is then 0.
  package var resolutionFailure: String?
  package var description: String {
    if let resolutionFailure { return "\(call): \(resolutionFailure)" }
    // errno 0 carries no reason (strerror would say "Success").
    guard errnoCode != 0 else { return call }
    return "\(call): \(String(cString: strerror(errnoCode)))"
  }
  package init(_ call: String, errno code: Int32 = errno) {
    self.call = call
    self.errnoCode = code
  }
}

/// A resolved socket address.
package struct SocketAddress: Sendable, CustomStringConvertible {
  package var storage: sockaddr_storage
  package var length: socklen_t

  package var family: Int32 { Int32(storage.ss_family) }

  /// The numeric host and the port, for logs and for `listening on HOST:PORT`.
  package var hostAndPort: (host: String, port: Int) {
    var storage = storage
    var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
    var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
    _ = withUnsafePointer(to: &storage) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getnameinfo(
          $0, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
          NI_NUMERICHOST | NI_NUMERICSERV)
      }
    }
    let hostString = host.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    let serviceString = service.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    return (hostString, Int(serviceString) ?? 0)
  }

  package var description: String {
    let (host, port) = hostAndPort
    return family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
  }

  /// The address of a numeric IPv4 or IPv6 `host` and `port`, or `nil` when `host` is not numeric or
  /// the port is out of range. Never asks DNS (AI_NUMERICHOST): safe on an event loop.
  package static func numeric(host: String, port: Int) -> SocketAddress? {
    guard (0...65535).contains(port) else { return nil }
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_protocol = Int32(IPPROTO_TCP)
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
    var result: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &result) == 0, let info = result else { return nil }
    defer { freeaddrinfo(result) }
    var storage = sockaddr_storage()
    let length = info.pointee.ai_addrlen
    // Safe: getaddrinfo guarantees ai_addr holds ai_addrlen bytes, which fit in sockaddr_storage.
    withUnsafeMutableBytes(of: &storage) { target in
      target.copyMemory(from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(length)))
    }
    return SocketAddress(storage: storage, length: length)
  }

  /// Resolves `host` (a name or a numeric address) and `port` to TCP addresses.
  /// Blocking: call it off the event loop for names that need DNS.
  package static func resolve(host: String, port: Int) throws(SocketError) -> [SocketAddress] {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_protocol = Int32(IPPROTO_TCP)
    var result: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host, String(port), &hints, &result)
    guard rc == 0, let first = result else {
      var error = SocketError("resolving \(host)", errno: 0)
      // Safe: gai_strerror returns a static NUL-terminated string for any code.
      error.resolutionFailure = rc == 0 ? "no addresses" : String(cString: gai_strerror(rc))
      throw error
    }
    defer { freeaddrinfo(result) }
    var addresses: [SocketAddress] = []
    var cursor: UnsafeMutablePointer<addrinfo>? = first
    while let info = cursor {
      var storage = sockaddr_storage()
      let length = info.pointee.ai_addrlen
      // Safe: getaddrinfo guarantees ai_addr holds ai_addrlen bytes, which fit in sockaddr_storage.
      withUnsafeMutableBytes(of: &storage) { target in
        target.copyMemory(from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(length)))
      }
      addresses.append(SocketAddress(storage: storage, length: length))
      cursor = info.pointee.ai_next
    }
    return addresses
  }
}

/// Socket system calls used by the transport.
package enum Socket {
  /// Creates a non-blocking TCP socket for `family`.
  package static func makeNonBlocking(family: Int32) throws(SocketError) -> Int32 {
    let fd = socket(
      family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SocketError("socket") }
    return fd
  }

  /// Starts a non-blocking connect; returns whether it already completed.
  package static func connect(_ fd: Int32, to address: SocketAddress) throws(SocketError) -> Bool {
    var storage = address.storage
    let rc = withUnsafePointer(to: &storage) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
    }
    if rc == 0 { return true }
    if errno == EINPROGRESS || errno == EINTR { return false }
    throw SocketError("connect to \(address)")
  }

  /// The pending error of a socket (SO_ERROR), 0 when none.
  package static func pendingError(_ fd: Int32) -> Int32 {
    var value: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length)
    return value
  }

  /// Turns off Nagle's algorithm: gRPC frames are small and latency matters.
  package static func setNoDelay(_ fd: Int32) {
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
  }

  /// Creates a listening, non-blocking socket bound to `address`.
  package static func listen(on address: SocketAddress, backlog: Int32 = 1024) throws(SocketError) -> Int32 {
    let fd = try makeNonBlocking(family: address.family)
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var storage = address.storage
    let rc = withUnsafePointer(to: &storage) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, address.length) }
    }
    guard rc == 0 else {
      let error = SocketError("bind \(address)")
      close(fd)
      throw error
    }
    guard Glibc.listen(fd, backlog) == 0 else {
      let error = SocketError("listen")
      close(fd)
      throw error
    }
    return fd
  }

  /// The local address of a socket.
  package static func localAddress(_ fd: Int32) -> SocketAddress? {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let rc = withUnsafeMutablePointer(to: &storage) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return rc == 0 ? SocketAddress(storage: storage, length: length) : nil
  }

  /// The address of a socket's peer.
  package static func peerAddress(_ fd: Int32) -> SocketAddress? {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let rc = withUnsafeMutablePointer(to: &storage) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
    }
    return rc == 0 ? SocketAddress(storage: storage, length: length) : nil
  }

  /// Accepts one pending connection, non-blocking; `nil` when none is pending.
  package static func accept(_ fd: Int32) throws(SocketError) -> Int32? {
    let client = cls_accept4(fd, nil, nil, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
    if client >= 0 { return client }
    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED { return nil }
    throw SocketError("accept")
  }
}

/// Runs `body` on a new detached thread (for blocking calls such as getaddrinfo).
package func detachThread(_ body: @escaping @Sendable () -> Void) {
  final class Box: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
  }
  let box = Unmanaged.passRetained(Box(body))
  var thread = pthread_t()
  // Allocated rather than `pthread_attr_t()`: with OpenSSL's headers in the same build, that
  // initializer resolves to COpenSSL's copy of the type, which this module does not import.
  let attributes = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
  defer { attributes.deallocate() }
  pthread_attr_init(attributes)
  pthread_attr_setdetachstate(attributes, Int32(PTHREAD_CREATE_DETACHED))
  // The thread takes over the retain on the box.
  let rc = pthread_create(
    &thread, attributes,
    { raw in
      Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
      return nil
    }, box.toOpaque())
  pthread_attr_destroy(attributes)
  if rc != 0 {
    // No thread could be made: run it here rather than never.
    box.takeRetainedValue().body()
  }
}
