//! Build metrics that chart without per-file series (issue 14): one
//! `ScopeMetrics` (scope `compiletools`) per build with
//! * `cicd.pipeline.run.duration` — histogram, s, one observation: the root
//!   span's duration; exemplar = the root span;
//! * `cicd.pipeline.run.errors` — monotonic Sum, `{error}`, only when the phases say
//!   the build failed (no point for success or an undecided build);
//! * `ct.rule.duration` — histogram, s, one observation per rule span, by
//!   `ct.rule_type`, `ct.rule.cache_layer` (compile rules) and `ct.variant`;
//!   exemplars = per bucket, the rule span that regressed most against its
//!   target's compile history, else the slowest;
//! * `ct.compiles` — monotonic Sum, compile rules by `ct.rule.cache_layer`
//!   (`cas`, `ccache`, `compiled`, `other`: all four, zeros included, so a
//!   ratio is defined from the first build), and `ct.variant`;
//! * `ct.build.critical_path.duration` — histogram, s, one observation: the
//!   root span's `ct.build.critical_path_s`, by the path's method; exemplar =
//!   the root span;
//! * `ct.build.parallelism` — histogram, 1, one observation: the root span's
//!   `ct.build.parallelism.avg` (absent with it).
//!
//! The last two chart the build analytics (issue 15) without reading
//! spans; like them they are absent for a build with no counted rule.
//!
//! The rules are the rule spans of the trace below no other rule: anchored
//! rules of phases and sub-phases and rules directly under the root (the
//! rules of the build analytics). A build without such a rule (cmake and
//! bazel record none, a no-op build runs none) has no `ct.rule.duration` or
//! `ct.compiles` points: absent means unknown, never a made-up 0.
//!
//! Every point covers the build: start = build start, time = build end. The
//! temporality is the caller's: cumulative when each build is its own series
//! (per-build identity), delta when builds share a series (the receiver
//! accumulates them, README "Build metrics").

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Histogram, Metric, NumberDataPoint, ScopeMetrics, Sum,
};

use super::attributes::AttrBuilder;
use super::histogram::{HistogramAccumulator, SpanRef};
use super::scope::{scope, SCOPE_NAME};
use super::semconv::{ERROR_TYPE, PIPELINE_NAME, PIPELINE_RESULT, PIPELINE_RUN_STATE, STATE_EXECUTING};
use crate::analytics::BuildSummary;
use crate::history::HistoryFacts;
use crate::ids::SpanIds;
use crate::timing::{build_result, Build, BuildResult, Clock, Event, CACHE_LAYER_KEY};

pub(crate) const RUN_DURATION_METRIC: &str = "cicd.pipeline.run.duration";
pub(crate) const RUN_DURATION_DESCRIPTION: &str = "Duration of a build (ct-cake run), from its timing.json";
pub(crate) const RUN_ERRORS_METRIC: &str = "cicd.pipeline.run.errors";
pub(crate) const RUN_ERRORS_DESCRIPTION: &str =
    "Builds that failed, where the phases of timing.json decide it (a build whose result is unknown is not counted)";
pub(crate) const RULE_DURATION_METRIC: &str = "ct.rule.duration";
pub(crate) const RULE_DURATION_DESCRIPTION: &str = "Duration of the build's rules (compile, link, test, …)";
pub(crate) const COMPILES_METRIC: &str = "ct.compiles";
pub(crate) const COMPILES_DESCRIPTION: &str = "Compile rules by the cache layer that served them";

pub(crate) const CRITICAL_PATH_METRIC: &str = "ct.build.critical_path.duration";
pub(crate) const CRITICAL_PATH_DESCRIPTION: &str =
    "Length of the build's critical path (the root span's ct.build.critical_path_s)";
pub(crate) const PARALLELISM_METRIC: &str = "ct.build.parallelism";
pub(crate) const PARALLELISM_DESCRIPTION: &str =
    "Average number of rules running at once during the build (the root span's ct.build.parallelism.avg)";

pub(crate) const VARIANT_ATTRIBUTE: &str = "ct.variant";
pub(crate) const BACKEND_ATTRIBUTE: &str = "ct.backend";
pub(crate) const RULE_TYPE_ATTRIBUTE: &str = "ct.rule_type";
pub(crate) const CACHE_LAYER_ATTRIBUTE: &str = CACHE_LAYER_KEY;

/// The values of `ct.rule.cache_layer` on the metrics; any other value a
/// file carries (or none, before compiletools 10.1) counts as `other`, so
/// the attribute stays a closed set.
pub(crate) const CACHE_LAYERS: [&str; 4] = ["cas", "ccache", "compiled", "other"];

