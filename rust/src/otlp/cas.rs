//! CAS-health snapshots as OTLP (formats.md §3.5 "CAS-health gauges", §3.6
//! `ct.cache.snapshot`; design.md §5).
//!
//! Shape, as `ct-cache-report --otel-export` sends it (corpus
//! `reference-cache-report/001-metrics.json`): one resource, scope
//! `compiletools` without version, five integer Gauges without description
//! or unit, one data point per store with the single attribute `cas_kind`,
//! `time_unix_nano` set and no start time. Unlike compiletools the snapshot
//! is sent once, not twice (formats.md §3.5 "double delivery").
//!
//! Every store passed in is emitted, `exists` or not: the caller passes
//! exactly the stores that were *scanned* (an explicitly requested missing
//! store yields zeros; a default-scope missing one is left out, formats.md §6.8).
//! Points and span attributes follow kind order obj, pch, pcm, exe whatever
//! the input order; one store per kind is expected. With no store at all the
//! request is empty and encodes to zero bytes: send nothing.

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as PointValue;
use opentelemetry_proto::tonic::metrics::v1::{
    Gauge, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message;

use super::attributes::{key_value, saturating_i64, AttrBuilder};
use super::scope::{scope, SCOPE_NAME};
use super::trace::SPAN_FLAGS;
use crate::cas::{CasKind, StoreStats};
use crate::ids::cas_snapshot_ids;

/// Data point attribute naming the store kind.
pub const CAS_KIND_ATTRIBUTE: &str = "cas_kind";
/// Name of the metrics-as-spans snapshot span.
pub const SNAPSHOT_SPAN_NAME: &str = "ct.cache.snapshot";
/// The five metric names, in the order compiletools emits them.
pub const METRIC_NAMES: [&str; 5] = [
    "ct.cas.total_bytes",
    "ct.cas.total_entries",
    "ct.cas.unique_buckets",
    "ct.cas.wasted_bytes",
    "ct.cas.duplicate_groups",
];

/// The five numbers of a store, in [`METRIC_NAMES`] order.
fn values(s: &StoreStats) -> [u64; 5] {
    [
        s.total_bytes,
        s.total_entries,
        s.unique_buckets,
        s.wasted_bytes,
        s.duplicate_groups,
    ]
}

/// The stores in kind order; `None` when there are none (nothing to send).
fn in_kind_order(stores: &[(CasKind, StoreStats)]) -> Option<Vec<&(CasKind, StoreStats)>> {
    let mut ordered: Vec<&(CasKind, StoreStats)> = stores.iter().collect();
    ordered.sort_by_key(|(kind, _)| *kind); // stable
    (!ordered.is_empty()).then_some(ordered)
}

/// The single `cas_kind` attribute of a data point. No length limit
/// applies: the value is one of four short names.
fn kind_attribute(kind: CasKind) -> Vec<KeyValue> {
    let mut a = AttrBuilder::with_capacity(u32::MAX, 1);
    a.string(CAS_KIND_ATTRIBUTE, kind.as_str());
    a.finish().0
}

/// The gauges of formats.md §3.5 for `stores`, as a request; `resource` is the
/// store set's (see [`super::resource::store_resource`]).
pub fn build_cas_metrics_request(
    stores: &[(CasKind, StoreStats)],
    resource: &Resource,
    time_unix_nano: u64,
) -> ExportMetricsServiceRequest {
    let Some(ordered) = in_kind_order(stores) else {
        return ExportMetricsServiceRequest::default();
    };
    let metrics = METRIC_NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let data_points = ordered
                .iter()
                .map(|(kind, stats)| NumberDataPoint {
                    attributes: kind_attribute(*kind),
                    time_unix_nano,
                    value: Some(PointValue::AsInt(saturating_i64(values(stats)[i]))),
                    ..Default::default()
                })
                .collect();
            Metric {
                name: (*name).to_owned(),
                data: Some(Data::Gauge(Gauge { data_points })),
                ..Default::default()
            }
        })
        .collect();
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource.clone()),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(scope(SCOPE_NAME)),
                metrics,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// [`build_cas_metrics_request`], protobuf-encoded (empty when `stores` is).
pub fn encode_cas_metrics_request(
    stores: &[(CasKind, StoreStats)],
    resource: &Resource,
    time_unix_nano: u64,
) -> Vec<u8> {
    build_cas_metrics_request(stores, resource, time_unix_nano).encode_to_vec()
}

