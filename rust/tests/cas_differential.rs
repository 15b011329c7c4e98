//! Differential test against the real `ct-cache-report` (compiletools
//! 13.1.4): the zoo stores of `cas_support::zoo` hold every edge case of
//! formats.md §6 that compiletools survives, and both must give the same five
//! numbers per kind; the manifests that crash compiletools must crash it
//! (and not us); the one judgement-call deviation (numeric pch/pcm keys)
//! must differ exactly as documented. Symlinked manifests are the other
//! intended difference (we never follow a symlink, README "Faults and
//! hostile input"; compiletools does): we scan the zoo as built, then
//! ct-cache-report scans it with those links removed, so a refused manifest
//! must count exactly as a missing one.
//!
//! Needs the tool: set `CT_CACHE_REPORT` to its path (`make test-rust`
//! does, from the venv `tests/install-deps.sh realbuilds` makes). Without
//! it every test here prints "skipped" and passes, so `cargo test` works on
//! machines without Python; under `CI=true` a missing tool fails instead,
//! so CI cannot pass without running the comparison.

use crate::cas_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use cas_support::zoo::{cmd_hash_zoo, exe_zoo, obj_zoo, touch, write};
use cas_support::{reported, Five};
use compiletools_core::cas::{scan_store, scan_store_cached, CasKind, ScanCache, ScanLimits, StoreStats};
use compiletools_core::CancelToken;
use serde_json::Value;

const VARIANT: &str = "gcc.cxx17.debug";

fn tool() -> Option<PathBuf> {
    match std::env::var_os("CT_CACHE_REPORT") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ if in_ci() => panic!(
            "CI=true and CT_CACHE_REPORT is not set: the differential test must run in CI \
             (tests/install-deps.sh realbuilds installs ct-cache-report; `make test-rust` passes its path)"
        ),
        _ => {
            println!("CT_CACHE_REPORT not set: differential test skipped");
            None
        }
    }
}

/// `CI=true` (any case), as the Python suites read it.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
}

fn flag(kind: CasKind) -> &'static str {
    match kind {
        CasKind::Obj => "--cas-objdir",
        CasKind::Pch => "--cas-pchdir",
        CasKind::Pcm => "--cas-pcmdir",
        CasKind::Exe => "--cas-exedir",
    }
}

/// Runs `ct-cache-report --json` on `cells` from `cwd` (outside any git
/// work tree). Cells end in `/<VARIANT>` so that compiletools keeps them
/// as given (formats.md §6.1 step 4). `Err(stderr)` when it fails.
fn run(tool: &Path, cwd: &Path, cells: &[(CasKind, &Path)]) -> Result<Value, String> {
    let mut cmd = Command::new(tool);
    cmd.current_dir(cwd)
        .arg(format!("--variant={VARIANT}"))
        .arg("--json");
    for (kind, cell) in cells {
        assert!(cell.ends_with(VARIANT));
        cmd.arg(format!("{}={}", flag(*kind), cell.display()));
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("{}: {e}", tool.display()));
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("ct-cache-report output: {e}")))
}

/// Our scan; the cached scan (empty cache, then filled) must give the same.
fn ours(kind: CasKind, cell: &Path) -> StoreStats {
    let stats = scan_store(kind, cell, &CancelToken::new()).unwrap();
    let mut cache = ScanCache::new();
    for round in 0..2 {
        let cached =
            scan_store_cached(kind, cell, &CancelToken::new(), ScanLimits::default(), &mut cache).unwrap();
        assert_eq!(cached, stats, "{kind} cached scan {round}");
    }
    stats
}

/// Deletes every symlink named like a manifest below `dir`; returns how many.
fn remove_symlinked_manifests(dir: &Path) -> usize {
    let mut removed = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if meta.file_type().is_symlink() {
            if name == "manifest.json" || name.ends_with(".manifest") {
                std::fs::remove_file(&path).unwrap();
                removed += 1;
            }
        } else if meta.is_dir() {
            removed += remove_symlinked_manifests(&path);
        }
    }
    removed
}

#[test]
fn zoo_stores_match_ct_cache_report() {
    let Some(tool) = tool() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let cell = |kind: CasKind| root.join(kind.as_str()).join(VARIANT);
    let outside = |kind: CasKind| root.join(format!("outside-{kind}"));
    obj_zoo(&cell(CasKind::Obj), &outside(CasKind::Obj));
    cmd_hash_zoo(&cell(CasKind::Pch), &outside(CasKind::Pch), "header_realpath");
    cmd_hash_zoo(&cell(CasKind::Pcm), &outside(CasKind::Pcm), "bucket_key");
    exe_zoo(&cell(CasKind::Exe), &outside(CasKind::Exe));

    let cells: Vec<(CasKind, PathBuf)> = CasKind::all().into_iter().map(|k| (k, cell(k))).collect();
    let our_stats: Vec<StoreStats> = cells.iter().map(|(k, c)| ours(*k, c)).collect();
    let removed: usize = cells.iter().map(|(_, c)| remove_symlinked_manifests(c)).sum();
    assert!(removed > 0, "the zoo holds symlinked manifests");
    let args: Vec<(CasKind, &Path)> = cells.iter().map(|(k, c)| (*k, c.as_path())).collect();
    let report = run(&tool, root, &args).unwrap_or_else(|e| panic!("ct-cache-report failed:\n{e}"));
    for ((kind, _), stats) in cells.iter().zip(our_stats) {
        let want = reported(&report, *kind).unwrap();
        assert_eq!(Five::from(&stats), want, "{kind}: {:?}", stats.anomalies);
        // nothing in the zoo would crash compiletools
        assert_eq!(stats.anomalies.manifests_crash_compat, 0, "{kind}");
        println!("{kind}: {want:?} (anomalies {:?})", stats.anomalies);
    }
}

