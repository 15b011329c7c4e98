//! The skeleton every exported call of the C ABI shares, so that
//! `ct_process_build` and `ct_scan_cas` differ only in how they decode their
//! request, which entry point they run and how they fill their result.

use super::buffer::CtBuffer;
use super::guard::guard;
use super::CtCancel;
use crate::cancel::CancelToken;
use crate::error::ErrorCode;

/// A `#[repr(C)]` result struct of an exported call: Rust-owned buffers the
/// caller releases with the matching `*_free` function.
pub(crate) trait CallResult {
    /// The result with every buffer empty (null) and every count zero.
    fn empty() -> Self;
    /// Where the message of a failed call goes.
    fn error_message(&mut self) -> &mut CtBuffer;
    /// Every buffer of the result, for releasing them.
    fn buffers(&mut self) -> Vec<&mut CtBuffer>;
}

/// Runs one exported call: writes an empty result to `out` first (so `out`
/// is always safe to free), then, inside the panic guard, runs `body` and
/// lets `fill` build the result from what it returned; stores that result,
/// or the error message. Returns `CtErrorCode` Ok (0) or the error's code.
///
/// # Safety
/// `out` must be null or valid for writing an `R`; `req` must be valid or
/// null; `cancel` must be live or null.
pub(crate) unsafe fn export<Req, R: CallResult, T>(
    req: *const Req,
    cancel: *const CtCancel,
    out: *mut R,
    body: impl FnOnce(&Req, &CancelToken) -> Result<T, (ErrorCode, String)>,
    fill: impl FnOnce(&mut R, T),
) -> i32 {
    if out.is_null() {
        return ErrorCode::InvalidRequest as i32;
    }
    // SAFETY: out is non-null and the caller guarantees it points to memory
    // for an R; writing (not assigning) drops nothing the caller left there.
    unsafe { out.write(R::empty()) };
    // SAFETY: as above; this is the only reference during the call.
    let out = unsafe { &mut *out };
    // Building the result's buffers (joining warnings, moving the OTLP
    // bytes) is inside the guard like the body: a panic there must not
    // unwind into C either.
    let run = |req: &Req, token: &CancelToken| {
        let value = body(req, token)?;
        let mut result = Filling(Some(R::empty()));
        if let Some(r) = result.0.as_mut() {
            fill(r, value);
        }
        Ok(result.0.take().unwrap_or_else(R::empty))
    };
    // SAFETY: forwarded to the caller (see above).
    match unsafe { call(req, cancel, run) } {
        Ok(result) => {
            *out = result;
            ErrorCode::Ok as i32
        }
        Err((code, message)) => {
            *out.error_message() = CtBuffer::from_string(message);
            code
        }
    }
}

/// A result being filled. If `fill` panics, dropping this during the unwind
/// releases the buffers made so far, which no caller will ever free.
struct Filling<R: CallResult>(Option<R>);

impl<R: CallResult> Drop for Filling<R> {
    fn drop(&mut self) {
        if let Some(result) = self.0.as_mut() {
            for buffer in result.buffers() {
                // SAFETY: the result started empty and `fill` only stores
                // buffers made by CtBuffer::from_vec; none was handed out.
                unsafe { buffer.release() };
            }
        }
    }
}

/// Releases every buffer of a result; a second call is a no-op.
///
/// # Safety
/// `res` must be null or point to a result written by [`export`].
pub(crate) unsafe fn free_result<R: CallResult>(res: *mut R) {
    // SAFETY: the caller guarantees res is valid or null.
    let Some(res) = (unsafe { res.as_mut() }) else {
        return;
    };
    let _ = guard(|| {
        for buffer in res.buffers() {
            // SAFETY: every buffer of a result written by export came from
            // CtBuffer::from_vec or is empty; release empties it, so a
            // second call is a no-op.
            unsafe { buffer.release() };
        }
    });
}

