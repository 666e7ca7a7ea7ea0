// Sources/UpdatePipeline/LatestValueMailbox.swift - one subscriber's latest value and merged change bits
//
// A triple buffer with the change bits carried in the slots: the writer fills its back slot and swaps it
// with the middle one in one compare-and-swap of a control word; the reader swaps its front slot with the
// middle one when the middle holds something it has not taken. The same control word carries the
// "delivery scheduled" and "closed" flags, so a publish decides in that one atomic step both that the value
// is visible and whether a delivery has to be scheduled.

public import Synchronization

/// One subscriber's mailbox: the newest value and the OR of the change bits published since the last take.
///
/// A slow reader never blocks the writer and never makes anything queue up: a publish replaces a value the
/// reader has not taken yet (releasing it on the writer's thread) and merges its change bits into the
/// replacement's, so the reader's next take gets the newest value together with everything that changed since
/// its previous take. Bits always travel with the value that carries them, never ahead of it.
///
/// Roles: one writer (`publish`) and one reader (`take`, `finishDelivery`) at a time. Either role may move to
/// another thread when something orders the two (a delivery queue, a task hop, a lock). `close()`,
/// `hasPending` and `isClosed` may be called from any thread.
///
/// Progress: no locks and no allocation. Every operation is one load and one compare-and-swap, retried only
/// when the other side changed the control word at the same instant (at most once per step of the other
/// side), so a publish costs the same whether or not a reader is slow: about 35 ns in a release build on the
/// development machine, most of it the retain of the new value and the release of the one it replaces.
///
/// Delivery protocol with an executor (the writer schedules, the reader runs on a delivery thread):
///
///     // writer (the event loop)
///     if mailbox.publish(snapshot, changes: bits) { executor.submit(job) }
///     // job.runDelivery() on a delivery thread
///     repeat {
///       let (value, changes) = mailbox.take()
///       if let value { callback(value, changes) }
///     } while mailbox.finishDelivery()
///
/// `publish` returns true exactly when the mailbox goes from idle to scheduled, so at most one delivery is
/// scheduled or running per mailbox; `finishDelivery` returns it to idle unless something arrived meanwhile.
///
/// Memory: one object of 32 + 3 × (`MemoryLayout<Value?>.stride` + 8) bytes and at most one value at rest
/// (the untaken one). With a class (or any one-word) `Value` that is 80 bytes, a 96-byte heap block.
public final class LatestValueMailbox<Value: Sendable>: Sendable {
  // The operations are @inlinable so that callers get them specialized for their `Value`: unspecialized
  // generic code would look up metadata and copy values through witness tables on every publish. The
  // internals they touch are therefore @usableFromInline; they are not API.

  /// One buffer of the triple buffer: a value and the change bits that go with it.
  @usableFromInline
  struct Slot {
    @usableFromInline var value: Value?
    @usableFromInline var changes: UInt64

    @inlinable
    init() {
      value = nil
      changes = 0
    }
  }

  // Control word layout.
  @inlinable static var middleMask: UInt32 { 0b0_0011 }  // which slot is the middle one (0...2)
  @inlinable static var fresh: UInt32 { 0b0_0100 }  // the middle slot holds a value not taken yet
  @inlinable static var scheduled: UInt32 { 0b0_1000 }  // a delivery is scheduled or running
  @inlinable static var closed: UInt32 { 0b1_0000 }  // publishes are refused

  @usableFromInline let control = Atomic<UInt32>(1)  // middle = slot 1, nothing fresh, idle, open

  // The plain state below is `nonisolated(unsafe)` because each piece has one owner at a time, as noted,
  // and `@exclusivity(unchecked)` because those owners never overlap (the runtime check would cost more
  // than the whole publish).

