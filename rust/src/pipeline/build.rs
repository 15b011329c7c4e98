//! One invocation directory in, OTLP bytes out.
//!
//! Order of work for one build, each step only when a requested output
//! needs it:
//! 1. timing.json → the build model (always: every output needs the build's
//!    times and the trace id needs its `timestamp`);
//! 2. the statslog the receiver passed (`req.statslog`) — for the trace
//!    (summary, `H`, per-TU attribution) and for the metrics;
//! 3. the outcomes log the receiver passed (`req.outcomes`), merged into the
//!    rules — for the trace and the build metrics (`ct.rule.cache_layer`);
//! 4. per-TU ccache attribution on top of the merged metadata — likewise;
//! 5. the build analytics from the rules' times, with the build graph the
//!    receiver passed (`req.build_graph`) for an exact critical path — for
//!    the trace and the build metrics (critical path, parallelism);
//! 6. the metrics: the ccache metrics and the build metrics (rule durations
//!    and compile counts need the merged metadata of steps 3 and 4);
//! 7. the trace (with the `ct.ccache.snapshot` span under metrics-as-spans),
//!    whole ([`process_build`]) or as requests encoded on demand
//!    ([`open_build`]).
//!
//! Between steps 4 and 5, the compiles' clang `-ftime-trace` files
//! ([`super::time_trace`]): child spans of the compile spans, root
//! attributes, metrics and the build's log records.
//!
//! The trace's plan (span ids, parents, counts: `otlp::trace::TracePlan`)
//! needs only the build after step 4, its clock and its trace id; for a
//! large build it is made on a second thread while this one does steps
//! 5–6 and the root's attributes ([`super::alongside`]).
//!
//! This file orchestrates; what identifies the build in its outputs (trace
//! id, resource, the metrics' series) is [`super::identity`], and the
//! path helpers the trace id hashes are in [`crate::ids`].

use std::path::Path;

use super::alongside::alongside;
use super::history;
use super::identity::{metric_series, Identity};
use super::time_trace;
use crate::analytics;
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::history::HistoryFacts;
use crate::ids;
use crate::input::InvocationDir;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::ResourceMetrics;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::ScopeSpans;
use prost::Message;

use crate::otlp::history::history_root_attributes;
use crate::otlp::rebuild::rebuild_root_attributes;
use crate::otlp::semconv;
use crate::otlp::trace::{encode_planned_into, TracePlan};
use crate::otlp::{
    analytics_root_attributes, build_scope_metrics, ccache_scope_metrics, root_attributes_with_ccache,
    snapshot_scope_spans, BuildMetricsInput, MetricsInput, SnapshotInput, TraceChunks, TraceInput,
    TraceParts, TraceStats,
};
use crate::outcomes;
use crate::request::{BuildOutput, BuildRequest, MetricIdentity, Summary};
use crate::statslog::{self, Keep, Statslog};
use crate::timetrace::BuildTraces;
use crate::timing::{self, aggregates, Build, TIMING_FILE};
use crate::warnings::Warnings;

/// What one request asks to be produced.
#[derive(Debug, Clone, Copy)]
struct Wanted {
    traces: bool,
    /// ccache metrics as metrics.
    metrics: bool,
    /// ccache metrics as the `ct.ccache.snapshot` span of the trace. It is a
    /// span, so it needs the traces signal, not the metrics one (a pipeline
    /// that turns metrics into spans usually has no metrics consumer).
    snapshot: bool,
    /// The build metrics (`cicd.pipeline.run.*`, `ct.rule.duration`,
    /// `ct.compiles`).
    build_metrics: bool,
}

impl Wanted {
    fn of(req: &BuildRequest) -> Self {
        Self {
            traces: req.signals.traces,
            metrics: req.signals.metrics && !req.metrics_as_spans,
            snapshot: req.signals.traces && req.metrics_as_spans,
            build_metrics: req.signals.metrics && req.build_metrics,
        }
    }
}

/// Reads the build in `req.invocation_dir` and returns its OTLP requests.
pub fn process_build(req: &BuildRequest, cancel: &CancelToken) -> Result<BuildOutput, Error> {
    process_build_with(req, cancel, PLAN_ALONGSIDE_MIN_EVENTS)
}

