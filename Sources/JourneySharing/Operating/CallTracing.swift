// Sources/JourneySharing/Operating/CallTracing.swift - a span per call, and its trace context on the wire
//
// Every GetTrip (a poll, a refresh, a stream for its whole lifetime) gets a client span through the
// swift-distributed-tracing API: the tracer the configuration names, else the one InstrumentationSystem was
// bootstrapped with (none: a no-op, and nothing here does any work). The span's parent is the
// ServiceContext of the caller that started following the trip (the task that registered the first
// subscriber), and the span's context is injected into the call's metadata with the tracer's `inject`: a
// W3C tracer (swift-otel's, for one) writes `traceparent` and `tracestate` there. The library ships no
// exporter.

import GRPCProtocol
import Instrumentation
import Tracing

/// Writes a tracer's propagation headers into a call's metadata.
struct GRPCMetadataInjector: Injector {
  func inject(_ value: String, forKey key: String, into carrier: inout GRPCMetadata) {
    carrier.add(key.lowercased(), value)
  }
}

/// Starts the spans of a trip's calls. Sendable: the tracer is.
struct CallTracing: Sendable {
  /// The tracer, or nil when tracing is off (InstrumentationSystem's no-op tracer).
  let tracer: (any Tracer)?

  /// Tracing with `tracer`, or with InstrumentationSystem's tracer when nil.
  init(tracer: (any Tracer)?) {
    let chosen = tracer ?? InstrumentationSystem.tracer
    self.tracer = chosen is NoOpTracer ? nil : chosen
  }

  /// Starts the span of a call of `method` whose parent is `parent` (the follower's context; nil: a new trace),
  /// the `attempt`-th since the trip's last success, and injects its context into `options`' metadata.
  /// Returns nil when tracing is off.
  func startSpan(
    _ method: JourneySharingMetrics.Method, parent: ServiceContext?, attempt: Int, options: inout CallOptions
  ) -> (any Span)? {
    guard let tracer else { return nil }
    let span = tracer.startSpan(method.rawValue, context: parent ?? .topLevel, ofKind: .client)
    let (service, name) = method.serviceAndMethod
    span.attributes["rpc.system"] = "grpc"
    span.attributes["rpc.service"] = service
    span.attributes["rpc.method"] = name
    span.attributes["journeysharing.attempt"] = attempt
    tracer.inject(span.context, into: &options.metadata, using: GRPCMetadataInjector())
    return span
  }

  /// Ends `span` with the call's final status (`rpc.grpc.status_code`, and an error status unless OK).
  static func end(_ span: (any Span)?, status: GRPCStatus, messages: Int? = nil) {
    guard let span else { return }
    span.attributes["rpc.grpc.status_code"] = status.code.rawValue
    if let messages { span.attributes["journeysharing.messages"] = messages }
    if status.code != .ok {
      span.setStatus(SpanStatus(code: .error, message: "\(status.code.name): \(status.message)"))
    }
    span.end()
  }
}

extension JourneySharingMetrics.Method {
  /// The service and the method of the path, for `rpc.service` and `rpc.method`.
  var serviceAndMethod: (String, String) {
    let parts = rawValue.split(separator: "/", maxSplits: 1)
    return (String(parts[0]), String(parts[1]))
  }
}
