//! The compile history handle of the C ABI: a Rust-owned [`History`] the
//! receiver creates once, passes to every `ct_process_build` (request field
//! `history`), commits a build into when it checkpoints it, and saves to /
//! restores from its storage extension as opaque bytes.

use std::sync::Arc;

use super::buffer::{text_of, CtBuffer, CtByteView};
use super::export::{free_handle, new_handle};
use super::guard::guard;
use crate::error::ErrorCode;
use crate::history::{Footprint, History, HistoryConfig};

/// Opaque compile history shared by the builds in flight.
pub struct CtHistory {
    pub(super) history: Arc<History>,
}

/// Size of a history (`ct_history_footprint`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CtHistoryFootprint {
    pub targets: u64,
    pub compiles: u64,
    /// Estimated heap bytes of the targets.
    pub bytes: u64,
    /// Builds evaluated and not committed yet.
    pub staged_builds: u64,
    /// Targets forgotten to stay within `max_targets`.
    pub evicted: u64,
}

/// A new, empty history keeping at most `max_targets` targets (least
/// recently used forgotten first) and the last `window` compiles of each
/// (the median's K; clamped to 1..=254). Free it with `ct_history_free`;
/// null if making it failed.
#[no_mangle]
pub extern "C" fn ct_history_new(max_targets: u64, window: u32) -> *mut CtHistory {
    new_handle(|| CtHistory {
        history: Arc::new(History::new(HistoryConfig {
            max_targets: usize::try_from(max_targets).unwrap_or(usize::MAX),
            window: window as usize,
        })),
    })
}

/// Frees a history from `ct_history_new`; no call may still use it.
///
/// # Safety
/// `history` must be null or come from `ct_history_new`, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn ct_history_free(history: *mut CtHistory) {
    // SAFETY: forwarded to the caller (see above).
    unsafe { free_handle(history) }
}

/// # Safety
/// `history` must be null or live.
unsafe fn history_of<'h>(history: *const CtHistory) -> Option<&'h History> {
    // SAFETY: the caller guarantees history is live or null.
    unsafe { history.as_ref() }.map(|h| &*h.history)
}

/// Applies what the build staged under `build_id` (its invocation directory
/// as given in its request) when it was processed; returns how many rules
/// it recorded or touched (0: nothing staged, or a null history).
///
/// # Safety
/// `history` must be null or live; `build_id` valid for its length.
#[no_mangle]
pub unsafe extern "C" fn ct_history_commit(history: *const CtHistory, build_id: CtByteView) -> u64 {
    // SAFETY: forwarded to the caller (see above).
    let (Some(h), id) = (unsafe { history_of(history) }, unsafe { build_id.as_slice() }) else {
        return 0;
    };
    guard(|| h.commit(&text_of(id)) as u64).unwrap_or(0)
}

/// Drops what the build staged under `build_id`; returns 1 if there was
/// anything, else 0.
///
/// # Safety
/// As `ct_history_commit`.
#[no_mangle]
pub unsafe extern "C" fn ct_history_discard(history: *const CtHistory, build_id: CtByteView) -> u32 {
    // SAFETY: forwarded to the caller (see above).
    let (Some(h), id) = (unsafe { history_of(history) }, unsafe { build_id.as_slice() }) else {
        return 0;
    };
    guard(|| u32::from(h.discard(&text_of(id)))).unwrap_or(0)
}

/// Writes the committed history as bytes into `out` (a buffer freed with
/// `ct_buffer_free`). Returns 0, or a non-zero `CtErrorCode` with `out`
/// left empty.
///
/// # Safety
/// `history` must be null or live; `out` must be valid for writing.
#[no_mangle]
pub unsafe extern "C" fn ct_history_save(history: *const CtHistory, out: *mut CtBuffer) -> i32 {
    if out.is_null() {
        return ErrorCode::InvalidRequest as i32;
    }
    // SAFETY: out is non-null and the caller guarantees it is writable.
    unsafe { out.write(CtBuffer::empty()) };
    // SAFETY: forwarded to the caller (see above).
    let Some(h) = (unsafe { history_of(history) }) else {
        return ErrorCode::InvalidRequest as i32;
    };
    match guard(|| CtBuffer::from_vec(h.save())) {
        Ok(buffer) => {
            // SAFETY: as above.
            unsafe { *out = buffer };
            ErrorCode::Ok as i32
        }
        Err(_) => ErrorCode::Panic as i32,
    }
}

