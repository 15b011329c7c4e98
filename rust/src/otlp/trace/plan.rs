//! The plan of a build's trace: every span in pre-order with its id and
//! its parent's, made in one walk that also counts and warns, so that
//! nothing an encoder does later can (chunks are encoded in any order,
//! some of them twice).

use super::TraceStats;
use crate::ids;
use crate::timetrace::BuildTraces;
use crate::timing::{Build, Clock, Event, EventId};
use crate::warnings::Warnings;

/// What a planned span is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SpanOf {
    Root,
    Event(EventId),
    /// A clang event under a compile span: its index in the build's
    /// [`BuildTraces`] spans.
    Clang(u32),
}

/// One span of the trace: what it is made from, its id, and the plan index
/// of its parent (unused for the root).
#[derive(Debug, Clone, Copy)]
pub(super) struct Planned {
    pub(super) event: SpanOf,
    pub(super) span_id: [u8; 8],
    pub(super) parent: u32,
}

/// Every span of a build in pre-order, with its id and its parent's: what
/// the encoders write, in the order they write it. 24 bytes a span, so a
/// 1M-rule build's plan is 24 MB beside a model of several hundred.
pub(super) struct Plan {
    pub(super) spans: Vec<Planned>,
}

impl Plan {
    /// One walk over the build: skips unanchored rules (and their
    /// subtrees), warns about repaired intervals and counts what the
    /// summary reports, so that nothing the encoders do later can warn or
    /// count (chunks are encoded in any order, some of them twice).
    fn make(
        build: &Build,
        clock: &Clock,
        trace_id: &[u8; 16],
        clang: Option<&BuildTraces>,
        warnings: &mut Warnings,
    ) -> (Self, TraceStats) {
        let clang_spans = clang.map_or(0, BuildTraces::span_count);
        let mut p = Planner {
            ids: ids::SpanIds::new(trace_id),
            trace_id,
            clang,
            clock,
            path: Vec::new(),
            spans: Vec::with_capacity(build.event_count() + 1 + clang_spans),
            stats: TraceStats::default(),
            warnings,
        };
        p.spans.push(Planned {
            event: SpanOf::Root,
            span_id: p.ids.span_id(&[]),
            parent: 0,
        });
        for child in build.children() {
            p.visit(child, 0);
        }
        p.stats.spans = p.spans.len() as u64;
        (Plan { spans: p.spans }, p.stats)
    }
}

/// The [`Plan`] of a build's trace with what planning counted and warned,
/// made apart from the encoding: it needs the build (side files merged),
/// its clock and its trace id, and none of the analytics or root
/// attributes the encoders need, so the pipeline can make it on a second
/// thread while it computes those (`pipeline/alongside.rs`). Handed to an
/// encoder of the same build, clock and trace id.
pub(crate) struct TracePlan {
    plan: Plan,
    stats: TraceStats,
    /// Kept apart until encoding, so that they follow the warnings pushed
    /// before it, as when the encoder plans.
    warnings: Warnings,
}

impl TracePlan {
    pub(crate) fn make(
        build: &Build,
        clock: &Clock,
        trace_id: &[u8; 16],
        clang: Option<&BuildTraces>,
    ) -> Self {
        let mut warnings = Warnings::new();
        let (plan, stats) = Plan::make(build, clock, trace_id, clang, &mut warnings);
        Self {
            plan,
            stats,
            warnings,
        }
    }

    /// The plan and its counts, its warnings appended to `warnings` (after
    /// those pushed since it was made, as when the encoder plans).
    pub(super) fn take(self, warnings: &mut Warnings) -> (Plan, TraceStats) {
        warnings.extend(self.warnings);
        (self.plan, self.stats)
    }
}

struct Planner<'x> {
    ids: ids::SpanIds,
    trace_id: &'x [u8; 16],
    clang: Option<&'x BuildTraces>,
    clock: &'x Clock,
    path: Vec<u32>,
    spans: Vec<Planned>,
    stats: TraceStats,
    warnings: &'x mut Warnings,
}

impl Planner<'_> {
    fn visit(&mut self, event: Event, parent: u32) {
        if event.is_rule() && !self.clock.is_anchored(&event) {
            self.stats.unanchored_rules += 1;
            return;
        }
        self.path.push(event.index());
        let (_, repaired) = self.clock.event_interval(&event);
        if repaired {
            self.warnings.push(format!(
                "{:?}: span time before 2000 or end before start; clamped",
                event.name()
            ));
        }
        self.stats.dropped_attributes += u64::from(dropped_metadata(&event));
        let me = u32::try_from(self.spans.len()).unwrap_or(u32::MAX);
        self.spans.push(Planned {
            event: SpanOf::Event(event.id()),
            span_id: self.ids.span_id(&self.path),
            parent,
        });
        self.clang_children(event.id(), me);
        for child in event.children() {
            self.visit(child, me);
        }
        self.path.pop();
    }
}

impl Planner<'_> {
    /// The spans of the compile's clang trace, right after the compile span
    /// (theirs is the first parent, each before its children).
    fn clang_children(&mut self, id: EventId, compile: u32) {
        let Some((traces, trace)) = self.clang.and_then(|t| Some((t, t.compile(id.slot())?))) else {
            return;
        };
        let base = self.spans.len() as u32;
        for (i, span) in traces.spans_of(trace).iter().enumerate() {
            let parent = span.parent.map_or(compile, |p| base + p);
            self.spans.push(Planned {
                event: SpanOf::Clang(traces.span_index(trace, i as u32)),
                span_id: ids::clang_span_id(self.trace_id, &self.path, span.ordinal),
                parent,
            });
        }
    }
}

/// Metadata values that cannot become attributes (the span's
/// `dropped_attributes_count`).
fn dropped_metadata(event: &Event) -> u32 {
    let n = event
        .metadata()
        .filter(|(_, v)| matches!(v, crate::timing::MetaValue::Unsupported { .. }))
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}
