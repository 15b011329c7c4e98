//! Differential test: every corpus case with a reference from ct-cake's own
//! exporter must give the same trace, ccache attributes and aggregates,
//! metrics (or metrics-as-spans snapshot), given the case's statslog and
//! outcomes log. What may differ is the one list in common/intended.rs.

use crate::common;

use common::intended::{self, Tally, INTENDED_DIFFERENCES};
use common::reference::{cases_with_reference, check_case};

#[test]
fn every_corpus_case_matches_its_reference() {
    println!("intended differences:\n{}", intended::describe());
    let cases = cases_with_reference();
    assert!(!cases.is_empty(), "no corpus case with a reference trace");
    let mut failures = Vec::new();
    let mut total = Tally::default();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        match check_case(case) {
            Ok(report) => {
                println!("PASS {name}: {}\n     intended: {}", report.summary, report.tally);
                total.merge(&report.tally);
            }
            Err(diffs) => {
                println!("FAIL {name}:\n{diffs}");
                failures.push(name);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "cases differing from their reference: {failures:?}"
    );
    // A listed difference that no case exercises is stale (or the check
    // using it is broken).
    for d in INTENDED_DIFFERENCES.iter().filter(|d| d.in_corpus) {
        assert!(
            total.get(d.id) > 0,
            "intended difference {} never used by the corpus",
            d.id
        );
    }
    println!("intended differences used over the corpus: {total}");
}

/// `cicd.pipeline.result` against what ct-cake's process actually returned
/// (`exit_code` in each case's `case.json`): every corpus case is decided,
/// success exactly when the exit code was 0, and a failure names the phase
/// the build stopped in.
#[test]
fn pipeline_result_agrees_with_the_exit_code() {
    use common::reference::{decode_ours, load_reference, request_for, Attr};
    use compiletools_core::{process_build, CancelToken};

    let mut failures = 0;
    for case in cases_with_reference() {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("case.json")).unwrap()).unwrap();
        let exit = meta["exit_code"].as_i64().expect("exit_code");
        let reference = load_reference(&case);
        let out = process_build(&request_for(&case, &reference), &CancelToken::new()).unwrap();
        let ours = decode_ours(out.traces.as_deref().unwrap());
        let root = ours.root().unwrap();
        let get = |k: &str| root.attributes.get(k).cloned();
        let (result, error) = (get("cicd.pipeline.result"), get("error.type"));
        if exit == 0 {
            assert_eq!(
                (result, error),
                (Some(Attr::Str("success".into())), None),
                "{case:?}"
            );
        } else {
            failures += 1;
            assert_eq!(
                (result, error),
                (
                    Some(Attr::Str("failure".into())),
                    Some(Attr::Str("build_execution".into()))
                ),
                "{case:?}"
            );
        }
    }
    assert!(failures > 0, "the corpus has a failed build");
}

