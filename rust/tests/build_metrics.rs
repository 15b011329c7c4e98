//! The build metrics (`cicd.pipeline.run.duration`, `cicd.pipeline.run.errors`,
//! `ct.rule.duration`, `ct.compiles`) of every corpus build, checked against
//! the same build's trace: every histogram count, sum and bucket is
//! recomputed from the rule spans, every exemplar must name a rule span of
//! the trace with that duration and be the slowest of its bucket, and the
//! compile counts are the compile spans by their `ct.rule.cache_layer`.
//! Also: what the host identity changes (resource, temporality, point keys),
//! and that without the flag the request is ct-cake's, unchanged.

use crate::common;

use std::collections::BTreeMap;

use common::reference::{cases_with_reference, load_reference, request_for};
use compiletools_core::{process_build, BuildRequest, CancelToken, MetricIdentity};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AttrValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::exemplar::Value as ExemplarValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, HistogramDataPoint, Metric, NumberDataPoint, ScopeMetrics,
};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

const RULE_BOUNDS: [f64; 16] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];
const RUN_BOUNDS: [f64; 13] = [
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0,
];

fn run(req: &BuildRequest) -> (Vec<Span>, ExportMetricsServiceRequest) {
    let (spans, metrics, _) = run_with_resource(req);
    (spans, metrics)
}

/// The trace's spans, the metrics, and the trace resource's `ct.variant`.
fn run_with_resource(req: &BuildRequest) -> (Vec<Span>, ExportMetricsServiceRequest, Option<String>) {
    let out = process_build(req, &CancelToken::new()).expect("corpus build processes");
    let traces = ExportTraceServiceRequest::decode(out.traces.as_deref().expect("traces")).unwrap();
    let variant = traces.resource_spans[0]
        .resource
        .as_ref()
        .and_then(|r| str_attr(&r.attributes, "ct.variant").map(str::to_owned));
    let spans = traces
        .resource_spans
        .into_iter()
        .flat_map(|rs| rs.scope_spans)
        .flat_map(|ss| ss.spans)
        .collect();
    let metrics = ExportMetricsServiceRequest::decode(out.metrics.as_deref().expect("metrics")).unwrap();
    (spans, metrics, variant)
}

fn str_attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            AttrValue::StringValue(s) => Some(s.as_str()),
            _ => None,
        })
}

fn keys(attrs: &[KeyValue]) -> Vec<&str> {
    attrs.iter().map(|kv| kv.key.as_str()).collect()
}

fn build_scope(req: &ExportMetricsServiceRequest) -> &ScopeMetrics {
    let rm = &req.resource_metrics[0];
    let found: Vec<&ScopeMetrics> = rm
        .scope_metrics
        .iter()
        .filter(|sm| sm.scope.as_ref().is_some_and(|s| s.name == "compiletools"))
        .collect();
    assert_eq!(found.len(), 1, "one build metrics scope");
    found[0]
}

fn metric<'a>(sm: &'a ScopeMetrics, name: &str) -> Option<&'a Metric> {
    sm.metrics.iter().find(|m| m.name == name)
}

fn histogram(m: &Metric) -> (&[HistogramDataPoint], i32) {
    match &m.data {
        Some(Data::Histogram(h)) => (&h.data_points, h.aggregation_temporality),
        other => panic!("{} is not a histogram: {other:?}", m.name),
    }
}

fn sum(m: &Metric) -> (&[NumberDataPoint], i32, bool) {
    match &m.data {
        Some(Data::Sum(s)) => (&s.data_points, s.aggregation_temporality, s.is_monotonic),
        other => panic!("{} is not a sum: {other:?}", m.name),
    }
}

fn duration_s(span: &Span) -> f64 {
    (span.end_time_unix_nano - span.start_time_unix_nano) as f64 / 1e9
}

/// The rule spans below no other rule span, as an independent reading of
/// the trace: spans with `ct.rule_type` whose parent has none.
fn top_rule_spans(spans: &[Span]) -> Vec<&Span> {
    let is_rule: BTreeMap<&[u8], bool> = spans
        .iter()
        .map(|s| {
            (
                s.span_id.as_slice(),
                str_attr(&s.attributes, "ct.rule_type").is_some(),
            )
        })
        .collect();
    spans
        .iter()
        .filter(|s| str_attr(&s.attributes, "ct.rule_type").is_some())
        .filter(|s| !is_rule.get(s.parent_span_id.as_slice()).copied().unwrap_or(false))
        .collect()
}