/// [`process_build`] with the trace planned on a second thread for builds
/// of at least `plan_alongside_min_events` events (the tests compare).
fn process_build_with(
    req: &BuildRequest,
    cancel: &CancelToken,
    plan_alongside_min_events: usize,
) -> Result<BuildOutput, Error> {
    let mut output = BuildOutput::default();
    let read = read_build(
        req,
        cancel,
        Encoding::WholeTrace,
        plan_alongside_min_events,
        &mut output,
    )?;
    if let Some(t) = read.trace {
        let (bytes, stats, warnings) = encode_trace(req, t);
        output.traces = Some(bytes);
        set_trace_stats(&mut output.summary, stats);
        output.summary.warnings = warnings.into_lines();
    }
    Ok(output)
}

/// A build opened for streaming: its metrics and summary now, its trace
/// as [`TraceChunks`] encoded one request at a time on demand.
pub struct BuildStream {
    /// Metrics bytes and the summary (trace counts and every warning
    /// included: chunks add none); `traces` is always `None`.
    pub output: BuildOutput,
    /// The trace, when traces were asked for.
    pub traces: Option<TraceChunks>,
}

/// [`process_build`] whose trace is not encoded: it comes as requests of
/// at most `max_spans` spans (0: one request) from the returned
/// [`TraceChunks`], which owns the build's model. The file text is freed
/// right after decoding, so what stays is the model, the plan (24 bytes a
/// span) and the request being encoded.
pub fn open_build(req: &BuildRequest, cancel: &CancelToken, max_spans: usize) -> Result<BuildStream, Error> {
    open_build_with(req, cancel, max_spans, PLAN_ALONGSIDE_MIN_EVENTS)
}

/// [`open_build`], planning as [`process_build_with`].
fn open_build_with(
    req: &BuildRequest,
    cancel: &CancelToken,
    max_spans: usize,
    plan_alongside_min_events: usize,
) -> Result<BuildStream, Error> {
    let mut output = BuildOutput::default();
    let read = read_build(
        req,
        cancel,
        Encoding::Chunks,
        plan_alongside_min_events,
        &mut output,
    )?;
    let mut traces = None;
    if let Some(t) = read.trace {
        let (parts, plan, mut warnings) = trace_parts(req, t);
        let chunks = TraceChunks::planned(parts, plan, max_spans, &mut warnings);
        set_trace_stats(&mut output.summary, chunks.stats());
        output.summary.warnings = warnings.into_lines();
        traces = Some(chunks);
    }
    Ok(BuildStream { output, traces })
}

fn set_trace_stats(summary: &mut Summary, stats: TraceStats) {
    summary.spans = stats.spans;
    summary.unanchored_rules = stats.unanchored_rules;
    summary.dropped_attributes = stats.dropped_attributes;
}

/// What is left to do for the trace once the build is read: encoding it.
struct TraceToDo {
    build: Build,
    id: Identity,
    /// The root span's attributes.
    root_attributes: Vec<KeyValue>,
    /// The `ct.ccache.snapshot` span's scope under metrics-as-spans.
    extra: Vec<ScopeSpans>,
    /// The spans, planned (their warnings not yet in `warnings`).
    plan: TracePlan,
    /// The file text's buffer, emptied, for the whole trace's bytes (its
    /// capacity is the encoder's first estimate); empty when streaming.
    out_buffer: Vec<u8>,
    /// The build analytics (exact critical path where a build graph was
    /// given), with the compile history's numbers.
    analytics: analytics::BuildAnalytics,
    /// The compiles' clang traces.
    clang: Option<BuildTraces>,
    warnings: Warnings,
}

struct ReadBuild {
    trace: Option<TraceToDo>,
}

/// How the trace will be encoded, which decides what becomes of the file
/// text's buffer once the model is decoded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// One request ([`process_build`]): the buffer is reserved at 1.25× the
    /// file and becomes the output's, which is then written into memory
    /// the read already faulted in (the kernel zeroes every fresh page; for
    /// 60 MB that is ~10 ms).
    WholeTrace,
    /// Requests of a few spans ([`open_build`]): the buffer is handed to
    /// [`crate::retain`] for the next build's text (freed if too small or
    /// too large to keep).
    Chunks,
}

