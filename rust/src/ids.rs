//! Deterministic trace and span ids (design.md §3).
//!
//! Re-reading the same build must produce byte-identical ids, so that a
//! backend can deduplicate a build the receiver sent twice (after a crash, a
//! lost checkpoint, a second agent). Ids are therefore hashes of what
//! identifies the build and the event, never random.
//!
//! # Scheme `ctotel/v1`
//!
//! All hashes are SHA-256. A hash input is a sequence of *fields*; each field
//! is encoded as its byte length (unsigned 64-bit, big-endian) followed by
//! its bytes, and the encoded fields are concatenated. The length prefix
//! makes the encoding unambiguous: no two different field sequences give the
//! same hash input.
//!
//! **trace_id** (16 bytes) = the first 16 bytes of
//! `SHA-256(field("ctotel/v1/trace") ‖ field(host.name) ‖ field(dir) ‖ field(timestamp))`
//! where
//! * `host.name` is the resource `host.name` as UTF-8;
//! * `dir` is the canonical path of the invocation directory
//!   (`std::fs::canonicalize`, i.e. `realpath(3)`: absolute, symlinks
//!   resolved) as raw OS bytes; when canonicalisation fails, the path as
//!   given;
//! * `timestamp` is the top-level `timestamp` string of `timing.json`, as
//!   UTF-8, exactly as decoded from the file (no normalisation).
//!
//! **span_id** (8 bytes) of an event = the first 8 bytes of
//! `SHA-256(field("ctotel/v1/span") ‖ field(trace_id) ‖ field(index_path))`
//! where `trace_id` is the 16 id bytes and `index_path` is the event's path
//! from the root as consecutive unsigned 32-bit big-endian integers: the
//! index of the event inside its parent's `phases` / `rules` / `children`
//! array as stored in the file (elements that were skipped still count).
//! The root event's path is empty, so its field is the 8-byte zero length
//! alone. Example: the third rule of the fifth phase has path `[4, 2]`, field
//! `00 00 00 00 00 00 00 08 | 00 00 00 04 | 00 00 00 02`.
//!
//! **clang span_id** (8 bytes) of a child span of a compile span, made from
//! an event of the compile's clang `-ftime-trace` file = the first 8 bytes of
//! `SHA-256(field("ctotel/v1/clang-span") ‖ field(trace_id) ‖ field(index_path) ‖ field(ordinal))`
//! where `index_path` is the compile rule's (as for its span id) and
//! `ordinal` is one unsigned 32-bit big-endian integer: the event's position
//! among the trace's events of the names the reader keeps (those
//! ClangBuildAnalyzer reads: `ExecuteCompiler`, `Frontend`, `Backend`,
//! `Source`, `ParseTemplate`, `ParseClass`, `InstantiateClass`,
//! `InstantiateFunction`, `OptModule`, `OptFunction`), in file order, a
//! `b`/`e` pair counting once. The threshold and caps that decide which
//! events become spans do not change an event's id.
//!
//! **snapshot span_id** (8 bytes) of the `ct.ccache.snapshot` span that
//! metrics-as-spans puts into a build's trace (design.md §2 fix 7) = the first
//! 8 bytes of `SHA-256(field("ctotel/v1/ccache-snapshot") ‖ field(trace_id))`.
//! Its own domain tag keeps it apart from every event's span id whatever
//! the tree looks like (no index path is reserved for it).
//!
//! **CAS snapshot ids** (`trace_id`, `span_id`) of the `ct.cache.snapshot`
//! span of one CAS scan (metrics-as-spans, formats.md §3.6), which is alone in a
//! trace of its own: both come from one digest,
//! `SHA-256(field("ctotel/v1/cas-snapshot") ‖ field(host.name) ‖ field(cells) ‖ field(time))`,
//! **trace_id** = its first 16 bytes, **span_id** = its first 8 bytes (the
//! span id is the first half of the trace id; OTLP keeps the two id spaces
//! apart, and the trace holds exactly one span), where
//! * `host.name` is the resource `host.name` as UTF-8;
//! * `cells` are the cell paths of the stores in the snapshot, in formats.md §3.6
//!   kind order (obj, pch, pcm, exe), as raw OS bytes, joined with one NUL
//!   byte (a byte no path can contain, so the join is unambiguous);
//! * `time` is the scan time in Unix nanoseconds as a decimal ASCII number,
//!   e.g. `"1796010232235975950"`.
//!
//! Scanning the same cells on the same host at the same instant therefore
//! gives the same ids, so a snapshot the receiver re-sends is an exact
//! duplicate a backend can drop.
//!
//! **All-zero ids** are invalid in OTLP. If the truncated hash is all zeros,
//! one more field holding a counter `n` (u32 big-endian, `n` = 1, 2, …) is
//! appended to the same input and the hash is taken again, until the id is
//! not all zeros. (For the CAS snapshot the test is on the span id, the
//! shorter of the two: a non-zero span id makes the trace id non-zero.)
//!
//! Test vectors are in this module's tests (cross-checked with Python's
//! `hashlib`).

