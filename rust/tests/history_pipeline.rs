//! `process_build` with the receiver's compile history: a compile followed
//! by cache hits of the same targets in a later build gives known time
//! saved (spans, root, metric), a re-read gives the same bytes, and a build
//! is only remembered once committed.

use crate::common;

use std::sync::Arc;

use common::fixture::{attr, span};
use compiletools_core::history::{History, HistoryConfig};
use compiletools_core::{process_build, BuildOutput, BuildRequest, CancelToken};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as PointValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// A build ending at `hh`:00 with compiles of a.cpp and b.cpp (b a CAS hit
/// when `b_cas`) and a link, of the given durations (s).
fn doc(hh: u32, a: f64, b: f64, b_cas: bool, link: f64) -> String {
    let rule = |name: &str, rule_type: &str, target: &str, dur: f64, meta: &str| {
        format!(
            r#"{{"name": "{name}", "rule_type": "{rule_type}", "target": "{target}", "source": "/s/{name}",
                "start_s": 101.0, "end_s": {}, "metadata": {meta}}}"#,
            101.0 + dur
        )
    };
    let cas = |hit: bool| {
        format!(
            r#"{{"cas.hit": {hit}, "ct.rule.cache_layer": "{}"}}"#,
            if hit { "cas" } else { "other" }
        )
    };
    format!(
        r#"{{"timestamp": "2026-11-30T{hh:02}:00:00+00:00", "total_elapsed_s": 10.0, "variant": "gcc.debug",
            "backend": "ninja", "start_s": 100.0, "phases": [{{"name": "build_execution", "start_s": 100.0,
            "end_s": 110.0, "rules": [{}, {}, {}]}}]}}"#,
        rule("a.cpp", "compile", "/o/a.o", a, &cas(false)),
        rule("b.cpp", "compile", "/o/b.o", b, &cas(b_cas)),
        rule("app", "link", "/e/app", link, "{}"),
    )
}

struct Build {
    _root: tempfile::TempDir,
    req: BuildRequest,
}

fn build(id: &str, timing: &str, statslog: Option<&str>, history: &Arc<History>) -> Build {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(id);
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("timing.json"), timing).unwrap();
    let mut req = BuildRequest::new(&dir, "host-a");
    if let Some(log) = statslog {
        let path = root.path().join("ccache.statslog");
        std::fs::write(&path, log).unwrap();
        req.statslog = Some(path);
    }
    req.history = Some(Arc::clone(history));
    Build { _root: root, req }
}

impl Build {
    fn run(&self) -> BuildOutput {
        process_build(&self.req, &CancelToken::new()).unwrap()
    }

    fn commit(&self, history: &History) -> usize {
        history.commit(&self.req.invocation_dir.to_string_lossy())
    }
}

fn spans(out: &BuildOutput) -> Vec<Span> {
    let req = ExportTraceServiceRequest::decode(out.traces.as_deref().unwrap()).unwrap();
    req.resource_spans[0].scope_spans[0].spans.clone()
}

fn double(s: &Span, key: &str) -> Option<f64> {
    match attr(s, key)? {
        Value::DoubleValue(v) => Some(*v),
        other => panic!("{key} is {other:?}"),
    }
}

fn close(got: Option<f64>, want: f64) {
    let got = got.expect("attribute present");
    assert!((got - want).abs() < 1e-6, "{got} != {want}");
}

/// The `ct.cache.time_saved` points as (layer, value).
fn time_saved_points(out: &BuildOutput) -> Vec<(String, f64)> {
    let req = ExportMetricsServiceRequest::decode(out.metrics.as_deref().unwrap_or_default()).unwrap();
    let mut got = Vec::new();
    for rm in &req.resource_metrics {
        for sm in &rm.scope_metrics {
            for m in sm.metrics.iter().filter(|m| m.name == "ct.cache.time_saved") {
                let Some(Data::Sum(sum)) = &m.data else {
                    panic!("not a sum")
                };
                for p in &sum.data_points {
                    let Some(Value::StringValue(layer)) =
                        p.attributes[0].value.as_ref().and_then(|v| v.value.clone())
                    else {
                        panic!("no layer")
                    };
                    let Some(PointValue::AsDouble(v)) = p.value else {
                        panic!("not a double")
                    };
                    got.push((layer, v));
                }
            }
        }
    }
    got
}

const FIRST_LOG: &str = "# /s/a.cpp\ncache_miss\n";
const SECOND_LOG: &str = "# /s/a.cpp\ndirect_cache_hit\n";