/// The helper itself must notice each kind of difference it claims to check.
#[test]
fn helper_detects_differences() {
    use common::reference::{compare, decode_ours, load_reference, request_for, Attr, Expect};
    use compiletools_core::{process_build, CancelToken};

    let case = cases_with_reference()
        .into_iter()
        .find(|c| c.ends_with("01-geom-shake-cold"))
        .expect("case 01");
    let reference = load_reference(&case);
    let req = request_for(&case, &reference);
    let expect = Expect::for_request(&req);
    let out = process_build(&req, &CancelToken::new()).unwrap();
    let ours = decode_ours(out.traces.as_deref().unwrap());
    assert_eq!(compare(&reference, &ours, &out.summary, &expect), "");

    let rule = ours
        .spans
        .iter()
        .position(|s| s.name.starts_with("compile."))
        .unwrap();
    let phase = ours
        .spans
        .iter()
        .position(|s| s.name == "phase.target_discovery")
        .unwrap();
    let root = ours.spans.iter().position(|s| s.parent_id.is_empty()).unwrap();
    type Mutation = Box<dyn Fn(&mut common::reference::Trace)>;
    let mutations: Vec<(&str, Mutation)> = vec![
        ("time", Box::new(move |t| t.spans[rule].start += 60_000)),
        (
            "parent",
            Box::new(move |t| t.spans[rule].parent_id = t.spans[phase].span_id.clone()),
        ),
        ("name", Box::new(move |t| t.spans[rule].name.push('x'))),
        (
            "attribute",
            Box::new(move |t| {
                t.spans[rule]
                    .attributes
                    .insert("cas.hit".into(), Attr::Bool(true));
            }),
        ),
        (
            "resource",
            Box::new(|t| {
                t.resource.insert("ct.backend".into(), Attr::Str("make".into()));
            }),
        ),
        (
            "missing span",
            Box::new(move |t| {
                t.spans.remove(phase);
            }),
        ),
        (
            "root ccache attribute",
            Box::new(move |t| {
                t.spans[root]
                    .attributes
                    .insert("ct.ccache.misses".into(), Attr::Int(28));
            }),
        ),
        (
            "root aggregate",
            Box::new(move |t| {
                t.spans[root]
                    .attributes
                    .insert("ct.build.recompiled_count".into(), Attr::Int(0));
            }),
        ),
        (
            "missing aggregate warning",
            Box::new(move |t| {
                let s = &mut t.spans[root];
                s.attribute_order.push("ct.build.aggregate_warning".into());
                s.attributes.insert(
                    "ct.build.aggregate_warning".into(),
                    Attr::Str("ccache_overcount".into()),
                );
            }),
        ),
        (
            "wrong pipeline result",
            Box::new(move |t| {
                t.spans[root]
                    .attributes
                    .insert("cicd.pipeline.result".into(), Attr::Str("failure".into()));
            }),
        ),
        (
            "wrong task type",
            Box::new(move |t| {
                t.spans[rule]
                    .attributes
                    .insert("cicd.pipeline.task.type".into(), Attr::Str("test".into()));
            }),
        ),
        (
            "task on a phase",
            Box::new(move |t| {
                let s = &mut t.spans[phase];
                s.attribute_order.push("cicd.pipeline.task.type".into());
                s.attributes
                    .insert("cicd.pipeline.task.type".into(), Attr::Str("build".into()));
            }),
        ),
        (
            "wrong task run id",
            Box::new(move |t| {
                t.spans[rule].attributes.insert(
                    "cicd.pipeline.task.run.id".into(),
                    Attr::Str("0000000000000001".into()),
                );
            }),
        ),
        (
            "error status on a successful build",
            Box::new(move |t| t.spans[root].status = (2, "build failed in build_execution".into())),
        ),
        (
            "wrong run id",
            Box::new(|t| {
                t.resource
                    .insert("cicd.pipeline.run.id".into(), Attr::Str("x".into()));
            }),
        ),
        (
            "wrong per-TU outcome",
            Box::new(move |t| {
                t.spans[rule]
                    .attributes
                    .insert("ct.ccache.outcome".into(), Attr::Str("direct_cache_hit".into()));
            }),
        ),
        (
            "attribution layer without outcome",
            Box::new(move |t| {
                let s = &mut t.spans[rule];
                s.attribute_order.retain(|k| k != "ct.ccache.outcome");
                s.attributes.remove("ct.ccache.outcome");
            }),
        ),
        (
            "rule without weighted time",
            Box::new(move |t| {
                let s = &mut t.spans[rule];
                s.attribute_order.retain(|k| k != "ct.rule.weighted_s");
                s.attributes.remove("ct.rule.weighted_s");
            }),
        ),
        (
            "analytics key not trailing",
            Box::new(move |t| {
                let s = &mut t.spans[rule];
                s.attribute_order.retain(|k| k != "ct.rule.weighted_s");
                s.attribute_order.insert(0, "ct.rule.weighted_s".into());
            }),
        ),
        (
            "negative weighted time",
            Box::new(move |t| {
                t.spans[rule]
                    .attributes
                    .insert("ct.rule.weighted_s".into(), Attr::Double(-1.0));
            }),
        ),
        (
            "critical path flag false",
            Box::new(move |t| {
                let s = &mut t.spans[rule];
                s.attribute_order.push("ct.critical_path".into());
                s.attributes.insert("ct.critical_path".into(), Attr::Bool(false));
            }),
        ),
        (
            "analytics on a phase",
            Box::new(move |t| {
                let s = &mut t.spans[phase];
                s.attribute_order.push("ct.rule.weighted_s".into());
                s.attributes
                    .insert("ct.rule.weighted_s".into(), Attr::Double(0.5));
            }),
        ),
        (
            "root without top rules",
            Box::new(move |t| {
                let s = &mut t.spans[root];
                s.attribute_order.retain(|k| k != "ct.build.top_weighted_rules");
                s.attributes.remove("ct.build.top_weighted_rules");
            }),
        ),
        (
            "root parallelism max zero",
            Box::new(move |t| {
                t.spans[root]
                    .attributes
                    .insert("ct.build.parallelism.max".into(), Attr::Int(0));
            }),
        ),
    ];
    for (what, mutate) in mutations {
        let mut changed = ours.clone();
        mutate(&mut changed);
        assert_ne!(
            compare(&reference, &changed, &out.summary, &expect),
            "",
            "a changed {what} went unnoticed"
        );
    }
    // Without the statslog expectation, our attribution is a difference.
    assert_ne!(compare(&reference, &ours, &out.summary, &Expect::none()), "");
}

