//! Reading one untrusted input file within the size limit: the timing
//! document ([`read_bounded`]) and the side files ([`read_side_file`]).
//!
//! Every input is opened with [`open_without_blocking`]: the receiver names
//! paths that other processes own, and a FIFO there would otherwise hold the
//! call in `open(2)`, where no cancel token can reach it. Nor is a symbolic
//! link followed in a file's own name (`O_NOFOLLOW`): whoever writes a build
//! directory could otherwise point `timing.json` or a side file at any file
//! the collector may read and have it sent. The files of a build are opened
//! relative to its directory ([`InvocationDir`]), itself opened without
//! following a symlink, so swapping the directory for a link between the
//! receiver's check and the read cannot redirect them either.

#[allow(unsafe_code)] // madvise(2)
pub(crate) mod pages;
mod parallel;

pub use parallel::SplitScan;

use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::error::Error;
use crate::pytext::complete_lines;
use crate::retain::Kept;
use crate::warnings::Warnings;

/// Reads the whole regular file at `path` in one allocation, refusing files
/// larger than `max_bytes`.
///
/// The size is checked on the open descriptor before reading, so a huge file
/// costs nothing; the read itself is capped too, because a file that grows
/// after the check (a build still writing, a hostile writer) must not get
/// past the limit either. Anything but a regular file (a FIFO, a device, a
/// directory) is an I/O error, found without waiting (see
/// [`open_without_blocking`]).
pub fn read_bounded(path: &Path, max_bytes: u64) -> Result<Vec<u8>, Error> {
    read_bounded_in(None, path, max_bytes)
}

/// [`read_bounded`] of a file that must belong to the user `owner` (when
/// given), checked on the open descriptor: a file that belongs to anyone
/// else is refused unread (`PermissionDenied`). For files a build names by
/// path anywhere on the host (clang's time traces, next to the targets in
/// `timing.json`): a build's owner could otherwise name another user's
/// files the collector can read (issue 22, defect 2).
pub fn read_bounded_owned_by(path: &Path, max_bytes: u64, owner: Option<u32>) -> Result<Vec<u8>, Error> {
    use std::os::unix::fs::MetadataExt;
    let (partial, ()) = read_bounded_partial_reserving(None, path, max_bytes, 0, |file, _, bytes| {
        if let Some(uid) = owner {
            match file.metadata() {
                Ok(meta) if meta.uid() == uid => {}
                Ok(meta) => {
                    let why = format!(
                        "owned by uid {}, not by the build's owner (uid {uid}); not read",
                        meta.uid()
                    );
                    let error = Some(io::Error::new(io::ErrorKind::PermissionDenied, why));
                    return (
                        Partial {
                            bytes: Vec::new(),
                            error,
                        },
                        (),
                    );
                }
                Err(error) => {
                    return (
                        Partial {
                            bytes: Vec::new(),
                            error: Some(error),
                        },
                        (),
                    )
                }
            }
        }
        (read_pieces(file, bytes, max_bytes, &mut |_| {}), ())
    })?;
    complete(path, partial)
}

/// [`read_bounded`], with `path` opened relative to `dir` when it names a
/// file of that directory (see [`InvocationDir::open_file`]).
pub fn read_bounded_in(dir: Option<&InvocationDir>, path: &Path, max_bytes: u64) -> Result<Vec<u8>, Error> {
    read_bounded_reserving(dir, path, max_bytes, 0)
}

/// [`read_bounded_in`] into a buffer with room for `spare_quarters`
/// quarters of the file's size past its end: a caller that reuses the
/// buffer for a larger output then writes it into memory the read has
/// already faulted in (reserved but untouched memory costs no RSS).
pub fn read_bounded_reserving(
    dir: Option<&InvocationDir>,
    path: &Path,
    max_bytes: u64,
    spare_quarters: u64,
) -> Result<Vec<u8>, Error> {
    read_bounded_scanning(dir, path, max_bytes, spare_quarters, &mut |_| {})
}

/// [`read_bounded_reserving`] that reads the file in pieces of
/// `SCAN_PIECE` bytes and calls `scan` with everything read so far after
/// each: `scan` sees every byte while it is still in the CPU's cache.
pub fn read_bounded_scanning(
    dir: Option<&InvocationDir>,
    path: &Path,
    max_bytes: u64,
    spare_quarters: u64,
    scan: &mut dyn FnMut(&[u8]),
) -> Result<Vec<u8>, Error> {
    let (partial, ()) =
        read_bounded_partial_reserving(dir, path, max_bytes, spare_quarters, |file, _, bytes| {
            (read_pieces(file, bytes, max_bytes, scan), ())
        })?;
    complete(path, partial)
}

