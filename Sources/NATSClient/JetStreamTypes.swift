// Sources/NATSClient/JetStreamTypes.swift - stream and consumer configurations, their info, publish acks

internal import CNATS

extension JetStream {
  // MARK: - Streams

  /// How a stream decides when a message may go.
  package enum RetentionPolicy: Sendable, Hashable {
    /// Kept until a limit (age, count, bytes) removes it. The default.
    case limits
    /// Kept while some consumer has not acked it.
    case interest
    /// Removed once one consumer acks it: a work queue. Consumers of a work-queue stream may not overlap.
    case workQueue
  }

  /// Where a stream keeps its messages.
  package enum StorageType: Sendable, Hashable {
    /// On disk, in the server's store directory. The default.
    case file
    /// In memory only.
    case memory
  }

  /// What a stream does when a limit is reached.
  package enum DiscardPolicy: Sendable, Hashable {
    /// Removes the oldest messages. The default.
    case old
    /// Refuses new messages.
    case new
  }

  /// A stream's configuration (`jsStreamConfig`). Optional limits are unlimited (or the server's default)
  /// when nil.
  package struct StreamConfiguration: Sendable, Hashable {
    /// The stream's name (no `.`, `*`, `>`, `/`, `\` or whitespace).
    package var name: String
    /// The subjects it captures (wildcards allowed), for example `trips.>`.
    package var subjects: [String]
    /// A description.
    package var description: String?
    /// When messages may go.
    package var retention: RetentionPolicy = .limits
    /// Disk or memory.
    package var storage: StorageType = .file
    /// How many servers keep a copy (1 to 5; at most the cluster's size).
    package var replicas: Int = 1
    /// How long the stream remembers `Nats-Msg-Id`s to drop duplicates (server default: 2 minutes).
    package var duplicateWindow: Duration?
    /// The oldest a message may get.
    package var maxAge: Duration?
    /// The most messages the stream keeps.
    package var maxMessages: Int64?
    /// The most bytes the stream keeps.
    package var maxBytes: Int64?
    /// The most messages kept per subject.
    package var maxMessagesPerSubject: Int64?
    /// The largest message accepted.
    package var maxMessageSize: Int32?
    /// The most consumers the stream may have.
    package var maxConsumers: Int64?
    /// What happens at a limit.
    package var discard: DiscardPolicy = .old

    /// A configuration with the given name, subjects, retention, storage and replicas; other fields default.
    package init(
      name: String, subjects: [String], retention: RetentionPolicy = .limits, storage: StorageType = .file,
      replicas: Int = 1
    ) {
      self.name = name
      self.subjects = subjects
      self.retention = retention
      self.storage = storage
      self.replicas = replicas
    }

    /// The libnats struct, its strings copied into `arena`.
    func native(_ arena: CStringArena, operation: String) throws(NATSError) -> jsStreamConfig {
      try validateName(name, kind: "stream", operation: operation)
      for subject in subjects { try validateSubject(subject, operation: operation) }
      if let description { try validateJSONText(description, field: "description", operation: operation) }
      var config = jsStreamConfig()
      jsStreamConfig_Init(&config)
      config.Name = arena.copy(name)
      config.Description = arena.copy(description)
      config.Subjects = arena.copyArray(subjects)
      config.SubjectsLen = Int32(subjects.count)
      config.Retention =
        switch retention {
        case .limits: js_LimitsPolicy
        case .interest: js_InterestPolicy
        case .workQueue: js_WorkQueuePolicy
        }
      config.Storage = storage == .file ? js_FileStorage : js_MemoryStorage
      config.Discard = discard == .old ? js_DiscardOld : js_DiscardNew
      config.Replicas = Int64(replicas)
      if let duplicateWindow { config.Duplicates = duplicateWindow.clampedNanoseconds }
      if let maxAge { config.MaxAge = maxAge.clampedNanoseconds }
      if let maxMessages { config.MaxMsgs = maxMessages }
      if let maxBytes { config.MaxBytes = maxBytes }
      if let maxMessagesPerSubject { config.MaxMsgsPerSubject = maxMessagesPerSubject }
      if let maxMessageSize { config.MaxMsgSize = maxMessageSize }
      if let maxConsumers { config.MaxConsumers = maxConsumers }
      return config
    }

    /// Copies what the server reported.
    init(native config: jsStreamConfig) {
      name = string(config.Name) ?? ""
      subjects = (0..<Int(config.SubjectsLen)).compactMap { config.Subjects?[$0].flatMap(string) }
      description = string(config.Description)
      retention =
        switch config.Retention {
        case js_InterestPolicy: .interest
        case js_WorkQueuePolicy: .workQueue
        default: .limits
        }
      storage = config.Storage == js_MemoryStorage ? .memory : .file
      discard = config.Discard == js_DiscardNew ? .new : .old
      replicas = Int(config.Replicas)
      duplicateWindow = config.Duplicates > 0 ? .nanoseconds(config.Duplicates) : nil
      maxAge = config.MaxAge > 0 ? .nanoseconds(config.MaxAge) : nil
      maxMessages = config.MaxMsgs >= 0 ? config.MaxMsgs : nil
      maxBytes = config.MaxBytes >= 0 ? config.MaxBytes : nil
      maxMessagesPerSubject = config.MaxMsgsPerSubject > 0 ? config.MaxMsgsPerSubject : nil
      maxMessageSize = config.MaxMsgSize >= 0 ? config.MaxMsgSize : nil
      maxConsumers = config.MaxConsumers >= 0 ? config.MaxConsumers : nil
    }
  }

