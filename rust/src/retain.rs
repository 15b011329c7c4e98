//! Large buffers kept from one build for the next, within a fixed cap.
//!
//! Memory that a process gets fresh from the kernel is zeroed page by page
//! on first touch: for a 100k-rule build (61 MB of text, ~35 MB of model
//! tables, 66 MB of output) that was ~15 % of `process_build`. A receiver
//! handles build after build in one process, so the biggest buffers of one
//! build are kept for the next instead: the text/output byte buffer (handed
//! back when the caller releases the output, see
//! [`crate::BuildOutput::recycle`] and `ct_build_result_free`) and the
//! model's three large tables (see [`crate::timing::Build::recycle`]).
//!
//! What is kept, at most: one buffer of each kind, each only if its
//! capacity is at most [`MAX_CAPACITY`] and at least [`MIN_CAPACITY`]; a
//! larger one replaces a smaller one. Reserved but untouched capacity costs
//! no resident memory; the pages a build did touch stay resident until
//! the receiver releases them all (`ct_kept_buffers_release`, after a poll
//! with nothing to send): at most 4 × 96 MiB, in practice what the largest
//! build touched (`timing_once` on the 100k-rule file: RSS 108 MiB after
//! the builds, peak 111 MiB with or without keeping). Nothing of one build
//! can show in the next: the text is read over the old bytes and cut
//! to what was read, and the tables are emptied before use.

use std::sync::{Mutex, PoisonError};

/// Largest buffer capacity kept (bytes).
pub(crate) const MAX_CAPACITY: usize = 96 << 20;

/// Smaller buffers are not worth keeping: they come from the malloc heap,
/// whose pages are reused anyway.
pub(crate) const MIN_CAPACITY: usize = 4 << 20;

/// One kept buffer of one kind; plain data only (`Copy`): nothing with a
/// destructor waits in it.
pub(crate) struct Kept<T: Copy>(Mutex<Vec<T>>);

impl<T: Copy> Kept<T> {
    pub(crate) const fn new() -> Self {
        Kept(Mutex::new(Vec::new()))
    }

    /// The kept buffer as it was given (contents too), if its capacity is
    /// at least `min` elements and at most twice `want` (plus
    /// [`MIN_CAPACITY`] bytes: a small build does not take the big one);
    /// else an empty new one.
    ///
    /// A kept buffer is never grown on reuse: growing means `realloc`, which
    /// for these sizes moves the mapping (`mremap`), and measured here the
    /// moved memory was faulted in afresh, 4 KiB at a time: slower than a
    /// new buffer.
    pub(crate) fn take(&self, min: usize, want: usize) -> Vec<T> {
        let Ok(mut kept) = self.0.lock() else {
            return Vec::new();
        };
        let size = std::mem::size_of::<T>();
        let have = kept.capacity();
        let fits = have >= min
            && have.saturating_mul(size)
                <= want
                    .saturating_mul(2)
                    .saturating_mul(size)
                    .saturating_add(MIN_CAPACITY);
        if !fits {
            return Vec::new();
        }
        std::mem::take(&mut *kept)
    }

    /// Frees the kept buffer, if any; returns its capacity in bytes.
    pub(crate) fn release(&self) -> usize {
        // Plain data: a panic while the lock was held cannot have left it
        // half-written in a way that matters to freeing it.
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = kept.capacity().saturating_mul(std::mem::size_of::<T>());
        *kept = Vec::new();
        bytes
    }

    /// Keeps `v` for a later [`Kept::take`] if it is within the caps and
    /// larger than the buffer kept now; otherwise frees it.
    pub(crate) fn give(&self, v: Vec<T>) {
        let bytes = |v: &Vec<T>| v.capacity().saturating_mul(std::mem::size_of::<T>());
        if !(MIN_CAPACITY..=MAX_CAPACITY).contains(&bytes(&v)) {
            return;
        }
        if let Ok(mut kept) = self.0.lock() {
            if bytes(&v) > bytes(&kept) {
                *kept = v;
            }
        }
    }
}

/// The file text's buffer, which becomes the trace's output buffer.
pub(crate) static BYTES: Kept<u8> = Kept::new();

/// Gives an output buffer back for the next build's text (see the module
/// doc); small or huge ones are simply freed.
pub fn give_bytes(v: Vec<u8>) {
    BYTES.give(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_one_buffer_within_the_caps() {
        let kept: Kept<u8> = Kept::new();
        kept.give(Vec::with_capacity(MIN_CAPACITY - 1));
        assert_eq!(kept.take(0, MAX_CAPACITY).capacity(), 0, "too small to keep");
        kept.give(Vec::with_capacity(MAX_CAPACITY + 1));
        assert_eq!(kept.take(0, MAX_CAPACITY).capacity(), 0, "too large to keep");

        let mut v = Vec::with_capacity(MIN_CAPACITY * 2);
        v.extend_from_slice(b"old contents");
        let ptr = v.as_ptr();
        kept.give(v);
        kept.give(Vec::with_capacity(MIN_CAPACITY)); // smaller: not kept instead
        let again = kept.take(MIN_CAPACITY, MIN_CAPACITY);
        assert_eq!(again.as_ptr(), ptr, "the same memory comes back");
        assert_eq!(again, b"old contents", "as it was given");
        assert_eq!(
            kept.take(MIN_CAPACITY, MIN_CAPACITY).capacity(),
            0,
            "taken only once"
        );
    }

    #[test]
    fn release_frees_what_is_kept() {
        let kept: Kept<u64> = Kept::new();
        kept.give(Vec::with_capacity(MIN_CAPACITY)); // MIN_CAPACITY u64s: 8× the bytes
        assert_eq!(kept.release(), 8 * MIN_CAPACITY);
        assert_eq!(kept.release(), 0, "nothing left to free");
        assert_eq!(kept.take(0, MIN_CAPACITY).capacity(), 0);
    }

    #[test]
    fn a_small_need_does_not_take_a_big_buffer() {
        let kept: Kept<u8> = Kept::new();
        kept.give(Vec::with_capacity(64 << 20));
        assert_eq!(kept.take(1 << 20, 1 << 20).capacity(), 0);
        assert_eq!(
            kept.take(65 << 20, 80 << 20).capacity(),
            0,
            "nor one that would have to grow"
        );
        assert!(kept.take(40 << 20, 40 << 20).capacity() >= 64 << 20);
    }
}
