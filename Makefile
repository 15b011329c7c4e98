# compiletools receiver for the OpenTelemetry Collector.
#   make run    build everything and run the collector on the bundled example
#   make test   run every test (Rust, Go, end-to-end with the real collector)
# Everything a target needs is installed by the target itself (ocb, the
# Python test environment); only Go, Rust, a C compiler and Python 3 are assumed.

SHELL := /bin/bash
.DEFAULT_GOAL := build

OCB_VERSION   := v0.165.0
GOOS          := $(shell go env GOOS)
GOARCH        := $(shell go env GOARCH)
BUILD_DIR     := _build
TOOLS_DIR     := $(BUILD_DIR)/tools
OCB           := $(TOOLS_DIR)/builder
# mdatagen is not served for v0.160–v0.165 by the Go module proxy here;
# v0.159.0 is the newest version that resolves, and its output builds
# against the pinned v0.165.0 collector.
MDATAGEN_VERSION := v0.159.0
MDATAGEN      := $(TOOLS_DIR)/mdatagen
# staticcheck 2026.2.x analyses Go 1.26 code and builds with Go 1.26.
STATICCHECK_VERSION := v0.8.2
STATICCHECK   := $(TOOLS_DIR)/staticcheck
# Platforms whose prebuilt library the Go module ships (GOARCH, linux).
RELEASE_LIB_ARCHS := amd64 arm64
COLLECTOR     := $(BUILD_DIR)/otelcol-compiletools/otelcol-compiletools
VENV          := .venv
PYTHON        := $(VENV)/bin/python
# The Python scripts under tests/ (chaos, soak, benchmarks) import the shared
# tests/harness package, so they run as modules with tests/ on the path:
# $(PY_MODULE) chaos.chaos is tests/chaos/chaos.py. (pytest finds tests/pytest.ini,
# whose pythonpath does the same for the suites.)
PY_MODULE     := PYTHONPATH=tests $(PYTHON) -m
EXAMPLE_CONFIG := tests/example/config.yaml

export CGO_ENABLED := 1

.PHONY: build check-docs check-commit-subjects check-rust-circles rust release-lib check-release-lib test-release-lib-arm64 header ocb generate collector jaeger run test lint-rust lint-go test-rust test-go test-e2e test-chaos-fast chaos test-pipeline test-realbuilds test-casreal e2e-full deps-realbuilds venv clean bench-receiver

build: collector

## rust: the Rust core as this platform's static library, placed where the
## cgo binding links it: the committed prebuilt library, made by the same
## reproducible recipe as release-lib. After a Rust change `git status` shows
## it changed; commit it with the source (check-release-lib fails otherwise).
rust:
	deploy/release-lib/build.sh $(GOARCH)

## release-lib: the prebuilt static libraries of every shipped platform
## (go-receiver/internal/ffi/lib/linux_<arch>/), reproducible and stripped
release-lib:
	deploy/release-lib/build.sh $(RELEASE_LIB_ARCHS)

## check-release-lib: the committed libraries are what the Rust source builds
## (rebuilds them; fails when one differs from the git index)
check-release-lib:
	deploy/release-lib/check.sh $(RELEASE_LIB_ARCHS)

## test-release-lib-arm64: the cgo binding's tests linked against the arm64
## library (cross gcc) and run under qemu-user, so the shipped arm64 library
## is linked and called, not only built (deps: apt, as root)
ARM64_SYSROOT := /usr/aarch64-linux-gnu
test-release-lib-arm64:
	deploy/release-lib/install-cross-deps.sh
	cd go-receiver && CC=aarch64-linux-gnu-gcc GOARCH=arm64 go test -count=1 \
	  -exec "qemu-aarch64 -L $(ARM64_SYSROOT)" ./internal/ffi

## header: regenerate the committed C header after changing rust/src/ffi
header:
	CT_BLESS_HEADER=1 cargo build -p compiletools-core

$(OCB):
	mkdir -p $(TOOLS_DIR)
	GOBIN=$(abspath $(TOOLS_DIR)) go install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)