fn layer_of(span: &Span) -> Option<&'static str> {
    if str_attr(&span.attributes, "ct.rule_type") != Some("compile") {
        return None;
    }
    Some(match str_attr(&span.attributes, "ct.rule.cache_layer") {
        Some("cas") => "cas",
        Some("ccache") => "ccache",
        Some("compiled") => "compiled",
        _ => "other",
    })
}

fn bucket(bounds: &[f64], v: f64) -> usize {
    bounds.iter().position(|b| v <= *b).unwrap_or(bounds.len())
}

#[test]
fn rule_histograms_and_exemplars_match_the_rule_spans_of_every_corpus_build() {
    let cases = cases_with_reference();
    assert!(cases.len() >= 10, "corpus cases: {}", cases.len());
    let (mut checked_points, mut checked_exemplars, mut compiles_total) = (0, 0, 0);
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let mut req = request_for(case, &load_reference(case));
        req.build_metrics = true;
        req.metric_identity = MetricIdentity::Host;
        req.metrics_as_spans = false;
        let (spans, metrics, variant) = run_with_resource(&req);
        let trace_id = spans[0].trace_id.clone();
        let sm = build_scope(&metrics);
        let rules = top_rule_spans(&spans);
        let by_id: BTreeMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();

        // Expected series from the spans, by (rule type, layer).
        let mut expected: BTreeMap<(String, Option<&str>), Vec<&Span>> = BTreeMap::new();
        for s in &rules {
            let t = str_attr(&s.attributes, "ct.rule_type").unwrap().to_owned();
            expected.entry((t, layer_of(s))).or_default().push(s);
        }
        let Some(rule_duration) = metric(sm, "ct.rule.duration") else {
            assert!(rules.is_empty(), "{name}: rules but no ct.rule.duration");
            assert!(
                metric(sm, "ct.compiles").is_none(),
                "{name}: ct.compiles without rules"
            );
            continue;
        };
        assert_eq!(rule_duration.unit, "s");
        let (points, temporality) = histogram(rule_duration);
        assert_eq!(temporality, AggregationTemporality::Delta as i32, "{name}");
        assert_eq!(
            points.len(),
            expected.len(),
            "{name}: one point per (type, layer)"
        );
        for p in points {
            let t = str_attr(&p.attributes, "ct.rule_type")
                .expect("ct.rule_type")
                .to_owned();
            let layer = str_attr(&p.attributes, "ct.rule.cache_layer");
            let key = (t.clone(), layer);
            let members = expected
                .get(&key)
                .unwrap_or_else(|| panic!("{name}: unexpected series {key:?}"));
            assert_eq!(p.explicit_bounds, RULE_BOUNDS);
            assert_eq!(p.count, members.len() as u64, "{name} {key:?} count");
            let want_sum: f64 = members.iter().map(|s| duration_s(s)).sum();
            assert!((p.sum.unwrap() - want_sum).abs() < 1e-9, "{name} {key:?} sum");
            let mut want_buckets = vec![0u64; RULE_BOUNDS.len() + 1];
            for s in members {
                want_buckets[bucket(&RULE_BOUNDS, duration_s(s))] += 1;
            }
            assert_eq!(p.bucket_counts, want_buckets, "{name} {key:?} buckets");
            assert_eq!(
                str_attr(&p.attributes, "ct.variant"),
                variant.as_deref(),
                "{name}: ct.variant"
            );
            // One exemplar per non-empty bucket: the slowest span of it.
            let nonempty = want_buckets.iter().filter(|n| **n > 0).count();
            assert_eq!(p.exemplars.len(), nonempty, "{name} {key:?} exemplars");
            for e in &p.exemplars {
                assert_eq!(e.trace_id, trace_id, "{name}: exemplar of another trace");
                let span = by_id
                    .get(e.span_id.as_slice())
                    .unwrap_or_else(|| panic!("{name}: exemplar span {:02x?} not in the trace", e.span_id));
                assert!(
                    members.iter().any(|m| m.span_id == span.span_id),
                    "{name}: exemplar of another series"
                );
                let Some(ExemplarValue::AsDouble(v)) = e.value else {
                    panic!("double exemplar")
                };
                assert_eq!(
                    v,
                    duration_s(span),
                    "{name}: exemplar value is its span's duration"
                );
                assert_eq!(e.time_unix_nano, span.end_time_unix_nano);
                let b = bucket(&RULE_BOUNDS, v);
                let slowest = members
                    .iter()
                    .filter(|m| bucket(&RULE_BOUNDS, duration_s(m)) == b)
                    .map(|m| duration_s(m))
                    .fold(f64::MIN, f64::max);
                assert_eq!(v, slowest, "{name}: exemplar is the slowest of bucket {b}");
                checked_exemplars += 1;
            }
            checked_points += 1;
        }

        let (cpoints, ctemp, monotonic) = sum(metric(sm, "ct.compiles").expect("ct.compiles with rules"));
        assert!(monotonic);
        assert_eq!(ctemp, AggregationTemporality::Delta as i32);
        let got: Vec<(&str, i64)> = cpoints
            .iter()
            .map(|p| {
                let Some(Value::AsInt(n)) = p.value else {
                    panic!("int")
                };
                (str_attr(&p.attributes, "ct.rule.cache_layer").unwrap(), n)
            })
            .collect();
        let want: Vec<(&str, i64)> = ["cas", "ccache", "compiled", "other"]
            .into_iter()
            .map(|l| (l, rules.iter().filter(|s| layer_of(s) == Some(l)).count() as i64))
            .collect();
        assert_eq!(got, want, "{name}: compiles by layer");
        compiles_total += want.iter().map(|(_, n)| n).sum::<i64>();
    }
    println!(
        "checked {checked_points} histogram points, {checked_exemplars} exemplars, {compiles_total} compiles"
    );
    assert!(checked_points >= 20 && checked_exemplars >= 30 && compiles_total > 0);
}

