// The grpc-swift-2 baseline of the polling benchmark: polls Fleet Engine's unary
// maps.fleetengine.v1.TripService/GetTrip for many trips the way a grpc-swift-2 user would (several
// GRPCClients over the NIO Posix HTTP/2 transport, one unary RPC per poll, a raw-bytes codec and
// swift-protobuf), sending the *_version fields of the last answer so that unchanged routes and
// waypoints are not sent again, as JourneySharing's polling does.

import GRPCCore
import GRPCNIOTransportHTTP2
import SwiftProtobuf
import SwiftProtobufMessages

/// Polls trips with grpc-swift-2: each trip every `interval`, its first poll at a random point of the
/// first interval, spread round-robin over `connections` HTTP/2 connections (one `GRPCClient` each).
public struct GRPCSwiftPoller: Sendable {
  /// The server's host, an IPv4 address such as `127.0.0.1`.
  public let host: String
  /// The server's port.
  public let port: Int
  /// How many HTTP/2 connections (`GRPCClient`s) the trips are spread over.
  public let connections: Int
  /// Time between two polls of a trip.
  public let interval: Duration

  /// The method polled: `maps.fleetengine.v1.TripService/GetTrip`, unary.
  public static let getTrip = MethodDescriptor(
    fullyQualifiedService: "maps.fleetengine.v1.TripService", method: "GetTrip", type: .unary)

  /// A poller of the server at `host:port` over `connections` connections, each trip every `interval`.
  public init(host: String, port: Int, connections: Int, interval: Duration) {
    precondition(connections >= 1, "connections must be at least 1")
    self.host = host
    self.port = port
    self.connections = connections
    self.interval = interval
  }

  /// Polls every trip of `tripNames` until the calling task is cancelled; returns the number of polls that
  /// failed. `onAnswer` gets the trip's index and the poll's round trip in seconds (request sent to answer
  /// decoded) for every answered poll, from many tasks at once.
  public func poll(
    tripNames: [String], onAnswer: @escaping @Sendable (_ trip: Int, _ seconds: Double) -> Void
  ) async throws -> Int {
    let clients = try (0..<connections).map { _ in
      GRPCClient(
        transport: try HTTP2ClientTransport.Posix(
          target: .ipv4(address: host, port: port), transportSecurity: .plaintext,
          config: GRPCSwiftFollower.transportConfig))
    }
    return try await withThrowingTaskGroup(of: Void.self, returning: Int.self) { connectionTasks in
      for client in clients {
        connectionTasks.addTask { try await client.runConnections() }
      }
      let failures = await withTaskGroup(of: Int.self, returning: Int.self) { tripTasks in
        for (index, name) in tripNames.enumerated() {
          let client = clients[index % clients.count]
          let interval = interval
          tripTasks.addTask {
            await Self.poll(trip: index, name: name, every: interval, on: client, onAnswer: onAnswer)
          }
        }
        var total = 0
        for await failed in tripTasks { total += failed }
        return total
      }
      for client in clients { client.beginGracefulShutdown() }
      try await connectionTasks.waitForAll()
      return failures
    }
  }

  /// Polls one trip until cancelled; returns its failed polls.
  private static func poll(
    trip index: Int, name: String, every interval: Duration, on client: GRPCClient<HTTP2ClientTransport.Posix>,
    onAnswer: @escaping @Sendable (_ trip: Int, _ seconds: Double) -> Void
  ) async -> Int {
    var request = Maps_Fleetengine_V1_GetTripRequest()
    request.header = consumerHeader
    request.name = name
    request.view = .journeySharingV1S
    request.routeFormatType = .latLngListType
    var options = CallOptions.defaults
    options.waitForReady = true
    var failures = 0
    let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) * 1e-18
    do {
      try await Task.sleep(for: .seconds(Double.random(in: 0..<seconds)))
    } catch {
      return failures
    }
    while !Task.isCancelled {
      let started = ContinuousClock.now
      do {
        // Serializing a message whose fields are all set here can't fail.
        // swift-format-ignore: NeverUseForceTry
        let bytes: [UInt8] = try! request.serializedBytes()
        let trip = try await client.unary(
          request: ClientRequest(message: bytes), descriptor: getTrip, serializer: RawBytesCodec(),
          deserializer: RawBytesCodec(), options: options
        ) { response in
          try Maps_Fleetengine_V1_Trip(serializedBytes: try response.message)
        }
        let elapsed = ContinuousClock.now - started
        onAnswer(index, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
        // Ask next time only for what changed since this answer.
        if trip.hasCurrentRouteSegmentVersion { request.currentRouteSegmentVersion = trip.currentRouteSegmentVersion }
        if trip.hasCurrentRouteSegmentTrafficVersion {
          request.currentRouteSegmentTrafficVersion = trip.currentRouteSegmentTrafficVersion
        }
        if trip.hasRemainingWaypointsVersion { request.remainingWaypointsVersion = trip.remainingWaypointsVersion }
        if trip.hasRemainingWaypointsRouteVersion {
          request.remainingWaypointsRouteVersion = trip.remainingWaypointsRouteVersion
        }
      } catch {
        if Task.isCancelled { break }
        failures += 1
      }
      do {
        try await Task.sleep(until: started + interval, clock: .continuous)
      } catch {
        break
      }
    }
    return failures
  }
}
