//! State shared by the per-kind scanners: cancellation polling, anomaly
//! bookkeeping, and the single-level directory listings of spec §6.2.

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
        if self.warnings.len() < self.limits.max_warnings {
            self.warnings.push(CasWarning {
                kind,
                path: path.to_path_buf(),
                detail: detail.into(),
            });
        } else {
            self.warnings_suppressed += 1;
        }
    }
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
