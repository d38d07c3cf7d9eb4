#!/usr/bin/env bash
# The test suites under AddressSanitizer: the daemon's unretained fan-out lists
# (`Unmanaged` connections in `toFlush` and in each list's subscribers) and the loop's
# handles rest on lifetime rules; a use after free there is a report here, not a rare
# crash in CI.
#
#   scripts/asan-tests.sh [swift test arguments…]      (default: every suite but ClusterLogTests)
#
# Builds into .build-asan (its own scratch path: the normal build is untouched), then
# runs the tests with ASAN_OPTIONS=detect_leaks=0 (leaks are not what this run looks
# for: tests keep process-wide state alive on purpose). ClusterLogTests needs the
# PostgreSQL `make test` starts; name it to include it. Exit status: `swift test`'s, or
# 1 when any AddressSanitizer report appeared in the output.
set -uo pipefail
cd "$(dirname "$0")/.."
SCRATCH=.build-asan
LOG=$(mktemp /tmp/asan-tests.XXXXXX)
trap 'rm -f "$LOG"' EXIT
swift build --build-tests --sanitize=address --scratch-path "$SCRATCH" || exit $?
if [ $# -eq 0 ]; then set -- --skip ClusterLogTests; fi
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} timeout 1800 swift test --skip-build --sanitize=address \
    --scratch-path "$SCRATCH" --experimental-maximum-parallelization-width 4 "$@" 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
if grep -q "ERROR: AddressSanitizer" "$LOG"; then
    echo "asan-tests: AddressSanitizer reported an error (above)" >&2
    exit 1
fi
exit "$status"