/// The `ct.cache.snapshot` span of formats.md §3.6 for `stores`, as a request:
/// one INTERNAL span in its own trace, scope `compiletools`, start = end =
/// `time_unix_nano`, attributes `ct.cas.<metric>.<kind>` (int) for each
/// store in kind order and metric order. Ids: see
/// [`cas_snapshot_ids`]; `host_name` is the
/// resource's `host.name`.
pub fn build_cas_snapshot_span_request(
    stores: &[(CasKind, StoreStats)],
    resource: &Resource,
    host_name: &str,
    time_unix_nano: u64,
) -> ExportTraceServiceRequest {
    let Some(ordered) = in_kind_order(stores) else {
        return ExportTraceServiceRequest::default();
    };
    let mut attributes = Vec::with_capacity(ordered.len() * METRIC_NAMES.len());
    for (kind, stats) in &ordered {
        for (name, value) in METRIC_NAMES.iter().zip(values(stats)) {
            // Distinct keys by construction: no de-duplication needed.
            attributes.push(key_value(
                format!("{name}.{}", kind.as_str()),
                Value::IntValue(saturating_i64(value)),
            ));
        }
    }
    let cells: Vec<&std::path::Path> = ordered.iter().map(|(_, s)| s.cell.as_path()).collect();
    let (trace_id, span_id) = cas_snapshot_ids(host_name, &cells, time_unix_nano);
    let span = Span {
        trace_id: trace_id.to_vec(),
        span_id: span_id.to_vec(),
        flags: SPAN_FLAGS,
        name: SNAPSHOT_SPAN_NAME.to_owned(),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: time_unix_nano,
        end_time_unix_nano: time_unix_nano,
        attributes,
        // Unset status, present as in the reference (`"status": {}`).
        status: Some(Status::default()),
        ..Default::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource.clone()),
            scope_spans: vec![ScopeSpans {
                scope: Some(scope(SCOPE_NAME)),
                spans: vec![span],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// [`build_cas_snapshot_span_request`], protobuf-encoded (empty when
/// `stores` is).
pub fn encode_cas_snapshot_span_request(
    stores: &[(CasKind, StoreStats)],
    resource: &Resource,
    host_name: &str,
    time_unix_nano: u64,
) -> Vec<u8> {
    build_cas_snapshot_span_request(stores, resource, host_name, time_unix_nano).encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(n: u64) -> StoreStats {
        StoreStats {
            exists: true,
            total_bytes: n,
            total_entries: n + 1,
            unique_buckets: n + 2,
            wasted_bytes: n + 3,
            duplicate_groups: n + 4,
            ..Default::default()
        }
    }

    #[test]
    fn empty_means_nothing_to_send() {
        let r = Resource::default();
        assert!(encode_cas_metrics_request(&[], &r, 1).is_empty());
        assert!(encode_cas_snapshot_span_request(&[], &r, "h", 1).is_empty());
    }

    #[test]
    fn points_follow_kind_order() {
        let req = build_cas_metrics_request(
            &[(CasKind::Exe, stats(10)), (CasKind::Obj, stats(20))],
            &Resource::default(),
            7,
        );
        let m = &req.resource_metrics[0].scope_metrics[0].metrics;
        assert_eq!(
            m.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
            METRIC_NAMES
        );
        let Some(Data::Gauge(g)) = &m[4].data else {
            panic!("not a gauge")
        };
        let got: Vec<_> = g
            .data_points
            .iter()
            .map(|p| (p.value, p.time_unix_nano, p.start_time_unix_nano))
            .collect();
        assert_eq!(
            got,
            [
                (Some(PointValue::AsInt(24)), 7, 0),
                (Some(PointValue::AsInt(14)), 7, 0)
            ]
        );
    }

    #[test]
    fn span_attributes_in_spec_order() {
        let req = build_cas_snapshot_span_request(
            &[(CasKind::Exe, stats(10)), (CasKind::Obj, stats(20))],
            &Resource::default(),
            "h",
            9,
        );
        let span = &req.resource_spans[0].scope_spans[0].spans[0];
        let keys: Vec<&str> = span.attributes.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys[0], "ct.cas.total_bytes.obj");
        assert_eq!(keys[4], "ct.cas.duplicate_groups.obj");
        assert_eq!(keys[5], "ct.cas.total_bytes.exe");
        assert_eq!(keys.len(), 10);
        assert_eq!((span.start_time_unix_nano, span.end_time_unix_nano), (9, 9));
    }
}
