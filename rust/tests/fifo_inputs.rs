//! A FIFO at any path the core reads (issue 10, item 7): `timing.json`, the
//! ccache statslog (captured or configured), `rule_outcomes.log`, CAS
//! manifests and entries. Each must be refused at once, with a warning or
//! an error naming it, and the rest of the build or store still reported.
//! Opening a FIFO for reading waits for a writer, so a core that opens
//! before checking the type hangs here; every call runs under a deadline
//! that, when missed, opens the FIFOs for writing to free the call and
//! fails the test instead of hanging it.

use crate::common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use common::fixture::{timing_doc, Fixture};
use compiletools_core::cas::{scan_store, CasKind, StoreStats};
use compiletools_core::{process_build, BuildOutput, BuildRequest, CancelToken, Error};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;

/// Longest a call may take: reading these tiny inputs takes microseconds.
const DEADLINE: Duration = Duration::from_secs(5);

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(
        rc,
        0,
        "mkfifo {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

/// Runs `f` on another thread and returns its result, or fails the test
/// when it is still running after [`DEADLINE`] — after opening every FIFO
/// in `fifos` for writing, which releases a reader stuck in `open(2)`.
fn within_deadline<T: Send + 'static>(fifos: &[PathBuf], f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(v) => v,
        Err(_) => {
            for p in fifos {
                // Blocks until the stuck reader is there, which it is.
                let _ = std::fs::OpenOptions::new().write(true).open(p);
            }
            panic!("the call was still blocked after {DEADLINE:?} on a FIFO in {fifos:?}");
        }
    }
}

fn build_doc() -> String {
    timing_doc(
        r#"[{"name": "build_execution", "elapsed_s": 5.0, "start_s": 101.0, "end_s": 106.0,
             "rules": [{"name": "a.cpp", "rule_type": "compile", "target": "/o/a.o", "source": "/s/a.cpp",
                        "elapsed_s": 1.0, "start_s": 102.0, "end_s": 103.0}]}]"#,
    )
}

fn run(req: BuildRequest, fifos: &[PathBuf]) -> Result<BuildOutput, Error> {
    within_deadline(fifos, move || process_build(&req, &CancelToken::new()))
}

fn span_count(out: &BuildOutput) -> usize {
    let req = ExportTraceServiceRequest::decode(out.traces.as_deref().expect("traces")).unwrap();
    req.resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum()
}

#[test]
fn timing_json_fifo_is_an_io_error_not_a_hang() {
    let fx = Fixture::new("");
    let timing = fx.dir.join("timing.json");
    std::fs::remove_file(&timing).unwrap();
    mkfifo(&timing);
    match run(fx.request(), &[timing]) {
        Err(Error::Io { path, source }) => {
            assert!(path.ends_with("timing.json"), "{}", path.display());
            assert!(source.to_string().contains("a FIFO"), "{source}");
        }
        other => panic!("want an I/O error naming the FIFO, got {other:?}"),
    }
}

/// Each side file as a FIFO: one warning naming it, and the build's trace
/// (root, phase, rule) is still delivered.
#[test]
fn side_file_fifos_are_warnings_and_the_trace_is_delivered() {
    for (name, what) in [
        ("ccache.statslog", "ccache statslog"),
        ("rule_outcomes.log", "rule outcomes log"),
    ] {
        let fx = Fixture::new(build_doc());
        // Outside the invocation directory, like a configured
        // `capture.statslogs` path.
        let side = tempfile::tempdir().unwrap();
        let fifo = side.path().join(name);
        mkfifo(&fifo);
        let mut req = fx.request();
        if name == "ccache.statslog" {
            req.statslog = Some(fifo.clone());
        } else {
            req.outcomes = Some(fifo.clone());
        }
        let out = run(req, &[fifo]).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(span_count(&out), 3, "{name}: root, phase and rule");
        let warnings = &out.summary.warnings;
        assert_eq!(warnings.len(), 1, "{name}: {warnings:?}");
        assert!(
            warnings[0].starts_with(&format!("{what} ignored: ")) && warnings[0].contains("a FIFO"),
            "{name}: {warnings:?}"
        );
    }
}

/// Both side files FIFOs at once, with both signals asked for: the trace
/// arrives, metrics are absent (no ccache data), two warnings.
#[test]
fn both_side_files_fifos_at_once() {
    let fx = Fixture::new(build_doc());
    let statslog = fx.dir.join("ccache.statslog");
    let outcomes = fx.dir.join("rule_outcomes.log");
    mkfifo(&statslog);
    mkfifo(&outcomes);
    let mut req = fx.request();
    req.statslog = Some(statslog.clone());
    req.outcomes = Some(outcomes.clone());
    let out = run(req, &[statslog, outcomes]).unwrap();
    assert_eq!(span_count(&out), 3);
    assert!(out.metrics.is_none());
    assert_eq!(out.summary.warnings.len(), 2, "{:?}", out.summary.warnings);
}

fn scan(kind: CasKind, cell: &Path, fifos: &[PathBuf]) -> StoreStats {
    let cell = cell.to_path_buf();
    within_deadline(fifos, move || scan_store(kind, &cell, &CancelToken::new()))
        .unwrap_or_else(|e| panic!("scan: {e}"))
}

/// CAS stores: a manifest (pch/pcm `manifest.json`, exe `<entry>.manifest`)
/// that is a FIFO is not read and counted as skipped; the entry still
/// counts with its unknown key. An obj entry that is a FIFO is only
/// stat'ed, never opened.
#[test]
fn cas_fifos_are_skipped_and_the_store_reported() {
    let tmp = tempfile::tempdir().unwrap();
    for (kind, dir) in [(CasKind::Pch, "pch"), (CasKind::Pcm, "pcm")] {
        let cell = tmp.path().join(dir);
        let entry = cell.join("aaaaaaaaaaaaaaaa");
        std::fs::create_dir_all(&entry).unwrap();
        std::fs::write(entry.join("x.gch"), vec![0u8; 100]).unwrap();
        let manifest = entry.join("manifest.json");
        mkfifo(&manifest);
        let s = scan(kind, &cell, &[manifest]);
        assert_eq!((s.total_entries, s.total_bytes), (1, 100), "{kind}");
        assert_eq!(s.anomalies.manifests_skipped, 1, "{kind}");
    }

    let cell = tmp.path().join("exe");
    let shard = cell.join("a1");
    std::fs::create_dir_all(&shard).unwrap();
    std::fs::write(shard.join("tool_a1ef.exe"), vec![0u8; 50]).unwrap();
    let manifest = shard.join("tool_a1ef.exe.manifest");
    mkfifo(&manifest);
    let s = scan(CasKind::Exe, &cell, &[manifest]);
    assert_eq!((s.total_entries, s.total_bytes), (1, 50));
    assert_eq!(s.anomalies.manifests_skipped, 1);

    let cell = tmp.path().join("obj");
    let shard = cell.join("0d");
    std::fs::create_dir_all(&shard).unwrap();
    let object = shard.join("a_0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74.o");
    mkfifo(&object);
    let s = scan(CasKind::Obj, &cell, &[object]);
    assert_eq!((s.total_entries, s.total_bytes), (1, 0));
}
