#!/usr/bin/env bash
# Builds the ProtoWire libFuzzer target into .build-fuzz/protowire-fuzzer.
#
# SwiftPM cannot build a libFuzzer binary (it would add its own main), so this
# calls swiftc directly: ProtoWire and FleetEngineMessages become modules and
# objects instrumented for coverage and AddressSanitizer, then the fuzzer's
# entry point (which libFuzzer's main calls) links against them.
#
# Usage: scripts/build-fuzzer.sh        (rebuilds only when a source is newer)
#        FORCE=1 scripts/build-fuzzer.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFTC=${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}
OUT=.build-fuzz
BIN=$OUT/protowire-fuzzer
SOURCES=(Sources/ProtoWire/*.swift Sources/FleetEngineMessages/*.swift Tests/Fuzz/ProtoWireFuzzer/main.swift)

if [[ -z "${FORCE:-}" && -x $BIN ]]; then
  newer=$(find "${SOURCES[@]}" "$0" -newer "$BIN" | head -1)
  if [[ -z $newer ]]; then
    echo "build-fuzzer: $BIN is up to date"
    exit 0
  fi
fi

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
)

module() {  # module NAME FILES...: one whole-module object and its .swiftmodule
  local name=$1
  shift
  "$SWIFTC" "${FLAGS[@]}" -parse-as-library -wmo -module-name "$name" \
    -emit-module -emit-module-path "$OUT/modules/$name.swiftmodule" \
    -c -o "$OUT/obj/$name.o" "$@"
}

echo "build-fuzzer: compiling ProtoWire"
module ProtoWire Sources/ProtoWire/*.swift
echo "build-fuzzer: compiling FleetEngineMessages"
module FleetEngineMessages Sources/FleetEngineMessages/*.swift
echo "build-fuzzer: linking $BIN"
# -parse-as-library: the entry point is LLVMFuzzerTestOneInput; main comes from libFuzzer.
"$SWIFTC" "${FLAGS[@]}" -parse-as-library -module-name ProtoWireFuzzer \
  Tests/Fuzz/ProtoWireFuzzer/main.swift "$OUT/obj/ProtoWire.o" "$OUT/obj/FleetEngineMessages.o" \
  -use-ld=lld -o "$BIN"
echo "build-fuzzer: built $BIN"