fn spans_root(spans: &[Span]) -> &Span {
    spans
        .iter()
        .find(|s| s.parent_span_id.is_empty())
        .expect("root span")
}

#[test]
fn run_duration_and_errors_follow_the_root_span() {
    let mut failures = 0;
    for case in cases_with_reference() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let mut req = request_for(&case, &load_reference(&case));
        req.build_metrics = true;
        req.metric_identity = MetricIdentity::Host;
        req.pipeline_name = "geom-pipeline".to_owned();
        let (spans, metrics) = run(&req);
        let root = spans_root(&spans);
        let sm = build_scope(&metrics);
        let (points, _) = histogram(metric(sm, "cicd.pipeline.run.duration").expect("run duration"));
        assert_eq!(points.len(), 1);
        let p = &points[0];
        assert_eq!(p.explicit_bounds, RUN_BOUNDS);
        assert_eq!((p.count, p.sum), (1, Some(duration_s(root))), "{name}");
        assert_eq!(
            (p.start_time_unix_nano, p.time_unix_nano),
            (root.start_time_unix_nano, root.end_time_unix_nano)
        );
        assert_eq!(p.exemplars.len(), 1);
        assert_eq!(
            (&p.exemplars[0].trace_id, &p.exemplars[0].span_id),
            (&root.trace_id, &root.span_id)
        );
        let result = str_attr(&root.attributes, "cicd.pipeline.result");
        assert_eq!(str_attr(&p.attributes, "cicd.pipeline.result"), result, "{name}");
        assert_eq!(
            str_attr(&p.attributes, "cicd.pipeline.name"),
            Some("geom-pipeline")
        );
        assert!(
            str_attr(&p.attributes, "ct.variant").is_some()
                && str_attr(&p.attributes, "ct.backend").is_some()
        );
        let errors = metric(sm, "cicd.pipeline.run.errors");
        if result == Some("failure") {
            let (ep, _, monotonic) = sum(errors.expect("errors on a failed build"));
            assert!(monotonic);
            assert_eq!(ep[0].value, Some(Value::AsInt(1)));
            assert_eq!(
                str_attr(&ep[0].attributes, "error.type"),
                str_attr(&root.attributes, "error.type")
            );
            failures += 1;
        } else {
            assert!(errors.is_none(), "{name}: errors without a known failure");
        }
    }
    assert!(failures >= 1, "the corpus has a failed build (case 10)");
}

fn double_attr(attrs: &[KeyValue], key: &str) -> Option<f64> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            AttrValue::DoubleValue(v) => Some(*v),
            _ => None,
        })
}

