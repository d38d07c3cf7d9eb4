#!/usr/bin/env bash
# A local FlowSync cluster on 127.0.0.1 (issue #18, "Real components"; docs/CLUSTER.md,
# "Running a local cluster"):
#   - a PostgreSQL 15 primary with synchronous_commit = on and
#     synchronous_standby_names = 'FIRST 1 (standby1)', so a commit waits for the standby;
#   - its synchronous standby, made with pg_basebackup -R (streaming replication);
#   - 3 flowsyncd nodes, n1…n3, in cluster mode on the primary.
#
#   scripts/cluster.sh up             start what is described above (again after `down`)
#   scripts/cluster.sh status         each component, its pid and port; exit 0 only if all run
#   scripts/cluster.sh down [--purge] stop the nodes, the standby, the primary; --purge
#                                     then removes the state directory
#   scripts/cluster.sh failover       stop the primary at once (pg_ctl stop -m immediate),
#                                     promote the standby, wait until every node reconnected
#                                     to it; the old primary is stale from then on
#   scripts/cluster.sh smoke          up, a row written and read back through n1 with the
#                                     CLI, the row found on the standby, a failover, a second
#                                     row through n2 read back through n3, down --purge
#
# Environment: FLOWSYNC_CLUSTER_DIR (state directory, default .build/cluster),
# FLOWSYNCD and FLOWSYNC (the daemon and the CLI; default .build/debug/…, built with
# `swift build --product …` when missing), PG_BIN (default /usr/lib/postgresql/15/bin).
#
# PostgreSQL runs as `postgres` when this script runs as root (PostgreSQL refuses root),
# as the invoking user otherwise; the nodes run as the invoking user. Every wait is
# bounded (WAIT_SECONDS, 30); a failed `up` stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
# The script's stdout and stderr, kept for the EXIT trap; closed for every child.
exec 3>&1 4>&2
repo=$(pwd)

state=${FLOWSYNC_CLUSTER_DIR:-.build/cluster}
mkdir -p "$state"
state=$(cd "$state" && pwd)
pg_bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
wait_seconds=${WAIT_SECONDS:-30}
nodes=(n1 n2 n3)
primary="$state/primary"
standby="$state/standby"
standby_name=standby1
superuser=flowsync

say() { echo "cluster: $*"; }
die() { echo "cluster: error: $*" >&2; exit 1; }

# PostgreSQL's tools run as a non-root user.
if [ "$(id -u)" = 0 ]; then
    pg_user=postgres
    id postgres > /dev/null 2>&1 || die "no 'postgres' user (apt-get install postgresql, or run as a non-root user)"
    as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@" 3>&- 4>&-; }
else
    pg_user=$(id -un)
    as_pg() { "$@" 3>&- 4>&-; }
fi

# A port on 127.0.0.1 that is free now (PostgreSQL needs a fixed one).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pg_port() { cat "$1/port" 2>/dev/null || true; }
psql_at() { # psql_at PORT SQL
    psql -X -q -A -t -v ON_ERROR_STOP=1 "host=127.0.0.1 port=$1 dbname=postgres user=$superuser connect_timeout=5" -c "$2"
}
pg_pid() { # the postmaster's pid when it runs, else nothing
    local dir=$1 pid
    # The file may vanish between two reads while the server stops.
    pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null && grep -q postgres "/proc/$pid/comm" 2>/dev/null; then echo "$pid"; fi
}
node_pid() { # the node's pid when it runs, else nothing
    local pid
    pid=$(cat "$state/$1/pid" 2>/dev/null || true)
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$state/$1/flowsyncd.toml"; then echo "$pid"; fi
}
sync_state() { # the standby's sync_state on the primary, or nothing
    local port
    port=$(pg_port "$primary")
    [ -n "$port" ] && [ -n "$(pg_pid "$primary")" ] || return 0
    psql_at "$port" "SELECT sync_state FROM pg_stat_replication WHERE application_name = '$standby_name'" 2>/dev/null || true
}

