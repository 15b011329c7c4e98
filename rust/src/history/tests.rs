//! Generated builds whose history numbers are known by construction.

use serde_json::{json, Value};

use super::*;
use crate::timing::model::parse_for_test;
use crate::timing::EventId;

/// A compile rule of `dur` seconds starting at `at`; `layer` as the
/// statslog attribution or compiletools leaves it.
fn compile(target: &str, at: f64, dur: f64, layer: &str) -> Value {
    json!({"name": target, "rule_type": "compile", "target": target, "source": format!("/s/{target}.cpp"),
           "start_s": at, "end_s": at + dur,
           "metadata": {"cas.hit": layer == "cas", "ct.rule.cache_layer": layer}})
}

/// Build `n` of a series: starts `n` hours after the first.
fn build(n: u32, rules: Vec<Value>) -> Build {
    parse_for_test(
        &json!({
            "timestamp": format!("2026-11-30T{:02}:00:10+00:00", n), "start_s": 100.0, "total_elapsed_s": 10.0,
            "variant": "gcc.debug", "backend": "ninja",
            "phases": [{"name": "build_execution", "start_s": 100.0, "end_s": 110.0, "rules": rules}],
        })
        .to_string(),
    )
}

/// Evaluates and commits `b` as the receiver does (id = `name`).
fn run(h: &History, b: &Build, name: &str) -> HistoryFacts {
    let facts = evaluate_only(h, b, name);
    h.commit(name);
    facts
}

fn evaluate_only(h: &History, b: &Build, name: &str) -> HistoryFacts {
    let clock = Clock::for_build(b).unwrap();
    let key = BuildKey::new(clock.root_interval().0, &[name.len() as u8; 16]);
    h.evaluate(b, &clock, "host", key, name)
}

fn rule_named(b: &Build, name: &str) -> EventId {
    b.rule_ids()
        .into_iter()
        .find(|&id| b.event(id).is_some_and(|e| e.name() == name))
        .unwrap()
}

fn close(got: Option<f64>, want: f64) {
    let got = got.expect("value present");
    assert!((got - want).abs() < 1e-9, "{got} != {want}");
}

#[test]
fn a_compile_then_hits_give_the_time_saved() {
    let h = History::new(HistoryConfig::default());
    let b1 = build(
        1,
        vec![
            compile("a.o", 101.0, 4.0, "compiled"),
            compile("b.o", 101.0, 2.0, "other"),
        ],
    );
    let f1 = run(&h, &b1, "b1");
    assert_eq!(f1.summary().time_saved_s, None, "nothing to compare with yet");
    // Only the rebuild reason: these targets are not CAS names.
    for id in b1.rule_ids() {
        let r = f1.rule(id).unwrap();
        assert_eq!((r.time_saved_s, r.duration_delta_s), (None, None));
        assert_eq!(r.rebuild.unwrap().reason, crate::rebuild::RebuildReason::NotCas);
    }

    let b2 = build(
        2,
        vec![
            compile("a.o", 101.0, 0.5, "ccache"),
            compile("b.o", 101.0, 2.5, "cas"),
        ],
    );
    let f2 = run(&h, &b2, "b2");
    // a: 4 − 0.5; b (cas slower than its 2 s compile): 2 − 2.5.
    close(f2.rule(rule_named(&b2, "a.o")).unwrap().time_saved_s, 3.5);
    close(f2.rule(rule_named(&b2, "b.o")).unwrap().time_saved_s, -0.5);
    let s = f2.summary();
    close(s.time_saved_s, 3.0);
    assert_eq!(s.slower_hits, 1);
    assert_eq!(
        s.saved_by_layer,
        [(CacheLayer::Cas, -0.5), (CacheLayer::Ccache, 3.5)]
    );
    // Hits are not compiles: the next hit still compares with the compile.
    let b3 = build(3, vec![compile("a.o", 101.0, 1.0, "cas")]);
    close(
        run(&h, &b3, "b3")
            .rule(rule_named(&b3, "a.o"))
            .unwrap()
            .time_saved_s,
        3.0,
    );
}

