//! Property tests of the live parsers (issue 16): whatever bytes a growing
//! file holds and however they are cut into looks, the records found are
//! those of one look at the whole file, and nothing panics.
//!
//! Each look passes the bytes appended since the last consumed offset, as
//! the receiver does; the last look is final. `consumed` never exceeds the
//! input, so offsets only move forward within the file.
//!
//! `PROPTEST_CASES=N` runs more cases (`make prop-long`).

use crate::common::proptest_config::config;
use compiletools_core::live::{make_timing, ninja_log, statslog, LiveEvent, Parsed};
use proptest::prelude::*;

type Parse = fn(&[u8], bool, usize) -> Parsed;

/// Reads `file` in looks ending at `cuts` (the file growing to each cut in
/// turn), each look capped at `cap` records; returns every event found.
fn in_looks(parse: Parse, file: &[u8], cuts: &[usize], cap: usize) -> Vec<LiveEvent> {
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (file.len() + 1)).collect();
    ends.sort_unstable();
    ends.push(file.len());
    let mut offset = 0;
    let mut events = Vec::new();
    for (i, &end) in ends.iter().enumerate() {
        let last = i + 1 == ends.len();
        // A capped look is repeated until it stops finding records, as the
        // receiver's next intervals would.
        loop {
            let available = &file[offset..end.max(offset)];
            let p = parse(available, last, cap);
            assert!(p.consumed <= available.len());
            offset += p.consumed;
            let found = p.events.len();
            events.extend(p.events);
            if found == 0 || cap == 0 || found < cap {
                break;
            }
        }
    }
    events
}

/// Lines of a statslog: headers, event names, torn bits, CRs, junk bytes.
fn statslog_file() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        "# /src/[a-c]\\.cpp".prop_map(String::into_bytes),
        Just(b"# ".to_vec()),
        Just(b"cache_miss".to_vec()),
        Just(b"direct_cache_hit".to_vec()),
        Just(b"preprocessed_cache_hit".to_vec()),
        Just(b"local_storage_write".to_vec()),
        Just(b"called_for_link".to_vec()),
    ];
    // Every block complete and newline-terminated, as ccache writes them.
    prop::collection::vec(line, 0..40).prop_map(|lines| {
        let mut out = Vec::new();
        for l in lines {
            out.extend_from_slice(&l);
            out.push(b'\n');
        }
        out
    })
}

fn jsonl_file() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        (any::<i64>(), any::<i64>())
            .prop_map(|(s, e)| format!(r#"{{"target":"/o/t.o","start_ns":{s},"end_ns":{e}}}"#)),
        Just("not json".to_owned()),
        Just("".to_owned()),
        Just("[1]".to_owned()),
        "[ -~]{0,20}",
    ];
    prop::collection::vec(line, 0..30).prop_map(|l| (l.join("\n") + "\n").into_bytes())
}

fn ninja_file() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        Just("# ninja log v5".to_owned()),
        (any::<i64>(), any::<i64>()).prop_map(|(s, e)| format!("{s}\t{e}\t0\tobj/x.o\tab")),
        "[0-9\t]{0,12}",
        "[ -~]{0,20}",
    ];
    prop::collection::vec(line, 0..30).prop_map(|l| (l.join("\n") + "\n").into_bytes())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn statslog_looks_find_what_one_final_look_finds(
        file in statslog_file(), cuts in prop::collection::vec(any::<usize>(), 0..6), cap in 0usize..4,
    ) {
        let whole = statslog::parse(&file, true, 0).events;
        prop_assert_eq!(in_looks(statslog::parse, &file, &cuts, cap), whole);
    }

    #[test]
    fn make_timing_looks_find_what_one_final_look_finds(
        file in jsonl_file(), cuts in prop::collection::vec(any::<usize>(), 0..6), cap in 0usize..4,
    ) {
        let whole = make_timing::parse(&file, true, 0).events;
        prop_assert_eq!(in_looks(make_timing::parse, &file, &cuts, cap), whole);
    }

    #[test]
    fn ninja_log_looks_find_what_one_final_look_finds(
        file in ninja_file(), cuts in prop::collection::vec(any::<usize>(), 0..6), cap in 0usize..4,
    ) {
        let whole = ninja_log::parse(&file, true, 0).events;
        prop_assert_eq!(in_looks(ninja_log::parse, &file, &cuts, cap), whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..300), last in any::<bool>(), cap in 0usize..3) {
        for parse in [statslog::parse as Parse, make_timing::parse, ninja_log::parse] {
            let p = parse(&data, last, cap);
            prop_assert!(p.consumed <= data.len());
        }
    }
}
