//! The `rule_outcomes.log` parser (formats.md §5.3), with compiletools' rules:
//! lossy UTF-8, universal newlines, empty lines skipped, exactly four
//! TAB-separated fields `<target> <cas_kind> <hit> <bytes_reused>`, the
//! integers parsed as Python's `int()` does, and the last record of a
//! target winning.

use std::collections::HashMap;

use crate::pytext::{parse_int, universal_lines, PyInt};

/// The CAS outcome of one rule, as merged into its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `cas.hit` = (hit ≠ 0).
    pub hit: bool,
    /// `cas.bytes_reused`.
    pub bytes_reused: i64,
    /// `cas.kind`; `None` when the field was empty (the key is then not
    /// merged, so an existing kind stays).
    pub kind: Option<String>,
}

/// The records of one log, by exact target string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcomes {
    by_target: HashMap<String, Outcome>,
    skipped_lines: u64,
}

impl Outcomes {
    /// The last record for `target`.
    pub fn get(&self, target: &str) -> Option<&Outcome> {
        self.by_target.get(target)
    }

    /// Distinct targets.
    pub fn len(&self) -> usize {
        self.by_target.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_target.is_empty()
    }

    /// Non-empty lines that were not a valid record.
    pub fn skipped_lines(&self) -> u64 {
        self.skipped_lines
    }
}

/// Parses the bytes of a `rule_outcomes.log`.
pub fn parse(bytes: &[u8]) -> Outcomes {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Outcomes::default();
    for line in universal_lines(&text) {
        if line.is_empty() {
            continue;
        }
        match parse_record(line) {
            Some((target, outcome)) => {
                // Last record wins (a rule retried after a failure, a helper
                // run twice): a plain insert replaces the earlier one.
                out.by_target.insert(target.to_owned(), outcome);
            }
            None => out.skipped_lines += 1,
        }
    }
    out
}

/// One line: exactly four TAB-separated fields, both integers valid.
///
/// Judgement call: a `bytes_reused` outside the signed 64-bit range (which
/// Python would accept, but no OTLP int attribute can carry, and which
/// made compiletools' own export fail) skips the record like an invalid
/// integer. `hit` only needs its truth value, so any size is fine there.
fn parse_record(line: &str) -> Option<(&str, Outcome)> {
    let mut fields = line.split('\t');
    let (target, kind, hit, bytes) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
    if fields.next().is_some() {
        return None;
    }
    let hit = parse_int(hit)?.is_nonzero();
    let PyInt::Small(bytes_reused) = parse_int(bytes)? else {
        return None;
    };
    Some((
        target,
        Outcome {
            hit,
            bytes_reused,
            kind: (!kind.is_empty()).then(|| kind.to_owned()),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(hit: bool, bytes_reused: i64, kind: Option<&str>) -> Outcome {
        Outcome {
            hit,
            bytes_reused,
            kind: kind.map(str::to_owned),
        }
    }

    #[test]
    fn records_and_last_wins() {
        let o = parse(b"/o/a.o\tobj\t0\t0\n/o/b.exe\texe\t1\t1234\n/o/a.o\tobj\t1\t99\n");
        assert_eq!(o.len(), 2);
        assert_eq!(o.get("/o/a.o"), Some(&outcome(true, 99, Some("obj"))));
        assert_eq!(o.get("/o/b.exe"), Some(&outcome(true, 1234, Some("exe"))));
        assert_eq!(o.get("/o/c.o"), None);
        assert_eq!(o.skipped_lines(), 0);
    }

    #[test]
    fn last_wins_even_when_it_clears_a_hit() {
        let o = parse(b"t\tobj\t1\t5\nt\t\t0\t0\n");
        assert_eq!(o.get("t"), Some(&outcome(false, 0, None)));
    }

    #[test]
    fn universal_newlines() {
        let o = parse(b"a\tobj\t0\t0\r\nb\tobj\t1\t2\rc\tobj\t0\t0");
        assert_eq!(o.len(), 3);
        assert_eq!(o.get("b"), Some(&outcome(true, 2, Some("obj"))));
        assert_eq!(o.skipped_lines(), 0, "no \\r left in a field");
    }

    #[test]
    fn exactly_four_fields() {
        let o = parse(b"a\tobj\t0\na\tobj\t0\t0\textra\n\n\nonly\n\t\t\t\n");
        assert!(o.is_empty());
        // "\t\t\t" has four fields, but empty integers are invalid.
        assert_eq!(o.skipped_lines(), 4);
        // Empty target and kind are allowed.
        let o = parse(b"\t\t1\t0\n");
        assert_eq!(o.get(""), Some(&outcome(true, 0, None)));
    }

    #[test]
    fn python_int_fields() {
        let o = parse(" t1\t obj \t +1 \t 1_000 \nt2\tobj\t-0\t-5\nt3\tobj\t٣\t\u{a0}7\n".as_bytes());
        // Target and kind are not stripped; integers are.
        assert_eq!(o.get(" t1"), Some(&outcome(true, 1000, Some(" obj "))));
        assert_eq!(o.get("t2"), Some(&outcome(false, -5, Some("obj"))));
        assert_eq!(o.get("t3"), Some(&outcome(true, 7, Some("obj"))));
        let bad = parse(b"a\tobj\t1__0\t0\nb\tobj\t_1\t0\nc\tobj\t0\t1_\nd\tobj\t\x1c1\t0\ne\tobj\t0x1\t0\n");
        assert!(bad.is_empty());
        assert_eq!(bad.skipped_lines(), 5);
    }

    #[test]
    fn huge_integers() {
        let o = parse(b"a\tobj\t99999999999999999999999\t0\nb\tobj\t1\t99999999999999999999999\n");
        assert_eq!(
            o.get("a"),
            Some(&outcome(true, 0, Some("obj"))),
            "a huge hit is just true"
        );
        assert_eq!(o.get("b"), None, "bytes_reused must fit an int attribute");
        assert_eq!(o.skipped_lines(), 1);
    }

    #[test]
    fn torn_and_invalid_utf8_lines() {
        let o = parse(b"/o/a.o\tobj\t0\t0\n/o/b.o\tob\n/o/\xff.o\tobj\t0\t0\n");
        assert_eq!(o.len(), 2);
        assert!(o.get("/o/\u{fffd}.o").is_some());
        assert_eq!(o.skipped_lines(), 1);
    }
}
