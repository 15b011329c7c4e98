//! Property tests of the build analytics through `process_build`:
//!
//! * builds whose answers are known by construction: a chain of rules, each
//!   with parallel fillers that start with it and end halfway through it.
//!   The critical path is the chain, the most rules at once is 1 + the most
//!   fillers of one link, each chain rule weighs h/(1+k) + h and each filler
//!   h/(1+k) (h = half the link's duration, k its fillers), the sum of the
//!   rule durations and the busy time follow;
//! * random builds (times on a coarse grid, so that ties, touching rules and
//!   zero-length rules are common; unanchored rules, rule children and
//!   sub-phases): every value agrees with an independent brute-force reading
//!   of the spans (`common::analytics`): the sum of weighted time is the busy
//!   time, the path is a chain in time that follows its definition and is
//!   never longer than the build.
//!
//! `PROPTEST_CASES=N` runs more cases (`make prop-long`).

use crate::common;

use crate::common::proptest_config::config;
use common::analytics::{check, tolerance_ns, Found};
use common::fixture::Fixture;
use compiletools_core::{process_build, CancelToken};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use proptest::prelude::*;
use prost::Message;
use serde_json::{json, Value};

fn backend() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("shake"), Just("make"), Just("ninja")]
}

/// Milliseconds after the monotonic origin of the generated builds as the
/// seconds the file writes (3 decimals, as ninja's rules are).
fn secs(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

fn rule(name: &str, start_ms: i64, end_ms: i64) -> Value {
    json!({"name": name, "rule_type": "compile", "source": format!("/src/d/{name}"),
           "target": format!("/obj/{name}.o"), "elapsed_s": secs(end_ms - start_ms),
           "start_s": secs(start_ms), "end_s": secs(end_ms)})
}

/// A document whose root runs from `root_ms.0` to `root_ms.1`.
fn document(backend: &str, root_ms: (i64, i64), phases: Vec<Value>) -> String {
    json!({"version": 1, "timestamp": "2026-11-30T03:43:45+00:00",
           "total_elapsed_s": secs(root_ms.1 - root_ms.0), "variant": "gcc.debug",
           "backend": backend, "start_s": secs(root_ms.0), "phases": phases})
    .to_string()
}

fn spans_of(doc: &str) -> Vec<Span> {
    let fx = Fixture::new(doc);
    let out = process_build(&fx.request(), &CancelToken::new()).expect("valid document");
    let req = ExportTraceServiceRequest::decode(out.traces.as_deref().expect("traces")).unwrap();
    req.resource_spans[0].scope_spans[0].spans.clone()
}

fn checked(doc: &str, backend: &str) -> Result<Found, TestCaseError> {
    check(&spans_of(doc), tolerance_ns(backend)).map_err(TestCaseError::fail)
}

// ---------------------------------------------------- known by construction

/// One link of the chain: half its duration (ms) and its filler count.
#[derive(Debug, Clone, Copy)]
struct Link {
    half_ms: i64,
    fillers: usize,
    /// Idle time before the link starts (the path includes it).
    gap_ms: i64,
}

fn link() -> impl Strategy<Value = Link> {
    (
        1i64..1500,
        0usize..5,
        prop_oneof![3 => Just(0i64), 1 => 1i64..300],
    )
        .prop_map(|(half_ms, fillers, gap_ms)| Link {
            half_ms,
            fillers,
            gap_ms,
        })
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn chain_with_fillers_has_the_answers_known_by_construction(
        backend in backend(),
        links in prop::collection::vec(link(), 1..8),
        order_seed in any::<u64>(),
    ) {
        const ROOT_START_MS: i64 = 100_000;
        let mut at = ROOT_START_MS + 500;
        let chain_start = at + links[0].gap_ms;
        // (name, start, end, expected weighted s, on the path)
        let mut rules: Vec<(String, i64, i64, f64, bool)> = Vec::new();
        for (i, l) in links.iter().enumerate() {
            at += l.gap_ms;
            let h = l.half_ms as f64 / 1000.0;
            let share = h / (1 + l.fillers) as f64;
            rules.push((format!("c{i}.cpp"), at, at + 2 * l.half_ms, share + h, true));
            for j in 0..l.fillers {
                rules.push((format!("f{i}_{j}.cpp"), at, at + l.half_ms, share, false));
            }
            at += 2 * l.half_ms;
        }
        let chain_end = at;
        // File order: any permutation (rules are stored in completion or log order).
        let mut order: Vec<usize> = (0..rules.len()).collect();
        let mut seed = order_seed;
        for i in (1..order.len()).rev() {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, (seed >> 33) as usize % (i + 1));
        }
        let phase_ms = (ROOT_START_MS + 250, chain_end + 250);
        let json_rules: Vec<Value> = order.iter().map(|&i| rule(&rules[i].0, rules[i].1, rules[i].2)).collect();
        let doc = document(backend, (ROOT_START_MS, chain_end + 1000), vec![json!({
            "name": "build_execution", "start_s": secs(phase_ms.0), "end_s": secs(phase_ms.1),
            "rules": json_rules})]);

        let found = checked(&doc, backend)?;
        prop_assert_eq!(found.rules.len(), rules.len());
        for r in &found.rules {
            let name = r.name.trim_start_matches("compile.d/");
            let (_, _, _, weighted, on_path) = rules.iter().find(|x| x.0 == name).unwrap();
            prop_assert!((r.weighted_s.unwrap() - weighted).abs() < 1e-9, "{}: {:?} vs {}", name, r.weighted_s, weighted);
            prop_assert_eq!(r.critical_path, *on_path, "{} on the path", name);
        }
        let busy_ms: i64 = links.iter().map(|l| 2 * l.half_ms).sum();
        prop_assert!((found.busy_s - busy_ms as f64 / 1000.0).abs() < 1e-9);
        let max = 1 + links.iter().map(|l| l.fillers).max().unwrap_or(0) as i64;
        prop_assert_eq!(found.max_parallel, max);
        let path_s = (chain_end - chain_start) as f64 / 1000.0;
        prop_assert!((found.critical_path_s.unwrap() - path_s).abs() < 1e-9);
        let durations_ms: i64 = links.iter().map(|l| 2 * l.half_ms + l.fillers as i64 * l.half_ms).sum();
        let avg = durations_ms as f64 / (phase_ms.1 - phase_ms.0) as f64;
        prop_assert!((found.parallelism_avg.unwrap() - avg).abs() < 1e-9);
    }
}