#[test]
fn compiles_get_the_delta_from_the_median_of_the_last_k() {
    let h = History::new(HistoryConfig {
        max_targets: 10,
        window: 3,
    });
    let durations = [1.0, 5.0, 2.0, 3.0];
    for (n, d) in durations.iter().enumerate() {
        let b = build(n as u32, vec![compile("x.o", 101.0, *d, "compiled")]);
        run(&h, &b, &format!("b{n}"));
    }
    // Last 3 before this build: 5, 2, 3 → median 3; 4.5 − 3.
    let b = build(
        9,
        vec![
            compile("x.o", 101.0, 4.5, "compiled"),
            compile("new.o", 101.0, 9.0, "compiled"),
        ],
    );
    let f = run(&h, &b, "b9");
    close(f.rule(rule_named(&b, "x.o")).unwrap().duration_delta_s, 1.5);
    assert_eq!(
        f.rule(rule_named(&b, "new.o")).unwrap().duration_delta_s,
        None,
        "no earlier compile"
    );
    assert_eq!(f.summary().top_regressions, ["compile.s/x.o"]);
    assert_eq!(f.summary().time_saved_s, None);
    // One earlier compile (9 s), then two (9 s, 1 s: an even count, the
    // mean of the middle two).
    let b = build(10, vec![compile("new.o", 101.0, 1.0, "compiled")]);
    close(
        run(&h, &b, "b10")
            .rule(rule_named(&b, "new.o"))
            .unwrap()
            .duration_delta_s,
        -8.0,
    );
    let b = build(11, vec![compile("new.o", 101.0, 1.0, "compiled")]);
    // Median of 9 and 1 = 5.
    close(
        run(&h, &b, "b11")
            .rule(rule_named(&b, "new.o"))
            .unwrap()
            .duration_delta_s,
        -4.0,
    );
}

#[test]
fn top_regressions_are_the_largest_positive_deltas_largest_first() {
    let h = History::new(HistoryConfig::default());
    let names: Vec<String> = (0..12).map(|i| format!("r{i:02}.o")).collect();
    let rules = |scale: f64| -> Vec<Value> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| compile(n, 101.0, 1.0 + scale * i as f64, "compiled"))
            .collect()
    };
    run(&h, &build(1, rules(0.0)), "b1");
    let b = build(2, rules(0.1));
    let f = run(&h, &b, "b2");
    // Deltas 0.1·i: r00 has 0 (not a regression); the 10 largest, largest first.
    let want: Vec<String> = (2..12).rev().map(|i| format!("compile.s/r{i:02}.o")).collect();
    assert_eq!(f.summary().top_regressions, want);
}

#[test]
fn a_re_read_gives_identical_numbers() {
    let h = History::new(HistoryConfig {
        max_targets: 100,
        window: 2,
    });
    run(&h, &build(1, vec![compile("a.o", 101.0, 3.0, "compiled")]), "b1");
    run(&h, &build(2, vec![compile("a.o", 101.0, 5.0, "compiled")]), "b2");
    let b3 = build(
        3,
        vec![
            compile("a.o", 101.0, 7.0, "compiled"),
            compile("c.o", 101.0, 1.0, "compiled"),
        ],
    );
    let first = evaluate_only(&h, &b3, "b3");
    close(first.rule(rule_named(&b3, "a.o")).unwrap().duration_delta_s, 3.0);
    // A failed delivery: read again before the checkpoint (still staged).
    assert_eq!(evaluate_only(&h, &b3, "b3"), first);
    // Committed, then read again (a crash after the history was saved but
    // before the checkpoint): its own compiles are invisible to it, and the
    // window still holds what it saw — same numbers.
    h.commit("b3");
    assert_eq!(evaluate_only(&h, &b3, "b3"), first);
    h.commit("b3");
    assert_eq!(evaluate_only(&h, &b3, "b3"), first);
    // A crash before the checkpoint: restart from the saved bytes.
    let saved = h.save();
    let restarted = History::new(HistoryConfig {
        max_targets: 100,
        window: 2,
    });
    assert_eq!(restarted.restore(&saved), Ok(2));
    assert_eq!(evaluate_only(&restarted, &b3, "b3"), first);
    // A newer build committed meanwhile is invisible to an older one.
    let b4 = build(4, vec![compile("c.o", 101.0, 100.0, "compiled")]);
    run(&h, &b4, "b4");
    assert_eq!(evaluate_only(&h, &b3, "b3"), first);
}