  /// A stream's state: how many messages it holds and their sequence range.
  package struct StreamState: Sendable, Hashable {
    /// Messages in the stream.
    package var messages: UInt64
    /// Bytes in the stream.
    package var bytes: UInt64
    /// The first sequence still in the stream.
    package var firstSequence: UInt64
    /// The last sequence stored (stays when messages are removed).
    package var lastSequence: UInt64
    /// When the first message was stored, in nanoseconds since the Unix epoch.
    package var firstTimestampNanoseconds: Int64
    /// When the last message was stored, in nanoseconds since the Unix epoch.
    package var lastTimestampNanoseconds: Int64
    /// Distinct subjects in the stream.
    package var subjectCount: Int64
    /// Messages removed from the middle of the stream.
    package var deletedCount: UInt64
    /// Consumers of the stream.
    package var consumerCount: Int64

    init(native state: jsStreamState) {
      messages = state.Msgs
      bytes = state.Bytes
      firstSequence = state.FirstSeq
      lastSequence = state.LastSeq
      firstTimestampNanoseconds = state.FirstTime
      lastTimestampNanoseconds = state.LastTime
      subjectCount = state.NumSubjects
      deletedCount = state.NumDeleted
      consumerCount = state.Consumers
    }
  }

  /// One server that keeps a replica of a stream or consumer.
  package struct PeerInfo: Sendable, Hashable {
    /// The server's name.
    package var name: String
    /// True when it is up to date with the leader.
    package var isCurrent: Bool
    /// True when the leader cannot reach it.
    package var isOffline: Bool
    /// How long since the leader last heard from it.
    package var sinceActive: Duration
    /// How many operations it is behind.
    package var lag: UInt64
  }

  /// The servers behind a clustered stream or consumer.
  package struct ClusterInfo: Sendable, Hashable {
    /// The cluster's name.
    package var name: String?
    /// The server that leads the stream or consumer now (nil during an election).
    package var leader: String?
    /// The other servers with a replica.
    package var replicas: [PeerInfo]

    init?(native pointer: UnsafeMutablePointer<jsClusterInfo>?) {
      guard let info = pointer?.pointee else { return nil }
      name = string(info.Name)
      leader = string(info.Leader)
      replicas = (0..<Int(info.ReplicasLen)).compactMap { index in
        guard let peer = info.Replicas?[index]?.pointee else { return nil }
        return PeerInfo(
          name: string(peer.Name) ?? "", isCurrent: peer.Current, isOffline: peer.Offline,
          sinceActive: .nanoseconds(peer.Active), lag: peer.Lag)
      }
    }
  }

  /// What `js_GetStreamInfo` reports: the configuration in force, the state, the cluster.
  package struct StreamInfo: Sendable, Hashable {
    /// The configuration in force (the server's defaults filled in).
    package var configuration: StreamConfiguration
    /// Messages and sequences.
    package var state: StreamState
    /// When the stream was created, in nanoseconds since the Unix epoch.
    package var createdNanoseconds: Int64
    /// The servers behind it (nil when the server is not clustered).
    package var cluster: ClusterInfo?

    init(native info: jsStreamInfo) {
      configuration =
        info.Config.map { StreamConfiguration(native: $0.pointee) } ?? StreamConfiguration(name: "", subjects: [])
      state = StreamState(native: info.State)
      createdNanoseconds = info.Created
      cluster = ClusterInfo(native: info.Cluster)
    }
  }