use std::borrow::Cow;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use sha2::digest::Output;
use sha2::{Digest, Sha256};

/// Domain separation tag of trace ids.
const TRACE_DOMAIN: &[u8] = b"ctotel/v1/trace";
/// Domain separation tag of span ids.
const SPAN_DOMAIN: &[u8] = b"ctotel/v1/span";
/// Domain separation tag of the clang child span ids.
const CLANG_SPAN_DOMAIN: &[u8] = b"ctotel/v1/clang-span";
/// Domain separation tag of the ccache snapshot span id.
const SNAPSHOT_DOMAIN: &[u8] = b"ctotel/v1/ccache-snapshot";
/// Domain separation tag of the CAS snapshot ids.
const CAS_SNAPSHOT_DOMAIN: &[u8] = b"ctotel/v1/cas-snapshot";

/// The trace id of one build.
pub fn trace_id(host: &str, canonical_dir: &[u8], timestamp: &str) -> [u8; 16] {
    let fields: [&[u8]; 4] = [TRACE_DOMAIN, host.as_bytes(), canonical_dir, timestamp.as_bytes()];
    let mut id = [0u8; 16];
    hash_nonzero(&fields, &mut id);
    id
}

/// The invocation directory as the trace id names it: canonical (symlinks
/// resolved, absolute), or as given when it cannot be canonicalised.
pub(crate) fn canonical_dir(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// The directory name, which is the invocation id (formats.md §1.2).
pub(crate) fn invocation_id(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A path's raw OS bytes, as the ids hash them.
#[cfg(unix)]
pub(crate) fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    Cow::Borrowed(p.as_os_str().as_bytes())
}

#[cfg(not(unix))]
pub(crate) fn path_bytes(p: &Path) -> Cow<'_, [u8]> {
    match p.to_string_lossy() {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}

/// The span id of the event at `index_path` (empty for the root) in `trace_id`.
pub fn span_id(trace_id: &[u8; 16], index_path: &[u32]) -> [u8; 8] {
    SpanIds::new(trace_id).span_id(index_path)
}

/// The span ids of one trace, for computing many: the hash state after the
/// two fields every span id of the trace shares is computed once and
/// cloned per span, and the index path is hashed without an allocation.
#[derive(Clone)]
pub struct SpanIds {
    prefix: Sha256,
}

impl SpanIds {
    pub fn new(trace_id: &[u8; 16]) -> Self {
        let mut prefix = Sha256::new();
        update_field(&mut prefix, SPAN_DOMAIN);
        update_field(&mut prefix, trace_id);
        Self { prefix }
    }

    /// [`span_id`] of the event at `index_path`.
    pub fn span_id(&self, index_path: &[u32]) -> [u8; 8] {
        let mut hasher = self.prefix.clone();
        // field(index_path): its byte length, then the u32s big-endian,
        // gathered in chunks so that the hasher sees few, larger updates.
        hasher.update(((index_path.len() as u64) * 4).to_be_bytes());
        let mut chunk = [0u8; 64];
        for indexes in index_path.chunks(chunk.len() / 4) {
            for (dst, index) in chunk.chunks_exact_mut(4).zip(indexes) {
                dst.copy_from_slice(&index.to_be_bytes());
            }
            hasher.update(&chunk[..indexes.len() * 4]);
        }
        let mut id = [0u8; 8];
        finish_nonzero(hasher, &mut id);
        id
    }
}

/// The span id of the clang event `ordinal` of the compile rule at
/// `index_path` in `trace_id`.
pub fn clang_span_id(trace_id: &[u8; 16], index_path: &[u32], ordinal: u32) -> [u8; 8] {
    let path: Vec<u8> = index_path.iter().flat_map(|i| i.to_be_bytes()).collect();
    let fields: [&[u8]; 4] = [CLANG_SPAN_DOMAIN, trace_id, &path, &ordinal.to_be_bytes()];
    let mut id = [0u8; 8];
    hash_nonzero(&fields, &mut id);
    id
}

/// The span id of the build's `ct.ccache.snapshot` span in `trace_id`.
pub fn snapshot_span_id(trace_id: &[u8; 16]) -> [u8; 8] {
    let fields: [&[u8]; 2] = [SNAPSHOT_DOMAIN, trace_id];
    let mut id = [0u8; 8];
    hash_nonzero(&fields, &mut id);
    id
}

/// `(trace_id, span_id)` of the `ct.cache.snapshot` span of a CAS scan of
/// `cells` (already in kind order) on `host` at `time_unix_nano`.
pub fn cas_snapshot_ids(host: &str, cells: &[&Path], time_unix_nano: u64) -> ([u8; 16], [u8; 8]) {
    let mut joined = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            joined.push(0);
        }
        joined.extend_from_slice(cell.as_os_str().as_bytes());
    }
    let time = time_unix_nano.to_string();
    let mut base = Sha256::new();
    for field in [CAS_SNAPSHOT_DOMAIN, host.as_bytes(), &joined, time.as_bytes()] {
        update_field(&mut base, field);
    }
    let mut span_id = [0u8; 8];
    let digest = nonzero_digest(base, span_id.len());
    let mut trace_id = [0u8; 16];
    trace_id.copy_from_slice(&digest[..16]);
    span_id.copy_from_slice(&digest[..8]);
    (trace_id, span_id)
}

