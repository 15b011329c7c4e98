//! The `rule_outcomes.log` parser (formats.md §5.3) on arbitrary bytes: never
//! panics, and for ASCII input agrees record for record (last wins, skipped
//! line count) with an independent model of compiletools' Python parser
//! and of CPython's `int()` (`common/pyref.rs`).

#![no_main]

#[path = "../common/pyref.rs"]
mod pyref;

use compiletools_core::outcomes::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let got = parse(data);
    let _ = (got.len(), got.is_empty(), got.skipped_lines());
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if !text.is_ascii() {
        return;
    }
    let (expected, skipped) = pyref::outcomes(text);
    assert_eq!(got.len(), expected.len(), "number of targets");
    assert_eq!(got.skipped_lines(), skipped, "skipped lines");
    for (target, (hit, bytes, kind)) in &expected {
        let o = got
            .get(target)
            .unwrap_or_else(|| panic!("target {target:?} missing"));
        assert_eq!(
            (o.hit, o.bytes_reused, &o.kind),
            (*hit, *bytes, kind),
            "record of {target:?}"
        );
    }
});
