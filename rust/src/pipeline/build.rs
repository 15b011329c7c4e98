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
//! 5. the build analytics from the rules' times, with the build graph the
//!    receiver passed (`req.build_graph`) for an exact critical path —
//!    trace only;
//! 6. the trace (with the `ct.ccache.snapshot` span under metrics-as-spans)
//!    and/or the ccache metrics.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::analytics;
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::ids;
use crate::input::InvocationDir;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::ScopeSpans;

use crate::otlp::semconv;
use crate::otlp::{
    analytics_root_attributes, build_resource, encode_metrics_request, encode_trace_request_into,
    root_attributes_with_ccache, snapshot_scope_spans, with_invocation_id, MetricsInput, SnapshotInput,
    TraceInput, TraceStats,
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
    cancel.check()?;
    let path = req.invocation_dir.join(TIMING_FILE);
    let dir = InvocationDir::open(&req.invocation_dir).map_err(|source| Error::Io {
        path: req.invocation_dir.clone(),
        source,
    })?;
    let mut warnings = Warnings::new();
    let text = timing::load_in(Some(&dir), &path, &req.limits, &mut warnings)?;
    let timing_modified = req.build_graph.as_ref().and_then(|_| modified_in(&dir, &path));
    let mut build = timing::decode::decode(&text.text, &path, &req.limits, cancel, &mut warnings)?;
    let wanted = Wanted::of(req);
    // The model owns its data, so the text is done with. When a trace is
    // wanted, the text's buffer becomes its output buffer: already resident,
    // about the right size, and text and output never occupy memory side by
    // side (peak RSS, DESIGN §7). Otherwise it is freed now.
    let spare = if wanted.traces {
        Some(text.text.into_bytes())
    } else {
        drop(text);
        None
    };
    cancel.check()?;

    let statslog = load_statslog(req, &dir, wanted, &mut warnings);
    // compiletools emits ccache data only when the statslog yielded at least
    // one event (spec §3.4, §3.5).
    let ccache = statslog.as_ref().filter(|log| !log.is_empty());
    cancel.check()?;

    let mut output = BuildOutput::default();
    if wanted.traces || (wanted.metrics && ccache.is_some()) {
        let id = Identity::of(req, &build, &path, &mut warnings)?;
        if let Some(log) = ccache.filter(|_| wanted.metrics) {
            let (bytes, points) = encode_metrics(req, log, &id, &mut warnings);
            output.metrics = Some(bytes);
            output.summary.metric_points = points;
        }
        if wanted.traces {
            apply_side_files(req, &dir, &mut build, ccache, &mut warnings);
            cancel.check()?;
            let snapshot = ccache.filter(|_| wanted.snapshot);
            let buf = spare.unwrap_or_default();
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
            let (bytes, stats) = encode_trace(
                req,
                &build,
                ccache,
                snapshot,
                graph.as_ref(),
                id,
                buf,
                &mut warnings,
            );
            output.traces = Some(bytes);
            output.summary.spans = stats.spans;
            output.summary.unanchored_rules = stats.unanchored_rules;
            output.summary.dropped_attributes = stats.dropped_attributes;
        }
    }
    output.summary = Summary {
        warnings: warnings.into_lines(),
        ..output.summary
    };
    Ok(output)
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

/// The trace: root attributes from the rules and the statslog, the build
/// analytics on the root and the rules, plus the snapshot span when
/// `snapshot` holds the statslog to report; written into `buf` (see
/// [`encode_trace_request_into`]).
#[allow(clippy::too_many_arguments)] // one call site; a struct would only rename them
fn encode_trace(
    req: &BuildRequest,
    build: &Build,
    ccache: Option<&Statslog>,
    snapshot: Option<&Statslog>,
    graph: Option<&analytics::BuildGraph>,
    id: Identity,
    buf: Vec<u8>,
    warnings: &mut Warnings,
) -> (Vec<u8>, TraceStats) {
    let max_attribute_len = req.limits.max_attribute_len;
    let summary = ccache.map(Statslog::summary);
    let aggregates = aggregates::compute(build, summary.map(|s| s.hits()));
    let analytics = analytics::analyze_with(build, &id.clock, graph, warnings);
    let mut root_attributes = root_attributes_with_ccache(&aggregates, summary, max_attribute_len);
    root_attributes.extend(analytics_root_attributes(&analytics, max_attribute_len));
    root_attributes.extend(semconv::root_attributes(build, max_attribute_len));
    let extra: Vec<ScopeSpans> = snapshot
        .map(|log| {
            let input = SnapshotInput {
                statslog: log,
                trace_id: id.trace_id,
                parent_span_id: ids::span_id(&id.trace_id, &[]),
                time_unix_nano: id.end,
                max_attribute_len,
            };
            snapshot_scope_spans(input, warnings)
        })
        .into_iter()
        .collect();
    let input = TraceInput {
        build,
        clock: &id.clock,
        trace_id: id.trace_id,
        resource: id.resource,
        root_attributes,
        max_attribute_len,
        analytics: Some(&analytics),
        root_span_server: req.root_span_server,
    };
    encode_trace_request_into(input, &extra, buf, warnings)
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
