// Tests/NATSTestSupport/NATSServerProcess.swift - nats-server processes on 127.0.0.1 for tests
//
// Tests start their own `nats-server` (Debian's nats-server 2.9, JetStream built in) as real processes:
// one server, or a cluster of several with routes between them. Every server listens on free ports of
// 127.0.0.1 (clients, cluster routes, HTTP monitoring) and keeps its JetStream store and its log in a
// temporary directory that `remove()` deletes. `kill()` is SIGKILL; `restart()` starts the same server
// again on the same ports with the same store, as a crashed server comes back.

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// What went wrong starting or talking to a test server.
public struct NATSTestSupportError: Error, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and released; another process can
/// still take it before the caller binds it).
public func freeLocalPort() throws -> Int {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { throw NATSTestSupportError("socket: errno \(errno)") }
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = 0
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  let bound = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
  }
  guard bound == 0 else { throw NATSTestSupportError("bind: errno \(errno)") }
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let named = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
  }
  guard named == 0 else { throw NATSTestSupportError("getsockname: errno \(errno)") }
  return Int(UInt16(bigEndian: address.sin_port))
}

/// The `nats-server` executable: $NATS_SERVER, else the first on PATH.
public func natsServerExecutable() throws -> String {
  if let path = ProcessInfo.processInfo.environment["NATS_SERVER"], !path.isEmpty { return path }
  let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/usr/sbin").split(separator: ":")
  for directory in directories + ["/usr/sbin", "/usr/bin"] {
    let candidate = "\(directory)/nats-server"
    if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
  }
  throw NATSTestSupportError("no nats-server on PATH: `make deps` installs it (apt-get install nats-server)")
}

/// One `nats-server` process on 127.0.0.1, with JetStream, optionally a member of a cluster.
public final class NATSServerProcess: @unchecked Sendable {
  // @unchecked: `process` is replaced only by `restart()`, and every method is meant for the test's own
  // task; the lock guards it anyway, for the deinit.

  /// A server's fixed settings: its name, ports and directories (kept across restarts).
  public struct Configuration: Sendable {
    /// `--server_name`; also the name of its directory.
    public var name: String
    /// The client port.
    public var port: Int
    /// The HTTP monitoring port (`/healthz`, `/varz`, `/jsz`).
    public var monitoringPort: Int
    /// The JetStream store directory.
    public var storeDirectory: String
    /// The log file.
    public var logFile: String
    /// Cluster membership, if any.
    public var cluster: Cluster?
    /// More `nats-server` arguments.
    public var extraArguments: [String] = []
    /// A configuration file's text (accounts, permissions, TLS, subject mappings), written next to the store and
    /// given with `--config`; the command-line settings above override what it says of the same things.
    public var configText: String?
    /// The address to listen on (clients and routes); default 127.0.0.1. A test host in a network namespace
    /// of the test's own has another.
    public var host = "127.0.0.1"
    /// The network namespace the server runs in (a ``NetworkLab`` host's), or nil for the test's own.
    public var namespace: String?
    /// The file ``configText`` is written to.
    public var configFile: String { "\(storeDirectory)/../nats-server.conf" }

    /// Cluster membership: the cluster's name, this server's route port, the other members' route ports.
    public struct Cluster: Sendable {
      public var name: String
      public var port: Int
      public var routePorts: [Int]
      /// The host of each route port that is not on this server's host (a member in another namespace).
      public var routeHosts: [Int: String] = [:]

      public init(name: String, port: Int, routePorts: [Int], routeHosts: [Int: String] = [:]) {
        self.name = name
        self.port = port
        self.routePorts = routePorts
        self.routeHosts = routeHosts
      }
    }

    /// A configuration on free ports, with its directories under `directory`.
    public init(name: String, directory: String, cluster: Cluster? = nil) throws {
      self.name = name
      port = try freeLocalPort()
      monitoringPort = try freeLocalPort()
      storeDirectory = "\(directory)/\(name)/store"
      logFile = "\(directory)/\(name)/nats-server.log"
      self.cluster = cluster
    }

