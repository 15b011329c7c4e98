//! The library's ABI identity: the SHA-256 of the C header generated with
//! it (by `build.rs`, from the same sources). The Go binding hashes the
//! header it was compiled with and refuses a library whose hash differs,
//! so a stale static library next to a changed header — struct layouts
//! that no longer agree — fails at start-up instead of corrupting memory.
//! Nothing needs bumping by hand: any change to the header changes it.

use std::ffi::c_char;

include!(concat!(env!("OUT_DIR"), "/header_sha256.rs"));

/// The SHA-256 of the C header this library was generated with: 64
/// lower-case hex digits, NUL-terminated, in static memory (never freed).
#[no_mangle]
pub extern "C" fn ct_header_sha256() -> *const c_char {
    HEADER_SHA256.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_64_hex_digits_and_a_nul() {
        // SAFETY: the pointer is to a static, NUL-terminated array.
        let s = unsafe { std::ffi::CStr::from_ptr(ct_header_sha256()) };
        let s = s.to_str().unwrap();
        assert_eq!(s.len(), 64);
        assert!(s
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    }
}
