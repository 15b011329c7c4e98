//! timing.json → OTLP trace bytes through `process_build`, on the synthetic
//! 1k / 10k / 100k-rule builds of the corpus's `gen_timing.py` (the files
//! corpus/perf.md timed ct-cake on). Traces only, as the receiver asks when
//! only a traces consumer exists. Throughput is the input file's bytes.
//!
//! ```sh
//! make bench-quick                     # 1k and 10k, plus the ct-cake comparison
//! cargo bench -p compiletools-core --bench timing_to_otlp
//! CT_BENCH_RULES=1000,10000 cargo bench -p compiletools-core --bench timing_to_otlp
//! python3 rust/bench/criterion_summary.py   # medians and MB/s as a table
//! ```
//!
//! The inputs are made on demand by `rust/bench/inputs.py` (python3 or
//! `$CT_BENCH_PYTHON`; checks them against the pinned checksums) under
//! `target/bench-inputs/`. Sample counts are kept small so that the three
//! sizes take about a minute on 2 cores.
//!
//! The build analytics' share of `process_build` (issue 15 target: ≤ 15 %)
//! comes from three more functions of the group on the same inputs, each on
//! a model decoded once: `analytics` (computing them), and `encode` /
//! `encode_with_analytics` (the trace's spans without / with the analytics
//! attributes). Analytics cost = analytics + encode_with_analytics − encode;
//! `criterion_summary.py` prints it as a share of `process_build`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use compiletools_core::analytics::{self, BuildAnalytics};
use compiletools_core::otlp::{analytics_root_attributes, encode_trace_request, root_attributes, TraceInput};
use compiletools_core::timing::{self, aggregates, Build, Clock};
use compiletools_core::warnings::Warnings;
use compiletools_core::{process_build, BuildRequest, CancelToken, Signals};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};

const DEFAULT_RULES: &[u64] = &[1_000, 10_000, 100_000];

struct Input {
    rules: u64,
    invocation_dir: PathBuf,
    bytes: u64,
}

/// Rule counts from `CT_BENCH_RULES` (comma-separated), else 1k/10k/100k.
fn rule_counts() -> Vec<u64> {
    match std::env::var("CT_BENCH_RULES") {
        Ok(s) if !s.trim().is_empty() => s
            .split(',')
            .map(|n| {
                n.trim()
                    .replace('_', "")
                    .parse()
                    .unwrap_or_else(|_| panic!("CT_BENCH_RULES: {n:?} is not a number"))
            })
            .collect(),
        _ => DEFAULT_RULES.to_vec(),
    }
}

/// Makes (or reuses and re-checks) the input through `rust/bench/inputs.py`.
fn ensure_input(rules: u64) -> Input {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("bench")
        .join("inputs.py");
    let python = std::env::var("CT_BENCH_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let out = Command::new(&python)
        .arg(&script)
        .arg(rules.to_string())
        .output()
        .unwrap_or_else(|e| panic!("{python} {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} {rules} failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).expect("inputs.py prints UTF-8");
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("inputs.py prints one JSON line");
    Input {
        rules,
        invocation_dir: PathBuf::from(v["invocation_dir"].as_str().expect("invocation_dir")),
        bytes: v["bytes"].as_u64().expect("bytes"),
    }
}

/// Criterion settings by input size (the same for every function).
fn sampling(rules: u64) -> (usize, u64, SamplingMode) {
    match rules {
        0..=2_000 => (50, 4, SamplingMode::Auto),
        2_001..=20_000 => (20, 5, SamplingMode::Auto),
        _ => (10, 8, SamplingMode::Flat),
    }
}

/// The model of an input, decoded once, and its clock.
fn decoded(input: &Input) -> (Build, Clock) {
    let path = input.invocation_dir.join("timing.json");
    let limits = compiletools_core::Limits::default();
    let mut w = Warnings::new();
    let text = timing::load(&path, &limits, &mut w).expect("load");
    let build =
        timing::decode::decode(&text.text, &path, &limits, &CancelToken::new(), &mut w).expect("decode");
    let clock = Clock::for_build(&build).expect("clock");
    (build, clock)
}

/// The trace of a decoded build, as `process_build` encodes it, with or
/// without the analytics attributes.
fn encode(build: &Build, clock: &Clock, analytics: Option<&BuildAnalytics>, size_hint: usize) -> Vec<u8> {
    let agg = aggregates::compute(build, None);
    let mut root = root_attributes(&agg, 4096);
    if let Some(a) = analytics {
        root.extend(analytics_root_attributes(a, 4096));
    }
    let input = TraceInput {
        build,
        clock,
        trace_id: [1; 16],
        resource: Default::default(),
        root_attributes: root,
        max_attribute_len: 4096,
        analytics,
        semconv_root_span: false,
        pipeline_name: "",
        clang: None,
    };
    encode_trace_request(input, size_hint, &mut Warnings::new()).0
}

fn bench_analytics(c: &mut Criterion) {
    let mut group = c.benchmark_group("timing_to_otlp");
    for rules in rule_counts() {
        let input = ensure_input(rules);
        let (build, clock) = decoded(&input);
        let computed = analytics::analyze(&build, &clock);
        assert!(computed.summary().is_some(), "the bench inputs have rules");
        let hint = usize::try_from(input.bytes).unwrap_or(0);
        let (samples, secs, mode) = sampling(input.rules);
        group
            .sample_size(samples)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(secs))
            .sampling_mode(mode)
            .throughput(Throughput::Bytes(input.bytes));
        group.bench_function(BenchmarkId::new("analytics", input.rules), |b| {
            b.iter(|| analytics::analyze(std::hint::black_box(&build), &clock))
        });
        group.bench_function(BenchmarkId::new("encode", input.rules), |b| {
            b.iter(|| encode(std::hint::black_box(&build), &clock, None, hint))
        });
        group.bench_function(BenchmarkId::new("encode_with_analytics", input.rules), |b| {
            b.iter(|| encode(std::hint::black_box(&build), &clock, Some(&computed), hint))
        });
    }
    group.finish();
}

fn bench_process_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("timing_to_otlp");
    for rules in rule_counts() {
        let input = ensure_input(rules);
        let mut req = BuildRequest::new(&input.invocation_dir, "bench-host");
        req.signals = Signals {
            traces: true,
            metrics: false,
        };
        let cancel = CancelToken::new();
        // One call up front: fails loudly on a broken input instead of
        // timing an error path, and warms the page cache.
        let out = process_build(&req, &cancel).expect("process_build");
        assert_eq!(
            out.summary.spans,
            input.rules + 7,
            "N rules + 6 phases + root (perf.md)"
        );
        drop(out);

        let (samples, secs, mode) = sampling(input.rules);
        group
            .sample_size(samples)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(secs))
            .sampling_mode(mode)
            .throughput(Throughput::Bytes(input.bytes));
        group.bench_with_input(BenchmarkId::new("process_build", input.rules), &req, |b, req| {
            b.iter(|| process_build(std::hint::black_box(req), &cancel).expect("process_build"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_process_build, bench_analytics);
criterion_main!(benches);
