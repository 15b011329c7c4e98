//! What can stop the reading of one trace, and the bounds that guard it.

use std::fmt;
use std::path::PathBuf;

/// Bounds on one trace file. A trace over any of them is refused with an
/// explicit [`TraceError`], never read partly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceLimits {
    /// Largest file accepted, in bytes.
    pub max_bytes: u64,
    /// Most elements of `traceEvents` looked at (every element counts,
    /// kept or not: the parse time is what this bounds).
    pub max_events: u64,
    /// Deepest event nesting accepted (the outermost event is depth 0).
    /// The rollup walks each event's ancestors, so depth bounds its time.
    pub max_depth: u32,
}

impl Default for TraceLimits {
    /// Far above what clang writes: a large TU's trace is a few MiB with
    /// tens of thousands of events nested a few hundred deep.
    fn default() -> Self {
        Self {
            max_bytes: 256 << 20,
            max_events: 4_000_000,
            max_depth: 4096,
        }
    }
}

#[derive(Debug)]
pub enum TraceError {
    /// The file could not be opened or read (see `crate::input`).
    Io(crate::Error),
    TooLarge {
        bytes: u64,
        max: u64,
    },
    TooManyEvents {
        max: u64,
    },
    TooDeep {
        depth: u32,
        max: u32,
    },
    /// Not JSON (truncated, invalid UTF-8, trailing bytes...): serde_json's
    /// message, with its line and column.
    Json(String),
    NotAnObject,
    NoTraceEvents,
    TraceEventsNotArray,
    /// No event that ClangBuildAnalyzer counts: it skips such a file.
    NoEvents,
    /// The last kept event of the file is nested in another one; clang writes
    /// `ExecuteCompiler` last, and ClangBuildAnalyzer skips a file that does not.
    LastEventNotRoot,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io(e) => write!(f, "{e}"),
            TraceError::TooLarge { bytes, max } => {
                write!(f, "trace of {bytes} bytes is over the limit of {max}")
            }
            TraceError::TooManyEvents { max } => write!(f, "more than {max} trace events"),
            TraceError::TooDeep { depth, max } => {
                write!(f, "events nested {depth} deep, over the limit of {max}")
            }
            TraceError::Json(msg) => write!(f, "not a JSON trace: {msg}"),
            TraceError::NotAnObject => write!(f, "the trace is not a JSON object"),
            TraceError::NoTraceEvents => write!(f, "the trace has no traceEvents"),
            TraceError::TraceEventsNotArray => write!(f, "traceEvents is not an array"),
            TraceError::NoEvents => write!(f, "no compiler event in traceEvents"),
            TraceError::LastEventNotRoot => write!(f, "the last trace event is not the outermost one"),
        }
    }
}

impl std::error::Error for TraceError {}

impl TraceError {
    /// The crate's error for this one, for callers that report through it.
    pub fn into_crate_error(self, path: PathBuf) -> crate::Error {
        match self {
            TraceError::Io(e) => e,
            e @ (TraceError::TooLarge { .. }
            | TraceError::TooManyEvents { .. }
            | TraceError::TooDeep { .. }) => crate::Error::LimitExceeded {
                path,
                message: e.to_string(),
            },
            e => crate::Error::Malformed {
                path,
                message: e.to_string(),
            },
        }
    }
}