ocb: $(OCB)

$(STATICCHECK):
	mkdir -p $(TOOLS_DIR)
	GOBIN=$(abspath $(TOOLS_DIR)) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# Jaeger v2 (a collector distribution with Jaeger's storage and query API),
# the trace backend of tests/pipeline. Built from the Go module proxy in a
# scratch module (~5 min on 2 cores the first time), then cached.
JAEGER_VERSION := v1.76.0
JAEGER        := $(TOOLS_DIR)/jaeger-$(JAEGER_VERSION)

$(JAEGER):
	rm -rf $(TOOLS_DIR)/jaeger-src && mkdir -p $(TOOLS_DIR)/jaeger-src
	cd $(TOOLS_DIR)/jaeger-src && go mod init jaeger-tool >/dev/null 2>&1 \
	  && go get -tool github.com/jaegertracing/jaeger/cmd/jaeger@$(JAEGER_VERSION) \
	  && CGO_ENABLED=0 go build -o $(abspath $@).tmp github.com/jaegertracing/jaeger/cmd/jaeger
	mv $@.tmp $@

jaeger: $(JAEGER)

$(MDATAGEN):
	rm -rf $(TOOLS_DIR)/mdatagen-src && mkdir -p $(TOOLS_DIR)/mdatagen-src
	cd $(TOOLS_DIR)/mdatagen-src && go mod init mdatagen-tool >/dev/null 2>&1 \
	  && GOPROXY=https://proxy.golang.org go get go.opentelemetry.io/collector/cmd/mdatagen@$(MDATAGEN_VERSION) \
	  && go build -o $(abspath $(MDATAGEN)) go.opentelemetry.io/collector/cmd/mdatagen

## generate: regenerate go-receiver's metadata code, tests and documentation.md from metadata.yaml.
## mdatagen names the Go package after the directory, so it runs through a
## link named like the package.
generate: $(MDATAGEN)
	mkdir -p $(BUILD_DIR)/gen && ln -sfn $(abspath go-receiver) $(BUILD_DIR)/gen/compiletoolsreceiver
	cd $(BUILD_DIR)/gen/compiletoolsreceiver && $(abspath $(MDATAGEN)) metadata.yaml
	deploy/mdatagen/histogram-points.pl go-receiver/internal/metadata/generated_metrics.go go-receiver/internal/metadata/generated_metrics_test.go

## collector: the custom collector distribution (ocb-manifest.yaml)
collector: rust $(OCB)
	mkdir -p $(BUILD_DIR)
	$(OCB) --config ocb-manifest.yaml

run: collector
	$(COLLECTOR) --config $(EXAMPLE_CONFIG)

$(VENV)/.installed: tests/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
	touch $@

venv: $(VENV)/.installed

## check-docs: every relative link and anchor of the *.md files, the README's layout tree
## against git ls-files, the code's citations of docs/ sections, the README's length
## (tests/tools/check_docs.py; stdlib Python only), then the checker's own tests
check-docs:
	python3 tests/tools/check_docs.py
	python3 tests/tools/check_docs.py --self-test

## check-commit-subjects: every commit subject since the rule began is at most 72 characters
COMMIT_SUBJECT_BASE := 728b246bbf6a027160faa2a8cfee957a421fb9e7
check-commit-subjects:
	tests/tools/check_commit_subjects.sh $(COMMIT_SUBJECT_BASE)

test: check-docs check-commit-subjects check-rust-circles check-release-lib test-release-lib-arm64 lint-rust lint-go test-rust test-go test-e2e test-semconv test-pipeline test-chaos-fast test-realbuilds test-casreal

## check-rust-circles: no two modules of rust/src import each other, directly
## or through others (lib.rs: data flows one way); names each circle it finds
check-rust-circles:
	python3 tests/tools/check_rust_circles.py --self-test
	python3 tests/tools/check_rust_circles.py rust/src