  // MARK: - Consumers

  /// How a consumer expects its messages to be acknowledged.
  package enum AckPolicy: Sendable, Hashable {
    /// Every message must be acked (or nak'ed, or terminated); unacked ones are redelivered after AckWait.
    case explicit
    /// No acks; a message counts as processed once delivered.
    case none
    /// Acking a message acks every earlier one too.
    case all
  }

  /// Where a new consumer starts in its stream.
  package enum DeliverPolicy: Sendable, Hashable {
    /// From the first message. The default.
    case all
    /// From the last message.
    case last
    /// Only messages stored after the consumer was created.
    case new
    /// From the last message of every subject.
    case lastPerSubject
    /// From the given stream sequence.
    case startSequence(UInt64)
    /// From the first message stored at or after the given time, in nanoseconds since the Unix epoch.
    case startTime(nanosecondsSinceEpoch: Int64)
  }

  /// A consumer's configuration (`jsConsumerConfig`), for pull consumers. Optional fields take the server's
  /// default when nil.
  package struct ConsumerConfiguration: Sendable, Hashable {
    /// The durable name; nil makes an ephemeral consumer (the server names it, and removes it after
    /// ``inactiveThreshold`` without pull requests).
    package var durableName: String?
    /// A description.
    package var description: String?
    /// Only messages on this subject (wildcards allowed); nil for the whole stream.
    package var filterSubject: String?
    /// Where it starts.
    package var deliverPolicy: DeliverPolicy = .all
    /// How messages are acked.
    package var ackPolicy: AckPolicy = .explicit
    /// How long the server waits for an ack before it redelivers (server default: 30 s). An in-progress
    /// ack (``JetStream/Message/inProgress()``) restarts the wait.
    package var ackWait: Duration?
    /// The most times a message is delivered (nil: no limit).
    package var maxDeliver: Int?
    /// Redelivery delays for the successive deliveries, instead of ``ackWait`` (needs ``maxDeliver``
    /// larger than its count).
    package var backoff: [Duration] = []
    /// The most messages delivered and not yet acked, across all subscribers (server default: 1,000);
    /// beyond it the server delivers nothing more until something is acked.
    package var maxAckPending: Int?
    /// The most pull requests waiting at the server at once (server default: 512).
    package var maxWaiting: Int?
    /// The largest batch one pull request may ask for.
    package var maxRequestBatch: Int?
    /// The longest a pull request may wait.
    package var maxRequestExpires: Duration?
    /// How long an ephemeral consumer lives without activity.
    package var inactiveThreshold: Duration?
    /// Replicas of the consumer's state (nil: the stream's).
    package var replicas: Int?
    /// Keep the consumer's state in memory even for a file stream.
    package var memoryStorage: Bool = false
    /// Deliver headers only (with `Nats-Msg-Size`), no payloads.
    package var headersOnly: Bool = false

    /// A configuration; `durableName` nil makes an ephemeral consumer.
    package init(durableName: String?, filterSubject: String? = nil, ackPolicy: AckPolicy = .explicit) {
      self.durableName = durableName
      self.filterSubject = filterSubject
      self.ackPolicy = ackPolicy
    }

    /// The libnats struct, its strings copied into `arena`.
    func native(_ arena: CStringArena, operation: String) throws(NATSError) -> jsConsumerConfig {
      if let durableName { try validateName(durableName, kind: "consumer", operation: operation) }
      if let filterSubject { try validateSubject(filterSubject, operation: operation) }
      if let description { try validateJSONText(description, field: "description", operation: operation) }
      var config = jsConsumerConfig()
      jsConsumerConfig_Init(&config)
      config.Durable = arena.copy(durableName)
      config.Description = arena.copy(description)
      config.FilterSubject = arena.copy(filterSubject)
      switch deliverPolicy {
      case .all: config.DeliverPolicy = js_DeliverAll
      case .last: config.DeliverPolicy = js_DeliverLast
      case .new: config.DeliverPolicy = js_DeliverNew
      case .lastPerSubject: config.DeliverPolicy = js_DeliverLastPerSubject
      case .startSequence(let sequence):
        config.DeliverPolicy = js_DeliverByStartSequence
        config.OptStartSeq = sequence
      case .startTime(let nanoseconds):
        config.DeliverPolicy = js_DeliverByStartTime
        config.OptStartTime = nanoseconds
      }
      config.AckPolicy =
        switch ackPolicy {
        case .explicit: js_AckExplicit
        case .none: js_AckNone
        case .all: js_AckAll
        }
      config.ReplayPolicy = js_ReplayInstant
      if let ackWait { config.AckWait = ackWait.clampedNanoseconds }
      if let maxDeliver { config.MaxDeliver = Int64(maxDeliver) }
      if !backoff.isEmpty {
        config.BackOff = arena.copyArray(backoff.map(\.clampedNanoseconds))
        config.BackOffLen = Int32(backoff.count)
      }
      if let maxAckPending { config.MaxAckPending = Int64(maxAckPending) }
      if let maxWaiting { config.MaxWaiting = Int64(maxWaiting) }
      if let maxRequestBatch { config.MaxRequestBatch = Int64(maxRequestBatch) }
      if let maxRequestExpires { config.MaxRequestExpires = maxRequestExpires.clampedNanoseconds }
      if let inactiveThreshold { config.InactiveThreshold = inactiveThreshold.clampedNanoseconds }
      if let replicas { config.Replicas = Int64(replicas) }
      config.MemoryStorage = memoryStorage
      config.HeadersOnly = headersOnly
      return config
    }

    /// Copies what the server reported.
    init(native config: jsConsumerConfig) {
      durableName = string(config.Durable)
      description = string(config.Description)
      filterSubject = string(config.FilterSubject)
      switch config.DeliverPolicy {
      case js_DeliverLast: deliverPolicy = .last
      case js_DeliverNew: deliverPolicy = .new
      case js_DeliverLastPerSubject: deliverPolicy = .lastPerSubject
      case js_DeliverByStartSequence: deliverPolicy = .startSequence(config.OptStartSeq)
      case js_DeliverByStartTime: deliverPolicy = .startTime(nanosecondsSinceEpoch: config.OptStartTime)
      default: deliverPolicy = .all
      }
      ackPolicy =
        switch config.AckPolicy {
        case js_AckNone: .none
        case js_AckAll: .all
        default: .explicit
        }
      ackWait = config.AckWait > 0 ? .nanoseconds(config.AckWait) : nil
      maxDeliver = config.MaxDeliver > 0 ? Int(config.MaxDeliver) : nil
      backoff = (0..<Int(config.BackOffLen)).compactMap { config.BackOff?[$0] }.map { .nanoseconds($0) }
      maxAckPending = config.MaxAckPending > 0 ? Int(config.MaxAckPending) : nil
      maxWaiting = config.MaxWaiting > 0 ? Int(config.MaxWaiting) : nil
      maxRequestBatch = config.MaxRequestBatch > 0 ? Int(config.MaxRequestBatch) : nil
      maxRequestExpires = config.MaxRequestExpires > 0 ? .nanoseconds(config.MaxRequestExpires) : nil
      inactiveThreshold = config.InactiveThreshold > 0 ? .nanoseconds(config.InactiveThreshold) : nil
      replicas = config.Replicas > 0 ? Int(config.Replicas) : nil
      memoryStorage = config.MemoryStorage
      headersOnly = config.HeadersOnly
    }
  }

