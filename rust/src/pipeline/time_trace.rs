//! The clang `-ftime-trace` files of one build's compiles (issue 25): for
//! every compile rule that ran (a CAS hit compiles nothing and has no new
//! trace), the trace is found beside the rule's target (the object file,
//! formats.md §6.3) by the naming of the build's backend
//! (`timetrace::locate`), read within bounds, checked against the rule's
//! time, folded into the build's rollup and picked for child spans. One
//! trace is in memory at a time.
//!
//! A trace that cannot be read (too large, not JSON, a FIFO, a symlink...)
//! is a warning and a count; the build is reported without it. A trace
//! whose compile did not run inside the rule's window (the flock name is
//! overwritten by every build; ct-lock-helper's names carry any pid) is
//! another build's: skipped and counted.
//!
//! A build whose first compiles have no trace at all (a GCC build, clang
//! without the `time-trace` axis) stops looking after [`PROBE_COMPILES`]
//! of them, so a build without traces costs a few failed opens.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::ScopeMetrics;

use super::identity::Identity;
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::ids;
use crate::otlp::clang::{
    clang_metrics, clang_root_attributes, encode_clang_logs, ClangLogsInput, ClangMetricsInput,
};
use crate::otlp::resource::invocation_pid;
use crate::otlp::BuildMetricsInput;
use crate::request::{BuildRequest, Summary};
use crate::timetrace::locate::{flock_trace_name, in_window, is_shake_trace_name, pid_in_trace_name};
use crate::timetrace::{
    pick_spans, read_trace_owned_by, BuildTraces, Placement, Rollup, RollupConfig, RuleWindow,
    TimeTraceConfig, TraceLimits, TraceNaming, TraceUnit,
};
use crate::timing::{Build, Clock, Event};
use crate::warnings::Warnings;

/// Compiles looked at before a build with no trace for any of them is
/// taken for a build without traces.
pub(super) const PROBE_COMPILES: usize = 16;

/// Most names listed from one object directory (a shake shard keeps every
/// trace ever written there).
const MAX_LISTED: usize = 1 << 20;

/// The build's traces, or `None` when the feature is off or no compile
/// had one.
///
/// `owner` is the user owning the invocation directory: a trace is read
/// only if that user owns it too. The targets (and so the traces' paths)
/// are the build owner's words in `timing.json`, and could name another
/// user's traces anywhere the collector can read.
pub(super) fn collect(
    req: &BuildRequest,
    build: &Build,
    clock: &Clock,
    cancel: &CancelToken,
    warnings: &mut Warnings,
    owner: Option<u32>,
) -> Result<Option<BuildTraces>, Error> {
    let cfg = req.time_trace;
    if !cfg.enabled {
        return Ok(None);
    }
    let invocation_id = ids::invocation_id(&req.invocation_dir);
    let namings = namings(&build.backend, &invocation_id);
    let mut reader = Reader {
        limits: TraceLimits {
            max_bytes: cfg.max_trace_bytes,
            ..TraceLimits::default()
        },
        namings,
        listings: HashMap::new(),
        owner,
    };
    let mut traces = BuildTraces::new(build.event_count());
    let mut rollup = Rollup::new(rollup_config(&cfg));
    let (_, build_end_ns) = clock.root_interval();
    let mut ran = 0usize;
    let mut spans_left = cfg.max_spans_per_build as usize;
    for id in build.rule_ids() {
        let Some(rule) = build.event(id) else { continue };
        if rule.rule_type() != Some("compile") || rule.is_cas_hit() || !clock.is_anchored(&rule) {
            continue;
        }
        if ran >= PROBE_COMPILES
            && traces.counts.read + traces.counts.refused + traces.counts.out_of_window == 0
        {
            break;
        }
        ran += 1;
        if ran % 64 == 0 {
            cancel.check()?;
        }
        let ((start_ns, end_ns), _) = clock.event_interval(&rule);
        let window = RuleWindow {
            start_us: start_ns.div_euclid(1000),
            end_us: end_ns.div_euclid(1000),
            build_end_us: build_end_ns.div_euclid(1000),
        };
        let Some(unit) = reader.trace_of(&rule, window, &mut traces, warnings) else {
            continue;
        };
        rollup.add(rule.target(), &unit);
        let max = (cfg.max_spans_per_compile as usize).min(spans_left);
        let (picked, stats) = pick_spans(&unit, cfg.min_event_us, max);
        traces.counts.capped_spans += stats.capped;
        spans_left -= picked.len();
        let placement = placement(&unit, &picked, start_ns, end_ns);
        traces.push(id.slot(), &unit, &picked, &placement);
        traces.counts.read += 1;
    }
    if traces.counts.capped_spans > 0 {
        warnings.push(format!(
            "{} clang trace event(s) over time_trace.min_event_duration left out by time_trace.max_spans_per_compile or max_spans_per_build",
            traces.counts.capped_spans
        ));
    }
    if traces.is_empty() && traces.counts.refused == 0 {
        return Ok(None);
    }
    traces.report = rollup.report();
    Ok(Some(traces))
}

