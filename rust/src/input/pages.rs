//! Asking the kernel for transparent huge pages behind the few large buffers
//! of one build (the file text, the model's tables, the OTLP output).
//!
//! Filling fresh memory costs one page fault per 4 KiB page; for the
//! ~60 MB of a 100k-rule timing.json that is ~15k faults, most of the read
//! time (measured: 27 ms with 4 KiB pages, 6 ms with 2 MiB pages, and a
//! tenth of the time to unmap). The advice is a hint: where transparent huge
//! pages are disabled (or not Linux) nothing changes, and memory that is
//! reserved but never written still costs nothing.
//!
//! Caveat, measured on a VM: a huge page the host has not backed yet (memory
//! the guest never touched) is slow to fault in, so an occasional call pays
//! more than it saves (one in ten single-call runs of the 100k benchmark
//! took ~300 ms instead of ~120 ms); the median is still far better.

/// Buffers smaller than this are left alone: they come from the malloc heap
/// (whose pages other allocations share) and gain little.
const MIN_BYTES: usize = 4 << 20;

/// Advises huge pages for the spare and used capacity of `v`.
pub fn advise_huge_pages<T>(v: &mut Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes >= MIN_BYTES {
        advise(v.as_mut_ptr().cast::<u8>(), bytes);
    }
}

/// [`advise_huge_pages`] for a `String`'s buffer.
pub fn advise_huge_pages_string(s: &mut String) {
    if s.capacity() >= MIN_BYTES {
        advise(s.as_mut_str().as_mut_ptr(), s.capacity());
    }
}

#[cfg(target_os = "linux")]
fn advise(ptr: *mut u8, len: usize) {
    const PAGE: usize = 4096;
    // madvise wants a page-aligned start; only whole pages inside the
    // allocation are named, so the advice never reaches memory that is not
    // this buffer's.
    let addr = ptr as usize;
    let start = addr.next_multiple_of(PAGE);
    let end = (addr + len) / PAGE * PAGE;
    if end <= start {
        return;
    }
    // SAFETY: [start, end) lies within one live allocation owned by the
    // caller's Vec. MADV_HUGEPAGE changes neither the contents nor the
    // validity of the range, only which page size the kernel backs it with;
    // a failure (e.g. THP disabled, EINVAL on old kernels) is harmless and
    // ignored on purpose.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_ptr: *mut u8, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_keeps_contents() {
        let mut v: Vec<u8> = Vec::with_capacity(MIN_BYTES + 123);
        v.extend_from_slice(b"kept");
        advise_huge_pages(&mut v);
        v.resize(MIN_BYTES + 100, 7);
        assert_eq!(&v[..4], b"kept");
        let mut small = vec![1u32; 10];
        advise_huge_pages(&mut small);
        assert_eq!(small, [1; 10]);
        let mut s = String::with_capacity(MIN_BYTES);
        s.push_str("text");
        advise_huge_pages_string(&mut s);
        assert_eq!(s, "text");
    }
}
