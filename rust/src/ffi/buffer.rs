//! Memory that crosses the C ABI.
//!
//! Go → Rust: [`CtByteView`], Go memory Rust reads during the call only.
//! Rust → Go: [`CtBuffer`], a Rust `Vec` Go decodes (pdata copies) and hands
//! back through `ct_build_result_free` exactly once. Never `free()` it from C: the
//! Rust allocator need not be malloc.

use std::path::PathBuf;

/// Borrowed bytes owned by the caller; `ptr` may be null when `len` is 0.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CtByteView {
    pub ptr: *const u8,
    pub len: usize,
}

impl CtByteView {
    /// # Safety
    /// `ptr` must be valid for `len` bytes for the lifetime `'a`, or `len` must be 0.
    pub unsafe fn as_slice<'a>(&self) -> &'a [u8] {
        if self.ptr.is_null() || self.len == 0 {
            &[]
        } else {
            // SAFETY: guaranteed by the caller (see above).
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}

/// The path a view's bytes name (raw OS bytes); `None` when empty.
pub fn path_of(bytes: &[u8]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    (!bytes.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

/// A view's bytes as text, invalid UTF-8 replaced.
pub fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Bytes owned by Rust, lent to the caller until `ct_build_result_free`.
/// An empty buffer has a null `ptr` (Go's cgo checks reject Rust's dangling
/// non-null pointer of an empty Vec).
#[repr(C)]
#[derive(Debug)]
pub struct CtBuffer {
    pub ptr: *mut u8,
    pub len: usize,
    pub cap: usize,
}

impl CtBuffer {
    pub const fn empty() -> Self {
        Self {
            ptr: std::ptr::null_mut(),
            len: 0,
            cap: 0,
        }
    }

    pub fn from_vec(v: Vec<u8>) -> Self {
        if v.capacity() == 0 {
            return Self::empty();
        }
        let mut v = std::mem::ManuallyDrop::new(v);
        Self {
            ptr: v.as_mut_ptr(),
            len: v.len(),
            cap: v.capacity(),
        }
    }

    pub fn from_string(s: String) -> Self {
        Self::from_vec(s.into_bytes())
    }

    /// Releases the memory; the buffer is empty afterwards.
    ///
    /// # Safety
    /// The buffer must come from [`CtBuffer::from_vec`] and not be freed before.
    pub unsafe fn release(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: ptr/len/cap came from a Vec<u8> leaked by from_vec.
            let v = unsafe { Vec::from_raw_parts(self.ptr, self.len, self.cap) };
            // The output's buffer serves the next build's text.
            crate::retain::give_bytes(v);
        }
        *self = Self::empty();
    }
}

/// Frees the large buffers the core keeps from one build for the next
/// (`crate::retain`) and returns their capacity in bytes. Buffers in use by
/// a build in flight are not touched: that build gives them back when done.
#[no_mangle]
pub extern "C" fn ct_kept_buffers_release() -> u64 {
    super::guard::guard(release_kept_buffers).map_or(0, |bytes| bytes as u64)
}

/// Frees every buffer kept between builds (the output bytes' and the
/// model's tables) and returns their capacity in bytes. The receiver calls
/// it after a poll that had no build to send, so buffers are kept while
/// builds keep coming and an idle collector holds none of them.
fn release_kept_buffers() -> usize {
    crate::retain::BYTES.release() + crate::timing::model::release_kept()
}
