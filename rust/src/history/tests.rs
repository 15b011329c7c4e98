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
    assert!(b1.rule_ids().into_iter().all(|id| f1.rule(id).is_none()));

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
    assert!(f.rule(rule_named(&b, "new.o")).is_none(), "no earlier compile");
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
