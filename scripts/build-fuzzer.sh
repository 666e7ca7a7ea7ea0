#!/usr/bin/env bash
# Builds the libFuzzer targets into .build-fuzz/:
#
#   protowire-fuzzer     Tests/Fuzz/ProtoWireFuzzer     ProtoWire decoding of every FleetEngineMessages type
#   grpc-framing-fuzzer  Tests/Fuzz/GRPCFramingFuzzer   GRPCMessageDeframer and GRPCClientCall's receive path,
#                                                       compressed messages (gzip, deflate through zlib) included
#   trip-merge-fuzzer    Tests/Fuzz/TripMergeFuzzer     TripUpdates merged into JourneySharing's TripState
#
# SwiftPM cannot build a libFuzzer binary (it would add its own main), so this
# calls swiftc directly: the libraries a target needs become modules and objects
# instrumented for coverage and AddressSanitizer, then the fuzzer's entry point
# (which libFuzzer's main calls) links against them. JourneySharing imports the
# transport (C libraries), so the trip-merge target gets a module of that name
# made of the merge's pure files only (see JOURNEYSHARING_MERGE below).
#
# Usage: scripts/build-fuzzer.sh            (rebuilds only what is older than its sources)
#        FORCE=1 scripts/build-fuzzer.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFTC=${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}
OUT=.build-fuzz

# The part of JourneySharing the trip-merge fuzzer needs: merge, derive, diff; no I/O.
JOURNEYSHARING_MERGE=(
  Sources/JourneySharing/TripState.swift
  Sources/JourneySharing/TripLimits.swift
  Sources/JourneySharing/TripSnapshot.swift
  Sources/JourneySharing/TripPropertyFields.swift
)

mkdir -p "$OUT/modules" "$OUT/obj" "$OUT/module-cache"
# The package's settings (Package.swift's defaultSwiftSettings), plus fuzzing instrumentation.
FLAGS=(
  -swift-version 6
  -package-name journeysharing
  -enable-upcoming-feature ExistentialAny
  -enable-upcoming-feature MemberImportVisibility
  -sanitize=fuzzer,address
  -O -g
  -module-cache-path "$OUT/module-cache"
  -I "$OUT/modules"
  -I Sources/CZlib
)

stale() {  # stale OUTPUT INPUTS...: true when OUTPUT is missing or older than an input or this script
  local output=$1
  shift
  [[ -n "${FORCE:-}" || ! -e $output ]] && return 0
  [[ -n $(find "$@" "$0" -newer "$output" | head -1) ]]
}

module() {  # module NAME "IMPORTED MODULES" [EXTRA_FLAGS...] -- FILES...: one whole-module object and its .swiftmodule
  local name=$1 imports=$2
  shift 2
  local extra=()
  while [[ $1 != -- ]]; do
    extra+=("$1")
    shift
  done
  shift
  # Rebuilt when its sources change or a module it imports was rebuilt.
  local inputs=("$@")
  for imported in $imports; do inputs+=("$OUT/obj/$imported.o"); done
  if ! stale "$OUT/obj/$name.o" "${inputs[@]}"; then
    return
  fi
  echo "build-fuzzer: compiling $name"
  "$SWIFTC" "${FLAGS[@]}" "${extra[@]}" -parse-as-library -wmo -module-name "$name" \
    -emit-module -emit-module-path "$OUT/modules/$name.swiftmodule" \
    -c -o "$OUT/obj/$name.o" "$@"
  touch "$OUT/obj/$name.o"  # newer than its .swiftmodule, whichever the compiler wrote last
}

fuzzer() {  # fuzzer BINARY SOURCE MODULES...: links a fuzzer's entry point with the modules' objects
  local binary=$OUT/$1 source=$2
  shift 2
  local objects=()
  for name in "$@"; do objects+=("$OUT/obj/$name.o"); done
  if ! stale "$binary" "$source" "${objects[@]}"; then
    echo "build-fuzzer: $binary is up to date"
    return
  fi
  echo "build-fuzzer: linking $binary"
  # -parse-as-library: the entry point is LLVMFuzzerTestOneInput; main comes from libFuzzer.
  "$SWIFTC" "${FLAGS[@]}" -parse-as-library -module-name "$(basename "$(dirname "$source")")" \
    "$source" "${objects[@]}" -use-ld=lld -lz -o "$binary"
}

# Modules in dependency order.
module ProtoWire "" -- Sources/ProtoWire/*.swift
module FleetEngineMessages "ProtoWire" -- Sources/FleetEngineMessages/*.swift
module GRPCCompression "" -- Sources/GRPCCompression/*.swift
module GRPCProtocol "GRPCCompression" -- Sources/GRPCProtocol/*.swift
# -enable-testing: the fuzzer reads the snapshot's internal state through `@testable import`.
module JourneySharing "ProtoWire FleetEngineMessages" -enable-testing -- "${JOURNEYSHARING_MERGE[@]}"

fuzzer protowire-fuzzer Tests/Fuzz/ProtoWireFuzzer/main.swift ProtoWire FleetEngineMessages
fuzzer grpc-framing-fuzzer Tests/Fuzz/GRPCFramingFuzzer/main.swift GRPCCompression GRPCProtocol
fuzzer trip-merge-fuzzer Tests/Fuzz/TripMergeFuzzer/main.swift ProtoWire FleetEngineMessages JourneySharing
