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
# A session of its own (setsid execs in place: a background job is no group leader, so
# $! is the session's ID): the watchdog can stop the runner and everything it started.
setsid swift test --skip-build --experimental-maximum-parallelization-width "$parallelism" "$@" > "$output" 2>&1 < /dev/null &
runner=$!
tail -n +1 -f --pid="$runner" "$output" &
follower=$!

# The tests still running, from Swift Testing's "◇ Test X started." and
# "✔/✘ Test X passed/failed after …" lines (parameterized cases are reported per test).
still_running() {
    python3 - "$output" <<'EOF'
import re, sys, collections
open_tests = collections.Counter()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
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
    cat "$output.watchdog" >> "$output"
    rm -f "$output.watchdog"
    echo "✘ Test run hung: the watchdog stopped it after ${budget} s." >> "$output"
    exit 124
fi

wait "$runner"
status=$?
wait "$follower" 2>/dev/null
exit "$status"
