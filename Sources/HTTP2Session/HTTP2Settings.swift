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
  /// The limits nghttp2 enforces on what the peer makes this side hold or send, set
  /// explicitly rather than left to the library's defaults.
  public var limits: HTTP2Limits

  /// Creates settings; every parameter has the default described on its property.
  public init(
    maxConcurrentStreams: UInt32? = nil,
    initialWindowSize: UInt32 = 1 << 20,
    maxFrameSize: UInt32 = 16_384,
    maxHeaderListSize: UInt32? = 16 * 1024,
    connectionWindowSize: UInt32 = 8 << 20,
    enablePush: Bool = false,
    limits: HTTP2Limits = .init()
  ) {
    self.maxConcurrentStreams = maxConcurrentStreams
    self.initialWindowSize = initialWindowSize
    self.maxFrameSize = maxFrameSize
    self.maxHeaderListSize = maxHeaderListSize
    self.connectionWindowSize = connectionWindowSize
    self.enablePush = enablePush
    self.limits = limits
  }
}

/// Flood and size limits nghttp2 offers (`nghttp2_option_set_*`), applied to every session.
///
/// A peer that goes past one of the receive limits is treated as misbehaving: nghttp2 ends
/// the session with a GOAWAY and ``HTTP2Session/receive(_:)`` throws. The defaults are
/// nghttp2's own (Debian's 1.52.0-1+deb12u2 and later carry the CONTINUATION and rapid-reset
/// limits as backports), written out so a library update cannot loosen them unnoticed.
public struct HTTP2Limits: Sendable, Hashable {
  /// The most SETTINGS entries accepted in one SETTINGS frame (`nghttp2_option_set_max_settings`).
  /// RFC 9113 defines seven settings; default 32.
  public var maxSettingsEntries: Int
  /// The most SETTINGS ACK and PING ACK frames held unsent before the peer, which keeps
  /// provoking them without reading, is cut off (`nghttp2_option_set_max_outbound_ack`). Default 1,000.
  public var maxOutboundAcks: Int
  /// The largest header block this side sends, as nghttp2 bounds it
  /// (`nghttp2_option_set_max_send_header_block_length`); a larger one fails to send. Default 64 KiB.
  public var maxSendHeaderBlockLength: Int
  /// The most CONTINUATION frames accepted after one HEADERS frame
  /// (`nghttp2_option_set_max_continuations`, the CVE-2024-28182 fix). Default 8.
  public var maxContinuations: Int
  /// The token bucket for RST_STREAM frames a client may send to a server session
  /// (`nghttp2_option_set_stream_reset_rate_limit`, the CVE-2023-44487 rapid-reset fix):
  /// `burst` at once, refilled at `ratePerSecond`. Client sessions ignore it. Default 1,000 and 33.
  public var streamResetBurst: Int
  /// See ``streamResetBurst``.
  public var streamResetRatePerSecond: Int
  /// The most frames in a row, from the peer, that carry nothing: empty DATA frames without END_STREAM
  /// and informational (1xx) header blocks. Past it the session ends with GOAWAY(ENHANCE_YOUR_CALM) and
  /// ``HTTP2Session/receive(_:)`` throws ``HTTP2SessionError/Codes/flooded``, as nghttp2 does for its own
  /// floods. Any frame with content (a non-empty DATA frame, a final header block) starts the count
  /// again. Not an nghttp2 option: the session counts them. Default 1,000.
  public var maxFramesWithoutContent: Int

  /// nghttp2's defaults unless given.
  public init(
    maxSettingsEntries: Int = 32,
    maxOutboundAcks: Int = 1_000,
    maxSendHeaderBlockLength: Int = 64 << 10,
    maxContinuations: Int = 8,
    streamResetBurst: Int = 1_000,
    streamResetRatePerSecond: Int = 33,
    maxFramesWithoutContent: Int = 1_000
  ) {
    self.maxFramesWithoutContent = maxFramesWithoutContent
    self.maxSettingsEntries = maxSettingsEntries
    self.maxOutboundAcks = maxOutboundAcks
    self.maxSendHeaderBlockLength = maxSendHeaderBlockLength
    self.maxContinuations = maxContinuations
    self.streamResetBurst = streamResetBurst
    self.streamResetRatePerSecond = streamResetRatePerSecond
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
