//! The ccache statslog parser (formats.md §4.3) on arbitrary bytes: never panics;
//! `parse` and `parse_counts` agree on the counts; the counts equal an
//! independent model of compiletools' Python loop (`common/pyref.rs`); the
//! blocks and the summary are consistent with the counts.

#![no_main]

#[path = "../common/pyref.rs"]
mod pyref;

use compiletools_core::statslog::{parse, parse_counts};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let full = parse(data);
    let counts = parse_counts(data);
    assert_eq!(
        full.events(),
        counts.events(),
        "parse and parse_counts count the same"
    );
    assert!(counts.blocks().is_empty(), "parse_counts keeps no blocks");
    assert_eq!(full.summary(), counts.summary());

    let text = String::from_utf8_lossy(data);
    let expected = pyref::statslog_counts(&text);
    let got: Vec<(String, u64)> = full.events().iter().map(|e| (e.name.clone(), e.count)).collect();
    assert_eq!(got, expected, "counts differ from the Python model");

    let total: u64 = full.events().iter().map(|e| e.count).sum();
    let in_blocks: u64 = full.blocks().iter().map(|b| b.events).sum();
    assert!(in_blocks <= total, "blocks hold more events than were counted");
    for e in full.events() {
        assert!(e.count >= 1);
        assert_eq!(full.count(&e.name), e.count);
    }
    let s = full.summary();
    assert_eq!(s.direct_hits, full.count("direct_cache_hit"));
    assert_eq!(s.preprocessed_hits, full.count("preprocessed_cache_hit"));
    assert_eq!(s.misses, full.count("cache_miss"));
    for rate in [s.hit_rate(), s.remote_hit_rate()] {
        assert!((0.0..=1.0).contains(&rate), "rate {rate} outside [0, 1]");
    }
    let _ = full.last_block_by_source();
    let _ = full.is_empty();
});