/// One observation per build of a root span's analytics attribute: the
/// value, the bounds, the build's interval, the root span as exemplar, and
/// the build's series keys — those of its `cicd.pipeline.run.duration`
/// point without the result — plus `extra`.
#[allow(clippy::too_many_arguments)]
fn assert_one_root_observation(
    name: &str,
    m: &Metric,
    unit: &str,
    bounds: &[f64],
    value: f64,
    root: &Span,
    run_point: &HistogramDataPoint,
    extra: &[(&str, &str)],
) {
    assert_eq!(m.unit, unit, "{name} {}", m.name);
    let (points, temporality) = histogram(m);
    assert_eq!(
        temporality,
        AggregationTemporality::Delta as i32,
        "{name} {}",
        m.name
    );
    assert_eq!(points.len(), 1, "{name} {}", m.name);
    let p = &points[0];
    assert_eq!(p.explicit_bounds, bounds, "{name} {}", m.name);
    assert_eq!((p.count, p.sum), (1, Some(value)), "{name} {}", m.name);
    assert_eq!((p.min, p.max), (Some(value), Some(value)), "{name} {}", m.name);
    assert_eq!(p.bucket_counts.iter().sum::<u64>(), 1);
    assert_eq!(
        p.bucket_counts[bucket(bounds, value)],
        1,
        "{name} {}: bucket of {value}",
        m.name
    );
    assert_eq!(
        (p.start_time_unix_nano, p.time_unix_nano),
        (root.start_time_unix_nano, root.end_time_unix_nano)
    );
    assert_eq!(p.exemplars.len(), 1);
    assert_eq!(
        (&p.exemplars[0].trace_id, &p.exemplars[0].span_id),
        (&root.trace_id, &root.span_id)
    );
    assert_eq!(p.exemplars[0].value, Some(ExemplarValue::AsDouble(value)));
    let strings = |attrs: &[KeyValue]| -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = attrs
            .iter()
            .map(|kv| {
                (
                    kv.key.clone(),
                    str_attr(attrs, &kv.key).expect("string attribute").to_owned(),
                )
            })
            .collect();
        out.sort();
        out
    };
    let mut want: Vec<(String, String)> = strings(&run_point.attributes)
        .into_iter()
        // The analytics points are known whatever the run's state and result.
        .filter(|(k, _)| {
            !["cicd.pipeline.result", "cicd.pipeline.run.state", "error.type"].contains(&k.as_str())
        })
        .chain(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    want.sort();
    assert!(want.iter().any(|(k, _)| k == "ct.variant") && want.iter().any(|(k, _)| k == "ct.backend"));
    assert_eq!(
        strings(&p.attributes),
        want,
        "{name} {}: point attributes",
        m.name
    );
}

/// The analytics metrics carry exactly the root span's numbers:
/// `ct.build.critical_path.duration` = `ct.build.critical_path_s` by
/// `ct.build.critical_path.method`, `ct.build.parallelism` =
/// `ct.build.parallelism.avg`; each absent exactly when its attribute is.
#[test]
fn critical_path_and_parallelism_metrics_are_the_root_span_attributes() {
    const PARALLELISM_BOUNDS: [f64; 15] = [
        1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0, 96.0, 128.0,
    ];
    let (mut paths, mut parallel, mut without) = (0, 0, 0);
    for case in cases_with_reference() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let mut req = request_for(&case, &load_reference(&case));
        req.build_metrics = true;
        req.metric_identity = MetricIdentity::Host;
        req.pipeline_name = "geom-pipeline".to_owned();
        let (spans, metrics) = run(&req);
        let root = spans_root(&spans);
        let sm = build_scope(&metrics);
        let (run_points, _) = histogram(metric(sm, "cicd.pipeline.run.duration").expect("run duration"));
        let path = double_attr(&root.attributes, "ct.build.critical_path_s");
        let method = str_attr(&root.attributes, "ct.build.critical_path.method");
        match (metric(sm, "ct.build.critical_path.duration"), path, method) {
            (Some(m), Some(path), Some(method)) => {
                assert_one_root_observation(
                    &name,
                    m,
                    "s",
                    &RUN_BOUNDS,
                    path,
                    root,
                    &run_points[0],
                    &[("ct.build.critical_path.method", method)],
                );
                paths += 1;
            }
            (None, None, None) => without += 1,
            (m, p, meth) => panic!(
                "{name}: metric {:?}, root path {p:?} {meth:?}",
                m.map(|m| &m.name)
            ),
        }
        let avg = double_attr(&root.attributes, "ct.build.parallelism.avg");
        match (metric(sm, "ct.build.parallelism"), avg) {
            (Some(m), Some(avg)) => {
                assert_one_root_observation(
                    &name,
                    m,
                    "1",
                    &PARALLELISM_BOUNDS,
                    avg,
                    root,
                    &run_points[0],
                    &[],
                );
                parallel += 1;
            }
            (None, None) => {}
            (m, a) => panic!("{name}: parallelism metric {:?}, root avg {a:?}", m.is_some()),
        }
    }
    println!("{paths} builds with a critical path metric, {parallel} with parallelism, {without} without");
    assert!(paths >= 10 && parallel >= 10, "{paths} {parallel}");
}