/// Steps 1–4 (module doc) and the metrics: fills `output`'s metrics and
/// summary (warnings included when no trace is wanted) and returns what
/// the trace still needs.
fn read_build(
    req: &BuildRequest,
    cancel: &CancelToken,
    encoding: Encoding,
    plan_alongside_min_events: usize,
    output: &mut BuildOutput,
) -> Result<ReadBuild, Error> {
    cancel.check()?;
    let path = req.invocation_dir.join(TIMING_FILE);
    let dir = InvocationDir::open(&req.invocation_dir).map_err(|source| Error::Io {
        path: req.invocation_dir.clone(),
        source,
    })?;
    let mut warnings = Warnings::new();
    // With room to spare the buffer can become the output (a whole trace),
    // and a buffer kept from an earlier build is read into (crate::retain).
    let spare_quarters = if Wanted::of(req).traces { 1 } else { 0 };
    let mut text = timing::load_reserving_in(Some(&dir), &path, &req.limits, spare_quarters, &mut warnings)?;
    let timing_modified = req.build_graph.as_ref().and_then(|_| modified_in(&dir, &path));
    let mut build = timing::decode_owned(&mut text.text, &path, &req.limits, cancel, &mut warnings)?;
    let wanted = Wanted::of(req);
    // The model owns its data, so the text is done with before any output
    // is written: text and output never occupy memory side by side (peak
    // RSS, design.md §7). For one whole request its buffer, reserved with a
    // quarter to spare (the output is ~1.1× the file at 100k rules), is
    // reused for the output; when streaming it is kept for the next build's
    // text (crate::retain: resident while this build streams, within the
    // 2× of design.md §7; not kept above 96 MiB, so not for 1M-rule builds).
    let out_buffer = match encoding {
        Encoding::WholeTrace if wanted.traces => {
            let mut bytes = text.text.into_bytes();
            bytes.clear();
            bytes
        }
        Encoding::WholeTrace | Encoding::Chunks => {
            // Kept for the next build's text (bounded, crate::retain).
            crate::retain::give_bytes(text.text.into_bytes());
            Vec::new()
        }
    };
    cancel.check()?;

    let statslog = load_statslog(req, &dir, wanted, &mut warnings);
    // compiletools emits ccache data only when the statslog yielded at least
    // one event (formats.md §3.4, §3.5).
    let ccache = statslog.filter(|log| !log.is_empty());
    cancel.check()?;

    let history = req.history.as_deref().filter(|_| wanted.traces || wanted.metrics);
    let ccache_metrics = wanted.metrics && ccache.is_some();
    let clang_wanted = req.time_trace.enabled && (wanted.traces || wanted.build_metrics || req.logs);
    if !(wanted.traces || wanted.build_metrics || ccache_metrics || history.is_some() || clang_wanted) {
        output.summary.warnings = warnings.into_lines();
        return Ok(ReadBuild { trace: None });
    }
    let id = Identity::of(req, &build, &path, &mut warnings)?;
    // The compile history needs the rules' cache layers (side files), for
    // the trace's attributes or the time-saved metric.
    if wanted.traces || wanted.build_metrics || history.is_some() || clang_wanted {
        apply_side_files(req, &dir, &mut build, ccache.as_ref(), &mut warnings);
        cancel.check()?;
    }
    let clang = clang_wanted
        .then(|| time_trace::collect(req, &build, &id.clock, cancel, &mut warnings, dir.owner()))
        .transpose()?
        .flatten();
    if let Some(c) = &clang {
        time_trace::summarise(req, c, &id, &mut output.summary, &mut output.logs);
    }
    let analysis = Analysis {
        req,
        cancel,
        build: &build,
        id: &id,
        ccache: ccache.as_ref(),
        history,
        timing_modified,
        wanted,
        clang: clang.as_ref(),
    };
    if !wanted.traces {
        analysis.run(output, &mut warnings)?;
        output.summary.warnings = warnings.into_lines();
        return Ok(ReadBuild { trace: None });
    }
    // The build is final from here on, so its trace can be planned; that
    // needs nothing of what this thread computes meanwhile.
    let (done, plan) = alongside(
        build.event_count() >= plan_alongside_min_events && crate::cores::second_core(),
        || TracePlan::make(&build, &id.clock, &id.trace_id, clang.as_ref()),
        || {
            let analytics = analysis.run(output, &mut warnings)?;
            let mut root_attributes = trace_root_attributes(req, &build, ccache.as_ref(), &analytics);
            if let Some(c) = &clang {
                root_attributes.extend(time_trace::root_attributes(req, c));
            }
            let snapshot = ccache.as_ref().filter(|_| wanted.snapshot);
            let extra = snapshot_spans(req, snapshot, &id, &mut warnings);
            Ok::<_, Error>((analytics, root_attributes, extra))
        },
    );
    let (analytics, root_attributes, extra) = done?;
    let trace = TraceToDo {
        build,
        id,
        root_attributes,
        extra,
        plan,
        out_buffer,
        analytics,
        clang,
        warnings,
    };
    Ok(ReadBuild { trace: Some(trace) })
}

