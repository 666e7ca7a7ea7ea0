// Sources/UpdatePipeline/LatestValueStream.swift - a LatestValueMailbox as an AsyncSequence
//
// The consumer task is the mailbox's reader. When it runs dry it marks the mailbox idle and parks its
// continuation, boxed, in an atomic slot; the writer's next publish finds the mailbox idle (publish returns
// true) and swaps a "notified" mark into the slot, resuming the continuation if one was there. A notice
// that arrives before the continuation is parked makes the parking fail, so the consumer never sleeps
// through a value. No locks on the way: while the consumer lags behind, a publish is just the mailbox's
// compare-and-swap; only a publish that finds the consumer idle also swaps the slot and resumes it.

import Primitives
public import Synchronization

/// An `AsyncSequence` over a ``LatestValueMailbox`` for Swift-native consumers: each `next()` returns the
/// newest value and the change bits merged since the previous `next()`, waiting (without holding a thread)
/// when there is none; the sequence ends after `finish()`, once the pending value has been taken.
///
/// One writer publishes at a time (the mailbox's writer role); `finish()` may be called from any thread.
/// One consumer: the first `makeAsyncIterator()` gets the values, later iterators end at once.
/// A slow consumer never blocks the writer and nothing queues up: the stream holds at most one value.
///
/// The consumer may stop early by cancelling its task or dropping its iterator; either way the mailbox is
/// closed (later publishes are cheap no-ops) and ``onTermination`` is called, so the producer can stop.
///
/// Memory: about 220 bytes with a one-word `Value` (this 48-byte object, the 80-byte mailbox, and a 48-byte
/// lock object with its 40-byte pthread mutex, for `onTermination`), plus one 24-byte box per wait while the
/// consumer is parked.
public final class LatestValueStream<Value: Sendable>: AsyncSequence, Sendable {
  /// The newest value and the OR of the change bits of every publish since the previous element.
  public typealias Element = (value: Value, changes: UInt64)
  /// The sequence never throws.
  public typealias Failure = Never

  /// The waiter slot holds 0 (empty), `notified`, or the address of a retained `WaiterBox`.
  private static var notified: UInt { 1 }

  @usableFromInline let mailbox = LatestValueMailbox<Value>()
  private let waiter = Atomic<UInt>(0)
  @usableFromInline let finished = Atomic<Bool>(false)
  private let terminated = Atomic<Bool>(false)
  private let iteratorClaimed = Atomic<Bool>(false)
  private let termination = Locked(TerminationState())

  private struct TerminationState {
    var handler: (@Sendable () -> Void)?
    var fired = false
  }

  /// Creates an empty stream.
  public init() {}

  /// Called once when the sequence ends: the consumer got nil after `finish()`, its task was cancelled,
  /// or its iterator was dropped before the end. Set it before iterating; set after the end, it is called
  /// at once. Runs on the thread that ended the sequence; it must not block.
  public var onTermination: (@Sendable () -> Void)? {
    get { termination.withLock { $0.handler } }
    set {
      let callNow = termination.withLock { state -> Bool in
        guard !state.fired else { return true }
        state.handler = newValue
        return false
      }
      if callNow { newValue?() }
    }
  }

  /// Writer: hands `value` and its change bits to the consumer, resuming it if it waits. Ignored after
  /// `finish()` or after the consumer went away.
  @inlinable
  public func publish(_ value: Value, changes: UInt64) {
    // Relaxed: a publish racing with finish may go either way; one after it (on any thread that saw the
    // finish) sees the flag.
    if finished.load(ordering: .relaxed) { return }
    if mailbox.publish(value, changes: changes) { notifyConsumer() }
  }

  /// Ends the sequence after the pending value (if any) has been taken. Any thread; idempotent.
  public func finish() {
    // Release: a value published before this call is visible to a consumer that acquires the flag.
    finished.store(true, ordering: .releasing)
    notifyConsumer()
  }

  /// Marks the slot notified and resumes the continuation parked there, if any.
  @usableFromInline
  func notifyConsumer() {
    // Acquire: the box was written before the consumer's releasing compare-and-swap. Release: the consumer
    // that reads the notice (or is resumed) sees the value published / the finish flag set before it.
    let previous = waiter.exchange(Self.notified, ordering: .acquiringAndReleasing)
    if previous > Self.notified {
      // Unsafe pointer: `previous` is the address of the box retained in `park`; the exchange removed it
      // from the slot, so this is its only owner and takes the retain back exactly once.
      let box = Unmanaged<WaiterBox>.fromOpaque(UnsafeRawPointer(bitPattern: previous)!).takeRetainedValue()
      box.continuation.resume()
    }
  }

