//! Build analytics (README "Build analytics") through `process_build`: a
//! small build worked out by hand, the treatment of rules that do not
//! count, and every corpus case against an independent reading of its spans
//! (`common::analytics`). Generated builds are in `prop_analytics.rs`.

use crate::common;

use common::analytics::{check, tolerance_ns, CRITICAL_PATH, ROOT_KEYS, RULE_WEIGHTED_S};
use common::fixture::{attr, span, timing_doc, Fixture};
use common::reference::{cases_with_reference, load_reference, request_for};
use compiletools_core::{process_build, CancelToken};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

fn rule(name: &str, start: f64, end: f64) -> String {
    format!(
        r#"{{"name": "{name}", "rule_type": "compile", "source": "/s/d/{name}", "target": "/o/{name}.o",
            "start_s": {start:?}, "end_s": {end:?}}}"#
    )
}

fn double(s: &Span, key: &str) -> Option<f64> {
    match attr(s, key) {
        Some(Value::DoubleValue(d)) => Some(*d),
        _ => None,
    }
}

/// Chain A → B → C with fillers; every number below follows from the
/// definitions by hand (README "Build analytics").
#[test]
fn a_build_worked_out_by_hand() {
    let rules = [
        rule("f1.cpp", 101.0, 102.0),
        rule("a.cpp", 101.0, 104.0),
        rule("f2.cpp", 101.0, 103.0),
        rule("f3.cpp", 104.0, 106.0),
        rule("b.cpp", 104.0, 107.0),
        rule("f4.cpp", 107.0, 108.0),
        rule("c.cpp", 107.0, 109.0),
    ]
    .join(",");
    let doc = timing_doc(&format!(
        r#"[{{"name": "build_execution", "start_s": 101.0, "end_s": 109.0, "rules": [{rules}]}}]"#
    ));
    let (spans, _) = Fixture::new(doc).trace();
    let root = span(&spans, "compiletools.build");
    // 1–2 s: a, f1, f2 run (3 at once); 2–3 s: a, f2; 3–4 s: a alone; 4–6 s:
    // b, f3; 6–7 s: b; 7–8 s: c, f4; 8–9 s: c.
    let weighted = [
        ("f1.cpp", 1.0 / 3.0),
        ("a.cpp", 1.0 / 3.0 + 0.5 + 1.0),
        ("f2.cpp", 1.0 / 3.0 + 0.5),
        ("f3.cpp", 1.0),
        ("b.cpp", 2.0),
        ("f4.cpp", 0.5),
        ("c.cpp", 1.5),
    ];
    for (name, want) in weighted {
        let s = span(&spans, &format!("compile.d/{name}"));
        let got = double(s, RULE_WEIGHTED_S).unwrap();
        assert!((got - want).abs() < 1e-12, "{name}: {got} != {want}");
        let on_path = ["a.cpp", "b.cpp", "c.cpp"].contains(&name);
        assert_eq!(
            attr(s, CRITICAL_PATH),
            on_path.then_some(&Value::BoolValue(true)),
            "{name}"
        );
    }
    // 14 s of rules in 8 s of build_execution; the path a → b → c is 8 s.
    assert_eq!(double(root, "ct.build.parallelism.avg"), Some(1.75));
    assert_eq!(attr(root, "ct.build.parallelism.max"), Some(&Value::IntValue(3)));
    assert_eq!(double(root, "ct.build.critical_path_s"), Some(8.0));
    let Some(Value::ArrayValue(top)) = attr(root, "ct.build.top_weighted_rules") else {
        panic!("no top list")
    };
    let top: Vec<_> = top.values.iter().map(|v| v.value.clone()).collect();
    let want: Vec<_> = ["b", "a", "c", "f3", "f2", "f4", "f1"]
        .iter()
        .map(|n| Some(Value::StringValue(format!("compile.d/{n}.cpp"))))
        .collect();
    assert_eq!(top, want);
    check(&spans, tolerance_ns("shake")).unwrap();
}