/// Buckets of `cicd.pipeline.run.duration`, s: a no-op build takes about a
/// second, a cold build of a large tree an hour or more.
pub(crate) const RUN_DURATION_BOUNDS: &[f64] = &[
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0,
];
/// Buckets of `ct.rule.duration`, s: a CAS hit or a symlink takes
/// milliseconds, a ccache hit tens of them, a compile from a tenth of a
/// second to minutes, a test or a large link up to ten minutes.
pub(crate) const RULE_DURATION_BOUNDS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

/// Buckets of `ct.build.critical_path.duration`, s: those of the build
/// duration, which bounds the path, so the two compare bucket for bucket.
pub(crate) const CRITICAL_PATH_BOUNDS: &[f64] = RUN_DURATION_BOUNDS;
/// Buckets of `ct.build.parallelism`: a serial build is 1, a saturated
/// `-jN` build N; up to a large CI machine's cores.
pub(crate) const PARALLELISM_BOUNDS: &[f64] = &[
    1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0, 96.0, 128.0,
];

/// What the build metrics of one build are made from.
pub struct BuildMetricsInput<'x> {
    pub build: &'x Build,
    pub clock: &'x Clock,
    pub trace_id: [u8; 16],
    /// `cicd.pipeline.name`; empty: omitted.
    pub pipeline_name: &'x str,
    /// Build start and end, Unix ns.
    pub start_unix_nano: u64,
    pub time_unix_nano: u64,
    /// Of the Sums and histograms.
    pub temporality: AggregationTemporality,
    pub max_attribute_len: u32,
    /// The build analytics' root numbers; `None` when no rule counted.
    pub analytics: Option<&'x BuildSummary>,
    /// The compile history's numbers of the build: a rule that regressed
    /// is its bucket's `ct.rule.duration` exemplar.
    pub history: Option<&'x HistoryFacts>,
}

/// The build's scope of build metrics and its number of data points.
pub fn build_scope_metrics(input: &BuildMetricsInput) -> (ScopeMetrics, u64) {
    let result = build_result(input.build);
    let ids = SpanIds::new(&input.trace_id);
    let mut metrics = Vec::with_capacity(6);
    let mut points = 0u64;

    metrics.push(run_duration(input, result, &ids));
    points += 1;
    if let Some(BuildResult::Failure { stopped_in }) = result {
        metrics.push(run_errors(input, stopped_in));
        points += 1;
    }
    let rules = RuleSeries::collect(input, &ids);
    if !rules.is_empty() {
        let (duration, compiles, n) = rules.into_metrics(input);
        metrics.push(duration);
        metrics.push(compiles);
        points += n;
    }
    if let Some(summary) = input.analytics {
        metrics.push(critical_path(input, summary, &ids));
        points += 1;
        if let Some(avg) = summary.parallelism_avg {
            metrics.push(parallelism(input, avg, &ids));
            points += 1;
        }
    }
    let scope_metrics = ScopeMetrics {
        scope: Some(scope(SCOPE_NAME)),
        metrics,
        schema_url: String::new(),
    };
    (scope_metrics, points)
}

/// The point attributes: the pipeline, its run's state (the whole file is
/// the run executing), the result and, for a failed run, `error.type` (the
/// phase it stopped in) as the conventions require, then the build's keys.
fn run_duration(input: &BuildMetricsInput, result: Option<BuildResult>, ids: &SpanIds) -> Metric {
    let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 6);
    a.non_empty_string(PIPELINE_NAME, input.pipeline_name);
    a.string(PIPELINE_RUN_STATE, STATE_EXECUTING);
    match result {
        Some(BuildResult::Success) => a.string(PIPELINE_RESULT, "success"),
        Some(BuildResult::Failure { stopped_in }) => {
            a.string(PIPELINE_RESULT, "failure");
            a.non_empty_string(ERROR_TYPE, stopped_in);
        }
        None => {}
    }
    a.non_empty_string(VARIANT_ATTRIBUTE, &input.build.variant);
    a.non_empty_string(BACKEND_ATTRIBUTE, &input.build.backend);
    let mut h = HistogramAccumulator::new(RUN_DURATION_BOUNDS);
    let seconds = input.time_unix_nano.saturating_sub(input.start_unix_nano) as f64 / 1e9;
    h.record(seconds, root_span(input, ids));
    histogram_metric(
        RUN_DURATION_METRIC,
        RUN_DURATION_DESCRIPTION,
        "s",
        input,
        vec![h.into_point(a.finish().0, input.start_unix_nano, input.time_unix_nano)],
    )
}