#[test]
fn a_compile_then_a_hit_gives_the_time_saved_on_spans_root_and_metric() {
    let history = Arc::new(History::new(HistoryConfig::default()));
    // Build 1: a.cpp compiled (ccache miss, 3 s), b.cpp compiled (no
    // statslog block, 2 s), the link 1 s.
    let b1 = build(
        "20261130T010000-1",
        &doc(1, 3.0, 2.0, false, 1.0),
        Some(FIRST_LOG),
        &history,
    );
    let out = b1.run();
    let s = spans(&out);
    for key in ["ct.build.time_saved_s", "ct.build.top_regressions"] {
        assert!(attr(&s[0], key).is_none(), "{key} without any history");
    }
    assert_eq!(b1.commit(&history), 3);

    // Build 2: a.cpp a ccache hit (0.5 s), b.cpp a CAS hit (0.25 s), the link 1.5 s.
    let b2 = build(
        "20261130T020000-2",
        &doc(2, 0.5, 0.25, true, 1.5),
        Some(SECOND_LOG),
        &history,
    );
    let out = b2.run();
    let s = spans(&out);
    close(double(span(&s, "compile.s/a.cpp"), "ct.rule.time_saved_s"), 2.5);
    close(double(span(&s, "compile.s/b.cpp"), "ct.rule.time_saved_s"), 1.75);
    close(double(span(&s, "link.s/app"), "ct.rule.duration_delta_s"), 0.5);
    assert!(attr(span(&s, "link.s/app"), "ct.rule.time_saved_s").is_none());
    close(double(&s[0], "ct.build.time_saved_s"), 4.25);
    assert_eq!(
        attr(&s[0], "ct.build.cache_slower_hits"),
        Some(&Value::IntValue(0))
    );
    let Some(Value::ArrayValue(top)) = attr(&s[0], "ct.build.top_regressions") else {
        panic!("no top regressions")
    };
    assert_eq!(top.values.len(), 1);
    assert_eq!(top.values[0].value, Some(Value::StringValue("link.s/app".into())));
    // The history attributes follow the analytics on the rule.
    let keys: Vec<&str> = span(&s, "compile.s/a.cpp")
        .attributes
        .iter()
        .map(|kv| kv.key.as_str())
        .collect();
    let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert!(at("ct.rule.weighted_s") < at("ct.rule.time_saved_s"));
    assert_eq!(
        time_saved_points(&out),
        [("cas".to_owned(), 1.75), ("ccache".to_owned(), 2.5)]
    );
    // A re-read (a failed delivery, or after a crash) gives the same bytes.
    let again = b2.run();
    assert_eq!(again.traces, out.traces);
    assert_eq!(again.metrics, out.metrics);
    // Committed, and read again: still the same.
    b2.commit(&history);
    assert_eq!(b2.run().traces, out.traces);
}

#[test]
fn an_uncommitted_build_is_not_remembered_and_metrics_only_still_get_the_metric() {
    let history = Arc::new(History::new(HistoryConfig::default()));
    let b1 = build("20261130T010000-1", &doc(1, 3.0, 2.0, false, 1.0), None, &history);
    b1.run();
    let mut b2 = build("20261130T020000-2", &doc(2, 0.5, 0.25, true, 1.5), None, &history);
    assert!(
        time_saved_points(&b2.run()).is_empty(),
        "build 1 was never committed"
    );
    b1.commit(&history);
    b2.req.signals = compiletools_core::Signals {
        traces: false,
        metrics: true,
    };
    let out = b2.run();
    assert!(out.traces.is_none());
    assert_eq!(time_saved_points(&out), [("cas".to_owned(), 1.75)]);
    // And ct.rebuilds: a.cpp ran (not a CAS name: not_cas), one point per reason.
    assert_eq!(rebuild_points(&out), [0, 0, 0, 0, 0, 1]);
    assert_eq!(out.summary.metric_points, 1 + 6);
}

/// The `ct.rebuilds` values in reason order.
fn rebuild_points(out: &BuildOutput) -> Vec<i64> {
    let req = ExportMetricsServiceRequest::decode(out.metrics.as_deref().unwrap()).unwrap();
    req.resource_metrics
        .iter()
        .flat_map(|rm| &rm.scope_metrics)
        .flat_map(|sm| &sm.metrics)
        .filter(|m| m.name == "ct.rebuilds")
        .flat_map(|m| match &m.data {
            Some(Data::Sum(s)) => s.data_points.clone(),
            _ => Vec::new(),
        })
        .map(|p| match p.value {
            Some(PointValue::AsInt(v)) => v,
            _ => -1,
        })
        .collect()
}

