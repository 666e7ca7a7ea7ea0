// swift-tools-version: 6.1
//
// JourneySharing: follow ride-sharing trips in real time from server-side Swift on Linux,
// over gRPC on libnghttp2 and OpenSSL. See README.md and docs/.

import PackageDescription

let defaultSwiftSettings: [SwiftSetting] = [
  .swiftLanguageMode(.v6),
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("MemberImportVisibility"),
  .enableUpcomingFeature("InternalImportsByDefault"),
]

// What users depend on. Everything else is an implementation module: its cross-module API is
// `package`, or `public` only where a product's public API shows it.
let products: [Product] = [
  // The consumer API: TripService, TripModel, subscribers; re-exports the Fleet Engine messages and GRPCError.
  .library(name: "JourneySharing", targets: ["JourneySharing"]),
  // The Fleet Engine message types and their protobuf wire codec (and proto3 JSON).
  .library(name: "FleetEngineMessages", targets: ["FleetEngineMessages"]),
  // The gRPC client channel and server on nghttp2 and OpenSSL, for any gRPC service.
  .library(name: "HTTP2Transport", targets: ["HTTP2Transport"]),
  // A simulated Fleet Engine to embed in tests and demos.
  .library(name: "FleetSim", targets: ["FleetSim"]),
  .executable(name: "protowire-conformance", targets: ["protowire-conformance"]),
  .executable(name: "grpc-interop-client", targets: ["grpc-interop-client"]),
  .executable(name: "tripwatch", targets: ["tripwatch"]),
  .executable(name: "fleetsim", targets: ["fleetsim"]),
]

let dependencies: [Package.Dependency] = [
  .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
  .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
  // Metrics through the swift-metrics API (library); Prometheus text format for the executables only.
  .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
  .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
  // Service and ServiceGroup: graceful shutdown on signals (library).
  .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
  // Spans per call and W3C trace context in request metadata through the swift-distributed-tracing API (library).
  .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
]