#[test]
fn only_committed_builds_are_remembered_and_staging_is_bounded() {
    let h = History::new(HistoryConfig::default());
    let b1 = build(1, vec![compile("a.o", 101.0, 3.0, "compiled")]);
    evaluate_only(&h, &b1, "b1");
    let b2 = build(2, vec![compile("a.o", 101.0, 1.0, "cas")]);
    assert_eq!(evaluate_only(&h, &b2, "b2").summary().time_saved_s, None);
    assert!(h.discard("b1"));
    assert_eq!(h.commit("b1"), 0);
    assert_eq!(h.footprint().targets, 0);
    for i in 0..MAX_STAGED_BUILDS + 5 {
        evaluate_only(&h, &b1, &format!("x{i}"));
    }
    assert_eq!(h.footprint().staged_builds, MAX_STAGED_BUILDS as u64);
    assert_eq!(
        h.commit("b2") + h.commit("x4"),
        0,
        "the oldest stagings were dropped"
    );
    assert_eq!(h.commit("x10"), 1);
}

#[test]
fn the_lru_bound_holds_and_forgets_the_least_recent() {
    let h = History::new(HistoryConfig {
        max_targets: 3,
        window: 5,
    });
    let rules = |names: &[&str]| names.iter().map(|n| compile(n, 101.0, 1.0, "compiled")).collect();
    run(&h, &build(1, rules(&["a.o", "b.o", "c.o"])), "b1");
    run(&h, &build(2, rules(&["a.o"])), "b2");
    run(&h, &build(3, rules(&["d.o"])), "b3"); // forgets b.o
    let fp = h.footprint();
    assert_eq!((fp.targets, fp.evicted, fp.compiles), (3, 1, 4));
    let b = build(
        4,
        vec![
            compile("b.o", 101.0, 0.5, "cas"),
            compile("a.o", 101.0, 0.5, "cas"),
        ],
    );
    let f = run(&h, &b, "b4");
    assert!(f.rule(rule_named(&b, "b.o")).is_none());
    close(f.rule(rule_named(&b, "a.o")).unwrap().time_saved_s, 0.5);
}

#[test]
fn targets_are_per_host_and_variant_and_only_anchored_rules_count() {
    let h = History::new(HistoryConfig::default());
    let b1 = build(
        1,
        vec![
            compile("a.o", 101.0, 3.0, "compiled"),
            compile("u.o", 0.0, 3.0, "compiled"),
        ],
    );
    run(&h, &b1, "b1");
    assert_eq!(h.footprint().targets, 1, "the unanchored rule is not remembered");
    let mut other_variant = build(2, vec![compile("a.o", 101.0, 1.0, "cas")]);
    other_variant.variant = "clang.release".to_owned();
    assert_eq!(run(&h, &other_variant, "b2").summary().time_saved_s, None);
    let b3 = build(3, vec![compile("a.o", 101.0, 1.0, "cas")]);
    let clock = Clock::for_build(&b3).unwrap();
    let key = BuildKey::new(clock.root_interval().0, &[1; 16]);
    assert_eq!(
        h.evaluate(&b3, &clock, "elsewhere", key, "b3")
            .summary()
            .time_saved_s,
        None
    );
    assert!(h
        .evaluate(&b3, &clock, "host", key, "b3")
        .summary()
        .time_saved_s
        .is_some());
}

/// A CAS object of source `src` (`/s/<src>.cpp`) with the three hashes.
fn cas_compile(src: &str, file: u64, dep: u64, flags: u64, layer: &str) -> Value {
    let target = format!("/p/cas-objdir/v/0d/{src}_{file:012x}_{dep:014x}_{flags:016x}.o");
    json!({"name": format!("{src}.cpp"), "rule_type": "compile", "target": target,
           "source": format!("/s/{src}.cpp"), "start_s": 101.0, "end_s": 102.0,
           "metadata": {"cas.hit": layer == "cas", "ct.rule.cache_layer": layer}})
}

fn reason_of(f: &HistoryFacts, b: &Build, name: &str) -> (String, Vec<&'static str>, bool) {
    let r = f
        .rule(rule_named(b, name))
        .and_then(|r| r.rebuild)
        .expect("a rebuild reason");
    (
        r.reason.as_str().to_owned(),
        r.changed.names().to_vec(),
        r.ccache_served,
    )
}

