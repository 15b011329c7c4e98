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

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::history;
use crate::analytics;
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::history::HistoryFacts;
use crate::ids;
use crate::input::InvocationDir;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::{AggregationTemporality, ResourceMetrics};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::ScopeSpans;
use prost::Message;

use crate::otlp::history::history_root_attributes;
use crate::otlp::semconv;
use crate::otlp::{
    analytics_root_attributes, build_resource, build_scope_metrics, ccache_scope_metrics,
    encode_trace_request_into, host_resource, root_attributes_with_ccache, snapshot_scope_spans,
    with_invocation_id, BuildMetricsInput, MetricsInput, SnapshotInput, TraceChunks, TraceInput, TraceParts,
    TraceStats,
};
use crate::outcomes;
use crate::request::{BuildOutput, BuildRequest, MetricIdentity, Summary};
use crate::statslog::{self, Keep, Statslog};
use crate::timing::{self, aggregates, Build, Clock};
use crate::warnings::Warnings;

/// File name of the timing document inside an invocation directory.
pub const TIMING_FILE: &str = "timing.json";

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
    let mut output = BuildOutput::default();
    let read = read_build(req, cancel, Encoding::WholeTrace, &mut output)?;
    if let Some(mut t) = read.trace {
        let mut warnings = std::mem::replace(&mut t.warnings, Warnings::new());
        let (bytes, stats) = encode_trace(req, t, &mut warnings);
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
    let mut output = BuildOutput::default();
    let read = read_build(req, cancel, Encoding::Chunks, &mut output)?;
    let mut traces = None;
    if let Some(mut t) = read.trace {
        let mut warnings = std::mem::replace(&mut t.warnings, Warnings::new());
        let parts = trace_parts(req, t, &mut warnings);
        let chunks = TraceChunks::new(parts, max_spans, &mut warnings);
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

/// What is left to do for the trace once the build is read.
struct TraceToDo {
    build: Build,
    /// The statslog with events (root attributes, attribution done).
    ccache: Option<Statslog>,
    /// Report the statslog as the `ct.ccache.snapshot` span.
    snapshot: bool,
    id: Identity,
    /// The file text's buffer, emptied, for the whole trace's bytes (its
    /// capacity is the encoder's first estimate); empty when streaming.
    out_buffer: Vec<u8>,
    /// The build analytics (exact critical path where a build graph was
    /// given), with the compile history's numbers.
    analytics: analytics::BuildAnalytics,
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
    let mut build = timing::decode::decode_owned(&mut text.text, &path, &req.limits, cancel, &mut warnings)?;
    let wanted = Wanted::of(req);
    // The model owns its data, so the text is done with before any output
    // is written: text and output never occupy memory side by side (peak
    // RSS, DESIGN §7). For one whole request its buffer, reserved with a
    // quarter to spare (the output is ~1.1× the file at 100k rules), is
    // reused for the output; when streaming it is kept for the next build's
    // text (crate::retain: resident while this build streams, within the
    // 2× of DESIGN §7; not kept above 96 MiB, so not for 1M-rule builds).
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
    // one event (spec §3.4, §3.5).
    let ccache = statslog.filter(|log| !log.is_empty());
    cancel.check()?;

    let mut trace = None;
    // The compile history needs the rules' cache layers (side files), for
    // the trace's attributes or the time-saved metric.
    let history = req.history.as_deref().filter(|_| wanted.traces || wanted.metrics);
    let ccache_metrics = wanted.metrics && ccache.is_some();
    if wanted.traces || wanted.build_metrics || ccache_metrics || history.is_some() {
        let id = Identity::of(req, &build, &path, &mut warnings)?;
        if wanted.traces || wanted.build_metrics || history.is_some() {
            apply_side_files(req, &dir, &mut build, ccache.as_ref(), &mut warnings);
            cancel.check()?;
        }
        let history = history.map(|h| {
            history::evaluate(
                h,
                &build,
                &id.clock,
                &req.host_name,
                &id.trace_id,
                &req.invocation_dir,
            )
        });
        let analytics = if wanted.traces || wanted.build_metrics {
            let graph = req.build_graph.as_deref().and_then(|template| {
                analytics::build_graph::load(
                    template,
                    &build,
                    timing_modified,
                    req.limits.max_file_bytes,
                    &mut warnings,
                )
            });
            cancel.check()?;
            analytics::analyze_with(&build, &id.clock, graph.as_ref(), &mut warnings)
        } else {
            analytics::BuildAnalytics::default()
        };
        let analytics = analytics.with_history(history);
        if ccache_metrics || wanted.build_metrics {
            let log = ccache.as_ref().filter(|_| wanted.metrics);
            let build_metrics = wanted.build_metrics.then_some((&build, &analytics));
            let (bytes, points) = encode_metrics(req, log, build_metrics, &id, &mut warnings);
            output.metrics = Some(bytes);
            output.summary.metric_points = points;
        }
        if let Some(facts) = analytics.history().filter(|_| wanted.metrics) {
            output.summary.metric_points += append_time_saved(req, &mut output.metrics, facts, &id);
        }
        if wanted.traces {
            trace = Some(TraceToDo {
                build,
                ccache,
                snapshot: wanted.snapshot,
                id,
                out_buffer,
                analytics,
                warnings,
            });
            return Ok(ReadBuild { trace });
        }
    }
    output.summary.warnings = warnings.into_lines();
    Ok(ReadBuild { trace })
}

/// What identifies one build and places it in time, shared by its trace and
/// its metrics.
struct Identity {
    clock: Clock,
    trace_id: [u8; 16],
    /// The trace's resource (`ct.invocation_id` = the directory name).
    resource: Resource,
    /// Build start and end, Unix ns.
    start: u64,
    end: u64,
    /// `ct.variant`, for the points of series the host's builds share.
    variant: String,
}

impl Identity {
    fn of(req: &BuildRequest, build: &Build, path: &Path, warnings: &mut Warnings) -> Result<Self, Error> {
        let clock = Clock::for_build(build).map_err(|e| Error::Malformed {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let dir = canonical_dir(&req.invocation_dir);
        let trace_id = ids::trace_id(
            &req.host_name,
            &path_bytes(&dir),
            build.timestamp.as_deref().unwrap_or(""),
        );
        let resource = build_resource(req, build, &invocation_id(&dir), warnings);
        let (start, end) = clock.root_interval();
        Ok(Self {
            clock,
            trace_id,
            resource,
            start: unix_nanos(start),
            end: unix_nanos(end),
            variant: build.variant.clone(),
        })
    }
}

/// The series a build's metrics belong to: the trace's resource identified
/// by the trace id, each point cumulative over the build (per-build
/// identity, ct-cake's form); or the host's resource with the build's
/// deltas and its keys on the points (series the host's builds share).
fn metric_series(req: &BuildRequest, id: &Identity) -> history::MetricSeries {
    if req.metric_identity == MetricIdentity::Build {
        let resource = with_invocation_id(
            &id.resource,
            &ids::to_hex(&id.trace_id),
            req.limits.max_attribute_len,
        );
        history::MetricSeries {
            resource,
            temporality: AggregationTemporality::Cumulative,
            point_attributes: Vec::new(),
        }
    } else {
        history::MetricSeries {
            resource: host_resource(req),
            temporality: AggregationTemporality::Delta,
            point_attributes: vec![
                ("ct.variant", id.variant.clone()),
                (semconv::PIPELINE_NAME, req.pipeline_name.clone()),
            ],
        }
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
    build: Option<(&Build, &analytics::BuildAnalytics)>,
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
    if let Some((build, analytics)) = build {
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
        let (scope, n) = build_scope_metrics(&input);
        scope_metrics.push(scope);
        points += n;
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
fn encode_trace(req: &BuildRequest, mut t: TraceToDo, warnings: &mut Warnings) -> (Vec<u8>, TraceStats) {
    let snapshot = t.ccache.as_ref().filter(|_| t.snapshot);
    let analytics = std::mem::take(&mut t.analytics);
    let root_attributes = trace_root_attributes(req, &t.build, t.ccache.as_ref(), &analytics);
    let extra = snapshot_spans(req, snapshot, &t.id, warnings);
    let input = TraceInput {
        build: &t.build,
        clock: &t.id.clock,
        trace_id: t.id.trace_id,
        resource: t.id.resource.clone(),
        root_attributes,
        max_attribute_len: req.limits.max_attribute_len,
        analytics: Some(&analytics),
        root_span_server: req.root_span_server,
    };
    let buffer = std::mem::take(&mut t.out_buffer);
    let encoded = encode_trace_request_into(input, &extra, buffer, warnings);
    t.build.recycle();
    encoded
}

/// The same trace as [`encode_trace`], its parts moved into a
/// [`TraceParts`] for [`TraceChunks`].
fn trace_parts(req: &BuildRequest, t: TraceToDo, warnings: &mut Warnings) -> TraceParts {
    let TraceToDo {
        build,
        ccache,
        snapshot,
        id,
        analytics,
        ..
    } = t;
    let ccache = ccache.as_ref();
    let root_attributes = trace_root_attributes(req, &build, ccache, &analytics);
    let extra = snapshot_spans(req, ccache.filter(|_| snapshot), &id, warnings);
    TraceParts {
        build,
        clock: id.clock,
        analytics,
        trace_id: id.trace_id,
        resource: id.resource,
        root_attributes,
        max_attribute_len: req.limits.max_attribute_len,
        root_span_server: req.root_span_server,
        extra,
    }
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

fn unix_nanos(t: i64) -> u64 {
    u64::try_from(t).unwrap_or(0)
}

/// The invocation directory as the trace id names it: canonical (symlinks
/// resolved, absolute), or as given when it cannot be canonicalised.
pub(crate) fn canonical_dir(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// The directory name, which is the invocation id (spec §1.2).
fn invocation_id(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(unix)]
pub(crate) fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    Cow::Borrowed(p.as_os_str().as_bytes())
}

#[cfg(not(unix))]
pub(crate) fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    match p.to_string_lossy() {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}