## lint-rust: formatting and clippy (every target, warnings are errors); the
## unsafe-code rules are lints of the crate itself (rust/src/lib.rs, rust/Cargo.toml)
lint-rust:
	cargo fmt --all --check
	cargo clippy --locked --workspace --all-targets -- -D warnings

## lint-go: gofmt, go vet (with and without cgo) and staticcheck on go-receiver; cgo type-checks against the Rust library
lint-go: rust $(STATICCHECK)
	@unformatted="$$(cd go-receiver && gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt -l: not formatted:"; echo "$$unformatted"; exit 1; fi
	cd go-receiver && go vet ./... && CGO_ENABLED=0 go vet ./...
	cd go-receiver && $(abspath $(STATICCHECK)) ./...

# ct-cache-report from the venv of `tests/install-deps.sh realbuilds`, for the
# CAS differential tests (rust/tests/cas_differential.rs). They skip when it
# is missing, except under CI=true, where they fail: so CI installs it first.
CT_VENV         ?= $(BUILD_DIR)/ct-venv
CT_CACHE_REPORT ?= $(abspath $(CT_VENV))/bin/ct-cache-report
ifneq ($(filter true TRUE True,$(CI)),)
test-rust: deps-realbuilds
endif

test-rust:
	CT_CACHE_REPORT=$(if $(wildcard $(CT_CACHE_REPORT)),$(CT_CACHE_REPORT)) cargo test --locked --workspace

test-go: rust
	cd go-receiver && go vet ./... && go test -race -count=1 ./...

test-e2e: collector venv
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q tests/e2e

## test-chaos-fast: the fault campaign's fast subset (kill -9 storm, sink outage, 65 hostile build directories)
test-chaos-fast: collector venv
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q -s tests/chaos

## chaos: the full fault campaign (1,000-build kill -9 storm with 10 kills, 60 s outage); table in _build/chaos/results.md
chaos: collector venv
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PY_MODULE) chaos.chaos

## test-pipeline: agent -> gateway (default otlp receiver) -> sink, and -> Jaeger v2: corpus builds and
## a generated 100k-rule build arrive whole (CT_PIPELINE_RULES sets the size), also with 16k clang
## -ftime-trace files beside its compiles (test_time_trace_hop.py, ~1.5 min)
test-pipeline: collector venv $(JAEGER)
	OTELCOL_BIN=$(abspath $(COLLECTOR)) JAEGER_BIN=$(abspath $(JAEGER)) $(PYTHON) -m pytest -q tests/pipeline

## deps-realbuilds: ccache, ninja, cmake, clang (apt, as root) and a venv with compiletools[otel]==13.1.4
deps-realbuilds:
	tests/install-deps.sh realbuilds

## test-realbuilds: real ct-cake builds (shake/make/ninja/cmake) vs our collector, plus a 20k-rule build
## and clang -ftime-trace builds on shake, ninja, make and ct-lock-helper (test_time_trace_realbuilds.py)
test-realbuilds: collector venv deps-realbuilds
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q tests/realbuilds

## test-time-trace: only the clang -ftime-trace tests of test-realbuilds and test-pipeline (both part
## of `make test`): real shake/ninja builds with clang, and the 100k-rule build over a default gRPC hop
.PHONY: test-time-trace
test-time-trace: collector venv deps-realbuilds
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q tests/realbuilds/test_clang_truth_unit.py \
	  tests/realbuilds/test_time_trace_realbuilds.py tests/pipeline/test_time_trace_hop.py

## test-casreal: real CAS stores filled by ct-cake: ct-cache-report --json vs our collector
test-casreal: collector venv deps-realbuilds
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q tests/casreal

## e2e-full: the larger real-build matrix (46 builds), then the pipeline tests with a 1M-rule build
## (to Jaeger: 100k, see tests/pipeline/README.md; numbers in _build/pipeline-results/)
e2e-full: collector venv deps-realbuilds $(JAEGER)
	CT_REALBUILDS_FULL=1 OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q tests/realbuilds
	CT_PIPELINE_RULES=1000000 CT_PIPELINE_JAEGER_RULES=100000 OTELCOL_BIN=$(abspath $(COLLECTOR)) JAEGER_BIN=$(abspath $(JAEGER)) \
	  $(PYTHON) -m pytest -q -s tests/pipeline

