#!/usr/bin/env bash
# Fuzz the protocol decoder with libFuzzer + AddressSanitizer for a bounded time.
#
#   scripts/fuzz.sh [SECONDS]      default 60; CI runs a short bound (see the Makefile)
#
# FUZZ_PACKAGE_PATH (optional) builds from another checkout of the package.
#
# The seed corpus is the golden vectors (Tests/FlowSyncProtocolTests/Vectors/frames.json),
# one file per frame, each prefixed with a split byte of 0 ("feed all at once"). The
# working corpus lives in .build-fuzz/corpus and grows across runs; crashes land in
# fuzz-artifacts/ (git-ignored). Exit status is non-zero when libFuzzer finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_BOUND="${1:-60}"
SCRATCH=.build-fuzz
export SWIFT_BACKTRACE=enable=no   # an orphaned backtrace helper can hang the run

# `--sanitize` alone links libFuzzer but leaves the Swift modules without coverage
# counters (the fuzzer then sees one edge and learns nothing): pass the flags to swiftc too.
swift build -c release --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING \
    --scratch-path "$SCRATCH" ${FUZZ_PACKAGE_PATH:+--package-path "$FUZZ_PACKAGE_PATH"} --product FuzzDecoder
BIN="$SCRATCH/release/FuzzDecoder"

SEEDS="$SCRATCH/seeds"
CORPUS="$SCRATCH/corpus"
rm -rf "$SEEDS"
mkdir -p "$SEEDS" "$CORPUS" fuzz-artifacts
python3 - "$SEEDS" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
vectors = json.load(open("Tests/FlowSyncProtocolTests/Vectors/frames.json"))["vectors"]
for v in vectors:
    frame = bytes.fromhex(v["frame"])
    (out / v["name"]).write_bytes(b"\x00" + frame)      # all at once
    (out / (v["name"] + "-split")).write_bytes(b"\x01" + frame)  # in 7-byte chunks
    (out / (v["name"] + "-preauth")).write_bytes(b"\x08" + frame)  # pre-auth limits (issue #10)
PY

echo "fuzzing FuzzDecoder for ${SECONDS_BOUND}s ($(ls "$SEEDS" | wc -l) seeds)"
"$BIN" -max_total_time="$SECONDS_BOUND" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix=fuzz-artifacts/ "$CORPUS" "$SEEDS"
