//! Our CAS-health OTLP against what `ct-cache-report --otel-export` sent
//! (corpus `reference-cache-report/001-metrics.json` and
//! `reference-cache-report-as-spans/001-traces.json`, proto3 JSON).
//!
//! The store numbers come from the case's `cache-report.json` (the scan
//! itself is checked in `cas_corpus.rs`; one case goes through `scan_set`
//! end to end), the time from the reference. The resource is ours, built by
//! the production builder from what the receiver would be configured with
//! for the case ([`inputs_of`]), and must equal the reference's minus the
//! keys listed in [`NOT_SENT`]; so everything that differs is a bug.

use crate::cas_support;

use std::collections::BTreeSet;
use std::path::Path;

use cas_support::{case_name, cases, materialize, parse_listing, read_json, reported};
use compiletools_core::cas::{CasKind, StoreStats};
use compiletools_core::otlp::resource::store_resource;
use compiletools_core::otlp::{encode_cas_metrics_request, encode_cas_snapshot_span_request};
use compiletools_core::{scan_set, CancelToken, CasCell, CasRequest};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValueKind;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as PointValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::Value as Json;

/// Resource attributes of a proto3-JSON resource, as (key, string) pairs.
fn resource_pairs(resource: &Json) -> Vec<(String, String)> {
    string_pairs(&resource["attributes"])
}

/// A proto3-JSON attribute list of string values, as (key, string) pairs.
fn string_pairs(attributes: &Json) -> Vec<(String, String)> {
    attributes
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

/// Resource keys of ct-cache-report that the receiver does not send, and
/// why: each scan sends `service.name`, `service.namespace`, `host.name`,
/// `ct.variant` and the user's attributes (README "CAS store health").
/// Anything else that differs from the reference is a bug; an entry that no
/// reference exercises is stale and fails the tests too. A key ending in
/// `.` covers every key it prefixes.
const NOT_SENT: &[(&str, &str)] = &[
    ("telemetry.sdk.", "ct-cache-report's OpenTelemetry SDK, not ours"),
    (
        "service.instance.id",
        "host:pid of the short-lived ct-cache-report process; a scan by the receiver is no process of its own",
    ),
    (
        "ct.invocation_id",
        "the invocation id of that ct-cache-report process (spec: its directory is never created)",
    ),
    (
        "git.commit.sha",
        "HEAD of ct-cache-report's working directory; a store is shared by clones at different commits, \
         and a scan has no working tree",
    ),
];

fn not_sent(key: &str) -> Option<&'static str> {
    NOT_SENT
        .iter()
        .map(|(k, _)| *k)
        .find(|k| *k == key || (k.ends_with('.') && key.starts_with(k)))
}

/// What the receiver is configured with for the case's store set: the
/// host the reference was recorded on (the receiver's `host_name` defaults
/// to the OS host name, as ct-cache-report's does), and the variant,
/// service name and resource attributes of the case's `ct-cache-report`
/// command line (`cache-report.cmdline.txt`).
struct Inputs {
    host: String,
    service: String,
    variant: String,
    user: Vec<(String, String)>,
}

fn inputs_of(case: &Path, reference_resource: &Json) -> Inputs {
    let host = resource_pairs(reference_resource)
        .into_iter()
        .find(|(k, _)| k == "host.name")
        .map(|(_, v)| v)
        .expect("reference has a host.name");
    let cmdline = std::fs::read_to_string(case.join("cache-report.cmdline.txt")).unwrap();
    let mut inputs = Inputs {
        host,
        service: String::new(),
        variant: String::new(),
        user: Vec::new(),
    };
    let report_lines = cmdline.lines().filter(|l| l.starts_with("ct-cache-report "));
    for arg in report_lines.flat_map(str::split_whitespace) {
        if let Some(v) = arg.strip_prefix("--variant=") {
            inputs.variant = v.to_owned();
        } else if let Some(name) = arg.strip_prefix("--otel-service-name=") {
            inputs.service = name.to_owned();
        } else if let Some(list) = arg.strip_prefix("--otel-resource-attr=") {
            for (k, v) in list.split(',').filter_map(|piece| piece.trim().split_once('=')) {
                if !k.is_empty() && !inputs.user.iter().any(|(key, _)| key == k) {
                    inputs.user.push((k.to_owned(), v.to_owned()));
                }
            }
        }
    }
    assert!(!inputs.variant.is_empty(), "{}: no --variant", case.display());
    inputs
}

/// Our resource for the case, by the production builder.
fn our_resource(inputs: &Inputs) -> opentelemetry_proto::tonic::resource::v1::Resource {
    store_resource(&inputs.service, &inputs.host, &inputs.variant, &inputs.user)
}