## soak: issue 13's soak, part of e2e-full (not of `make test`): the packaged config for
## CT_SOAK_SECONDS (default 3600) with a build every second and a CAS scan every minute;
## RSS, goroutines, threads, open fds at start and end, every build accounted for
## (tests/soak/README.md; results in _build/soak/)
SOAK_DIR       := $(BUILD_DIR)/soak
SOAK_COLLECTOR := $(SOAK_DIR)/otelcol/otelcol-compiletools
.PHONY: soak soak-collector

## soak-collector: the shipped manifest plus contrib's pprof extension (goroutine counts)
soak-collector: rust $(OCB)
	mkdir -p $(SOAK_DIR)
	sed -e 's#^  output_path: .*#  output_path: ./$(SOAK_DIR)/otelcol#' \
	  -e '/^extensions:/a\  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/extension/pprofextension v0.165.1' \
	  ocb-manifest.yaml > $(SOAK_DIR)/ocb-manifest.yaml
	$(OCB) --config $(SOAK_DIR)/ocb-manifest.yaml

soak: soak-collector venv
	OTELCOL_BIN=$(abspath $(SOAK_COLLECTOR)) $(PY_MODULE) soak.soak

e2e-full: soak

# the ct-otel-dump test of tests/e2e runs the built command
test-e2e: ct-otel-dump

## ct-otel-dump: one build's OTLP as JSON lines, as the collector's file exporter writes them
## (go-receiver/cmd/ct-otel-dump; README "Checking a build and a config")
CT_OTEL_DUMP := $(BUILD_DIR)/ct-otel-dump
.PHONY: ct-otel-dump
ct-otel-dump: rust
	cd go-receiver && go build -o $(abspath $(CT_OTEL_DUMP)) ./cmd/ct-otel-dump

## bench-receiver: idle cost with 10k watched builds, rename→sink latency, backlog throughput
bench-receiver: collector venv
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PY_MODULE) perf.receiver_bench all

## bench-live: live builds — CPU per read with 50 running builds, and block-to-sink latency with the default intervals
.PHONY: bench-live
bench-live: collector venv
	cd go-receiver && go test -run '^$$' -bench LiveTick -benchtime 200x -count 3 ./internal/livebuilds
	CT_LIVE_INTERVAL=1s CT_LIVE_POLL_INTERVAL=5s OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q -s tests/e2e/test_live_builds.py

clean:
	cargo clean
	rm -rf $(BUILD_DIR)

# --- benchmarks and fuzzing (rust) ---
# None of these run in `make test`. See rust/bench/README.md.
#   make bench        criterion (1k/10k/100k-rule timing.json → OTLP), peak RSS,
#                     and ct-cake 13.1.4 side by side (PyPI; several minutes)
#   make bench-quick  the same for 1k and 10k rules only
#   make fuzz         each cargo-fuzz target for FUZZ_SECONDS (default 600) s
#   make prop-long    the property tests with PROPTEST_CASES (default 5000)
BENCH_RULES        ?= 1000,10000,100000
BENCH_COMPARE_ARGS ?=
FUZZ_SECONDS       ?= 600
FUZZ_PARALLEL      ?= 1
FUZZ_TARGETS       ?= timing_decode process_build statslog_parse outcomes_parse
PROPTEST_CASES     ?= 5000

.PHONY: bench bench-quick bench-criterion bench-compare fuzz prop-long

bench: bench-criterion bench-compare

bench-quick:
	$(MAKE) bench BENCH_RULES=1000,10000

bench-criterion:
	CT_BENCH_RULES=$(BENCH_RULES) cargo bench --locked -p compiletools-core --bench timing_to_otlp
	python3 rust/bench/criterion_summary.py