/// The point attributes of the analytics metrics: the build's series keys
/// as on `cicd.pipeline.run.duration`, without the result (the path and the
/// parallelism are known for failed builds too).
fn analytics_attributes(input: &BuildMetricsInput, method: Option<&str>) -> Vec<KeyValue> {
    let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 4);
    a.non_empty_string(PIPELINE_NAME, input.pipeline_name);
    if let Some(method) = method {
        a.string(super::analytics::CRITICAL_PATH_METHOD, method);
    }
    a.non_empty_string(VARIANT_ATTRIBUTE, &input.build.variant);
    a.non_empty_string(BACKEND_ATTRIBUTE, &input.build.backend);
    a.finish().0
}

/// The root span, the exemplar of the one-observation-per-build histograms.
fn root_span(input: &BuildMetricsInput, ids: &SpanIds) -> SpanRef {
    SpanRef {
        trace_id: input.trace_id,
        span_id: ids.span_id(&[]),
        time_unix_nano: input.time_unix_nano,
    }
}

fn critical_path(input: &BuildMetricsInput, summary: &BuildSummary, ids: &SpanIds) -> Metric {
    let mut h = HistogramAccumulator::new(CRITICAL_PATH_BOUNDS);
    h.record(summary.critical_path_s, root_span(input, ids));
    let attributes = analytics_attributes(input, Some(summary.critical_path_method.as_str()));
    histogram_metric(
        CRITICAL_PATH_METRIC,
        CRITICAL_PATH_DESCRIPTION,
        "s",
        input,
        vec![h.into_point(attributes, input.start_unix_nano, input.time_unix_nano)],
    )
}

fn parallelism(input: &BuildMetricsInput, avg: f64, ids: &SpanIds) -> Metric {
    let mut h = HistogramAccumulator::new(PARALLELISM_BOUNDS);
    h.record(avg, root_span(input, ids));
    histogram_metric(
        PARALLELISM_METRIC,
        PARALLELISM_DESCRIPTION,
        "1",
        input,
        vec![h.into_point(
            analytics_attributes(input, None),
            input.start_unix_nano,
            input.time_unix_nano,
        )],
    )
}

fn run_errors(input: &BuildMetricsInput, stopped_in: &str) -> Metric {
    let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 4);
    a.non_empty_string(PIPELINE_NAME, input.pipeline_name);
    a.non_empty_string(ERROR_TYPE, stopped_in);
    a.non_empty_string(VARIANT_ATTRIBUTE, &input.build.variant);
    a.non_empty_string(BACKEND_ATTRIBUTE, &input.build.backend);
    sum_metric(
        RUN_ERRORS_METRIC,
        RUN_ERRORS_DESCRIPTION,
        "{error}",
        input,
        vec![int_point(input, a.finish().0, 1)],
    )
}

