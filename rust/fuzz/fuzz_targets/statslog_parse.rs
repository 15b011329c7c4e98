//! The ccache statslog reader (spec §4.3) on arbitrary bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = compiletools_core::statslog::parse(data);
});