// ------------------------------------------------------------ random builds

/// A rule on a 1 ms grid inside the root window, or unanchored, possibly
/// with children (steps of the rule, which do not count).
#[derive(Debug, Clone)]
struct GenRule {
    start_ms: i64,
    len_ms: i64,
    anchored: bool,
    children: usize,
}

fn gen_rule() -> impl Strategy<Value = GenRule> {
    (
        0i64..40,
        prop_oneof![2 => Just(0i64), 6 => 1i64..15, 1 => 15i64..40],
        prop::bool::weighted(0.9),
        prop_oneof![9 => Just(0usize), 1 => 1usize..3],
    )
        .prop_map(|(start_ms, len_ms, anchored, children)| GenRule {
            start_ms,
            len_ms,
            anchored,
            children,
        })
}

fn rules_json(rules: &[GenRule], prefix: &str, base_ms: i64) -> Vec<Value> {
    rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let name = format!("{prefix}{i}.cpp");
            let start = base_ms + r.start_ms;
            let mut v = rule(&name, start, start + r.len_ms);
            if !r.anchored {
                v["start_s"] = json!(0.0);
            }
            if r.children > 0 {
                let kids: Vec<Value> = (0..r.children)
                    .map(|c| rule(&format!("{name}.step{c}"), start, start + r.len_ms))
                    .collect();
                v["children"] = json!(kids);
            }
            v
        })
        .collect()
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn every_value_agrees_with_the_spans(
        backend in backend(),
        top in prop::collection::vec(gen_rule(), 0..30),
        sub in prop::collection::vec(gen_rule(), 0..6),
        loose in prop::collection::vec(gen_rule(), 0..3),
        execution_phase in any::<bool>(),
        phase_len_ms in 0i64..60,
    ) {
        const BASE_MS: i64 = 5_000_000;
        let mut rules = rules_json(&top, "r", BASE_MS);
        rules.push(json!({"name": "sub", "start_s": secs(BASE_MS), "end_s": secs(BASE_MS + 50),
                          "rules": rules_json(&sub, "s", BASE_MS)}));
        let name = if execution_phase { "build_execution" } else { "other" };
        let mut phases = vec![json!({"name": name, "start_s": secs(BASE_MS),
                                     "end_s": secs(BASE_MS + phase_len_ms), "rules": rules})];
        // Rules directly under the root count too.
        phases.extend(rules_json(&loose, "l", BASE_MS));
        let root = (BASE_MS - 10, BASE_MS + 100);
        let found = checked(&document(backend, root, phases), backend)?;
        let anchored = |rs: &[GenRule]| rs.iter().filter(|r| r.anchored).count();
        prop_assert_eq!(found.rules.len(), anchored(&top) + anchored(&sub) + anchored(&loose));
        if let Some(path_s) = found.critical_path_s {
            prop_assert!(path_s <= (root.1 - root.0) as f64 / 1000.0, "never longer than the build");
        }
    }
}
