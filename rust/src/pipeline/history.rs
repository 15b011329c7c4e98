//! The compile history's part of processing one build: evaluate the build
//! against the receiver's history (staging what it adds under its
//! invocation directory, committed by the receiver when it checkpoints the
//! build) and the `ct.cache.time_saved` metric.

use std::path::Path;

use opentelemetry_proto::tonic::metrics::v1::AggregationTemporality;
use opentelemetry_proto::tonic::resource::v1::Resource;

use crate::analytics::BuildAnalytics;
use crate::history::{BuildKey, BuildOrigin, History, HistoryFacts};
use crate::otlp::history::{encode_time_saved_request, TimeSavedInput};
use crate::otlp::rebuild::{encode_rebuilds_request, RebuildsInput};
use crate::rebuild::{stable_hash, stable_identity};
use crate::timing::{Build, Clock};

/// The id a build is staged under: its invocation directory as the
/// receiver spelled it in the request (the receiver commits with the same).
pub fn staging_id(invocation_dir: &Path) -> String {
    invocation_dir.to_string_lossy().into_owned()
}

/// Evaluates `build` (ordered by its start and trace id) against `history`.
pub fn evaluate(
    history: &History,
    build: &Build,
    clock: &Clock,
    (host, pipeline): (&str, &str),
    trace_id: &[u8; 16],
    invocation_dir: &Path,
) -> HistoryFacts {
    let origin = BuildOrigin {
        host,
        pipeline,
        key: BuildKey::new(clock.root_interval().0, trace_id),
        trace_id: *trace_id,
    };
    history.evaluate_build(build, clock, &origin, &staging_id(invocation_dir))
}

/// Completes the build's staging with its totals and puts its comparison
/// with the previous build into `facts`.
pub fn finish(
    history: &History,
    facts: &mut HistoryFacts,
    build: &Build,
    clock: &Clock,
    analytics: &BuildAnalytics,
    invocation_dir: &Path,
) {
    let (start, end) = clock.root_interval();
    let critical_path = analytics.summary().map(|s| {
        let length_ns = (s.critical_path_s * 1e9).round() as i64;
        (length_ns, critical_path_hash(build, clock, analytics))
    });
    history.finish(&staging_id(invocation_dir), end - start, critical_path, facts);
}

/// A hash of the set of the critical path's rules, by identity: equal for
/// two builds whose paths run through the same rules, in any order.
fn critical_path_hash(build: &Build, clock: &Clock, analytics: &BuildAnalytics) -> u64 {
    let mut hash = 0u64;
    build.for_each_phase_rule(&mut |rule| {
        if !clock.is_anchored(&rule) || !analytics.rule(rule.id()).is_some_and(|f| f.critical_path) {
            return;
        }
        let identity = stable_identity(rule.rule_type(), rule.target(), rule.source());
        hash = hash.wrapping_add(stable_hash(identity.as_bytes()));
    });
    hash
}

/// Appends the `ct.rebuilds` request to the build's metrics bytes; returns
/// the points added.
pub fn append_rebuilds(
    metrics: &mut Option<Vec<u8>>,
    facts: &HistoryFacts,
    series: MetricSeries,
    (variant, pipeline): (&str, &str),
    (start, end): (u64, u64),
    max_attribute_len: u32,
) -> u64 {
    let shared = !series.point_attributes.is_empty();
    let input = RebuildsInput {
        summary: facts.summary(),
        resource: series.resource,
        temporality: series.temporality,
        // A build's own series needs no keys on its points (as the other
        // metrics); series the host's builds share do.
        variant: if shared { variant } else { "" },
        pipeline: if shared { pipeline } else { "" },
        start_unix_nano: start,
        time_unix_nano: end,
        max_attribute_len,
    };
    let Some((bytes, points)) = encode_rebuilds_request(input) else {
        return 0;
    };
    metrics.get_or_insert_with(Vec::new).extend_from_slice(&bytes);
    points
}

/// Which series a build's metrics points belong to (see
/// `MetricIdentity`): the resource, the temporality of sums and
/// histograms, and the build keys the points carry when series are shared.
pub struct MetricSeries {
    pub resource: Resource,
    pub temporality: AggregationTemporality,
    pub point_attributes: Vec<(&'static str, String)>,
}

/// Appends the `ct.cache.time_saved` request to the build's metrics bytes
/// (protobuf concatenation appends the `resource_metrics`); returns the
/// points added.
pub fn append_time_saved(
    metrics: &mut Option<Vec<u8>>,
    facts: &HistoryFacts,
    series: MetricSeries,
    (start, end): (u64, u64),
    max_attribute_len: u32,
) -> u64 {
    let input = TimeSavedInput {
        summary: facts.summary(),
        resource: series.resource,
        temporality: series.temporality,
        point_attributes: series.point_attributes,
        start_unix_nano: start,
        time_unix_nano: end,
        max_attribute_len,
    };
    let Some((bytes, points)) = encode_time_saved_request(input) else {
        return 0;
    };
    metrics.get_or_insert_with(Vec::new).extend_from_slice(&bytes);
    points
}