bench-compare:
	python3 rust/bench/compare_ctcake.py --rules $(BENCH_RULES) $(BENCH_COMPARE_ARGS)

fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_PARALLEL=$(FUZZ_PARALLEL) rust/fuzz/run.sh $(FUZZ_TARGETS)

prop-long:
	PROPTEST_CASES=$(PROPTEST_CASES) cargo test --locked -p compiletools-core --test tests -- prop_timing:: prop_side_files:: prop_analytics::
# --- end benchmarks and fuzzing ---

# --- cas benchmark ---
# Not part of `make test`. Obj CAS store scans of a synthetic 100k-entry store
# (CAS_BENCH_1M=1: also 1M): ct-cache-report 13.1.4 against our uncached
# (cold/warm) and cached scans; wall time best of CAS_BENCH_RUNS (default 5),
# peak RSS, ratios. Stores and the ct-cache-report venv are kept in target/.
.PHONY: bench-cas

bench-cas:
	python3 rust/bench/cas_bench.py
# --- end cas benchmark ---

## bench-time-trace: our clang -ftime-trace ingestion vs ClangBuildAnalyzer (built from source
## into _build/, network once) on 2,048 generated TUs of realistic sizes; table for docs/performance.md
.PHONY: bench-time-trace
CBA_BIN := $(BUILD_DIR)/cba-build/ClangBuildAnalyzer
$(CBA_BIN):
	tests/tools/build_clangbuildanalyzer.sh $(BUILD_DIR)
bench-time-trace: $(CBA_BIN)
	cargo build --release --example time_trace_rollup
	python3 tests/tools/bench_time_trace.py --cba $(CBA_BIN) --ours target/release/examples/time_trace_rollup --out $(BUILD_DIR)/bench-time-trace

# --- deployment: packages, image, Kubernetes (deploy/) ---
#   make dist         .deb and .rpm of the collector (nfpm) in _build/dist/
#   make image        the container image, built with buildah (no daemon, no registry)
#   make test-deploy  installs/purges the .deb here, runs the image, checks the
#                     Kubernetes manifests (as root; part of `make test`)
#   make bench-crash-queue    kill -9 mid-backlog with each exporter queue (not in `make test`)
#   make bench-packaged-idle  RSS/CPU of the packaged config with 10k watched builds (not in `make test`)
NFPM_VERSION  := v2.45.2
NFPM          := $(TOOLS_DIR)/nfpm
DIST_DIR      := $(BUILD_DIR)/dist
DIST_VERSION  := $(shell sed -n 's/^  version: *//p' ocb-manifest.yaml)
IMAGE         ?= localhost/otelcol-compiletools:$(DIST_VERSION)
DEPLOY_REPORT := $(BUILD_DIR)/deploy/report.txt

.PHONY: dist image deps-deploy test-deploy bench-crash-queue bench-packaged-idle

$(NFPM):
	mkdir -p $(TOOLS_DIR)
	GOBIN=$(abspath $(TOOLS_DIR)) go install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)

dist: collector $(NFPM)
	mkdir -p $(DIST_DIR)
	rm -f $(DIST_DIR)/otelcol-compiletools*.deb $(DIST_DIR)/otelcol-compiletools*.rpm
	for fmt in deb rpm; do \
	  CT_VERSION=$(DIST_VERSION) CT_ARCH=$(GOARCH) $(NFPM) package -f deploy/packages/nfpm.yaml -p $$fmt -t $(DIST_DIR)/ || exit 1; \
	done
	ls -l $(DIST_DIR)

## deps-deploy: buildah, debootstrap, rpm, systemd-analyze, objdump (apt, as root)
deps-deploy:
	tests/install-deps.sh deploy

image: collector deps-deploy
	deploy/container/build-image.sh $(IMAGE)
	buildah --storage-driver vfs images --format '{{.Name}}:{{.Tag}} {{.Size}}' $(IMAGE)