#[test]
fn rebuild_reasons_follow_the_key_of_the_previous_compile() {
    let h = History::new(HistoryConfig::default());
    let b1 = build(
        1,
        vec![
            cas_compile("a", 1, 1, 1, "compiled"),
            cas_compile("b", 2, 2, 2, "compiled"),
        ],
    );
    let f1 = run(&h, &b1, "b1");
    assert_eq!(reason_of(&f1, &b1, "a.cpp").0, "new");
    assert_eq!(f1.summary().rebuilds, [2, 0, 0, 0, 0, 0]);
    // a: headers and flags changed (headers first); b: same key again.
    let b2 = build(
        2,
        vec![
            cas_compile("a", 1, 9, 9, "compiled"),
            cas_compile("b", 2, 2, 2, "other"),
        ],
    );
    let f2 = run(&h, &b2, "b2");
    assert_eq!(
        reason_of(&f2, &b2, "a.cpp"),
        ("headers_changed".into(), vec!["headers", "flags"], false)
    );
    assert_eq!(reason_of(&f2, &b2, "b.cpp"), ("evicted".into(), vec![], false));
    assert_eq!(f2.summary().rebuilds, [0, 0, 1, 0, 1, 0]);
    // A ccache hit is a CAS miss, not a recompile; a CAS hit has no reason
    // but its key counts as seen.
    let b3 = build(
        3,
        vec![
            cas_compile("a", 5, 9, 9, "ccache"),
            cas_compile("b", 2, 2, 7, "cas"),
        ],
    );
    let f3 = run(&h, &b3, "b3");
    assert_eq!(
        reason_of(&f3, &b3, "a.cpp"),
        ("source_changed".into(), vec!["source"], true)
    );
    assert!(f3
        .rule(rule_named(&b3, "b.cpp"))
        .and_then(|r| r.rebuild)
        .is_none());
    assert_eq!((f3.summary().rebuilds, f3.summary().ccache_served), ([0; 6], 1));
    let b4 = build(4, vec![cas_compile("b", 2, 2, 7, "compiled")]);
    assert_eq!(reason_of(&run(&h, &b4, "b4"), &b4, "b.cpp").0, "evicted");
    // The key a build saw stays visible to it on a re-read.
    assert_eq!(
        reason_of(&evaluate_only(&h, &b4, "b4"), &b4, "b.cpp").0,
        "evicted"
    );
    // Saved and restored: the same reasons.
    let restored = History::new(HistoryConfig::default());
    restored.restore(&h.save()).unwrap();
    assert_eq!(evaluate_only(&restored, &b4, "b4"), evaluate_only(&h, &b4, "b4"));
}

/// A PCH compile of `/s/pch.hpp` into `<cell>/<cmd_hash>/pch.hpp.gch`,
/// its manifest written with `headers` (path, 40-hex hash) as
/// compiletools does while planning the build.
fn pch_compile(cell: &std::path::Path, cmd_hash: &str, headers: &[(&str, &str)]) -> Value {
    let dir = cell.join(cmd_hash);
    std::fs::create_dir_all(&dir).unwrap();
    let hashes: serde_json::Map<String, Value> =
        headers.iter().map(|(p, h)| ((*p).to_owned(), json!(h))).collect();
    let manifest = json!({"compiler": "g++", "compiler_identity": "g++", "header_realpath": "/s/pch.hpp",
                          "transitive_hashes": hashes});
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    set_mtime_before_the_builds(&dir.join("manifest.json"));
    json!({"name": "pch.hpp", "rule_type": "compile", "target": format!("{}/pch.hpp.gch", dir.display()),
           "source": "/s/pch.hpp", "start_s": 101.0, "end_s": 103.0,
           "metadata": {"cas.hit": false, "ct.rule.cache_layer": "compiled"}})
}

/// The builds here are dated 2026-11-30: a manifest written later than a
/// build is not that build's (a later build rewrote it).
pub(crate) fn set_mtime_before_the_builds(path: &std::path::Path) {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_996_800); // 2026-11-30T00:00Z
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_modified(at).unwrap();
}

fn headers_of(f: &HistoryFacts, b: &Build) -> Option<(Vec<String>, usize)> {
    f.rebuild_headers(rule_named(b, "pch.hpp"))
        .map(|(names, n)| (names.iter().map(|s| s.to_string()).collect(), n))
}

const H1: &str = "48724a85207b0bc0b43f0a59b206da5e4759d4f3";
const H2: &str = "def9ae81896b93d7bd902b8bed8eddd488508b6d";

