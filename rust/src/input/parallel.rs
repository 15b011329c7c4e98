//! Reading a large file with two threads at once, each scanning the parts
//! it read while they are still in its core's cache.
//!
//! Why: for the 100k-rule timing.json (61 MB) the read — the kernel copying
//! the page cache into the buffer, plus the UTF-8 and backslash scan — was
//! ~23 ms on one core, a sixth of `process_build`. Both parts are bound by
//! one core's copying speed, so a second core nearly halves them.
//!
//! Only the ordinary case is handled here: the file still has the size
//! `fstat` gave, every part is read in full and nothing fails. Anything
//! else (a read that ends early: the file shrank; a byte past the end: it
//! grew; a read error; a thread that failed) drops what was read and reads
//! the file again from its start, one piece after the other
//! ([`super::read_pieces`]), so every unusual case keeps exactly the
//! sequential read's behaviour (its caps, its partial bytes, its error)
//! instead of a second copy of it here.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use super::{read_pieces, Partial, SCAN_PIECE};

/// Files smaller than this are read by one thread.
///
/// Starting and joining a thread costs ~0.05 ms; at the ~2.6 GB/s one core
/// reads and scans here, 8 MiB take ~3 ms, so the split saves ~1.5 ms from
/// this size on and more above it. Below it the absolute gain is too small
/// to be worth a second thread competing with the receiver's other work.
pub(crate) const MIN_SPLIT_BYTES: u64 = 8 << 20;

/// A scan of a file's bytes that can be done in parts, the first from the
/// start and each other from an arbitrary cut, and joined afterwards (in
/// file order) into what one scan over the whole would have concluded.
pub trait SplitScan: Default + Send {
    /// How many bytes after the cut [`SplitScan::after_cut`] needs to see
    /// (fewer only when the part after the cut is shorter).
    const HEAD: usize;

    /// Checks the bytes of `read` (everything of this part read so far)
    /// that arrived since the last call.
    fn feed(&mut self, read: &[u8]);

    /// A scan of the part that starts at the cut, given its first bytes;
    /// the cut may fall anywhere, e.g. inside a multi-byte character.
    fn after_cut(head: &[u8]) -> Self;

    /// Joins `self`, the scan of `whole[..cut]`, and `second`, the scan of
    /// `whole[cut..]` begun with [`SplitScan::after_cut`], into the scan of
    /// `whole`.
    fn join(self, second: Self, whole: &[u8], cut: usize) -> Self;
}

/// How [`read_scanning`] read the file (for tests and measurements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadPath {
    /// One thread: the file is small (or larger than the limit).
    Sequential,
    /// Two threads, taking parts of the file in turn.
    Shared,
    /// Two threads began, something unusual happened, one thread read it all
    /// again.
    FellBack,
}

/// What [`read_scanning`] read and concluded.
pub(crate) struct Scanned<S> {
    pub partial: Partial,
    pub scan: S,
    // Only the tests ask which way the file was read.
    #[cfg_attr(not(test), allow(dead_code))]
    pub path: ReadPath,
}

/// Reads `file` (`expected_len` bytes by its `fstat`) into `bytes` (with
/// room for at least `expected_len + 1` bytes, see
/// [`super::reserve_buffer`]), at most `max_bytes + 1` of them, scanning
/// them as they arrive: by two threads at once from [`MIN_SPLIT_BYTES`]
/// on, otherwise (or when anything is unusual) one piece after the other.
pub(crate) fn read_scanning<S: SplitScan>(
    file: &File,
    expected_len: u64,
    bytes: Vec<u8>,
    max_bytes: u64,
) -> Scanned<S> {
    if expected_len < MIN_SPLIT_BYTES || expected_len > max_bytes || !crate::cores::second_core() {
        return sequential(file, bytes, max_bytes, ReadPath::Sequential);
    }
    match read_shared(file, expected_len, bytes) {
        Ok((bytes, scan)) => Scanned {
            partial: Partial { bytes, error: None },
            scan,
            path: ReadPath::Shared,
        },
        Err(bytes) => sequential(file, bytes, max_bytes, ReadPath::FellBack),
    }
}

/// The one-thread read from the start of the file, with a fresh scan.
///
/// `read_pieces` reads through the file's offset, which the positioned
/// reads of the parts never moved: a fall-back starts at byte 0.
fn sequential<S: SplitScan>(file: &File, bytes: Vec<u8>, max_bytes: u64, path: ReadPath) -> Scanned<S> {
    let mut scan = S::default();
    let partial = read_pieces(file, bytes, max_bytes, &mut |read| scan.feed(read));
    Scanned { partial, scan, path }
}