/// The rule spans' durations by (rule type, cache layer), in order of first
/// appearance, and the compile counts by cache layer.
struct RuleSeries {
    durations: Vec<((String, Option<&'static str>), HistogramAccumulator)>,
    compiles: [u64; 4],
}

impl RuleSeries {
    fn collect(input: &BuildMetricsInput, ids: &SpanIds) -> Self {
        let mut series = Self {
            durations: Vec::new(),
            compiles: [0; 4],
        };
        let mut path = Vec::new();
        for_each_rule_span(
            input.build.children(),
            input.clock,
            &mut path,
            &mut |rule, path| {
                let Some(rule_type) = rule.rule_type() else {
                    return;
                };
                let layer = (rule_type == "compile").then(|| cache_layer(&rule));
                if let Some(layer) = layer {
                    let i = CACHE_LAYERS.iter().position(|l| *l == layer).unwrap_or(3);
                    series.compiles[i] += 1;
                }
                let ((start, end), _) = input.clock.event_interval(&rule);
                let span = SpanRef {
                    trace_id: input.trace_id,
                    span_id: ids.span_id(path),
                    time_unix_nano: u64::try_from(end).unwrap_or(0),
                };
                let seconds = end.saturating_sub(start) as f64 / 1e9;
                let h = match series
                    .durations
                    .iter()
                    .position(|((t, l), _)| t == rule_type && *l == layer)
                {
                    Some(i) => &mut series.durations[i].1,
                    None => {
                        let key = (rule_type.to_owned(), layer);
                        series
                            .durations
                            .push((key, HistogramAccumulator::new(RULE_DURATION_BOUNDS)));
                        &mut series.durations.last_mut().expect("just pushed").1
                    }
                };
                let delta = input.history.and_then(|h| h.rule(rule.id())?.duration_delta_s);
                h.record_with_delta(seconds, span, delta);
            },
        );
        series
    }

    fn is_empty(&self) -> bool {
        self.durations.is_empty()
    }

    fn into_metrics(self, input: &BuildMetricsInput) -> (Metric, Metric, u64) {
        let variant = &input.build.variant;
        let duration_points: Vec<_> = self
            .durations
            .into_iter()
            .map(|((rule_type, layer), h)| {
                let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 3);
                a.string(RULE_TYPE_ATTRIBUTE, &rule_type);
                if let Some(layer) = layer {
                    a.string(CACHE_LAYER_ATTRIBUTE, layer);
                }
                a.non_empty_string(VARIANT_ATTRIBUTE, variant);
                h.into_point(a.finish().0, input.start_unix_nano, input.time_unix_nano)
            })
            .collect();
        let compile_points: Vec<_> = CACHE_LAYERS
            .iter()
            .zip(self.compiles)
            .map(|(layer, n)| {
                let mut a = AttrBuilder::with_capacity(input.max_attribute_len, 2);
                a.string(CACHE_LAYER_ATTRIBUTE, layer);
                a.non_empty_string(VARIANT_ATTRIBUTE, variant);
                int_point(input, a.finish().0, n)
            })
            .collect();
        let points = (duration_points.len() + compile_points.len()) as u64;
        (
            histogram_metric(
                RULE_DURATION_METRIC,
                RULE_DURATION_DESCRIPTION,
                "s",
                input,
                duration_points,
            ),
            sum_metric(
                COMPILES_METRIC,
                COMPILES_DESCRIPTION,
                "{compile}",
                input,
                compile_points,
            ),
            points,
        )
    }
}

/// Calls `f` with every rule span below no other rule and its index path
/// (the input of its span id, as the trace computes it): phases and
/// sub-phases are descended into, rule `children` are not, unanchored rules
/// are skipped as the trace skips them.
fn for_each_rule_span<'b>(
    events: crate::timing::Events<'b>,
    clock: &Clock,
    path: &mut Vec<u32>,
    f: &mut impl FnMut(Event<'b>, &[u32]),
) {
    for event in events {
        if event.is_rule() && !clock.is_anchored(&event) {
            continue;
        }
        path.push(event.index());
        if event.is_rule() {
            f(event, path);
        } else {
            for_each_rule_span(event.children(), clock, path, f);
        }
        path.pop();
    }
}

/// A compile rule's cache layer, one of [`CACHE_LAYERS`].
fn cache_layer(rule: &Event) -> &'static str {
    match rule.metadata_value(CACHE_LAYER_KEY) {
        Some(crate::timing::MetaValue::Str(s)) => {
            CACHE_LAYERS.iter().find(|l| **l == s).copied().unwrap_or("other")
        }
        _ => "other",
    }
}

fn int_point(input: &BuildMetricsInput, attributes: Vec<KeyValue>, value: u64) -> NumberDataPoint {
    NumberDataPoint {
        attributes,
        start_time_unix_nano: input.start_unix_nano,
        time_unix_nano: input.time_unix_nano,
        value: Some(Value::AsInt(super::attributes::saturating_i64(value))),
        ..Default::default()
    }
}

fn sum_metric(
    name: &str,
    description: &str,
    unit: &str,
    input: &BuildMetricsInput,
    data_points: Vec<NumberDataPoint>,
) -> Metric {
    Metric {
        name: name.to_owned(),
        description: description.to_owned(),
        unit: unit.to_owned(),
        data: Some(Data::Sum(Sum {
            data_points,
            aggregation_temporality: input.temporality as i32,
            is_monotonic: true,
        })),
        ..Default::default()
    }
}

fn histogram_metric(
    name: &str,
    description: &str,
    unit: &str,
    input: &BuildMetricsInput,
    data_points: Vec<opentelemetry_proto::tonic::metrics::v1::HistogramDataPoint>,
) -> Metric {
    Metric {
        name: name.to_owned(),
        description: description.to_owned(),
        unit: unit.to_owned(),
        data: Some(Data::Histogram(Histogram {
            data_points,
            aggregation_temporality: input.temporality as i32,
        })),
        ..Default::default()
    }
}