  /// A consumer's position: the last consumer and stream sequences (delivered or acked) and when.
  package struct SequenceInfo: Sendable, Hashable {
    /// The consumer's own sequence (counts deliveries, redeliveries included).
    package var consumerSequence: UInt64
    /// The stream sequence.
    package var streamSequence: UInt64
    /// When, in nanoseconds since the Unix epoch (0 when never).
    package var lastActiveNanoseconds: Int64

    init(native info: jsSequenceInfo) {
      consumerSequence = info.Consumer
      streamSequence = info.Stream
      lastActiveNanoseconds = info.Last
    }
  }

  /// What `js_GetConsumerInfo` reports.
  package struct ConsumerInfo: Sendable, Hashable {
    /// The stream.
    package var stream: String
    /// The consumer's name (the durable name, or the server's name for an ephemeral).
    package var name: String
    /// The configuration in force.
    package var configuration: ConsumerConfiguration
    /// When it was created, in nanoseconds since the Unix epoch.
    package var createdNanoseconds: Int64
    /// The last delivered position.
    package var delivered: SequenceInfo
    /// Everything at or below this position is acked.
    package var ackFloor: SequenceInfo
    /// Messages delivered and not acked yet.
    package var numAckPending: Int64
    /// Messages redelivered at least once and not acked yet.
    package var numRedelivered: Int64
    /// Pull requests waiting at the server.
    package var numWaiting: Int64
    /// Messages in the stream not delivered to this consumer yet.
    package var numPending: UInt64
    /// The servers behind it.
    package var cluster: ClusterInfo?

    init(native info: jsConsumerInfo) {
      stream = string(info.Stream) ?? ""
      name = string(info.Name) ?? ""
      configuration =
        info.Config.map { ConsumerConfiguration(native: $0.pointee) } ?? ConsumerConfiguration(durableName: nil)
      createdNanoseconds = info.Created
      delivered = SequenceInfo(native: info.Delivered)
      ackFloor = SequenceInfo(native: info.AckFloor)
      numAckPending = info.NumAckPending
      numRedelivered = info.NumRedelivered
      numWaiting = info.NumWaiting
      numPending = info.NumPending
      cluster = ClusterInfo(native: info.Cluster)
    }
  }

