//! State shared by the per-kind scanners: cancellation polling, anomaly
//! bookkeeping, and the single-level directory listings of formats.md §6.2.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType};

use super::cell::{open_dir_at, CellDir};
use super::stats::{Anomalies, AnomalyKind, CasWarning, ScanLimits};
use crate::{CancelToken, Error};

/// Directory entries visited between two looks at the cancel token: often
/// enough to stop within milliseconds, rarely enough to cost nothing.
const CANCEL_EVERY: u32 = 256;

pub(crate) struct Scan<'c> {
    cancel: &'c CancelToken,
    pub(crate) limits: ScanLimits,
    ticks: u32,
    pub(crate) anomalies: Anomalies,
    pub(crate) warnings: Vec<CasWarning>,
    pub(crate) warnings_suppressed: u64,
}

impl<'c> Scan<'c> {
    pub(crate) fn new(cancel: &'c CancelToken, limits: ScanLimits) -> Self {
        Self {
            cancel,
            limits,
            ticks: 0,
            anomalies: Anomalies::default(),
            warnings: Vec::new(),
            warnings_suppressed: 0,
        }
    }

    /// Called once per directory entry visited; polls the token every
    /// [`CANCEL_EVERY`] calls.
    pub(crate) fn tick(&mut self) -> Result<(), Error> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks % CANCEL_EVERY == 0 {
            self.cancel.check()?;
        }
        Ok(())
    }

    /// A fresh state for a worker thread: same token and limits, no counts.
    pub(crate) fn fork(&self) -> Scan<'c> {
        Scan::new(self.cancel, self.limits)
    }

    /// Adds a worker's counts and warnings.
    pub(crate) fn absorb(&mut self, other: Scan<'c>) {
        self.anomalies.add(&other.anomalies);
        self.warnings.extend(other.warnings);
        self.warnings_suppressed += other.warnings_suppressed;
    }

    /// The warnings to report and the number suppressed: the
    /// `max_warnings` smallest by (path, kind, detail), in that order. Each
    /// worker keeps its own smallest ones, so the union holds the global
    /// smallest and the result does not depend on scheduling.
    pub(crate) fn finish_warnings(&mut self) -> (Vec<CasWarning>, u64) {
        let mut warnings = std::mem::take(&mut self.warnings);
        warnings.sort_by(order);
        let extra = warnings.len().saturating_sub(self.limits.max_warnings);
        warnings.truncate(self.limits.max_warnings);
        (warnings, self.warnings_suppressed + extra as u64)
    }

    /// Polls the token now (between directories).
    pub(crate) fn check_cancel(&self) -> Result<(), Error> {
        self.cancel.check()
    }

    /// Counts one anomaly and, if it is worth a line, keeps a warning.
    pub(crate) fn note(&mut self, kind: AnomalyKind, path: &Path, detail: impl Into<String>) {
        self.anomalies.bump(kind);
        if !kind.warns() {
            return;
        }
        // Keep the `max_warnings` smallest warnings in order, so that the
        // kept set does not depend on listing order or thread scheduling.
        let w = CasWarning {
            kind,
            path: path.to_path_buf(),
            detail: detail.into(),
        };
        let at = self.warnings.partition_point(|k| order(k, &w).is_le());
        if at >= self.limits.max_warnings {
            self.warnings_suppressed += 1;
            return;
        }
        self.warnings.insert(at, w);
        if self.warnings.len() > self.limits.max_warnings {
            self.warnings.pop();
            self.warnings_suppressed += 1;
        }
    }
}

fn order(a: &CasWarning, b: &CasWarning) -> std::cmp::Ordering {
    (&a.path, a.kind.as_str(), &a.detail).cmp(&(&b.path, b.kind.as_str(), &b.detail))
}

/// A member directory of a cell (a shard or command-hash directory): its
/// name, opened relative to the cell's handle, and its path for messages.
pub(crate) struct Member {
    pub(crate) name: OsString,
    pub(crate) path: PathBuf,
}