/// The counts into the summary and, when logs are wanted, the build's
/// log records into `logs`.
pub(super) fn summarise(
    req: &BuildRequest,
    traces: &BuildTraces,
    id: &Identity,
    summary: &mut Summary,
    logs: &mut Option<Vec<u8>>,
) {
    summary.clang_traces = traces.counts.read;
    summary.clang_traces_refused = traces.counts.refused;
    if !req.logs || traces.is_empty() {
        return;
    }
    let input = ClangLogsInput {
        traces,
        resource: id.resource.clone(),
        trace_id: id.trace_id,
        root_span_id: ids::span_id(&id.trace_id, &[]),
        time_unix_nano: id.end,
        max_records: req.time_trace.max_log_records as usize,
        max_attribute_len: req.limits.max_attribute_len,
    };
    *logs = encode_clang_logs(&input);
}

/// The root's `ct.build.clang.*` attributes (none without a trace read).
pub(super) fn root_attributes(req: &BuildRequest, traces: &BuildTraces) -> Vec<KeyValue> {
    if traces.is_empty() {
        return Vec::new();
    }
    clang_root_attributes(
        traces,
        req.time_trace.top_n as usize,
        req.limits.max_attribute_len,
    )
}

/// The clang metrics appended to the build metrics' scope, in the same
/// series; returns their points.
pub(super) fn append_metrics(
    req: &BuildRequest,
    traces: &BuildTraces,
    build: &BuildMetricsInput,
    scope: &mut ScopeMetrics,
) -> u64 {
    if traces.is_empty() {
        return 0;
    }
    let input = ClangMetricsInput {
        traces,
        variant: &build.build.variant,
        pipeline_name: build.pipeline_name,
        start_unix_nano: build.start_unix_nano,
        time_unix_nano: build.time_unix_nano,
        temporality: build.temporality,
        top_n: req.time_trace.top_n as usize,
        max_attribute_len: req.limits.max_attribute_len,
    };
    let (metrics, points) = clang_metrics(&input);
    scope.metrics.extend(metrics);
    points
}

/// The rollup's lists, long enough for the root's top N.
fn rollup_config(cfg: &TimeTraceConfig) -> RollupConfig {
    let d = RollupConfig::default();
    let n = cfg.top_n as usize;
    RollupConfig {
        file_parse_count: d.file_parse_count.max(n),
        file_codegen_count: d.file_codegen_count.max(n),
        template_count: d.template_count.max(n).max(cfg.max_log_records as usize),
        function_count: d.function_count.max(n),
        header_count: d.header_count.max(n).max(cfg.max_log_records as usize),
        ..d
    }
}