#[test]
fn a_pch_names_the_headers_whose_hash_changed() {
    let cell = tempfile::tempdir().unwrap();
    let cmd = "cf1e549cce33c0e3";
    let h = History::new(HistoryConfig::default());
    let b1 = build(
        1,
        vec![pch_compile(
            cell.path(),
            cmd,
            &[("/s/a.hpp", H1), ("/s/b.hpp", H1)],
        )],
    );
    let f1 = run(&h, &b1, "b1");
    assert_eq!(reason_of(&f1, &b1, "pch.hpp").0, "new");
    assert_eq!(headers_of(&f1, &b1), None);
    // b.hpp edited (the manifest is rewritten in place, same command hash).
    let b2 = build(
        2,
        vec![pch_compile(
            cell.path(),
            cmd,
            &[("/s/a.hpp", H1), ("/s/b.hpp", H2)],
        )],
    );
    let f2 = run(&h, &b2, "b2");
    assert_eq!(
        reason_of(&f2, &b2, "pch.hpp"),
        ("headers_changed".into(), vec!["headers"], false)
    );
    assert_eq!(headers_of(&f2, &b2), Some((vec!["/s/b.hpp".to_owned()], 1)));
    assert_eq!(f2.summary().rebuilds, [0, 0, 1, 0, 0, 0]);
    // Read again after a later build rewrote the manifest: what it saw then.
    let b3 = build(
        3,
        vec![pch_compile(cell.path(), "00000000000000ff", &[("/s/a.hpp", H2)])],
    );
    assert_eq!(evaluate_only(&h, &b2, "b2"), f2);
    // Flags (another command hash), a header edited and one gone.
    let f3 = run(&h, &b3, "b3");
    assert_eq!(
        reason_of(&f3, &b3, "pch.hpp"),
        ("headers_changed".into(), vec!["headers", "flags"], false)
    );
    assert_eq!(
        headers_of(&f3, &b3),
        Some((vec!["/s/a.hpp".to_owned(), "/s/b.hpp".to_owned()], 2))
    );
    // The same again (the .gch trimmed): evicted, no header named.
    let b4 = build(
        4,
        vec![pch_compile(cell.path(), "00000000000000ff", &[("/s/a.hpp", H2)])],
    );
    let f4 = run(&h, &b4, "b4");
    assert_eq!(reason_of(&f4, &b4, "pch.hpp").0, "evicted");
    assert_eq!(headers_of(&f4, &b4), None);
    // Saved and restored: the same facts; a manifest gone: not_cas.
    let restored = History::new(HistoryConfig::default());
    restored.restore(&h.save()).unwrap();
    let b5 = build(5, vec![pch_compile(cell.path(), cmd, &[("/s/a.hpp", H1)])]);
    assert_eq!(evaluate_only(&restored, &b5, "b5"), evaluate_only(&h, &b5, "b5"));
    assert_eq!(
        reason_of(&evaluate_only(&h, &b5, "b5"), &b5, "pch.hpp").0,
        "headers_changed"
    );
    std::fs::remove_file(cell.path().join(cmd).join("manifest.json")).unwrap();
    assert_eq!(
        reason_of(&evaluate_only(&h, &b5, "b5"), &b5, "pch.hpp").0,
        "not_cas"
    );
}

/// A history without manifests (a converted CTHIST3): a PCH compiled
/// before is not_cas once, not new; then it has its manifest.
#[test]
fn a_pch_compiled_before_without_a_kept_manifest_is_not_cas_once() {
    let cell = tempfile::tempdir().unwrap();
    let cmd = "cf1e549cce33c0e3";
    let h = History::new(HistoryConfig::default());
    let b1 = build(1, vec![pch_compile(cell.path(), cmd, &[("/s/a.hpp", H1)])]);
    run(&h, &b1, "b1");
    // The CTHIST3 layout: the same without the manifest section.
    let mut bytes = {
        let state = h.lock();
        codec::encode(&state.targets, &state.builds, &Manifests::default())
    };
    bytes.truncate(bytes.len() - 4);
    bytes[..8].copy_from_slice(b"CTHIST3\n");
    let converted = History::new(HistoryConfig::default());
    assert_eq!(
        converted
            .restore_noting(&bytes)
            .map(|(n, note)| (n, note.is_some())),
        Ok((1, true))
    );
    let b2 = build(2, vec![pch_compile(cell.path(), cmd, &[("/s/a.hpp", H2)])]);
    assert_eq!(
        reason_of(&run(&converted, &b2, "b2"), &b2, "pch.hpp").0,
        "not_cas"
    );
    let b3 = build(3, vec![pch_compile(cell.path(), cmd, &[("/s/a.hpp", H1)])]);
    assert_eq!(
        reason_of(&run(&converted, &b3, "b3"), &b3, "pch.hpp").0,
        "headers_changed"
    );
}