/// The cell's members (compiletools' `_enumerate_pool_dirs`): entries that
/// are real directories — symlinks never, whatever they point to — and whose
/// name passes `accept`. Everything else at the top (`.ct-traces.json`,
/// `TraceStore/`, a cmake build tree, …) is invisible. Listed through the
/// cell's handle, so the entries are those of the directory opened.
///
/// A listing error here fails the whole scan. compiletools would report an
/// all-zero store instead, which on a dashboard is indistinguishable from
/// an empty cache; an error with the path is the honest answer.
pub(crate) fn members(
    scan: &mut Scan,
    cell: &Path,
    dir: &CellDir,
    accept: fn(&[u8]) -> bool,
) -> Result<Vec<Member>, Error> {
    let io_err = |source: io::Error| Error::Io {
        path: cell.to_path_buf(),
        source,
    };
    let mut listing = rustix::fs::Dir::read_from(dir.fd()).map_err(|e| io_err(e.into()))?;
    let mut out = Vec::new();
    while let Some(item) = listing.read() {
        scan.tick()?;
        let raw = item.map_err(|e| io_err(e.into()))?;
        let name = raw.file_name().to_bytes();
        if name == b"." || name == b".." || !accept(name) {
            continue;
        }
        let name = OsStr::from_bytes(name).to_os_string();
        let path = cell.join(&name);
        let file_type = match raw.file_type() {
            FileType::Unknown => rustix::fs::statat(dir.fd(), name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| FileType::from_raw_mode(st.st_mode))
                .map_err(io::Error::from),
            known => Ok(known),
        };
        match file_type {
            Ok(FileType::Directory) => out.push(Member { name, path }),
            Ok(FileType::Symlink) => scan.note(
                AnomalyKind::SymlinkedDirIgnored,
                &path,
                "symlinked directory ignored",
            ),
            Ok(_) => {}
            // Python's `is_dir()` answers False when lstat fails: skipped.
            Err(e) => scan.note(AnomalyKind::StatFailed, &path, e.to_string()),
        }
    }
    Ok(out)
}

/// Opens the member directory `name` of the directory `parent` without
/// following a link; a refused link reads as such in messages.
pub(crate) fn open_member(parent: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    open_dir_at(parent, Path::new(name)).map_err(crate::input::explain_symlink)
}

/// The entries directly inside the member `name` of `parent` (its path
/// `dir`, for messages), passed one by one to `visit`.
///
/// Mirrors `with os.scandir(dir): for entry in it: …` inside
/// `except OSError: continue`: a directory that cannot be opened is skipped,
/// and an error in the middle of the listing ends it, keeping what was
/// already visited. Both are counted as [`AnomalyKind::UnreadableDir`].
/// Returns whether the directory could be opened.
///
/// The directory is opened relative to its parent's handle without
/// following a link (`O_NOFOLLOW | O_DIRECTORY`) and its entries are listed
/// and `stat`ed relative to its own handle: a member directory swapped for
/// a link to another user's directory after the cell was listed is an
/// unreadable directory, not a listing of the other one, and so is a
/// member of a cell swapped after the cell was opened (issue 22, defect 2).
pub(crate) fn for_each_entry(
    scan: &mut Scan,
    parent: BorrowedFd<'_>,
    name: &OsStr,
    dir: &Path,
    visit: impl FnMut(&mut Scan, Entry<'_>) -> Result<(), Error>,
) -> Result<bool, Error> {
    let opened = open_member(parent, name);
    for_each_entry_of(scan, opened, dir, visit)
}

/// [`for_each_entry`] for a member already opened (or that failed to).
pub(crate) fn for_each_entry_of(
    scan: &mut Scan,
    opened: io::Result<OwnedFd>,
    dir: &Path,
    mut visit: impl FnMut(&mut Scan, Entry<'_>) -> Result<(), Error>,
) -> Result<bool, Error> {
    let listed = opened.and_then(|fd| {
        rustix::fs::Dir::read_from(&fd)
            .map(|listing| (fd, listing))
            .map_err(io::Error::from)
    });
    let (fd, mut listing) = match listed {
        Ok(pair) => pair,
        Err(e) => {
            scan.note(AnomalyKind::UnreadableDir, dir, e.to_string());
            return Ok(false);
        }
    };
    while let Some(item) = listing.read() {
        scan.tick()?;
        match item {
            Ok(raw) => {
                let name = raw.file_name().to_bytes();
                if name == b"." || name == b".." {
                    continue;
                }
                let entry = Entry {
                    dir: fd.as_fd(),
                    dir_path: dir,
                    name: OsStr::from_bytes(name).to_os_string(),
                    listed_type: raw.file_type(),
                };
                visit(scan, entry)?;
            }
            Err(e) => {
                scan.note(
                    AnomalyKind::UnreadableDir,
                    dir,
                    format!("listing stopped: {}", io::Error::from(e)),
                );
                break;
            }
        }
    }
    Ok(true)
}

/// One entry of a directory listed by [`for_each_entry`]; its type and size
/// are read relative to the listed directory's handle.
pub(crate) struct Entry<'d> {
    dir: BorrowedFd<'d>,
    dir_path: &'d Path,
    name: OsString,
    listed_type: FileType,
}

impl Entry<'_> {
    pub(crate) fn file_name(&self) -> &OsStr {
        &self.name
    }

    /// The entry's path, for messages.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir_path.join(&self.name)
    }

    /// The listed directory's handle, for reading a sibling relative to it.
    pub(crate) fn dir(&self) -> BorrowedFd<'_> {
        self.dir
    }

    /// The entry's type, not following a link: the listing's when it
    /// gives one, else `lstat`'s (as `DirEntry::file_type` does).
    pub(crate) fn file_type(&self) -> io::Result<FileType> {
        if self.listed_type != FileType::Unknown {
            return Ok(self.listed_type);
        }
        self.metadata().map(|m| m.file_type)
    }

    /// `lstat` of the entry, relative to the listed directory.
    pub(crate) fn metadata(&self) -> io::Result<EntryMeta> {
        self.stat(AtFlags::SYMLINK_NOFOLLOW)
    }

    /// `stat` of the entry, following a link (for the obj parity, which
    /// counts a symlinked object with its target's size).
    pub(crate) fn followed_metadata(&self) -> io::Result<EntryMeta> {
        self.stat(AtFlags::empty())
    }

    fn stat(&self, flags: AtFlags) -> io::Result<EntryMeta> {
        let st = rustix::fs::statat(self.dir, self.name.as_os_str(), flags)?;
        Ok(EntryMeta {
            file_type: FileType::from_raw_mode(st.st_mode),
            len: u64::try_from(st.st_size).unwrap_or(0),
        })
    }
}