    /// The command-line arguments.
    public var arguments: [String] {
      var arguments = configText == nil ? [] : ["--config", configFile]
      arguments += [
        "--addr", host, "--port", "\(port)", "--http_port", "\(monitoringPort)",
        "--server_name", name, "--jetstream", "--store_dir", storeDirectory, "--log", logFile,
      ]
      if let cluster {
        arguments += ["--cluster_name", cluster.name, "--cluster", "nats://\(host):\(cluster.port)"]
        if !cluster.routePorts.isEmpty {
          arguments += [
            "--routes",
            cluster.routePorts.map { "nats://\(cluster.routeHosts[$0] ?? host):\($0)" }.joined(separator: ","),
          ]
        }
      }
      return arguments + extraArguments
    }
  }

  /// Its settings.
  public let configuration: Configuration
  private let lock = NSLock()
  private var process: Process?

  /// The client URL, `nats://HOST:PORT`.
  public var url: String { "nats://\(configuration.host):\(configuration.port)" }

  /// Starts `nats-server` with `configuration`; returns once the process runs (see ``waitUntilHealthy(timeout:)``).
  public init(_ configuration: Configuration) throws {
    self.configuration = configuration
    try FileManager.default.createDirectory(atPath: configuration.storeDirectory, withIntermediateDirectories: true)
    if let text = configuration.configText {
      try text.write(toFile: configuration.configFile, atomically: true, encoding: .utf8)
    }
    try launch()
  }

  deinit {
    if let process = lock.withLock({ self.process }), process.isRunning {
      Glibc.kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }

  private func launch() throws {
    let process = Process()
    if let namespace = configuration.namespace {
      process.executableURL = URL(fileURLWithPath: NetworkLab.ipCommand)
      process.arguments = ["netns", "exec", namespace, try natsServerExecutable()] + configuration.arguments
    } else {
      process.executableURL = URL(fileURLWithPath: try natsServerExecutable())
      process.arguments = configuration.arguments
    }
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    lock.withLock { self.process = process }
  }

  /// True while the process runs.
  public var isRunning: Bool { lock.withLock { process?.isRunning ?? false } }

  /// The process ID (nil when not running).
  public var processIdentifier: Int32? {
    lock.withLock { process.flatMap { $0.isRunning ? $0.processIdentifier : nil } }
  }

  /// SIGKILL: the server dies at once, as in a crash. Returns once it is gone.
  public func kill() {
    guard let process = lock.withLock({ self.process }), process.isRunning else { return }
    Glibc.kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }

  /// SIGTERM: the server shuts down cleanly. Returns once it is gone.
  public func stop() {
    guard let process = lock.withLock({ self.process }), process.isRunning else { return }
    process.terminate()
    Glibc.kill(process.processIdentifier, SIGCONT)  // in case it was suspended
    process.waitUntilExit()
  }

  /// SIGSTOP: the server freezes with its sockets open (clients see no error, only silence), as a hung or
  /// partitioned server. ``resume()`` lets it go on.
  /// Returns once every thread of the server is stopped (the signal takes effect asynchronously).
  public func suspend() {
    guard let process = lock.withLock({ self.process }), process.isRunning else { return }
    let pid = process.processIdentifier
    Glibc.kill(pid, SIGSTOP)
    for _ in 0..<500 {
      if allThreadsStopped(pid) { return }
      usleep(2_000)
    }
  }

  /// SIGCONT: a suspended server goes on.
  public func resume() {
    guard let process = lock.withLock({ self.process }), process.isRunning else { return }
    Glibc.kill(process.processIdentifier, SIGCONT)
  }

  /// Starts the server again (after ``kill()`` or ``stop()``) on the same ports with the same store.
  public func restart() throws {
    kill()
    try launch()
  }

  /// Waits until `/healthz` answers 200: the server accepts clients and, in a cluster, JetStream has a meta
  /// leader and this server's streams and consumers are current.
  public func waitUntilHealthy(timeout: Duration = .seconds(60)) async throws {
    let deadline = ContinuousClock.now + timeout
    var last = ""
    while ContinuousClock.now < deadline {
      guard isRunning else { throw NATSTestSupportError("\(configuration.name) exited; log: \(logTail())") }
      if let (status, body) = monitoringGet("/healthz") {
        if status == 200 { return }
        last = "\(status) \(body)"
      }
      try await Task.sleep(for: .milliseconds(100))
    }
    throw NATSTestSupportError("\(configuration.name) not healthy after \(timeout): \(last); log: \(logTail())")
  }

  /// A monitoring endpoint's body (for example `/jsz?streams=true`), or nil when the server does not answer.
  public func monitoring(_ path: String) -> String? {
    monitoringGet(path).map(\.body)
  }

  /// A GET of the monitoring endpoint: directly, or from inside the server's namespace.
  private func monitoringGet(_ path: String) -> (status: Int, body: String)? {
    guard let namespace = configuration.namespace else {
      return httpGet(host: configuration.host, port: configuration.monitoringPort, path: path)
    }
    let script = """
      import urllib.request, urllib.error, sys
      try:
          r = urllib.request.urlopen("http://\(configuration.host):\(configuration.monitoringPort)\(path)", timeout=2)
          print(r.status); print(r.read().decode())
      except urllib.error.HTTPError as e:
          print(e.code); print(e.read().decode())
      except Exception:
          sys.exit(1)
      """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: NetworkLab.ipCommand)
    process.arguments = ["netns", "exec", namespace, "python3", "-c", script]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    let lines = text.split(separator: "\n", maxSplits: 1)
    guard let first = lines.first, let status = Int(first) else { return nil }
    return (status, lines.count > 1 ? String(lines[1]) : "")
  }