/// [`read_bounded_scanning`] for a scan that can be split: a file of at
/// least 8 MiB is read in two halves at once, each scanned by its own
/// thread (see `input::parallel`); the bytes and the conclusions are those
/// of the sequential read.
pub fn read_bounded_split_scanning<S: SplitScan>(
    dir: Option<&InvocationDir>,
    path: &Path,
    max_bytes: u64,
    spare_quarters: u64,
) -> Result<(Vec<u8>, S), Error> {
    let (partial, scan) =
        read_bounded_partial_reserving(dir, path, max_bytes, spare_quarters, |file, len, bytes| {
            let read = parallel::read_scanning::<S>(file, len, bytes, max_bytes);
            (read.partial, read.scan)
        })?;
    Ok((complete(path, partial)?, scan))
}

/// The bytes of a read that must be complete: a read error is the error.
fn complete(path: &Path, partial: Partial) -> Result<Vec<u8>, Error> {
    match partial.error {
        None => Ok(partial.bytes),
        Some(source) => Err(Error::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// What [`read_bounded_partial`] got: the bytes read, and the read error
/// that stopped it early, if any.
#[derive(Debug)]
pub struct Partial {
    pub bytes: Vec<u8>,
    pub error: Option<io::Error>,
}

/// Like [`read_bounded`], but a read error after a successful open keeps the
/// bytes read so far (side files such as the ccache statslog are counted up
/// to an I/O error, as compiletools does). Open, stat, type and size
/// failures are still errors.
pub fn read_bounded_partial(
    dir: Option<&InvocationDir>,
    path: &Path,
    max_bytes: u64,
) -> Result<Partial, Error> {
    let (partial, ()) = read_bounded_partial_reserving(dir, path, max_bytes, 0, |file, _, bytes| {
        (read_pieces(file, bytes, max_bytes, &mut |_| {}), ())
    })?;
    Ok(partial)
}

/// Opens and checks `path`, reserves the buffer and has `read` fill it:
/// `read` gets the open file, its size by `fstat` (at most `max_bytes`) and
/// the buffer (see [`reserve_buffer`]); what it read is checked against
/// `max_bytes` again, since the file may have grown.
fn read_bounded_partial_reserving<T>(
    dir: Option<&InvocationDir>,
    path: &Path,
    max_bytes: u64,
    spare_quarters: u64,
    read: impl FnOnce(&File, u64, Vec<u8>) -> (Partial, T),
) -> Result<(Partial, T), Error> {
    let io_err = |source: io::Error| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match dir {
        Some(dir) => dir.open_file(path),
        None => open_without_blocking(path),
    }
    .map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() {
        return Err(io_err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file but {}; not read", type_name(meta.file_type())),
        )));
    }
    if meta.len() > max_bytes {
        return Err(too_big(path, meta.len(), max_bytes));
    }
    let spare = (meta.len() / 4).saturating_mul(spare_quarters);
    // A buffer with room to spare becomes the output: one kept from the
    // previous build's output has its pages faulted in already.
    let kept = (spare > 0).then_some(&crate::retain::BYTES);
    let bytes = reserve_buffer(meta.len(), spare, kept).map_err(io_err)?;
    let (partial, extra) = read(&file, meta.len(), bytes);
    if partial.bytes.len() as u64 > max_bytes {
        return Err(too_big(path, partial.bytes.len() as u64, max_bytes));
    }
    Ok((partial, extra))
}

/// Opens `path` for reading without ever waiting in `open(2)`.
///
/// `O_NONBLOCK` makes opening a FIFO return at once instead of waiting for a
/// writer (forever, if none comes); for a regular file it changes nothing,
/// since reads from one never block in the non-blocking sense. The caller
/// checks the type on the open descriptor (`fstat`), so there is no window
/// between a type check and the open for the path to be swapped.
///
/// `O_NOFOLLOW` refuses a symbolic link in the last component of `path`
/// (an error naming it, see [`explain_symlink`]); links in the directories
/// above it are followed: those are the roots the receiver was configured
/// with, or were checked by it.
pub fn open_without_blocking(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(explain_symlink)
}

/// [`open_without_blocking`] with the file's directory opened first, itself
/// without following a symbolic link (`O_NOFOLLOW | O_DIRECTORY`), and the
/// file relative to it: a directory swapped for a link (to another user's)
/// between the receiver's checks and this open redirects nothing (issue
/// 22). Used for configured paths in build trees (the build graphs).
pub fn open_in_own_directory(path: &Path) -> io::Result<File> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return open_without_blocking(path);
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let dir = rustix::fs::open(
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| {
        // Linux answers ENOTDIR or ELOOP for a link with these flags.
        if std::fs::symlink_metadata(parent).is_ok_and(|m| m.file_type().is_symlink()) {
            explain_symlink(io::Error::from_raw_os_error(libc::ELOOP))
        } else {
            e.into()
        }
    })?;
    rustix::fs::openat(
        &dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map(File::from)
    .map_err(|e| explain_symlink(e.into()))
}

/// `O_NOFOLLOW` reports a symlink as `ELOOP`, which reads like a link
/// loop; the error says what happened instead, and is recognisable with
/// [`is_refused_symlink`].
pub fn explain_symlink(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        io::Error::new(io::ErrorKind::InvalidInput, SymlinkRefused)
    } else {
        e
    }
}

