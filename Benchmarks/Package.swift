// swift-tools-version: 6.1
//
// JourneySharing's benchmarks: codec and pipeline micro benchmarks (ordo-one/benchmark),
// and `tripload`, the end-to-end load tool that follows trips on FleetSim with this project's
// client and, side by side, with a grpc-swift-2 client. A package of its own so that
// SwiftNIO, grpc-swift and swift-protobuf never become dependencies of the library.
// Run it with `make bench` (quick) or `make bench-full` from the project root.

import PackageDescription

let swiftSettings: [SwiftSetting] = [
  .swiftLanguageMode(.v6),
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
  name: "JourneySharingBenchmarks",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(name: "JourneySharing", path: ".."),
    .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
    .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
    .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    // The pipeline benchmark with metrics recorded into a Prometheus registry, as tripwatch does.
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    // tripload's polling client reads the library's poll round-trip timer through a MetricsFactory of its own.
    .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
  ],
  targets: [
    // swift-protobuf's code for the same .proto files, generated once by
    // scripts/generate-swift-protobuf.sh and committed.
    .target(
      name: "SwiftProtobufMessages",
      dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")],
      swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    // The payloads every benchmark uses: a small streaming update and a full trip.
    .target(
      name: "BenchmarkFixtures",
      dependencies: [
        .product(name: "FleetEngineMessages", package: "JourneySharing")
      ],
      swiftSettings: swiftSettings
    ),
    // A trip follower on grpc-swift-2 (HTTP/2 NIO transport, raw-bytes serializer, swift-protobuf decoding).
    .target(
      name: "GRPCSwiftFollower",
      dependencies: [
        "SwiftProtobufMessages",
        .product(name: "GRPCCore", package: "grpc-swift-2"),
        .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
        .product(name: "SwiftProtobuf", package: "swift-protobuf"),
      ],
      swiftSettings: swiftSettings
    ),
    .executableTarget(
      name: "tripload",
      dependencies: [
        "BenchmarkFixtures",
        "GRPCSwiftFollower",
        "SwiftProtobufMessages",
        .product(name: "JourneySharing", package: "JourneySharing"),
        .product(name: "FleetSim", package: "JourneySharing"),
        .product(name: "FleetEngineMessages", package: "JourneySharing"),
        .product(name: "HTTP2Transport", package: "JourneySharing"),
        .product(name: "SwiftProtobuf", package: "swift-protobuf"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
      ],
      swiftSettings: swiftSettings
    ),
    .executableTarget(
      name: "CodecBenchmarks",
      dependencies: [
        "BenchmarkFixtures",
        "SwiftProtobufMessages",
        .product(name: "Benchmark", package: "benchmark"),
        .product(name: "FleetEngineMessages", package: "JourneySharing"),
        .product(name: "SwiftProtobuf", package: "swift-protobuf"),
      ],
      path: "Benchmarks/CodecBenchmarks",
      swiftSettings: swiftSettings,
      plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    ),
    .executableTarget(
      name: "PipelineBenchmarks",
      dependencies: [
        "BenchmarkFixtures",
        .product(name: "Benchmark", package: "benchmark"),
        .product(name: "FleetEngineMessages", package: "JourneySharing"),
        .product(name: "JourneySharing", package: "JourneySharing"),
        .product(name: "Prometheus", package: "swift-prometheus"),
      ],
      path: "Benchmarks/PipelineBenchmarks",
      swiftSettings: swiftSettings,
      plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    ),
  ]
)