test-deploy: dist image dist-gateway image-gateway venv
	rm -f $(DEPLOY_REPORT)
	OTELCOL_BIN=$(abspath $(COLLECTOR)) CT_DIST_DIR=$(abspath $(DIST_DIR)) CT_IMAGE=$(IMAGE) \
	  GATEWAY_BIN=$(abspath $(GATEWAY)) CT_GATEWAY_IMAGE=$(GATEWAY_IMAGE) \
	  CT_DEPLOY_REPORT=$(abspath $(DEPLOY_REPORT)) $(PYTHON) -m pytest -q tests/deploy
	@echo "== deployment measurements ($(DEPLOY_REPORT))" && cat $(DEPLOY_REPORT)

test: test-deploy

bench-crash-queue: collector venv
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PY_MODULE) deploy.crash_queue_bench

bench-packaged-idle: collector venv
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PY_MODULE) deploy.packaged_idle_bench
# --- end deployment ---

# --- another distribution importing the receiver (deploy/contrib-distribution/) ---
#   make test-contrib-dist  builds an ocb distribution that takes the receiver by
#                           `gomod:` from the committed module files (prebuilt
#                           library, no Rust) next to contrib's filelog and
#                           hostmetrics receivers, and runs a corpus build through it
CONTRIB_DIR       := $(BUILD_DIR)/contrib-distribution
CONTRIB_COLLECTOR := $(CONTRIB_DIR)/otelcol/otelcol-contrib-compiletools

.PHONY: contrib-dist test-contrib-dist

## contrib-dist: the module as committed (git archive HEAD), never the work tree
## or a Rust build, so the test proves that the committed library suffices
contrib-dist: $(OCB)
	rm -rf $(CONTRIB_DIR)/module && mkdir -p $(CONTRIB_DIR)/module
	git archive --format=tar HEAD go-receiver | tar -x -C $(CONTRIB_DIR)/module
	$(OCB) --config deploy/contrib-distribution/ocb-manifest.yaml

test-contrib-dist: contrib-dist venv
	OTELCOL_BIN=$(abspath $(CONTRIB_COLLECTOR)) $(PYTHON) -m pytest -q tests/contrib-dist

test: test-contrib-dist
# --- end another distribution ---

# --- the Grafana dashboard against a real Prometheus (deploy/grafana/, tests/prometheus/) ---
#   make test-prometheus    Debian's prometheus scrapes the collector's prometheus exporter
#                           after corpus builds; every dashboard query must return data
#   make dashboard-picture  the same run, then deploy/grafana/panels.png drawn from its data
.PHONY: deps-prometheus test-prometheus dashboard-picture

## deps-prometheus: Debian's prometheus package (apt, as root)
deps-prometheus:
	tests/install-deps.sh prometheus

test-prometheus: collector venv deps-prometheus
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q tests/prometheus

test: test-prometheus

dashboard-picture: collector venv deps-prometheus
	CT_DASHBOARD_PICTURE=$(abspath deploy/grafana/panels.png) OTELCOL_BIN=$(abspath $(COLLECTOR)) \
	  $(PYTHON) -m pytest -q tests/prometheus
# --- end dashboard ---

# --- semconv conformance ---
## test-semconv: the receiver's OTLP against the OpenTelemetry semantic-conventions
## registry, read from the pinned copy of its model YAML (tests/semconv/README.md):
## the checker's own tests, every corpus build's ct-otel-dump output, then the real
## collector's output for every corpus build and a live build, history and live on
SEMCONV_DIR := $(BUILD_DIR)/semconv
.PHONY: test-semconv
test-semconv: collector venv ct-otel-dump
	cd tests/semconv && go vet ./... && go test -count=1 ./...
	tests/semconv/check-corpus.sh $(abspath $(CT_OTEL_DUMP)) ../shared/corpus/cases $(SEMCONV_DIR)
	CT_SEMCONVCHECK=$(abspath $(SEMCONV_DIR))/semconvcheck CT_SEMCONV_OUT=$(abspath $(SEMCONV_DIR))/collector \
	  OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q -s tests/semconv