#[test]
fn without_a_history_nothing_changes() {
    let history = Arc::new(History::new(HistoryConfig::default()));
    let b = build("20261130T010000-1", &doc(1, 3.0, 2.0, true, 1.0), None, &history);
    let with = b.run();
    let mut plain = b.req.clone();
    plain.history = None;
    let without = process_build(&plain, &CancelToken::new()).unwrap();
    // A first build has nothing to compare with: the same spans as without
    // a history but for the rebuild reasons (every compile is new or, here,
    // not a CAS name) and their counts on the root.
    let rebuild_key = |k: &str| k.starts_with("ct.rule.rebuild") || k.starts_with("ct.build.rebuild.");
    let strip = |bytes: &[u8]| {
        let mut req = ExportTraceServiceRequest::decode(bytes).unwrap();
        let mut removed = Vec::new();
        for s in req
            .resource_spans
            .iter_mut()
            .flat_map(|r| &mut r.scope_spans)
            .flat_map(|s| &mut s.spans)
        {
            s.attributes.retain(|kv| {
                let keep = !rebuild_key(&kv.key);
                if !keep {
                    removed.push((s.name.clone(), kv.key.clone()));
                }
                keep
            });
        }
        (req, removed)
    };
    let (with_stripped, removed) = strip(with.traces.as_deref().unwrap());
    let (without_stripped, none) = strip(without.traces.as_deref().unwrap());
    assert_eq!(with_stripped, without_stripped);
    assert!(none.is_empty());
    let on_rules: Vec<&str> = removed
        .iter()
        .filter(|(n, _)| n != "compiletools.build")
        .map(|(_, k)| k.as_str())
        .collect();
    assert_eq!(
        on_rules,
        ["ct.rule.rebuild_reason"],
        "a.cpp ran, b.cpp was a CAS hit"
    );
    assert_eq!(
        removed.len(),
        1 + 7,
        "and six counts and ccache_served on the root"
    );
    assert!(without.metrics.is_none());
}

#[test]
fn a_regressed_rule_is_the_rule_duration_exemplar_carrying_its_delta() {
    let history = Arc::new(History::new(HistoryConfig::default()));
    let b1 = build("20261130T010000-1", &doc(1, 3.0, 2.0, false, 1.0), None, &history);
    b1.run();
    b1.commit(&history);
    // The link takes 1.5 s, 0.5 s over its last (and only) 1 s.
    let mut b2 = build("20261130T020000-2", &doc(2, 3.0, 2.0, false, 1.5), None, &history);
    b2.req.build_metrics = true;
    let out = b2.run();
    let req = ExportMetricsServiceRequest::decode(out.metrics.as_deref().unwrap()).unwrap();
    let mut link_exemplars = Vec::new();
    for m in req
        .resource_metrics
        .iter()
        .flat_map(|rm| &rm.scope_metrics)
        .flat_map(|sm| &sm.metrics)
        .filter(|m| m.name == "ct.rule.duration")
    {
        let Some(Data::Histogram(h)) = &m.data else {
            panic!("not a histogram")
        };
        for p in &h.data_points {
            let is_link = p.attributes.iter().any(|kv| {
                kv.key == "ct.rule_type"
                    && kv.value.as_ref().and_then(|v| v.value.clone())
                        == Some(Value::StringValue("link".into()))
            });
            if is_link {
                link_exemplars.extend(p.exemplars.iter().cloned());
            }
        }
    }
    assert_eq!(link_exemplars.len(), 1, "{link_exemplars:?}");
    let e = &link_exemplars[0];
    let s = spans(&out);
    assert_eq!(e.span_id, span(&s, "link.s/app").span_id);
    let delta = e
        .filtered_attributes
        .iter()
        .find(|kv| kv.key == "ct.rule.duration_delta_s")
        .and_then(|kv| kv.value.as_ref()?.value.clone());
    let Some(Value::DoubleValue(d)) = delta else {
        panic!("no delta on the exemplar: {e:?}")
    };
    assert!((d - 0.5).abs() < 1e-6, "{d}");
}

