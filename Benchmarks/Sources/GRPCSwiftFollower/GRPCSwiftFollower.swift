// The grpc-swift-2 baseline of the end-to-end load benchmark: follows trips on FleetSim's
// server-streaming journeysharing.v1.TripStreamService/GetTrip the way a grpc-swift-2 user would
// for throughput (several GRPCClients over the NIO Posix HTTP/2 transport, one RPC per trip, a
// raw-bytes codec and swift-protobuf decoding), so that JourneySharing's own client can be
// compared against it on the same load.

import GRPCCore
import GRPCNIOTransportHTTP2
import SwiftProtobuf
import SwiftProtobufMessages

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Follows trips with grpc-swift-2: one server-streaming `GetTrip` per trip, spread round-robin
/// over `connections` HTTP/2 connections (one `GRPCClient` each).
///
/// Every received message is decoded with swift-protobuf into a ``Journeysharing_V1_TripUpdate``
/// and handed to the caller with its receive time. A stream that ends with an error is opened
/// again after a short backoff; one that ends with status OK means its trip reached COMPLETE or
/// CANCELED.
///
/// ### Transport settings
/// See ``transportConfig``: 8 MiB HTTP/2 flow-control windows (stream and connection), 1 MiB
/// maximum frame size, connection backoff from 100 ms. grpc-swift-2 itself puts no limit on
/// concurrent RPCs per connection: its NIO HTTP/2 layer opens streams up to the
/// `SETTINGS_MAX_CONCURRENT_STREAMS` the server advertises (FleetSim: `--max-concurrent-streams`,
/// 1000 by default) and queues further streams locally until others close. (Only a server that
/// advertised no limit at all would be held to NIO's assumed initial value of 100.) Keep the
/// trips per connection within the server's limit (more connections, or a raised limit): streams
/// queued in NIO beyond it cost the client superlinearly more (in a debug build, 3000 short trips
/// on one connection took 19 s with a limit of 1000 against 6.6 s with 10000).
public struct GRPCSwiftFollower: Sendable {
  /// What a ``follow(tripNames:onMessage:)`` run saw.
  public struct Summary: Sendable, Hashable, CustomStringConvertible {
    /// Messages received (every `TripUpdate`, whether or not it decoded).
    public var messages: Int
    /// Serialized bytes of the received messages (gRPC payloads, without framing).
    public var bytes: Int
    /// Streams that ended with status OK, i.e. trips followed to the end.
    public var streamsCompleted: Int
    /// Streams that ended with an error (a non-OK status, or the RPC failing to start).
    public var streamErrors: Int
    /// Streams opened again after an error.
    public var retries: Int
    /// Messages swift-protobuf failed to decode (skipped, not passed to `onMessage`).
    public var decodeFailures: Int

    /// A summary with every count zero.
    public init() {
      self.init(messages: 0, bytes: 0, streamsCompleted: 0, streamErrors: 0, retries: 0, decodeFailures: 0)
    }

    /// A summary with the given counts.
    public init(
      messages: Int, bytes: Int, streamsCompleted: Int, streamErrors: Int, retries: Int, decodeFailures: Int
    ) {
      self.messages = messages
      self.bytes = bytes
      self.streamsCompleted = streamsCompleted
      self.streamErrors = streamErrors
      self.retries = retries
      self.decodeFailures = decodeFailures
    }

    /// Adds the counts of `other` to these.
    public mutating func add(_ other: Summary) {
      messages += other.messages
      bytes += other.bytes
      streamsCompleted += other.streamsCompleted
      streamErrors += other.streamErrors
      retries += other.retries
      decodeFailures += other.decodeFailures
    }

    /// The counts on one line, `key=value` separated by spaces.
    public var description: String {
      "messages=\(messages) bytes=\(bytes) streamsCompleted=\(streamsCompleted) "
        + "streamErrors=\(streamErrors) retries=\(retries) decodeFailures=\(decodeFailures)"
    }
  }

  /// The server's host, an IPv4 address such as `127.0.0.1`.
  public let host: String
  /// The server's port.
  public let port: Int
  /// How many HTTP/2 connections (`GRPCClient`s) the trips are spread over.
  public let connections: Int

