// Sources/GRPCHealth/HealthService.swift - grpc.health.v1.Health: Check and Watch
//
// gRPC's health-checking protocol (grpc/grpc doc/health-checking.md) as grpc-go's health server
// answers it: Check gives a known service's status or NOT_FOUND; Watch sends the status at once and
// every change after it, SERVICE_UNKNOWN for a service the server does not know (and stays open,
// as a later registration would change it). Runs on the server's event loop; no locks.

package import GRPCProtocol
package import GRPCValues
import ProtoWire

/// The health service. `@unchecked Sendable`: every method runs on the server's event loop.
package final class HealthService: GRPCService, @unchecked Sendable {
  private final class Watcher {
    let call: any GRPCServerCallContext
    let service: String
    var lastSent: HealthCheckResponse.ServingStatus

    init(call: any GRPCServerCallContext, service: String, lastSent: HealthCheckResponse.ServingStatus) {
      self.call = call
      self.service = service
      self.lastSent = lastSent
    }
  }

  /// The status of each known service ("" is the server as a whole).
  private var statuses: [String: HealthCheckResponse.ServingStatus]
  private var watchers: [ObjectIdentifier: Watcher] = [:]
  /// Once set, every known service is NOT_SERVING for good (the server is draining).
  package private(set) var isShutDown = false

  /// A health service knowing `services`, each with `initial` status.
  package init(services: [String], initial: HealthCheckResponse.ServingStatus = .serving) {
    statuses = Dictionary(services.map { ($0, initial) }, uniquingKeysWith: { first, _ in first })
  }

  /// Watch streams open now.
  package var watcherCount: Int { watchers.count }

  /// The status of `service`, nil when unknown.
  package func status(of service: String) -> HealthCheckResponse.ServingStatus? { statuses[service] }

  /// Sets the status of `service` (registering it if unknown) and tells its watchers; ignored once shut down.
  package func setStatus(_ status: HealthCheckResponse.ServingStatus, for service: String) {
    guard !isShutDown else { return }
    statuses[service] = status
    notify(service: service)
  }

  /// Every known service becomes NOT_SERVING, for good, and watchers are told (grpc-go's `Shutdown`).
  package func shutDown() {
    guard !isShutDown else { return }
    for service in Array(statuses.keys) { statuses[service] = .notServing }
    isShutDown = true
    for service in Set(watchers.values.map(\.service)) { notify(service: service) }
  }

  /// Ends every open Watch stream with `status`.
  package func endWatches(_ status: GRPCStatus) {
    let open = watchers.values
    watchers.removeAll()
    for watcher in open { watcher.call.finish(status) }
  }

  // MARK: - Calls

  package func handle(_ call: any GRPCServerCallContext) {
    let request: HealthCheckRequest
    do {
      request = try HealthCheckRequest(serializedBytes: call.request)
    } catch {
      call.finish(GRPCStatus(code: .invalidArgument, message: "malformed HealthCheckRequest: \(error)"))
      return
    }
    switch call.path {
    case HealthMethods.check:
      guard let status = statuses[request.service] else {
        call.finish(GRPCStatus(code: .notFound, message: "unknown service"))
        return
      }
      call.send(HealthCheckResponse(status: status).serializedBytes())
      call.finish(.ok)
    case HealthMethods.watch:
      let status = statuses[request.service] ?? .serviceUnknown
      let key = ObjectIdentifier(call as AnyObject)
      watchers[key] = Watcher(call: call, service: request.service, lastSent: status)
      call.onCancel { [weak self] in self?.watchers[key] = nil }
      call.send(HealthCheckResponse(status: status).serializedBytes())
    default:
      call.finish(GRPCStatus(code: .unimplemented, message: "method \(call.path) is not implemented"))
    }
  }

  /// Sends `service`'s status to its watchers that have not seen it yet.
  private func notify(service: String) {
    let status = statuses[service] ?? .serviceUnknown
    for (key, watcher) in watchers where watcher.service == service && watcher.lastSent != status {
      if watcher.call.isClosed {
        watchers[key] = nil
        continue
      }
      watcher.lastSent = status
      watcher.call.send(HealthCheckResponse(status: status).serializedBytes())
    }
  }
}
