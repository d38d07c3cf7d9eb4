#!/usr/bin/env bash
# Runs config/stunnel-flowsync.conf for real: flowsyncd (auth required) on loopback,
# stunnel terminating TLS in front of it, a client-side stunnel that verifies the
# server's certificate, and the flowsync CLI writing and reading a list through both.
# Also checks that a plaintext Hello sent to the TLS port does not reach the daemon, and
# that the CLI's own TLS reaches the daemon through stunnel (and refuses it untrusted).
#
#   scripts/tls-proxy-test.sh [BUILD_DIR]    (default .build/debug; needs stunnel4, openssl)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.build/debug}
STUNNEL=$(command -v stunnel4 || command -v stunnel || true)
[ -n "$STUNNEL" ] || { echo "stunnel not installed (apt install stunnel4)"; exit 77; }
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "FAIL: $1"; tail -5 "$WORK"/*.log; exit 1; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
DPORT=$(port); TLSPORT=$(port); CPORT=$(port)
SECRET=tls-test-secret-0123456789abcdef0123

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$WORK/flowsync.key" -out "$WORK/flowsync.crt" 2>/dev/null

cat > "$WORK/flowsyncd.toml" <<TOML
[server]
host = "127.0.0.1"
[storage]
engine = "memory"
[auth]
mode = "required"
[[auth.keys]]
kid = "dev"
alg = "HS256"
secret = "$SECRET"
TOML
"$BIN/flowsyncd" --config "$WORK/flowsyncd.toml" --port "$DPORT" --metrics-port 0 2>"$WORK/flowsyncd.log" &
PIDS+=($!)

# The example config, with this run's paths and ports.
sed -e "s#^accept = .*#accept = 127.0.0.1:$TLSPORT#" -e "s#^connect = .*#connect = 127.0.0.1:$DPORT#" \
    -e "s#^cert = .*#cert = $WORK/flowsync.crt#" -e "s#^key = .*#key = $WORK/flowsync.key#" \
    config/stunnel-flowsync.conf > "$WORK/server.body"
{ echo "output = $WORK/stunnel-server.log"; cat "$WORK/server.body"; } > "$WORK/server.conf"
"$STUNNEL" "$WORK/server.conf" 2>"$WORK/stunnel-server.stderr.log" & PIDS+=($!)

cat > "$WORK/client.conf" <<CONF
foreground = yes
pid =
output = $WORK/stunnel-client.log
[flowsync-client]
client = yes
accept = 127.0.0.1:$CPORT
connect = 127.0.0.1:$TLSPORT
CAfile = $WORK/flowsync.crt
verifyPeer = yes
checkIP = 127.0.0.1
CONF
"$STUNNEL" "$WORK/client.conf" 2>"$WORK/stunnel-client.stderr.log" & PIDS+=($!)

for p in $DPORT $TLSPORT $CPORT; do
    for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.05; done
done

TOKEN=$("$BIN/flowsync" token --key-id dev --secret "$SECRET" --sub tls-test --read 'tls/*' --write 'tls/*' --ttl 300)
"$BIN/flowsync" add-section tls/list --id over-tls --port "$CPORT" --token "$TOKEN" --timeout 5
OUT=$("$BIN/flowsync" get tls/list --port "$CPORT" --token "$TOKEN" --timeout 5)
echo "$OUT"
grep -q "section over-tls" <<<"$OUT" || fail "the list did not round-trip through TLS"

# Plaintext FlowSync straight to the TLS port is not a TLS ClientHello: stunnel drops it.
if "$BIN/flowsync" get tls/list --port "$TLSPORT" --token "$TOKEN" --timeout 2 >/dev/null 2>&1; then
    fail "plaintext reached the daemon through the TLS port"
fi
# The CLI's own TLS (issue #32) to stunnel's port, the certificate checked for
# 127.0.0.1 against the file: a TLS proxy in front of the daemon still serves the
# project's own clients (stunnel negotiates no ALPN; the clients accept that).
OUT=$("$BIN/flowsync" get tls/list --tls --cacert "$WORK/flowsync.crt" --port "$TLSPORT" --token "$TOKEN" --timeout 5)
grep -q "section over-tls" <<<"$OUT" || fail "the CLI's own TLS through stunnel did not round-trip: $OUT"
# ...and refused without the certificate's CA: the token never leaves.
if "$BIN/flowsync" get tls/list --tls --port "$TLSPORT" --token "$TOKEN" --timeout 2 >"$WORK/untrusted.out" 2>&1; then
    fail "the CLI accepted an untrusted certificate"
fi
grep -q "untrusted" "$WORK/untrusted.out" || fail "no TLS refusal reason: $(cat "$WORK/untrusted.out")"

echo "PASS: flowsync CLI → stunnel (client, verifies the certificate) → TLS → stunnel (config/stunnel-flowsync.conf) → flowsyncd; and flowsync --tls → stunnel → flowsyncd"