let targets: [Target] = [
  // MARK: - System libraries

  .systemLibrary(
    name: "CNGHTTP2",
    pkgConfig: "libnghttp2",
    providers: [.apt(["libnghttp2-dev"])]
  ),
  .systemLibrary(
    name: "COpenSSL",
    pkgConfig: "openssl",
    providers: [.apt(["libssl-dev"])]
  ),
  .systemLibrary(
    name: "CZlib",
    pkgConfig: "zlib",
    providers: [.apt(["zlib1g-dev"])]
  ),
  .systemLibrary(
    name: "CNATS",
    pkgConfig: "libnats",
    providers: [.apt(["libnats-dev"])]
  ),

  .target(
    name: "CLinuxSystem"
  ),

  // MARK: - What every module shares

  // Locked, the clocks, a seeded generator, the release version: one of each for the package.
  .target(
    name: "Primitives",
    swiftSettings: defaultSwiftSettings
  ),

  // MARK: - Protobuf wire format and Fleet Engine messages

  .target(
    name: "ProtoWire",
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "ProtoWireTests",
    dependencies: ["ProtoWire"],
    swiftSettings: defaultSwiftSettings
  ),

  .target(
    name: "FleetEngineMessages",
    dependencies: ["Primitives", "ProtoWire"],
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "FleetEngineMessagesTests",
    dependencies: ["FleetEngineMessages", "ProtoWire", "Primitives"],
    swiftSettings: defaultSwiftSettings
  ),

  // MARK: - gRPC over HTTP/2

  // gzip and deflate through zlib: the only importer of CZlib, used by GRPCProtocol alone.
  .target(
    name: "GRPCCompression",
    dependencies: ["CZlib"],
    swiftSettings: defaultSwiftSettings
  ),
  // The values every gRPC user handles (status code, status, error, metadata), without the wire
  // protocol or zlib: what JourneySharingCore, the per-update step, carries.
  .target(
    name: "GRPCValues",
    dependencies: ["Primitives"],
    swiftSettings: defaultSwiftSettings
  ),
  .target(
    name: "GRPCProtocol",
    dependencies: ["Primitives", "GRPCValues", "GRPCCompression"],
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "GRPCProtocolTests",
    dependencies: ["Primitives", "GRPCProtocol", "GRPCCompression"],
    swiftSettings: defaultSwiftSettings
  ),

  // The package's one user of OpenSSL: TLS sessions over memory BIOs (for HTTP2Transport) and the
  // signatures, keys and random bytes JSONWebToken needs.
  .target(
    name: "TLSCrypto",
    dependencies: ["COpenSSL", "Primitives"],
    swiftSettings: defaultSwiftSettings
  ),

  .target(
    name: "HTTP2Session",
    dependencies: ["CNGHTTP2", "Primitives"],
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "HTTP2SessionTests",
    dependencies: ["HTTP2Session"],
    swiftSettings: defaultSwiftSettings
  ),

  .target(
    name: "HTTP2Transport",
    dependencies: [
      "Primitives",
      "CLinuxSystem",
      "GRPCProtocol",
      "GRPCValues",
      "HTTP2Session",
      "TLSCrypto",
      .product(name: "Logging", package: "swift-log"),
    ],
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "HTTP2TransportTests",
    dependencies: [
      "Primitives",
      "HTTP2Transport", "HTTP2Session", "GRPCProtocol", "COpenSSL", "TLSCrypto", "TestSupport",
      .product(name: "Logging", package: "swift-log"),
    ],
    swiftSettings: defaultSwiftSettings
  ),
  // Test code every suite shares; not a product: the in-memory transport and the virtual clock (stand-ins for a
  // network), waiting for a condition, a log handler that keeps records, a child process's output.
  .target(
    name: "TestSupport",
    dependencies: ["GRPCProtocol", "Primitives", .product(name: "Logging", package: "swift-log")],
    path: "Tests/TestSupport",
    swiftSettings: defaultSwiftSettings
  ),

  // MARK: - The consumer API

  .target(
    name: "UpdatePipeline",
    dependencies: ["Primitives"],
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "UpdatePipelineTests",
    dependencies: ["Primitives", "UpdatePipeline", "TestSupport"],
    swiftSettings: defaultSwiftSettings
  ),

  // The per-update step every followed trip takes (merge, derive, diff, offer) and the state it keeps:
  // pure value code with no transport, which the follower, the benchmarks and the fuzzer share.
  .target(
    name: "JourneySharingCore",
    dependencies: ["FleetEngineMessages", "GRPCValues", "ProtoWire"],
    swiftSettings: defaultSwiftSettings
  ),

  .target(
    name: "JourneySharing",
    dependencies: [
      "JourneySharingCore", "Primitives",
      "FleetEngineMessages",
      "GRPCProtocol",
      "HTTP2Session",
      "HTTP2Transport",
      "JSONWebToken",
      "ProtoWire",
      "UpdatePipeline",
      .product(name: "Logging", package: "swift-log"),
      .product(name: "CoreMetrics", package: "swift-metrics"),
      .product(name: "Tracing", package: "swift-distributed-tracing"),
      .product(name: "Instrumentation", package: "swift-distributed-tracing"),
      .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    ],
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "JourneySharingTests",
    dependencies: [
      "JourneySharingCore", "UpdatePipeline", "Primitives",
      "JourneySharing", "FleetEngineMessages", "FleetSim", "GRPCProtocol", "HTTP2Session", "HTTP2Transport",
      "JSONWebToken",
      "ProtoWire", "TestSupport", .product(name: "Logging", package: "swift-log"),
      .product(name: "MetricsTestKit", package: "swift-metrics"),
      .product(name: "Tracing", package: "swift-distributed-tracing"),
      .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
      .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    ],
    swiftSettings: defaultSwiftSettings
  ),

  // MARK: - Auth and the simulator

  .target(
    name: "JSONWebToken",
    dependencies: ["Primitives", "TLSCrypto"],
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "JSONWebTokenTests",
    dependencies: ["JSONWebToken", "Primitives"],
    swiftSettings: defaultSwiftSettings
  ),

  // gRPC's standard health service (grpc.health.v1): its messages and a server; FleetSim and the relay host it.
  .target(
    name: "GRPCHealth",
    dependencies: ["GRPCProtocol", "GRPCValues", "ProtoWire"],
    swiftSettings: defaultSwiftSettings
  ),

  .target(
    name: "FleetSim",
    dependencies: [
      "Primitives",
      "FleetEngineMessages",
      "GRPCHealth",
      "GRPCProtocol",
      "HTTP2Transport",
      "JSONWebToken",
      "ProtoWire",
      .product(name: "Logging", package: "swift-log"),
      .product(name: "CoreMetrics", package: "swift-metrics"),
      .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    ],
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "FleetSimTests",
    dependencies: [
      "Primitives", "FleetSim", "FleetEngineMessages", "HTTP2Transport", "GRPCProtocol", "JSONWebToken",
      "ProtoWire", .product(name: "Logging", package: "swift-log"),
      .product(name: "CoreMetrics", package: "swift-metrics"),
      .product(name: "MetricsTestKit", package: "swift-metrics"),
      .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    ],
    swiftSettings: defaultSwiftSettings
  ),

  // MARK: - NATS JetStream

  // A small Swift API over libnats (the NATS C client): connections, JetStream streams, publishing,
  // pull consumers; the only importer of CNATS.
  .target(
    name: "NATSClient",
    dependencies: ["CNATS", "Primitives", .product(name: "Logging", package: "swift-log")],
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "NATSClientTests",
    dependencies: [
      "NATSClient", "NATSTestSupport", "JSONWebToken", "TestSupport", .product(name: "Logging", package: "swift-log"),
    ],
    swiftSettings: defaultSwiftSettings
  ),
  // Test code shared by test targets: nats-server processes (single and clustered) on 127.0.0.1; not a product.
  .target(
    name: "NATSTestSupport",
    dependencies: ["JSONWebToken", "Primitives"],
    path: "Tests/NATSTestSupport",
    swiftSettings: defaultSwiftSettings
  ),

  // The trip relay: follows each trip once per relay cluster (work assigned through a JetStream work queue),
  // publishes its updates to JetStream and serves them over the streaming GetTrip; see README "Relay".
  .target(
    name: "TripRelay",
    dependencies: [
      "Primitives", "FleetEngineMessages", "GRPCHealth", "GRPCProtocol", "HTTP2Transport", "JourneySharing",
      "JSONWebToken", "NATSClient", "ProtoWire",
      .product(name: "Logging", package: "swift-log"),
      .product(name: "CoreMetrics", package: "swift-metrics"),
      .product(name: "Tracing", package: "swift-distributed-tracing"),
    ],
    swiftSettings: defaultSwiftSettings
  ),
  .testTarget(
    name: "TripRelayTests",
    dependencies: [
      "TripRelay", "NATSClient", "NATSTestSupport", "JourneySharing", "FleetEngineMessages", "FleetSim",
      "GRPCHealth", "GRPCProtocol", "HTTP2Transport", "JSONWebToken", "Primitives", "TestSupport",
      .product(name: "Logging", package: "swift-log"),
      .product(name: "CoreMetrics", package: "swift-metrics"),
      .product(name: "MetricsTestKit", package: "swift-metrics"),
      .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
      .product(name: "Tracing", package: "swift-distributed-tracing"),
    ],
    swiftSettings: defaultSwiftSettings
  ),

  // MARK: - Executables

  // What the command-line tools share: the exit-code scheme, standard error, files, the version.
  .target(
    name: "ToolSupport",
    dependencies: [
      "Primitives", "GRPCProtocol", "HTTP2Transport",
      .product(name: "ArgumentParser", package: "swift-argument-parser"),
    ],
    swiftSettings: defaultSwiftSettings
  ),

  .executableTarget(
    name: "protowire-conformance",
    dependencies: [
      "ToolSupport",
      "FleetEngineMessages",
      "ProtoWire",
      .product(name: "ArgumentParser", package: "swift-argument-parser"),
    ],
    swiftSettings: defaultSwiftSettings
  ),
  .executableTarget(
    name: "grpc-interop-client",
    dependencies: [
      "ToolSupport",
      "GRPCProtocol",
      "HTTP2Transport",
      "ProtoWire",
      .product(name: "ArgumentParser", package: "swift-argument-parser"),
      .product(name: "Logging", package: "swift-log"),
    ],
    swiftSettings: defaultSwiftSettings
  ),
  .executableTarget(
    name: "fleetsim",
    dependencies: [
      "Primitives",
      "ToolSupport",
      "CLinuxSystem",
      "FleetEngineMessages",
      "FleetSim",
      "GRPCProtocol",
      "HTTP2Transport",
      "JSONWebToken",
      .product(name: "ArgumentParser", package: "swift-argument-parser"),
      .product(name: "Logging", package: "swift-log"),
      .product(name: "CoreMetrics", package: "swift-metrics"),
      .product(name: "Prometheus", package: "swift-prometheus"),
      .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      .product(name: "UnixSignals", package: "swift-service-lifecycle"),
    ],
    swiftSettings: defaultSwiftSettings
  ),
  .executableTarget(
    name: "tripwatch",
    dependencies: [
      "Primitives",
      "ToolSupport",
      "CLinuxSystem",
      "FleetEngineMessages",
      "FleetSim",
      "JourneySharing",
      "GRPCProtocol",
      "HTTP2Transport",
      "JSONWebToken",
      "NATSClient",
      "TripRelay",
      .product(name: "ArgumentParser", package: "swift-argument-parser"),
      .product(name: "Logging", package: "swift-log"),
      .product(name: "CoreMetrics", package: "swift-metrics"),
      .product(name: "Prometheus", package: "swift-prometheus"),
      .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      .product(name: "UnixSignals", package: "swift-service-lifecycle"),
    ],
    swiftSettings: defaultSwiftSettings
  ),
]