#[test]
fn host_identity_shares_the_resource_and_moves_build_keys_to_the_points() {
    let case = cases_with_reference()
        .into_iter()
        .find(|c| c.ends_with("03-geom-shake-ccache-hit"))
        .expect("case 03");
    let mut req = request_for(&case, &load_reference(&case));
    req.build_metrics = true;
    req.metric_identity = MetricIdentity::Host;
    req.pipeline_name = "geom".to_owned();
    req.git_commit_sha = Some("a".repeat(40));
    req.resource_attributes.push(("team".to_owned(), "t".to_owned()));
    let (_, metrics) = run(&req);
    let rm = &metrics.resource_metrics[0];
    let resource = &rm.resource.as_ref().unwrap().attributes;
    assert_eq!(
        keys(resource),
        [
            "service.name",
            "service.namespace",
            "host.name",
            "service.instance.id",
            "cicd.worker.id",
            "cicd.worker.name",
            "team"
        ]
    );
    assert_eq!(
        str_attr(resource, "service.instance.id"),
        str_attr(resource, "host.name")
    );
    let ccache = rm
        .scope_metrics
        .iter()
        .find(|sm| sm.scope.as_ref().unwrap().name == "compiletools.ccache")
        .expect("ccache scope");
    let (events, temporality, _) = sum(&ccache.metrics[0]);
    assert_eq!(temporality, AggregationTemporality::Delta as i32);
    assert_eq!(
        keys(&events[0].attributes),
        ["ccache_event", "ct.variant", "cicd.pipeline.name"]
    );
    let Some(Data::Gauge(g)) = &ccache.metrics[1].data else {
        panic!("gauge")
    };
    assert_eq!(
        keys(&g.data_points[0].attributes),
        ["ct.variant", "cicd.pipeline.name"]
    );
}

/// Per-build identity is ct-cake's request plus one scope: the resource and
/// the ccache scope are byte-identical to the request without build metrics.
#[test]
fn per_build_identity_keeps_the_ccache_request_byte_identical() {
    for case in cases_with_reference() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let req = request_for(&case, &load_reference(&case));
        if req.metrics_as_spans || req.statslog.is_none() {
            continue;
        }
        let before = process_build(&req, &CancelToken::new()).unwrap().metrics;
        let Some(before) = before else { continue };
        let mut with = req.clone();
        with.build_metrics = true;
        let after = process_build(&with, &CancelToken::new())
            .unwrap()
            .metrics
            .unwrap();
        let after = ExportMetricsServiceRequest::decode(after.as_slice()).unwrap();
        let before = ExportMetricsServiceRequest::decode(before.as_slice()).unwrap();
        let (b, a) = (&before.resource_metrics[0], &after.resource_metrics[0]);
        assert_eq!(
            a.resource.as_ref().unwrap().encode_to_vec(),
            b.resource.as_ref().unwrap().encode_to_vec(),
            "{name}: resource"
        );
        assert_eq!(
            a.scope_metrics[0].encode_to_vec(),
            b.scope_metrics[0].encode_to_vec(),
            "{name}: ccache scope"
        );
        assert_eq!(a.scope_metrics.len(), 2);
        let run = metric(&a.scope_metrics[1], "cicd.pipeline.run.duration").expect("run duration");
        let (points, temporality) = histogram(run);
        assert_eq!(
            temporality,
            AggregationTemporality::Cumulative as i32,
            "{name}: each build its own series"
        );
        assert!(!points.is_empty());
    }
}