/// Adds saved bytes to the history; `*restored` gets the number of targets
/// they held. Returns 0, or a non-zero `CtErrorCode` (malformed bytes: the
/// history is unchanged) with the reason in `error_message` (freed with
/// `ct_buffer_free`). On success `error_message` is empty, or holds a note
/// when the bytes were of an older format that was converted (to be
/// logged as a warning).
///
/// # Safety
/// `history` must be null or live; `bytes` valid for its length;
/// `restored` and `error_message` null or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn ct_history_restore(
    history: *const CtHistory,
    bytes: CtByteView,
    restored: *mut u64,
    error_message: *mut CtBuffer,
) -> i32 {
    // SAFETY: the caller guarantees both are null or writable.
    let (restored, error_message) = unsafe { (restored.as_mut(), error_message.as_mut()) };
    let fail = |code: ErrorCode, message: String| {
        if let Some(e) = error_message {
            *e = guard(|| CtBuffer::from_string(message)).unwrap_or(CtBuffer::empty());
        }
        code as i32
    };
    // SAFETY: forwarded to the caller (see above).
    let Some(h) = (unsafe { history_of(history) }) else {
        return fail(ErrorCode::InvalidRequest, "null history".to_owned());
    };
    // SAFETY: the caller guarantees the view is valid during the call.
    let bytes = unsafe { bytes.as_slice() };
    match guard(|| h.restore_noting(bytes)) {
        Ok(Ok((n, note))) => {
            if let Some(r) = restored {
                *r = n as u64;
            }
            if let Some(note) = note {
                fail(ErrorCode::Ok, note.to_owned());
            }
            ErrorCode::Ok as i32
        }
        Ok(Err(message)) => fail(ErrorCode::InvalidRequest, message),
        Err(panic) => fail(ErrorCode::Panic, panic),
    }
}

/// The size of a history (zeros for a null one).
///
/// # Safety
/// `history` must be null or live.
#[no_mangle]
pub unsafe extern "C" fn ct_history_footprint(history: *const CtHistory) -> CtHistoryFootprint {
    // SAFETY: forwarded to the caller (see above).
    let Some(h) = (unsafe { history_of(history) }) else {
        return CtHistoryFootprint::default();
    };
    guard(|| {
        let Footprint {
            targets,
            compiles,
            bytes,
            staged_builds,
            evicted,
        } = h.footprint();
        CtHistoryFootprint {
            targets,
            compiles,
            bytes,
            staged_builds,
            evicted,
        }
    })
    .unwrap_or_default()
}

/// Frees a buffer a history call returned; safe to call twice.
///
/// # Safety
/// `buffer` must be null or filled by `ct_history_save` / `ct_history_restore`.
#[no_mangle]
pub unsafe extern "C" fn ct_buffer_free(buffer: *mut CtBuffer) {
    // SAFETY: the caller guarantees buffer is null or one of ours.
    if let Some(b) = unsafe { buffer.as_mut() } {
        // SAFETY: it came from CtBuffer::from_vec or is empty.
        let _ = guard(|| unsafe { b.release() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(b: &[u8]) -> CtByteView {
        CtByteView {
            ptr: b.as_ptr(),
            len: b.len(),
        }
    }

    #[test]
    fn save_restore_and_errors_through_the_abi() {
        let h = ct_history_new(10, 3);
        assert!(!h.is_null());
        let mut out = CtBuffer::empty();
        // SAFETY: live handle, writable out; buffers freed once.
        unsafe {
            assert_eq!(ct_history_save(h, &mut out), 0);
            let saved = std::slice::from_raw_parts(out.ptr, out.len).to_vec();
            ct_buffer_free(&mut out);
            ct_buffer_free(&mut out);
            let mut n = 99u64;
            let mut err = CtBuffer::empty();
            assert_eq!(ct_history_restore(h, view(&saved), &mut n, &mut err), 0);
            assert_eq!(n, 0);
            assert_eq!(err.len, 0, "no note for the current format");
            // An older receiver's CTHIST3 (no manifest section): converted, with a note.
            let mut v3 = saved[..saved.len() - 4].to_vec();
            v3[..8].copy_from_slice(b"CTHIST3\n");
            assert_eq!(ct_history_restore(h, view(&v3), &mut n, &mut err), 0);
            let note = String::from_utf8_lossy(std::slice::from_raw_parts(err.ptr, err.len)).into_owned();
            assert!(note.contains("converted"), "{note}");
            ct_buffer_free(&mut err);
            let code = ct_history_restore(h, view(b"garbage!"), &mut n, &mut err);
            assert_eq!(code, ErrorCode::InvalidRequest as i32);
            let msg = String::from_utf8_lossy(std::slice::from_raw_parts(err.ptr, err.len)).into_owned();
            assert!(msg.contains("magic"), "{msg}");
            ct_buffer_free(&mut err);
            assert_eq!(ct_history_commit(h, view(b"/nowhere")), 0);
            assert_eq!(ct_history_discard(h, view(b"/nowhere")), 0);
            assert_eq!(ct_history_footprint(h).targets, 0);
            // Null handles are harmless.
            assert_eq!(ct_history_commit(std::ptr::null(), view(b"x")), 0);
            assert_eq!(
                ct_history_footprint(std::ptr::null()),
                CtHistoryFootprint::default()
            );
            assert_ne!(ct_history_save(std::ptr::null(), &mut out), 0);
            ct_history_free(h);
        }
    }
}
