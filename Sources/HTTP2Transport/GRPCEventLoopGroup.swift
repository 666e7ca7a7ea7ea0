// Sources/HTTP2Transport/GRPCEventLoopGroup.swift - event loops shared by channels: I/O on every core
//
// A group is a fixed set of event loops, one per core by default. Channels given the same group
// share its threads: each channel keeps a part of its connection pool on every loop of the group
// (a sub-pool per loop), so a call started on a loop runs on a connection of that loop and reports
// there, and nothing is shared between loops but the channel's resolved addresses.

public import GRPCProtocol
import Primitives
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A set of event loop threads that channels share.
///
/// Give one to several channels (``GRPCChannelConfiguration/eventLoopGroup``) to run them all on
/// the same threads. A group lives until ``shutdown()`` or until the last reference to it goes (the
/// channels using it hold one each), whichever comes first; shut it down only after the channels
/// using it have shut down, or their calls never finish.
public final class GRPCEventLoopGroup: Sendable {
  /// The loops, each with a thread of its own.
  package let loops: [EventLoop]
  private let nextIndex = Atomic<Int>(0)
  private let stopped = Atomic<Bool>(false)

  /// The number of cores this process may run on (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1.
  public static var coreCount: Int {
    max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
  }

  /// Starts `loopCount` loops (at least 1): by default one per core.
  ///
  /// - Parameters:
  ///   - name: The threads' name prefix, for debuggers and logs.
  ///   - readCoalescing: How long a loop that just read from its sockets waits before it reads again, at most
  ///     10 ms (its timers, the tasks other threads give it and its shutdown then wait up to that much too); zero,
  ///     the default, reads again at once. A loop busy with many streams of
  ///     small messages then reads what arrived meanwhile in one turn: fewer system calls and wake-ups of the
  ///     threads it hands messages to, for at most this much more latency. A loop that was idle reads at once.
  public init(
    loopCount: Int = GRPCEventLoopGroup.coreCount, name: String = "grpc-loop", readCoalescing: Duration = .zero
  ) {
    loops = (0..<max(1, loopCount)).map { EventLoop(name: "\(name)-\($0)", readCoalescing: readCoalescing) }
  }

  deinit {
    shutdown()
  }

  /// How many loops the group runs.
  public var loopCount: Int { loops.count }

  /// The group's loops, as schedulers: a call started on one runs on it.
  public var schedulers: [any GRPCScheduler] { loops }

  /// The next loop, round robin.
  package func next() -> EventLoop {
    loops[nextIndex.add(1, ordering: .relaxed).oldValue % loops.count]
  }

  /// The index of `scheduler` among the group's loops, if it is one of them.
  package func index(of scheduler: any GRPCScheduler) -> Int? {
    loops.firstIndex { $0 === scheduler }
  }

  /// Stops every loop after the work already queued on it, and waits for their threads (except
  /// the caller's own, when it is one of them). Once only; later calls do nothing.
  public func shutdown() {
    guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
    for loop in loops { loop.shutdown() }
  }
}
