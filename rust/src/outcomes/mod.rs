//! `rule_outcomes.log` (formats.md §5): the CAS outcome of each rule that the
//! make and ninja backends ran through `ct-lock-helper`, merged into the
//! rules' metadata as compiletools does before it writes timing.json.
//!
//! For a finished ct-cake build the merge is already in timing.json and
//! applying it again changes nothing; it matters for a log the receiver
//! captured from a build that died or is still post-processing (formats.md §1.5).
//! The receiver decides which file to pass (`BuildRequest::outcomes`); the
//! core never looks for one by itself.

pub mod merge;
pub mod parse;

use std::path::Path;

pub use merge::{merge, MergeStats};
pub use parse::{parse, Outcome, Outcomes};

use crate::input::{read_side_file, InvocationDir, SideFile};
use crate::limits::Limits;
use crate::warnings::Warnings;

const OUTCOMES_FILE: SideFile = SideFile {
    name: "rule outcomes log",
    partial_use: "using",
};

/// Reads and parses the outcomes log at `path` within
/// `limits.max_file_bytes`. Never fails (formats.md §5.3 rule 1): missing means
/// empty; unreadable, not a file or too large means empty with a warning; a
/// read error in the middle keeps the complete lines before it.
pub fn load(dir: Option<&InvocationDir>, path: &Path, limits: &Limits, warnings: &mut Warnings) -> Outcomes {
    let Some(bytes) = read_side_file(dir, path, limits.max_file_bytes, OUTCOMES_FILE, warnings) else {
        return Outcomes::default();
    };
    let outcomes = parse(&bytes);
    if outcomes.skipped_lines() > 0 {
        warnings.push(format!(
            "{}: {} line(s) without 4 TAB-separated fields or valid integers skipped",
            path.display(),
            outcomes.skipped_lines()
        ));
    }
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_tolerates_missing_and_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Warnings::new();
        assert!(load(None, &dir.path().join("nope"), &Limits::default(), &mut w).is_empty());
        assert!(w.is_empty());
        assert!(load(None, dir.path(), &Limits::default(), &mut w).is_empty());
        assert_eq!(w.into_lines().len(), 1);

        let p = dir.path().join("rule_outcomes.log");
        std::fs::write(&p, "/o/a.o\tobj\t1\t10\nbroken line\n").unwrap();
        let mut w = Warnings::new();
        let o = load(None, &p, &Limits::default(), &mut w);
        assert_eq!(o.len(), 1);
        assert_eq!(w.into_lines().len(), 1, "the skipped line is reported");
    }
}
