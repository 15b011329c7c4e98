//! The compile history on the corpus: case 01 (geom, cold: every TU a
//! ccache miss) then case 03 (the same targets, every TU a ccache hit)
//! gives each hit the time saved read independently off the two
//! timing.json files; every case in build order runs through one history
//! with consistent sums and identical re-reads.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use common::reference::{corpus_dir, invocation_dir, load_reference, request_for};
use compiletools_core::history::{History, HistoryConfig};
use compiletools_core::{process_build, BuildOutput, CancelToken};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::Value as Json;

fn run(case: &Path, history: &Arc<History>) -> (BuildOutput, String) {
    let mut req = request_for(case, &load_reference(case));
    req.history = Some(Arc::clone(history));
    let id = req.invocation_dir.to_string_lossy().into_owned();
    (process_build(&req, &CancelToken::new()).unwrap(), id)
}

fn spans(out: &BuildOutput) -> Vec<Span> {
    let req = ExportTraceServiceRequest::decode(out.traces.as_deref().unwrap()).unwrap();
    req.resource_spans
        .into_iter()
        .flat_map(|rs| rs.scope_spans)
        .flat_map(|ss| ss.spans)
        .collect()
}

fn get<'s>(s: &'s Span, key: &str) -> Option<&'s Value> {
    s.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn double(s: &Span, key: &str) -> Option<f64> {
    match get(s, key)? {
        Value::DoubleValue(v) => Some(*v),
        other => panic!("{key}: {other:?}"),
    }
}

fn string<'s>(s: &'s Span, key: &str) -> Option<&'s str> {
    match get(s, key)? {
        Value::StringValue(v) => Some(v),
        _ => None,
    }
}

/// Compile durations by target, straight from a case's timing.json.
fn compile_durations(case: &Path) -> HashMap<String, f64> {
    let doc: Json =
        serde_json::from_slice(&std::fs::read(invocation_dir(case).join("timing.json")).unwrap()).unwrap();
    let mut out = HashMap::new();
    fn walk(events: &Json, out: &mut HashMap<String, f64>) {
        for e in events.as_array().into_iter().flatten() {
            if e.get("rule_type").and_then(Json::as_str) == Some("compile") {
                let d = e["end_s"].as_f64().unwrap() - e["start_s"].as_f64().unwrap();
                out.insert(e["target"].as_str().unwrap().to_owned(), d);
            } else {
                walk(&e["rules"], out);
            }
        }
    }
    walk(&doc["phases"], &mut out);
    out
}

#[test]
fn ccache_hits_after_the_cold_build_get_the_time_saved() {
    let cases = corpus_dir().join("cases");
    let (cold, hit) = (
        cases.join("01-geom-shake-cold"),
        cases.join("03-geom-shake-ccache-hit"),
    );
    let history = Arc::new(History::new(HistoryConfig::default()));
    let (out, id) = run(&cold, &history);
    assert!(spans(&out)
        .iter()
        .all(|s| get(s, "ct.rule.time_saved_s").is_none()));
    assert!(history.commit(&id) > 0);

    let (out, _) = run(&hit, &history);
    let (before, after) = (compile_durations(&cold), compile_durations(&hit));
    let spans = spans(&out);
    let mut sum = 0.0;
    let mut hits = 0;
    for s in spans.iter().filter(|s| get(s, "ct.rule.cache_layer").is_some()) {
        let target = string(s, "ct.target").unwrap();
        assert_eq!(
            string(s, "ct.rule.cache_layer"),
            Some("ccache"),
            "{target}: case 03 hits every TU"
        );
        let want = before[target] - after[target];
        let got = double(s, "ct.rule.time_saved_s").unwrap_or_else(|| panic!("{target}: no time saved"));
        assert!((got - want).abs() < 1e-6, "{target}: {got} != {want}");
        sum += got;
        hits += 1;
    }
    assert_eq!(hits, 29);
    let root = &spans[0];
    let total = double(root, "ct.build.time_saved_s").unwrap();
    assert!((total - sum).abs() < 1e-6, "{total} != {sum}");
    assert!(total > 0.0, "ccache hits were faster than the cold compiles");
    // A re-read gives the same bytes.
    assert_eq!(run(&hit, &history).0.traces, out.traces);
}

#[test]
fn every_case_in_build_order_through_one_history() {
    let mut cases: Vec<_> = std::fs::read_dir(corpus_dir().join("cases"))
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.join("reference").join("001-traces.json").is_file())
        .collect();
    cases.sort();
    let history = Arc::new(History::new(HistoryConfig::default()));
    let mut saw_time_saved = false;
    for case in &cases {
        let (out, id) = run(case, &history);
        let spans = spans(&out);
        let rules: f64 = spans
            .iter()
            .filter_map(|s| double(s, "ct.rule.time_saved_s"))
            .sum();
        match double(&spans[0], "ct.build.time_saved_s") {
            Some(total) => {
                assert!(
                    (total - rules).abs() < 1e-6,
                    "{}: {total} != {rules}",
                    case.display()
                );
                saw_time_saved = true;
            }
            None => assert_eq!(rules, 0.0, "{}", case.display()),
        }
        assert_eq!(
            run(case, &history).0.traces,
            out.traces,
            "{}: re-read differs",
            case.display()
        );
        history.commit(&id);
    }
    assert!(saw_time_saved);
    let fp = history.footprint();
    assert!(fp.targets > 0 && fp.staged_builds == 0, "{fp:?}");
}