#[test]
fn explicit_missing_and_empty_cells_match() {
    let Some(tool) = tool() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing").join(VARIANT);
    let empty = tmp.path().join("empty").join(VARIANT);
    std::fs::create_dir_all(&empty).unwrap();
    let report = run(
        &tool,
        tmp.path(),
        &[(CasKind::Pch, &missing), (CasKind::Exe, &empty)],
    )
    .unwrap();
    assert_eq!(reported(&report, CasKind::Pch), Some(Five::default()));
    assert_eq!(reported(&report, CasKind::Exe), Some(Five::default()));
    assert_eq!(reported(&report, CasKind::Obj), None);
    let m = ours(CasKind::Pch, &missing);
    assert!(!m.exists);
    assert_eq!(Five::from(&m), Five::default());
    let e = ours(CasKind::Exe, &empty);
    assert!(e.exists);
    assert_eq!(Five::from(&e), Five::default());
}

#[test]
fn manifests_that_crash_compiletools_do_not_crash_us() {
    let Some(tool) = tool() else { return };
    let pch: Vec<(&str, Vec<u8>)> = vec![
        ("array top level", b"[1]".to_vec()),
        ("number top level", b"5".to_vec()),
        ("string top level", b"\"x\"".to_vec()),
        ("invalid UTF-8", b"{\"header_realpath\": \"/p/\xff\"}".to_vec()),
        ("array key", br#"{"header_realpath": [1]}"#.to_vec()),
        ("object key", br#"{"header_realpath": {"a": 1}}"#.to_vec()),
    ];
    for (what, manifest) in pch {
        let tmp = tempfile::tempdir().unwrap();
        let cell = tmp.path().join("pch").join(VARIANT);
        write(&cell.join("aaaaaaaaaaaaaaaa/manifest.json"), &manifest);
        touch(&cell.join("aaaaaaaaaaaaaaaa/x.gch"), 100);
        let r = run(&tool, tmp.path(), &[(CasKind::Pch, &cell)]);
        assert!(
            matches!(&r, Err(e) if e.contains("Traceback")),
            "pch {what}: compiletools did not crash: {r:?}"
        );
        let s = ours(CasKind::Pch, &cell);
        assert_eq!((s.total_entries, s.unique_buckets), (1, 1), "pch {what}");
        assert_eq!(s.anomalies.manifests_crash_compat, 1, "pch {what}");
    }
    let exe: Vec<(&str, Vec<u8>)> = vec![
        ("array top level", b"[1]".to_vec()),
        ("number top level", b"5".to_vec()),
        ("boolean top level", b"false".to_vec()),
        ("invalid UTF-8", b"{\"source_realpath\": \"/p/\xff\"}".to_vec()),
    ];
    for (what, manifest) in exe {
        let tmp = tempfile::tempdir().unwrap();
        let cell = tmp.path().join("exe").join(VARIANT);
        touch(&cell.join("aa/main_aaaa.exe"), 100);
        write(&cell.join("aa/main_aaaa.exe.manifest"), &manifest);
        let r = run(&tool, tmp.path(), &[(CasKind::Exe, &cell)]);
        assert!(
            matches!(&r, Err(e) if e.contains("Traceback")),
            "exe {what}: compiletools did not crash: {r:?}"
        );
        let s = ours(CasKind::Exe, &cell);
        assert_eq!(
            (s.total_entries, s.unique_buckets, s.total_bytes),
            (1, 1, 100),
            "exe {what}"
        );
        assert_eq!(s.anomalies.manifests_crash_compat, 1, "exe {what}");
    }
}

#[test]
fn numeric_keys_are_the_documented_deviation() {
    let Some(tool) = tool() else { return };
    for (kind, field) in [(CasKind::Pch, "header_realpath"), (CasKind::Pcm, "bucket_key")] {
        let tmp = tempfile::tempdir().unwrap();
        let cell = tmp.path().join(kind.as_str()).join(VARIANT);
        for d in ["aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"] {
            write(
                &cell.join(format!("{d}/manifest.json")),
                format!(r#"{{"{field}": 5}}"#).as_bytes(),
            );
        }
        let report = run(&tool, tmp.path(), &[(kind, &cell)]).unwrap();
        let theirs = reported(&report, kind).unwrap();
        let s = ours(kind, &cell);
        // compiletools: one bucket keyed by the number 5; us: two unknowns
        assert_eq!((theirs.unique_buckets, theirs.duplicate_groups), (1, 1), "{kind}");
        assert_eq!((s.unique_buckets, s.duplicate_groups), (2, 0), "{kind}");
        assert_eq!(
            (s.total_entries, s.total_bytes),
            (theirs.total_entries, theirs.total_bytes),
            "{kind}"
        );
        assert_eq!(s.anomalies.manifests_non_string_key, 2, "{kind}");
    }
}