// Linux only: the transport runs on epoll (HTTP2Transport stops the build elsewhere with an #error).
// CI's sanitizer builds (`make test-tsan`, `make test-asan`) compile only what their tests need:
// JOURNEYSHARING_TEST_TARGETS names test targets (comma-separated), and the package is cut down to those,
// the targets they reach and the packages those use; JOURNEYSHARING_SKIP_TEST_TARGETS leaves test targets out.
// Unset, as for every user, the package is whole.
var package = Package(name: "JourneySharing", products: products, dependencies: dependencies, targets: targets)
if let names = Context.environment["JOURNEYSHARING_TEST_TARGETS"] {
  let byName = Dictionary(uniqueKeysWithValues: targets.map { ($0.name, $0) })
  var kept = Set<String>()
  var packages = Set<String>()
  var pending = names.split(separator: ",").map(String.init)
  while let name = pending.popLast() {
    guard let target = byName[name], kept.insert(name).inserted else { continue }
    for dependency in target.dependencies {
      switch dependency {
      case .targetItem(let name, _), .byNameItem(let name, _): pending.append(name)
      case .productItem(_, let package, _, _): packages.formUnion(package.map { [$0] } ?? [])
      @unknown default: break
      }
    }
  }
  package.products = []
  package.targets = targets.filter { kept.contains($0.name) }
  package.dependencies = dependencies.filter { dependency in
    guard case .sourceControl(_, let location, _) = dependency.kind else { return true }
    return packages.contains(String(location.split(separator: "/").last ?? ""))
  }
} else if let names = Context.environment["JOURNEYSHARING_SKIP_TEST_TARGETS"] {
  // `make test`'s debug build leaves out the test targets that it runs only under a sanitizer.
  let skipped = Set(names.split(separator: ",").map(String.init))
  package.targets = targets.filter { $0.type != .test || !skipped.contains($0.name) }
}
