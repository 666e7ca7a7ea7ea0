// Sources/GRPCProtocol/CallOptions.swift - per-call settings

/// Settings for one call. Every property left at its default defers to the
/// channel's configuration; a value set here wins over the channel's for this
/// call only.
public struct CallOptions: Sendable {
  /// How long the call may take, measured from when it starts. Sent to the
  /// server as `grpc-timeout` (rounded up), and enforced locally: when it runs
  /// out the call is reset and fails with DEADLINE_EXCEEDED. A zero or negative
  /// value fails the call at once without sending it.
  ///
  /// Precedence: this value if set, else the channel's default timeout, else no deadline.
  public var timeout: Duration?

  /// Custom metadata sent with the request.
  ///
  /// Precedence: sent after any metadata the channel adds to every call (such
  /// as credentials); both are sent, and a name present in both appears twice,
  /// as gRPC metadata allows. Reserved names (``GRPCMetadata/isReserved(_:)``)
  /// and invalid entries are dropped, never sent.
  public var metadata: GRPCMetadata

  /// The largest response message accepted, in bytes; a larger one fails the
  /// call with RESOURCE_EXHAUSTED before any of it is buffered.
  ///
  /// Precedence: this value if set, else the channel's limit, which defaults to
  /// 4 MiB (``GRPCMessageDeframer/defaultMaxMessageSize``), as in grpc-go and grpc-java.
  public var maxReceiveMessageSize: Int?

  /// The `:authority` to send for this call.
  ///
  /// Precedence: this value if set, else the channel's authority (its target's
  /// `host:port`, or the configured TLS server-name override). It does not
  /// change which server the connection goes to or the TLS name verified.
  public var authority: String?

  /// How the call's request messages are compressed: `.gzip` or `.deflate` compress each
  /// one and send `grpc-encoding`; `.identity` sends them uncompressed.
  ///
  /// Precedence: this value if set, else the channel's
  /// ``GRPCChannelConfiguration``'s `compression.requestEncoding` (identity by default).
  /// Either way, an encoding the server said it does not accept (its last
  /// `grpc-accept-encoding`) is not used: the requests then go uncompressed.
  /// Responses are decompressed whatever this says, for the encodings the channel accepts.
  public var compression: GRPCCompressionAlgorithm?

  /// Creates options; every argument defaults to "use the channel's setting".
  public init(
    timeout: Duration? = nil,
    metadata: GRPCMetadata = [:],
    maxReceiveMessageSize: Int? = nil,
    authority: String? = nil,
    compression: GRPCCompressionAlgorithm? = nil
  ) {
    self.timeout = timeout
    self.metadata = metadata
    self.maxReceiveMessageSize = maxReceiveMessageSize
    self.authority = authority
    self.compression = compression
  }
}
