// Sources/NATSClient/NATSError.swift - the one error NATSClient throws: a libnats status, a JetStream code, text

internal import CNATS

/// The error every NATSClient call throws.
///
/// It carries the libnats status (``code``), the JetStream API error code when the server answered a
/// JetStream request with an error (``jetStreamCode``, for example 10058 "stream name already in use with
/// a different configuration"), and libnats' text for the failure (``message``).
///
/// The codes that heal by themselves after a reconnect or a leader election are ``Code/timeout``,
/// ``Code/connectionDisconnected``, ``Code/noResponders`` (no JetStream leader answered yet) and
/// ``Code/notYetConnected``; ``isTransient`` is true for them.
package struct NATSError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A libnats status code (`natsStatus`), kept as its number so that codes a later libnats adds still fit.
  package struct Code: Hashable, Sendable, CustomStringConvertible {
    /// The `natsStatus` value.
    package let rawValue: UInt32

    /// Wraps a `natsStatus` number.
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    init(_ status: natsStatus) { self.rawValue = status.rawValue }

    /// `NATS_ERR`: a generic error; JetStream API errors come with this code and a ``NATSError/jetStreamCode``.
    package static let generic = Code(NATS_ERR)
    /// `NATS_PROTOCOL_ERROR`: a protocol message from the server could not be parsed.
    package static let protocolError = Code(NATS_PROTOCOL_ERROR)
    /// `NATS_IO_ERROR`: network communication failed.
    package static let ioError = Code(NATS_IO_ERROR)
    /// `NATS_CONNECTION_CLOSED`: the connection is closed.
    package static let connectionClosed = Code(NATS_CONNECTION_CLOSED)
    /// `NATS_NO_SERVER`: no server in the list could be connected to.
    package static let noServer = Code(NATS_NO_SERVER)
    /// `NATS_STALE_CONNECTION`: the server closed the connection because the client missed pings.
    package static let staleConnection = Code(NATS_STALE_CONNECTION)
    /// `NATS_CONNECTION_DISCONNECTED`: the connection was lost while the call was pending.
    package static let connectionDisconnected = Code(NATS_CONNECTION_DISCONNECTED)
    /// `NATS_CONNECTION_AUTH_FAILED`: the server refused the credentials.
    package static let authenticationFailed = Code(NATS_CONNECTION_AUTH_FAILED)
    /// `NATS_NOT_PERMITTED`: the action is not permitted.
    package static let notPermitted = Code(NATS_NOT_PERMITTED)
    /// `NATS_NOT_FOUND`: something (a stream, a consumer, a message) does not exist.
    package static let notFound = Code(NATS_NOT_FOUND)
    /// `NATS_ADDRESS_MISSING`: a server URL has no host.
    package static let addressMissing = Code(NATS_ADDRESS_MISSING)
    /// `NATS_INVALID_SUBJECT`: a subject is empty or malformed.
    package static let invalidSubject = Code(NATS_INVALID_SUBJECT)
    /// `NATS_INVALID_ARG`: an argument is invalid.
    package static let invalidArgument = Code(NATS_INVALID_ARG)
    /// `NATS_INVALID_SUBSCRIPTION`: the subscription is closed or of the wrong kind.
    package static let invalidSubscription = Code(NATS_INVALID_SUBSCRIPTION)
    /// `NATS_INVALID_TIMEOUT`: a timeout is not positive.
    package static let invalidTimeout = Code(NATS_INVALID_TIMEOUT)
    /// `NATS_ILLEGAL_STATE`: the object is not in a state that allows the call.
    package static let illegalState = Code(NATS_ILLEGAL_STATE)
    /// `NATS_SLOW_CONSUMER`: a subscription's pending limit was reached and messages were dropped.
    package static let slowConsumer = Code(NATS_SLOW_CONSUMER)
    /// `NATS_MAX_PAYLOAD`: the message is larger than the server's maximum payload.
    package static let maxPayload = Code(NATS_MAX_PAYLOAD)
    /// `NATS_INSUFFICIENT_BUFFER`: the reconnect buffer is full.
    package static let insufficientBuffer = Code(NATS_INSUFFICIENT_BUFFER)
    /// `NATS_NO_MEMORY`: an allocation failed.
    package static let noMemory = Code(NATS_NO_MEMORY)
    /// `NATS_SYS_ERROR`: a system call failed.
    package static let systemError = Code(NATS_SYS_ERROR)
    /// `NATS_TIMEOUT`: the operation timed out.
    package static let timeout = Code(NATS_TIMEOUT)
    /// `NATS_NOT_YET_CONNECTED`: the first connect is still being retried in the background.
    package static let notYetConnected = Code(NATS_NOT_YET_CONNECTED)
    /// `NATS_DRAINING`: the connection or subscription is draining.
    package static let draining = Code(NATS_DRAINING)
    /// `NATS_NO_RESPONDERS`: nobody listens on the request's subject (for JetStream: no stream leader yet).
    package static let noResponders = Code(NATS_NO_RESPONDERS)
    /// `NATS_MISMATCH`: a JetStream consumer's sequence does not match the library's view.
    package static let mismatch = Code(NATS_MISMATCH)
    /// `NATS_MISSED_HEARTBEAT`: a JetStream subscription missed the server's heartbeats.
    package static let missedHeartbeat = Code(NATS_MISSED_HEARTBEAT)

    /// libnats' name for the status, for example "Timeout".
    package var description: String {
      // natsStatus_GetText indexes a static table and returns "Unknown Status" when out of range.
      String(cString: natsStatus_GetText(natsStatus(rawValue: rawValue)))
    }
  }

  /// The libnats status.
  package var code: Code
  /// The JetStream API error code (`jsErrCode`, for example 10071 "wrong last sequence"), or 0 when the
  /// failure was not a JetStream API error.
  package var jetStreamCode: Int
  /// What failed, in libnats' (or the server's) words, prefixed with the operation.
  package var message: String

  /// Makes an error from its parts.
  package init(code: Code, jetStreamCode: Int = 0, message: String) {
    self.code = code
    self.jetStreamCode = jetStreamCode
    self.message = message
  }

  /// True for failures that a retry after a reconnect or a leader election can heal.
  package var isTransient: Bool {
    [.timeout, .connectionDisconnected, .noResponders, .notYetConnected, .staleConnection, .ioError].contains(code)
  }

  /// `NATSError(26 Timeout): fetch from relays on FOLLOW: Timeout`, with the JetStream code when there is one.
  package var description: String {
    jetStreamCode == 0
      ? "NATSError(\(code.rawValue) \(code)): \(message)"
      : "NATSError(\(code.rawValue) \(code), JetStream \(jetStreamCode)): \(message)"
  }
}