/// Builds with fewer events are planned on the calling thread. Measured on
/// an idle machine (`timing_once`, whole trace, 5 interleaved rounds):
/// 5k rules, no gain (best 4.9–5.0 ms on one thread, 4.7–6.0 on two: the
/// thread's start eats the ~0.6 ms of planning it overlaps); 20k, best
/// 20.6–22.7 → 19.5–20.6 ms; 100k, 8–15 ms less a round (planning takes
/// ~14 ms, the analytics and root attributes ~13). With both cores busy
/// with other work nothing is won, and little lost.
const PLAN_ALONGSIDE_MIN_EVENTS: usize = 8192;

/// What steps 5 and 6 read (module doc).
struct Analysis<'x> {
    req: &'x BuildRequest,
    cancel: &'x CancelToken,
    /// Side files merged.
    build: &'x Build,
    id: &'x Identity,
    ccache: Option<&'x Statslog>,
    history: Option<&'x crate::history::History>,
    timing_modified: Option<std::time::SystemTime>,
    wanted: Wanted,
    clang: Option<&'x BuildTraces>,
}

impl Analysis<'_> {
    /// Steps 5 and 6: the analytics (with the history's numbers) the trace
    /// needs; the metrics go into `output`.
    fn run(
        &self,
        output: &mut BuildOutput,
        warnings: &mut Warnings,
    ) -> Result<analytics::BuildAnalytics, Error> {
        let Analysis {
            req,
            cancel,
            build,
            id,
            ccache,
            history,
            timing_modified,
            wanted,
            clang,
        } = *self;
        let facts = history.map(|h| {
            history::evaluate(
                h,
                build,
                &id.clock,
                (&req.host_name, &req.pipeline_name),
                &id.trace_id,
                &req.invocation_dir,
            )
        });
        let analytics = if wanted.traces || wanted.build_metrics {
            let graph = req.build_graph.as_deref().and_then(|template| {
                analytics::build_graph::load(
                    template,
                    build,
                    timing_modified,
                    req.limits.max_file_bytes,
                    warnings,
                )
            });
            cancel.check()?;
            analytics::analyze_with(build, &id.clock, graph.as_ref(), warnings)
        } else {
            analytics::BuildAnalytics::default()
        };
        // The comparison with the previous build needs this build's
        // critical path (rebuild reasons, docs/rebuilds.md).
        let facts = match (history, facts) {
            (Some(h), Some(mut facts)) => {
                history::finish(h, &mut facts, build, &id.clock, &analytics, &req.invocation_dir);
                Some(facts)
            }
            (_, facts) => facts,
        };
        let analytics = analytics.with_history(facts);
        let ccache_metrics = wanted.metrics && ccache.is_some();
        if ccache_metrics || wanted.build_metrics {
            let log = ccache.filter(|_| wanted.metrics);
            let build_metrics = wanted.build_metrics.then_some((build, &analytics));
            let build_metrics = build_metrics.map(|(b, a)| (b, a, clang));
            let (bytes, points) = encode_metrics(req, log, build_metrics, id, warnings);
            output.metrics = Some(bytes);
            output.summary.metric_points = points;
        }
        if let Some(facts) = analytics.history().filter(|_| wanted.metrics) {
            output.summary.metric_points += append_time_saved(req, &mut output.metrics, facts, id);
            output.summary.metric_points += history::append_rebuilds(
                &mut output.metrics,
                facts,
                metric_series(req, id),
                (&build.variant, &req.pipeline_name),
                (id.start, id.end),
                req.limits.max_attribute_len,
            );
        }
        Ok(analytics)
    }
}