  /// The writer's back slot index. Writer-only state (one writer at a time).
  @usableFromInline @exclusivity(unchecked) nonisolated(unsafe) var writerBack: UInt8 = 0
  /// The reader's front slot index. Reader-only state (one reader at a time).
  @usableFromInline @exclusivity(unchecked) nonisolated(unsafe) var readerFront: UInt8 = 2
  /// The bits stored with the current middle slot, carried into the next publish while it is untaken.
  /// Writer-only state (one writer at a time).
  @usableFromInline @exclusivity(unchecked) nonisolated(unsafe) var writerCarry: UInt64 = 0
  /// Bits of a value the writer took back with `reclaim()`, owed to the reader with the next publish.
  /// Writer-only state (one writer at a time).
  @usableFromInline @exclusivity(unchecked) nonisolated(unsafe) var reclaimedCarry: UInt64 = 0

  // The three slots are touched without atomics: the control word hands each one to exactly one side at a
  // time (writer: back slot, reader: front slot, nobody: middle slot), and the compare-and-swaps that move
  // a slot between sides are release/acquire, so every slot access is ordered after the previous owner's.
  @usableFromInline @exclusivity(unchecked) nonisolated(unsafe) var slot0 = Slot()
  @usableFromInline @exclusivity(unchecked) nonisolated(unsafe) var slot1 = Slot()
  @usableFromInline @exclusivity(unchecked) nonisolated(unsafe) var slot2 = Slot()

  /// Creates an empty, idle mailbox.
  public init() {}

  @inlinable @inline(__always)
  func withSlot<Result>(_ index: UInt32, _ body: (inout Slot) -> Result) -> Result {
    switch index {
    case 0: return body(&slot0)
    case 1: return body(&slot1)
    default: return body(&slot2)
    }
  }

  /// Writer: stores `value` (replacing an untaken one) and ORs `changes` into the pending bits.
  ///
  /// Returns true when the caller must schedule a delivery: the mailbox went from idle to scheduled.
  /// Returns false while a delivery is scheduled or running (it will see this value), and after `close()`
  /// (the value is dropped).
  @inlinable
  public func publish(_ value: Value, changes: UInt64) -> Bool {
    // Relaxed: only an early exit when closed; the exchange below orders the slot accesses.
    var observed = control.load(ordering: .relaxed)
    if observed & Self.closed != 0 { return false }
    let back = UInt32(writerBack)
    withSlot(back) { $0.value = value }
    var merged = changes
    while true {
      if observed & Self.closed != 0 {
        withSlot(back) { $0.value = nil }
        return false
      }
      // While the middle value is untaken its bits are still owed to the reader: carry them over (and
      // those of a value taken back with `reclaim()`).
      merged = (observed & Self.fresh != 0 ? changes | writerCarry : changes) | reclaimedCarry
      withSlot(back) { $0.changes = merged }
      let desired = (observed & ~Self.middleMask) | back | Self.fresh | Self.scheduled
      // Release: publishes the back slot's value and bits to the reader. Acquire: the slot given back (the
      // old middle) was last written by the reader, whose take released it. Failure relaxed: a retry only
      // re-reads the control word.
      let (exchanged, original) = control.compareExchange(
        expected: observed, desired: desired, successOrdering: .acquiringAndReleasing, failureOrdering: .relaxed)
      if exchanged { break }
      observed = original
    }
    let replaced = observed & Self.middleMask
    writerBack = UInt8(replaced)
    writerCarry = merged  // not read back from the slot: it belongs to the reader (or `close()`) now
    reclaimedCarry = 0
    // The old middle is ours now: release the value it held if the reader never took it (nil otherwise).
    if observed & Self.fresh != 0 { withSlot(replaced) { $0.value = nil } }
    return observed & Self.scheduled == 0
  }

  /// Writer: takes back the value published but not taken yet, if there is one; its change bits stay owed
  /// and travel with the next ``publish(_:changes:)``. Returns nil when the reader took the value (or is
  /// taking it), when nothing is pending, and after `close()`.
  ///
  /// For a writer that reuses a value's storage when nobody else holds it: a reader that lags keeps its
  /// untaken value referenced from the mailbox; taking it back lets the writer update that storage in
  /// place and publish it again, instead of copying it. A delivery already scheduled still runs (and finds
  /// nothing, or the next publish's value).
  @inlinable
  public func reclaim() -> Value? {
    // Relaxed: a snapshot to decide; the exchange below orders the slot access.
    var observed = control.load(ordering: .relaxed)
    while observed & Self.fresh != 0 && observed & Self.closed == 0 {
      // Acquire and release: the middle slot passes from "published" to the writer, as in `publish` when it
      // replaces an untaken value. Failure relaxed: a retry only re-reads the control word.
      let (exchanged, original) = control.compareExchange(
        expected: observed, desired: observed & ~Self.fresh, successOrdering: .acquiringAndReleasing,
        failureOrdering: .relaxed)
      if exchanged {
        reclaimedCarry |= writerCarry
        return withSlot(observed & Self.middleMask) { slot in
          let value = slot.value
          slot.value = nil
          return value
        }
      }
      observed = original
    }
    return nil
  }

