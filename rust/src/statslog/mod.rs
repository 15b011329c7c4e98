//! ccache statslogs (spec §4): what ccache appended for each compiler
//! invocation of a build, read with compiletools' exact rules.
//!
//! [`parse`](mod@parse) counts events and keeps the `# <source>` blocks;
//! [`summary`] derives the root span's `ct.ccache.*` numbers and the `H` of
//! the `ct.build.*` aggregates; [`attribution`] marks compile rules with
//! the outcome of their own translation unit (DESIGN §2, last paragraph).
//!
//! The receiver passes the statslog it holds for a build (a captured auto
//! statslog, or a configured explicit path) in `BuildRequest::statslog`;
//! the core never looks for one by itself.

pub mod attribution;
pub mod parse;
pub mod summary;

use std::path::Path;

pub use attribution::attribute;
pub use parse::{parse, parse_counts, Block, EventCount, Primary, Statslog};
pub use summary::CcacheSummary;

use crate::input::{read_side_file, SideFile};
use crate::request::Limits;
use crate::warnings::Warnings;

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
/// Never fails, like compiletools (spec §4.3 rules 1 and 4): a missing file
/// is an empty statslog; an unreadable one, a directory, or one over the
/// size limit is empty too, with a warning (the receiver was told it holds
/// data for the build, so losing it is worth a line); a read error in the
/// middle keeps the complete lines read before it, with a warning.
pub fn load(path: &Path, limits: &Limits, keep: Keep, warnings: &mut Warnings) -> Statslog {
    let Some(bytes) = read_side_file(path, limits.max_file_bytes, STATSLOG_FILE, warnings) else {
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
        assert!(load(&dir.path().join("nope"), &limits, Keep::Blocks, &mut w).is_empty());
        assert!(w.is_empty(), "a missing statslog is no news");
        assert!(load(dir.path(), &limits, Keep::Blocks, &mut w).is_empty());
        assert_eq!(w.clone().into_lines().len(), 1, "a directory is worth a warning");

        let p = dir.path().join("ccache.statslog");
        std::fs::write(&p, "# /s/a.cpp\ncache_miss\n").unwrap();
        let small = Limits {
            max_file_bytes: 5,
            ..Limits::default()
        };
        let mut w = Warnings::new();
        assert!(load(&p, &small, Keep::Blocks, &mut w).is_empty());
        assert_eq!(w.into_lines().len(), 1);

        let mut w = Warnings::new();
        let log = load(&p, &limits, Keep::Blocks, &mut w);
        assert_eq!(log.count("cache_miss"), 1);
        assert_eq!(log.blocks().len(), 1);
        let log = load(&p, &limits, Keep::CountsOnly, &mut w);
        assert_eq!((log.count("cache_miss"), log.blocks().len()), (1, 0));
        assert!(w.is_empty());
    }
}