/// The compile history's `ct.cache.time_saved`, appended to the build's
/// metrics in the same series as its other metrics.
fn append_time_saved(
    req: &BuildRequest,
    metrics: &mut Option<Vec<u8>>,
    facts: &HistoryFacts,
    id: &Identity,
) -> u64 {
    let series = metric_series(req, id);
    history::append_time_saved(
        metrics,
        facts,
        series,
        (id.start, id.end),
        req.limits.max_attribute_len,
    )
}

/// The build's metrics request: one resource — the trace's, identified by
/// the trace id (per-build identity, ct-cake's form), or the host's — with
/// the ccache scope (when there is a statslog) and the build metrics' scope
/// (when asked for).
fn encode_metrics(
    req: &BuildRequest,
    ccache: Option<&Statslog>,
    build: Option<(&Build, &analytics::BuildAnalytics, Option<&BuildTraces>)>,
    id: &Identity,
    warnings: &mut Warnings,
) -> (Vec<u8>, u64) {
    let max_attribute_len = req.limits.max_attribute_len;
    let per_build = req.metric_identity == MetricIdentity::Build;
    let series = metric_series(req, id);
    let mut scope_metrics = Vec::with_capacity(2);
    let mut points = 0;
    if let Some(log) = ccache {
        let input = MetricsInput {
            statslog: log,
            resource: Resource::default(),
            start_unix_nano: id.start,
            time_unix_nano: id.end,
            max_attribute_len,
            per_build,
            shared_series_attributes: series.point_attributes.clone(),
        };
        let (scope, n) = ccache_scope_metrics(&input, warnings);
        scope_metrics.push(scope);
        points += n;
    }
    if let Some((build, analytics, clang)) = build {
        let input = BuildMetricsInput {
            build,
            clock: &id.clock,
            trace_id: id.trace_id,
            pipeline_name: &req.pipeline_name,
            start_unix_nano: id.start,
            time_unix_nano: id.end,
            temporality: series.temporality,
            max_attribute_len,
            analytics: analytics.summary(),
            history: analytics.history(),
        };
        let (mut scope, n) = build_scope_metrics(&input);
        points += n;
        if let Some(c) = clang {
            points += time_trace::append_metrics(req, c, &input, &mut scope);
        }
        scope_metrics.push(scope);
    }
    let request = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(series.resource),
            scope_metrics,
            schema_url: String::new(),
        }],
    };
    (request.encode_to_vec(), points)
}

/// The trace in one buffer: the file text's, reserved at 1.25× the file's
/// size (untouched reserved memory costs nothing; the rest is given back
/// at the end).
fn encode_trace(req: &BuildRequest, t: TraceToDo) -> (Vec<u8>, TraceStats, Warnings) {
    let TraceToDo {
        build,
        id,
        root_attributes,
        extra,
        plan,
        out_buffer,
        analytics,
        clang,
        mut warnings,
    } = t;
    let input = TraceInput {
        build: &build,
        clock: &id.clock,
        trace_id: id.trace_id,
        resource: id.resource.clone(),
        root_attributes,
        max_attribute_len: req.limits.max_attribute_len,
        analytics: Some(&analytics),
        semconv_root_span: req.semconv_root_span,
        pipeline_name: &req.pipeline_name,
        clang: clang.as_ref(),
    };
    let (bytes, stats) = encode_planned_into(input, plan, &extra, out_buffer, &mut warnings);
    build.recycle();
    (bytes, stats, warnings)
}

/// The same trace as [`encode_trace`], its parts moved into a
/// [`TraceParts`] for [`TraceChunks`], with its plan and the warnings so far.
fn trace_parts(req: &BuildRequest, t: TraceToDo) -> (TraceParts, TracePlan, Warnings) {
    let TraceToDo {
        build,
        id,
        root_attributes,
        extra,
        plan,
        analytics,
        clang,
        warnings,
        ..
    } = t;
    let parts = TraceParts {
        build,
        clock: id.clock,
        analytics,
        trace_id: id.trace_id,
        resource: id.resource,
        root_attributes,
        max_attribute_len: req.limits.max_attribute_len,
        semconv_root_span: req.semconv_root_span,
        pipeline_name: req.pipeline_name.clone(),
        extra,
        clang,
    };
    (parts, plan, warnings)
}

