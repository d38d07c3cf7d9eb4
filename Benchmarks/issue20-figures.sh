#!/usr/bin/env bash
# Issue #20's table in one run, each figure beside its baseline, on this machine:
#
#   Benchmarks/issue20-figures.sh [BASE_FLOWSYNCD]
#
# 1. deliveries per daemon CPU-second against the raw libuv write rate of the same run
#    (`flowsync-server-bench --compare-daemons BASE,NEW`, when BASE_FLOWSYNCD is given:
#    an older release flowsyncd to compare with);
# 2. Benchmarks/compare-redis.sh: 1,000 subscribers, `fanout` closed loop (memory and
#    durable), Redis 7 pub/sub with 100-byte messages and with messages of a batch's rows;
# 3. half load: a closed-loop `fanout` run (storage memory) gives the saturation rate,
#    then three open-loop runs at half of it (p50/p90/p99 write → delivery), and with
#    BASE_FLOWSYNCD three more of that daemon, interleaved;
# 4. daemon RSS per idle subscribed connection at 5,000 and 19,960 connections
#    (`flowsync-server-bench --idle 5000,14960`).
# Nothing else should run meanwhile: every figure shares the machine's cores with its
# load generator. About 8 minutes (12 with BASE_FLOWSYNCD).
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build}
BASE=${1:-}
WORK=$(mktemp -d /tmp/issue20-figures.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

swift build -c release --scratch-path "$SCRATCH" --product flowsyncd >/dev/null
swift build -c release --scratch-path "$SCRATCH" --product flowsync-load >/dev/null
swift build -c release --scratch-path "$SCRATCH" --product flowsync-server-bench >/dev/null
DAEMON="$SCRATCH/release/flowsyncd"
LOAD="$SCRATCH/release/flowsync-load"
BENCH="$SCRATCH/release/flowsync-server-bench"

stamp() { echo "-- $(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)"; }
echo "== issue #20 figures: $(nproc) cores, $(git rev-parse --short HEAD)${BASE:+, base $BASE}"

if [ -n "$BASE" ]; then
    echo; echo "== 1. deliveries per daemon CPU-second, base vs this tree, raw libuv baseline"; stamp
    "$BENCH" --compare-daemons "$BASE,$DAEMON" --rounds 3
fi

echo; echo "== 2. fan-out against Redis"; stamp
SCRATCH="$SCRATCH" Benchmarks/compare-redis.sh 1000 10

fanout() {   # fanout DAEMON LABEL ARGS... -> one summary line; the JSON in $WORK/LABEL.json
    local daemon=$1 label=$2; shift 2
    "$LOAD" --spawn --daemon "$daemon" --scenario fanout --storage memory --duration 10 --warmup 2 \
        --quiet --json "$@" >"$WORK/$label.json"
    python3 - "$WORK/$label.json" "$label" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); m, d, l = r["mutations"], r["deliveries"], r["latency"]["writeToDelivery"]
print(f"{sys.argv[2]:<14} {m['committedPerSecond']:>7.0f} mut/s  {d['batchesPerSecond']:>5.0f} batches/s  {d['framesPerSecond']/1000:>6.1f} k deliveries/s  "
      f"p50 {l['p50']/1000:5.1f}  p90 {l['p90']/1000:5.1f}  p99 {l['p99']/1000:5.1f}  p99.9 {l['p999']/1000:5.1f} ms  "
      f"daemon {r['daemon']['process']['cpuPercent']:.0f} %  tool {r['loadTool']['cpuPercent']:.0f} %  divergences {r['checks']['divergences']}")
PY
}
echo; echo "== 3. half load, 1,000 subscribers (storage memory)"; stamp
fanout "$DAEMON" saturation
RATE=$(python3 -c "import json; print(max(1, round(json.load(open('$WORK/saturation.json'))['mutations']['committedPerSecond'] / 2)))")
echo "half of it: --rate $RATE --max-in-flight 256"
for round in 1 2 3; do
    fanout "$DAEMON" "half-$round" --rate "$RATE" --max-in-flight 256
    if [ -n "$BASE" ]; then fanout "$BASE" "base-half-$round" --rate "$RATE" --max-in-flight 256; fi
done

echo; echo "== 4. daemon RSS per idle subscribed connection"; stamp
"$BENCH" --daemon "$DAEMON" --idle 5000,14960
stamp