/// The error of a symbolic link that was not followed.
#[derive(Debug)]
pub struct SymlinkRefused;

impl std::fmt::Display for SymlinkRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a symbolic link (or a link loop); not followed, so nothing outside the build is read")
    }
}

impl std::error::Error for SymlinkRefused {}

/// Whether an open failed because the name is a symbolic link.
pub fn is_refused_symlink(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<SymlinkRefused>())
}

/// An invocation directory, opened once for the files read from it.
///
/// Opened with `O_NOFOLLOW`: the directory itself must not be a symbolic
/// link (the receiver's discovery refuses those too, but a build's owner can
/// swap one in after it looked). Its files are then opened with `openat(2)`
/// relative to this descriptor, so they are entries of the very directory
/// that was checked, whatever happens to its path meanwhile.
#[derive(Debug)]
pub struct InvocationDir {
    path: PathBuf,
    fd: File,
}

impl InvocationDir {
    /// Opens the directory at `path`, refusing a symbolic link.
    pub fn open(path: &Path) -> io::Result<Self> {
        let fd = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| {
                // Linux answers ENOTDIR or ELOOP for a link with these flags.
                let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
                if link {
                    explain_symlink(io::Error::from_raw_os_error(libc::ELOOP))
                } else {
                    e
                }
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            fd,
        })
    }

    /// The user owning the directory (the build's owner: ct-cake made it),
    /// from the open descriptor.
    pub fn owner(&self) -> Option<u32> {
        use std::os::unix::fs::MetadataExt;
        self.fd.metadata().ok().map(|m| m.uid())
    }

    /// Opens `path` for reading like [`open_without_blocking`]; a file of
    /// this directory (`<dir>/<name>`) by name relative to it, anything else
    /// (a captured copy, a configured statslog) by its path.
    pub fn open_file(&self, path: &Path) -> io::Result<File> {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) if parent == self.path => rustix::fs::openat(
                &self.fd,
                name,
                OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map(File::from)
            .map_err(|e| explain_symlink(e.into())),
            _ => open_without_blocking(path),
        }
    }
}

/// What a non-regular file is, for a warning.
fn type_name(t: FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "an unknown file type"
    }
}

/// How a side file is called in its warnings.
#[derive(Debug, Clone, Copy)]
pub struct SideFile {
    /// What it is, e.g. `"ccache statslog"`.
    pub name: &'static str,
    /// What its parser does with the lines read before a read error, e.g.
    /// `"counting"`.
    pub partial_use: &'static str,
}

/// Reads a side file (ccache statslog, rule outcomes log) the way
/// compiletools reads one: it never fails. A missing file is `None`
/// silently (the build simply has none); an unreadable file, a directory or
/// one over `max_bytes` is `None` with a warning (the receiver was told it
/// holds data for the build, so losing it is worth a line); a read error in
/// the middle keeps the complete lines read before it, with a warning.
pub fn read_side_file(
    dir: Option<&InvocationDir>,
    path: &Path,
    max_bytes: u64,
    file: SideFile,
    warnings: &mut Warnings,
) -> Option<Vec<u8>> {
    side_file_bytes(path, read_bounded_partial(dir, path, max_bytes), file, warnings)
}