/// Runs the body of an exported call: a null request is an error, a null
/// cancel token means "never cancelled", and a panic or an error becomes a
/// code plus a message, so nothing unwinds into C.
///
/// # Safety
/// `req` must be valid or null; `cancel` must be live or null.
unsafe fn call<Req, T>(
    req: *const Req,
    cancel: *const CtCancel,
    body: impl FnOnce(&Req, &CancelToken) -> Result<T, (ErrorCode, String)>,
) -> Result<T, (i32, String)> {
    let outcome = guard(|| {
        // SAFETY: the caller guarantees req is valid or null.
        let Some(req) = (unsafe { req.as_ref() }) else {
            return Err((ErrorCode::InvalidRequest, "null request".to_owned()));
        };
        let local_token;
        // SAFETY: the caller guarantees cancel is live or null.
        let token = match unsafe { cancel.as_ref() } {
            Some(c) => &c.token,
            None => {
                local_token = CancelToken::new();
                &local_token
            }
        };
        body(req, token)
    });
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err((code, message))) => Err((code as i32, message)),
        Err(panic_message) => Err((ErrorCode::Panic as i32, panic_message)),
    }
}

/// A new opaque handle (cancel token, scan cache) for C; null if making it
/// panicked.
pub(crate) fn new_handle<T>(make: impl FnOnce() -> T) -> *mut T {
    guard(|| Box::into_raw(Box::new(make()))).unwrap_or(std::ptr::null_mut())
}

/// Frees a handle from [`new_handle`].
///
/// # Safety
/// `handle` must be null or come from [`new_handle`] with the same `T`, be
/// freed at most once, and not be in use by any call.
pub(crate) unsafe fn free_handle<T>(handle: *mut T) {
    if !handle.is_null() {
        // SAFETY: the caller guarantees exclusive ownership of a Box we made.
        let _ = guard(|| drop(unsafe { Box::from_raw(handle) }));
    }
}

/// Warnings as one buffer, one per line; empty when there are none.
pub(crate) fn lines_buffer(lines: &[String]) -> CtBuffer {
    if lines.is_empty() {
        CtBuffer::empty()
    } else {
        CtBuffer::from_string(lines.join("\n"))
    }
}

/// An optional OTLP request as a buffer; empty when absent.
pub(crate) fn optional_buffer(bytes: Option<Vec<u8>>) -> CtBuffer {
    bytes.map(CtBuffer::from_vec).unwrap_or(CtBuffer::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result with one data buffer, for driving [`export`] directly.
    struct TestResult {
        data: CtBuffer,
        error_message: CtBuffer,
    }

    impl CallResult for TestResult {
        fn empty() -> Self {
            Self {
                data: CtBuffer::empty(),
                error_message: CtBuffer::empty(),
            }
        }

        fn error_message(&mut self) -> &mut CtBuffer {
            &mut self.error_message
        }

        fn buffers(&mut self) -> Vec<&mut CtBuffer> {
            vec![&mut self.data, &mut self.error_message]
        }
    }

    /// Building the result's buffers is part of the call: a panic there
    /// (say, a capacity overflow while joining warnings) must become the
    /// Panic code with a message like one in the body, not unwind into C;
    /// and the buffers filled before it are not handed out.
    #[test]
    fn a_panic_while_filling_the_result_becomes_an_error_code() {
        let mut out = std::mem::MaybeUninit::<TestResult>::uninit();
        let fill = |out: &mut TestResult, n: usize| {
            out.data = CtBuffer::from_vec(vec![7u8; n]);
            panic!("filling failed after {n} bytes");
        };
        // SAFETY: a non-null request that outlives the call; out is writable.
        let code = unsafe { export(&(), std::ptr::null(), out.as_mut_ptr(), |_: &(), _| Ok(16), fill) };
        // SAFETY: export always writes out.
        let mut out = unsafe { out.assume_init() };
        assert_eq!(code, ErrorCode::Panic as i32);
        assert!(out.data.ptr.is_null(), "a half-filled buffer was handed out");
        // SAFETY: a failed call sets a message, valid until freed.
        let msg = unsafe { std::slice::from_raw_parts(out.error_message.ptr, out.error_message.len) };
        assert!(
            String::from_utf8_lossy(msg).contains("filling failed after 16 bytes"),
            "{}",
            String::from_utf8_lossy(msg)
        );
        // SAFETY: out was written by export.
        unsafe { free_result(&mut out) };
    }
}
