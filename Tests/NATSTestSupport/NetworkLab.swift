// Tests/NATSTestSupport/NetworkLab.swift - test hosts in network namespaces, on one switch, with cables to cut
//
// What crosses a network (a relay's link to NATS, a NATS node's routes to the others) is tested on hosts of the
// test's own: each host a network namespace (`ip netns`), cabled by a veth pair to a bridge in a namespace of
// its own (the switch). Cutting a host's cable (its port on the switch down) partitions it from every other
// host at once, with its sockets open and no error: what a network partition does. The addresses are
// 10.77.N.x/24, on these hosts only; nothing leaves the namespaces. Needs root (CI runs as root).

import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A switch and the hosts cabled to it (see the file comment). ``remove()`` deletes every namespace (which ends
/// what runs in them once their processes are killed).
public final class NetworkLab: @unchecked Sendable {
  // @unchecked: the host table is guarded by `lock`; the test drives the lab from one task.
  public struct Host: Sendable {
    /// The namespace.
    public let namespace: String
    /// The host's address on the switch.
    public let address: String
    /// The switch's end of the host's cable.
    let switchPort: String
  }

  public let prefix: String
  private let subnet: Int
  private let lock = NSLock()
  private var hosts: [String: Host] = [:]
  private var nextAddress = 1

  /// Whether the lab can run here: root, and the `ip` command.
  public static var isAvailable: Bool {
    getuid() == 0 && FileManager.default.isExecutableFile(atPath: ipCommand)
  }

  static let ipCommand = "/usr/sbin/ip"

  /// Makes the switch.
  public init() throws {
    let tag = String(UInt32.random(in: 0..<0xFFFF), radix: 16)
    prefix = "jl\(tag)"
    subnet = Int.random(in: 1...250)
    try Self.ip(["netns", "add", "\(prefix)-sw"])
    try Self.ip(["-n", "\(prefix)-sw", "link", "add", "br0", "type", "bridge"])
    try Self.ip(["-n", "\(prefix)-sw", "link", "set", "br0", "up"])
  }

  /// Adds a host named `name` (a namespace with one cable to the switch); returns it.
  @discardableResult
  public func addHost(_ name: String) throws -> Host {
    let (index, address) = lock.withLock { () -> (Int, String) in
      defer { nextAddress += 1 }
      return (nextAddress, "10.77.\(subnet).\(nextAddress)")
    }
    let namespace = "\(prefix)-\(name)"
    let hostEnd = "\(prefix)h\(index)"
    let switchEnd = "\(prefix)s\(index)"
    try Self.ip(["netns", "add", namespace])
    try Self.ip(["link", "add", hostEnd, "type", "veth", "peer", "name", switchEnd])
    try Self.ip(["link", "set", hostEnd, "netns", namespace])
    try Self.ip(["link", "set", switchEnd, "netns", "\(prefix)-sw"])
    try Self.ip(["-n", namespace, "addr", "add", "\(address)/24", "dev", hostEnd])
    try Self.ip(["-n", namespace, "link", "set", hostEnd, "up"])
    try Self.ip(["-n", namespace, "link", "set", "lo", "up"])
    try Self.ip(["-n", "\(prefix)-sw", "link", "set", switchEnd, "master", "br0"])
    try Self.ip(["-n", "\(prefix)-sw", "link", "set", switchEnd, "up"])
    let host = Host(namespace: namespace, address: address, switchPort: switchEnd)
    lock.withLock { hosts[name] = host }
    return host
  }

  /// Cuts `host` off the switch: every other host is unreachable from it, and it from them.
  public func cut(_ host: Host) throws { try Self.ip(["-n", "\(prefix)-sw", "link", "set", host.switchPort, "down"]) }

  /// Cables `host` back.
  public func restore(_ host: Host) throws {
    try Self.ip(["-n", "\(prefix)-sw", "link", "set", host.switchPort, "up"])
  }

  /// `executable` and `arguments` as run inside `host` (with `ip netns exec`, which becomes the program).
  public func command(in host: Host, _ executable: String, _ arguments: [String]) -> (String, [String]) {
    (Self.ipCommand, ["netns", "exec", host.namespace, executable] + arguments)
  }

  /// Runs a command inside `host` to its end; its standard output, and whether it exited 0.
  public func run(in host: Host, _ executable: String, _ arguments: [String]) throws -> (output: String, ok: Bool) {
    let (command, all) = command(in: host, executable, arguments)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command)
    process.arguments = all
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (String(decoding: data, as: UTF8.self), process.terminationStatus == 0)
  }

  /// Deletes every namespace of the lab.
  public func remove() {
    let all = lock.withLock { Array(hosts.values) }
    for host in all {
      // Anything still running inside goes first: a namespace is freed with its last process.
      _ = try? Self.ipQuiet(["netns", "pids", host.namespace]).split(whereSeparator: \.isNewline).map {
        kill(pid_t(String($0)) ?? 0, SIGKILL)
      }
      _ = try? Self.ipQuiet(["netns", "del", host.namespace])
    }
    _ = try? Self.ipQuiet(["netns", "del", "\(prefix)-sw"])
  }

  @discardableResult
  static func ip(_ arguments: [String]) throws -> String {
    let (output, status) = try run(arguments)
    guard status == 0 else { throw NATSTestSupportError("ip \(arguments.joined(separator: " ")): \(output)") }
    return output
  }

  static func ipQuiet(_ arguments: [String]) throws -> String { try run(arguments).0 }

  private static func run(_ arguments: [String]) throws -> (String, Int32) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: ipCommand)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (String(decoding: data, as: UTF8.self), process.terminationStatus)
  }
}

extension NSLock {
  fileprivate func withLock<T>(_ body: () throws -> T) rethrows -> T {
    lock()
    defer { unlock() }
    return try body()
  }
}
