# FlowSync — the two commands of the README, plus helpers.
#
#   make run    install what is missing, build in release mode, start the daemon
#   make test   install what is missing, run the whole test suite
#
# Dependencies come from Debian's packages; `sudo` is used only when not root.

SHELL        := /bin/bash
SWIFT        ?= swift
APT_PACKAGES := libuv1-dev zlib1g-dev pkg-config python3 python3-venv systemd stunnel4 openssl libssl-dev liburing-dev postgresql libpq-dev
# For `make test` (issue #20): promtool (Debian ships it in `prometheus`, with the server
# and its unit; under systemd apt also enables and starts that server on :9090) checks
# config/prometheus; headless `chromium` renders flowsync-load's HTML report in a test.
# `nodejs` runs clients/js under Node (JSClientTests; skipped, saying so, when its Node has no
# global WebSocket: Debian 12 ships Node 18; the Chromium test runs the module either way).
TEST_APT_PACKAGES := prometheus chromium nodejs
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CONFIG       ?= config/flowsyncd.toml
# `make install` destinations (DESTDIR for packaging and dry runs).
PREFIX       ?= /usr/local
SYSCONFDIR   ?= /etc
UNITDIR      ?= /etc/systemd/system
INSTALL      ?= install
FUZZ_SECONDS ?= 60
FUZZ_API_EXAMPLES ?= 40
FUZZ_API_SEED ?= 31
# The short fuzz run inside `make test` (CI): a release sanitizer build, then this many seconds.
TEST_FUZZ_SECONDS ?= 20
# The watchdog's budget for `swift test` inside `make test` (scripts/run-tests.sh): past
# it, the tests still running are named and the run fails instead of hanging.
TEST_BUDGET_SECONDS ?= 480
# Every other step of `make test` that runs a program is bounded too: a hang there is a
# failure after this many seconds, never a CI run lost at its limit.
STEP_TIMEOUT := timeout --kill-after=10s 300
# `make soak`: this many full `swift test` runs in a row from one build.
SOAK_RUNS ?= 10

.PHONY: all deps build release test apple-check format format-check soak run bench bench-quick bench-client bench-server bench-stall tls-test fuzz fuzz-api test-asan install uninstall clean load compare-redis cluster cluster-down cluster-smoke

all: build