/// Fills `out` with the leading bytes of the hash of `fields`, re-hashing
/// with an appended counter field while the result is all zeros.
fn hash_nonzero(fields: &[&[u8]], out: &mut [u8]) {
    let mut base = Sha256::new();
    for field in fields {
        update_field(&mut base, field);
    }
    finish_nonzero(base, out);
}

/// Fills `out` with the leading bytes of the hash `base` has been fed,
/// re-hashing with an appended counter field while they are all zeros.
fn finish_nonzero(base: Sha256, out: &mut [u8]) {
    let digest = nonzero_digest(base, out.len());
    out.copy_from_slice(&digest[..out.len()]);
}

/// The hash `base` has been fed, taken again with an appended counter field
/// while its first `prefix` bytes are all zeros.
fn nonzero_digest(base: Sha256, prefix: usize) -> Output<Sha256> {
    let mut digest = base.clone().finalize();
    let mut counter: u32 = 0;
    while digest[..prefix].iter().all(|b| *b == 0) {
        // 2^32 consecutive all-zero truncations cannot happen with SHA-256;
        // wrapping keeps the loop free of overflow panics regardless.
        counter = counter.wrapping_add(1);
        let mut hasher = base.clone();
        update_field(&mut hasher, &counter.to_be_bytes());
        digest = hasher.finalize();
    }
    digest
}

fn update_field(hasher: &mut Sha256, field: &[u8]) {
    hasher.update((field.len() as u64).to_be_bytes());
    hasher.update(field);
}

