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
RUST_LIB      := target/release/libcompiletools_core.a
FFI_LIB_DIR   := go-receiver/internal/ffi/lib/$(GOOS)_$(GOARCH)
COLLECTOR     := $(BUILD_DIR)/otelcol-compiletools/otelcol-compiletools
VENV          := .venv
PYTHON        := $(VENV)/bin/python
EXAMPLE_CONFIG := tests/example/config.yaml

export CGO_ENABLED := 1

.PHONY: build rust header ocb generate collector jaeger run test lint-rust lint-go test-rust test-go test-e2e test-pipeline test-realbuilds test-casreal e2e-full deps-realbuilds venv clean bench-receiver

build: collector

## rust: the Rust core as a static library, placed where the cgo binding links it
rust:
	cargo build --release --locked -p compiletools-core
	mkdir -p $(FFI_LIB_DIR)
	cp $(RUST_LIB) $(FFI_LIB_DIR)/

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

test: lint-rust lint-go test-rust test-go test-e2e test-pipeline test-realbuilds test-casreal

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

test-rust:
	cargo test --locked --workspace

test-go: rust
	cd go-receiver && go vet ./... && go test -race -count=1 ./...

test-e2e: collector venv
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q tests/e2e

## test-pipeline: agent -> gateway (default otlp receiver) -> sink, and -> Jaeger v2: corpus builds and
## a generated 100k-rule build arrive whole (CT_PIPELINE_RULES sets the size)
test-pipeline: collector venv $(JAEGER)
	OTELCOL_BIN=$(abspath $(COLLECTOR)) JAEGER_BIN=$(abspath $(JAEGER)) $(PYTHON) -m pytest -q tests/pipeline

## deps-realbuilds: ccache, ninja, cmake (apt, as root) and a venv with compiletools[otel]==13.1.4
deps-realbuilds:
	tests/realbuilds/install-deps.sh

## test-realbuilds: real ct-cake builds (shake/make/ninja/cmake) vs our collector, plus a 20k-rule build
test-realbuilds: collector venv deps-realbuilds
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q tests/realbuilds

## test-casreal: real CAS stores filled by ct-cake: ct-cache-report --json vs our collector
test-casreal: collector venv deps-realbuilds
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q tests/casreal

## e2e-full: the larger real-build matrix (46 builds), then the pipeline tests with a 1M-rule build
## (to Jaeger: 100k, see tests/pipeline/README.md; numbers in _build/pipeline-results/)
e2e-full: collector venv deps-realbuilds $(JAEGER)
	CT_REALBUILDS_FULL=1 OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) -m pytest -q tests/realbuilds
	CT_PIPELINE_RULES=1000000 CT_PIPELINE_JAEGER_RULES=100000 OTELCOL_BIN=$(abspath $(COLLECTOR)) JAEGER_BIN=$(abspath $(JAEGER)) \
	  $(PYTHON) -m pytest -q -s tests/pipeline

## bench-receiver: idle cost with 10k watched builds, rename→sink latency, backlog throughput
bench-receiver: collector venv
	OTELCOL_BIN=$(abspath $(COLLECTOR)) $(PYTHON) tests/perf/receiver_bench.py all

clean:
	cargo clean
	rm -rf $(BUILD_DIR) $(FFI_LIB_DIR)

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
	PROPTEST_CASES=$(PROPTEST_CASES) cargo test --locked -p compiletools-core --test prop_timing --test prop_side_files
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
