#!/usr/bin/env bash
# Regenerates Benchmarks/Sources/SwiftProtobufMessages/*.pb.swift: swift-protobuf's
# code for the same .proto files the hand-written FleetEngineMessages implement,
# so the codec benchmarks compare both on the same bytes.
#
# The generated files are committed; neither the build nor CI runs this script.
# Run it by hand after changing a file under Protos/ or the swift-protobuf version
# in Benchmarks/Package.swift, then commit what it wrote.
#
# Needs:
#   - protoc: by default `python -m grpc_tools.protoc` from the project's .venv
#     (`python3 -m venv .venv && .venv/bin/pip install grpcio-tools`), or set PROTOC.
#   - protoc-gen-swift at the SAME version as the swift-protobuf dependency
#     (generated code checks the runtime's version at compile time). Build it with
#       git clone --branch 1.39.0 https://github.com/apple/swift-protobuf /tmp/spb/src
#       (cd /tmp/spb/src && swift build -c release --product protoc-gen-swift)
#     and point PROTOC_GEN_SWIFT at /tmp/spb/src/.build/release/protoc-gen-swift
#     (the default), or put it on PATH.
#
# Usage: Benchmarks/scripts/generate-swift-protobuf.sh
set -euo pipefail
cd "$(dirname "$0")/../.."   # the project root

PROTOC_GEN_SWIFT=${PROTOC_GEN_SWIFT:-/tmp/spb/src/.build/release/protoc-gen-swift}
if [[ ! -x $PROTOC_GEN_SWIFT ]]; then
  PROTOC_GEN_SWIFT=$(command -v protoc-gen-swift || true)
fi
if [[ -z $PROTOC_GEN_SWIFT || ! -x $PROTOC_GEN_SWIFT ]]; then
  echo "generate-swift-protobuf: protoc-gen-swift not found (set PROTOC_GEN_SWIFT)" >&2
  exit 1
fi
if [[ -n ${PROTOC:-} ]]; then
  read -r -a protoc <<<"$PROTOC"
else
  protoc=(.venv/bin/python -m grpc_tools.protoc)
fi

OUT=Benchmarks/Sources/SwiftProtobufMessages
# Everything Trip, TripUpdate and GetTripRequest need, and no google/protobuf
# well-known types: SwiftProtobuf ships those (Google_Protobuf_Timestamp, ...).
# The files under Protos/ already have their google.api annotations dropped
# (Protos/README.md), so each of them compiles on its own.
PROTOS=(
  google/type/latlng.proto
  google/maps/fleetengine/v1/header.proto
  google/maps/fleetengine/v1/traffic.proto
  google/maps/fleetengine/v1/fleetengine.proto
  google/maps/fleetengine/v1/trips.proto
  google/maps/fleetengine/v1/trip_api.proto
  google/maps/fleetengine/v1/vehicles.proto
  journeysharing/v1/trip_stream.proto
)

rm -f "$OUT"/*.pb.swift
mkdir -p "$OUT"
"${protoc[@]}" \
  -I Protos \
  --plugin=protoc-gen-swift="$PROTOC_GEN_SWIFT" \
  --swift_out="$OUT" \
  --swift_opt=Visibility=Public \
  --swift_opt=FileNaming=DropPath \
  "${PROTOS[@]}"

echo "generate-swift-protobuf: wrote $(ls "$OUT"/*.pb.swift | wc -l) files to $OUT with $("$PROTOC_GEN_SWIFT" --version)"
