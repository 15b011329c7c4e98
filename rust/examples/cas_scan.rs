//! Scans one CAS cell and prints the result as one JSON object.
//!
//! ```text
//! cargo run --release --example cas_scan -- <obj|pch|pcm|exe> <cell> [threads]
//! ```
//!
//! `report` holds the five numbers under the key names of
//! `ct-cache-report --json` for that kind (spec §6.7), so a comparison is
//!
//! ```text
//! diff <(cas_scan obj CELL | jq -S .report) \
//!      <(ct-cache-report --variant=V --cas-objdir=CELL --json | jq -S '{"total-entries","total-bytes","unique-src-deps-count","duplicated-groups-count","wasted-bytes"}')
//! ```
//!
//! (the cell must end in `/<V>`; with only `--cas-objdir` the report is the
//! flat legacy object, otherwise take `."cas-<kind>dir-report"`).
//! `elapsed_ms` is the wall time of the scan alone; exit status 1 on error.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use compiletools_core::cas::{scan_store_with, CasKind, ScanLimits, StoreStats};
use compiletools_core::CancelToken;
use serde_json::{json, Map, Value};

fn unique_key(kind: CasKind) -> &'static str {
    match kind {
        CasKind::Obj => "unique-src-deps-count",
        CasKind::Pch => "unique-headers-count",
        CasKind::Pcm | CasKind::Exe => "unique-buckets-count",
    }
}

fn to_json(kind: CasKind, s: &StoreStats, elapsed_ms: f64) -> Value {
    let mut report = Map::new();
    report.insert("total-entries".into(), s.total_entries.into());
    report.insert("total-bytes".into(), s.total_bytes.into());
    report.insert(unique_key(kind).into(), s.unique_buckets.into());
    report.insert("duplicated-groups-count".into(), s.duplicate_groups.into());
    report.insert("wasted-bytes".into(), s.wasted_bytes.into());
    let anomalies: Map<String, Value> = s
        .anomalies
        .counters()
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).into()))
        .collect();
    json!({
        "kind": kind.as_str(),
        "cell": s.cell.to_string_lossy(),
        "exists": s.exists,
        "total_bytes": s.total_bytes,
        "total_entries": s.total_entries,
        "unique_buckets": s.unique_buckets,
        "wasted_bytes": s.wasted_bytes,
        "duplicate_groups": s.duplicate_groups,
        "report": report,
        "anomalies": anomalies,
        "warnings": s.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
        "warnings_suppressed": s.warnings_suppressed,
        "elapsed_ms": elapsed_ms,
    })
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let usage = "usage: cas_scan <obj|pch|pcm|exe> <cell> [threads]";
    let (Some(kind), Some(cell), threads, None) = (args.next(), args.next(), args.next(), args.next()) else {
        eprintln!("{usage}");
        return ExitCode::FAILURE;
    };
    let Some(kind) = kind.to_str().and_then(CasKind::parse) else {
        eprintln!("unknown kind {kind:?}: obj, pch, pcm or exe");
        return ExitCode::FAILURE;
    };
    let mut limits = ScanLimits::default();
    if let Some(t) = threads {
        match t.to_str().and_then(|t| t.parse().ok()) {
            Some(n) => limits.max_threads = n,
            None => {
                eprintln!("{usage}");
                return ExitCode::FAILURE;
            }
        }
    }
    let cell = PathBuf::from(cell);
    let start = Instant::now();
    let result = scan_store_with(kind, &cell, &CancelToken::new(), limits);
    let elapsed_ms = start.elapsed().as_secs_f64() * 1e3;
    match result {
        Ok(stats) => {
            println!("{}", to_json(kind, &stats, elapsed_ms));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