/// The root's attributes: aggregates from the rules and the statslog, the
/// build analytics, the pipeline run keys.
fn trace_root_attributes(
    req: &BuildRequest,
    build: &Build,
    ccache: Option<&Statslog>,
    analytics: &analytics::BuildAnalytics,
) -> Vec<KeyValue> {
    let max_attribute_len = req.limits.max_attribute_len;
    let summary = ccache.map(Statslog::summary);
    let aggregates = aggregates::compute(build, summary.map(|s| s.hits()));
    let mut root_attributes = root_attributes_with_ccache(&aggregates, summary, max_attribute_len);
    root_attributes.extend(analytics_root_attributes(analytics, max_attribute_len));
    if let Some(h) = analytics.history() {
        root_attributes.extend(history_root_attributes(h.summary(), max_attribute_len));
        root_attributes.extend(rebuild_root_attributes(h.summary(), max_attribute_len));
    }
    root_attributes.extend(semconv::root_attributes(build, max_attribute_len));
    root_attributes
}

/// The `ct.ccache.snapshot` span's scope when `snapshot` holds the
/// statslog to report.
fn snapshot_spans(
    req: &BuildRequest,
    snapshot: Option<&Statslog>,
    id: &Identity,
    warnings: &mut Warnings,
) -> Vec<ScopeSpans> {
    snapshot
        .map(|log| {
            let input = SnapshotInput {
                statslog: log,
                trace_id: id.trace_id,
                parent_span_id: ids::span_id(&id.trace_id, &[]),
                time_unix_nano: id.end,
                max_attribute_len: req.limits.max_attribute_len,
            };
            snapshot_scope_spans(input, warnings)
        })
        .into_iter()
        .collect()
}

/// The statslog of the build, if the receiver passed one and an output
/// needs it; the blocks are kept only for the trace's attribution.
fn load_statslog(
    req: &BuildRequest,
    dir: &InvocationDir,
    wanted: Wanted,
    warnings: &mut Warnings,
) -> Option<Statslog> {
    if !(wanted.traces || wanted.metrics || wanted.build_metrics) {
        return None;
    }
    let path = req.statslog.as_deref()?;
    let keep = if wanted.traces || wanted.build_metrics {
        Keep::Blocks
    } else {
        Keep::CountsOnly
    };
    Some(statslog::load(Some(dir), path, &req.limits, keep, warnings))
}

/// Brings the rules' metadata to what the trace shows: the outcomes log
/// merged as compiletools does (with `ct.rule.cache_layer` recomputed), then
/// the per-TU ccache attribution on top.
fn apply_side_files(
    req: &BuildRequest,
    dir: &InvocationDir,
    build: &mut Build,
    ccache: Option<&Statslog>,
    warnings: &mut Warnings,
) {
    if let Some(path) = req.outcomes.as_deref() {
        let log = outcomes::load(Some(dir), path, &req.limits, warnings);
        outcomes::merge(build, &log);
    }
    if let Some(log) = ccache {
        statslog::attribute(build, log);
    }
}

