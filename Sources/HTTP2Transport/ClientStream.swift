// Sources/HTTP2Transport/ClientStream.swift - one stream of a client connection: its call, the call's machine, its window
//
// A connection keeps one ClientStream per open stream in its ConnectionStateMachine. The stream pairs the
// call with its GRPCClientCall state machine and, for a call whose consumer returns window itself (manual
// flow control), the accounting of that window (ManualReceiveWindow). No I/O here.

import GRPCProtocol

/// One open stream: the call it carries and that call's state machine.
///
/// A class, so the call machine (and its deframer buffer) is changed in place rather than copied out of and
/// back into the stream table at each event.
final class ClientStream {
  let call: PendingCall
  var machine: GRPCClientCall
  /// The stream's receive window, when the consumer returns it (``PendingCall/receiver``).
  var window = ManualReceiveWindow()

  init(call: PendingCall, machine: GRPCClientCall) {
    self.call = call
    self.machine = machine
  }

  /// DATA arrived: the call's machine completes messages and hands each to the call's handler (or its receiver,
  /// with manual flow control). Returns the machine's action, and with manual flow control the bytes to return
  /// to the stream's window now (the connection's takes the whole chunk); nil: the chunk returns to both.
  func receive(_ data: UnsafeRawBufferPointer) -> (action: GRPCClientCall.Action, streamWindowBytes: Int?) {
    guard let receiver = call.receiver else {
      let handler = call.handler
      let action = machine.receiveData(data, endStream: false) { message, compression in
        handler.callDidReceiveMessage(message, compression: compression)
      }
      return (action, nil)
    }
    window.received(data.count)
    var firstInChunk = true
    var consumed = 0
    let action = machine.receiveMessages(data, endStream: false) { message in
      let wireSize = firstInChunk ? window.completedMessageBegunEarlier(message.windowBytes) : message.windowBytes
      firstInChunk = false
      consumed += message.windowBytes
      receiver.callDidReceive(message.bytes, compression: message.compression, windowBytes: wireSize)
    }
    window.holdPartial(data.count - consumed)
    return (action, window.releasePartialIfClear())
  }
}

/// The receive window of a stream whose consumer returns window as it takes messages, in wire bytes.
///
/// The connection's own window reopens as bytes arrive, so other streams keep flowing; this stream's reopens
/// as its consumer takes messages, each returning its whole wire size. A message still being assembled is
/// returned early while nothing is owed, so a message larger than the window can complete; the bytes
/// returned early are then withheld from what the consumer returns until paid back. What the consumer holds
/// stays within about one window plus one message.
struct ManualReceiveWindow: Equatable {
  /// Received and not yet returned to the window.
  private(set) var unreleasedBytes = 0
  /// Bytes of the message being assembled that are still held.
  private(set) var partialHeld = 0
  /// Bytes of the message being assembled that were returned early (so it can complete).
  private(set) var partialReleased = 0
  /// Bytes returned early for messages now complete and queued for the consumer, withheld from what the
  /// consumer returns until paid back.
  private(set) var completedDebt = 0

  /// `count` bytes of DATA arrived.
  mutating func received(_ count: Int) {
    unreleasedBytes += count
  }

  /// The first message completed in a chunk of DATA, `bytes` of it in this chunk: returns its whole wire
  /// size, the bytes of it held or returned early from earlier chunks included.
  mutating func completedMessageBegunEarlier(_ bytes: Int) -> Int {
    let size = bytes + partialHeld + partialReleased
    completedDebt += partialReleased
    partialHeld = 0
    partialReleased = 0
    return size
  }

  /// `bytes` of the chunk belong to a message not complete yet.
  mutating func holdPartial(_ bytes: Int) {
    partialHeld += bytes
  }

  /// The consumer took messages of `bytes` wire bytes: returns how many bytes go back to the stream's
  /// window, after paying back what was returned early for them.
  mutating func release(_ bytes: Int) -> Int {
    let paid = min(bytes, completedDebt)
    completedDebt -= paid
    let released = min(bytes - paid, unreleasedBytes)
    unreleasedBytes -= released
    return released
  }

  /// Returns the held bytes of the message being assembled at once, unless window returned early for earlier
  /// messages is still owed: how many bytes go back to the stream's window.
  mutating func releasePartialIfClear() -> Int {
    guard completedDebt == 0, partialHeld > 0 else { return 0 }
    let early = min(partialHeld, unreleasedBytes)
    partialHeld = 0
    partialReleased += early
    unreleasedBytes -= early
    return early
  }
}