/// Reads the file's `len` bytes with two threads (this one and a scoped
/// one) taking [`CHUNK`]-byte parts in turn; the buffer and the joined
/// scan, or the buffer alone (contents unspecified) when the read was not
/// the ordinary case.
fn read_shared<S: SplitScan>(file: &File, len: u64, mut bytes: Vec<u8>) -> Result<(Vec<u8>, S), Vec<u8>> {
    let Ok(len) = usize::try_from(len) else {
        return Err(bytes);
    };
    // Only memory never written is zeroed: a kept buffer's old contents
    // (crate::retain) are read over, as the sequential read does.
    if bytes.len() < len {
        bytes.resize(len, 0);
    }
    let scans = match bytes.get_mut(..len) {
        Some(file_bytes) => read_chunks::<S>(file, file_bytes),
        None => None,
    };
    let Some(scans) = scans else {
        return Err(bytes);
    };
    if !at_end(file, len as u64) {
        return Err(bytes);
    }
    bytes.truncate(len);
    let scan = join_in_order(scans, &bytes);
    Ok((bytes, scan))
}

/// The part two threads take at a time. Parts, not halves: on a shared
/// machine the second thread may not get a core for a while, and the first
/// then reads on instead of waiting for it; at the end it waits at most for
/// the one part the other has (~1 ms at 2 MiB).
const CHUNK: usize = 2 << 20;

/// Reads `file_bytes.len()` bytes from offset 0 into `file_bytes`, one
/// [`CHUNK`] after the other as the two threads take them; the scan of
/// every chunk in file order, or `None` if any chunk was not read in full or
/// the thread could not be started or failed.
fn read_chunks<S: SplitScan>(file: &File, file_bytes: &mut [u8]) -> Option<Vec<S>> {
    let count = file_bytes.len().div_ceil(CHUNK);
    let chunks = Mutex::new(file_bytes.chunks_mut(CHUNK).enumerate());
    // Each thread's list is allocated here, room for every chunk, so the
    // helper allocates nothing for it: a thread's allocations can make
    // glibc create a malloc arena for it, kept for the rest of the process.
    let take_chunks = |mut scanned: Vec<(usize, S)>| -> Option<Vec<(usize, S)>> {
        loop {
            // Held only to take the next chunk; a poisoned lock (a panic in
            // the other thread) ends the read with a fall-back.
            let next = chunks.lock().ok()?.next();
            let Some((k, chunk)) = next else {
                return Some(scanned);
            };
            let offset = u64::try_from(k.checked_mul(CHUNK)?).ok()?;
            let scan = if k == 0 {
                read_part(file, chunk, offset, |_| S::default())?
            } else {
                read_part(file, chunk, offset, S::after_cut)?
            };
            scanned.push((k, scan));
        }
    };
    let theirs = Vec::with_capacity(count);
    let (mine, helpers) = std::thread::scope(|s| {
        let helper = std::thread::Builder::new()
            .name("ct-read-part".to_owned())
            .spawn_scoped(s, || take_chunks(theirs))
            .ok();
        let mine = take_chunks(Vec::with_capacity(count));
        // A joined thread's panic is handled here (no second panic from the
        // scope); reading has nothing that panics, but a fall-back is
        // cheaper than trusting that.
        (mine, helper.map(|h| h.join().ok().flatten()))
    });
    let theirs = match helpers {
        // No thread could be started: this one took every chunk.
        None => Vec::new(),
        Some(theirs) => theirs?,
    };
    let mut in_order: Vec<Option<S>> = std::iter::repeat_with(|| None).take(count).collect();
    for (k, scan) in mine?.into_iter().chain(theirs) {
        *in_order.get_mut(k)? = Some(scan);
    }
    in_order.into_iter().collect()
}

/// The scan of `whole` from the scans of its [`CHUNK`]s in file order.
fn join_in_order<S: SplitScan>(scans: Vec<S>, whole: &[u8]) -> S {
    let mut scans = scans.into_iter().enumerate();
    let mut joined = scans.next().map(|(_, first)| first).unwrap_or_default();
    for (k, scan) in scans {
        let cut = k.saturating_mul(CHUNK).min(whole.len());
        let end = cut.saturating_add(CHUNK).min(whole.len());
        joined = joined.join(scan, whole.get(..end).unwrap_or_default(), cut);
    }
    joined
}

