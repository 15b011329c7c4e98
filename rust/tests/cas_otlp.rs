//! Our CAS-health OTLP against what `ct-cache-report --otel-export` sent
//! (corpus `reference-cache-report/001-metrics.json` and
//! `reference-cache-report-as-spans/001-traces.json`, proto3 JSON).
//!
//! The store numbers come from the case's `cache-report.json` (the scan
//! itself is checked in `cas_corpus.rs`), the resource attributes and the
//! time from the reference, so everything that differs is our encoding.

mod cas_support;

use cas_support::{case_name, cases, materialize, parse_listing, read_json, reported};
use compiletools_core::cas::{scan_store, CasKind, StoreStats};
use compiletools_core::otlp::{encode_cas_metrics_request, encode_cas_snapshot_span_request};
use compiletools_core::CancelToken;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValueKind;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as PointValue;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::Value as Json;

/// Resource attributes of a proto3-JSON resource, as (key, string) pairs.
fn resource_pairs(resource: &Json) -> Vec<(String, String)> {
    resource["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["key"].as_str().unwrap().to_owned(),
                a["value"]["stringValue"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A resource holding `pairs` as string attributes.
fn resource_of(pairs: &[(String, String)]) -> Resource {
    Resource {
        attributes: pairs
            .iter()
            .map(|(k, v)| KeyValue {
                key: k.clone(),
                value: Some(AnyValue {
                    value: Some(AnyValueKind::StringValue(v.clone())),
                }),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn our_pairs(attrs: &[KeyValue]) -> Vec<(String, String)> {
    attrs
        .iter()
        .map(|kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(AnyValueKind::StringValue(s)) => (kv.key.clone(), s.clone()),
            other => panic!("{}: not a string: {other:?}", kv.key),
        })
        .collect()
}

fn int_attr(kv: &KeyValue) -> (String, i64) {
    match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(AnyValueKind::IntValue(i)) => (kv.key.clone(), *i),
        other => panic!("{}: not an int: {other:?}", kv.key),
    }
}

fn json_u64(v: &Json) -> u64 {
    v.as_str().unwrap().parse().unwrap()
}

/// The stores a reference reports, in its point order, with the numbers of
/// the case's cache-report.json.
fn stores_of(case: &std::path::Path, kinds: &[CasKind]) -> Vec<(CasKind, StoreStats)> {
    let report = read_json(&case.join("cache-report.json"));
    kinds
        .iter()
        .map(|&kind| {
            let f = reported(&report, kind).unwrap();
            let stats = StoreStats {
                exists: true,
                total_bytes: f.total_bytes,
                total_entries: f.total_entries,
                unique_buckets: f.unique_buckets,
                wasted_bytes: f.wasted_bytes,
                duplicate_groups: f.duplicate_groups,
                ..StoreStats::default()
            };
            (kind, stats)
        })
        .collect()
}

/// Compares our metrics request with a reference request, field by field.
fn compare_metrics(name: &str, ours: &ExportMetricsServiceRequest, reference: &Json) {
    let rm_ref = &reference["resourceMetrics"];
    assert_eq!(
        ours.resource_metrics.len(),
        rm_ref.as_array().unwrap().len(),
        "{name}"
    );
    let rm = &ours.resource_metrics[0];
    let rm_ref = &rm_ref[0];
    assert_eq!(
        our_pairs(&rm.resource.as_ref().unwrap().attributes),
        resource_pairs(&rm_ref["resource"]),
        "{name}"
    );
    assert_eq!(rm.scope_metrics.len(), 1, "{name}");
    let sm = &rm.scope_metrics[0];
    let sm_ref = &rm_ref["scopeMetrics"][0];
    let scope = sm.scope.as_ref().unwrap();
    assert_eq!(scope.name, sm_ref["scope"]["name"].as_str().unwrap(), "{name}");
    assert_eq!(
        scope.version,
        sm_ref["scope"]["version"].as_str().unwrap_or(""),
        "{name}"
    );
    let metrics_ref = sm_ref["metrics"].as_array().unwrap();
    assert_eq!(sm.metrics.len(), metrics_ref.len(), "{name}");
    for (m, m_ref) in sm.metrics.iter().zip(metrics_ref) {
        assert_eq!(m.name, m_ref["name"].as_str().unwrap(), "{name}");
        assert_eq!(
            m.description,
            m_ref["description"].as_str().unwrap_or(""),
            "{name} {}",
            m.name
        );
        assert_eq!(m.unit, m_ref["unit"].as_str().unwrap_or(""), "{name} {}", m.name);
        let Some(Data::Gauge(g)) = &m.data else {
            panic!("{name} {}: not a gauge", m.name)
        };
        let points_ref = m_ref["gauge"]["dataPoints"].as_array().unwrap();
        assert_eq!(g.data_points.len(), points_ref.len(), "{name} {}", m.name);
        for (p, p_ref) in g.data_points.iter().zip(points_ref) {
            assert_eq!(
                p.time_unix_nano,
                json_u64(&p_ref["timeUnixNano"]),
                "{name} {}",
                m.name
            );
            let start_ref = p_ref.get("startTimeUnixNano").map(json_u64).unwrap_or(0);
            assert_eq!(p.start_time_unix_nano, start_ref, "{name} {}", m.name);
            let want: i64 = p_ref["asInt"].as_str().unwrap().parse().unwrap();
            assert_eq!(p.value, Some(PointValue::AsInt(want)), "{name} {}", m.name);
            let attrs_ref: Vec<(String, String)> = p_ref["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    (
                        a["key"].as_str().unwrap().to_owned(),
                        a["value"]["stringValue"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            assert_eq!(our_pairs(&p.attributes), attrs_ref, "{name} {}", m.name);
            assert!(p.exemplars.is_empty() && p.flags == 0, "{name}");
        }
    }
}

/// Kinds in a reference's point order.
fn kinds_of(reference: &Json) -> Vec<CasKind> {
    reference["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["gauge"]["dataPoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| CasKind::parse(p["attributes"][0]["value"]["stringValue"].as_str().unwrap()).unwrap())
        .collect()
}

#[test]
fn metrics_match_every_reference() {
    let mut checked = 0;
    for case in cases() {
        let path = case.join("reference-cache-report").join("001-metrics.json");
        if !path.is_file() {
            continue;
        }
        let name = case_name(&case);
        let reference = read_json(&path);
        let kinds = kinds_of(&reference);
        let mut stores = stores_of(&case, &kinds);
        // our output is in kind order whatever the input order
        stores.reverse();
        let time = json_u64(
            &reference["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["gauge"]["dataPoints"][0]
                ["timeUnixNano"],
        );
        let resource = resource_of(&resource_pairs(&reference["resourceMetrics"][0]["resource"]));
        let bytes = encode_cas_metrics_request(&stores, &resource, time);
        let ours = ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap();
        compare_metrics(&name, &ours, &reference);
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} references found");
}

/// End to end for a case whose listing reproduces every number: listing →
/// sparse store → scan → request, equal to the reference.
#[test]
fn scanned_listing_gives_the_reference_metrics() {
    let case = cases()
        .into_iter()
        .find(|c| case_name(c) == "01-geom-shake-cold")
        .expect("case 01");
    let reference = read_json(&case.join("reference-cache-report").join("001-metrics.json"));
    let tmp = tempfile::tempdir().unwrap();
    let listing = std::fs::read_to_string(case.join("cas-listing.txt")).unwrap();
    let mut stores = Vec::new();
    for (i, store) in parse_listing(&listing).iter().enumerate() {
        let cell = tmp.path().join(i.to_string());
        materialize(store, &cell);
        stores.push((
            store.kind,
            scan_store(store.kind, &cell, &CancelToken::new()).unwrap(),
        ));
    }
    let time = json_u64(
        &reference["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["gauge"]["dataPoints"][0]
            ["timeUnixNano"],
    );
    let resource = resource_of(&resource_pairs(&reference["resourceMetrics"][0]["resource"]));
    let ours =
        ExportMetricsServiceRequest::decode(encode_cas_metrics_request(&stores, &resource, time).as_slice())
            .unwrap();
    compare_metrics("01 (scanned)", &ours, &reference);
}

#[test]
fn snapshot_span_matches_every_reference() {
    let mut checked = 0;
    for case in cases() {
        let path = case
            .join("reference-cache-report-as-spans")
            .join("001-traces.json");
        if !path.is_file() {
            continue;
        }
        let name = case_name(&case);
        let reference = read_json(&path);
        let rs_ref = &reference["resourceSpans"][0];
        let ss_ref = &rs_ref["scopeSpans"][0];
        let span_ref = &ss_ref["spans"][0];
        let attrs_ref: Vec<(String, i64)> = span_ref["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["key"].as_str().unwrap().to_owned(),
                    a["value"]["intValue"].as_str().unwrap().parse().unwrap(),
                )
            })
            .collect();
        // kinds present, in the reference's attribute order
        let mut kinds: Vec<CasKind> = Vec::new();
        for (key, _) in &attrs_ref {
            let kind = CasKind::parse(key.rsplit('.').next().unwrap()).unwrap();
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        let mut stores = stores_of(&case, &kinds);
        stores.reverse();
        let resource = resource_of(&resource_pairs(&rs_ref["resource"]));
        let time = json_u64(&span_ref["startTimeUnixNano"]);
        let bytes = encode_cas_snapshot_span_request(&stores, &resource, "vm", time);
        let ours = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();

        assert_eq!(ours.resource_spans.len(), 1, "{name}");
        let rs = &ours.resource_spans[0];
        assert_eq!(
            our_pairs(&rs.resource.as_ref().unwrap().attributes),
            resource_pairs(&rs_ref["resource"]),
            "{name}"
        );
        assert_eq!(rs.scope_spans.len(), 1, "{name}");
        let ss = &rs.scope_spans[0];
        assert_eq!(
            ss.scope.as_ref().unwrap().name,
            ss_ref["scope"]["name"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(ss.spans.len(), 1, "{name}");
        let span = &ss.spans[0];
        assert_eq!(span.name, span_ref["name"].as_str().unwrap(), "{name}");
        assert_eq!(span_ref["kind"], "SPAN_KIND_INTERNAL");
        assert_eq!(span.kind, SpanKind::Internal as i32, "{name}");
        assert_eq!(
            u64::from(span.flags),
            span_ref["flags"].as_u64().unwrap(),
            "{name}"
        );
        assert!(
            span.status.is_some() && span_ref.get("status").is_some(),
            "{name}"
        );
        assert!(
            span.parent_span_id.is_empty() && span_ref.get("parentSpanId").is_none(),
            "{name}"
        );
        assert_eq!(
            (span.start_time_unix_nano, span.end_time_unix_nano),
            (time, time),
            "{name}"
        );
        let attrs: Vec<(String, i64)> = span.attributes.iter().map(int_attr).collect();
        assert_eq!(attrs, attrs_ref, "{name}");
        assert_eq!((span.trace_id.len(), span.span_id.len()), (16, 8), "{name}");
        assert!(span.trace_id.iter().any(|b| *b != 0), "{name}");
        // deterministic: the same snapshot gives the same bytes
        assert_eq!(
            bytes,
            encode_cas_snapshot_span_request(&stores, &resource, "vm", time),
            "{name}"
        );
        assert_ne!(
            bytes,
            encode_cas_snapshot_span_request(&stores, &resource, "vm", time + 1),
            "{name}"
        );
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} span references found");
}