  /// The last `lines` lines of the server's log.
  public func logTail(lines: Int = 20) -> String {
    guard let text = try? String(contentsOfFile: configuration.logFile, encoding: .utf8) else { return "(no log)" }
    return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
  }
}

/// A cluster of `nats-server` processes with JetStream, routed to each other on 127.0.0.1.
public final class NATSTestCluster: Sendable {
  /// The servers, in order (`NAME-0`, `NAME-1`, …).
  public let servers: [NATSServerProcess]
  /// The temporary directory holding every server's store and log.
  public let directory: String

  /// Every server's client URL.
  public var urls: [String] { servers.map(\.url) }

  /// Starts `nodes` servers named `name-0`… (each with the configuration file `configText`, whose `%DIR%` is
  /// the cluster's directory, when given); returns once every one is healthy (JetStream meta leader elected).
  public static func start(
    nodes: Int = 3, name: String = "test-cluster", configText: String? = nil
  ) async throws -> NATSTestCluster {
    let directory = try makeTemporaryDirectory(prefix: "nats-cluster")
    var routePorts: [Int] = []
    for _ in 0..<nodes { routePorts.append(try freeLocalPort()) }
    var servers: [NATSServerProcess] = []
    do {
      for index in 0..<nodes {
        let cluster = NATSServerProcess.Configuration.Cluster(
          name: name, port: routePorts[index],
          routePorts: routePorts.enumerated().filter { $0.offset != index }.map(\.element))
        var configuration = try NATSServerProcess.Configuration(
          name: "\(name)-\(index)", directory: directory, cluster: cluster)
        configuration.configText = configText?.replacingOccurrences(of: "%DIR%", with: directory)
        servers.append(try NATSServerProcess(configuration))
      }
      let cluster = NATSTestCluster(servers: servers, directory: directory)
      try await cluster.waitUntilHealthy()
      return cluster
    } catch {
      for server in servers { server.kill() }
      try? FileManager.default.removeItem(atPath: directory)
      throw error
    }
  }

  private init(servers: [NATSServerProcess], directory: String) {
    self.servers = servers
    self.directory = directory
  }

  /// Waits until every running server is healthy.
  public func waitUntilHealthy(timeout: Duration = .seconds(90)) async throws {
    for server in servers where server.isRunning { try await server.waitUntilHealthy(timeout: timeout) }
  }

