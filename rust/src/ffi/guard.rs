//! The panic guard every exported function runs its body in.

use std::panic::{catch_unwind, AssertUnwindSafe};

// catch_unwind catches nothing under panic = "abort": every panic would kill
// the collector. The workspace sets "unwind"; a build that overrides it
// (a profile, `-C panic=abort`) is refused rather than shipped. Fuzzing
// builds (`--cfg fuzzing`, set by cargo-fuzz) may abort: they are not the
// library the receiver links, and a fuzzer wants a panic to be a crash.
#[cfg(all(panic = "abort", not(fuzzing)))]
compile_error!(
    "compiletools-core needs panic = \"unwind\": the FFI's panic guard turns a panic into an \
     error code with catch_unwind, which cannot catch anything under panic = \"abort\""
);

/// Runs `f`; a panic becomes `Err(message)` instead of unwinding into C,
/// which would abort the whole collector.
pub fn guard<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let detail = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic payload".to_owned());
        format!("internal error (panic caught at the FFI boundary): {detail}")
    })
}
