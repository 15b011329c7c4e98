//! The compile history's numbers ([`crate::history`]) as span attributes
//! and the `ct.cache.time_saved` metric. Additions over ct-cake's export:
//! on the root after the timing analytics, on a rule after its analytics.

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
use opentelemetry_proto::tonic::metrics::v1::{AggregationTemporality, NumberDataPoint};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::attributes::{saturating_i64, AttrBuilder};
use super::sum_request::{encode_sum_request, SumMetric};
use crate::history::HistorySummary;
use crate::timing::CACHE_LAYER_KEY;

/// Rule: the target's last compile − this cache hit, seconds.
pub const RULE_TIME_SAVED_S: &str = "ct.rule.time_saved_s";
/// Rule: this compile − the median of the target's last K compiles, seconds.
pub const RULE_DURATION_DELTA_S: &str = "ct.rule.duration_delta_s";
/// Root: sum of the rules' time saved, seconds.
pub const BUILD_TIME_SAVED_S: &str = "ct.build.time_saved_s";
/// Root: hits slower than the target's compile (negative time saved).
pub const BUILD_CACHE_SLOWER_HITS: &str = "ct.build.cache_slower_hits";
/// Root: span names of the rules with the largest duration deltas.
pub const BUILD_TOP_REGRESSIONS: &str = "ct.build.top_regressions";
/// Metric: time saved by cache hits over the build, by layer.
pub const TIME_SAVED_METRIC: &str = "ct.cache.time_saved";
pub const TIME_SAVED_DESCRIPTION: &str =
    "Time cache hits saved over the build: the target's last actual compile minus the hit (negative when the cache was slower)";

/// The root's history attributes, in this order: time saved and slower
/// hits (when a hit had a time saved), top regressions (when a compile got
/// slower than its median).
pub fn history_root_attributes(s: &HistorySummary, max_attribute_len: u32) -> Vec<KeyValue> {
    let mut a = AttrBuilder::with_capacity(max_attribute_len, 3);
    if let Some(saved) = s.time_saved_s {
        a.double(BUILD_TIME_SAVED_S, saved);
        a.int(BUILD_CACHE_SLOWER_HITS, saturating_i64(s.slower_hits));
    }
    if !s.top_regressions.is_empty() {
        a.strings(
            BUILD_TOP_REGRESSIONS,
            s.top_regressions.iter().map(String::as_str),
        );
    }
    a.finish().0
}

/// What the time-saved metric of one build is made from.
pub struct TimeSavedInput<'x> {
    pub summary: &'x HistorySummary,
    /// The metrics resource: the build's (`ct.invocation_id` = trace id in
    /// hex) or, when a host's builds share series, the host's.
    pub resource: Resource,
    /// Cumulative over the build (its own series) or the build's delta of
    /// a series the host's builds share.
    pub temporality: AggregationTemporality,
    /// Attributes every point carries (the build's keys when series are
    /// shared: `ct.variant`, `cicd.pipeline.name`); empty ones are omitted.
    pub point_attributes: Vec<(&'static str, String)>,
    /// Build start and end, Unix ns.
    pub start_unix_nano: u64,
    pub time_unix_nano: u64,
    pub max_attribute_len: u32,
}