extension NATSError {
  /// The error for `status` returned by `operation`.
  ///
  /// Call it on the thread that made the failing call, right after it: libnats keeps the text of the last
  /// error per thread. The text is used only when libnats recorded it for this same status, so a stale text
  /// from an earlier call on the thread never shows up.
  init(_ status: natsStatus, jetStreamCode: jsErrCode = jsErrCode(rawValue: 0), operation: String) {
    var lastStatus = NATS_OK
    var text = ""
    if let lastError = nats_GetLastError(&lastStatus), lastStatus == status {
      text = String(cString: lastError)
    }
    if text.isEmpty { text = String(cString: natsStatus_GetText(status)) }
    self.init(code: Code(status), jetStreamCode: Int(jetStreamCode.rawValue), message: "\(operation): \(text)")
  }
}

/// Throws the ``NATSError`` for `status` unless it is `NATS_OK` (see `NATSError.init(_:jetStreamCode:operation:)`).
@inline(__always)
func checkStatus(
  _ status: natsStatus, jetStreamCode: jsErrCode = jsErrCode(rawValue: 0), _ operation: @autoclosure () -> String
) throws(NATSError) {
  guard status == NATS_OK else { throw NATSError(status, jetStreamCode: jetStreamCode, operation: operation()) }
}

extension NATSError {
  /// The JetStream API error codes (`jsErrCode`) this package acts on, by name.
  package enum JetStreamCode {
    /// 10008: "JetStream system temporarily unavailable" (no meta leader yet, a leader election).
    package static let clusterNotAvailable = Int(JSClusterNotAvailErr.rawValue)
    /// 10014: the consumer does not exist.
    package static let consumerNotFound = Int(JSConsumerNotFoundErr.rawValue)
    /// 10037: no message matches (a get of the last message on a subject that has none).
    package static let noMessageFound = Int(JSNoMessageFoundErr.rawValue)
    /// 10059: the stream does not exist.
    package static let streamNotFound = Int(JSStreamNotFoundErr.rawValue)
    /// 10071: a publish's `Nats-Expected-Last-Sequence` or `Nats-Expected-Last-Subject-Sequence` did not
    /// match what the stream holds.
    package static let wrongLastSequence = Int(JSStreamWrongLastSequenceErr.rawValue)
  }

  /// Whether the error says that a stream, a consumer or a message does not exist.
  package var isNotFound: Bool {
    code == .notFound || jetStreamCode == JetStreamCode.streamNotFound
      || jetStreamCode == JetStreamCode.consumerNotFound || jetStreamCode == JetStreamCode.noMessageFound
  }

  /// Whether a retry after a moment can heal it: ``isTransient``, or JetStream being briefly unavailable.
  package var isRetryable: Bool { isTransient || jetStreamCode == JetStreamCode.clusterNotAvailable }
}