/// Compares our resource with the reference's minus [`NOT_SENT`] (order
/// aside: OTLP attributes are a map); records the entries it used.
fn compare_resource(name: &str, ours: &[KeyValue], reference: &Json, used: &mut BTreeSet<&'static str>) {
    let ours = our_pairs(ours);
    let keys: BTreeSet<&str> = ours.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys.len(), ours.len(), "{name}: duplicate resource keys {ours:?}");
    let mut want = Vec::new();
    for (key, value) in resource_pairs(reference) {
        match not_sent(&key) {
            Some(entry) => {
                used.insert(entry);
            }
            None => want.push((key, value)),
        }
    }
    let mut got = ours;
    got.sort();
    want.sort();
    assert_eq!(got, want, "{name}: resource");
}

/// Every [`NOT_SENT`] entry was needed by some reference.
fn assert_no_stale_entries(used: &BTreeSet<&'static str>) {
    for (key, why) in NOT_SENT {
        assert!(
            used.contains(key),
            "NOT_SENT entry {key:?} ({why}) matched no reference key"
        );
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
fn compare_metrics(
    name: &str,
    ours: &ExportMetricsServiceRequest,
    reference: &Json,
    used: &mut BTreeSet<&'static str>,
) {
    let rm_ref = &reference["resourceMetrics"];
    assert_eq!(
        ours.resource_metrics.len(),
        rm_ref.as_array().unwrap().len(),
        "{name}"
    );
    let rm = &ours.resource_metrics[0];
    let rm_ref = &rm_ref[0];
    compare_resource(
        name,
        &rm.resource.as_ref().unwrap().attributes,
        &rm_ref["resource"],
        used,
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
            let attrs_ref = string_pairs(&p_ref["attributes"]);
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
    let mut used = BTreeSet::new();
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
        let inputs = inputs_of(&case, &reference["resourceMetrics"][0]["resource"]);
        let bytes = encode_cas_metrics_request(&stores, &our_resource(&inputs), time);
        let ours = ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap();
        compare_metrics(&name, &ours, &reference, &mut used);
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} references found");
    assert_no_stale_entries(&used);
}

/// End to end for a case whose listing reproduces every number: listing →
/// sparse store → `scan_set` (the receiver's entry point, with the case's
/// inputs) → request, equal to the reference.
#[test]
fn scanned_listing_gives_the_reference_metrics() {
    let case = cases()
        .into_iter()
        .find(|c| case_name(c) == "01-geom-shake-cold")
        .expect("case 01");
    let reference = read_json(&case.join("reference-cache-report").join("001-metrics.json"));
    let time = json_u64(
        &reference["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["gauge"]["dataPoints"][0]
            ["timeUnixNano"],
    );
    let inputs = inputs_of(&case, &reference["resourceMetrics"][0]["resource"]);
    let mut request = CasRequest::new(inputs.host.clone(), time);
    request.variant = inputs.variant.clone();
    request.resource_attributes = inputs.user.clone();
    if !inputs.service.is_empty() {
        request.service_name = inputs.service.clone();
    }
    let tmp = tempfile::tempdir().unwrap();
    let listing = std::fs::read_to_string(case.join("cas-listing.txt")).unwrap();
    // Reversed: the request follows kind order whatever the cell order.
    for (i, store) in parse_listing(&listing).iter().enumerate().rev() {
        let cell = tmp.path().join(i.to_string());
        materialize(store, &cell);
        request.cells.push(CasCell {
            kind: store.kind,
            path: cell,
            explicit: true, // named on ct-cache-report's command line
        });
    }
    let output = scan_set(&request, &CancelToken::new(), None).unwrap();
    // (The materialized manifests are sparse, not JSON: warnings, same numbers.)
    assert_eq!(output.stores.len(), request.cells.len(), "{:?}", output.warnings);
    let ours = ExportMetricsServiceRequest::decode(output.metrics.unwrap().as_slice()).unwrap();
    let mut used = BTreeSet::new();
    compare_metrics("01 (scanned)", &ours, &reference, &mut used);
}

#[test]
fn snapshot_span_matches_every_reference() {
    let mut checked = 0;
    let mut used = BTreeSet::new();
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
        let inputs = inputs_of(&case, &rs_ref["resource"]);
        let resource = our_resource(&inputs);
        let host = inputs.host.as_str();
        let time = json_u64(&span_ref["startTimeUnixNano"]);
        let bytes = encode_cas_snapshot_span_request(&stores, &resource, host, time);
        let ours = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();

        assert_eq!(ours.resource_spans.len(), 1, "{name}");
        let rs = &ours.resource_spans[0];
        compare_resource(
            &name,
            &rs.resource.as_ref().unwrap().attributes,
            &rs_ref["resource"],
            &mut used,
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
            encode_cas_snapshot_span_request(&stores, &resource, host, time),
            "{name}"
        );
        assert_ne!(
            bytes,
            encode_cas_snapshot_span_request(&stores, &resource, host, time + 1),
            "{name}"
        );
        checked += 1;
    }
    assert!(checked >= 2, "only {checked} span references found");
    assert_no_stale_entries(&used);
}
