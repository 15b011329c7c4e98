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

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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

        let (samples, secs, mode) = match input.rules {
            0..=2_000 => (50, 4, SamplingMode::Auto),
            2_001..=20_000 => (20, 5, SamplingMode::Auto),
            _ => (10, 8, SamplingMode::Flat),
        };
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

criterion_group!(benches, bench_process_build);
criterion_main!(benches);