# Installs only the packages that are missing, so a warm machine pays nothing.
deps:
	@command -v $(SWIFT) >/dev/null 2>&1 || { echo "error: no Swift toolchain on PATH (Swift 6.1 or later is needed)"; exit 1; }
	@missing=""; \
	for p in $(APT_PACKAGES) $(TEST_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# Swift Testing runs the suites in parallel; seeds are fixed, so runs are repeatable.
# Then: the benchmarks in --quick mode (they must build and run, figures discarded),
# a bounded fuzz run of the protocol decoder, and one plain "N passed, N failed" line.
test: deps
	@mkdir -p .build
	scripts/check-portability.sh   # the SDK needs no libuv/Glibc on Apple platforms (issue 17)
	scripts/format-check.sh   # swift format lint --strict with .swift-format (issue #30)
	$(SWIFT) build   # every product, so the tests can run the flowsyncd binary
	scripts/apple-check.sh   # the Apple-only code against stand-ins of Apple's API (issue #29); needs the debug flowsyncd
	$(SWIFT) build --build-tests
	scripts/run-tests.sh .build/test-output.txt $(TEST_BUDGET_SECONDS)
	$(STEP_TIMEOUT) scripts/fuzz-gateway-api.sh $(FUZZ_API_EXAMPLES) $(FUZZ_API_SEED)   # issue #31: the gateway against its OpenAPI spec, schemathesis from PyPI (seeded, ~1.5 min)
	$(SWIFT) build -c release --product flowsync-bench
	$(STEP_TIMEOUT) .build/release/flowsync-bench --quick > /dev/null
	$(SWIFT) build -c release --product flowsync-protocol-bench
	$(STEP_TIMEOUT) .build/release/flowsync-protocol-bench --quick > /dev/null
	$(SWIFT) build -c release --product flowsyncd
	$(SWIFT) build -c release --product flowsync-server-bench
	$(STEP_TIMEOUT) .build/release/flowsync-server-bench --quick > /dev/null
	$(STEP_TIMEOUT) .build/release/flowsync-server-bench --write-baseline --quick > /dev/null
	$(STEP_TIMEOUT) .build/release/flowsync-server-bench --tls --quick --rounds 1 > /dev/null
	@# Issue #33: slow-consumer memory bounded in every run — 20 rounds of its case (2 MiB of
	@# history, so each round takes the catch-up path), each checked; alone, after the suite.
	$(STEP_TIMEOUT) .build/release/flowsync-server-bench --slow-consumer-soak --rounds 20 --pause 1.5 --writing 1.5 > .build/slow-consumer-soak.txt || { cat .build/slow-consumer-soak.txt; exit 1; }
	@tail -1 .build/slow-consumer-soak.txt
	$(SWIFT) build -c release --product flowsync-client-bench
	$(STEP_TIMEOUT) .build/release/flowsync-client-bench --quick > /dev/null
	$(SWIFT) build -c release --product flowsync-load
	$(STEP_TIMEOUT) .build/release/flowsync-load --spawn --daemon .build/release/flowsyncd --scenario mixed --duration 3 --warmup 1 --quiet > .build/load-smoke.txt || { cat .build/load-smoke.txt; exit 1; }
	$(STEP_TIMEOUT) python3 clients/python/test_vectors.py
	$(STEP_TIMEOUT) scripts/check-monitoring.sh   # promtool: alerting rules, their unit tests, the dashboard's queries
	$(STEP_TIMEOUT) scripts/tls-proxy-test.sh .build/debug
	$(STEP_TIMEOUT) scripts/clean-stop-damage.sh 8 .build/debug
	@# The local cluster (issue #18): a PostgreSQL primary, its synchronous standby, 3 nodes;
	@# a row written through n1, read back, found on the standby; all stopped. Its state in
	@# /tmp, which the postgres user can reach wherever the clone is.
	@d=$$(mktemp -d /tmp/flowsync-cluster.XXXXXX) && chmod 755 "$$d" && \
	  FLOWSYNC_CLUSTER_DIR="$$d/state" $(STEP_TIMEOUT) scripts/cluster.sh smoke; rc=$$?; rm -rf "$$d"; exit $$rc
	$(STEP_TIMEOUT) scripts/fuzz.sh $(TEST_FUZZ_SECONDS)
	@scripts/test-summary.sh .build/test-output.txt

# The project's Apple-only code (NetworkTransport, the Darwin branches, FlowSyncUI's UIKit
# and SwiftUI code, the examples) compiled and tested on Linux against stand-ins of Apple's
# modules: AppleCheck/, docs/TESTING.md "Apple's API on Linux". Bounded; ends with a plain
# "N passed, N failed" line. Builds the debug flowsyncd first if it is missing.
# The formatter (issue #30): `make format` rewrites the tree with .swift-format;
# `make format-check` (run by `make test`) only lints.
format:
	swift format format --in-place --recursive --parallel Sources Tests Benchmarks Examples AppleCheck

format-check:
	scripts/format-check.sh

apple-check: deps
	scripts/apple-check.sh

# N full test runs in a row with a tally of failures and hangs (docs/TESTING.md).
soak: deps
	$(SWIFT) build
	scripts/soak-tests.sh $(SOAK_RUNS) $(TEST_BUDGET_SECONDS)

# The daemon in the foreground with the shipped config (Ctrl-C stops it gracefully).
# The data directory is local to the checkout so no root is needed.
run: deps
	$(SWIFT) build -c release --product flowsyncd
	.build/release/flowsyncd --config $(CONFIG) --data-dir $(CURDIR)/.flowsync-data

bench: deps
	$(SWIFT) build -c release --product flowsync-bench
	.build/release/flowsync-bench

bench-quick: deps
	$(SWIFT) build -c release --product flowsync-bench
	.build/release/flowsync-bench --quick

# The load tester against a daemon it starts (docs/BENCHMARKS.md, "Load tests"):
# make load SCENARIO=fanout LOAD_ARGS="--duration 20"
SCENARIO  ?= mixed
LOAD_ARGS ?=
load: deps
	$(SWIFT) build -c release --product flowsyncd
	$(SWIFT) build -c release --product flowsync-load
	.build/release/flowsync-load --spawn --daemon .build/release/flowsyncd --scenario $(SCENARIO) $(LOAD_ARGS)

# FlowSync fan-out vs Redis pub/sub fan-out in one run (installs redis-server if missing).
compare-redis: deps
	SCRATCH=.build Benchmarks/compare-redis.sh

# Daemon figures against a release flowsyncd process (docs/BENCHMARKS.md).
# The documented TLS setup, end to end: config/stunnel-flowsync.conf in front of the daemon.
tls-test: deps
	$(SWIFT) build
	scripts/tls-proxy-test.sh .build/debug

# SDK figures: local edit → visible, edit → ack, replica memory (docs/BENCHMARKS.md).
bench-client: deps
	$(SWIFT) build -c release --product flowsync-client-bench
	.build/release/flowsync-client-bench

bench-server: deps
	$(SWIFT) build -c release --product flowsyncd
	$(SWIFT) build -c release --product flowsync-server-bench
	.build/release/flowsync-server-bench

# Loop stalls (docs/BENCHMARKS.md, "Loop stalls"): one request against a 100,000- and a
# 1,000,000-row section while a second client pings every 20 ms. STALL_ARGS e.g.
# "--skip insert0@1000000,remove0@1000000" where a case takes minutes.
STALL_ARGS ?=
bench-stall: deps
	$(SWIFT) build -c release --product flowsync-server-bench
	.build/release/flowsync-server-bench --stall $(STALL_ARGS)

# A local cluster on 127.0.0.1 (docs/CLUSTER.md, "Running a local cluster"): a PostgreSQL
# primary, its synchronous standby and 3 flowsyncd nodes, state in .build/cluster
# (FLOWSYNC_CLUSTER_DIR). `scripts/cluster.sh status` shows it. The daemon is built first
# unless FLOWSYNCD names one.
cluster: deps
	@[ -n "$$FLOWSYNCD" ] || $(SWIFT) build --product flowsyncd
	scripts/cluster.sh up

cluster-down:
	scripts/cluster.sh down

# up, a row written and read back through n1 with the CLI and found on the standby, down.
# `make test` runs the same smoke with its state in /tmp.
cluster-smoke: deps
	@[ -n "$$FLOWSYNCD" ] || $(SWIFT) build --product flowsyncd
	@[ -n "$$FLOWSYNC" ] || $(SWIFT) build --product flowsync
	$(STEP_TIMEOUT) scripts/cluster.sh smoke

# Every suite but the cluster's under AddressSanitizer (.build-asan; about 10 minutes).
test-asan: deps
	scripts/asan-tests.sh

# libFuzzer + AddressSanitizer on the protocol decoder, seeded from the golden vectors.
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)

