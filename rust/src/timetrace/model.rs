//! The compact model of one translation unit's trace: only the events
//! ClangBuildAnalyzer reads, their nesting, and the trace's wall-clock origin.

/// The clang events kept, by their `name`. Every other name (`CodeGen
/// Function`, `RunPass`, the `Total ...` summaries, metadata) is dropped
/// while parsing, as ClangBuildAnalyzer drops it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// `ExecuteCompiler`: the whole compile.
    Compiler,
    /// `Frontend`: parsing and semantic analysis.
    Frontend,
    /// A further `Frontend` beside the first one (clang 11+ may split it),
    /// whose time was added to the first: still a parent, no longer counted.
    MergedFrontend,
    /// `Backend`: optimisation and code generation.
    Backend,
    /// `Source`: the parse of one included file, inclusive of its includes.
    Source,
    ParseTemplate,
    ParseClass,
    InstantiateClass,
    InstantiateFunction,
    /// `OptModule`: detail is the TU's source file.
    OptModule,
    /// `OptFunction`: detail is the function's mangled name.
    OptFunction,
}

impl EventKind {
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "ExecuteCompiler" => Self::Compiler,
            "Frontend" => Self::Frontend,
            "Backend" => Self::Backend,
            "Source" => Self::Source,
            "ParseTemplate" => Self::ParseTemplate,
            "ParseClass" => Self::ParseClass,
            "InstantiateClass" => Self::InstantiateClass,
            "InstantiateFunction" => Self::InstantiateFunction,
            "OptModule" => Self::OptModule,
            "OptFunction" => Self::OptFunction,
            _ => return None,
        })
    }

    /// The `name` clang gave the event (a merged `Frontend` is still one).
    pub fn name(self) -> &'static str {
        match self {
            Self::Compiler => "ExecuteCompiler",
            Self::Frontend | Self::MergedFrontend => "Frontend",
            Self::Backend => "Backend",
            Self::Source => "Source",
            Self::ParseTemplate => "ParseTemplate",
            Self::ParseClass => "ParseClass",
            Self::InstantiateClass => "InstantiateClass",
            Self::InstantiateFunction => "InstantiateFunction",
            Self::OptModule => "OptModule",
            Self::OptFunction => "OptFunction",
        }
    }
}

/// Index of an event in [`TraceUnit::events`].
pub type EventIndex = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEvent {
    pub kind: EventKind,
    pub tid: i64,
    /// Start, µs since the trace's `beginningOfTime`.
    pub ts: i64,
    /// Duration, µs.
    pub dur: i64,
    pub(crate) detail: Option<DetailSpan>,
    pub(crate) parent: Option<EventIndex>,
    pub(crate) depth: u32,
}

impl TraceEvent {
    /// End, µs since `beginningOfTime` (saturating: a hostile `dur` may be huge).
    pub fn end(&self) -> i64 {
        self.ts.saturating_add(self.dur)
    }

    /// The innermost event of the same thread that contains this one in time.
    pub fn parent(&self) -> Option<EventIndex> {
        self.parent
    }

    /// How many events contain this one (0: outermost).
    pub fn depth(&self) -> u32 {
        self.depth
    }
}

/// Where an event's detail lies in [`TraceUnit`]'s text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DetailSpan {
    pub start: u32,
    pub len: u32,
}

/// Oddities that were skipped, counted rather than fatal.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ParseWarnings {
    /// `traceEvents` elements that are not objects.
    pub non_object_events: u64,
    /// Events with a known name dropped for a field of the wrong type
    /// (`pid`/`tid`/`ts`/`dur` not an integer, `ph` not a string).
    pub mistyped_events: u64,
    /// `ph: "b"` events not followed by their `ph: "e"`, dropped.
    pub unpaired_begins: u64,
    /// `beginningOfTime` present but not an integer.
    pub mistyped_beginning_of_time: bool,
}

impl ParseWarnings {
    pub fn total(&self) -> u64 {
        self.non_object_events
            + self.mistyped_events
            + self.unpaired_begins
            + u64::from(self.mistyped_beginning_of_time)
    }
}

/// The frontend and backend times of one TU, as ClangBuildAnalyzer sums them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TuTimes {
    /// Every counted `Frontend` (merged ones included in the first), µs.
    pub frontend_us: i64,
    /// Every `Backend`, µs.
    pub backend_us: i64,
}

impl TuTimes {
    pub fn frontend_s(&self) -> f64 {
        self.frontend_us as f64 / 1e6
    }

    pub fn backend_s(&self) -> f64 {
        self.backend_us as f64 / 1e6
    }
}

/// One trace file, parsed. Events are in file order; their details are
/// clang's own text (no path normalising or demangling: that is the
/// rollup's reading of them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceUnit {
    /// Wall-clock µs since the Unix epoch at which clang started tracing.
    pub beginning_of_time_us: Option<i64>,
    pub(crate) events: Vec<TraceEvent>,
    /// Indices into `events`, thread by thread, each event before the
    /// events it contains (see `nesting`).
    pub(crate) preorder: Vec<EventIndex>,
    pub(crate) text: String,
    pub warnings: ParseWarnings,
}

impl TraceUnit {
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// Every event once, thread by thread, each before the events it
    /// contains: a walk in this order meets an event's ancestors first.
    pub fn nesting_order(&self) -> impl Iterator<Item = (EventIndex, &TraceEvent)> + '_ {
        self.preorder
            .iter()
            .filter_map(|&i| Some((i, self.events.get(i as usize)?)))
    }

    /// The event's `args` detail, if it had a non-empty one.
    pub fn detail(&self, event: &TraceEvent) -> Option<&str> {
        let span = event.detail?;
        let start = span.start as usize;
        self.text.get(start..start + span.len as usize)
    }

    pub fn times(&self) -> TuTimes {
        let mut times = TuTimes::default();
        for e in &self.events {
            match e.kind {
                EventKind::Frontend => times.frontend_us = times.frontend_us.saturating_add(e.dur),
                EventKind::Backend => times.backend_us = times.backend_us.saturating_add(e.dur),
                _ => {}
            }
        }
        times
    }

    /// Start and end of the compile on the wall clock, µs since the epoch:
    /// the longest `ExecuteCompiler` offset by `beginningOfTime`.
    pub fn compile_span_us(&self) -> Option<(i64, i64)> {
        let origin = self.beginning_of_time_us?;
        let compile = self
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Compiler)
            .max_by_key(|e| e.dur)?;
        Some((
            origin.saturating_add(compile.ts),
            origin.saturating_add(compile.end()),
        ))
    }
}