  /// Whether a consumer is parked (for tests).
  var hasWaiter: Bool {
    // Relaxed: an advisory snapshot.
    waiter.load(ordering: .relaxed) > Self.notified
  }

  /// Whether the consumer went away or the sequence ended (for tests).
  var isTerminated: Bool {
    // Relaxed: an advisory snapshot.
    terminated.load(ordering: .relaxed)
  }

  /// Creates the iterator; only the first one receives values.
  public func makeAsyncIterator() -> AsyncIterator {
    // Relaxed: only decides which caller is the consumer; nothing is published with it.
    let first = !iteratorClaimed.exchange(true, ordering: .relaxed)
    return AsyncIterator(stream: first ? self : nil)
  }

  // MARK: - Consumer side

  /// The consumer's `next()`: the mailbox's reader.
  fileprivate func next(isolation actor: isolated (any Actor)?) async -> Element? {
    while true {
      // Relaxed: set only by the consumer side itself (this task, or the iterator's drop after it).
      if terminated.load(ordering: .relaxed) { return nil }
      if Task.isCancelled {
        terminate()
        return nil
      }
      let (value, changes) = mailbox.take()
      if let value { return (value, changes) }
      // Acquire: pairs with finish(); a value published before finish() is then seen by the second take.
      if finished.load(ordering: .acquiring) {
        let (last, lastChanges) = mailbox.take()
        if let last { return (last, lastChanges) }
        terminate()
        return nil
      }
      // Clear a stale notice, then go idle. Acquire: if a notice was there, what the notifier published
      // before it (a value, the finish flag) is visible to the checks below. Release: pairs with notifiers.
      _ = waiter.exchange(0, ordering: .acquiringAndReleasing)
      if mailbox.finishDelivery() { continue }
      // Acquire: as above. A finish() after the clear leaves its notice in the slot, so `park` won't sleep.
      if finished.load(ordering: .acquiring) { continue }
      await park(isolation: actor)
    }
  }

  /// Suspends until the next notice (a publish that found the mailbox idle, `finish()`, cancellation).
  private func park(isolation actor: isolated (any Actor)?) async {
    await withTaskCancellationHandler {
      await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
        let box = Unmanaged.passRetained(WaiterBox(continuation))
        // Unsafe pointer: the slot stores the box's address as an integer; boxes are at least 16-byte
        // aligned, so it never collides with 0 or `notified`.
        let address = UInt(bitPattern: box.toOpaque())
        // Release: the box is fully built before a notifier can take it. Acquire (failure): the notice's
        // payload (a value, the finish flag) is visible when the loop re-checks.
        let (parked, _) = waiter.compareExchange(
          expected: 0, desired: address, successOrdering: .releasing, failureOrdering: .acquiring)
        if !parked {
          // A notice arrived since the slot was cleared: don't sleep.
          box.release()
          continuation.resume()
        }
      }
    } onCancel: {
      self.notifyConsumer()
    }
  }

  /// Ends the sequence for good: closes the mailbox and calls `onTermination` once.
  fileprivate func terminate() {
    // Relaxed: only makes termination idempotent; the handler is handed over under the mutex.
    if terminated.exchange(true, ordering: .relaxed) { return }
    mailbox.close()
    let handler = termination.withLock { state -> (@Sendable () -> Void)? in
      state.fired = true
      let handler = state.handler
      state.handler = nil
      return handler
    }
    handler?()
  }

  /// Iterates a ``LatestValueStream``.
  public struct AsyncIterator: AsyncIteratorProtocol {
    /// The iterator never throws.
    public typealias Failure = Never

    private let stream: LatestValueStream?
    private let lifetime: IteratorLifetime?

    fileprivate init(stream: LatestValueStream?) {
      self.stream = stream
      lifetime = stream.map { IteratorLifetime(stream: $0) }
    }

    /// The newest value and the change bits merged since the previous call; nil once the sequence ended.
    public mutating func next() async -> Element? {
      await next(isolation: nil)
    }

    /// The newest value and the change bits merged since the previous call; nil once the sequence ended.
    /// Waits on the caller's actor, without hopping off it.
    public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
      guard let stream else { return nil }
      return await stream.next(isolation: actor)
    }
  }

  /// Ends the stream when the last copy of the consumer's iterator goes away.
  private final class IteratorLifetime: Sendable {
    let stream: LatestValueStream

    init(stream: LatestValueStream) {
      self.stream = stream
    }

    deinit {
      stream.terminate()
    }
  }
}

/// A parked consumer's continuation, boxed so its address fits an atomic word.
private final class WaiterBox {
  let continuation: UnsafeContinuation<Void, Never>

  init(_ continuation: UnsafeContinuation<Void, Never>) {
    self.continuation = continuation
  }
}