/// What [`read_side_file`] keeps of the outcome of reading `path`.
fn side_file_bytes(
    path: &Path,
    read: Result<Partial, Error>,
    file: SideFile,
    warnings: &mut Warnings,
) -> Option<Vec<u8>> {
    let partial = match read {
        Ok(partial) => partial,
        Err(Error::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            warnings.push(format!("{} ignored: {e}", file.name));
            return None;
        }
    };
    let mut bytes = partial.bytes;
    if let Some(e) = &partial.error {
        warnings.push(format!(
            "{}: read error after {} bytes, {} the complete lines before it: {e}",
            path.display(),
            bytes.len(),
            file.partial_use
        ));
        let complete = complete_lines(&bytes).len();
        bytes.truncate(complete);
    }
    Some(bytes)
}

/// One allocation sized for `expected_len` plus one byte plus `spare`
/// bytes (or the buffer in `kept`, if it holds one large enough for the
/// file), advised to use huge pages. The only error is a failed
/// allocation.
fn reserve_buffer(expected_len: u64, spare: u64, kept: Option<&Kept<u8>>) -> io::Result<Vec<u8>> {
    // One spare byte lets a file that grew past the limit be detected without
    // a second allocation.
    let capacity =
        usize::try_from(expected_len.saturating_add(1).saturating_add(spare)).unwrap_or(usize::MAX);
    // A kept buffer need only hold the file: the output grows it if it
    // must (it has the size of the previous output; see crate::retain on
    // why it is not grown here).
    let file_capacity = usize::try_from(expected_len.saturating_add(1)).unwrap_or(usize::MAX);
    let mut bytes = kept.map_or_else(Vec::new, |k| k.take(file_capacity, capacity));
    if bytes.capacity() < file_capacity {
        bytes
            .try_reserve_exact(capacity)
            .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?;
    }
    pages::advise_huge_pages(&mut bytes);
    Ok(bytes)
}

