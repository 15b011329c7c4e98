//! Processes one build once with `process_build` and exits: the process to
//! put under `/usr/bin/time -v` for the peak RSS of one call (design.md §7:
//! ≤ 2× the timing.json), and a way to save the OTLP bytes for comparison.
//!
//! ```text
//! cargo run --release --example process_one -- <invocation-dir> [--out FILE] [--metrics-out FILE]
//!     [--statslog FILE] [--outcomes FILE] [--build-graph FILE] [--all-signals] [--metrics-as-spans] [--summary]
//! ```
//!
//! Traces only by default, as the receiver asks when only a traces consumer
//! exists. Prints one line: file size, spans, output size, time of the call,
//! and this process's peak RSS (VmHWM) against the file size; `--summary`
//! adds the call's summary (counts and warnings). Exit status 1 on error, 2
//! on bad usage.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use compiletools_core::{process_build, BuildRequest, CancelToken, Signals};

const USAGE: &str = "usage: process_one <invocation-dir> [--out FILE] [--metrics-out FILE] \
[--statslog FILE] [--outcomes FILE] [--build-graph FILE] [--all-signals] [--metrics-as-spans] [--summary]";

fn vmhwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[derive(Default)]
struct Args {
    dir: Option<PathBuf>,
    out: Option<PathBuf>,
    metrics_out: Option<PathBuf>,
    statslog: Option<PathBuf>,
    outcomes: Option<PathBuf>,
    build_graph: Option<PathBuf>,
    all_signals: bool,
    metrics_as_spans: bool,
    summary: bool,
}

fn parse_args() -> Option<Args> {
    let mut args = std::env::args_os().skip(1);
    let mut a = Args::default();
    while let Some(arg) = args.next() {
        let mut value = || args.next().map(PathBuf::from);
        match arg.to_str() {
            Some("--out") => a.out = Some(value()?),
            Some("--metrics-out") => a.metrics_out = Some(value()?),
            Some("--statslog") => a.statslog = Some(value()?),
            Some("--outcomes") => a.outcomes = Some(value()?),
            Some("--build-graph") => a.build_graph = Some(value()?),
            Some("--all-signals") => a.all_signals = true,
            Some("--metrics-as-spans") => a.metrics_as_spans = true,
            Some("--summary") => a.summary = true,
            _ if a.dir.is_none() => a.dir = Some(PathBuf::from(arg)),
            _ => return None,
        }
    }
    a.dir.is_some().then_some(a)
}

fn main() -> ExitCode {
    let Some(args) = parse_args() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let dir = args.dir.unwrap_or_default();
    let file_bytes = std::fs::metadata(dir.join("timing.json")).map_or(0, |m| m.len());
    let mut req = BuildRequest::new(&dir, "bench-host");
    req.statslog = args.statslog;
    req.outcomes = args.outcomes;
    req.build_graph = args.build_graph;
    req.metrics_as_spans = args.metrics_as_spans;
    if !args.all_signals {
        req.signals = Signals {
            traces: true,
            metrics: false,
        };
    }
    let t = Instant::now();
    let out = match process_build(&req, &CancelToken::new()) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("{}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    };
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let hwm = vmhwm_kib().unwrap_or(0);
    println!(
        "file {file_bytes} B, {} spans, traces {} B, metrics {} B, {ms:.1} ms, VmHWM {hwm} KiB = {:.2}x the file",
        out.summary.spans,
        out.traces.as_ref().map_or(0, Vec::len),
        out.metrics.as_ref().map_or(0, Vec::len),
        (hwm * 1024) as f64 / file_bytes.max(1) as f64,
    );
    if args.summary {
        println!("{:#?}", out.summary);
    }
    for (path, bytes) in [(&args.out, &out.traces), (&args.metrics_out, &out.metrics)] {
        if let (Some(path), Some(bytes)) = (path, bytes) {
            if let Err(e) = std::fs::write(path, bytes) {
                eprintln!("{}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