  /// The method followed: `journeysharing.v1.TripStreamService/GetTrip`, server streaming.
  public static let getTrip = MethodDescriptor(
    fullyQualifiedService: "journeysharing.v1.TripStreamService", method: "GetTrip", type: .serverStreaming)

  /// First wait before reopening a failed stream; doubled per consecutive failure (±20 % jitter).
  static let initialRetryBackoff: Duration = .milliseconds(50)
  /// Longest wait before reopening a failed stream.
  static let maxRetryBackoff: Duration = .seconds(1)

  /// The transport configuration of every connection.
  ///
  /// - `http2.targetWindowSize` 8 MiB: the receive window of each stream and of the connection
  ///   (grpc-swift uses the one value for both, and advertises it as SETTINGS_INITIAL_WINDOW_SIZE),
  ///   so with a thousand streams sharing a connection the server is never held back by flow
  ///   control waiting for our WINDOW_UPDATEs. It is also grpc-swift-nio-transport's default; the
  ///   HTTP/2 default of 64 KiB would throttle a busy connection.
  /// - `http2.maxFrameSize` 1 MiB (HTTP/2 default 16 KiB): the server may send a large message (a
  ///   full trip) in one DATA frame rather than many.
  /// - `backoff` from 100 ms (default 1 s) up to 5 s: a benchmark against a local server
  ///   reconnects quickly after a dropped connection.
  /// - Compression off, no keepalive, default flush coalescing (100 µs / 64 KiB): defaults.
  public static var transportConfig: HTTP2ClientTransport.Posix.Config {
    .defaults { config in
      config.http2.targetWindowSize = 8 << 20
      config.http2.maxFrameSize = 1 << 20
      config.backoff = .init(initial: .milliseconds(100), max: .seconds(5), multiplier: 1.6, jitter: 0.2)
    }
  }

  /// A follower of the server at `host:port` over `connections` HTTP/2 connections.
  ///
  /// - Parameters:
  ///   - host: An IPv4 address, such as `127.0.0.1`.
  ///   - port: The server's port.
  ///   - connections: How many connections to open (at least 1).
  public init(host: String, port: Int, connections: Int) {
    precondition(connections >= 1, "connections must be at least 1")
    self.host = host
    self.port = port
    self.connections = connections
  }

  /// Follows every trip in `tripNames` to its end: opens the connections, starts one
  /// `GetTrip` stream per trip (trip `i` on connection `i % connections`), and returns when every
  /// trip's stream has ended with status OK, or when the calling task is cancelled.
  ///
  /// Either way the connections are shut down gracefully before it returns. On cancellation it
  /// returns the counts so far rather than throwing.
  ///
  /// Every stream error is retried (after 50 ms, doubling up to 1 s, reset once a stream
  /// delivers messages), whatever its status code, and RPCs wait for the connection to become
  /// ready; so against a server that is down or rejects every call this runs until cancelled.
  ///
  /// - Parameters:
  ///   - tripNames: Trip names, `providers/{provider}/trips/{trip}`.
  ///   - onMessage: Called for every decoded update with the trip's index in `tripNames`, the
  ///     update and the time it was received (CLOCK_REALTIME, seconds since 1970, taken before
  ///     decoding). Called concurrently from many tasks; calls for one trip are in stream order.
  /// - Returns: The counts of messages, completed streams, errors and retries.
  /// - Throws: When a transport can't be created or a client fails to run.
  public func follow(
    tripNames: [String],
    onMessage: @escaping @Sendable (_ trip: Int, _ update: Journeysharing_V1_TripUpdate, _ receivedAt: Double) -> Void
  ) async throws -> Summary {
    let config = Self.transportConfig
    let clients = try (0..<connections).map { _ in
      GRPCClient(
        transport: try HTTP2ClientTransport.Posix(
          target: .ipv4(address: host, port: port), transportSecurity: .plaintext, config: config))
    }

    return try await withThrowingTaskGroup(of: Void.self, returning: Summary.self) { connectionTasks in
      for client in clients {
        connectionTasks.addTask { try await client.runConnections() }
      }

      let summary = await withTaskGroup(of: Summary.self, returning: Summary.self) { tripTasks in
        for (index, name) in tripNames.enumerated() {
          let client = clients[index % clients.count]
          tripTasks.addTask { await Self.follow(trip: index, name: name, on: client, onMessage: onMessage) }
        }
        var total = Summary()
        for await result in tripTasks { total.add(result) }
        return total
      }

      for client in clients { client.beginGracefulShutdown() }
      try await connectionTasks.waitForAll()
      return summary
    }
  }