/// A CAS build ending at `hh`:00: util.cpp and main.cpp compiled with the
/// given object keys, and a link.
fn cas_doc(hh: u32, util_key: &str, main_key: Option<&str>) -> String {
    let compile = |src: &str, key: &str| {
        format!(
            r#"{{"name": "{src}.cpp", "rule_type": "compile",
                "target": "/p/cas-objdir/v/0d/{src}_{key}.o", "source": "/p/src/{src}.cpp",
                "start_s": 101.0, "end_s": 103.0, "metadata": {{"cas.hit": false, "ct.rule.cache_layer": "other"}}}}"#
        )
    };
    let mut rules = vec![compile("util", util_key)];
    if let Some(k) = main_key {
        rules.push(compile("main", k));
    }
    rules.push(
        r#"{"name": "main_x.o", "rule_type": "link", "target": "/p/cas-exedir/v/51/main_517764c2.exe",
            "start_s": 103.0, "end_s": 104.0}"#
            .to_owned(),
    );
    format!(
        r#"{{"timestamp": "2026-11-30T{hh:02}:00:00+00:00", "total_elapsed_s": 10.0, "variant": "gcc.debug",
            "backend": "shake", "start_s": 100.0, "phases": [{{"name": "build_execution", "start_s": 100.0,
            "end_s": 110.0, "rules": [{}]}}]}}"#,
        rules.join(",")
    )
}

fn string(s: &Span, key: &str) -> Option<String> {
    match attr(s, key)? {
        Value::StringValue(v) => Some(v.clone()),
        other => panic!("{key} is {other:?}"),
    }
}

#[test]
fn rebuild_reasons_and_the_link_to_the_previous_build() {
    let history = Arc::new(History::new(HistoryConfig::default()));
    let b1 = build(
        "20261130T010000-1",
        &cas_doc(
            1,
            "0d99ae76451a_0af5b42cc55ffb_d85fc71f180bdf74",
            Some("71d46a082188_0af5b42cc55ffb_d85fc71f180bdf74"),
        ),
        None,
        &history,
    );
    let out1 = b1.run();
    let s1 = spans(&out1);
    assert!(s1[0].links.is_empty(), "no previous build");
    assert_eq!(
        string(span(&s1, "compile.src/util.cpp"), "ct.rule.rebuild_reason").as_deref(),
        Some("new")
    );
    b1.commit(&history);
    // Build 2: util.cpp's headers changed; main.cpp not rebuilt (a CAS hit
    // in shake: not recorded).
    let b2 = build(
        "20261130T020000-2",
        &cas_doc(2, "0d99ae76451a_1111111111111f_d85fc71f180bdf74", None),
        None,
        &history,
    );
    let out2 = b2.run();
    let s2 = spans(&out2);
    let util = span(&s2, "compile.src/util.cpp");
    assert_eq!(
        string(util, "ct.rule.rebuild_reason").as_deref(),
        Some("headers_changed")
    );
    let Some(Value::ArrayValue(changed)) = attr(util, "ct.rule.rebuild_changed") else {
        panic!("no changed parts")
    };
    assert_eq!(changed.values.len(), 1);
    assert_eq!(
        attr(&s2[0], "ct.build.rebuild.headers_changed"),
        Some(&Value::IntValue(1))
    );
    assert_eq!(attr(&s2[0], "ct.build.rebuild.new"), Some(&Value::IntValue(0)));
    // Linked to build 1's root span; main.cpp is the rule removed.
    let link = &s2[0].links;
    assert_eq!(link.len(), 1);
    assert_eq!(link[0].trace_id, s1[0].trace_id);
    assert_eq!(link[0].span_id, s1[0].span_id);
    assert_eq!(
        attr(&s2[0], "ct.build.compare.rules_removed"),
        Some(&Value::IntValue(1))
    );
    assert_eq!(
        attr(&s2[0], "ct.build.compare.rules_added"),
        Some(&Value::IntValue(0))
    );
    assert_eq!(
        string(&s2[0], "ct.build.compare.previous_trace_id"),
        Some(s1[0].trace_id.iter().map(|b| format!("{b:02x}")).collect())
    );
    // The link is in the streamed chunks too, byte for byte.
    let stream = compiletools_core::pipeline::open_build(&b2.req, &CancelToken::new(), 0).unwrap();
    let chunks = stream.traces.unwrap();
    assert_eq!(chunks.chunk(0).unwrap(), out2.traces.clone().unwrap());
    // Re-read: the same bytes.
    assert_eq!(b2.run().traces, out2.traces);
}
