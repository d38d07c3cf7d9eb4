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
# 5. runs Redis again with messages that carry the same rows as a FlowSync batch: a
#    payload of ROWS × 100 bytes, where ROWS is the row changes per delivered frame of the
#    in-memory FlowSync run (ROWS_PER_MESSAGE=N to fix it, e.g. 10: one mutation's rows)
#    -> row changes delivered/s = messages delivered/s × ROWS. A FlowSync batch carries
#    many rows in one frame, a 100-byte Redis message one: the first ratio compares a
#    row with a message, the second rows with rows (issue #20);
# 6. prints the figures and both ratios (target: FlowSync ≥ Redis, ratio ≥ 1.0).
# No two of them run at the same time; each gets the same two cores.
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
REDIS_VERSION=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')

redis() {   # redis LABEL PAYLOAD_BYTES -> messages delivered/s in $WORK/LABEL.rate (a fresh server each time)
    local label=$1 payload=$2
    redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --daemonize no \
        --maxclients 20000 --client-output-buffer-limit 'pubsub 0 0 0' --loglevel warning \
        --dir "$WORK" >"$WORK/redis.log" 2>&1 &
    REDIS_PID=$!
    for _ in $(seq 100); do
        if redis-cli -p "$PORT" ping >/dev/null 2>&1; then break; fi
        sleep 0.05
    done
    redis-cli -p "$PORT" ping >/dev/null
    "$WORK/redis-fanout" 127.0.0.1 "$PORT" "$SUBSCRIBERS" "$payload" "$WARMUP" "$SECONDS_MEASURED" "$REDIS_PID" | tee "$WORK/$label.out"
    awk '/^delivered_per_second/ {print $2}' "$WORK/$label.out" >"$WORK/$label.rate"
    kill "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true; REDIS_PID=""
}

echo "== machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== Redis $REDIS_VERSION pub/sub: $SUBSCRIBERS subscribers, 100-byte messages, pipelined publisher, ${SECONDS_MEASURED} s"
redis redis-100 100

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
# Row changes per delivered frame: the rows a Redis message must carry to match a batch.
open(sys.argv[2] + ".rows", "w").write(str(max(1, round(d["rowChangesPerSecond"] / d["framesPerSecond"]))) if d["framesPerSecond"] else "1")
PY
}
# Like the Redis server above (no persistence), then with the daemon's durable default.
flowsync in-memory --storage memory
flowsync durable

# Redis messages that carry the same rows as a FlowSync batch of the in-memory run.
ROWS=${ROWS_PER_MESSAGE:-$(cat "$WORK/in-memory.rate.rows")}
WHY=$([ -n "${ROWS_PER_MESSAGE:-}" ] && echo "ROWS_PER_MESSAGE" || echo "the rows of one FlowSync frame in the in-memory run")
echo
echo "== Redis $REDIS_VERSION pub/sub: $SUBSCRIBERS subscribers, messages of $ROWS rows ($((ROWS * 100)) bytes: $WHY), ${SECONDS_MEASURED} s"
redis redis-rows $((ROWS * 100))

echo
python3 - "$(cat "$WORK/redis-100.rate")" "$(cat "$WORK/redis-rows.rate")" "$ROWS" "$(cat "$WORK/in-memory.rate")" "$(cat "$WORK/durable.rate")" <<'PY'
import sys
redis, redis_messages, rows, memory, durable = (float(x) for x in sys.argv[1:6])
redis_rows = redis_messages * rows
def line(label, value, rest=""):
    print(f"{label:<62}{value:>14,.0f}   {rest}".rstrip())
line("Redis pub/sub messages delivered/s (100 B, one row each)", redis)
line(f"Redis pub/sub row changes delivered/s ({rows:.0f} rows a message)", redis_rows, f"({redis_messages:,.0f} messages/s)")
line("FlowSync row changes delivered/s (storage memory)", memory, f"ratio {memory / redis:.2f} to messages, {memory / redis_rows:.2f} to rows")
line("FlowSync row changes delivered/s (file, fsync always)", durable, f"ratio {durable / redis:.2f} to messages, {durable / redis_rows:.2f} to rows")
print(f"target: ratio >= 1.0 with the same durability as Redis (memory), rows to rows: {'met' if memory >= redis_rows else 'NOT met'}")
PY
