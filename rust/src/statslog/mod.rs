//! ccache statslogs (formats.md §4): what ccache appended for each compiler
//! invocation of a build, read with compiletools' exact rules.
//!
//! [`parse`](mod@parse) counts events and keeps the `# <source>` blocks;
//! [`summary`] derives the root span's `ct.ccache.*` numbers and the `H` of
//! the `ct.build.*` aggregates; [`attribution`] marks compile rules with
//! the outcome of their own translation unit (design.md §2, last paragraph).
//!
//! The receiver passes the statslog it holds for a build (a captured auto
//! statslog, or a configured explicit path) in `BuildRequest::statslog`;
//! the core never looks for one by itself.

pub mod attribution;
pub mod parse;
pub mod summary;

use std::path::Path;

pub use attribution::attribute;
pub use parse::{parse, parse_counts, Block, Primary, Statslog};
pub use summary::CcacheSummary;

use crate::input::{read_side_file, InvocationDir, SideFile};
use crate::limits::Limits;
use crate::warnings::Warnings;

/// One event name and how often it was counted: what [`parse`](mod@parse)
/// produces and [`summary`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventCount {
    pub name: String,
    /// Always ≥ 1.
    pub count: u64,
}

/// What [`load`] keeps besides the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Counts and the per-source blocks (the trace needs both).
    Blocks,
    /// Counts only (metrics alone need no attribution).
    CountsOnly,
}

const STATSLOG_FILE: SideFile = SideFile {
    name: "ccache statslog",
    partial_use: "counting",
};

/// Reads and parses the statslog at `path` within `limits.max_file_bytes`.
///
/// Never fails, like compiletools (formats.md §4.3 rules 1 and 4): a missing file
/// is an empty statslog; an unreadable one, a directory, or one over the
/// size limit is empty too, with a warning (the receiver was told it holds
/// data for the build, so losing it is worth a line); a read error in the
/// middle keeps the complete lines read before it, with a warning.
pub fn load(
    dir: Option<&InvocationDir>,
    path: &Path,
    limits: &Limits,
    keep: Keep,
    warnings: &mut Warnings,
) -> Statslog {
    let Some(bytes) = read_side_file(dir, path, limits.max_file_bytes, STATSLOG_FILE, warnings) else {
        return Statslog::default();
    };
    match keep {
        Keep::Blocks => parse(&bytes),
        Keep::CountsOnly => parse_counts(&bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_directory_and_oversized_files_are_empty() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Warnings::new();
        let limits = Limits::default();
        assert!(load(None, &dir.path().join("nope"), &limits, Keep::Blocks, &mut w).is_empty());
        assert!(w.is_empty(), "a missing statslog is no news");
        assert!(load(None, dir.path(), &limits, Keep::Blocks, &mut w).is_empty());
        assert_eq!(w.clone().into_lines().len(), 1, "a directory is worth a warning");

        let p = dir.path().join("ccache.statslog");
        std::fs::write(&p, "# /s/a.cpp\ncache_miss\n").unwrap();
        let small = Limits {
            max_file_bytes: 5,
            ..Limits::default()
        };
        let mut w = Warnings::new();
        assert!(load(None, &p, &small, Keep::Blocks, &mut w).is_empty());
        assert_eq!(w.into_lines().len(), 1);

        let mut w = Warnings::new();
        let log = load(None, &p, &limits, Keep::Blocks, &mut w);
        assert_eq!(log.count("cache_miss"), 1);
        assert_eq!(log.blocks().len(), 1);
        let log = load(None, &p, &limits, Keep::CountsOnly, &mut w);
        assert_eq!((log.count("cache_miss"), log.blocks().len()), (1, 0));
        assert!(w.is_empty());
    }
}