/// When `timing.json` was last written (for the build graph's "not
/// rewritten since" check).
fn modified_in(dir: &InvocationDir, path: &Path) -> Option<std::time::SystemTime> {
    dir.open_file(path).ok()?.metadata().ok()?.modified().ok()
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    /// An invocation directory of `rules` compile rules with a statslog
    /// and an outcomes log beside it, holding all that planning counts or
    /// warns about: unanchored rules, intervals the clock repairs (more
    /// than the warnings kept), unsupported metadata values — some of them
    /// `cas.hit`, which the outcomes log replaces with a bool, so a plan
    /// made before the side files are merged counts other drops.
    fn large_build(rules: usize) -> (tempfile::TempDir, BuildRequest) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("20261130T034340-7");
        std::fs::create_dir(&dir).unwrap();
        let (mut events, mut outcomes, mut statslog) = (Vec::new(), String::new(), String::new());
        for i in 0..rules {
            let start = 101.0 + i as f64 * 1e-3;
            let (start, end) = match i {
                _ if i % 97 == 0 => (0.0, 1.0),
                _ if i % 50 == 0 => (start, start - 0.5),
                _ => (start, 102.0 + (i % 11) as f64 * 0.5),
            };
            let metadata = match i % 13 {
                0 => r#"{"cas.hit": {"x": 1}, "n": 1}"#,
                1 => r#"{"other": [1, "a"]}"#,
                _ => r#"{"cas.hit": false}"#,
            };
            events.push(format!(
                r#"{{"name": "r{i}.cpp", "rule_type": "compile", "target": "/o/r{i}.o", "source": "/s/d{}/r{i}.cpp", "start_s": {start}, "end_s": {end}, "metadata": {metadata}}}"#,
                i % 7
            ));
            if i % 13 == 0 {
                writeln!(outcomes, "/o/r{i}.o\tobj\t{}\t{i}", i % 2).unwrap();
            }
            if i % 5 == 0 {
                writeln!(
                    statslog,
                    "# /s/d{}/r{i}.cpp\ndirect_cache_hit\nlocal_storage_hit",
                    i % 7
                )
                .unwrap();
            }
        }
        let doc = format!(
            r#"{{"timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0,
                "phases": [{{"name": "build_execution", "start_s": 100.5, "end_s": 109.5, "rules": [{}]}}]}}"#,
            events.join(",")
        );
        std::fs::write(dir.join(TIMING_FILE), doc).unwrap();
        std::fs::write(dir.join("rule_outcomes.log"), outcomes).unwrap();
        std::fs::write(dir.join("ccache.statslog"), statslog).unwrap();
        let mut req = BuildRequest::new(&dir, "host");
        req.outcomes = Some(dir.join("rule_outcomes.log"));
        req.statslog = Some(dir.join("ccache.statslog"));
        (tmp, req)
    }

    fn streamed(req: &BuildRequest, plan_alongside_min_events: usize) -> (Summary, Vec<Vec<u8>>) {
        let stream = open_build_with(req, &CancelToken::new(), 700, plan_alongside_min_events).unwrap();
        let chunks = stream.traces.unwrap();
        let bytes = (0..chunks.len()).map(|k| chunks.chunk(k).unwrap()).collect();
        (stream.output.summary, bytes)
    }

    #[test]
    fn planning_alongside_gives_the_same_bytes() {
        // Above the threshold: the default plans this build on a second thread.
        let rules = PLAN_ALONGSIDE_MIN_EVENTS + 1000;
        let (_tmp, mut req) = large_build(rules);
        // Rules 0, 97, 194, …
        let unanchored = rules.div_ceil(97) as u64;
        let cancel = CancelToken::new();
        for (metrics_as_spans, build_metrics) in [(false, false), (true, true)] {
            req.metrics_as_spans = metrics_as_spans;
            req.build_metrics = build_metrics;
            let alongside = process_build(&req, &cancel).unwrap();
            let here = process_build_with(&req, &cancel, usize::MAX).unwrap();
            let s = &alongside.summary;
            // Root and phase, and the snapshot span under metrics-as-spans.
            let spans = rules as u64 - unanchored + 2 + u64::from(metrics_as_spans);
            assert_eq!(s.spans, spans);
            assert_eq!(s.unanchored_rules, unanchored);
            assert!(s.dropped_attributes > 0);
            assert!(
                s.warnings.iter().any(|w| w.contains("clamped")),
                "{:?}",
                s.warnings
            );
            assert!(s.warnings.last().unwrap().ends_with("more warning(s) suppressed"));
            assert_eq!(alongside.summary, here.summary);
            assert_eq!(alongside.traces, here.traces);
            assert_eq!(alongside.metrics, here.metrics);
            assert!(alongside.metrics.is_some());

            let (summary_alongside, chunks_alongside) = streamed(&req, PLAN_ALONGSIDE_MIN_EVENTS);
            let (summary_here, chunks_here) = streamed(&req, usize::MAX);
            assert_eq!(summary_alongside, summary_here);
            assert_eq!(summary_alongside, alongside.summary);
            assert_eq!(chunks_alongside, chunks_here);
        }
    }
}