/// Unanchored rules and the children of a rule do not count; neither the
/// rules nor the root say anything about them.
#[test]
fn only_rules_that_become_spans_below_no_rule_count() {
    let doc = timing_doc(&format!(
        r#"[{{"name": "build_execution", "start_s": 101.0, "end_s": 105.0, "rules": [
              {parent_open}, "children": [{child}]}},
              {unanchored}, {other}]}}]"#,
        parent_open = rule("parent.cpp", 101.0, 103.0).trim_end_matches('}'),
        child = rule("child.cpp", 101.0, 103.0),
        unanchored = rule("gone.cpp", 0.0, 102.0),
        other = rule("other.cpp", 102.0, 104.0),
    ));
    let (spans, out) = Fixture::new(doc).trace();
    assert_eq!(out.summary.unanchored_rules, 1);
    let child = span(&spans, "compile.d/child.cpp");
    assert_eq!(double(child, RULE_WEIGHTED_S), None);
    assert_eq!(attr(child, CRITICAL_PATH), None);
    // parent 101–103 and other 102–104 overlap for 1 s; the child does not
    // make it three.
    assert_eq!(
        double(span(&spans, "compile.d/parent.cpp"), RULE_WEIGHTED_S),
        Some(1.5)
    );
    let root = span(&spans, "compiletools.build");
    assert_eq!(attr(root, "ct.build.parallelism.max"), Some(&Value::IntValue(2)));
    assert_eq!(double(root, "ct.build.parallelism.avg"), Some(1.0));
    check(&spans, tolerance_ns("shake")).unwrap();
}

/// No counted rule (a no-op build; cmake records none): no analytics.
#[test]
fn no_rules_no_analytics() {
    let doc = timing_doc(&format!(
        r#"[{{"name": "build_execution", "start_s": 101.0, "end_s": 105.0, "rules": [{}]}}]"#,
        rule("gone.cpp", 0.0, 102.0)
    ));
    let (spans, _) = Fixture::new(doc).trace();
    for s in &spans {
        for key in ROOT_KEYS.iter().chain(&[RULE_WEIGHTED_S, CRITICAL_PATH]) {
            assert_eq!(attr(s, key), None, "{}: {key}", s.name);
        }
    }
}

/// Every corpus build: the analytics agree with an independent reading of
/// the spans, are present exactly when rules ran, and stay within the build.
#[test]
fn corpus_builds_hold_the_invariants() {
    let cases = cases_with_reference();
    assert!(!cases.is_empty());
    let mut with_rules = 0;
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let req = request_for(case, &load_reference(case));
        let out = process_build(&req, &CancelToken::new()).unwrap();
        let t = ExportTraceServiceRequest::decode(out.traces.as_deref().unwrap()).unwrap();
        let backend = t.resource_spans[0]
            .resource
            .as_ref()
            .and_then(|r| r.attributes.iter().find(|kv| kv.key == "ct.backend"))
            .and_then(|kv| kv.value.as_ref()?.value.clone());
        let Some(Value::StringValue(backend)) = backend else {
            panic!("{name}: no ct.backend")
        };
        let spans = &t.resource_spans[0].scope_spans[0].spans;
        let found = check(spans, tolerance_ns(&backend)).unwrap_or_else(|d| panic!("{name}:\n{d}"));
        let root = span(spans, "compiletools.build");
        let build_s = (root.end_time_unix_nano - root.start_time_unix_nano) as f64 / 1e9;
        println!(
            "{name} ({backend}): {} rules, parallelism avg {:?} max {}, critical path {:?} s of {build_s:.3} s, \
             busy {:.3} s, top {:?}",
            found.rules.len(),
            found.parallelism_avg,
            found.max_parallel,
            found.critical_path_s,
            found.busy_s,
            found.top.first()
        );
        if found.rules.is_empty() {
            continue;
        }
        with_rules += 1;
        // Values present, and the path within the root.
        let path_s = found.critical_path_s.expect("critical path");
        assert!(
            path_s > 0.0 && path_s <= build_s,
            "{name}: path {path_s} s, build {build_s} s"
        );
        assert!(
            found.parallelism_avg.is_some(),
            "{name}: every corpus build has build_execution"
        );
        assert!(found.max_parallel >= 1);
    }
    // The cold builds of every rule-recording backend, at least.
    assert!(with_rules >= 8, "only {with_rules} corpus builds with rules");
}
