//! The real entry point on disk: the input, split at its first two NUL
//! bytes, becomes `timing.json`, then (when present) a ccache statslog and a
//! `rule_outcomes.log` of one invocation directory, processed by
//! `process_build` with every signal asked for. Whatever the pipeline reads
//! of those side files is fuzzed through the same call as it gains them.

#![no_main]

#[path = "../common/trace_check.rs"]
mod trace_check;

use std::path::PathBuf;
use std::sync::OnceLock;

use compiletools_core::{process_build, BuildRequest, CancelToken, Limits, Signals};
use libfuzzer_sys::fuzz_target;

/// One invocation directory for the whole run, rewritten for every input.
fn invocation_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("ct-fuzz-process-build-{}", std::process::id()));
        let dir = base.join("20260101T120000-4242");
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = invocation_dir();
    let mut parts = data.splitn(3, |&b| b == 0);
    let timing = parts.next().unwrap_or_default();
    let statslog = parts.next();
    let outcomes = parts.next();
    std::fs::write(dir.join("timing.json"), timing).expect("write timing.json");
    let mut req = BuildRequest::new(dir, "fuzz-host");
    req.signals = Signals::all();
    req.limits = Limits {
        max_file_bytes: 1 << 20,
        max_events: 2_000,
        max_depth: 16,
        max_attribute_len: 64,
    };
    req.metrics_as_spans = data.len() % 2 == 1;
    if let Some(s) = statslog {
        let p = dir.join("ccache.statslog");
        std::fs::write(&p, s).expect("write statslog");
        req.statslog = Some(p);
    }
    if let Some(o) = outcomes {
        let p = dir.join("rule_outcomes.log");
        std::fs::write(&p, o).expect("write rule_outcomes.log");
        req.outcomes = Some(p);
    }
    if let Ok(out) = process_build(&req, &CancelToken::new()) {
        let traces = out.traces.expect("traces were asked for");
        trace_check::check_trace(&traces, out.summary.spans);
        if let Some(m) = out.metrics {
            trace_check::check_metrics(&m);
        }
    }
});