  // MARK: - One trip

  /// What one stream saw, and the error it ended with (nil: status OK).
  private struct StreamOutcome: Sendable {
    var counts = Summary()
    var error: (any Error)?
  }

  /// Follows one trip until its stream ends OK (retrying after errors) or the task is cancelled.
  private static func follow(
    trip index: Int,
    name: String,
    on client: GRPCClient<HTTP2ClientTransport.Posix>,
    onMessage: @escaping @Sendable (_ trip: Int, _ update: Journeysharing_V1_TripUpdate, _ receivedAt: Double) -> Void
  ) async -> Summary {
    let request = ClientRequest(message: requestBytes(tripName: name))
    var options = CallOptions.defaults
    // Queue the RPC while the connection is (re)connecting rather than failing it at once.
    options.waitForReady = true

    var total = Summary()
    var backoff = initialRetryBackoff
    var attempt = 0
    while !Task.isCancelled {
      if attempt > 0 { total.retries += 1 }
      attempt += 1

      var outcome: StreamOutcome
      do {
        outcome = try await client.serverStreaming(
          request: request, descriptor: getTrip, serializer: RawBytesCodec(), deserializer: RawBytesCodec(),
          options: options
        ) { response in
          var outcome = StreamOutcome()
          do {
            for try await bytes in response.messages {
              let receivedAt = wallClockNow()
              outcome.counts.messages += 1
              outcome.counts.bytes += bytes.count
              let update: Journeysharing_V1_TripUpdate
              do {
                update = try Journeysharing_V1_TripUpdate(serializedBytes: bytes)
              } catch {
                outcome.counts.decodeFailures += 1
                continue
              }
              onMessage(index, update, receivedAt)
            }
          } catch {
            outcome.error = error
          }
          return outcome
        }
      } catch {
        outcome = StreamOutcome(error: error)
      }

      total.add(outcome.counts)
      guard outcome.error != nil else {
        total.streamsCompleted += 1
        return total
      }
      // A stream torn down by our own cancellation isn't a stream error.
      if Task.isCancelled { break }
      total.streamErrors += 1

      // A stream that delivered messages was healthy: start the backoff over.
      if outcome.counts.messages > 0 { backoff = initialRetryBackoff }
      let jitter = Double.random(in: 0.8...1.2)
      do {
        try await Task.sleep(for: backoff * jitter)
      } catch {
        break  // cancelled
      }
      backoff = min(backoff * 2, maxRetryBackoff)
    }
    return total
  }

  /// The serialized `StreamTripRequest` for `tripName`: the same view, route format and header
  /// (a CONSUMER SDK) that JourneySharing's own client sends.
  static func requestBytes(tripName: String) -> [UInt8] {
    var request = Journeysharing_V1_StreamTripRequest()
    request.header = consumerHeader
    request.name = tripName
    request.view = .journeySharingV1S
    request.routeFormatType = .latLngListType
    // Serializing a message whose fields are all set by us can't fail.
    // swift-format-ignore: NeverUseForceTry
    return try! request.serializedBytes()
  }
}

/// The request header JourneySharing's own client sends: a CONSUMER SDK, en-US.
let consumerHeader: Maps_Fleetengine_V1_RequestHeader = {
  var header = Maps_Fleetengine_V1_RequestHeader()
  header.sdkType = .consumer
  header.sdkVersion = "journeysharing-swift/0.1"
  header.languageCode = "en-US"
  header.regionCode = "US"
  return header
}()

/// The wall-clock time (CLOCK_REALTIME) in seconds since 1970.
@inline(__always)
func wallClockNow() -> Double {
  var now = timespec()
  clock_gettime(CLOCK_REALTIME, &now)
  return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
}

/// Passes messages through as raw bytes: the request is serialized by the caller, and responses
/// are decoded with swift-protobuf after they are received (no generated grpc-swift stubs).
struct RawBytesCodec: MessageSerializer, MessageDeserializer {
  typealias Message = [UInt8]

  func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes {
    Bytes(message)
  }

  func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
    serializedMessageBytes.withUnsafeBytes { Array($0) }
  }
}
