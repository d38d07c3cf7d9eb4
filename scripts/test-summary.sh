#!/usr/bin/env bash
# Prints one plain "N passed, N failed" line from `swift test` output (Swift Testing's
# "Test run with N tests in M suites passed/failed … with K issues"), so CI's closing
# line counts the tests that ran rather than XCTest's "Executed 0 tests".
set -euo pipefail
line=$(grep -E '^. Test run with [0-9]+ tests? in [0-9]+ suites? (passed|failed)' "$1" | tail -1 || true)
if [ -z "$line" ]; then
    echo "test-summary: no Swift Testing summary in $1" >&2
    exit 1
fi
total=$(sed -E 's/.*Test run with ([0-9]+) tests?.*/\1/' <<<"$line")
if grep -q ' passed after' <<<"$line"; then
    echo "$total passed, 0 failed"
else
    failed=$(grep -cE '^. Test .* failed after' "$1" || true)
    echo "$((total - failed)) passed, $failed failed"
    exit 1
fi
