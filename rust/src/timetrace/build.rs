//! The clang traces of one build as its outputs need them: per compile
//! rule that had one, its frontend and backend times and its picked events
//! placed on the build's clock ([`BuildTraces`]), and the rollup of all of
//! them ([`Report`]). Each trace's model is dropped once it is folded in:
//! what stays is a few dozen bytes per span and the rollup's tallies.

use super::model::{EventKind, TraceUnit, TuTimes};
use super::report::Report;
use super::spans::Picked;

/// One child span of a compile span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClangSpan {
    pub kind: EventKind,
    /// The event's index among the trace's kept events (file order): the
    /// input of its span id (`crate::ids`).
    pub ordinal: u32,
    /// Index of the parent among the same compile's spans; `None`: the
    /// compile span.
    pub parent: Option<u32>,
    /// On the build's clock (Unix ns), inside the compile span.
    pub start_unix_ns: i64,
    pub end_unix_ns: i64,
    detail: Option<(u32, u32)>,
}

/// What one compile rule's trace gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileTrace {
    pub times: TuTimes,
    first_span: u32,
    span_count: u32,
}

/// How a trace's times map onto its compile span: clang's clock is the
/// wall clock at `beginningOfTime`, the rule's is the build's clock; the
/// trace is moved by `shift_ns` (as little as keeps it inside the rule)
/// and what still sticks out is cut at the rule's ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// `beginningOfTime`, Unix ns.
    pub origin_ns: i64,
    pub shift_ns: i64,
    pub rule_start_ns: i64,
    pub rule_end_ns: i64,
}

impl Placement {
    /// The placement of events spanning `[first_us, last_us]` (µs from
    /// `beginningOfTime`) in the rule `[rule_start_ns, rule_end_ns]`.
    pub fn fit(origin_us: i64, first_us: i64, last_us: i64, rule_start_ns: i64, rule_end_ns: i64) -> Self {
        let origin_ns = origin_us.saturating_mul(1000);
        let start = origin_ns.saturating_add(first_us.saturating_mul(1000));
        let end = origin_ns.saturating_add(last_us.saturating_mul(1000));
        let mut shift = 0i64;
        if end > rule_end_ns {
            shift = rule_end_ns.saturating_sub(end);
        }
        if start.saturating_add(shift) < rule_start_ns {
            shift = rule_start_ns.saturating_sub(start);
        }
        Self {
            origin_ns,
            shift_ns: shift,
            rule_start_ns,
            rule_end_ns: rule_end_ns.max(rule_start_ns),
        }
    }

    /// µs from `beginningOfTime` → Unix ns on the build's clock.
    pub fn place(&self, us: i64) -> i64 {
        self.origin_ns
            .saturating_add(us.saturating_mul(1000))
            .saturating_add(self.shift_ns)
            .clamp(self.rule_start_ns, self.rule_end_ns)
    }
}

/// Counts of one build's trace reading, for the summary and the warnings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceCounts {
    /// Traces read and folded in.
    pub read: u64,
    /// Traces found but refused (unreadable, too large, not a trace...).
    pub refused: u64,
    /// Traces found whose compile did not run in the rule's time.
    pub out_of_window: u64,
    /// Compiles that ran without a trace found.
    pub missing: u64,
    /// Events over the threshold left out by a per-compile or per-build cap.
    pub capped_spans: u64,
}

/// Every compile trace of one build, by the rule's event slot
/// (`crate::timing::EventId::slot`).
#[derive(Debug, Clone, Default)]
pub struct BuildTraces {
    by_slot: Vec<u32>,
    compiles: Vec<CompileTrace>,
    spans: Vec<ClangSpan>,
    text: String,
    pub report: Report,
    pub counts: TraceCounts,
}

const NO_COMPILE: u32 = u32::MAX;

impl BuildTraces {
    /// An empty set for a build of `event_count` events.
    pub fn new(event_count: usize) -> Self {
        Self {
            by_slot: vec![NO_COMPILE; event_count],
            ..Self::default()
        }
    }

