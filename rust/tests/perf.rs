//! Rough timing of timing.json → OTLP trace bytes on a large synthetic
//! build (DESIGN §7 target: 100k rules in ≤ 150 ms, peak RSS ≤ 2× the file).
//! Not a benchmark harness and not asserted; run it on demand:
//!
//! ```sh
//! cargo test --release --test perf -- --ignored --nocapture
//! ```
//!
//! `CT_PERF_TIMING=<file>` uses an existing timing.json; otherwise
//! `gen_timing.py` from the corpus makes one with `CT_PERF_RULES` rules
//! (default 100 000).

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::fixture::INVOCATION_ID;
use compiletools_core::{process_build, BuildRequest, CancelToken};

fn input_dir(root: &std::path::Path) -> PathBuf {
    let dir = root.join(INVOCATION_ID);
    std::fs::create_dir(&dir).unwrap();
    let dest = dir.join("timing.json");
    match std::env::var_os("CT_PERF_TIMING") {
        Some(src) => {
            std::fs::copy(src, &dest).unwrap();
        }
        None => {
            let rules = std::env::var("CT_PERF_RULES").unwrap_or_else(|_| "100000".into());
            let script = common::reference::corpus_dir()
                .join("scripts")
                .join("gen_timing.py");
            let status = std::process::Command::new("python3")
                .arg(script)
                .arg(&rules)
                .arg(&dest)
                .arg("--no-validate")
                .status()
                .expect("python3 runs");
            assert!(status.success(), "gen_timing.py failed");
        }
    }
    dir
}

/// Peak RSS of this process in KiB (run with `CT_PERF_RUNS=1` to see the
/// peak of one call plus the test harness).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
#[ignore = "slow; run with --release --ignored --nocapture"]
fn large_build_to_otlp() {
    let root = tempfile::tempdir().unwrap();
    let dir = input_dir(root.path());
    let file_bytes = std::fs::metadata(dir.join("timing.json")).unwrap().len();
    let req = BuildRequest::new(&dir, "perf-host");
    let cancel = CancelToken::new();

    let runs: usize = std::env::var("CT_PERF_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let mut best = Duration::MAX;
    let mut out_len = 0;
    let mut spans = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let out = process_build(&req, &cancel).unwrap();
        best = best.min(t.elapsed());
        out_len = out.traces.as_ref().map_or(0, Vec::len);
        spans = out.summary.spans;
    }
    println!(
        "file {:.1} MB, {spans} spans, output {:.1} MB, best of {runs}: {:.1} ms, peak RSS of the process {:?} KiB",
        file_bytes as f64 / 1e6,
        out_len as f64 / 1e6,
        best.as_secs_f64() * 1e3,
        peak_rss_kib(),
    );
    stages(&dir);
    stages(&dir);
    stages(&dir);
}

/// Where the time goes, stage by stage, through the public building blocks
/// in the order `process_build` uses them (the output reuses the text's
/// buffer once the model is decoded).
fn stages(dir: &std::path::Path) {
    use compiletools_core::analytics;
    use compiletools_core::otlp::{
        analytics_root_attributes, build_resource, encode_trace_request_into, root_attributes, TraceInput,
    };
    use compiletools_core::timing::{self, aggregates, Clock};
    use compiletools_core::warnings::Warnings;
    use compiletools_core::Limits;

    let path = dir.join("timing.json");
    let limits = Limits::default();
    let mut w = Warnings::new();
    let t = Instant::now();
    let text = timing::load(&path, &limits, &mut w).unwrap();
    let t_load = t.elapsed();
    let t = Instant::now();
    let build = timing::decode::decode(&text.text, &path, &limits, &CancelToken::new(), &mut w).unwrap();
    let t_decode = t.elapsed();
    let t = Instant::now();
    let clock = Clock::for_build(&build).unwrap();
    let agg = aggregates::compute(&build, None);
    let req = BuildRequest::new(dir, "perf-host");
    let t_analytics = Instant::now();
    let analytics = analytics::analyze(&build, &clock);
    let mut root = root_attributes(&agg, 4096);
    root.extend(analytics_root_attributes(&analytics, 4096));
    let t_analytics = t_analytics.elapsed();
    let input = TraceInput {
        build: &build,
        clock: &clock,
        trace_id: [1; 16],
        resource: build_resource(&req, &build, INVOCATION_ID, &mut w),
        root_attributes: root,
        max_attribute_len: 4096,
        analytics: Some(&analytics),
    };
    let (bytes, _) = encode_trace_request_into(input, &[], text.text.into_bytes(), &mut w);
    let t_encode = t.elapsed();
    let t = Instant::now();
    drop(build);
    drop(bytes);
    let t_drop = t.elapsed();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "stages: read+repair {:.1} ms, decode {:.1} ms, spans+encode {:.1} ms (analytics {:.1} ms), free {:.1} ms",
        ms(t_load),
        ms(t_decode),
        ms(t_encode),
        ms(t_analytics),
        ms(t_drop)
    );
}
