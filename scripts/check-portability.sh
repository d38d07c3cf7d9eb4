#!/usr/bin/env bash
# CI's portability check for the client SDK: scripts/check-portability.py reads the
# manifest and fails when FlowSyncClient (or FlowSyncUI) would need libuv or Glibc on an
# Apple platform. `make test` runs it; run it alone from the package root.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/check-portability.py "$@"
