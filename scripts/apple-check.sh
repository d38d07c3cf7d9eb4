#!/usr/bin/env bash
# make apple-check: the project's Apple-only code, compiled and run on Linux against the
# stand-ins in AppleCheck/ (issue #29; docs/TESTING.md, "Apple's API on Linux").
#
#   1. emits the Darwin stand-in (AppleCheck/StandIns/Darwin/Darwin.swift) as a bare
#      .swiftmodule into AppleCheck/.build/darwin-standin — only the project's targets see
#      it (AppleCheck/Package.swift, `darwinStandIn`);
#   2. builds the AppleCheck package with its tests (every #if canImport(UIKit/Network/
#      SwiftUI/Darwin) branch of the SDK, FlowSyncUI and the examples is compiled there);
#   3. runs its tests; the Network tests start the main package's debug flowsyncd
#      (FLOWSYNCD; built here if missing).
#
# Every step is bounded (APPLE_CHECK_TIMEOUT seconds each, default 900 for the build, 300
# for the tests); the last line is a plain "N passed, N failed". Exit status: non-zero on
# any failure.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# APPLE_CHECK_PACKAGE: another copy of the package (a scratch copy while others' work in
# progress breaks the shared one); default AppleCheck/.
PKG="${APPLE_CHECK_PACKAGE:-$ROOT/AppleCheck}"
SWIFT="${SWIFT:-swift}"
BUILD_TIMEOUT="${APPLE_CHECK_BUILD_TIMEOUT:-900}"
TEST_TIMEOUT="${APPLE_CHECK_TEST_TIMEOUT:-300}"
OUT="$PKG/.build/apple-check-output.txt"
export FLOWSYNCD="${FLOWSYNCD:-$ROOT/.build/debug/flowsyncd}"
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"
start=$(date +%s)

fail() { echo "apple-check: FAILED: $*" >&2; echo "apple-check: 0 passed, 1 failed"; exit 1; }

mkdir -p "$PKG/.build/darwin-standin"
echo "apple-check: emitting the Darwin stand-in module"
timeout --kill-after=10s 120 swiftc -swift-version 6 -parse-as-library -emit-module -module-name Darwin \
    "$PKG/StandIns/Darwin/Darwin.swift" -emit-module-path "$PKG/.build/darwin-standin/Darwin.swiftmodule" \
    || fail "the Darwin stand-in does not compile"

if [ ! -x "$FLOWSYNCD" ]; then
    echo "apple-check: no flowsyncd at $FLOWSYNCD; building it (swift build --product flowsyncd)"
    (cd "$ROOT" && timeout --kill-after=10s "$BUILD_TIMEOUT" "$SWIFT" build --product flowsyncd) || fail "flowsyncd does not build"
fi

echo "apple-check: building AppleCheck with its tests"
timeout --kill-after=10s "$BUILD_TIMEOUT" "$SWIFT" build --package-path "$PKG" --build-tests \
    || fail "the AppleCheck package does not build (a stand-in or an Apple-only branch of the project)"
built=$(date +%s)

echo "apple-check: running the tests (FLOWSYNCD=$FLOWSYNCD)"
timeout --kill-after=10s "$TEST_TIMEOUT" "$SWIFT" test --package-path "$PKG" --skip-build 2>&1 | tee "$OUT"
status=${PIPESTATUS[0]}
end=$(date +%s)

# Swift Testing's summary line: "✔ Test run with N tests in M suites passed after …" or
# "✘ Test run with N tests in M suites failed after … with K issues".
total=$(grep -Eo 'Test run with [0-9]+ tests?' "$OUT" | tail -1 | grep -Eo '[0-9]+' || true)
# One "✘ Test name(…) … failed after" line per failed test (its issues have lines of their own).
failed=$(grep -cP '^✘ Test (?!run with ).* failed after' "$OUT" || true)
total=${total:-0}
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "apple-check: the tests did not finish within ${TEST_TIMEOUT}s" >&2
    failed=$(( failed > 0 ? failed : 1 ))
elif [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1
fi
passed=$(( total - failed > 0 ? total - failed : 0 ))
echo "apple-check: build $((built - start)) s, tests $((end - built)) s"
echo "apple-check: ${passed} passed, ${failed} failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
