#!/usr/bin/env bash
# Runs the Swift test suites under a watchdog, so a hang is a named failure within
# minutes instead of a CI run that dies at its 90-minute limit.
#
#   scripts/run-tests.sh OUTPUT [BUDGET_SECONDS] [swift test arguments…]
#
# - Every @Suite must declare a `.timeLimit` (checked first): Swift Testing then fails a
#   test that runs too long and cancels it.
# - A test blocked where cancellation cannot reach it (a synchronous wait) is what the
#   watchdog is for: when `swift test` runs longer than BUDGET_SECONDS (default 480), it
#   prints every test that had started and not finished, stops the whole process group
#   (the test runner and the daemons it started), and exits 124.
# - At most TEST_PARALLELISM tests (default 8) run at once, so a test's time limit
#   measures the test rather than its wait for a thread.
# - The tests are built beforehand (`swift build --build-tests`); this only runs them.
#
# Exit status: that of `swift test`, or 124 after the watchdog fired.
set -uo pipefail
cd "$(dirname "$0")/.."

output=${1:?usage: scripts/run-tests.sh OUTPUT [BUDGET_SECONDS] [swift test arguments…]}
budget=${2:-480}
# How many tests run at once (Swift Testing's --experimental-maximum-parallelization-width).
# Without a cap every test starts at once, and on 2 cooperative threads a trivial test can
# wait a minute for its turn: its time limit then measures the queue, not the test.
parallelism=${TEST_PARALLELISM:-8}
shift $(( $# >= 2 ? 2 : 1 ))

# An attribute may span lines (swift format breaks long ones): read each @Suite up to its
# closing parenthesis.
missing=$(python3 - <<'PY'
import pathlib, re
for path in sorted(pathlib.Path("Tests").rglob("*.swift")):
    text = path.read_text(encoding="utf-8")
    for match in re.finditer(r"@Suite\b", text):
        i, depth, args = match.end(), 0, ""
        if i < len(text) and text[i] == "(":
            for j in range(i, len(text)):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                if depth == 0:
                    args = text[i:j + 1]
                    break
        if "timeLimit" not in args:
            print(f"{path}:{text.count(chr(10), 0, match.start()) + 1}: {text[match.start():].splitlines()[0]}")
PY
)
if [ -n "$missing" ]; then
    echo "run-tests: every @Suite needs a .timeLimit trait:" >&2
    echo "$missing" >&2
    exit 1
fi

export SWIFT_BACKTRACE=enable=no
mkdir -p "$(dirname "$output")"
: > "$output"
# The suites that drive daemons, PostgreSQL and a cluster's clock through a kill, a
# restart or a lease (a regex of Swift Testing IDs; empty: one process for everything)
# run in a test process of their own, beside the rest. Why: on 2 cores Swift's
# cooperative pool has 2 threads, and the CPU-bound property tests of the rest hold both
# for seconds at a time — measured with a probe test sleeping 20 ms in a loop: woken up
# to 3.2 s late in the run's first 35 s. A cluster test that means to restart a node
# 0.5 s after killing it then restarted it 7 s later, past the 5 s lease (a soak at
# 771d36b), and tested something else. In a process of its own, its threads are
# scheduled by the kernel beside the others' instead of queueing behind them.
isolated=${TEST_ISOLATED_SUITES-'FlowSyncPostgresTests\.ClusterLogTests|FlowSyncStoreTests\.(CrashTests|OnDemandCrashTests)'}
# Run directly: a second `swift test` would wait for the first one's lock on .build.
binary=.build/debug/FlowSyncPackageTests.xctest
parts=("$output")
# A session of its own (setsid execs in place: a background job is no group leader, so
# $! is the session's ID): the watchdog can stop the runner and everything it started.
if (( $# == 0 )) && [ -n "$isolated" ] && [ -x "$binary" ]; then
    parts=("$output.rest" "$output.isolated")
    : > "$output.rest"
    : > "$output.isolated"
    rm -f "$output.status"
    export binary parallelism isolated output
    setsid bash -c '
        run() { "$binary" --testing-library swift-testing --experimental-maximum-parallelization-width "$parallelism" "$@"; }
        run --skip "$isolated" > "$output.rest" 2>&1 < /dev/null &
        rest=$!
        run --filter "$isolated" > "$output.isolated" 2>&1 < /dev/null &
        isolated_runner=$!
        wait "$rest"; a=$?
        wait "$isolated_runner"; b=$?
        echo "$a $b" > "$output.status"
        (( a == 0 && b == 0 ))
    ' &
else
    setsid swift test --skip-build --experimental-maximum-parallelization-width "$parallelism" "$@" > "$output" 2>&1 < /dev/null &
fi
runner=$!
tail -q -n +1 -f --pid="$runner" "${parts[@]}" &
follower=$!

# The tests still running, from Swift Testing's "◇ Test X started." and
# "✔/✘ Test X passed/failed after …" lines (parameterized cases are reported per test).
still_running() {
    python3 - "${parts[@]}" <<'EOF'
import re, sys, collections
open_tests = collections.Counter()
lines = [l for path in sys.argv[1:] for l in open(path, encoding="utf-8", errors="replace")]
for line in lines:
    line = line.rstrip("\n")
    m = re.match(r"^\S+ Test (?!case )(.*) started\.$", line)
    if m:
        open_tests[m.group(1)] += 1
        continue
    m = re.match(r"^\S+ Test (?!run with )(.*?) (?:passed|failed) after [0-9.]+ seconds", line) or re.match(r"^\S+ Test (.*?) skipped", line)
    if m and open_tests[m.group(1)] > 0:
        open_tests[m.group(1)] -= 1
for name, count in sorted(open_tests.items()):
    if count > 0:
        print(f"  still running: {name}")
EOF
}

# Two processes: their outputs one after the other in OUTPUT, then one summary line in
# Swift Testing's words (the tests and suites of both, their issues, the wall time), so
# every reader of OUTPUT (scripts/test-summary.sh, scripts/soak-tests.sh) reads one run.
# A process that ended without its summary (a crash) makes the run failed.
combine() {
    (( ${#parts[@]} > 1 )) || return 0
    cat "${parts[@]}" >> "$output"
    python3 - "$((SECONDS - start))" "${parts[@]}" <<'EOF' >> "$output"
import re, sys
seconds, parts = sys.argv[1], sys.argv[2:]
tests = suites = issues = 0
failed = False
for path in parts:
    summary = None
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"^\S+ Test run with (\d+) tests? in (\d+) suites? (passed|failed) after [0-9.]+ seconds(?: with (\d+) issues?)?", line)
        if m:
            summary = m
    if summary is None:
        print(f"run-tests: {path} ended without a Swift Testing summary (the test process crashed or was stopped)")
        failed = True
        continue
    tests += int(summary.group(1))
    suites += int(summary.group(2))
    issues += int(summary.group(4) or 0)
    failed = failed or summary.group(3) == "failed"
tail = f" with {issues} issue{'s' if issues != 1 else ''}" if failed else ""
print(f"{'✘' if failed else '✔'} Test run with {tests} tests in {suites} suites {'failed' if failed else 'passed'} after {seconds} seconds{tail}. (run-tests: {len(parts)} test processes)")
EOF
    rm -f "${parts[@]}"
    tail -n 1 "$output"
}

start=$SECONDS
fired=0
while kill -0 "$runner" 2>/dev/null; do
    if (( SECONDS - start >= budget )); then
        fired=1
        break
    fi
    sleep 1
done

if (( fired )); then
    sleep 1   # let tail print what is there
    {
        echo
        echo "run-tests: WATCHDOG: swift test still running after ${budget} s; tests that had not finished:"
        still_running
        echo "run-tests: stopping the test runner and its children"
    } | tee -a "$output.watchdog" >&2
    # By session, not process group: `swift test` puts the test binary in a group of
    # its own, and the daemons the tests started are in theirs.
    pkill -TERM -s "$runner" 2>/dev/null
    for _ in $(seq 1 50); do pgrep -s "$runner" >/dev/null || break; sleep 0.1; done
    pkill -KILL -s "$runner" 2>/dev/null
    wait "$runner" 2>/dev/null
    kill "$follower" 2>/dev/null
    combine
    cat "$output.watchdog" >> "$output"
    rm -f "$output.watchdog"
    echo "✘ Test run hung: the watchdog stopped it after ${budget} s." >> "$output"
    exit 124
fi

wait "$runner"
status=$?
wait "$follower" 2>/dev/null
combine
exit "$status"