/// The names to try, in order: shake's carry ct-cake's pid (the invocation
/// id's suffix); make and ninja name the trace `<object>.compiletools.json`
/// when util-linux `flock` is on PATH, else after ct-lock-helper's pid.
fn namings(backend: &str, invocation_id: &str) -> Vec<TraceNaming> {
    let pid = invocation_pid(invocation_id).and_then(|p| p.parse::<u32>().ok());
    match (backend, pid) {
        ("shake", Some(pid)) => vec![TraceNaming::Shake { pid }],
        ("shake", None) => Vec::new(),
        _ => vec![TraceNaming::Flock, TraceNaming::LockHelper],
    }
}

/// Where the picked events go on the build's clock: the span of the
/// picked events moved into the rule (see [`Placement`]).
fn placement(unit: &TraceUnit, picked: &[crate::timetrace::Picked], start_ns: i64, end_ns: i64) -> Placement {
    let events = unit.events();
    let first = picked
        .iter()
        .filter_map(|p| events.get(p.event as usize))
        .map(|e| e.ts)
        .min()
        .unwrap_or(0);
    let last = picked
        .iter()
        .filter_map(|p| events.get(p.event as usize))
        .map(|e| e.end())
        .max()
        .unwrap_or(first);
    let origin = unit.beginning_of_time_us.unwrap_or(0);
    Placement::fit(origin, first, last, start_ns, end_ns)
}

struct Reader {
    limits: TraceLimits,
    namings: Vec<TraceNaming>,
    /// The `.json` names of each object directory listed so far.
    listings: HashMap<PathBuf, Vec<String>>,
    /// The build's owner: only traces of this user are read.
    owner: Option<u32>,
}

impl Reader {
    /// The trace of `rule`'s compile, read and checked, or `None` (counted).
    fn trace_of(
        &mut self,
        rule: &Event,
        window: RuleWindow,
        traces: &mut BuildTraces,
        warnings: &mut Warnings,
    ) -> Option<TraceUnit> {
        let target = Path::new(rule.target());
        let (Some(dir), Some(object)) = (target.parent(), target.file_name().and_then(|n| n.to_str())) else {
            traces.counts.missing += 1;
            return None;
        };
        if !target.is_absolute() {
            traces.counts.missing += 1;
            return None;
        }
        let slack = RuleWindow::default_slack_us();
        let mut found_any = false;
        for naming in self.namings.clone() {
            for path in self.candidates(dir, object, naming) {
                found_any = true;
                match read_trace_owned_by(&path, &self.limits, self.owner) {
                    Ok(unit) if in_window(&unit, window, slack) => return Some(unit),
                    Ok(_) => {}
                    Err(e) => {
                        traces.counts.refused += 1;
                        warnings.push(format!("{}: clang trace not read: {e}", path.display()));
                    }
                }
            }
        }
        if found_any {
            // Every file there was another build's (or refused, counted above).
            traces.counts.out_of_window += 1;
        } else {
            traces.counts.missing += 1;
        }
        None
    }

    /// The files that may be `object`'s trace under `naming`, best first.
    fn candidates(&mut self, dir: &Path, object: &str, naming: TraceNaming) -> Vec<PathBuf> {
        match naming {
            TraceNaming::Flock => {
                let path = dir.join(flock_trace_name(object));
                // lstat: a symlink there is still a candidate, refused by the read.
                match std::fs::symlink_metadata(&path) {
                    Ok(_) => vec![path],
                    Err(_) => Vec::new(),
                }
            }
            TraceNaming::Shake { pid } => self
                .listing(dir)
                .iter()
                .filter(|n| is_shake_trace_name(object, pid, n))
                .map(|n| dir.join(n))
                .collect(),
            TraceNaming::LockHelper => self
                .listing(dir)
                .iter()
                .filter(|n| pid_in_trace_name(object, n).is_some())
                .map(|n| dir.join(n))
                .collect(),
        }
    }

    fn listing(&mut self, dir: &Path) -> &[String] {
        self.listings.entry(dir.to_path_buf()).or_insert_with(|| {
            let mut names: Vec<String> = crate::timetrace::locate::list_names(dir, MAX_LISTED)
                .unwrap_or_default()
                .into_iter()
                .filter(|n| n.ends_with(".json"))
                .collect();
            names.sort_unstable();
            names
        })
    }
}
