#!/usr/bin/env bash
# N full `swift test` runs in a row from one build, with a tally of every failure and
# hang: the check that the suite is green every time, not just once.
#
#   scripts/soak-tests.sh N [BUDGET_SECONDS]
#
# Each run goes through scripts/run-tests.sh (every suite has a time limit; a run past
# BUDGET_SECONDS, default 480, is stopped and its unfinished tests are named). Outputs
# are kept in .build/soak/run-K.txt; the tally is printed at the end and written to
# .build/soak/summary.md. Exit status 0 only when every run passed.
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:?usage: scripts/soak-tests.sh N [BUDGET_SECONDS]}
budget=${2:-480}
directory=.build/soak
mkdir -p "$directory"
rm -f "$directory"/run-*.txt

# Every product (the tests run the flowsyncd and flowsync binaries), then the tests.
{ swift build >/dev/null && swift build --build-tests >/dev/null; } || { echo "soak: the build failed" >&2; exit 1; }

# What is being soaked, taken before the runs (the tree may change while they run).
header="soak: $runs runs of swift test ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + local changes'))"
passed=0
failed=0
hung=0
declare -a lines
for k in $(seq 1 "$runs"); do
    out="$directory/run-$k.txt"
    started=$SECONDS
    scripts/run-tests.sh "$out" "$budget" > /dev/null 2>&1
    status=$?
    seconds=$(( SECONDS - started ))
    summary=$(grep -E '^. Test run with [0-9]+ tests? in [0-9]+ suites? (passed|failed)' "$out" | tail -1)
    if (( status == 124 )); then
        hung=$(( hung + 1 ))
        verdict="HUNG"
        detail=$(grep "still running:" "$out" | sed 's/^ *still running: //' | paste -sd ';' -)
    elif (( status == 0 )); then
        passed=$(( passed + 1 ))
        verdict="passed"
        detail=""
    else
        failed=$(( failed + 1 ))
        verdict="FAILED"
        detail=$(grep -E '^. Test .* failed after' "$out" | sed -E 's/^. Test (.*) failed after.*/\1/' | paste -sd ';' -)
    fi
    line="| $k | $verdict | ${seconds} s | ${summary#* } | ${detail} |"
    lines+=("$line")
    echo "soak: run $k/$runs: $verdict in ${seconds} s ${detail:+($detail)}"
done

{
    echo "$header, finished $(date -u +%H:%MZ)"
    echo
    echo "| run | result | wall time | Swift Testing summary | failed or unfinished tests |"
    echo "| --- | --- | --- | --- | --- |"
    printf '%s\n' "${lines[@]}"
    echo
    echo "$passed passed, $failed failed, $hung hung"
} | tee "$directory/summary.md"

(( failed == 0 && hung == 0 ))
