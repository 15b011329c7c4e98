//! One invocation directory in, OTLP bytes out.
//!
//! Order of work for one build, each step only when a requested output
//! needs it:
//! 1. timing.json → the build model (always: every output needs the build's
//!    times and the trace id needs its `timestamp`);
//! 2. the statslog the receiver passed (`req.statslog`) — for the trace
//!    (summary, `H`, per-TU attribution) and for the metrics;
//! 3. the outcomes log the receiver passed (`req.outcomes`), merged into the
//!    rules — trace only, since metrics do not depend on rule metadata;
//! 4. per-TU ccache attribution on top of the merged metadata — trace only;
//! 5. the build analytics from the rules' times — trace only;
//! 6. the trace (with the `ct.ccache.snapshot` span under metrics-as-spans)
//!    and/or the ccache metrics.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::analytics;
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::ids;
use crate::input::InvocationDir;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::ScopeSpans;

use crate::otlp::semconv;
use crate::otlp::{
    analytics_root_attributes, build_resource, encode_metrics_request, encode_trace_request_with,
    root_attributes_with_ccache, snapshot_scope_spans, with_invocation_id, MetricsInput, SnapshotInput,
    TraceChunks, TraceInput, TraceParts, TraceStats,
};
use crate::outcomes;
use crate::request::{BuildOutput, BuildRequest, Summary};
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
}

impl Wanted {
    fn of(req: &BuildRequest) -> Self {
        Self {
            traces: req.signals.traces,
            metrics: req.signals.metrics && !req.metrics_as_spans,
            snapshot: req.signals.traces && req.metrics_as_spans,
        }
    }
}

/// Reads the build in `req.invocation_dir` and returns its OTLP requests.
pub fn process_build(req: &BuildRequest, cancel: &CancelToken) -> Result<BuildOutput, Error> {
    let mut output = BuildOutput::default();
    let read = read_build(req, cancel, &mut output)?;
    if let Some(mut t) = read.trace {
        let mut warnings = std::mem::replace(&mut t.warnings, Warnings::new());
        let (bytes, stats) = encode_trace(req, &t, &mut warnings);
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
    let read = read_build(req, cancel, &mut output)?;
    let mut traces = None;
    if let Some(mut t) = read.trace {
        let parts = trace_parts(req, t.build, t.ccache.as_ref(), t.snapshot, t.id, &mut t.warnings);
        let chunks = TraceChunks::new(parts, max_spans, &mut t.warnings);
        set_trace_stats(&mut output.summary, chunks.stats());
        output.summary.warnings = t.warnings.into_lines();
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
    /// Size of the file text: the whole-trace encoder's first estimate.
    text_len: usize,
    warnings: Warnings,
}

struct ReadBuild {
    trace: Option<TraceToDo>,
}

/// Steps 1–4 (module doc) and the metrics: fills `output`'s metrics and
/// summary (warnings included when no trace is wanted) and returns what
/// the trace still needs.
fn read_build(
    req: &BuildRequest,
    cancel: &CancelToken,
    output: &mut BuildOutput,
) -> Result<ReadBuild, Error> {
    cancel.check()?;
    let path = req.invocation_dir.join(TIMING_FILE);
    let dir = InvocationDir::open(&req.invocation_dir).map_err(|source| Error::Io {
        path: req.invocation_dir.clone(),
        source,
    })?;
    let mut warnings = Warnings::new();
    let text = timing::load_in(Some(&dir), &path, &req.limits, &mut warnings)?;
    let mut build = timing::decode::decode(&text.text, &path, &req.limits, cancel, &mut warnings)?;
    let wanted = Wanted::of(req);
    // The model owns its data, so the text is done with: freed before any
    // output is written, so that text and output never occupy memory side
    // by side (peak RSS, DESIGN §7). Its buffer is not reused for the
    // output: with the CI/CD and analytics attributes the output outgrew
    // it (63 MB from a 58 MB file at 100k rules), and the reuse then kept
    // both alive at the peak (measured: 2.7× the file, 1.8× without it,
    // and 10–20 ms faster).
    let text_len = text.text.len();
    drop(text);
    cancel.check()?;

    let statslog = load_statslog(req, &dir, wanted, &mut warnings);
    // compiletools emits ccache data only when the statslog yielded at least
    // one event (spec §3.4, §3.5).
    let ccache = statslog.filter(|log| !log.is_empty());
    cancel.check()?;

    let mut trace = None;
    if wanted.traces || (wanted.metrics && ccache.is_some()) {
        let id = Identity::of(req, &build, &path, &mut warnings)?;
        if let Some(log) = ccache.as_ref().filter(|_| wanted.metrics) {
            let (bytes, points) = encode_metrics(req, log, &id, &mut warnings);
            output.metrics = Some(bytes);
            output.summary.metric_points = points;
        }
        if wanted.traces {
            apply_side_files(req, &dir, &mut build, ccache.as_ref(), &mut warnings);
            cancel.check()?;
            trace = Some(TraceToDo {
                build,
                ccache,
                snapshot: wanted.snapshot,
                id,
                text_len,
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
        })
    }
}

/// The ccache metrics: the trace's resource, identified by the trace id.
fn encode_metrics(
    req: &BuildRequest,
    log: &Statslog,
    id: &Identity,
    warnings: &mut Warnings,
) -> (Vec<u8>, u64) {
    let max_attribute_len = req.limits.max_attribute_len;
    let input = MetricsInput {
        statslog: log,
        resource: with_invocation_id(&id.resource, &ids::to_hex(&id.trace_id), max_attribute_len),
        start_unix_nano: id.start,
        time_unix_nano: id.end,
        max_attribute_len,
    };
    encode_metrics_request(input, warnings)
}

/// The trace in one buffer, reserved at 1.25× the file's size (untouched
/// reserved memory costs nothing; the rest is given back at the end).
fn encode_trace(req: &BuildRequest, t: &TraceToDo, warnings: &mut Warnings) -> (Vec<u8>, TraceStats) {
    let snapshot = t.ccache.as_ref().filter(|_| t.snapshot);
    let analytics = analytics::analyze(&t.build, &t.id.clock);
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
    let size_hint = t.text_len.saturating_add(t.text_len / 4);
    encode_trace_request_with(input, &extra, size_hint, warnings)
}

/// The same trace as [`encode_trace`], its parts moved into a
/// [`TraceParts`] for [`TraceChunks`].
fn trace_parts(
    req: &BuildRequest,
    build: Build,
    ccache: Option<&Statslog>,
    snapshot: bool,
    id: Identity,
    warnings: &mut Warnings,
) -> TraceParts {
    let analytics = analytics::analyze(&build, &id.clock);
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
    if !(wanted.traces || wanted.metrics) {
        return None;
    }
    let path = req.statslog.as_deref()?;
    let keep = if wanted.traces {
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

fn unix_nanos(t: i64) -> u64 {
    u64::try_from(t).unwrap_or(0)
}

/// The invocation directory as the trace id names it: canonical (symlinks
/// resolved, absolute), or as given when it cannot be canonicalised.
fn canonical_dir(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// The directory name, which is the invocation id (spec §1.2).
fn invocation_id(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(unix)]
fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    Cow::Borrowed(p.as_os_str().as_bytes())
}

#[cfg(not(unix))]
fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    match p.to_string_lossy() {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}
