//! Deterministic ids of the `ct.cache.snapshot` span.
//!
//! # Scheme `ctotel/v1/cas-snapshot`
//!
//! Same field encoding as the build ids (`crate::ids`): SHA-256 over a
//! sequence of fields, each encoded as its byte length (u64, big-endian)
//! followed by its bytes. The fields are, in order:
//!
//! 1. `"ctotel/v1/cas-snapshot"` (domain separation from build traces);
//! 2. the host name, UTF-8;
//! 3. the cell paths of the stores in the snapshot, in spec §3.6 kind order
//!    (obj, pch, pcm, exe), as raw OS bytes, joined with one NUL byte (a
//!    byte no path can contain, so the join is unambiguous);
//! 4. the scan time in Unix nanoseconds as a decimal ASCII number, e.g.
//!    `"1796010232235975950"`.
//!
//! **trace_id** = the first 16 bytes of that digest, **span_id** = its first
//! 8 bytes. (The span id therefore equals the first half of the trace id;
//! OTLP treats the two id spaces separately, and the snapshot trace holds
//! exactly one span.)
//!
//! If either id would be all zeros (invalid in OTLP), one more field holding
//! a counter `n` (u32 big-endian, `n` = 1, 2, …) is appended and the hash
//! taken again until both are non-zero — the rule of `crate::ids`.
//!
//! Scanning the same cells on the same host at the same instant therefore
//! gives the same ids, so a snapshot the receiver re-sends is an exact
//! duplicate a backend can drop.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use sha2::{Digest, Sha256};

const DOMAIN: &[u8] = b"ctotel/v1/cas-snapshot";

/// `(trace_id, span_id)` of the snapshot of `cells` (already in kind order).
pub fn snapshot_ids(host_name: &str, cells: &[&Path], time_unix_nano: u64) -> ([u8; 16], [u8; 8]) {
    let mut joined = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            joined.push(0);
        }
        joined.extend_from_slice(cell.as_os_str().as_bytes());
    }
    let time = time_unix_nano.to_string();
    let mut base = Sha256::new();
    for field in [DOMAIN, host_name.as_bytes(), &joined, time.as_bytes()] {
        update_field(&mut base, field);
    }
    let mut digest = base.clone().finalize();
    let mut counter: u32 = 0;
    while digest[..8].iter().all(|b| *b == 0) {
        // The span id is the trace id's prefix, so a non-zero span id also
        // makes the trace id non-zero. Wrapping: the loop cannot overflow.
        counter = counter.wrapping_add(1);
        let mut h = base.clone();
        update_field(&mut h, &counter.to_be_bytes());
        digest = h.finalize();
    }
    let mut trace_id = [0u8; 16];
    trace_id.copy_from_slice(&digest[..16]);
    let mut span_id = [0u8; 8];
    span_id.copy_from_slice(&digest[..8]);
    (trace_id, span_id)
}

fn update_field(hasher: &mut Sha256, field: &[u8]) {
    hasher.update((field.len() as u64).to_be_bytes());
    hasher.update(field);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn vector_matches_independent_computation() {
        // Expected value computed independently with Python's hashlib:
        //   f = lambda b: struct.pack(">Q", len(b)) + b
        //   sha256(f(b"ctotel/v1/cas-snapshot") + f(b"vm")
        //          + f(b"/p/cas-objdir/v\x00/p/cas-exedir/v") + f(b"1796010232235975950"))
        let (t, s) = snapshot_ids(
            "vm",
            &[Path::new("/p/cas-objdir/v"), Path::new("/p/cas-exedir/v")],
            1_796_010_232_235_975_950,
        );
        assert_eq!(hex(&t), EXPECTED_TRACE);
        assert_eq!(hex(&s), &EXPECTED_TRACE[..16]);
    }

    const EXPECTED_TRACE: &str = "cd03755e8e8ef6821e2f238b19652ae9";

    #[test]
    fn inputs_matter_and_are_unambiguous() {
        let a = snapshot_ids("h", &[Path::new("/a"), Path::new("/b")], 1);
        assert_eq!(a, snapshot_ids("h", &[Path::new("/a"), Path::new("/b")], 1));
        assert_ne!(a, snapshot_ids("h", &[Path::new("/a/b")], 1));
        assert_ne!(a, snapshot_ids("h", &[Path::new("/b"), Path::new("/a")], 1));
        assert_ne!(a, snapshot_ids("h", &[Path::new("/a"), Path::new("/b")], 2));
        assert_ne!(a, snapshot_ids("g", &[Path::new("/a"), Path::new("/b")], 1));
        assert!(a.0.iter().any(|b| *b != 0));
    }
}
