#!/usr/bin/env bash
# FlowSync fan-out vs Redis pub/sub fan-out, on this machine, in one run.
#
#   Benchmarks/compare-redis.sh [SUBSCRIBERS] [SECONDS]      (defaults: 1000, 10)
#
# 1. installs redis-server with apt if missing (sudo only when not root);
# 2. starts it on 127.0.0.1 on a free port, no persistence (--save '' --appendonly no),
#    no pub/sub output-buffer limit (a lagging subscriber must not be cut off mid-run);
# 3. runs Benchmarks/RedisFanout/redis-fanout.c (built here with gcc -O2): SUBSCRIBERS
#    subscribers on one channel, read with epoll and only counted, and one publisher
#    pipelining PUBLISH commands of a 100-byte payload -> messages delivered/s;
# 4. stops redis, then runs `flowsync-load --spawn --scenario fanout` (SUBSCRIBERS
#    subscribers, one closed-loop writer with 16 mutations in flight, 10 updates of
#    100-byte rows per mutation) -> row changes delivered/s, twice: with the daemon's
#    storage in memory (like this Redis, which persists nothing) and with its durable
#    default (file store, fsync always);
# 5. prints the figures and the ratios (target: FlowSync ≥ Redis, ratio ≥ 1.0).
# The two never run at the same time; each gets the same two cores.
# Exit code: 0 when the comparison ran (whatever the ratio), non-zero on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

SUBSCRIBERS=${1:-1000}
SECONDS_MEASURED=${2:-10}
WARMUP=2
SCRATCH=${SCRATCH:-.build-load}
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
WORK=$(mktemp -d /tmp/compare-redis.XXXXXX)
REDIS_PID=""

cleanup() {
    if [ -n "$REDIS_PID" ] && kill -0 "$REDIS_PID" 2>/dev/null; then
        kill "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

if ! command -v redis-server >/dev/null 2>&1; then
    echo "installing redis-server (apt)…" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends redis-server >/dev/null
fi
command -v gcc >/dev/null 2>&1 || { echo "error: gcc is needed for the Redis client" >&2; exit 1; }

echo "building flowsync-load and flowsyncd (release, $SCRATCH)…" >&2
swift build -c release --scratch-path "$SCRATCH" --product flowsyncd >/dev/null
swift build -c release --scratch-path "$SCRATCH" --product flowsync-load >/dev/null
gcc -O2 -Wall -o "$WORK/redis-fanout" Benchmarks/RedisFanout/redis-fanout.c

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --daemonize no \
    --maxclients 20000 --client-output-buffer-limit 'pubsub 0 0 0' --loglevel warning \
    --dir "$WORK" >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 100); do
    if redis-cli -p "$PORT" ping >/dev/null 2>&1; then break; fi
    sleep 0.05
done
redis-cli -p "$PORT" ping >/dev/null
REDIS_VERSION=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')

echo "== machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== Redis $REDIS_VERSION pub/sub: $SUBSCRIBERS subscribers, 100-byte messages, pipelined publisher, ${SECONDS_MEASURED} s"
"$WORK/redis-fanout" 127.0.0.1 "$PORT" "$SUBSCRIBERS" 100 "$WARMUP" "$SECONDS_MEASURED" "$REDIS_PID" | tee "$WORK/redis.out"
REDIS_RATE=$(awk '/^delivered_per_second/ {print $2}' "$WORK/redis.out")
kill "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true; REDIS_PID=""

flowsync() {   # flowsync LABEL EXTRA_ARGS... -> row changes delivered/s in $WORK/LABEL.rate
    local label=$1; shift
    echo
    echo "== FlowSync ($label): flowsync-load --spawn --scenario fanout --subscribers $SUBSCRIBERS --duration $SECONDS_MEASURED $*"
    "$SCRATCH/release/flowsync-load" --spawn --daemon "$SCRATCH/release/flowsyncd" --scenario fanout \
        --subscribers "$SUBSCRIBERS" --duration "$SECONDS_MEASURED" --warmup "$WARMUP" --quiet --json "$@" >"$WORK/$label.json" || {
        echo "flowsync-load failed:" >&2; cat "$WORK/$label.json" >&2; exit 1; }
    python3 - "$WORK/$label.json" "$WORK/$label.rate" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d, l = r["deliveries"], r["latency"]
print(f"batches/s {d['batchesPerSecond']:.0f}, frame deliveries/s {d['framesPerSecond']:.0f}, row changes delivered/s {d['rowChangesPerSecond']:.0f}")
print(f"write->delivery p50 {l['writeToDelivery']['p50']/1000:.1f} ms, p99 {l['writeToDelivery']['p99']/1000:.1f} ms; divergences {r['checks']['divergences']}; daemon CPU {r['daemon']['process']['cpuPercent']:.0f}%, load tool CPU {r['loadTool']['cpuPercent']:.0f}%")
open(sys.argv[2], "w").write(str(round(d["rowChangesPerSecond"])))
PY
}
# Like the Redis server above (no persistence), then with the daemon's durable default.
flowsync in-memory --storage memory
flowsync durable

echo
python3 - "$REDIS_RATE" "$(cat "$WORK/in-memory.rate")" "$(cat "$WORK/durable.rate")" <<'PY'
import sys
redis, memory, durable = (float(x) for x in sys.argv[1:4])
print(f"Redis pub/sub messages delivered/s                    {redis:>14,.0f}")
print(f"FlowSync row changes delivered/s (storage memory)     {memory:>14,.0f}   ratio {memory / redis:.2f}")
print(f"FlowSync row changes delivered/s (file, fsync always) {durable:>14,.0f}   ratio {durable / redis:.2f}")
print(f"target: ratio >= 1.0 with the same durability as Redis (memory): {'met' if memory >= redis else 'NOT met'}")
PY
