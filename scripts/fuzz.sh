#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS (default 60), one after the other.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#        targets: protowire grpc-framing trip-merge (default: all)
#
# Builds the fuzzers when missing or stale (scripts/build-fuzzer.sh), then for
# each target copies its seed corpus (Tests/Fuzz/corpus/TARGET) into a fresh
# work directory under .fuzz/ and fuzzes it. Prints libFuzzer's final progress
# line (#N DONE: N inputs executed) and a summary line per target, and exits
# non-zero if any target crashed, leaked memory past ASan or broke one of its
# invariants; the input that did it is saved in .fuzz/artifacts/TARGET/
# (reproduce with: .build-fuzz/TARGET-fuzzer FILE).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_TO_RUN=${1:-60}
if ! [[ $SECONDS_TO_RUN =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
  exit 2
fi
shift || true

# target → the largest input libFuzzer makes. The framing target feeds every input three ways,
# one of them a byte at a time, so it stays small; a few kilobytes hold many framed messages.
declare -A MAX_LEN=([protowire]=65536 [grpc-framing]=8192 [trip-merge]=16384)
ALL_TARGETS=(protowire grpc-framing trip-merge)
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=("${ALL_TARGETS[@]}")
for target in "${TARGETS[@]}"; do
  if [[ -z ${MAX_LEN[$target]:-} ]]; then
    echo "fuzz: unknown target $target (known: ${ALL_TARGETS[*]})" >&2
    exit 2
  fi
done

scripts/build-fuzzer.sh

failed=()
for target in "${TARGETS[@]}"; do
  FUZZER=.build-fuzz/$target-fuzzer
  SEEDS=Tests/Fuzz/corpus/$target
  WORK=.fuzz/$target-$(date +%Y%m%d-%H%M%S)-$$
  ARTIFACTS=.fuzz/artifacts/$target
  mkdir -p "$WORK/corpus" "$ARTIFACTS"
  # Keep the five most recent work directories per target (each holds a grown corpus and a log).
  ls -dt .fuzz/"$target"-*/ 2>/dev/null | tail -n +6 | xargs -r rm -rf
  cp "$SEEDS"/* "$WORK/corpus/"
  LOG=$WORK/fuzz.log

  echo "fuzz: $target: running $FUZZER for ${SECONDS_TO_RUN}s on a copy of $SEEDS in $WORK"
  status=0
  # ASan's leak checker stops the process with ptrace, which sandboxes often forbid; leaks are not
  # what these targets hunt. Swift's own crash backtracer would race libFuzzer's and ASan's
  # handlers; let libFuzzer report.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} SWIFT_BACKTRACE=${SWIFT_BACKTRACE:-enable=no} "$FUZZER" \
    -max_total_time="$SECONDS_TO_RUN" \
    -max_len="${MAX_LEN[$target]}" \
    -timeout=10 \
    -rss_limit_mb=4096 \
    -print_final_stats=1 \
    -artifact_prefix="$ARTIFACTS/" \
    "$WORK/corpus" >"$LOG" 2>&1 || status=$?

  # The last progress line: "#N DONE cov: … corp: …" (N inputs executed), or the last before a crash.
  last=$(grep -E '^#[0-9]+' "$LOG" | tail -1 || true)
  if [[ -n $last ]]; then echo "$last"; fi
  runs=$(grep -E '^stat::number_of_executed_units:' "$LOG" | awk '{print $2}' || true)
  if [[ $status -ne 0 ]] || grep -qE 'ERROR: (libFuzzer|AddressSanitizer)|Test unit written to' "$LOG"; then
    echo "fuzz: $target: FAILED (exit $status) after ${runs:-?} runs; log: $LOG" >&2
    grep -E 'Fatal error|ERROR:|SUMMARY:|Test unit written to' "$LOG" | head -20 >&2 || true
    failed+=("$target")
  else
    echo "fuzz: $target: OK, ${runs:-?} runs in ${SECONDS_TO_RUN}s, no crashes ($(ls "$WORK/corpus" | wc -l) inputs in the corpus now); log: $LOG"
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#TARGETS[@]} targets, ${SECONDS_TO_RUN}s each, no crashes"
