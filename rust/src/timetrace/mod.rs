//! clang `-ftime-trace` files of a compiletools build (its `time-trace`
//! variant axis): finding the trace of each compile rule ([`locate`]),
//! reading one into a compact per-TU model ([`parse`], [`model`]) and
//! ClangBuildAnalyzer's analysis over a set of them ([`rollup`], whose
//! [`Report`] prints in ClangBuildAnalyzer's layout).
//!
//! Per build, [`BuildTraces`] keeps what the outputs need of each compile's
//! trace: its times and the events that become child spans ([`spans`]).
//!
//! One trace is held at a time: the model keeps only the events the
//! analysis reads (a few percent of a trace's bytes), and the rollup folds
//! each TU into tallies before the next is read.
//!
//! The rules are those of aras-p/ClangBuildAnalyzer 1.6.0 (commit 5544775),
//! checked against its output on the corpus' builds (the tests); where this
//! differs, the module that does says so: nesting per thread (`nesting`),
//! tie-breaking in sorted lists ([`rollup`]), demangler spellings
//! ([`names::demangle`]).

pub mod build;
pub mod config;
pub mod error;
mod interner;
mod json;
pub mod locate;
pub mod model;
pub mod names;
mod nesting;
pub mod parse;
pub mod report;
pub mod rollup;
pub mod spans;

pub use build::{BuildTraces, ClangSpan, CompileTrace, Placement, TraceCounts};
pub use config::TimeTraceConfig;
pub use error::{TraceError, TraceLimits};
pub use locate::{
    find_trace, in_window, locate, read_trace, read_trace_owned_by, Located, RuleWindow, TraceNaming,
};
pub use model::{EventKind, ParseWarnings, TraceEvent, TraceUnit, TuTimes};
pub use parse::parse_trace;
pub use report::{Report, RollupConfig};
pub use rollup::Rollup;
pub use spans::{pick_spans, PickStats, Picked};

#[cfg(test)]
mod tests;
