#!/usr/bin/env bash
# The crash test of docs/STORAGE.md: a release flowsyncd under writers and subscribers
# is killed with SIGKILL at random moments and restarted, N times; after each restart
# every acknowledged mutation must be present, every subscriber must resume from its
# last seen (epoch, version) with the same digest and get a diff of exactly what it
# missed, and an in-flight retry must be answered from the idempotency table.
#
#   scripts/crash-test.sh [--cycles N] [--seed S] [--scratch-path DIR]
#
# CI runs a 20-cycle version inside `swift test` (Tests/FlowSyncStoreTests/CrashTests).
set -euo pipefail
cd "$(dirname "$0")/.."

cycles=500
seed=1
scratch=.build
while [ $# -gt 0 ]; do
    case "$1" in
        --cycles) cycles="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --scratch-path) scratch="$2"; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

swift build -c release --scratch-path "$scratch" --product flowsyncd >&2
swift build -c release --scratch-path "$scratch" --product flowsync-server-bench >&2
# An orphaned swift-backtrace helper can keep pipes open after a SIGKILL.
export SWIFT_BACKTRACE=enable=no
exec "$scratch/release/flowsync-server-bench" --crash-test --cycles "$cycles" --seed "$seed" --daemon "$scratch/release/flowsyncd"
