//! Property tests of the side-file parsers: the ccache statslog (formats.md §4.3)
//! and `rule_outcomes.log` (formats.md §5.3).
//!
//! * Arbitrary bytes: neither parser panics; `statslog::parse` and
//!   `parse_counts` agree on the counts.
//! * Generated well-formed files (any newline style, surrounding
//!   whitespace, Python-`int()` spellings of the numbers): the parse equals
//!   what was written — counts in first-seen order and one block per header
//!   for the statslog; the last record per target, nothing skipped, for the
//!   outcomes log.
//!
//! `PROPTEST_CASES=N` runs more cases than the default.

use std::collections::HashMap;

use crate::common::proptest_config::config;
use compiletools_core::{outcomes, statslog};
use proptest::prelude::*;

fn newline() -> impl Strategy<Value = &'static str> {
    prop_oneof![4 => Just("\n"), 1 => Just("\r\n"), 1 => Just("\r")]
}

// ---------------------------------------------------------------- statslog

fn event_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("direct_cache_hit".to_owned()),
        Just("preprocessed_cache_hit".to_owned()),
        Just("cache_miss".to_owned()),
        Just("local_storage_write".to_owned()),
        Just("remote_storage_hit".to_owned()),
        Just("called_for_preprocessing".to_owned()),
        "[a-z_]{1,16}",
        // Non-ASCII names without whitespace count as they are.
        "[a-zé€𝄞]{1,6}",
    ]
}

/// Whitespace compiletools strips from a line's ends (Python `isspace`).
fn padding() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        6 => Just(""),
        1 => Just(" "),
        1 => Just("\t"),
        1 => Just("\x0b\x0c"),
        1 => Just("\u{a0}"),
        1 => Just("\u{3000}"),
        1 => Just("\x1c"),
    ]
}

#[derive(Debug, Clone)]
struct GenBlock {
    path: String,
    events: Vec<(String, &'static str, &'static str)>,
}

fn block() -> impl Strategy<Value = GenBlock> {
    (
        "[a-z/ ._-]{0,20}",
        prop::collection::vec((event_name(), padding(), padding()), 0..6),
    )
        .prop_map(|(path, events)| GenBlock { path, events })
}

// ------------------------------------------------------------ outcomes log

/// A Python `int()` spelling of `v` (all parse to `v`).
fn int_spelling(v: i64) -> impl Strategy<Value = String> {
    let plain = v.to_string();
    let with_underscores = {
        let (sign, digits) = plain.split_at(if v < 0 { 1 } else { 0 });
        let mut s = sign.to_owned();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                s.push('_');
            }
            s.push(c);
        }
        s
    };
    let signed = if v >= 0 { format!("+{v}") } else { plain.clone() };
    let padded = format!(" {v}\x0b");
    let zeros = if v >= 0 { format!("000{v}") } else { plain.clone() };
    prop_oneof![
        4 => Just(plain),
        1 => Just(with_underscores),
        1 => Just(signed),
        1 => Just(padded),
        1 => Just(zeros),
    ]
}

#[derive(Debug, Clone)]
struct Record {
    target: String,
    kind: String,
    hit: i64,
    bytes: i64,
    hit_text: String,
    bytes_text: String,
}

fn record() -> impl Strategy<Value = Record> {
    (
        // Targets repeat often (last wins) and may hold anything but TAB,
        // LF and CR.
        prop_oneof!["/o/[a-c]\\.o", "[^\t\n\r]{1,30}"],
        prop_oneof![
            Just("obj".to_owned()),
            Just("exe".to_owned()),
            Just(String::new())
        ],
        prop_oneof![Just(0i64), Just(1i64), any::<i64>()],
        prop_oneof![Just(0i64), 0i64..1 << 40, any::<i64>()],
    )
        .prop_flat_map(|(target, kind, hit, bytes)| {
            (int_spelling(hit), int_spelling(bytes)).prop_map(move |(hit_text, bytes_text)| Record {
                target: target.clone(),
                kind: kind.clone(),
                hit,
                bytes,
                hit_text,
                bytes_text,
            })
        })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn statslog_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let full = statslog::parse(&bytes);
        let counts = statslog::parse_counts(&bytes);
        prop_assert_eq!(full.events(), counts.events());
        let total: u64 = full.events().iter().map(|e| e.count).sum();
        prop_assert!(full.blocks().iter().map(|b| b.events).sum::<u64>() <= total);
    }

    #[test]
    fn statslog_generated_counts_and_blocks(
        blocks in prop::collection::vec(block(), 0..8),
        nl in newline(),
        trailing_newline in any::<bool>(),
    ) {
        let mut text = String::new();
        let mut expected: Vec<(String, u64)> = Vec::new();
        for b in &blocks {
            text.push_str(&format!("# {}{nl}", b.path));
            for (name, pre, post) in &b.events {
                text.push_str(&format!("{pre}{name}{post}{nl}"));
                match expected.iter_mut().find(|(n, _)| n == name) {
                    Some((_, c)) => *c += 1,
                    None => expected.push((name.clone(), 1)),
                }
            }
            // Blank lines are skipped.
            text.push_str(nl);
        }
        if !trailing_newline && text.ends_with(nl) {
            text.truncate(text.len() - nl.len());
        }
        let log = statslog::parse(text.as_bytes());
        let got: Vec<(String, u64)> = log.events().iter().map(|e| (e.name.clone(), e.count)).collect();
        prop_assert_eq!(got, expected);
        prop_assert_eq!(log.blocks().len(), blocks.len());
        for (parsed, written) in log.blocks().iter().zip(&blocks) {
            prop_assert_eq!(&parsed.path, &written.path);
            prop_assert_eq!(parsed.events, written.events.len() as u64);
            let first_primary = written
                .events
                .iter()
                .find_map(|(n, _, _)| statslog::Primary::from_event(n));
            prop_assert_eq!(parsed.primary, first_primary);
        }
        let s = log.summary();
        prop_assert_eq!(s.direct_hits, log.count("direct_cache_hit"));
        prop_assert_eq!(s.misses, log.count("cache_miss"));
    }

    #[test]
    fn outcomes_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let o = outcomes::parse(&bytes);
        let lines = bytes.iter().filter(|&&b| b == b'\n' || b == b'\r').count() as u64 + 1;
        prop_assert!(o.len() as u64 + o.skipped_lines() <= lines);
    }

    #[test]
    fn outcomes_generated_records_last_wins(
        records in prop::collection::vec(record(), 0..12),
        nl in newline(),
        blank_lines in any::<bool>(),
    ) {
        let mut text = String::new();
        let mut expected: HashMap<&str, &Record> = HashMap::new();
        for r in &records {
            text.push_str(&format!("{}\t{}\t{}\t{}{nl}", r.target, r.kind, r.hit_text, r.bytes_text));
            if blank_lines {
                text.push_str(nl);
            }
            expected.insert(&r.target, r);
        }
        let o = outcomes::parse(text.as_bytes());
        prop_assert_eq!(o.skipped_lines(), 0);
        prop_assert_eq!(o.len(), expected.len());
        for (target, r) in expected {
            let got = o.get(target);
            prop_assert!(got.is_some(), "{:?} missing", target);
            let got = got.unwrap();
            prop_assert_eq!(got.hit, r.hit != 0);
            prop_assert_eq!(got.bytes_reused, r.bytes);
            prop_assert_eq!(got.kind.as_deref(), (!r.kind.is_empty()).then_some(r.kind.as_str()));
        }
    }
}
