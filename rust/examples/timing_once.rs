//! Processes one build with `process_build` (traces only, as the receiver
//! asks when only a traces consumer exists) and prints one JSON line. Used by
//! `rust/bench/compare_ctcake.py` for peak RSS (`/usr/bin/time -v` around
//! `--runs 1`) and best-of-N wall time.
//!
//! ```text
//! cargo run --release --example timing_once -- <invocation-dir | .../timing.json> [--runs N] [--all-signals] [--build-metrics] [--no-time-trace] [--stream SPANS]
//! ```
//!
//! `--stream SPANS` times the receiver's path instead: `open_build`, then
//! every chunk of at most SPANS spans encoded one after the other (each
//! dropped before the next, as the receiver frees it after decoding).
//! `--build-metrics` also asks for the build metrics with the host metric
//! identity (the receiver's defaults; implies `--all-signals`).
//! `--no-time-trace` turns `time_trace` off (to measure what looking for
//! clang traces costs a build that has none).
//!
//! Output keys: `file_bytes`, `spans`, `otlp_bytes`, `runs_ms` (each
//! `process_build` call), `best_ms`, `median_ms`, `vmhwm_kib` (this
//! process's peak RSS from /proc, a cross-check of `time -v`),
//! `vmrss_kib_after` (its RSS at the end: what the core keeps between builds,
//! see `compiletools_core::retain`). Each output is handed back with
//! `BuildOutput::recycle`, as the receiver does (streamed: the chunks are
//! dropped). Exit status 1 on error.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use compiletools_core::pipeline::open_build;
use compiletools_core::{
    process_build, BuildOutput, BuildRequest, CancelToken, Error, MetricIdentity, Signals,
};

fn usage() -> ExitCode {
    eprintln!(
        "usage: timing_once <invocation-dir | timing.json> [--runs N] [--all-signals] [--build-metrics] [--no-time-trace] [--stream SPANS]"
    );
    ExitCode::from(2)
}

fn vm_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let mut target: Option<PathBuf> = None;
    let mut runs: usize = 1;
    let mut no_time_trace = false;
    let mut all_signals = false;
    let mut stream: Option<usize> = None;
    let mut build_metrics = false;
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("--runs") => match args.next().and_then(|r| r.to_str()?.parse().ok()) {
                Some(r) if r > 0 => runs = r,
                _ => return usage(),
            },
            Some("--all-signals") => all_signals = true,
            Some("--stream") => match args.next().and_then(|r| r.to_str()?.parse().ok()) {
                Some(n) => stream = Some(n),
                None => return usage(),
            },
            Some("--build-metrics") => (all_signals, build_metrics) = (true, true),
            Some("--no-time-trace") => no_time_trace = true,
            _ if target.is_none() => target = Some(PathBuf::from(a)),
            _ => return usage(),
        }
    }
    let Some(target) = target else {
        return usage();
    };
    // A path to the file itself names its invocation directory.
    let dir = if target.is_file() {
        match target.parent() {
            Some(p) if target.file_name().is_some_and(|n| n == "timing.json") => p.to_path_buf(),
            _ => {
                eprintln!("{}: the file must be named timing.json", target.display());
                return ExitCode::from(2);
            }
        }
    } else {
        target
    };
    let file_bytes = std::fs::metadata(dir.join("timing.json")).map_or(0, |m| m.len());

    let mut req = BuildRequest::new(&dir, "bench-host");
    req.time_trace.enabled = !no_time_trace;
    if build_metrics {
        req.build_metrics = true;
        req.metric_identity = MetricIdentity::Host;
    }
    if !all_signals {
        req.signals = Signals {
            traces: true,
            metrics: false,
        };
    }
    let cancel = CancelToken::new();
    let mut runs_ms = Vec::with_capacity(runs);
    let (mut spans, mut otlp_bytes) = (0, 0);
    for _ in 0..runs {
        let t = Instant::now();
        let out = match run(&req, &cancel, stream) {
            Ok(out) => out,
            Err(e) => {
                eprintln!("{}: {e}", dir.display());
                return ExitCode::FAILURE;
            }
        };
        // Timed up to the output being ready, as the FFI hands it over; the
        // drop of the buffers is not part of the work the receiver waits for.
        runs_ms.push(t.elapsed().as_secs_f64() * 1e3);
        spans = out.summary.spans;
        otlp_bytes = out.traces.as_ref().map_or(0, Vec::len) + out.metrics.as_ref().map_or(0, Vec::len);
        // As the receiver does once the bytes are sent (`ct_build_result_free`);
        // a streamed build's `traces` is only a stand-in of the chunks' size.
        if stream.is_none() {
            out.recycle();
        }
    }
    let mut sorted = runs_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let report = serde_json::json!({
        "invocation_dir": dir.display().to_string(),
        "file_bytes": file_bytes,
        "spans": spans,
        "otlp_bytes": otlp_bytes,
        "runs_ms": runs_ms,
        "best_ms": sorted[0],
        "median_ms": sorted[sorted.len() / 2],
        "vmhwm_kib": vm_kib("VmHWM:"),
        "vmrss_kib_after": vm_kib("VmRSS:"),
    });
    println!("{report}");
    ExitCode::SUCCESS
}

/// One build through `process_build`, or through `open_build` and its
/// chunks (`traces` then holds the total size in a vector of that length
/// made only for the count).
fn run(req: &BuildRequest, cancel: &CancelToken, stream: Option<usize>) -> Result<BuildOutput, Error> {
    let Some(max_spans) = stream else {
        return process_build(req, cancel);
    };
    let opened = open_build(req, cancel, max_spans)?;
    let mut out = opened.output;
    if let Some(chunks) = opened.traces {
        let mut total = 0;
        for k in 0..chunks.len() {
            total += chunks.chunk(k).map_or(0, |c| c.len());
        }
        out.traces = Some(vec![0; total]);
    }
    Ok(out)
}