  // MARK: - Publishing

  /// A message to publish to JetStream, with its deduplication ID and optional expectations.
  package struct OutboundMessage: Sendable, Hashable {
    /// The subject; a stream must capture it.
    package var subject: String
    /// The payload.
    package var data: [UInt8]
    /// Headers (JetStream's own are set from the fields below).
    package var headers: NATSHeaders
    /// `Nats-Msg-Id`: the stream stores a message with an ID it has seen within its duplicate window only
    /// once; the ack of a repeat says ``PubAck/isDuplicate``.
    package var messageID: String?
    /// `Nats-Expected-Stream`: fail unless this stream stores the message.
    package var expectedStream: String?
    /// `Nats-Expected-Last-Sequence`: fail unless the stream's last sequence is this.
    package var expectedLastSequence: UInt64?
    /// `Nats-Expected-Last-Subject-Sequence`: fail unless the last message on this subject has this sequence
    /// (0: there is none).
    package var expectedLastSubjectSequence: UInt64?
    /// `Nats-Expected-Last-Msg-Id`: fail unless the stream's last message had this ID.
    package var expectedLastMessageID: String?

    /// A message for `subject`.
    package init(subject: String, data: [UInt8], headers: NATSHeaders = NATSHeaders(), messageID: String? = nil) {
      self.subject = subject
      self.data = data
      self.headers = headers
      self.messageID = messageID
    }

    /// The libnats message (headers included) and publish options, strings copied into `arena`.
    func native(
      _ arena: CStringArena, timeout: Duration?, operation: String
    ) throws(NATSError) -> (message: OpaquePointer, options: jsPubOptions) {
      var headers = headers
      // libnats cannot express "expect last sequence 0" (an empty stream); set the header directly.
      if expectedLastSequence == 0 { headers["Nats-Expected-Last-Sequence"] = "0" }
      let message = try makeMessage(subject: subject, data: data, headers: headers, operation: operation)
      var options = jsPubOptions()
      jsPubOptions_Init(&options)
      options.MsgId = arena.copy(messageID)
      options.ExpectStream = arena.copy(expectedStream)
      options.ExpectLastMsgId = arena.copy(expectedLastMessageID)
      if let expectedLastSequence, expectedLastSequence > 0 { options.ExpectLastSeq = expectedLastSequence }
      if let expectedLastSubjectSequence {
        if expectedLastSubjectSequence == 0 {
          options.ExpectNoMessage = true
        } else {
          options.ExpectLastSubjectSeq = expectedLastSubjectSequence
        }
      }
      if let timeout { options.MaxWait = timeout.clampedMilliseconds }
      return (message, options)
    }
  }

  /// The server's acknowledgment of a publish (`jsPubAck`).
  package struct PubAck: Sendable, Hashable {
    /// The stream that stored the message.
    package var stream: String
    /// Its sequence in the stream (for a duplicate: the sequence of the message stored first).
    package var sequence: UInt64
    /// True when the stream had already stored a message with this `Nats-Msg-Id` and dropped this one.
    package var isDuplicate: Bool
    /// The JetStream domain, if any.
    package var domain: String?

    /// Makes an ack.
    package init(stream: String, sequence: UInt64, isDuplicate: Bool, domain: String? = nil) {
      self.stream = stream
      self.sequence = sequence
      self.isDuplicate = isDuplicate
      self.domain = domain
    }

    init(native ack: jsPubAck) {
      stream = string(ack.Stream) ?? ""
      sequence = ack.Sequence
      isDuplicate = ack.Duplicate
      domain = string(ack.Domain)
    }
  }
}