/// `ct.cache.time_saved` as one request: a cumulative Sum of doubles over
/// the build's interval (its own series, as the ccache events), one point
/// per layer with a time saved, attribute `ct.rule.cache_layer`. Not
/// monotonic: a slower hit counts negative. `None` when no hit had a time
/// saved. Returns the bytes and the number of points.
pub fn encode_time_saved_request(input: TimeSavedInput) -> Option<(Vec<u8>, u64)> {
    let by_layer = &input.summary.saved_by_layer;
    if by_layer.is_empty() {
        return None;
    }
    let points: Vec<NumberDataPoint> = by_layer
        .iter()
        .map(|(layer, saved)| {
            let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 1 + input.point_attributes.len());
            a.string(CACHE_LAYER_KEY, layer.as_str());
            for (key, value) in input.point_attributes.iter().filter(|(_, v)| !v.is_empty()) {
                a.string(key, value);
            }
            NumberDataPoint {
                attributes: a.finish().0,
                start_time_unix_nano: input.start_unix_nano,
                time_unix_nano: input.time_unix_nano,
                value: Some(Value::AsDouble(*saved)),
                ..Default::default()
            }
        })
        .collect();
    Some(encode_sum_request(
        input.resource,
        SumMetric {
            name: TIME_SAVED_METRIC,
            description: TIME_SAVED_DESCRIPTION,
            unit: "s",
            monotonic: false,
        },
        input.temporality,
        points,
    ))
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    use prost::Message;

    use super::*;
    use crate::history::{CacheLayer, RuleHistory};

    fn summary() -> HistorySummary {
        HistorySummary {
            time_saved_s: Some(3.0),
            slower_hits: 1,
            saved_by_layer: vec![(CacheLayer::Cas, -0.5), (CacheLayer::Ccache, 3.5)],
            top_regressions: vec!["compile.x.o".into()],
            ..HistorySummary::default()
        }
    }

    #[test]
    fn root_keys_in_order_and_absent_when_unknown() {
        let keys = |s: &HistorySummary| -> Vec<String> {
            history_root_attributes(s, 100)
                .into_iter()
                .map(|kv| kv.key)
                .collect()
        };
        assert_eq!(
            keys(&summary()),
            [BUILD_TIME_SAVED_S, BUILD_CACHE_SLOWER_HITS, BUILD_TOP_REGRESSIONS]
        );
        assert!(keys(&HistorySummary::default()).is_empty());
        let h = RuleHistory {
            time_saved_s: None,
            duration_delta_s: Some(1.5),
            rebuild: None,
        };
        let kv: Vec<_> = crate::otlp::analytics::rule_attributes(None, Some(h)).collect();
        assert_eq!(
            kv,
            [(
                RULE_DURATION_DELTA_S,
                crate::otlp::analytics::RuleValue::Double(1.5)
            )]
        );
    }

    #[test]
    fn metric_has_one_point_per_layer() {
        let s = summary();
        let input = TimeSavedInput {
            summary: &s,
            resource: Resource::default(),
            start_unix_nano: 10,
            time_unix_nano: 20,
            max_attribute_len: 100,
            temporality: AggregationTemporality::Cumulative,
            point_attributes: Vec::new(),
        };
        let (bytes, points) = encode_time_saved_request(input).unwrap();
        assert_eq!(points, 2);
        let req = ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap();
        let m = &req.resource_metrics[0].scope_metrics[0].metrics[0];
        assert_eq!((m.name.as_str(), m.unit.as_str()), (TIME_SAVED_METRIC, "s"));
        let Some(Data::Sum(sum)) = &m.data else {
            panic!("not a sum")
        };
        assert!(!sum.is_monotonic);
        let got: Vec<(String, f64)> = sum
            .data_points
            .iter()
            .map(|p| {
                let Some(any_value::Value::StringValue(layer)) =
                    p.attributes[0].value.clone().and_then(|v| v.value)
                else {
                    panic!("layer is not a string")
                };
                let Some(Value::AsDouble(v)) = p.value else {
                    panic!("not a double")
                };
                assert_eq!((p.start_time_unix_nano, p.time_unix_nano), (10, 20));
                (layer, v)
            })
            .collect();
        assert_eq!(got, [("cas".to_owned(), -0.5), ("ccache".to_owned(), 3.5)]);
        let none = HistorySummary::default();
        assert!(encode_time_saved_request(TimeSavedInput {
            summary: &none,
            ..input_of(&none)
        })
        .is_none());
    }

    fn input_of(s: &HistorySummary) -> TimeSavedInput<'_> {
        TimeSavedInput {
            summary: s,
            resource: Resource::default(),
            start_unix_nano: 0,
            time_unix_nano: 0,
            max_attribute_len: 100,
            temporality: AggregationTemporality::Cumulative,
            point_attributes: Vec::new(),
        }
    }
}
