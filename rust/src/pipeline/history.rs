//! The compile history's part of processing one build: evaluate the build
//! against the receiver's history (staging what it adds under its
//! invocation directory, committed by the receiver when it checkpoints the
//! build) and the `ct.cache.time_saved` metric.

use std::path::Path;

use opentelemetry_proto::tonic::metrics::v1::AggregationTemporality;
use opentelemetry_proto::tonic::resource::v1::Resource;

use crate::history::{BuildKey, History, HistoryFacts};
use crate::otlp::history::{encode_time_saved_request, TimeSavedInput};
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
    host: &str,
    trace_id: &[u8; 16],
    invocation_dir: &Path,
) -> HistoryFacts {
    let key = BuildKey::new(clock.root_interval().0, trace_id);
    history.evaluate(build, clock, host, key, &staging_id(invocation_dir))
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
