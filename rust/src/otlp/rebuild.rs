//! The rebuild reasons and the comparison with the previous build
//! ([`crate::rebuild`], [`crate::history`]) as span attributes, the root
//! span's link to the previous build's root, and the `ct.rebuilds`
//! metric (docs/rebuilds.md). Additions over ct-cake's export: on a rule
//! after its history numbers, on the root after the history's keys.

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
use opentelemetry_proto::tonic::metrics::v1::{AggregationTemporality, NumberDataPoint};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::Link;
use opentelemetry_proto::tonic::trace::v1::SpanFlags;

use super::analytics::RuleValue;
use super::attributes::{saturating_i64, AttrBuilder};
use super::semconv::PIPELINE_NAME;
use super::sum_request::{encode_sum_request, SumMetric};
use crate::analytics::BuildAnalytics;
use crate::history::{HistorySummary, RuleRebuild};
use crate::ids;
use crate::rebuild::REASONS;

/// Rule: why a compile that ran the compiler ran.
pub const RULE_REBUILD_REASON: &str = "ct.rule.rebuild_reason";
/// Rule: why the CAS missed a compile that ccache then served.
pub const RULE_CAS_MISS_REASON: &str = "ct.rule.cas_miss_reason";
/// Rule: every part of the CAS key that changed (`source`, `headers`, `flags`).
pub const RULE_REBUILD_CHANGED: &str = "ct.rule.rebuild_changed";
/// Rule (a PCH/PCM compile): the transitive headers whose hash changed
/// since its previous compile, most relevant first, at most 16.
pub const RULE_REBUILD_HEADERS: &str = "ct.rule.rebuild_headers";
/// Rule (a PCH/PCM compile): how many headers changed in all.
pub const RULE_REBUILD_HEADERS_COUNT: &str = "ct.rule.rebuild_headers_count";

/// Root: compiles that ran the compiler, one key per reason.
pub const BUILD_REBUILD_KEYS: [&str; 6] = [
    "ct.build.rebuild.new",
    "ct.build.rebuild.source_changed",
    "ct.build.rebuild.headers_changed",
    "ct.build.rebuild.flags_changed",
    "ct.build.rebuild.evicted",
    "ct.build.rebuild.not_cas",
];
/// Root: CAS misses ccache served.
pub const BUILD_REBUILD_CCACHE_SERVED: &str = "ct.build.rebuild.ccache_served";
/// Root: the previous build's trace id (hex), also the link's.
pub const COMPARE_PREVIOUS_TRACE_ID: &str = "ct.build.compare.previous_trace_id";
pub const COMPARE_RULES_ADDED: &str = "ct.build.compare.rules_added";
pub const COMPARE_RULES_REMOVED: &str = "ct.build.compare.rules_removed";
pub const COMPARE_DURATION_DELTA_S: &str = "ct.build.compare.duration_delta_s";
pub const COMPARE_CRITICAL_PATH_DELTA_S: &str = "ct.build.compare.critical_path_delta_s";
pub const COMPARE_CRITICAL_PATH_CHANGED: &str = "ct.build.compare.critical_path_changed";
/// The attribute that says what a link of the root span is.
pub const LINK_KIND: &str = "ct.link.kind";
pub const LINK_PREVIOUS_BUILD: &str = "previous_build";

/// Metric: compiles that ran the compiler, by rebuild reason.
pub const REBUILDS_METRIC: &str = "ct.rebuilds";
pub const REBUILDS_DESCRIPTION: &str =
    "Compiles that ran the compiler, by why the CAS did not have the object (history.enabled)";

/// A rule's rebuild attributes: the reason (under the key saying whether
/// the compiler ran), the changed parts when any, and for a precompiled
/// header the headers that changed (`headers`: names and their count).
pub fn rule_rebuild_attributes<'h>(
    rebuild: Option<RuleRebuild>,
    headers: Option<(&'h [Box<str>], usize)>,
) -> impl Iterator<Item = (&'static str, RuleValue<'h>)> {
    let reason = rebuild.map(|r| {
        let key = if r.ccache_served {
            RULE_CAS_MISS_REASON
        } else {
            RULE_REBUILD_REASON
        };
        (key, RuleValue::Str(r.reason.as_str()))
    });
    let changed = rebuild
        .filter(|r| !r.changed.is_empty())
        .map(|r| (RULE_REBUILD_CHANGED, RuleValue::Strs(r.changed.names())));
    let headers = rebuild.and(headers);
    let names = headers.map(|(names, _)| (RULE_REBUILD_HEADERS, RuleValue::Names(names)));
    let count = headers.map(|(_, n)| {
        (
            RULE_REBUILD_HEADERS_COUNT,
            RuleValue::Int(saturating_i64(n as u64)),
        )
    });
    reason.into_iter().chain(changed).chain(names).chain(count)
}

