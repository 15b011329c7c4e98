//! The `rule_outcomes.log` reader (spec §5.3) on arbitrary bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = compiletools_core::outcomes::parse(data);
});