/// Lower-case hex of an id, as OTLP/JSON and `ct.invocation_id` on ccache
/// metrics spell it.
pub fn to_hex(id: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(id.len() * 2);
    for b in id {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every expected value below was computed by this implementation AND,
    // independently, by a one-off Python 3.11 script using only hashlib and
    // struct (length prefix `struct.pack(">Q", len(f))`, path elements
    // `struct.pack(">I", i)`); both agreed byte for byte.

    #[test]
    fn trace_id_vectors() {
        let cases: [(&str, &[u8], &str, &str); 3] = [
            (
                "vm",
                b"/home/dev/runs/01-geom-shake-cold/diag/20261130T034340-24175",
                "2026-11-30T03:43:45.418084+00:00",
                "0f3d7890ecf972a576c8476ff3fb263a",
            ),
            ("", b"", "", "b1d90b22e5d462a9a1357adecd18d508"),
            (
                "build-host-01.example",
                b"/var/tmp/ct/20260101T000000-1",
                "2026-01-01T00:00:00+00:00",
                "5bf301b232d4ceda5a807f3d6a3c2faa",
            ),
        ];
        for (host, dir, ts, want) in cases {
            assert_eq!(
                to_hex(&trace_id(host, dir, ts)),
                want,
                "trace_id({host:?}, {dir:?}, {ts:?})"
            );
        }
    }

    #[test]
    fn span_id_vectors() {
        let tid = trace_id(
            "vm",
            b"/home/dev/runs/01-geom-shake-cold/diag/20261130T034340-24175",
            "2026-11-30T03:43:45.418084+00:00",
        );
        let cases: [(&[u32], &str); 4] = [
            (&[], "5e65710d95e8d4b2"),
            (&[0], "6403bbd657236d24"),
            (&[4, 2], "394a0814fc644676"),
            (&[4294967295, 0, 7], "599da7edcf07a857"),
        ];
        for (path, want) in cases {
            assert_eq!(to_hex(&span_id(&tid, path)), want, "span_id({path:?})");
        }
    }

    #[test]
    fn span_ids_of_one_trace_match_span_id() {
        let tid = [0x5a; 16];
        let ids = SpanIds::new(&tid);
        let long: Vec<u32> = (0..40).map(|i| i * 7919).collect();
        for path in [
            &[][..],
            &[0],
            &[4, 2],
            &[u32::MAX, 0, 7],
            &long[..16],
            &long[..17],
            &long,
        ] {
            let mut bytes = Vec::new();
            for i in path {
                bytes.extend_from_slice(&i.to_be_bytes());
            }
            let mut want = [0u8; 8];
            hash_nonzero(&[SPAN_DOMAIN, &tid, &bytes], &mut want);
            assert_eq!(ids.span_id(path), want, "{path:?}");
        }
    }

    #[test]
    fn snapshot_span_id_vectors() {
        let tid = trace_id(
            "vm",
            b"/home/dev/runs/01-geom-shake-cold/diag/20261130T034340-24175",
            "2026-11-30T03:43:45.418084+00:00",
        );
        assert_eq!(to_hex(&snapshot_span_id(&tid)), "fa13629f643d62ed");
        assert_eq!(to_hex(&snapshot_span_id(&[0; 16])), "0a90c742d54997c3");
        // Distinct from the root's and any event's id in the same trace.
        assert_ne!(snapshot_span_id(&tid), span_id(&tid, &[]));
        assert_ne!(snapshot_span_id(&tid), span_id(&tid, &[u32::MAX]));
    }

    #[test]
    fn clang_span_id_vectors() {
        // Python: sha256(f(b"ctotel/v1/clang-span") + f(tid)
        //   + f(b"".join(pack(">I", i) for i in path)) + f(pack(">I", o)))[:8]
        let tid = trace_id(
            "vm",
            b"/home/dev/runs/01-geom-shake-cold/diag/20261130T034340-24175",
            "2026-11-30T03:43:45.418084+00:00",
        );
        assert_eq!(to_hex(&tid), "0f3d7890ecf972a576c8476ff3fb263a");
        assert_eq!(to_hex(&clang_span_id(&tid, &[4, 2], 0)), "55b1bc177fadabc1");
        assert_eq!(to_hex(&clang_span_id(&tid, &[4, 2], 17)), "a6c77e5d62361a7c");
        assert_eq!(to_hex(&clang_span_id(&[0; 16], &[], 0)), "d54e0a0b81e91c78");
        assert_ne!(clang_span_id(&tid, &[4, 2], 0), span_id(&tid, &[4, 2, 0]));
    }

    #[test]
    fn cas_snapshot_vector_matches_independent_computation() {
        // Expected value computed independently with Python's hashlib:
        //   f = lambda b: struct.pack(">Q", len(b)) + b
        //   sha256(f(b"ctotel/v1/cas-snapshot") + f(b"vm")
        //          + f(b"/p/cas-objdir/v\x00/p/cas-exedir/v") + f(b"1796010232235975950"))
        let (t, s) = cas_snapshot_ids(
            "vm",
            &[Path::new("/p/cas-objdir/v"), Path::new("/p/cas-exedir/v")],
            1_796_010_232_235_975_950,
        );
        assert_eq!(to_hex(&t), "cd03755e8e8ef6821e2f238b19652ae9");
        assert_eq!(to_hex(&s), "cd03755e8e8ef682");
    }

    #[test]
    fn cas_snapshot_inputs_matter_and_are_unambiguous() {
        let ids = |host: &str, cells: &[&str], time: u64| {
            let cells: Vec<&Path> = cells.iter().map(Path::new).collect();
            cas_snapshot_ids(host, &cells, time)
        };
        let a = ids("h", &["/a", "/b"], 1);
        assert_eq!(a, ids("h", &["/a", "/b"], 1));
        assert_ne!(a, ids("h", &["/a/b"], 1));
        assert_ne!(a, ids("h", &["/b", "/a"], 1));
        assert_ne!(a, ids("h", &["/a", "/b"], 2));
        assert_ne!(a, ids("g", &["/a", "/b"], 1));
        assert!(a.0.iter().any(|b| *b != 0));
    }

    #[test]
    fn fields_are_unambiguous() {
        // Moving bytes between adjacent fields must change the id.
        assert_ne!(trace_id("ab", b"c", "t"), trace_id("a", b"bc", "t"));
        let tid = [7u8; 16];
        assert_ne!(
            span_id(&tid, &[1, 2]),
            span_id(&tid, &[0x0000_0001_u32 << 16 | 2])
        );
    }

    #[test]
    fn ids_are_stable_and_nonzero() {
        let a = trace_id("h", b"/d", "2026-11-30T03:43:45+00:00");
        let b = trace_id("h", b"/d", "2026-11-30T03:43:45+00:00");
        assert_eq!(a, b);
        assert!(a.iter().any(|x| *x != 0));
        assert_eq!(span_id(&a, &[3, 1]), span_id(&b, &[3, 1]));
        assert_ne!(span_id(&a, &[3, 1]), span_id(&a, &[1, 3]));
    }

    #[test]
    fn hex_is_lower_case() {
        assert_eq!(to_hex(&[0x00, 0xab, 0x0f, 0xf0]), "00ab0ff0");
    }
}
