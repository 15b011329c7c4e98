//! The ccache metrics of one build (formats.md §3.5, design.md §2): scope
//! `compiletools.ccache`, with
//! * `ct.ccache.events` — monotonic Sum, one int point per event name with
//!   count > 0 (first-seen order), attribute `ccache_event`;
//! * `ct.ccache.hit_rate`, `ct.ccache.remote_hit_rate` — double Gauges.
//!
//! Sent once per build (design.md §2 fix 4; compiletools sends each snapshot
//! twice). Sum points start at the build start and are taken at the build
//! end. With per-build identity (ct-cake's form, [`MetricsInput::per_build`])
//! each build is one cumulative interval of its own series (the resource's
//! `service.instance.id` separates builds) and the request is exactly
//! ct-cake's; otherwise builds of one host share series, so the Sum is the
//! build's delta and the points carry the keys that told builds apart on the
//! resource (`ct.variant`, `cicd.pipeline.name`). The gauges carry only the
//! time, as compiletools' do (a start time is meaningless for a gauge).

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Gauge, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use super::attributes::{saturating_i64, AttrBuilder};
use super::scope::{scope, CCACHE_SCOPE_NAME};
use crate::statslog::{EventCount, Statslog};
use crate::warnings::Warnings;

pub const EVENTS_METRIC: &str = "ct.ccache.events";
pub const EVENTS_DESCRIPTION: &str = "ccache event occurrences over the build";
pub const HIT_RATE_METRIC: &str = "ct.ccache.hit_rate";
pub const HIT_RATE_DESCRIPTION: &str = "Local ccache hit ratio in [0,1]";
pub const REMOTE_HIT_RATE_METRIC: &str = "ct.ccache.remote_hit_rate";
pub const REMOTE_HIT_RATE_DESCRIPTION: &str = "Remote ccache hit ratio in [0,1]";
/// Data point attribute naming the event of a `ct.ccache.events` point.
pub const EVENT_ATTRIBUTE: &str = "ccache_event";

/// What the metrics of one build are made from.
pub struct MetricsInput<'x> {
    pub statslog: &'x Statslog,
    /// The trace's resource with `ct.invocation_id` = the trace id in hex
    /// (see [`super::resource::with_invocation_id`]).
    pub resource: Resource,
    /// Build start, Unix ns.
    pub start_unix_nano: u64,
    /// Build end, Unix ns.
    pub time_unix_nano: u64,
    pub max_attribute_len: u32,
    /// Each build is its own series (ct-cake's form): cumulative Sum, no
    /// point attributes beyond ct-cake's. Otherwise the host's builds share
    /// series: delta Sum, and `shared_series_attributes` on every point.
    pub per_build: bool,
    /// Point attributes (after ct-cake's) when `per_build` is false, e.g.
    /// `ct.variant` and `cicd.pipeline.name`; empty values are omitted.
    pub shared_series_attributes: Vec<(&'static str, String)>,
}

/// Builds the request; returns it with its number of data points.
pub fn build_metrics_request(
    input: MetricsInput,
    warnings: &mut Warnings,
) -> (ExportMetricsServiceRequest, u64) {
    let (scope_metrics, points) = ccache_scope_metrics(&input, warnings);
    let request = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(input.resource),
            scope_metrics: vec![scope_metrics],
            schema_url: String::new(),
        }],
    };
    (request, points)
}

/// The ccache scope of the build's metrics and its number of data points.
pub fn ccache_scope_metrics(input: &MetricsInput, warnings: &mut Warnings) -> (ScopeMetrics, u64) {
    let events = exportable_events(input.statslog, input.max_attribute_len, warnings);
    let summary = input.statslog.summary();
    let extra: &[(&str, String)] = if input.per_build {
        &[]
    } else {
        &input.shared_series_attributes
    };
    let with_extra = |a: &mut AttrBuilder| {
        for (key, value) in extra {
            a.non_empty_string(key, value);
        }
    };
    let temporality = if input.per_build {
        AggregationTemporality::Cumulative
    } else {
        AggregationTemporality::Delta
    };
    let event_points: Vec<NumberDataPoint> = events
        .iter()
        .map(|e| {
            let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 1 + extra.len());
            a.string(EVENT_ATTRIBUTE, &e.name);
            with_extra(&mut a);
            NumberDataPoint {
                attributes: a.finish().0,
                start_time_unix_nano: input.start_unix_nano,
                time_unix_nano: input.time_unix_nano,
                value: Some(Value::AsInt(saturating_i64(e.count))),
                ..Default::default()
            }
        })
        .collect();
    let points = event_points.len() as u64 + 2;
    let gauge = |name: &str, description: &str, value: f64| Metric {
        name: name.to_owned(),
        description: description.to_owned(),
        data: Some(Data::Gauge(Gauge {
            data_points: vec![NumberDataPoint {
                attributes: {
                    let mut a = AttrBuilder::with_capacity(input.max_attribute_len, extra.len());
                    with_extra(&mut a);
                    a.finish().0
                },
                time_unix_nano: input.time_unix_nano,
                value: Some(Value::AsDouble(value)),
                ..Default::default()
            }],
        })),
        ..Default::default()
    };
    let metrics = vec![
        Metric {
            name: EVENTS_METRIC.to_owned(),
            description: EVENTS_DESCRIPTION.to_owned(),
            data: Some(Data::Sum(Sum {
                data_points: event_points,
                aggregation_temporality: temporality as i32,
                is_monotonic: true,
            })),
            ..Default::default()
        },
        gauge(HIT_RATE_METRIC, HIT_RATE_DESCRIPTION, summary.hit_rate()),
        gauge(
            REMOTE_HIT_RATE_METRIC,
            REMOTE_HIT_RATE_DESCRIPTION,
            summary.remote_hit_rate(),
        ),
    ];
    let scope_metrics = ScopeMetrics {
        scope: Some(scope(CCACHE_SCOPE_NAME)),
        metrics,
        schema_url: String::new(),
    };
    (scope_metrics, points)
}