/// The metrics comparison notices what it claims to check.
#[test]
fn helper_detects_metric_differences() {
    use common::ref_metrics::{compare_metrics, decode_ours_metrics, load_reference_metrics, MetricsContext};
    use common::reference::{decode_ours, load_reference, request_for, Attr};
    use compiletools_core::{ids, process_build, CancelToken};

    let case = cases_with_reference()
        .into_iter()
        .find(|c| c.ends_with("19-geom-cmake-cold"))
        .expect("case 19");
    let reference_trace = load_reference(&case);
    let req = request_for(&case, &reference_trace);
    let out = process_build(&req, &CancelToken::new()).unwrap();
    let trace = decode_ours(out.traces.as_deref().unwrap());
    let root = trace.root().unwrap();
    let reference = load_reference_metrics(&case.join("reference").join("002-metrics.json"));
    let ours = decode_ours_metrics(out.metrics.as_deref().unwrap());
    let our_hex = ids::to_hex(&root.trace_id);
    let ref_hex = ids::to_hex(&reference_trace.root().unwrap().trace_id);
    let ctx = MetricsContext {
        our_trace_id_hex: &our_hex,
        reference_trace_id_hex: &ref_hex,
        build_start: root.start,
        build_end: root.end,
    };
    assert_eq!(
        compare_metrics(&reference, &ours, &ctx, &mut Tally::default()),
        ""
    );

    type Mutation = Box<dyn Fn(&mut common::ref_metrics::Metrics)>;
    let mutations: Vec<(&str, Mutation)> = vec![
        (
            "point value",
            Box::new(|m| m.metrics[0].points[1].value = Attr::Int(30)),
        ),
        ("point order", Box::new(|m| m.metrics[0].points.swap(0, 1))),
        ("description", Box::new(|m| m.metrics[1].description.push('!'))),
        (
            "temporality",
            Box::new(|m| m.metrics[0].temporality = "AGGREGATION_TEMPORALITY_DELTA".into()),
        ),
        ("monotonicity", Box::new(|m| m.metrics[0].monotonic = false)),
        ("type", Box::new(|m| m.metrics[2].kind = "sum".into())),
        (
            "gauge value",
            Box::new(|m| m.metrics[1].points[0].value = Attr::Double(0.5)),
        ),
        ("start time", Box::new(|m| m.metrics[0].points[0].start += 1)),
        ("gauge start", Box::new(|m| m.metrics[1].points[0].start = 1)),
        ("time", Box::new(|m| m.metrics[2].points[0].time -= 1)),
        ("scope", Box::new(|m| m.scope_name = "compiletools".into())),
        (
            "invocation id",
            Box::new(|m| {
                m.resource
                    .insert("ct.invocation_id".into(), Attr::Str("20261130T034340-1".into()));
            }),
        ),
        (
            "resource",
            Box::new(|m| {
                m.resource.insert("ct.variant".into(), Attr::Str("x".into()));
            }),
        ),
        ("missing metric", Box::new(|m| drop(m.metrics.pop()))),
    ];
    for (what, mutate) in mutations {
        let mut changed = ours.clone();
        mutate(&mut changed);
        assert_ne!(
            compare_metrics(&reference, &changed, &ctx, &mut Tally::default()),
            "",
            "a changed {what} went unnoticed"
        );
    }
}