# Runs a program found in $1 (env), else $2, else builds product $3.
binary() {
    local given=$1 default=$2 product=$3
    if [ -n "$given" ]; then
        [ -x "$given" ] || die "$given is not executable"
        echo "$given"; return
    fi
    if [ ! -x "$default" ]; then
        say "building $product (swift build --product $product)" >&2
        swift build --product "$product" >&2 || die "swift build --product $product failed"
    fi
    echo "$repo/$default"
}

# ---- stopping ----------------------------------------------------------------

stop_node() {
    local name=$1 pid
    pid=$(node_pid "$name")
    if [ -z "$pid" ]; then rm -f "$state/$name/pid"; return 0; fi
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 $((wait_seconds * 10))); do
        kill -0 "$pid" 2>/dev/null || { say "$name stopped (pid $pid, SIGTERM)"; rm -f "$state/$name/pid"; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    say "$name did not stop within ${wait_seconds}s of SIGTERM: killed (pid $pid, SIGKILL)"
    rm -f "$state/$name/pid"
}

stop_pg() {
    local label=$1 dir=$2
    [ -n "$(pg_pid "$dir")" ] || return 0
    if as_pg "$pg_bin/pg_ctl" -D "$dir/data" -m fast -w -t "$wait_seconds" stop > /dev/null; then
        say "$label stopped (pg_ctl stop -m fast)"
    else
        echo "cluster: error: $label did not stop within ${wait_seconds}s (pg_ctl stop -m fast); see $dir/postgres.log" >&2
        return 1
    fi
}

stop_all() {
    local status=0 name
    for name in "${nodes[@]}"; do stop_node "$name"; done
    stop_pg standby "$standby" || status=1
    stop_pg primary "$primary" || status=1
    return "$status"
}

# ---- starting ----------------------------------------------------------------

start_pg() { # start_pg LABEL DIR
    local label=$1 dir=$2
    if ! as_pg "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t "$wait_seconds" start > /dev/null; then
        echo "cluster: error: the $label did not start within ${wait_seconds}s; the end of $dir/postgres.log:" >&2
        tail -5 "$dir/postgres.log" >&2 || true
        return 1
    fi
    say "$label running (pid $(pg_pid "$dir"), port $(pg_port "$dir"))"
}

# The settings the script owns, appended to postgresql.conf (later lines win).
pg_settings() { # pg_settings DIR PORT
    cat >> "$1/data/postgresql.conf" <<EOF

# ---- scripts/cluster.sh ----
listen_addresses = '127.0.0.1'
port = $2
unix_socket_directories = '$1'
EOF
}

# A server's directory, emptied of what an interrupted earlier attempt left, owned by the
# user PostgreSQL runs as.
fresh_pg_directory() {
    rm -rf "$1/data"
    mkdir -p "$1"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$1"; fi
}

init_primary() {
    local port
    port=$(free_port)
    fresh_pg_directory "$primary"
    as_pg "$pg_bin/initdb" -D "$primary/data" -A trust -U "$superuser" -E UTF8 > "$primary/initdb.log" 2>&1 \
        || { tail -5 "$primary/initdb.log" >&2; die "initdb failed (log: $primary/initdb.log)"; }
    pg_settings "$primary" "$port"
    cat >> "$primary/data/postgresql.conf" <<EOF
# A commit returns once the standby has flushed its WAL (synchronous replication).
synchronous_commit = on
synchronous_standby_names = 'FIRST 1 ($standby_name)'
wal_level = replica
max_wal_senders = 5
EOF
    echo "$port" > "$primary/port"
    touch "$primary/initialized"
}

init_standby() {
    local port
    port=$(free_port)
    fresh_pg_directory "$standby"
    # -R writes standby.signal and primary_conninfo; -X stream copies the WAL meanwhile.
    as_pg "$pg_bin/pg_basebackup" -h 127.0.0.1 -p "$(pg_port "$primary")" -U "$superuser" \
        -D "$standby/data" -R -X stream > "$standby/basebackup.log" 2>&1 \
        || { tail -5 "$standby/basebackup.log" >&2; die "pg_basebackup failed (log: $standby/basebackup.log)"; }
    pg_settings "$standby" "$port"
    cat >> "$standby/data/postgresql.conf" <<EOF
# The walreceiver's application_name: the name the primary's synchronous_standby_names waits for.
cluster_name = '$standby_name'
hot_standby = on
synchronous_standby_names = ''
EOF
    echo "$port" > "$standby/port"
    touch "$standby/initialized"
}