  /// Stops every server and deletes their stores and logs.
  public func remove() {
    for server in servers { server.stop() }
    try? FileManager.default.removeItem(atPath: directory)
  }
}

/// A single `nats-server` with JetStream in a temporary directory of its own.
public final class NATSTestServer: Sendable {
  /// The server.
  public let server: NATSServerProcess
  /// Its temporary directory (store and log).
  public let directory: String

  /// Its client URL.
  public var url: String { server.url }

  /// Starts a server named `name` (with the configuration file `configText`, whose `%DIR%` is the server's
  /// directory, when given); returns once it is healthy.
  public static func start(
    name: String = "test-server", configText: String? = nil, port: Int? = nil
  ) async throws -> NATSTestServer {
    let directory = try makeTemporaryDirectory(prefix: "nats-server")
    do {
      var configuration = try NATSServerProcess.Configuration(name: name, directory: directory)
      configuration.configText = configText?.replacingOccurrences(of: "%DIR%", with: directory)
      if let port { configuration.port = port }
      let server = try NATSServerProcess(configuration)
      let started = NATSTestServer(server: server, directory: directory)
      try await server.waitUntilHealthy()
      return started
    } catch {
      try? FileManager.default.removeItem(atPath: directory)
      throw error
    }
  }

  private init(server: NATSServerProcess, directory: String) {
    self.server = server
    self.directory = directory
  }

  /// Stops the server and deletes its store and log.
  public func remove() {
    server.stop()
    try? FileManager.default.removeItem(atPath: directory)
  }
}

/// Runs `body` with a fresh single server (configured by `configText`, see ``NATSTestServer/start(name:configText:port:)``),
/// then stops it and deletes its files, whatever `body` did.
public func withNATSServer<Result>(
  name: String = "test-server", configText: String? = nil, _ body: (NATSTestServer) async throws -> Result
) async throws -> Result {
  let server = try await NATSTestServer.start(name: name, configText: configText)
  defer { server.remove() }
  return try await body(server)
}

/// Runs `body` with a fresh cluster of `nodes` servers, then stops them and deletes their files.
public func withNATSCluster<Result>(
  nodes: Int = 3, name: String = "test-cluster", _ body: (NATSTestCluster) async throws -> Result
) async throws -> Result {
  let cluster = try await NATSTestCluster.start(nodes: nodes, name: name)
  defer { cluster.remove() }
  return try await body(cluster)
}

/// A new empty directory under the system's temporary directory; delete it with ``removeDirectory(_:)``.
public func makeTemporaryDirectory(prefix: String) throws -> String {
  let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
  try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  return path
}

/// Deletes `path` and everything in it (errors ignored: for test cleanup).
public func removeDirectory(_ path: String) {
  try? FileManager.default.removeItem(atPath: path)
}

/// True when every thread of process `pid` is in the stopped state (`T` in /proc/PID/task/TID/stat).
private func allThreadsStopped(_ pid: Int32) -> Bool {
  guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return false }
  for thread in threads {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return false }
    // "TID (comm) S ...": the state follows the command name's closing parenthesis.
    let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
    if state != "T" && state != "t" { return false }
  }
  return !threads.isEmpty
}

/// A plain HTTP/1.0 GET to 127.0.0.1:`port` (the monitoring endpoint); nil when nothing answers.
private func httpGet(host: String, port: Int, path: String) -> (status: Int, body: String)? {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { return nil }
  defer { close(fd) }
  var timeout = timeval(tv_sec: 2, tv_usec: 0)
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = in_port_t(UInt16(port).bigEndian)
  address.sin_addr.s_addr = inet_addr(host)
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
  }
  guard connected == 0 else { return nil }
  let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
  guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else { return nil }
  var response: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 4096)
  while true {
    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if count <= 0 { break }
    response += buffer[0..<count]
  }
  let text = String(decoding: response, as: UTF8.self)
  // "HTTP/1.1 200 OK\r\n…\r\n\r\nbody"
  let statusLine = text.prefix { $0 != "\r" && $0 != "\n" }
  let parts = statusLine.split(separator: " ")
  guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
  let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
  return (status, body)
}
