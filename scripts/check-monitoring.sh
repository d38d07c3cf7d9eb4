#!/usr/bin/env bash
# Checks the monitoring config with Prometheus's own tool (issue #20; run by `make test`):
#
#   scripts/check-monitoring.sh
#
# 1. `promtool check rules config/prometheus/flowsyncd-rules.yml`: the alerting rules parse;
# 2. `promtool test rules config/prometheus/flowsyncd-rules.test.yml`: each alert fires on
#    the series it is about and stays quiet on a healthy daemon;
# 3. every query of config/grafana/flowsyncd.json, with Grafana's variables filled in, is
#    written as a recording rule to a scratch file and checked the same way, so a typo in
#    a panel's PromQL fails here rather than on a dashboard.
# That the metrics named there exist is checked against a real daemon by
# MonitoringConfigTests (swift test). promtool comes from Debian's `prometheus` package
# (`make deps` installs it). Exit status: non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v promtool >/dev/null 2>&1 || { echo "check-monitoring: promtool not found (apt-get install prometheus)" >&2; exit 1; }

promtool check rules config/prometheus/flowsyncd-rules.yml
(cd config/prometheus && promtool test rules flowsyncd-rules.test.yml)

scratch=$(mktemp -d /tmp/check-monitoring.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
python3 - config/grafana/flowsyncd.json "$scratch/dashboard-rules.yml" <<'PY'
import json, sys
dashboard = json.load(open(sys.argv[1]))
queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
queries += [a["expr"] for a in dashboard.get("annotations", {}).get("list", []) if "expr" in a]
if not queries:
    sys.exit("check-monitoring: no queries in the dashboard")
variables = {"$__rate_interval": "1m", "$instance": ".*"}
with open(sys.argv[2], "w") as out:
    out.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, query in enumerate(queries):
        for name, value in variables.items():
            query = query.replace(name, value)
        if "$" in query:
            sys.exit(f"check-monitoring: a variable this check does not fill in: {query}")
        out.write(f"      - record: dashboard:query{i}\n        expr: {json.dumps(query)}\n")
print(f"dashboard: {len(queries)} queries")
PY
promtool check rules "$scratch/dashboard-rules.yml"
