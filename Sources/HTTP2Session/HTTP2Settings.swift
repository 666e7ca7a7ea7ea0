// Sources/HTTP2Session/HTTP2Settings.swift - local settings to announce, and settings a peer announced
//
// Defaults suit a client following many small streams: a large receive window
// per stream and per connection (flow control is manual, so the consumer's
// `consume` calls, not these numbers, pace the peer), no server push, and a
// 16 KiB cap on received header lists.

/// The settings a session announces in its first SETTINGS frame, plus its connection receive window.
public struct HTTP2Settings: Sendable, Hashable {
  /// SETTINGS_MAX_CONCURRENT_STREAMS: how many streams the peer may open towards us. `nil` sends no limit.
  public var maxConcurrentStreams: UInt32?
  /// SETTINGS_INITIAL_WINDOW_SIZE: the receive window of each stream, at most 2^31 - 1.
  public var initialWindowSize: UInt32
  /// SETTINGS_MAX_FRAME_SIZE: the largest frame payload we accept, 16 384 ... 16 777 215.
  public var maxFrameSize: UInt32
  /// SETTINGS_MAX_HEADER_LIST_SIZE: the largest header list we accept (RFC 9113 §6.5.2: names, values
  /// and 32 bytes per field). Default 16 KiB; `nil` announces and enforces no limit.
  ///
  /// Enforced, not only announced: a received header block above it is not delivered, its stream is
  /// reset and the delegate hears ``HTTP2SessionDelegate/session(_:didRefuseHeaderListOfSize:limit:streamID:)``
  /// (a gRPC client call then fails RESOURCE_EXHAUSTED).
  public var maxHeaderListSize: UInt32?
  /// The connection-level receive window, at most 2^31 - 1.
  ///
  /// Applied with `nghttp2_session_set_local_window_size`, which sends a WINDOW_UPDATE
  /// for the difference to the protocol's initial 65 535 bytes.
  public var connectionWindowSize: UInt32
  /// SETTINGS_ENABLE_PUSH, sent by clients only. Server push is not surfaced by this module:
  /// when enabled, each promised stream is refused with RST_STREAM(REFUSED_STREAM).
  public var enablePush: Bool

  /// Creates settings; every parameter has the default described on its property.
  public init(
    maxConcurrentStreams: UInt32? = nil,
    initialWindowSize: UInt32 = 1 << 20,
    maxFrameSize: UInt32 = 16_384,
    maxHeaderListSize: UInt32? = 16 * 1024,
    connectionWindowSize: UInt32 = 8 << 20,
    enablePush: Bool = false
  ) {
    self.maxConcurrentStreams = maxConcurrentStreams
    self.initialWindowSize = initialWindowSize
    self.maxFrameSize = maxFrameSize
    self.maxHeaderListSize = maxHeaderListSize
    self.connectionWindowSize = connectionWindowSize
    self.enablePush = enablePush
  }
}

/// The parameters one non-ACK SETTINGS frame from the peer carried; `nil` for those it left out.
///
/// A SETTINGS frame only changes the parameters it lists, so a field that is
/// `nil` here keeps its earlier value (``HTTP2Session/remoteMaxConcurrentStreams``
/// gives the value in force).
public struct HTTP2RemoteSettings: Sendable, Hashable {
  /// SETTINGS_HEADER_TABLE_SIZE (0x1).
  public var headerTableSize: UInt32?
  /// SETTINGS_ENABLE_PUSH (0x2).
  public var enablePush: Bool?
  /// SETTINGS_MAX_CONCURRENT_STREAMS (0x3): how many streams we may open towards the peer.
  public var maxConcurrentStreams: UInt32?
  /// SETTINGS_INITIAL_WINDOW_SIZE (0x4): the peer's receive window per stream.
  public var initialWindowSize: UInt32?
  /// SETTINGS_MAX_FRAME_SIZE (0x5).
  public var maxFrameSize: UInt32?
  /// SETTINGS_MAX_HEADER_LIST_SIZE (0x6).
  public var maxHeaderListSize: UInt32?
  /// SETTINGS_ENABLE_CONNECT_PROTOCOL (0x8, RFC 8441).
  public var enableConnectProtocol: Bool?

  /// Creates a value with the given parameters, all absent by default.
  public init(
    headerTableSize: UInt32? = nil,
    enablePush: Bool? = nil,
    maxConcurrentStreams: UInt32? = nil,
    initialWindowSize: UInt32? = nil,
    maxFrameSize: UInt32? = nil,
    maxHeaderListSize: UInt32? = nil,
    enableConnectProtocol: Bool? = nil
  ) {
    self.headerTableSize = headerTableSize
    self.enablePush = enablePush
    self.maxConcurrentStreams = maxConcurrentStreams
    self.initialWindowSize = initialWindowSize
    self.maxFrameSize = maxFrameSize
    self.maxHeaderListSize = maxHeaderListSize
    self.enableConnectProtocol = enableConnectProtocol
  }
}