/// Reads at most `max_bytes + 1` bytes from `reader` into `bytes` (from
/// [`reserve_buffer`]; its contents are read over), in pieces of
/// `SCAN_PIECE` bytes, calling `scan` with all bytes read so far after
/// each. Read errors end up in [`Partial::error`].
fn read_pieces(
    reader: impl Read,
    mut bytes: Vec<u8>,
    max_bytes: u64,
    scan: &mut dyn FnMut(&[u8]),
) -> Partial {
    // Pieces go into the reserved capacity; only a file that grew since
    // its size was taken makes the buffer grow.
    let mut reader = reader.take(max_bytes.saturating_add(1));
    let piece = usize::try_from(SCAN_PIECE).unwrap_or(usize::MAX);
    // `bytes[..filled]` is the file so far; past it, a kept buffer still
    // has the previous output (read over, never shown: cut off at the end).
    let mut filled = 0;
    let error = loop {
        if bytes.capacity() == filled {
            if let Err(e) = bytes.try_reserve_exact(piece) {
                break Some(io::Error::new(io::ErrorKind::OutOfMemory, e));
            }
        }
        let want = piece.min(bytes.capacity() - filled);
        // Only memory never written is zeroed before the read writes it (a
        // kept buffer's is not: another pass over 60 MB otherwise); std's
        // read_to_end, which avoids it, cannot be told to stop every piece
        // without restarting its small first reads.
        if bytes.len() < filled + want {
            bytes.resize(filled + want, 0);
        }
        let Some(into) = bytes.get_mut(filled..filled + want) else {
            break None;
        };
        match reader.read(into) {
            Ok(0) => break None,
            Ok(n) => {
                filled += n;
                scan(bytes.get(..filled).unwrap_or_default());
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Some(e),
        }
    };
    bytes.truncate(filled);
    Partial { bytes, error }
}

/// The piece [`read_bounded_scanning`] reads at a time: small enough to
/// stay in a core's L2 cache until it is scanned, large enough that the
/// calls cost nothing.
const SCAN_PIECE: u64 = 256 << 10;

fn too_big(path: &Path, size: u64, max: u64) -> Error {
    Error::LimitExceeded {
        path: path.to_path_buf(),
        message: format!("file is {size} bytes, limit is {max}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sequential read as one call, as the tests below knew it.
    fn read_capped(
        reader: impl Read,
        expected_len: u64,
        spare: u64,
        max_bytes: u64,
        kept: Option<&Kept<u8>>,
        scan: &mut dyn FnMut(&[u8]),
    ) -> io::Result<Partial> {
        let bytes = reserve_buffer(expected_len, spare, kept)?;
        Ok(read_pieces(reader, bytes, max_bytes, scan))
    }

    #[test]
    fn reads_small_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"hello").unwrap();
        assert_eq!(read_bounded(&p, 5).unwrap(), b"hello");
    }

    #[test]
    fn refuses_large_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"hello!").unwrap();
        assert!(matches!(read_bounded(&p, 5), Err(Error::LimitExceeded { .. })));
    }

    #[test]
    fn read_error_keeps_what_was_read() {
        /// Hands out its bytes, then fails.
        struct Failing<'a>(&'a [u8]);
        impl Read for Failing<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0.is_empty() {
                    return Err(io::Error::other("device gone"));
                }
                let n = buf.len().min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let p = read_capped(Failing(b"abc\nde"), 6, 0, 100, None, &mut |_| {}).unwrap();
        assert_eq!(p.bytes, b"abc\nde");
        assert_eq!(p.error.map(|e| e.to_string()), Some("device gone".to_owned()));
        let p = read_capped(&b"abcdef"[..], 6, 0, 3, None, &mut |_| {}).unwrap();
        assert_eq!(p.bytes, b"abcd", "one byte past the cap shows the overrun");
        assert!(p.error.is_none());
    }

    #[test]
    fn a_kept_buffer_is_read_into_and_cut_to_the_file() {
        let kept = Kept::new();
        let old = vec![0xAA; crate::retain::MIN_CAPACITY];
        let ptr = old.as_ptr();
        kept.give(old);
        let mut seen = 0;
        let p = read_capped(&b"new text"[..], 8, 2, 100, Some(&kept), &mut |b| seen = b.len()).unwrap();
        assert_eq!(p.bytes, b"new text", "nothing of the old contents");
        assert_eq!(p.bytes.as_ptr(), ptr, "the kept memory was used");
        assert_eq!(seen, 8);
        // Nothing kept (taken above): a new buffer, with the spare room.
        let p = read_capped(&b"again"[..], 5, 20, 100, Some(&kept), &mut |_| {}).unwrap();
        assert_eq!(p.bytes, b"again");
        assert!(p.bytes.capacity() >= 26);
    }

    const SIDE: SideFile = SideFile {
        name: "side log",
        partial_use: "parsing",
    };

    #[test]
    fn side_file_missing_is_silent_and_unreadable_is_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Warnings::new();
        assert_eq!(
            read_side_file(None, &dir.path().join("nope"), 5, SIDE, &mut w),
            None
        );
        assert!(w.is_empty());
        assert_eq!(read_side_file(None, dir.path(), 5, SIDE, &mut w), None);
        let p = dir.path().join("big");
        std::fs::write(&p, b"123456").unwrap();
        assert_eq!(read_side_file(None, &p, 5, SIDE, &mut w), None);
        let lines = w.into_lines();
        assert_eq!(lines.len(), 2);
        assert!(
            lines.iter().all(|l| l.starts_with("side log ignored: ")),
            "{lines:?}"
        );
        let mut w = Warnings::new();
        assert_eq!(
            read_side_file(None, &p, 6, SIDE, &mut w).as_deref(),
            Some(&b"123456"[..])
        );
        assert!(w.is_empty());
    }

    #[test]
    fn side_file_read_error_keeps_complete_lines() {
        let read = Ok(Partial {
            bytes: b"a\nb\nhalf".to_vec(),
            error: Some(io::Error::other("device gone")),
        });
        let mut w = Warnings::new();
        let kept = side_file_bytes(Path::new("/x/log"), read, SIDE, &mut w);
        assert_eq!(kept.as_deref(), Some(&b"a\nb\n"[..]));
        assert_eq!(
            w.into_lines(),
            ["/x/log: read error after 8 bytes, parsing the complete lines before it: device gone"]
        );
    }

    #[test]
    fn a_file_is_opened_relative_to_its_directory_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("build.ninja"), b"x").unwrap();
        assert!(open_in_own_directory(&real.join("build.ninja")).is_ok());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let err = open_in_own_directory(&link.join("build.ninja")).unwrap_err();
        assert!(is_refused_symlink(&err), "{err}");
    }

    #[test]
    fn missing_file_and_directory_are_io_errors() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_bounded(&dir.path().join("nope"), 5),
            Err(Error::Io { .. })
        ));
        assert!(matches!(read_bounded(dir.path(), 5), Err(Error::Io { .. })));
    }
}
