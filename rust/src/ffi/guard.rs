//! The panic guard every exported function runs its body in.

use std::panic::{catch_unwind, AssertUnwindSafe};

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
