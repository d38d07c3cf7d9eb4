#!/usr/bin/env bash
# CI's portability check for the client SDK: scripts/check-portability.py reads the
# manifest and fails when FlowSyncClient (or FlowSyncUI) would need libuv or Glibc on an
# Apple platform, then compiles exactly that graph (without FlowSyncLoop) in a generated
# package under .build/portability-check. `make test` runs it; run it alone from the
# package root. PORTABILITY_COMPILE=0 skips the compile (the manifest check stays).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${PORTABILITY_COMPILE:-1}" = 1 ]; then set -- --compile "$@"; fi
exec python3 scripts/check-portability.py "$@"