/// What the scanners use of a `stat`.
pub(crate) struct EntryMeta {
    pub(crate) file_type: FileType,
    len: u64,
}

impl EntryMeta {
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn is_dir(&self) -> bool {
        self.file_type == FileType::Directory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_notices_cancellation_within_the_interval() {
        let cancel = CancelToken::new();
        let mut scan = Scan::new(&cancel, ScanLimits::default());
        for _ in 0..CANCEL_EVERY * 2 {
            scan.tick().unwrap();
        }
        cancel.cancel();
        let stopped = (0..CANCEL_EVERY).find(|_| scan.tick().is_err());
        assert!(stopped.is_some(), "not cancelled within {CANCEL_EVERY} ticks");
    }

    /// A listed directory's entries carry their names, types and sizes,
    /// read relative to its handle; a directory swapped for a link to
    /// another user's directory is not listed at all.
    #[test]
    fn listing_is_relative_to_a_handle_that_refuses_links() {
        use std::fs;
        let root = tempfile::tempdir().unwrap();
        let own = root.path().join("00");
        fs::create_dir(&own).unwrap();
        fs::write(own.join("a.o"), b"12345").unwrap();
        std::os::unix::fs::symlink("a.o", own.join("b.o")).unwrap();
        let cancel = CancelToken::new();
        let mut scan = Scan::new(&cancel, ScanLimits::default());
        let mut seen = Vec::new();
        let parent =
            rustix::fs::open(root.path(), rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()).unwrap();
        let listed = for_each_entry(&mut scan, parent.as_fd(), OsStr::new("00"), &own, |_, entry| {
            let meta = entry.metadata().unwrap();
            seen.push((
                entry.file_name().to_os_string(),
                entry.file_type().unwrap(),
                meta.len(),
                entry.followed_metadata().unwrap().len(),
                entry.path(),
            ));
            Ok(())
        })
        .unwrap();
        assert!(listed);
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(seen.len(), 2);
        assert_eq!((seen[0].1, seen[0].2, seen[0].3), (FileType::RegularFile, 5, 5));
        assert_eq!(seen[0].4, own.join("a.o"));
        assert_eq!((seen[1].1, seen[1].3), (FileType::Symlink, 5));

        let victim = root.path().join("victim");
        fs::create_dir(&victim).unwrap();
        fs::write(victim.join("secret.o"), b"x").unwrap();
        let swapped = root.path().join("01");
        std::os::unix::fs::symlink(&victim, &swapped).unwrap();
        let mut visited = 0;
        let listed = for_each_entry(&mut scan, parent.as_fd(), OsStr::new("01"), &swapped, |_, _| {
            visited += 1;
            Ok(())
        })
        .unwrap();
        assert!(!listed, "a symlinked directory was listed");
        assert_eq!(visited, 0);
        assert_eq!(scan.anomalies.unreadable_dirs, 1);
        assert!(scan
            .warnings
            .iter()
            .any(|w| w.path == swapped && w.detail.contains("symbolic link")));
    }

    #[test]
    fn kept_warnings_are_the_smallest_paths() {
        let cancel = CancelToken::new();
        let limits = ScanLimits {
            max_warnings: 3,
            ..ScanLimits::default()
        };
        let mut a = Scan::new(&cancel, limits);
        let mut b = a.fork();
        for (i, p) in ["/e", "/a", "/g", "/c", "/f"].iter().enumerate() {
            a.note(AnomalyKind::StatFailed, Path::new(p), format!("{i}"));
        }
        for p in ["/b", "/h", "/d"] {
            b.note(AnomalyKind::StatFailed, Path::new(p), "x");
        }
        a.absorb(b);
        let (kept, suppressed) = a.finish_warnings();
        let paths: Vec<&Path> = kept.iter().map(|w| w.path.as_path()).collect();
        assert_eq!(paths, [Path::new("/a"), Path::new("/b"), Path::new("/c")]);
        assert_eq!(suppressed, 5);
        assert_eq!(a.anomalies.stat_failures, 8);
    }
}