# --- end semconv ---

# --- gateway: the tier between agents and the OTLP backend (deploy/gateway/) ---
# test-fleet and gateway-dns-smoke are part of `make test` (and the gateway's
# package and image of test-deploy). See deploy/gateway/README.md.
#   make gateway         the gateway distribution (one binary, lb and backend
#                        roles by config) in _build/otelcol-gateway/
#   make gateway-smoke   loopback: agent -> lb gateway -> 3 backend gateways ->
#                        sink; every build's trace whole on exactly one backend
#                        (GATEWAY_LOAD_BUILDS=5000: then replays the agent's
#                        requests as that many builds and reports CPU and RSS)
#   make gateway-dns-smoke  the lb's dns resolver (kubernetes/lb.yaml's) over a
#                        private /etc/hosts: 3 backends, scale down, scale up (root)
#   make dist-gateway    .deb and .rpm of the gateway in _build/dist/ (nfpm)
#   make image-gateway   its image (buildah, the agent's Debian base)
#   make bench-fleet-1m  one 1M-rule build through lb and backends (not in `make test`)
#   make check-gateway-manifests  configs and Kubernetes manifests parse, the
#                        ConfigMap holds the configs verbatim, the gateway
#                        validates both roles
#   make test-fleet      8 agents (packaged config) -> lb -> 3 backends -> Jaeger,
#                        Prometheus scraping the agents: >= 400 builds through
#                        kill -9 of a backend and of two agents and a 30 s Jaeger
#                        outage; every build whole, per-host totals exact
#                        (docs/fleet.md; table in _build/fleet/results.md)
# Its own ocb: the gateway is pinned to core/contrib v0.160.0, the newest
# release whose modules (loadbalancingexporter's included) are all served here.
GATEWAY_OCB_VERSION  := v0.160.0
GATEWAY_OCB          := $(TOOLS_DIR)/ocb-$(GATEWAY_OCB_VERSION)/builder
GATEWAY              := $(BUILD_DIR)/otelcol-gateway/otelcol-gateway
GATEWAY_VENV         := $(BUILD_DIR)/gateway-venv
GATEWAY_SMOKE_CASE   ?= ../shared/corpus/cases/01-geom-shake-cold
GATEWAY_SMOKE_BUILDS ?= 30
GATEWAY_LOAD_BUILDS  ?= 0

.PHONY: gateway gateway-smoke gateway-dns-smoke check-gateway-manifests test-fleet

$(GATEWAY_OCB):
	mkdir -p $(dir $@)
	GOBIN=$(abspath $(dir $@)) go install go.opentelemetry.io/collector/cmd/builder@$(GATEWAY_OCB_VERSION)

gateway: $(GATEWAY_OCB)
	mkdir -p $(BUILD_DIR)
	$(GATEWAY_OCB) --config deploy/gateway/ocb-manifest.yaml

gateway-smoke: gateway collector ct-otel-dump
	python3 deploy/gateway/smoke/smoke.py --gateway $(GATEWAY) --agent $(COLLECTOR) --dump $(CT_OTEL_DUMP) \
	  --case $(GATEWAY_SMOKE_CASE) --builds $(GATEWAY_SMOKE_BUILDS) --load-builds $(GATEWAY_LOAD_BUILDS) \
	  --workdir $(BUILD_DIR)/gateway-smoke --report $(BUILD_DIR)/gateway-smoke/report.json

## gateway-dns-smoke: the lb's dns resolver as kubernetes/lb.yaml sets it, with the name in
## a private /etc/hosts (root: unshare) over 3 backends on 127.0.0.2-4; scale down and up
gateway-dns-smoke: gateway collector ct-otel-dump
	python3 deploy/gateway/smoke/dns_smoke.py --gateway $(GATEWAY) --agent $(COLLECTOR) --dump $(CT_OTEL_DUMP) \
	  --case $(GATEWAY_SMOKE_CASE) --workdir $(BUILD_DIR)/gateway-dns-smoke --report $(BUILD_DIR)/gateway-dns-smoke/report.json