#[test]
fn the_previous_build_is_compared_and_kept_per_pipeline() {
    let h = History::new(HistoryConfig::default());
    let origin = |b: &Build, n: u8, pipeline: &'static str| {
        let clock = Clock::for_build(b).unwrap();
        (
            clock,
            BuildOrigin {
                host: "host",
                pipeline,
                key: BuildKey::new(clock.root_interval().0, &[n; 16]),
                trace_id: [n; 16],
            },
        )
    };
    let step = |b: &Build, n: u8, pipeline: &'static str, path: i64| {
        let (clock, o) = origin(b, n, pipeline);
        let id = format!("{pipeline}{n}");
        let mut f = h.evaluate_build(b, &clock, &o, &id);
        h.finish(
            &id,
            10_000_000_000 + i64::from(n),
            Some((path, u64::from(n))),
            &mut f,
        );
        h.commit(&id);
        f.summary().comparison
    };
    let b1 = build(
        1,
        vec![
            cas_compile("a", 1, 1, 1, "compiled"),
            cas_compile("b", 1, 1, 1, "compiled"),
        ],
    );
    assert_eq!(step(&b1, 1, "geom", 4_000_000_000), None, "the first build");
    let b2 = build(
        2,
        vec![
            cas_compile("a", 2, 1, 1, "compiled"),
            cas_compile("c", 1, 1, 1, "compiled"),
        ],
    );
    let c = step(&b2, 2, "geom", 3_000_000_000).unwrap();
    assert_eq!(c.previous_trace_id, [1; 16]);
    assert_eq!((c.rules_added, c.rules_removed), (1, 1));
    assert!((c.duration_delta_s - 1e-9).abs() < 1e-15);
    assert_eq!(c.critical_path_delta_s, Some(-1.0));
    assert_eq!(c.critical_path_changed, Some(true));
    // Another pipeline on the same host and variant has its own previous.
    assert_eq!(step(&b2, 3, "other", 1), None);
    // Read again after its commit: still compared with build 1.
    let (clock, o) = origin(&b2, 2, "geom");
    let mut again = h.evaluate_build(&b2, &clock, &o, "geom2");
    h.finish("geom2", 10_000_000_002, Some((3_000_000_000, 2)), &mut again);
    assert_eq!(again.summary().comparison, Some(c));
    // And after a restart from the saved bytes.
    let restored = History::new(HistoryConfig::default());
    restored.restore(&h.save()).unwrap();
    let mut after = restored.evaluate_build(&b2, &clock, &o, "geom2");
    restored.finish("geom2", 10_000_000_002, Some((3_000_000_000, 2)), &mut after);
    assert_eq!(after, again);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    /// A rule: target 0..6, duration in ms, layer.
    fn rule() -> impl Strategy<Value = (u8, u16, u8)> {
        (0u8..6, 1u16..5000, 0u8..4)
    }

    fn build_of(n: u32, rules: &[(u8, u16, u8)]) -> Build {
        let layers = ["compiled", "other", "ccache", "cas"];
        let rules = rules
            .iter()
            .map(|&(t, ms, l)| {
                compile(
                    &format!("t{t}.o"),
                    101.0,
                    f64::from(ms) / 1000.0,
                    layers[l as usize],
                )
            })
            .collect();
        build(n, rules)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Builds in start order, each evaluated then committed: reading
        /// the last committed build again, in this history or in one
        /// restored from its saved bytes, gives identical numbers; the
        /// root's time saved is the sum of the rules'; the store never
        /// holds more than K + 1 compiles a target.
        #[test]
        fn re_reads_are_identical_and_sums_consistent(
            window in 1usize..4,
            builds in proptest::collection::vec(proptest::collection::vec(rule(), 1..8), 1..10),
        ) {
            let config = HistoryConfig { max_targets: 100, window };
            let h = History::new(config);
            for (n, rules) in builds.iter().enumerate() {
                let b = build_of(n as u32, rules);
                let id = format!("b{n}");
                let first = evaluate_only(&h, &b, &id);
                let per_rule: f64 = b
                    .rule_ids()
                    .into_iter()
                    .filter_map(|r| first.rule(r)?.time_saved_s)
                    .sum();
                match first.summary().time_saved_s {
                    Some(total) => prop_assert!((total - per_rule).abs() < 1e-9),
                    None => prop_assert_eq!(per_rule, 0.0),
                }
                h.commit(&id);
                prop_assert_eq!(&evaluate_only(&h, &b, &id), &first);
                let restored = History::new(config);
                restored.restore(&h.save()).unwrap();
                prop_assert_eq!(&evaluate_only(&restored, &b, &id), &first);
                h.discard(&id);
            }
            let fp = h.footprint();
            prop_assert!(fp.compiles <= fp.targets * (window as u64 + 1));
        }
    }
}