wait_for_sync() {
    local s=""
    for _ in $(seq 1 $((wait_seconds * 10))); do
        s=$(sync_state)
        [ "$s" = sync ] && { say "standby replication: streaming, sync_state = sync"; return 0; }
        sleep 0.1
    done
    echo "cluster: error: the standby is not synchronous after ${wait_seconds}s (sync_state: '${s:-no row}')" >&2
    return 1
}

start_node() { # start_node NAME DAEMON
    local name=$1 daemon=$2 dir="$state/$1" port="" pid
    mkdir -p "$dir/data"
    # The cluster credential of the peer links (docs/CLUSTER.md, "Peer links"): one
    # random secret for every node of this cluster, readable by its owner only.
    if [ ! -s "$state/peer.secret" ]; then
        (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$state/peer.secret")
    fi
    cat > "$dir/flowsyncd.toml" <<EOF
# Written by scripts/cluster.sh: node $name of the local cluster.
[server]
host = "127.0.0.1"
port = 0                  # the OS chooses; the script reads "listening on" from the log
data_dir = "$dir/data"    # not used in cluster mode, but kept per node

[metrics]
enabled = false

[cluster]
# Both servers: a reconnection takes whichever accepts writes (the primary, or the
# standby once promoted by \`scripts/cluster.sh failover\`).
postgres = "host=127.0.0.1,127.0.0.1 port=$(pg_port "$primary"),$(pg_port "$standby") dbname=postgres user=$superuser connect_timeout=5 target_session_attrs=read-write"
node = "$name"
lease_ms = 5000
# Owners push committed batches to followers, and writes go straight to owners, over
# links on 127.0.0.1 (port 0: advertised in the node's lease).
peer_secret_file = "$state/peer.secret"
EOF
    # Created here: the background job opens it only after the fork, maybe after the
    # first read below.
    : > "$dir/flowsyncd.log"
    # setsid: the node outlives this script and its terminal.
    setsid "$daemon" --config "$dir/flowsyncd.toml" > "$dir/flowsyncd.log" 2>&1 < /dev/null 3>&- 4>&- &
    pid=$!
    echo "$pid" > "$dir/pid"
    for _ in $(seq 1 $((wait_seconds * 10))); do
        port=$(sed -n '/listening on 127\.0\.0\.1:[0-9]*$/{s/.*listening on 127\.0\.0\.1://p;q}' "$dir/flowsyncd.log")
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        if kill -0 "$pid" 2>/dev/null; then
            echo "cluster: error: $name did not listen within ${wait_seconds}s; the end of $dir/flowsyncd.log:" >&2
        else
            echo "cluster: error: $name exited before listening; the end of $dir/flowsyncd.log:" >&2
        fi
        tail -5 "$dir/flowsyncd.log" >&2 || true
        return 1
    fi
    echo "$port" > "$dir/port"
    # Listening comes first; ready means connected to PostgreSQL with its lease taken.
    for _ in $(seq 1 $((wait_seconds * 10))); do
        grep -q 'cluster: connected' "$dir/flowsyncd.log" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q 'cluster: connected' "$dir/flowsyncd.log"; then
        echo "cluster: error: $name did not connect to PostgreSQL within ${wait_seconds}s; the end of $dir/flowsyncd.log:" >&2
        tail -5 "$dir/flowsyncd.log" >&2 || true
        return 1
    fi
    say "$name running (pid $pid, port $port, connected to the primary)"
}

up() {
    local running=0 total=0 name daemon
    for dir in "$primary" "$standby"; do total=$((total + 1)); [ -n "$(pg_pid "$dir")" ] && running=$((running + 1)); done
    for name in "${nodes[@]}"; do total=$((total + 1)); [ -n "$(node_pid "$name")" ] && running=$((running + 1)); done
    [ ! -f "$state/failed-over" ] || die "this cluster failed over: the old primary is stale (scripts/cluster.sh down --purge, then up)"
    if [ "$running" = "$total" ]; then say "already up ($state)"; status; return; fi
    [ "$running" = 0 ] || die "partly up ($running of $total components run): scripts/cluster.sh down, then up"

    [ -x "$pg_bin/postgres" ] || die "no PostgreSQL 15 in $pg_bin (make deps installs postgresql)"
    command -v psql > /dev/null || die "no psql on PATH (make deps installs postgresql)"
    daemon=$(binary "${FLOWSYNCD:-}" .build/debug/flowsyncd flowsyncd)
    if [ "$(id -u)" = 0 ] && ! setpriv --reuid=postgres --regid=postgres --init-groups test -x "$state"; then
        die "the postgres user cannot reach $state: set FLOWSYNC_CLUSTER_DIR to a directory it can reach"
    fi

    # From here on, a failure (any exit before the end) stops whatever was started.
    cleanup_on_exit="up failed"
    [ -f "$primary/initialized" ] || init_primary
    start_pg primary "$primary"
    [ -f "$standby/initialized" ] || init_standby
    start_pg standby "$standby"
    wait_for_sync
    for name in "${nodes[@]}"; do start_node "$name" "$daemon"; done
    cleanup_on_exit=""
    say "up: state in $state (PostgreSQL as $pg_user)"
}

# ---- status --------------------------------------------------------------------

status() {
    local ok=0 pid port name s
    if [ -f "$state/failed-over" ]; then
        echo "failed over: the standby is the primary; the old primary is stale"
        pid=$(pg_pid "$standby"); port=$(pg_port "$standby")
        if [ -n "$pid" ]; then printf '%-8s running  pid %-8s port %s (promoted)\n' standby "$pid" "$port"; else printf '%-8s stopped\n' standby; ok=1; fi
        for name in "${nodes[@]}"; do
            pid=$(node_pid "$name"); port=$(cat "$state/$name/port" 2>/dev/null || echo -)
            if [ -n "$pid" ]; then printf '%-8s running  pid %-8s port %s\n' "$name" "$pid" "$port"; else printf '%-8s stopped\n' "$name"; ok=1; fi
        done
        return "$ok"
    fi
    for pair in "primary:$primary" "standby:$standby"; do
        name=${pair%%:*}; dir=${pair#*:}
        pid=$(pg_pid "$dir"); port=$(pg_port "$dir")
        if [ -n "$pid" ]; then
            printf '%-8s running  pid %-8s port %s\n' "$name" "$pid" "$port"
        else
            printf '%-8s stopped  (last port %s)\n' "$name" "${port:--}"; ok=1
        fi
    done
    s=$(sync_state)
    if [ "$s" = sync ]; then
        echo "replication: standby $standby_name streaming, sync_state = sync"
    else
        echo "replication: standby $standby_name not synchronous (sync_state: '${s:-no row}')"; ok=1
    fi
    for name in "${nodes[@]}"; do
        pid=$(node_pid "$name"); port=$(cat "$state/$name/port" 2>/dev/null || echo -)
        if [ -n "$pid" ]; then
            printf '%-8s running  pid %-8s port %s\n' "$name" "$pid" "$port"
        else
            printf '%-8s stopped  (last port %s)\n' "$name" "$port"; ok=1
        fi
    done
    return "$ok"
}

# ---- failover ------------------------------------------------------------------

failover() {
    local name log before
    status > /dev/null || die "failover needs the whole cluster running (scripts/cluster.sh status)"
    declare -A seen
    for name in "${nodes[@]}"; do seen[$name]=$(grep -c 'cluster: reconnected' "$state/$name/flowsyncd.log" || true); done
    as_pg "$pg_bin/pg_ctl" -D "$primary/data" -m immediate -w -t "$wait_seconds" stop > /dev/null
    say "primary stopped (pg_ctl stop -m immediate)"
    touch "$state/failed-over"
    as_pg "$pg_bin/pg_ctl" -D "$standby/data" -w -t "$wait_seconds" promote > /dev/null
    say "standby promoted (pg_ctl promote)"
    for name in "${nodes[@]}"; do
        log="$state/$name/flowsyncd.log"; before=${seen[$name]}
        for _ in $(seq 1 $((wait_seconds * 10))); do
            [ "$(grep -c 'cluster: reconnected' "$log" || true)" -gt "$before" ] && break
            kill -0 "$(node_pid "$name")" 2>/dev/null || die "$name exited during the failover (see $log)"
            sleep 0.1
        done
        [ "$(grep -c 'cluster: reconnected' "$log" || true)" -gt "$before" ] || die "$name did not reconnect within ${wait_seconds}s (see $log)"
        say "$name reconnected to the promoted standby"
    done
}

# ---- down ----------------------------------------------------------------------

down() {
    local purge=${1:-}
    [ -z "$purge" ] || [ "$purge" = --purge ] || die "usage: scripts/cluster.sh down [--purge]"
    stop_all
    if [ "$purge" = --purge ]; then rm -rf "$state"; say "removed $state"; fi
    say "down"
}

# ---- smoke ---------------------------------------------------------------------

smoke() {
    local cli list port count="" body
    [ -z "$(node_pid n1)$(pg_pid "$primary")" ] || die "smoke starts its own cluster: scripts/cluster.sh down first"
    cli=$(binary "${FLOWSYNC:-}" .build/debug/flowsync flowsync)
    list="smoke-$(date +%s)-$$"
    up
    cleanup_on_exit="smoke failed"
    port=$(cat "$state/n1/port")
    "$cli" insert "$list" --section s --id row1 --json '{"text":"written through n1"}' --port "$port" --timeout 10
    body=$("$cli" get "$list" --json --port "$port" --timeout 10)
    grep -q 'written through n1' <<<"$body" || { echo "cluster: smoke: the row is not read back through n1: $body" >&2; false; }
    say "smoke: row1 read back through n1"
    # synchronous_commit = on: the Ack came after the standby flushed the WAL; replaying
    # it (visibility on the standby) may lag a little, so this wait is bounded too.
    for _ in $(seq 1 $((wait_seconds * 10))); do
        count=$(psql_at "$(pg_port "$standby")" "SELECT count(*) FROM fs_batches WHERE list = '$list'" 2>/dev/null || true)
        [ "${count:-0}" -ge 1 ] && break
        sleep 0.1
    done
    [ "${count:-0}" -ge 1 ] || { echo "cluster: smoke: no batch of $list on the standby after ${wait_seconds}s" >&2; false; }
    say "smoke: the standby holds $count batch(es) of $list (SELECT count(*) FROM fs_batches)"
    failover
    "$cli" insert "$list" --section s --id row2 --json '{"text":"written through n2 after the failover"}' --port "$(cat "$state/n2/port")" --timeout 10
    body=$("$cli" get "$list" --json --port "$(cat "$state/n3/port")" --timeout 10)
    grep -q 'written through n1' <<<"$body" && grep -q 'after the failover' <<<"$body" \
        || { echo "cluster: smoke: both rows are not read back through n3 after the failover: $body" >&2; false; }
    say "smoke: after the failover, row2 written through n2 and both rows read back through n3"
    cleanup_on_exit=""
    # The old primary is stale after the failover: its state goes.
    down --purge
    say "smoke passed"
}

# Set while `up` or `smoke` runs: any exit then stops what was started.
cleanup_on_exit=""
on_exit() {
    if [ -n "$cleanup_on_exit" ]; then
        # To the script's own stdout and stderr (3 and 4): a signal may arrive while a
        # command's output is redirected to a log file.
        {
            echo "cluster: $cleanup_on_exit: stopping what was started" >&2
            stop_all || true
        } >&3 2>&4
    fi
}
trap on_exit EXIT
# A signal ends the script through the EXIT trap, so an interrupted `up` cleans up too.
trap 'exit 130' INT
trap 'exit 143' TERM

case "${1:-}" in
    up) up ;;
    down) down "${2:-}" ;;
    status) status ;;
    smoke) smoke ;;
    failover) failover ;;
    *) echo "usage: scripts/cluster.sh up|down [--purge]|status|failover|smoke" >&2; exit 64 ;;
esac
