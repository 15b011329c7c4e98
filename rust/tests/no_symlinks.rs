//! No read outside the roots (issue 13): a symbolic link in the name of any
//! file the core opens — `timing.json`, the ccache statslog,
//! `rule_outcomes.log`, a CAS manifest — or an invocation directory that is
//! one, is refused without reading the file it points at. Each target here
//! holds a secret the output must never carry.

use crate::common;

use std::os::unix::fs::symlink;
use std::path::Path;

use common::fixture::{timing_doc, Fixture};
use compiletools_core::cas::{scan_store, CasKind};
use compiletools_core::{process_build, BuildRequest, CancelToken, Error};

const REFUSED: &str = "a symbolic link (or a link loop); not followed";

fn build_doc() -> String {
    timing_doc(
        r#"[{"name": "build_execution", "elapsed_s": 5.0, "start_s": 101.0, "end_s": 106.0,
             "rules": [{"name": "a.cpp", "rule_type": "compile", "target": "/o/a.o", "source": "/s/a.cpp",
                        "elapsed_s": 1.0, "start_s": 102.0, "end_s": 103.0}]}]"#,
    )
}

/// A file outside the build: a valid timing document (so following the link
/// would produce a trace) naming a phase the test looks for.
fn outside_file(dir: &Path, name: &str, content: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

#[test]
fn symlinked_timing_json_is_refused_not_sent() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside_file(
        outside.path(),
        "secret.json",
        &timing_doc(r#"[{"name": "SECRET", "start_s": 101.0, "end_s": 102.0}]"#),
    );
    let fx = Fixture::new("");
    let timing = fx.dir.join("timing.json");
    std::fs::remove_file(&timing).unwrap();
    symlink(&secret, &timing).unwrap();
    match fx.run() {
        Err(Error::Io { path, source }) => {
            assert_eq!(path, timing);
            assert!(source.to_string().starts_with(REFUSED), "{source}");
        }
        other => panic!("want an I/O error refusing the symlink, got {other:?}"),
    }
}

#[test]
fn symlinked_invocation_directory_is_refused() {
    let fx = Fixture::new(build_doc());
    assert!(fx.run().is_ok(), "the real directory reads");
    let links = tempfile::tempdir().unwrap();
    let link = links.path().join("20261130T034340-4242");
    symlink(&fx.dir, &link).unwrap();
    match process_build(&BuildRequest::new(&link, "host-a"), &CancelToken::new()) {
        Err(Error::Io { path, source }) => {
            assert_eq!(path, link);
            assert!(source.to_string().starts_with(REFUSED), "{source}");
        }
        other => panic!("want the symlinked directory refused, got {other:?}"),
    }
}

/// Each side file in the invocation directory as a symlink to a file
/// outside: a warning naming the refusal, nothing of the target read, and
/// the build's trace still delivered.
#[test]
fn symlinked_side_files_are_warnings_and_not_read() {
    let outside = tempfile::tempdir().unwrap();
    // A statslog the parser would count, and an outcomes line it would merge.
    let statslog = outside_file(outside.path(), "stats", "# /s/a.cpp\ndirect_cache_hit\n");
    let outcomes = outside_file(outside.path(), "outcomes", "/o/a.o\tcompile\t1\t0\n");
    for (name, what, target) in [
        ("ccache.statslog", "ccache statslog", &statslog),
        ("rule_outcomes.log", "rule outcomes log", &outcomes),
    ] {
        let fx = Fixture::new(build_doc());
        let link = fx.dir.join(name);
        symlink(target, &link).unwrap();
        let mut req = fx.request();
        if name == "ccache.statslog" {
            req.statslog = Some(link.clone());
        } else {
            req.outcomes = Some(link.clone());
        }
        let out = fx.run_with(&req).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(out.traces.is_some(), "{name}: the trace is still sent");
        assert!(out.metrics.is_none(), "{name}: no ccache data was read");
        let w = &out.summary.warnings;
        assert_eq!(w.len(), 1, "{name}: {w:?}");
        assert!(
            w[0].starts_with(&format!("{what} ignored: ")) && w[0].contains(REFUSED),
            "{name}: {w:?}"
        );
    }
}

/// A side file outside the invocation directory (a configured
/// `capture.statslogs` path, a captured copy) is opened by its path: a link
/// in its own name is refused too.
#[test]
fn symlinked_side_file_outside_the_directory_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let statslog = outside_file(outside.path(), "stats", "# /s/a.cpp\ndirect_cache_hit\n");
    let link = outside.path().join("ccache.statslog");
    symlink(&statslog, &link).unwrap();
    let fx = Fixture::new(build_doc());
    let mut req = fx.request();
    req.statslog = Some(link);
    let out = fx.run_with(&req).unwrap();
    assert!(out.metrics.is_none());
    assert_eq!(out.summary.warnings.len(), 1, "{:?}", out.summary.warnings);
    assert!(out.summary.warnings[0].contains(REFUSED));
    // The same file by its real name is read: the refusal is the link's.
    req.statslog = Some(statslog);
    assert!(fx.run_with(&req).unwrap().metrics.is_some());
}

/// A CAS manifest that is a symlink is not read (ct-cache-report follows
/// it): counted as skipped, the entry still counted with its unknown key.
#[test]
fn symlinked_cas_manifest_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = outside_file(tmp.path(), "secret.json", r#"{"key": "SECRET"}"#);
    let cell = tmp.path().join("pch");
    let entry = cell.join("aaaaaaaaaaaaaaaa");
    std::fs::create_dir_all(&entry).unwrap();
    std::fs::write(entry.join("x.gch"), vec![0u8; 100]).unwrap();
    symlink(&outside, entry.join("manifest.json")).unwrap();
    let s = scan_store(CasKind::Pch, &cell, &CancelToken::new()).unwrap();
    assert_eq!((s.total_entries, s.total_bytes), (1, 100));
    assert_eq!(s.anomalies.manifests_skipped, 1);
}