/// The root's rebuild and comparison attributes, in this order: the
/// counts by reason (a build with compile rules; zeros included), the
/// ccache-served misses, then the comparison (a build with a previous one).
pub fn rebuild_root_attributes(s: &HistorySummary, max_attribute_len: u32) -> Vec<KeyValue> {
    let mut a = AttrBuilder::with_capacity(max_attribute_len, 13);
    if s.has_compiles {
        for (key, n) in BUILD_REBUILD_KEYS.iter().zip(s.rebuilds) {
            a.int(key, saturating_i64(n));
        }
        a.int(BUILD_REBUILD_CCACHE_SERVED, saturating_i64(s.ccache_served));
    }
    if let Some(c) = &s.comparison {
        a.string(COMPARE_PREVIOUS_TRACE_ID, &ids::to_hex(&c.previous_trace_id));
        a.int(COMPARE_RULES_ADDED, saturating_i64(c.rules_added));
        a.int(COMPARE_RULES_REMOVED, saturating_i64(c.rules_removed));
        a.double(COMPARE_DURATION_DELTA_S, c.duration_delta_s);
        if let Some(d) = c.critical_path_delta_s {
            a.double(COMPARE_CRITICAL_PATH_DELTA_S, d);
        }
        if let Some(changed) = c.critical_path_changed {
            a.bool(COMPARE_CRITICAL_PATH_CHANGED, changed);
        }
    }
    a.finish().0
}

/// The root span's links: to the previous build's root span (its id
/// follows from its trace id, `crate::ids`), when there is one.
pub fn root_links(analytics: Option<&BuildAnalytics>) -> Vec<Link> {
    let Some(c) = analytics.and_then(|a| a.history()?.summary().comparison) else {
        return Vec::new();
    };
    let mut a = AttrBuilder::with_capacity(u32::MAX, 1);
    a.string(LINK_KIND, LINK_PREVIOUS_BUILD);
    vec![Link {
        trace_id: c.previous_trace_id.to_vec(),
        span_id: ids::span_id(&c.previous_trace_id, &[]).to_vec(),
        attributes: a.finish().0,
        // As the spans' own flags: the previous root is known not remote.
        flags: SpanFlags::ContextHasIsRemoteMask as u32,
        ..Default::default()
    }]
}

/// What the rebuild metric of one build is made from.
pub struct RebuildsInput<'x> {
    pub summary: &'x HistorySummary,
    pub resource: Resource,
    pub temporality: AggregationTemporality,
    /// `ct.variant`, `cicd.pipeline.name` (empty ones omitted).
    pub variant: &'x str,
    pub pipeline: &'x str,
    pub start_unix_nano: u64,
    pub time_unix_nano: u64,
    pub max_attribute_len: u32,
}