    /// Whether any compile had a trace.
    pub fn is_empty(&self) -> bool {
        self.compiles.is_empty()
    }

    pub fn compile_count(&self) -> usize {
        self.compiles.len()
    }

    pub fn span_count(&self) -> usize {
        self.spans.len()
    }

    /// Records the trace of the rule at `slot`: its times and the picked
    /// events, placed by `placement`. A slot recorded before keeps its
    /// first trace.
    pub fn push(&mut self, slot: usize, unit: &TraceUnit, picked: &[Picked], placement: &Placement) {
        let Some(entry) = self.by_slot.get_mut(slot).filter(|e| **e == NO_COMPILE) else {
            return;
        };
        *entry = self.compiles.len() as u32;
        let first_span = self.spans.len() as u32;
        for p in picked {
            let Some(e) = unit.events().get(p.event as usize) else {
                continue;
            };
            let detail = unit.detail(e).map(|d| {
                let start = self.text.len() as u32;
                self.text.push_str(d);
                (start, d.len() as u32)
            });
            self.spans.push(ClangSpan {
                kind: e.kind,
                ordinal: p.event,
                parent: p.parent,
                start_unix_ns: placement.place(e.ts),
                end_unix_ns: placement.place(e.end()),
                detail,
            });
        }
        self.compiles.push(CompileTrace {
            times: unit.times(),
            first_span,
            span_count: self.spans.len() as u32 - first_span,
        });
    }

    /// The trace of the rule at `slot`, if it had one.
    pub fn compile(&self, slot: usize) -> Option<&CompileTrace> {
        let i = *self.by_slot.get(slot)?;
        self.compiles.get(i as usize)
    }

    /// The spans of a compile, parents before children; a span's `parent`
    /// indexes this slice.
    pub fn spans_of(&self, compile: &CompileTrace) -> &[ClangSpan] {
        let start = compile.first_span as usize;
        self.spans
            .get(start..start + compile.span_count as usize)
            .unwrap_or(&[])
    }

    /// Span `i` of `compile` as an index of the whole build's spans ([`Self::span`]).
    pub fn span_index(&self, compile: &CompileTrace, i: u32) -> u32 {
        compile.first_span.saturating_add(i)
    }

    /// The build's span `index` (see [`Self::span_index`]).
    pub fn span(&self, index: u32) -> Option<&ClangSpan> {
        self.spans.get(index as usize)
    }

    /// The span's `args.detail` as clang wrote it.
    pub fn detail(&self, span: &ClangSpan) -> Option<&str> {
        let (start, len) = span.detail?;
        self.text.get(start as usize..(start + len) as usize)
    }

    /// Sum of the frontend and backend times over every compile, µs.
    pub fn totals(&self) -> TuTimes {
        self.compiles.iter().fold(TuTimes::default(), |t, c| TuTimes {
            frontend_us: t.frontend_us.saturating_add(c.times.frontend_us),
            backend_us: t.backend_us.saturating_add(c.times.backend_us),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_moves_a_late_trace_in_and_cuts_what_cannot_fit() {
        // Trace 0..100 µs at origin 1 s; rule 1.000050 .. 1.000120 s.
        let p = Placement::fit(1_000_000, 0, 100, 1_000_050_000, 1_000_120_000);
        // Shifted forward to the rule's start; the end sticks out and is cut.
        assert_eq!(p.place(0), 1_000_050_000);
        assert_eq!(p.place(100), 1_000_120_000);
        // A trace that ends 10 µs after the rule moves 10 µs earlier, whole.
        let p = Placement::fit(1_000_000, 20, 100, 1_000_000_000, 1_000_090_000);
        assert_eq!(p.shift_ns, -10_000);
        assert_eq!(p.place(20), 1_000_010_000);
        assert_eq!(p.place(100), 1_000_090_000);
        // Inside already: not moved.
        let p = Placement::fit(1_000_000, 20, 80, 1_000_000_000, 1_000_090_000);
        assert_eq!(p.shift_ns, 0);
    }
}
