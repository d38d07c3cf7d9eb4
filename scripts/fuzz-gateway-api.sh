#!/usr/bin/env bash
# Property-based fuzz of flowsync-gateway against its own spec (docs/openapi.json) with
# schemathesis (PyPI), on loopback, bounded: a debug flowsyncd and gateway on port 0,
# N examples per operation (default 40), a fixed seed (default 31). The SSE route is left
# out (a stream never ends; ChangesStreamTests and OpenAPIDriftTests cover it), and so is
# the "positive data accepted" check: schema-valid operations that do not fit the list
# (an unknown section ID) are rightly refused with 422.
#   scripts/fuzz-gateway-api.sh [EXAMPLES] [SEED]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
examples=${1:-40}
seed=${2:-31}
# schemathesis: the one on PATH, else a virtualenv of its own under .build (Debian's
# python3 refuses `pip install` into the system, PEP 668; python3-venv is in make deps).
st=$(command -v st || true)
if [[ -z $st ]]; then
  venv="$root/.build/schemathesis-venv"
  [[ -x $venv/bin/st ]] || { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet schemathesis; }
  st="$venv/bin/st"
fi
work=$(mktemp -d)
cleanup() {
  [[ -n ${gateway:-} ]] && kill "$gateway" 2>/dev/null || true
  [[ -n ${daemon:-} ]] && kill "$daemon" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
"$root/.build/debug/flowsyncd" --host 127.0.0.1 --port 0 --data-dir "$work/data" --no-metrics --log-level warning >"$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do grep -q "listening on" "$work/daemon.log" && break; sleep 0.1; done
daemon_port=$(grep -o "listening on 127.0.0.1:[0-9]*" "$work/daemon.log" | head -1 | cut -d: -f2)
"$root/.build/debug/flowsync-gateway" --listen 127.0.0.1:0 --daemon "127.0.0.1:$daemon_port" --log-level warning \
  --daemon-timeout-ms 3000 >"$work/gateway.log" 2>&1 &
gateway=$!
for _ in $(seq 100); do grep -q "listening on" "$work/gateway.log" && break; sleep 0.1; done
gateway_port=$(grep -o "listening on 127.0.0.1:[0-9]*" "$work/gateway.log" | head -1 | cut -d: -f2)
timeout 600 "$st" run "$root/docs/openapi.json" -u "http://127.0.0.1:$gateway_port" -n "$examples" --seed "$seed" \
  --exclude-operation-id changes --exclude-checks positive_data_acceptance --request-timeout 10 -w 2