/// `ct.rebuilds` as one request: a monotonic Sum, one point per reason,
/// zeros included (so a rate is defined from the first build), attributes
/// `ct.rule.rebuild_reason`, `ct.variant`, `cicd.pipeline.name`. `None` for
/// a build without compile rules. Returns the bytes and the point count.
pub fn encode_rebuilds_request(input: RebuildsInput) -> Option<(Vec<u8>, u64)> {
    if !input.summary.has_compiles {
        return None;
    }
    let points: Vec<NumberDataPoint> = REASONS
        .iter()
        .zip(input.summary.rebuilds)
        .map(|(reason, n)| {
            let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 3);
            a.string(RULE_REBUILD_REASON, reason.as_str());
            a.non_empty_string("ct.variant", input.variant);
            a.non_empty_string(PIPELINE_NAME, input.pipeline);
            NumberDataPoint {
                attributes: a.finish().0,
                start_time_unix_nano: input.start_unix_nano,
                time_unix_nano: input.time_unix_nano,
                value: Some(Value::AsInt(saturating_i64(n))),
                ..Default::default()
            }
        })
        .collect();
    Some(encode_sum_request(
        input.resource,
        SumMetric {
            name: REBUILDS_METRIC,
            description: REBUILDS_DESCRIPTION,
            unit: "{compile}",
            monotonic: true,
        },
        input.temporality,
        points,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Comparison;
    use crate::rebuild::{Changed, RebuildReason};
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    use prost::Message;

    #[test]
    fn rule_keys_say_whether_the_compiler_ran() {
        let r = RuleRebuild {
            reason: RebuildReason::HeadersChanged,
            changed: Changed::from_bits(Changed::HEADERS | Changed::FLAGS),
            ccache_served: false,
        };
        let got: Vec<_> = rule_rebuild_attributes(Some(r), None).collect();
        assert_eq!(
            got,
            [
                (RULE_REBUILD_REASON, RuleValue::Str("headers_changed")),
                (RULE_REBUILD_CHANGED, RuleValue::Strs(&["headers", "flags"])),
            ]
        );
        // A precompiled header: the changed headers and their count after.
        let names: Vec<Box<str>> = vec!["/p/b.hpp".into()];
        let got: Vec<_> = rule_rebuild_attributes(Some(r), Some((&names, 3))).collect();
        assert_eq!(
            got[2..],
            [
                (RULE_REBUILD_HEADERS, RuleValue::Names(&names)),
                (RULE_REBUILD_HEADERS_COUNT, RuleValue::Int(3)),
            ]
        );
        assert_eq!(rule_rebuild_attributes(None, Some((&names, 3))).count(), 0);
        let served = RuleRebuild {
            reason: RebuildReason::Evicted,
            changed: Changed::default(),
            ccache_served: true,
        };
        let got: Vec<_> = rule_rebuild_attributes(Some(served), None).collect();
        assert_eq!(got, [(RULE_CAS_MISS_REASON, RuleValue::Str("evicted"))]);
        assert_eq!(rule_rebuild_attributes(None, None).count(), 0);
    }

    #[test]
    fn root_keys_and_metric_points() {
        let mut s = HistorySummary {
            has_compiles: true,
            rebuilds: [1, 2, 3, 0, 0, 0],
            ccache_served: 4,
            ..HistorySummary::default()
        };
        let keys = |s: &HistorySummary| -> Vec<String> {
            rebuild_root_attributes(s, 100)
                .into_iter()
                .map(|kv| kv.key)
                .collect()
        };
        let mut want: Vec<String> = BUILD_REBUILD_KEYS.iter().map(|k| k.to_string()).collect();
        want.push(BUILD_REBUILD_CCACHE_SERVED.into());
        assert_eq!(keys(&s), want);
        s.comparison = Some(Comparison {
            previous_trace_id: [0xab; 16],
            critical_path_delta_s: Some(1.0),
            critical_path_changed: Some(false),
            ..Comparison::default()
        });
        assert_eq!(keys(&s).len(), 7 + 6);
        assert!(keys(&HistorySummary::default()).is_empty());

        let input = |s| RebuildsInput {
            summary: s,
            resource: Resource::default(),
            temporality: AggregationTemporality::Delta,
            variant: "gcc.debug",
            pipeline: "",
            start_unix_nano: 1,
            time_unix_nano: 2,
            max_attribute_len: 100,
        };
        let (bytes, n) = encode_rebuilds_request(input(&s)).unwrap();
        assert_eq!(n, 6);
        let req = ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap();
        let m = &req.resource_metrics[0].scope_metrics[0].metrics[0];
        assert_eq!(m.name, REBUILDS_METRIC);
        let Some(Data::Sum(sum)) = &m.data else {
            panic!("not a sum")
        };
        let values: Vec<i64> = sum
            .data_points
            .iter()
            .map(|p| match p.value {
                Some(Value::AsInt(v)) => v,
                _ => -1,
            })
            .collect();
        assert_eq!(values, [1, 2, 3, 0, 0, 0]);
        assert_eq!(sum.data_points[0].attributes.len(), 2, "empty pipeline omitted");
        assert!(encode_rebuilds_request(input(&HistorySummary::default())).is_none());
    }
}