test: gateway-dns-smoke

$(GATEWAY_VENV)/.installed: deploy/gateway/requirements.txt
	python3 -m venv $(GATEWAY_VENV)
	$(GATEWAY_VENV)/bin/pip install --quiet --disable-pip-version-check -r deploy/gateway/requirements.txt
	touch $@

check-gateway-manifests: gateway $(GATEWAY_VENV)/.installed
	$(GATEWAY_VENV)/bin/python deploy/gateway/check_manifests.py --gateway $(GATEWAY)

## test-fleet: the fleet test (tests/fleet, docs/fleet.md); CT_FLEET_BUILDS, CT_FLEET_PLAY_S,
## CT_FLEET_AGENTS size it, CT_FLEET_FAULT=agent-no-wait|backend-batch makes it fail on purpose
## dist-gateway / image-gateway: the gateway's .deb, .rpm and image, with the agent's
## install scripts (renamed) and the agent's image builder on the same Debian base
GATEWAY_VERSION      := $(shell sed -n 's/^  version: *//p' deploy/gateway/ocb-manifest.yaml)
GATEWAY_IMAGE        ?= localhost/otelcol-gateway:$(GATEWAY_VERSION)
GATEWAY_SCRIPTS      := $(DIST_DIR)/gateway-scripts
.PHONY: dist-gateway image-gateway

dist-gateway: gateway $(NFPM)
	mkdir -p $(GATEWAY_SCRIPTS)
	rm -f $(DIST_DIR)/otelcol-gateway*.deb $(DIST_DIR)/otelcol-gateway*.rpm
	for script in deploy/packages/scripts/*.sh; do \
	  sed 's/otelcol-compiletools agent/otelcol-gateway/; s/otelcol-compiletools/otelcol-gateway/g' $$script \
	    > $(GATEWAY_SCRIPTS)/$$(basename $$script) || exit 1; \
	done
	for fmt in deb rpm; do \
	  CT_VERSION=$(GATEWAY_VERSION) CT_ARCH=$(GOARCH) $(NFPM) package -f deploy/gateway/nfpm.yaml -p $$fmt -t $(DIST_DIR)/ || exit 1; \
	done
	ls -l $(DIST_DIR)/otelcol-gateway*

image-gateway: gateway deps-deploy
	deploy/container/build-image.sh $(GATEWAY_IMAGE) deploy/gateway/Dockerfile _build/otelcol-gateway/otelcol-gateway \
	  deploy/gateway/config-lb.yaml deploy/gateway/config-backend.yaml deploy/gateway/config-backend-sampling.yaml
	buildah --storage-driver vfs images --format '{{.Name}}:{{.Tag}} {{.Size}}' $(GATEWAY_IMAGE)

test-fleet: gateway collector ct-otel-dump venv deps-prometheus $(JAEGER)
	OTELCOL_BIN=$(abspath $(COLLECTOR)) GATEWAY_BIN=$(abspath $(GATEWAY)) JAEGER_BIN=$(abspath $(JAEGER)) \
	  CT_OTEL_DUMP=$(abspath $(CT_OTEL_DUMP)) $(PYTHON) -m pytest -q -s tests/fleet

test: test-fleet

## bench-fleet-1m: one generated 1M-rule build (BENCH_FLEET_RULES) agent -> lb -> 3 backends
## -> sink at the gateways' default settings; time, CPU/RSS per process, whole trace
## (docs/fleet.md). Not in `make test`: ~10 min and 600 MB of input on 2 cores.
BENCH_FLEET_RULES ?= 1000000
.PHONY: bench-fleet-1m
bench-fleet-1m: gateway collector venv
	PYTHONPATH=tests $(PYTHON) -m fleet.bench_1m --agent $(COLLECTOR) --gateway $(GATEWAY) \
	  --rules $(BENCH_FLEET_RULES) --report $(BUILD_DIR)/bench-fleet-1m/report.json
# --- end gateway ---
