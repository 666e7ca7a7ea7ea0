// Sources/HTTP2Transport/ByteStream.swift - a TCP connection, optionally TLS, on an event loop
//
// Shared by client and server connections: connects (or adopts an accepted
// socket), runs the TLS handshake, reads in batches until the socket is
// drained, and writes everything queued in as few `write` calls as possible.

import HTTP2Session
package import TLSCrypto

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// What a ``ByteStream`` reports to its owner, on the loop thread.
package protocol ByteStreamDelegate: AnyObject {
  /// The connection (and TLS handshake, if any) completed.
  func byteStreamDidBecomeReady(_ stream: ByteStream)
  /// Plaintext arrived.
  func byteStream(_ stream: ByteStream, didReceive bytes: UnsafeRawBufferPointer)
  /// A batch of reads ended: a good moment to produce and flush output.
  func byteStreamDidFinishReading(_ stream: ByteStream)
  /// The stream closed; `error` says why, `nil` when its owner closed it cleanly.
  func byteStream(_ stream: ByteStream, didCloseWithError error: ConnectionError?)
  /// Everything queued was written after the socket had made it wait: a moment to queue more, and to
  /// resume reading if it was paused for output.
  func byteStreamDidDrainOutput(_ stream: ByteStream)
}

extension ByteStreamDelegate {
  package func byteStreamDidDrainOutput(_ stream: ByteStream) {}
}

