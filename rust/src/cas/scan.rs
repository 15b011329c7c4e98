//! State shared by the per-kind scanners: cancellation polling, anomaly
//! bookkeeping, and the single-level directory listings of formats.md §6.2.

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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

/// A member directory of a pool: its name and path.
pub(crate) struct Member {
    pub(crate) name: OsString,
    pub(crate) path: PathBuf,
}

/// The cell's members (compiletools' `_enumerate_pool_dirs`): entries that
/// are real directories — symlinks never, whatever they point to — and whose
/// name passes `accept`. Everything else at the top (`.ct-traces.json`,
/// `TraceStore/`, a cmake build tree, …) is invisible.
///
/// A listing error here fails the whole scan. compiletools would report an
/// all-zero store instead, which on a dashboard is indistinguishable from
/// an empty cache; an error with the path is the honest answer.
pub(crate) fn members(scan: &mut Scan, cell: &Path, accept: fn(&[u8]) -> bool) -> Result<Vec<Member>, Error> {
    let io_err = |source| Error::Io {
        path: cell.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for item in fs::read_dir(cell).map_err(io_err)? {
        scan.tick()?;
        let entry = item.map_err(io_err)?;
        let name = entry.file_name();
        if !accept(name.as_bytes()) {
            continue;
        }
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => out.push(Member { name, path }),
            Ok(t) if t.is_symlink() => scan.note(
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

/// The entries directly inside `dir`, passed one by one to `visit`.
///
/// Mirrors `with os.scandir(dir): for entry in it: …` inside
/// `except OSError: continue`: a directory that cannot be opened is skipped,
/// and an error in the middle of the listing ends it, keeping what was
/// already visited. Both are counted as [`AnomalyKind::UnreadableDir`].
/// Returns whether the directory could be opened.
pub(crate) fn for_each_entry(
    scan: &mut Scan,
    dir: &Path,
    mut visit: impl FnMut(&mut Scan, fs::DirEntry) -> Result<(), Error>,
) -> Result<bool, Error> {
    let iter = match fs::read_dir(dir) {
        Ok(iter) => iter,
        Err(e) => {
            scan.note(AnomalyKind::UnreadableDir, dir, e.to_string());
            return Ok(false);
        }
    };
    for item in iter {
        scan.tick()?;
        match item {
            Ok(entry) => visit(scan, entry)?,
            Err(e) => {
                scan.note(AnomalyKind::UnreadableDir, dir, format!("listing stopped: {e}"));
                break;
            }
        }
    }
    Ok(true)
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