# schemathesis (PyPI) against flowsync-gateway's own spec: a debug daemon and gateway on
# port 0, FUZZ_API_EXAMPLES per operation, a fixed seed (about a minute).
fuzz-api: build
	scripts/fuzz-gateway-api.sh $(FUZZ_API_EXAMPLES) $(FUZZ_API_SEED)

# Installs the release daemon, the unit files and (if none is there yet) the default
# config; then: systemctl daemon-reload && systemctl enable --now flowsyncd.socket
install: release
	$(INSTALL) -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/flowsyncd
	$(INSTALL) -m 0755 .build/release/flowsyncd $(DESTDIR)$(PREFIX)/bin/flowsyncd
	$(INSTALL) -m 0644 systemd/flowsyncd.service systemd/flowsyncd.socket $(DESTDIR)$(UNITDIR)/
	@if [ "$(PREFIX)" != "/usr/local" ]; then sed -i 's|/usr/local/bin/flowsyncd|$(PREFIX)/bin/flowsyncd|' $(DESTDIR)$(UNITDIR)/flowsyncd.service; fi
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/flowsyncd/flowsyncd.toml ]; then \
		echo "keeping the existing $(SYSCONFDIR)/flowsyncd/flowsyncd.toml"; \
	else \
		$(INSTALL) -m 0644 config/flowsyncd.toml $(DESTDIR)$(SYSCONFDIR)/flowsyncd/flowsyncd.toml; \
	fi

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/flowsyncd $(DESTDIR)$(UNITDIR)/flowsyncd.service $(DESTDIR)$(UNITDIR)/flowsyncd.socket

clean:
	rm -rf .build