/// Builds and serializes the request; returns the bytes and the number of
/// data points.
pub fn encode_metrics_request(input: MetricsInput, warnings: &mut Warnings) -> (Vec<u8>, u64) {
    let (request, points) = build_metrics_request(input, warnings);
    (request.encode_to_vec(), points)
}

/// The events that become points (and snapshot attributes): all of them,
/// except names longer than the attribute length limit. Those are torn or
/// hostile lines, and cutting them to the limit could make two names one
/// series; they are left out with one warning instead.
pub(crate) fn exportable_events<'s>(
    statslog: &'s Statslog,
    max_attribute_len: u32,
    warnings: &mut Warnings,
) -> Vec<&'s EventCount> {
    let max = usize::try_from(max_attribute_len).unwrap_or(usize::MAX);
    let (keep, long): (Vec<&EventCount>, Vec<&EventCount>) =
        statslog.events().iter().partition(|e| e.name.len() <= max);
    if !long.is_empty() {
        warnings.push(format!(
            "{} ccache event name(s) longer than {max} bytes not exported",
            long.len()
        ));
    }
    keep
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::common::v1::any_value::Value as AttrValue;

    use super::*;
    use crate::statslog::parse;

    fn input(statslog: &Statslog, max: u32) -> MetricsInput<'_> {
        MetricsInput {
            statslog,
            resource: Resource::default(),
            start_unix_nano: 10,
            time_unix_nano: 20,
            max_attribute_len: max,
            per_build: true,
            shared_series_attributes: vec![("ct.variant", "v".to_owned())],
        }
    }

    #[test]
    fn shape_of_the_request() {
        let log = parse(
            b"# \ncalled_for_preprocessing\n# /a.cpp\ncache_miss\n# /b.cpp\ndirect_cache_hit\ncache_miss\n",
        );
        let mut w = Warnings::new();
        let (req, points) = build_metrics_request(input(&log, 100), &mut w);
        assert_eq!(points, 5);
        assert!(w.is_empty());
        let sm = &req.resource_metrics[0].scope_metrics[0];
        assert_eq!(sm.scope.as_ref().unwrap().name, CCACHE_SCOPE_NAME);
        let names: Vec<&str> = sm.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, [EVENTS_METRIC, HIT_RATE_METRIC, REMOTE_HIT_RATE_METRIC]);
        let Some(Data::Sum(sum)) = &sm.metrics[0].data else {
            panic!("events is a sum")
        };
        assert!(sum.is_monotonic);
        assert_eq!(
            sum.aggregation_temporality,
            AggregationTemporality::Cumulative as i32
        );
        let got: Vec<(String, Option<Value>, u64, u64)> = sum
            .data_points
            .iter()
            .map(|p| {
                let Some(AttrValue::StringValue(name)) =
                    p.attributes[0].value.as_ref().and_then(|v| v.value.clone())
                else {
                    panic!("string attribute")
                };
                assert_eq!(p.attributes[0].key, EVENT_ATTRIBUTE);
                (name, p.value, p.start_time_unix_nano, p.time_unix_nano)
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "called_for_preprocessing".to_owned(),
                    Some(Value::AsInt(1)),
                    10,
                    20
                ),
                ("cache_miss".to_owned(), Some(Value::AsInt(2)), 10, 20),
                ("direct_cache_hit".to_owned(), Some(Value::AsInt(1)), 10, 20),
            ]
        );
        let Some(Data::Gauge(g)) = &sm.metrics[1].data else {
            panic!("hit rate is a gauge")
        };
        assert_eq!(g.data_points[0].value, Some(Value::AsDouble(1.0 / 3.0)));
        assert_eq!(
            (
                g.data_points[0].start_time_unix_nano,
                g.data_points[0].time_unix_nano
            ),
            (0, 20)
        );
        assert!(g.data_points[0].attributes.is_empty());
    }

    #[test]
    fn shared_series_are_deltas_with_the_build_keys_on_every_point() {
        let log = parse(b"# /a.cpp\ncache_miss\n");
        let mut w = Warnings::new();
        let mut shared = input(&log, 100);
        shared.per_build = false;
        shared
            .shared_series_attributes
            .push(("cicd.pipeline.name", String::new()));
        let (req, _) = build_metrics_request(shared, &mut w);
        let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
        let Some(Data::Sum(sum)) = &metrics[0].data else {
            panic!("events is a sum")
        };
        assert_eq!(sum.aggregation_temporality, AggregationTemporality::Delta as i32);
        let keys = |attrs: &[opentelemetry_proto::tonic::common::v1::KeyValue]| -> Vec<String> {
            attrs.iter().map(|kv| kv.key.clone()).collect()
        };
        // The empty pipeline name is omitted.
        assert_eq!(
            keys(&sum.data_points[0].attributes),
            [EVENT_ATTRIBUTE, "ct.variant"]
        );
        let Some(Data::Gauge(g)) = &metrics[1].data else {
            panic!("hit rate is a gauge")
        };
        assert_eq!(keys(&g.data_points[0].attributes), ["ct.variant"]);
    }

    #[test]
    fn overlong_event_names_are_left_out() {
        let log = parse(format!("cache_miss\n{}\n", "x".repeat(50)).as_bytes());
        let mut w = Warnings::new();
        let (_, points) = build_metrics_request(input(&log, 20), &mut w);
        assert_eq!(points, 3);
        assert_eq!(w.into_lines().len(), 1);
    }
}
