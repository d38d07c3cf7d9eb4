#!/usr/bin/env bash
# Black-box check of the clean-stop rule (issue #15, section 3; docs/STORAGE.md): the
# real flowsyncd is stopped cleanly (SIGTERM, exit 0), its newest log segment damaged,
# and restarted. Every damage must be refused (exit 65, the file named, `--repair`
# suggested) and never served short; `--repair` must then start. As a control, the same
# tail damage after an unclean stop (SIGKILL) follows the torn-tail rule: it starts.
#
#   scripts/clean-stop-damage.sh [TRIALS] [BIN_DIR]
#
# TRIALS (default 90) are spread over the damage kinds: truncated, zeroed tail,
# emptied, deleted; BIN_DIR (default .build/debug) holds flowsyncd and flowsync.
# Each trial writes 5–20 acknowledged rows through the CLI. Everything listens on
# 127.0.0.1 port 0; every wait is bounded. Prints one line per trial and a tally, and
# exits non-zero if any trial was not handled as documented.
set -uo pipefail
cd "$(dirname "$0")/.."

trials=${1:-90}
bin=${2:-.build/debug}
daemon="$bin/flowsyncd"
cli="$bin/flowsync"
for tool in "$daemon" "$cli"; do
    [ -x "$tool" ] || { echo "clean-stop-damage: $tool is not built (swift build)" >&2; exit 2; }
done
export SWIFT_BACKTRACE=enable=no
work=$(mktemp -d /tmp/flowsync-clean-stop.XXXXXX)
trap 'pkill -KILL -f "$work" 2>/dev/null; rm -rf "$work"' EXIT

# Starts the daemon on DATA; sets PID and PORT, or fails after 20 s.
start_daemon() {
    local data=$1 log=$2; shift 2
    "$daemon" --host 127.0.0.1 --port 0 --no-metrics --log-level warning --data-dir "$data" "$@" > "$log" 2>&1 &
    PID=$!
    PORT=""
    for _ in $(seq 1 200); do
        PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$log" 2>/dev/null | head -1)
        [ -n "$PORT" ] && return 0
        kill -0 "$PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# Waits (at most 30 s) for PID to exit; sets STATUS ("timeout" if it had to be killed).
# Not in a $(…) subshell: only this shell can `wait` for its own child.
wait_exit() {
    local pid=$1
    for _ in $(seq 1 300); do
        if ! kill -0 "$pid" 2>/dev/null; then wait "$pid" 2>/dev/null; STATUS=$?; return; fi
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; STATUS="timeout"
}

damage() {
    # damage KIND FILE SEED
    python3 - "$1" "$2" "$3" <<'EOF'
import os, random, sys
kind, path, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
size = os.path.getsize(path)
if kind == "truncated":
    os.truncate(path, size - rng.randint(1, min(200, size - 1)))
elif kind == "zeroed":
    n = rng.randint(1, min(200, size - 1))
    with open(path, "r+b") as f:
        f.seek(size - n); f.write(b"\0" * n)
elif kind == "emptied":
    os.truncate(path, 0)
elif kind == "deleted":
    os.remove(path)
EOF
}

kinds=(truncated zeroed emptied deleted)
ok=0
bad=0
for t in $(seq 1 "$trials"); do
    kind=${kinds[$(( (t - 1) % 4 ))]}
    data="$work/t$t"
    rows=$(( 5 + (t * 7) % 16 ))
    if ! start_daemon "$data" "$work/t$t-1.log"; then echo "trial $t: the daemon did not start"; bad=$((bad + 1)); continue; fi
    "$cli" add-section l --id s --port "$PORT" --timeout 10 > /dev/null
    for r in $(seq 1 "$rows"); do
        "$cli" insert l --section s --id "r$r" --json "$r" --port "$PORT" --timeout 10 > /dev/null || echo "trial $t: insert $r failed"
    done
    kill -TERM "$PID"
    wait_exit "$PID"; stopped=$STATUS
    segment=$(ls "$data"/lists/*/log-*.fsl 2>/dev/null | sort | tail -1)
    damage "$kind" "$segment" "$t"
    start_daemon "$data" "$work/t$t-2.log"
    wait_exit "$PID"; status=$STATUS
    output=$(cat "$work/t$t-2.log")
    if [ "$stopped" = 0 ] && [ "$status" = 65 ] && grep -q "refusing to start" <<<"$output" && grep -qF "$(dirname "$segment")" <<<"$output" && grep -q -- "--repair" <<<"$output"; then
        # The way out: --repair starts and serves what is left, in a new epoch.
        if start_daemon "$data" "$work/t$t-3.log" --repair; then
            kill -TERM "$PID"; wait_exit "$PID"; repaired=$STATUS
            if [ "$repaired" = 0 ]; then
                ok=$((ok + 1)); echo "trial $t ($kind, $rows rows): refused (exit 65, file named), repaired"
                continue
            fi
        fi
        bad=$((bad + 1)); echo "trial $t ($kind): refused, but --repair did not start: $(tail -3 "$work/t$t-3.log")"
    else
        bad=$((bad + 1)); echo "trial $t ($kind, $rows rows): stop exit $stopped, restart exit $status: $(tail -3 <<<"$output")"
    fi
done

# Control: after SIGKILL (an unclean stop), a torn tail is cut and the daemon starts.
controls=0
for c in 1 2 3 4; do
    data="$work/c$c"
    start_daemon "$data" "$work/c$c-1.log" || continue
    "$cli" add-section l --id s --port "$PORT" --timeout 10 > /dev/null
    for r in 1 2 3 4 5 6; do "$cli" insert l --section s --id "r$r" --json "$r" --port "$PORT" --timeout 10 > /dev/null; done
    kill -KILL "$PID"; wait_exit "$PID"
    segment=$(ls "$data"/lists/*/log-*.fsl | sort | tail -1)
    damage truncated "$segment" "$c"
    if start_daemon "$data" "$work/c$c-2.log"; then
        kill -TERM "$PID"; wait_exit "$PID"; [ "$STATUS" = 0 ] && controls=$((controls + 1))
    fi
done
echo "control: $controls/4 unclean stops with a torn tail started under the torn-tail rule"
[ "$controls" = 4 ] || bad=$((bad + 1))

echo "$ok passed, $bad failed"
(( bad == 0 ))