  /// Reader: the newest value published since the last take (nil if none) and the OR of the change bits of
  /// every publish since the last take (0 when the value is nil).
  @inlinable
  public func take() -> (value: Value?, changes: UInt64) {
    // Relaxed: when nothing is fresh no slot is read; when something is, the exchange below acquires it.
    var observed = control.load(ordering: .relaxed)
    while observed & Self.fresh != 0 {
      let front = UInt32(readerFront)
      let desired = (observed & ~(Self.middleMask | Self.fresh)) | front
      // Acquire: the new front slot's value and bits, written by the writer before its releasing exchange.
      // Release: hands the emptied old front slot to the writer. Failure relaxed: a retry re-reads only.
      let (exchanged, original) = control.compareExchange(
        expected: observed, desired: desired, successOrdering: .acquiringAndReleasing, failureOrdering: .relaxed)
      if exchanged {
        let newFront = observed & Self.middleMask
        readerFront = UInt8(newFront)
        return withSlot(newFront) { slot in
          let value = slot.value
          slot.value = nil
          return (value, slot.changes)
        }
      }
      observed = original
    }
    return (nil, 0)
  }

  /// Reader, after delivering: marks the mailbox idle. Returns true if something was published meanwhile:
  /// the mailbox stays scheduled and the reader must take again.
  @inlinable
  public func finishDelivery() -> Bool {
    // Relaxed: the flags decide; a true result is followed by a take, which acquires.
    var observed = control.load(ordering: .relaxed)
    while true {
      if observed & Self.fresh != 0 { return true }
      if observed & Self.scheduled == 0 { return false }
      // Release: the reader's state (its front slot index) reaches the next reader through the writer's
      // acquiring publish, which then schedules that reader. Failure relaxed: a retry re-reads only.
      let (exchanged, original) = control.compareExchange(
        expected: observed, desired: observed & ~Self.scheduled, successOrdering: .releasing,
        failureOrdering: .relaxed)
      if exchanged { return false }
      observed = original
    }
  }

  /// Whether a value is waiting to be taken. A snapshot: it may change right after it is read.
  @inlinable
  public var hasPending: Bool {
    // Relaxed: an advisory snapshot of one flag; nothing else is read on its strength.
    control.load(ordering: .relaxed) & Self.fresh != 0
  }

  /// Whether `close()` has been called.
  @inlinable
  public var isClosed: Bool {
    // Relaxed: an advisory snapshot of one flag.
    control.load(ordering: .relaxed) & Self.closed != 0
  }

  /// Drops any pending value and bits and makes further publishes no-ops (they return false); for
  /// unsubscribe. Any thread; idempotent. A take that already started may still return the last value.
  public func close() {
    // Relaxed: the exchange below orders everything.
    var observed = control.load(ordering: .relaxed)
    while observed & Self.closed == 0 {
      // Acquire: the middle slot's value, written by the writer before its releasing publish, is released
      // here. Release: pairs with the acquiring loads of later publishes and takes. Failure relaxed: retry.
      let (exchanged, original) = control.compareExchange(
        expected: observed, desired: (observed | Self.closed) & ~Self.fresh,
        successOrdering: .acquiringAndReleasing, failureOrdering: .relaxed)
      if exchanged {
        // Nobody can reach the middle slot any more: publishes fail and takes find nothing fresh.
        if observed & Self.fresh != 0 { withSlot(observed & Self.middleMask) { $0.value = nil } }
        return
      }
      observed = original
    }
  }
}
