//! Scans one CAS cell and prints the result as one JSON object.
//!
//! ```text
//! cargo run --release --example cas_scan -- <obj|pch|pcm|exe> <cell> [threads] [--repeat N] [--cached]
//! ```
//!
//! `report` holds the five numbers under the key names of
//! `ct-cache-report --json` for that kind (formats.md §6.7), so a comparison is
//!
//! ```text
//! diff <(cas_scan obj CELL | jq -S .report) \
//!      <(ct-cache-report --variant=V --cas-objdir=CELL --json | jq -S '{"total-entries","total-bytes","unique-src-deps-count","duplicated-groups-count","wasted-bytes"}')
//! ```
//!
//! (the cell must end in `/<V>`; with only `--cas-objdir` the report is the
//! flat legacy object, otherwise take `."cas-<kind>dir-report"`).
//!
//! The scan goes through `scan_set`, the entry point the receiver calls,
//! with the cell as the one explicitly configured cell of the set (a missing
//! cell reports zeros); `otlp_bytes` is the size of the request it would
//! send.
//!
//! `--repeat N` scans N times in this process (default 1); `elapsed_ms` is
//! the best wall time of one scan, `runs_ms` all of them. `--cached` passes
//! one `ScanCache` to every scan: a first scan fills the cache
//! (`fill_ms`), then the N timed scans are the steady state of a periodic
//! scanner on an unchanged store; `cache` says what the last one reused
//! and how big the cache is. Every scan must give the same result (exit
//! status 1 otherwise, and on error).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use compiletools_core::cas::{CasKind, ScanCache, ScanLimits, StoreStats};
use compiletools_core::{scan_set, CancelToken, CasCell, CasOutput, CasRequest};
use serde_json::{json, Map, Value};

fn unique_key(kind: CasKind) -> &'static str {
    match kind {
        CasKind::Obj => "unique-src-deps-count",
        CasKind::Pch => "unique-headers-count",
        CasKind::Pcm | CasKind::Exe => "unique-buckets-count",
    }
}

fn to_json(kind: CasKind, s: &StoreStats, runs_ms: &[f64]) -> Value {
    let elapsed_ms = runs_ms.iter().copied().fold(f64::INFINITY, f64::min);
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
        "runs_ms": runs_ms,
    })
}

struct Args {
    kind: CasKind,
    cell: PathBuf,
    limits: ScanLimits,
    repeat: usize,
    cached: bool,
}

fn parse_args() -> Result<Args, String> {
    let usage = "usage: cas_scan <obj|pch|pcm|exe> <cell> [threads] [--repeat N] [--cached]";
    let mut positional = Vec::new();
    let (mut repeat, mut cached) = (1, false);
    let mut it = std::env::args_os().skip(1);
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--cached") => cached = true,
            Some("--repeat") => {
                repeat = it
                    .next()
                    .and_then(|n| n.to_str()?.parse().ok())
                    .filter(|n| *n > 0)
                    .ok_or(usage)?
            }
            Some(flag) if flag.starts_with("--") => return Err(format!("unknown option {flag}\n{usage}")),
            _ => positional.push(a),
        }
    }
    let mut positional = positional.into_iter();
    let (Some(kind), Some(cell), threads, None) = (
        positional.next(),
        positional.next(),
        positional.next(),
        positional.next(),
    ) else {
        return Err(usage.to_owned());
    };
    let kind = kind
        .to_str()
        .and_then(CasKind::parse)
        .ok_or_else(|| format!("unknown kind {kind:?}: obj, pch, pcm or exe"))?;
    let mut limits = ScanLimits::default();
    if let Some(t) = threads {
        limits.max_threads = t.to_str().and_then(|t| t.parse().ok()).ok_or(usage)?;
    }
    Ok(Args {
        kind,
        cell: PathBuf::from(cell),
        limits,
        repeat,
        cached,
    })
}

/// The one store a scan of a one-cell set reported, and the size of its
/// request; a cell that could not be listed is left out with a warning.
fn only_store(out: CasOutput) -> Result<(StoreStats, usize), String> {
    let bytes = out.metrics.map_or(0, |m| m.len());
    match <[_; 1]>::try_from(out.stores) {
        Ok([(_, stats)]) => Ok((stats, bytes)),
        Err(_) => Err(out.warnings.join("\n")),
    }
}

fn run(args: &Args) -> Result<Value, String> {
    let cancel = CancelToken::new();
    let mut cache = ScanCache::new();
    let mut request = CasRequest::new("cas_scan", 0);
    request.cells.push(CasCell {
        kind: args.kind,
        path: args.cell.clone(),
        explicit: true,
    });
    request.limits = args.limits;
    let otlp_bytes = std::cell::Cell::new(0);
    let scan = |cache: &mut ScanCache| -> Result<(StoreStats, f64), String> {
        let start = Instant::now();
        let result = scan_set(&request, &cancel, args.cached.then_some(cache));
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let (stats, bytes) = only_store(result.map_err(|e| e.to_string())?)?;
        otlp_bytes.set(bytes);
        Ok((stats, ms))
    };
    let fill = if args.cached {
        Some(scan(&mut cache)?)
    } else {
        None
    };
    let mut first: Option<StoreStats> = fill.as_ref().map(|(s, _)| s.clone());
    let mut runs_ms = Vec::with_capacity(args.repeat);
    for run in 0..args.repeat {
        let (stats, ms) = scan(&mut cache)?;
        runs_ms.push(ms);
        match &first {
            Some(f) if *f != stats => {
                return Err(format!("scan {run} differs from the first:\n{f:?}\n{stats:?}"));
            }
            Some(_) => {}
            None => first = Some(stats),
        }
    }
    let stats = first.expect("at least one scan");
    let mut out = to_json(args.kind, &stats, &runs_ms);
    out["mode"] = if args.cached { "cached" } else { "uncached" }.into();
    out["otlp_bytes"] = otlp_bytes.get().into();
    if let Some((_, fill_ms)) = fill {
        let r = cache.last_scan();
        let f = cache.footprint();
        out["fill_ms"] = fill_ms.into();
        out["cache"] = json!({
            "shards": r.shards,
            "reused": r.reused,
            "rescanned": r.rescanned,
            "too_recent": r.too_recent,
            "irregular": r.irregular,
            "cached_shards": f.shards,
            "cached_buckets": f.buckets,
            "cache_bytes": f.bytes,
        });
    }
    Ok(out)
}

fn main() -> ExitCode {
    match parse_args().and_then(|a| run(&a)) {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