/// A non-blocking TCP stream, with TLS when a ``TLSEngine`` is given. Confined to its loop.
package final class ByteStream: EventLoopHandler {
  private enum State {
    case connecting
    case handshaking
    case open
    case closed
  }

  package let loop: EventLoop
  package let fd: Int32
  /// The address being connected to, for the errors of a failed connect.
  private let peer: String
  private let tls: TLSEngine?
  private var state: State
  package weak var delegate: (any ByteStreamDelegate)?

  private var readBuffer: UnsafeMutableRawBufferPointer
  private var plaintextScratch: UnsafeMutableRawBufferPointer?
  private var outbound: [UInt8] = []
  private var outboundOffset = 0
  private var wantsWritable = false
  private var readPaused = false

  /// Bytes queued for the socket and not yet written.
  package var outboundBufferedBytes: Int { outbound.count - outboundOffset }
  /// Whether reading is paused (``pauseReading()``).
  package var isReadingPaused: Bool { readPaused }
  /// Whether the stream is open for reading and writing.
  package var isOpen: Bool { if case .open = state { true } else { false } }

  private static let readBufferSize = 64 * 1024
  private static let maxReadsPerEvent = 16

  /// Wraps `fd`. `connecting`: a non-blocking connect to `peer` is in progress.
  package init(loop: EventLoop, fd: Int32, tls: TLSEngine?, connecting: Bool, peer: String = "the peer") {
    self.loop = loop
    self.fd = fd
    self.peer = peer
    self.tls = tls
    self.state = connecting ? .connecting : (tls == nil ? .open : .handshaking)
    self.readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
    if tls != nil { plaintextScratch = .allocate(byteCount: Self.readBufferSize, alignment: 16) }
  }

  /// A stream connecting to `address` (a non-blocking socket, and a TLS client for `serverName` when a context
  /// is given), not started yet.
  package static func connecting(
    to address: SocketAddress, loop: EventLoop, tlsContext: TLSContext?, serverName: String?
  ) throws(ConnectionError) -> ByteStream {
    let fd: Int32
    do {
      fd = try Socket.makeNonBlocking(family: address.family)
    } catch {
      throw .io(operation: "socket", errno: error.errnoCode)
    }
    var tls: TLSEngine?
    if let tlsContext {
      do {
        tls = try TLSEngine(context: tlsContext, serverName: serverName)
      } catch {
        Glibc.close(fd)
        throw .tlsHandshakeFailed(reason: error.description)
      }
    }
    do {
      let done = try Socket.connect(fd, to: address)
      return ByteStream(loop: loop, fd: fd, tls: tls, connecting: !done, peer: address.description)
    } catch {
      Glibc.close(fd)
      throw .connectFailed(to: address.description, errno: error.errnoCode)
    }
  }

  deinit {
    readBuffer.deallocate()
    plaintextScratch?.deallocate()
    if case .closed = state {} else { Glibc.close(fd) }
  }

  /// Registers with the loop and starts connecting or handshaking. Loop thread only.
  package func start() {
    loop.assertInEventLoop()
    Socket.setNoDelay(fd)
    switch state {
    case .connecting:
      loop.register(fd: fd, handler: self, readable: false, writable: true)
      wantsWritable = true
    case .handshaking:
      loop.register(fd: fd, handler: self, readable: true, writable: false)
      // A server waits for the ClientHello; a client sends its hello now.
      advanceHandshake()
    case .open:
      loop.register(fd: fd, handler: self, readable: true, writable: false)
      loop.executeSoon { [weak self] in
        guard let self, self.isOpen else { return }
        self.delegate?.byteStreamDidBecomeReady(self)
      }
    case .closed:
      break
    }
  }

  // MARK: - Events

  package func handleEvent(readable: Bool, writable: Bool, hangup: Bool) {
    switch state {
    case .connecting:
      let error = Socket.pendingError(fd)
      if error != 0 {
        close(error: .connectFailed(to: peer, errno: error))
        return
      }
      if writable || hangup {
        if hangup {
          close(error: .closedByPeer)
          return
        }
        connected()
      }
    case .handshaking, .open:
      if writable { flushSocket() }
      if hangup && readPaused {
        // Gone both ways while reading was paused: nothing more can be read or written.
        close(error: .closedByPeer)
        return
      }
      if readable || hangup { readAvailable() }
    case .closed:
      break
    }
  }

  private func connected() {
    if tls != nil {
      state = .handshaking
      updateInterest(writable: false)
      advanceHandshake()
    } else {
      state = .open
      updateInterest(writable: false)
      delegate?.byteStreamDidBecomeReady(self)
    }
  }

  private func advanceHandshake() {
    guard let tls else { return }
    switch tls.handshake() {
    case .complete:
      state = .open
      tls.drainCiphertext(into: &outbound)
      flushSocket()
      guard isOpen else { return }
      delegate?.byteStreamDidBecomeReady(self)
      // Application data may have arrived together with the last handshake bytes.
      deliverTLSPlaintext()
    case .inProgress:
      tls.drainCiphertext(into: &outbound)
      flushSocket()
    case .failed(let failure):
      tls.drainCiphertext(into: &outbound)
      flushSocket()
      close(error: ConnectionError(failure))
    }
  }

  private func readAvailable() {
    var reads = 0
    while reads < Self.maxReadsPerEvent, !readPaused {
      if case .closed = state { return }
      let n = Glibc.read(fd, readBuffer.baseAddress, readBuffer.count)
      if n > 0 {
        reads += 1
        let chunk = UnsafeRawBufferPointer(rebasing: readBuffer[0..<n])
        if let tls {
          tls.feed(chunk)
          if case .handshaking = state {
            advanceHandshake()
          } else {
            deliverTLSPlaintext()
          }
        } else {
          delegate?.byteStream(self, didReceive: chunk)
        }
        if n < readBuffer.count { break }  // Drained: the kernel had less than a full buffer.
        continue
      }
      if n == 0 {
        delegate?.byteStreamDidFinishReading(self)
        if case .handshaking = state, let tls {
          close(error: ConnectionError(tls.handshakeClosedByPeer()))
        } else {
          close(error: .closedByPeer)
        }
        return
      }
      if errno == EINTR { continue }
      if errno == EAGAIN || errno == EWOULDBLOCK { break }
      let error = ConnectionError.io(operation: "read", errno: errno)
      delegate?.byteStreamDidFinishReading(self)
      close(error: error)
      return
    }
    if case .closed = state { return }
    if reads > 0 || isOpen { delegate?.byteStreamDidFinishReading(self) }
  }

  private func deliverTLSPlaintext() {
    guard let tls, let scratch = plaintextScratch, isOpen else { return }
    let result = tls.readPlaintext(scratch: scratch) { plaintext in
      delegate?.byteStream(self, didReceive: plaintext)
    }
    switch result {
    case .needMoreInput:
      break
    case .closed:
      delegate?.byteStreamDidFinishReading(self)
      close(error: .closedByPeer)
    case .failed(let failure):
      delegate?.byteStreamDidFinishReading(self)
      close(error: ConnectionError(failure))
    }
    // TLS may need to answer (key updates, alerts).
    if isOpen, tls.drainCiphertext(into: &outbound) > 0 { flushSocket() }
  }

  // MARK: - Writing

  /// Queues plaintext for sending; call ``flush()`` after a batch.
  package func write(_ bytes: UnsafeRawBufferPointer) {
    guard isOpen, bytes.count > 0 else { return }
    if let tls {
      if let failure = tls.write(bytes) {
        close(error: ConnectionError(failure))
        return
      }
      tls.drainCiphertext(into: &outbound)
    } else {
      outbound.append(contentsOf: bytes)
    }
  }

  /// Writes as much of the queued bytes as the socket takes.
  package func flush() {
    guard isOpen else { return }
    flushSocket()
  }

  private func flushSocket() {
    if case .closed = state { return }
    while outboundOffset < outbound.count {
      let n = outbound.withUnsafeBytes { raw in
        Glibc.send(fd, raw.baseAddress! + outboundOffset, raw.count - outboundOffset, Int32(MSG_NOSIGNAL))
      }
      if n > 0 {
        outboundOffset += n
        continue
      }
      if n < 0 && errno == EINTR { continue }
      if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
        updateInterest(writable: true)
        compactOutbound()
        return
      }
      close(error: .io(operation: "write", errno: errno))
      return
    }
    outbound.removeAll(keepingCapacity: outbound.capacity <= 1 << 20)
    outboundOffset = 0
    let waited = wantsWritable
    updateInterest(writable: false)
    if waited { delegate?.byteStreamDidDrainOutput(self) }
  }

  private func compactOutbound() {
    if outboundOffset > 64 * 1024 && outboundOffset * 2 > outbound.count {
      outbound.removeFirst(outboundOffset)
      outboundOffset = 0
    }
  }

  private func updateInterest(writable: Bool) {
    guard wantsWritable != writable else { return }
    wantsWritable = writable
    loop.setInterest(fd: fd, readable: !readPaused && !isConnecting, writable: writable)
  }

  /// Stops reading from the socket (its owner's output is backed up): what the peer sends waits in the
  /// kernel, and TCP's window stops the peer. ``resumeReading()`` undoes it.
  package func pauseReading() {
    guard !readPaused, !isConnecting else { return }
    readPaused = true
    if case .closed = state { return }
    loop.setInterest(fd: fd, readable: false, writable: wantsWritable)
  }

  /// Reads again after ``pauseReading()``; what arrived meanwhile is read on the next loop turn.
  package func resumeReading() {
    guard readPaused else { return }
    readPaused = false
    if case .closed = state { return }
    loop.setInterest(fd: fd, readable: true, writable: wantsWritable)
    // Plaintext TLS decrypted before the pause is not in the socket: hand it over without waiting for more.
    if tls != nil {
      loop.executeSoon { [weak self] in
        guard let self, !self.readPaused else { return }
        self.deliverTLSPlaintext()
      }
    }
  }

  private var isConnecting: Bool { if case .connecting = state { true } else { false } }

  // MARK: - Closing

  /// Closes the socket now (after a last attempt to write what is queued) and tells the delegate;
  /// `error` `nil` is a clean close (TLS sends close_notify).
  package func close(error: ConnectionError?) {
    if case .closed = state { return }
    if isOpen, let tls, error == nil {
      tls.shutdown()
      tls.drainCiphertext(into: &outbound)
    }
    if isOpen
      || {
        if case .handshaking = state { return true }
        return false
      }()
    {
      // Best effort: push out a final GOAWAY or TLS alert without waiting.
      while outboundOffset < outbound.count {
        let n = outbound.withUnsafeBytes { raw in
          Glibc.send(fd, raw.baseAddress! + outboundOffset, raw.count - outboundOffset, Int32(MSG_NOSIGNAL))
        }
        if n <= 0 { break }
        outboundOffset += n
      }
    }
    state = .closed
    loop.deregister(fd: fd)
    Glibc.close(fd)
    outbound = []
    outboundOffset = 0
    delegate?.byteStream(self, didCloseWithError: error)
  }
}

extension ByteStream {
  /// Moves `session`'s output to the socket, a batch at a time, while the unsent bytes stay under `limit`.
  /// Past it, the rest waits in the session (responses in their streams, where producers see them); the
  /// caller then stops reading until the socket drains (``ByteStreamDelegate/byteStreamDidDrainOutput(_:)``),
  /// so that a peer that does not read can make this side hold at most `limit` plus one batch, and no more work.
  ///
  /// - Returns: whether the unsent bytes reached `limit` (the output is backed up).
  func writeOutput(of session: HTTP2Session, limit: Int) -> Bool {
    while isOpen {
      var moved = 0
      while outboundBufferedBytes < limit {
        let count = session.withPendingOutput { bytes in
          write(bytes)
          return bytes.count
        }
        guard count > 0, isOpen else { break }
        moved += count
      }
      guard isOpen else { return false }
      if moved > 0 { flush() }
      guard isOpen else { return false }
      if outboundBufferedBytes >= limit { return true }
      // Everything the socket took: more may be waiting in the session only if this round moved some.
      if moved == 0 { return false }
    }
    return false
  }
}
