#!/usr/bin/env bash
# Builds the libFuzzer targets into .build-fuzz/:
#
#   protowire-fuzzer     Tests/Fuzz/ProtoWireFuzzer     ProtoWire decoding of every FleetEngineMessages type
#   grpc-framing-fuzzer  Tests/Fuzz/GRPCFramingFuzzer   GRPCMessageDeframer and GRPCClientCall's receive path,
#                                                       compressed messages (gzip, deflate through zlib) included
#   trip-merge-fuzzer    Tests/Fuzz/TripMergeFuzzer     TripUpdates merged into JourneySharing's TripState
#
# SwiftPM cannot link a libFuzzer binary (its executables bring their own main), so this
# calls swiftc directly, on the SwiftPM targets themselves: each library a fuzzer needs is
# its target's whole source folder, compiled as that module with coverage and
# AddressSanitizer instrumentation (no hand-kept list of files), and the fuzzer's entry
# point (which libFuzzer's main calls) links against them. The trip-merge fuzzer uses the
# JourneySharingCore target: the per-update step, without the transport.
#
# Usage: scripts/build-fuzzer.sh            (rebuilds only what is older than its sources)
#        FORCE=1 scripts/build-fuzzer.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFTC=${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}
OUT=.build-fuzz

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
  # zlib is linked only into fuzzers that take the module wrapping it.
  local libraries=()
  [[ " $* " == *" GRPCCompression "* ]] && libraries+=(-lz)
  # -parse-as-library: the entry point is LLVMFuzzerTestOneInput; main comes from libFuzzer.
  "$SWIFTC" "${FLAGS[@]}" -parse-as-library -module-name "$(basename "$(dirname "$source")")" \
    "$source" "${objects[@]}" -use-ld=lld "${libraries[@]}" -o "$binary"
}

# Modules in dependency order: each is a SwiftPM target's folder.
target() {  # target NAME "IMPORTED MODULES" [EXTRA_FLAGS...]: the module of Sources/NAME
  local name=$1 imports=$2
  shift 2
  module "$name" "$imports" "$@" -- Sources/"$name"/*.swift
}
target Primitives ""
target ProtoWire "Primitives"
target FleetEngineMessages "Primitives ProtoWire"
target GRPCValues "Primitives"
target GRPCCompression ""
target GRPCProtocol "Primitives GRPCValues GRPCCompression"
# -enable-testing: the fuzzer reads the snapshot's internal state through `@testable import`.
target JourneySharingCore "Primitives ProtoWire FleetEngineMessages GRPCValues" -enable-testing

fuzzer protowire-fuzzer Tests/Fuzz/ProtoWireFuzzer/main.swift Primitives ProtoWire FleetEngineMessages
fuzzer grpc-framing-fuzzer Tests/Fuzz/GRPCFramingFuzzer/main.swift Primitives GRPCValues GRPCCompression GRPCProtocol
fuzzer trip-merge-fuzzer Tests/Fuzz/TripMergeFuzzer/main.swift \
  Primitives ProtoWire FleetEngineMessages GRPCValues JourneySharingCore
