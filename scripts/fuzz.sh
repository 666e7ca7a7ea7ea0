#!/usr/bin/env bash
# Runs the ProtoWire libFuzzer target for SECONDS (default 60).
#
# Usage: scripts/fuzz.sh [SECONDS]
#
# Builds .build-fuzz/protowire-fuzzer when it is missing or stale, copies the
# seed corpus (Tests/Fuzz/corpus/protowire) into a fresh work directory under
# .fuzz/, and fuzzes it. Prints libFuzzer's final stats and exits non-zero on
# any crash, leak or violated round-trip invariant; the input that caused it is
# saved in .fuzz/artifacts/ (reproduce with: .build-fuzz/protowire-fuzzer FILE).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_TO_RUN=${1:-60}
if ! [[ $SECONDS_TO_RUN =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS]" >&2
  exit 2
fi

scripts/build-fuzzer.sh

FUZZER=.build-fuzz/protowire-fuzzer
SEEDS=Tests/Fuzz/corpus/protowire
WORK=.fuzz/protowire-$(date +%Y%m%d-%H%M%S)-$$
ARTIFACTS=.fuzz/artifacts
mkdir -p "$WORK/corpus" "$ARTIFACTS"
# Keep the five most recent work directories (each holds a grown corpus and a log).
ls -dt .fuzz/protowire-*/ 2>/dev/null | tail -n +6 | xargs -r rm -rf
cp "$SEEDS"/* "$WORK/corpus/"
LOG=$WORK/fuzz.log

echo "fuzz: running $FUZZER for ${SECONDS_TO_RUN}s on a copy of $SEEDS in $WORK"
status=0
# ASan's leak checker needs ptrace, which sandboxes often forbid; leaks are not what this target hunts.
# Swift's own crash backtracer would race libFuzzer's and ASan's handlers; let libFuzzer report.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} SWIFT_BACKTRACE=${SWIFT_BACKTRACE:-enable=no} "$FUZZER" \
  -max_total_time="$SECONDS_TO_RUN" \
  -max_len=65536 \
  -timeout=10 \
  -rss_limit_mb=4096 \
  -print_final_stats=1 \
  -artifact_prefix="$ARTIFACTS/" \
  "$WORK/corpus" >"$LOG" 2>&1 || status=$?

# The last progress line (#N DONE ...) and the final stats.
grep -E '^#[0-9]+' "$LOG" | tail -1 || true
grep -E '^stat::' "$LOG" || true

if [[ $status -ne 0 ]] || grep -qE 'ERROR: (libFuzzer|AddressSanitizer)|^artifact_prefix=|Test unit written to' "$LOG"; then
  echo "fuzz: FAILED (exit $status); log: $LOG" >&2
  grep -E 'Fatal error|ERROR:|SUMMARY:|Test unit written to' "$LOG" | head -20 >&2 || true
  exit 1
fi
echo "fuzz: no crashes in ${SECONDS_TO_RUN}s ($(ls "$WORK/corpus" | wc -l) inputs in the corpus now); log: $LOG"
