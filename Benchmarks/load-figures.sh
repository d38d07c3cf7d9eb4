#!/usr/bin/env bash
# Runs every load-test figure of docs/BENCHMARKS.md ("Load tests") in one go and prints
# each command with its output, ready to paste.
#
#   Benchmarks/load-figures.sh [--no-redis]
#
# Builds flowsyncd and flowsync-load in release mode (scratch path $SCRATCH, default
# .build-load), then runs: fan-out at saturation and open loop at half that rate (daemon
# storage in memory, then durable), the fan-out's in-flight sweep (memory), writers, many lists, resume storm, slow consumers,
# connections, and (unless --no-redis) Benchmarks/compare-redis.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build-load}
LOAD="$SCRATCH/release/flowsync-load"
DAEMON="$SCRATCH/release/flowsyncd"
WORK=$(mktemp -d /tmp/load-figures.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

swift build -c release --scratch-path "$SCRATCH" --product flowsyncd >/dev/null
swift build -c release --scratch-path "$SCRATCH" --product flowsync-load >/dev/null

run() {   # run NAME ARGS... : prints the command and the summary table
    local name=$1; shift
    echo
    echo "### $name"
    echo
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo '```'
    echo "\$ flowsync-load --spawn $*"
    "$LOAD" --spawn --daemon "$DAEMON" --quiet --json-file "$WORK/$name.json" "$@" || echo "(exit code $?)"
    echo '```'
}
field() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); v=r
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$WORK/$1.json" "$2"; }

echo "## Load-test figures, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
# Fan-out with the daemon's storage in memory (delivery-bound), then with its durable
# default (file store, fsync always: one fdatasync per loop turn before the batch leaves).
for storage in memory file; do
    run "fanout-$storage" --scenario fanout --storage "$storage" --duration 10
    SATURATED=$(field "fanout-$storage" mutations.committedPerSecond)
    HALF=$(python3 -c "print(round($SATURATED / 2))")
    run "fanout-$storage-half" --scenario fanout --storage "$storage" --rate "$HALF" --max-in-flight 256 --duration 10
done
for window in 1 4 64; do
    run "fanout-window-$window" --scenario fanout --storage memory --max-in-flight "$window" --duration 5
done
run writers --scenario writers --duration 10
run many-lists --scenario many-lists --duration 10
run resume-storm --scenario resume-storm
run slow-consumers --scenario slow-consumers
run connections --scenario connections --lists 1 --subscribers 19960 --full-replicas 10

if [ "${1:-}" != "--no-redis" ]; then
    echo
    echo "### Redis comparison"
    echo '```'
    echo '$ Benchmarks/compare-redis.sh 1000 10'
    SCRATCH="$SCRATCH" Benchmarks/compare-redis.sh 1000 10
    echo '```'
fi