/// The snapshot comparison notices what it claims to check.
#[test]
fn helper_detects_snapshot_differences() {
    use common::reference::{check_snapshot, decode_ours, load_reference, request_for, Attr, Trace};
    use compiletools_core::{process_build, CancelToken};

    let case = cases_with_reference()
        .into_iter()
        .find(|c| c.ends_with("07-geom-shake-metrics-as-spans"))
        .expect("case 07");
    let reference = load_reference(&case);
    let req = request_for(&case, &reference);
    assert!(req.metrics_as_spans);
    let out = process_build(&req, &CancelToken::new()).unwrap();
    let ours = decode_ours(out.traces.as_deref().unwrap());
    let dir = case.join("reference");
    let check = |t: &Trace| {
        let mut d = String::new();
        check_snapshot(&dir, &reference, t, &mut Tally::default(), &mut d);
        d
    };
    assert_eq!(check(&ours), "");

    type Mutation = Box<dyn Fn(&mut Trace)>;
    let mutations: Vec<(&str, Mutation)> = vec![
        (
            "attribute value",
            Box::new(|t| {
                t.extra[0]
                    .span
                    .attributes
                    .insert("ct.ccache.events.direct_cache_hit".into(), Attr::Int(28));
            }),
        ),
        (
            "attribute order",
            Box::new(|t| t.extra[0].span.attribute_order.swap(0, 1)),
        ),
        ("parent", Box::new(|t| t.extra[0].span.parent_id = vec![1; 8])),
        ("time", Box::new(|t| t.extra[0].span.start -= 1)),
        (
            "scope",
            Box::new(|t| t.extra[0].scope_name = "compiletools".into()),
        ),
        ("name", Box::new(|t| t.extra[0].span.name.push('s'))),
        ("missing", Box::new(|t| t.extra.clear())),
        (
            "resource",
            Box::new(|t| {
                t.resource.insert("ct.variant".into(), Attr::Str("x".into()));
            }),
        ),
    ];
    for (what, mutate) in mutations {
        let mut changed = ours.clone();
        mutate(&mut changed);
        assert_ne!(check(&changed), "", "a changed snapshot {what} went unnoticed");
    }
}

/// The one tolerated span difference: a reference rule outside the root
/// window ±1 s, which we skip as unanchored (design.md §2 fix 3).
#[test]
fn helper_tolerates_only_documented_unanchored_rules() {
    use common::reference::{compare, compare_tallied, decode_ours, load_reference, request_for, Expect};
    use compiletools_core::{process_build, CancelToken};

    let case = cases_with_reference()
        .into_iter()
        .find(|c| c.ends_with("16-geom-make-cold-native-flock"))
        .expect("case 16");
    let reference = load_reference(&case);
    let req = request_for(&case, &reference);
    let expect = Expect::for_request(&req);
    let out = process_build(&req, &CancelToken::new()).unwrap();
    let ours = decode_ours(out.traces.as_deref().unwrap());

    let root_end = reference
        .spans
        .iter()
        .find(|s| s.parent_id.is_empty())
        .unwrap()
        .end;
    let mut shifted = reference.clone();
    let i = shifted
        .spans
        .iter()
        .position(|s| s.name.starts_with("link."))
        .unwrap();
    let name = shifted.spans[i].name.clone();
    shifted.spans[i].start = root_end + 5_000_000_000;
    shifted.spans[i].end = root_end + 6_000_000_000;
    let mut fewer = ours.clone();
    fewer.spans.retain(|s| s.name != name);
    let mut summary = out.summary.clone();
    summary.spans -= 1;
    summary.unanchored_rules = 1;
    let mut tally = Tally::default();
    assert_eq!(
        compare_tallied(&shifted, &fewer, &summary, &expect, &mut tally),
        ""
    );
    assert_eq!(tally.get(intended::UNANCHORED), 1);
    // Not counted as unanchored by us: a difference.
    summary.unanchored_rules = 0;
    assert_ne!(compare(&shifted, &fewer, &summary, &expect), "");
    // A missing rule that is inside the window: a difference.
    summary.unanchored_rules = 1;
    assert_ne!(compare(&reference, &fewer, &summary, &expect), "");
}