/// Reads `part.len()` bytes at `offset` into `part` in pieces of
/// [`SCAN_PIECE`], feeding the scan made by `start` (from the part's first
/// [`SplitScan::HEAD`] bytes) after each piece while it is hot; `None` when
/// the file ended early or a read failed.
fn read_part<S: SplitScan>(
    file: &File,
    part: &mut [u8],
    offset: u64,
    start: impl FnOnce(&[u8]) -> S,
) -> Option<S> {
    let piece = usize::try_from(SCAN_PIECE).unwrap_or(usize::MAX);
    let head = S::HEAD.min(part.len());
    let mut start = Some(start);
    let mut scan: Option<S> = None;
    let mut filled = 0;
    while filled < part.len() {
        let end = filled.saturating_add(piece).min(part.len());
        let into = part.get_mut(filled..end)?;
        match file.read_at(into, offset + filled as u64) {
            Ok(0) => return None,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
        let read = part.get(..filled)?;
        if scan.is_none() && filled >= head {
            scan = start.take().map(|start| start(read));
        }
        if let Some(scan) = scan.as_mut() {
            scan.feed(read);
        }
    }
    scan
}

/// Whether `file` ends at `len`, as the sequential read finds by reading
/// until a read returns nothing: a file that grew since its `fstat` is not
/// the ordinary case (the sequential read applies the size limit to it).
fn at_end(file: &File, len: u64) -> bool {
    let mut probe = [0u8; 1];
    loop {
        match file.read_at(&mut probe, len) {
            Ok(0) => return true,
            Ok(_) => return false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::reserve_buffer;
    use super::*;
    use crate::retain::Kept;
    use crate::timing::{LenientText, TextScan};

    /// Bytes written over a text at an offset.
    type Edit<'a> = (usize, &'a [u8]);

    /// The path a file above the threshold takes here (`split`, or its
    /// fallback): one thread only when this process may use one CPU.
    fn path_here(split: ReadPath) -> ReadPath {
        if crate::cores::second_core() {
            split
        } else {
            ReadPath::Sequential
        }
    }

    /// A JSON-like text of `len` bytes (plain ASCII) with `edits` written
    /// over it at their offsets.
    fn text(len: usize, edits: &[Edit]) -> Vec<u8> {
        let mut t: Vec<u8> = b"{\"name\":\"src/a.cpp\"},\n"
            .iter()
            .copied()
            .cycle()
            .take(len)
            .collect();
        for &(at, bytes) in edits {
            t[at..at + bytes.len()].copy_from_slice(bytes);
        }
        t
    }

    fn write(dir: &Path, bytes: &[u8]) -> PathBuf {
        let p = dir.join("timing.json");
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Reads the file at `path` (said by `fstat` to have `expected_len`
    /// bytes) both ways, each from a descriptor of its own, asserts the
    /// same bytes, error and conclusions, and returns the way the split
    /// read went.
    fn same_as_sequential(path: &Path, expected_len: u64, max_bytes: u64) -> (ReadPath, Vec<u8>) {
        let buffer = || reserve_buffer(expected_len, 0, None).unwrap();
        let file = File::open(path).unwrap();
        let split = read_scanning::<TextScan>(&file, expected_len, buffer(), max_bytes);
        let mut scan = TextScan::default();
        let file = File::open(path).unwrap();
        let seq = read_pieces(&file, buffer(), max_bytes, &mut |read| scan.feed(read));
        assert_eq!(split.partial.bytes, seq.bytes, "the same bytes");
        assert_eq!(
            split.partial.error.map(|e| e.kind()),
            seq.error.map(|e| e.kind()),
            "the same error"
        );
        let len = seq.bytes.len();
        assert_eq!(split.scan.checked_all(len), scan.checked_all(len));
        if scan.checked_all(len) {
            assert_eq!(format!("{:?}", split.scan), format!("{scan:?}"));
        }
        let t = LenientText::from_scanned(split.partial.bytes.clone(), &split.scan);
        let s = LenientText::from_scanned(seq.bytes, &scan);
        assert_eq!(
            (&t.text, t.invalid_utf8, t.lone_surrogates),
            (&s.text, s.invalid_utf8, s.lone_surrogates)
        );
        (split.path, split.partial.bytes)
    }

    const BIG: usize = MIN_SPLIT_BYTES as usize + 12_345;

    #[test]
    fn a_large_file_is_read_by_two_threads_as_by_one() {
        let dir = tempfile::tempdir().unwrap();
        // A boundary between two chunks, in the middle of the file.
        let cut = 2 * CHUNK;
        let every_cut = |bytes: &'static [u8], back: usize| -> Vec<Edit> {
            (1..=BIG / CHUNK).map(|k| (k * CHUNK - back, bytes)).collect()
        };
        let euro_across_every_cut = every_cut("€".as_bytes(), 1);
        let emoji_across_every_cut = every_cut("😀".as_bytes(), 3);
        let cases: [(&str, &[Edit]); 11] = [
            ("plain ASCII", &[]),
            ("€ across the cut", &[(cut - 1, "€".as_bytes())]),
            ("😀 across the cut", &[(cut - 2, "😀".as_bytes())]),
            ("é ending at the cut", &[(cut - 2, "é".as_bytes())]),
            ("é starting at the cut", &[(cut, "é".as_bytes())]),
            ("an invalid byte at the cut", &[(cut, b"\xff")]),
            ("a sequence cut short before the cut", &[(cut - 2, b"\xe2\x82")]),
            ("a stray continuation at the cut", &[(cut, b"\x80")]),
            (
                "a lone surrogate escape after the cut",
                &[(cut + 1000, br"\udc80"), (cut - 3, "😀".as_bytes())],
            ),
            ("€ across every cut", &euro_across_every_cut),
            ("😀 across every cut", &emoji_across_every_cut),
        ];
        for (name, edits) in cases {
            let content = text(BIG, edits);
            let file = write(dir.path(), &content);
            let (path, bytes) = same_as_sequential(&file, BIG as u64, BIG as u64);
            assert_eq!(path, path_here(ReadPath::Shared), "{name}");
            assert_eq!(bytes, content, "{name}");
        }
    }

    #[test]
    fn a_last_chunk_of_two_bytes_is_joined_as_one_thread_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let len = 4 * CHUNK + 2;
        let cases: [(&str, &[Edit]); 3] = [
            ("€ across the last cut", &[(len - 3, "€".as_bytes())]),
            ("a file ending inside a character", &[(len - 2, b"\xe2\x82")]),
            ("two stray continuations at the end", &[(len - 2, b"\x80\x80")]),
        ];
        for (name, edits) in cases {
            let content = text(len, edits);
            let file = write(dir.path(), &content);
            let (path, bytes) = same_as_sequential(&file, len as u64, u64::MAX);
            assert_eq!((path, bytes), (path_here(ReadPath::Shared), content), "{name}");
        }
    }

    #[test]
    fn a_small_file_is_read_by_one_thread() {
        let dir = tempfile::tempdir().unwrap();
        let small = MIN_SPLIT_BYTES as usize - 1;
        let file = write(dir.path(), &text(small, &[(small / 2, "€".as_bytes())]));
        let (path, bytes) = same_as_sequential(&file, small as u64, u64::MAX);
        assert_eq!((path, bytes.len()), (ReadPath::Sequential, small));
    }

    #[test]
    fn a_file_that_changed_size_is_read_again_by_one_thread() {
        let dir = tempfile::tempdir().unwrap();
        let content = text(BIG, &[(BIG - 10, "é".as_bytes())]);
        let file = write(dir.path(), &content);
        // Grown since its fstat: everything is read, up to the limit's
        // one byte over (the caller then refuses it).
        let (path, bytes) = same_as_sequential(&file, BIG as u64 - 100, u64::MAX);
        assert_eq!((path, bytes.len()), (path_here(ReadPath::FellBack), BIG));
        let (path, bytes) = same_as_sequential(&file, BIG as u64 - 100, BIG as u64 - 50);
        assert_eq!((path, bytes.len()), (path_here(ReadPath::FellBack), BIG - 49));
        // Shrunk: the last chunk ends early.
        let (path, bytes) = same_as_sequential(&file, BIG as u64 + 100, u64::MAX);
        assert_eq!((path, bytes), (path_here(ReadPath::FellBack), content));
    }

    #[test]
    fn a_read_error_is_the_sequential_reads_error() {
        let dir = tempfile::tempdir().unwrap();
        // Reading a directory fails (EISDIR) at every offset.
        let (path, bytes) = same_as_sequential(dir.path(), BIG as u64, u64::MAX);
        assert_eq!((path, bytes.len()), (path_here(ReadPath::FellBack), 0));
    }

    #[test]
    fn a_kept_buffer_is_read_into_by_two_threads() {
        let dir = tempfile::tempdir().unwrap();
        let content = text(BIG, &[(BIG / 2, "€".as_bytes())]);
        let file = File::open(write(dir.path(), &content)).unwrap();
        let kept = Kept::new();
        // The previous output, longer than this file.
        kept.give(vec![0xAA; BIG + 4096]);
        let bytes = reserve_buffer(BIG as u64, 1, Some(&kept)).unwrap();
        let ptr = bytes.as_ptr();
        let read = read_scanning::<TextScan>(&file, BIG as u64, bytes, u64::MAX);
        assert_eq!(read.path, path_here(ReadPath::Shared));
        assert_eq!(read.partial.bytes.as_ptr(), ptr, "the kept memory was used");
        assert!(read.partial.bytes == content, "nothing of the old contents");
        assert!(read.scan.checked_all(BIG));
    }
}
