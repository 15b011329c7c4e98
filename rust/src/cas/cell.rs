//! Opening the cell a scan lists: once, as a directory handle every member
//! (shard, command-hash directory) is then opened relative to.
//!
//! A configured cell is the root the user chose: its path is followed
//! (`os.path.isdir` semantics). A cell found inside a pool is an entry the
//! receiver listed in a directory a store's users write to, so it is opened
//! relative to a handle of the pool and never through a link: a variant
//! directory swapped for a link to another user's directory between the
//! receiver's listing and this scan is refused, counted and warned about,
//! never listed (issue 22, defect 2).

use std::io::{self, ErrorKind};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::stats::{AnomalyKind, CasWarning, StoreStats};
use crate::Error;

/// Where a cell's path comes from, which decides whether it may be a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellOrigin {
    /// Named in the configuration: followed like the user's own path.
    Configured,
    /// A directory entry of a configured pool: never followed.
    PoolMember,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NONBLOCK);

/// An open cell: the handle its members are opened relative to.
pub(crate) struct CellDir {
    fd: OwnedFd,
}

impl CellDir {
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Opens `cell` and returns its stats before the scan (`exists` says
/// whether to scan) with its handle when it is a directory.
///
/// `Ok` with `exists == false` when the cell is missing, not a directory,
/// or (in a pool) a symbolic link; `Err(Error::Io)` when it exists but
/// cannot be opened.
pub(crate) fn open_cell(cell: &Path, origin: CellOrigin) -> Result<(StoreStats, Option<CellDir>), Error> {
    let mut stats = StoreStats {
        cell: cell.to_path_buf(),
        ..StoreStats::default()
    };
    let io_err = |source: io::Error| Error::Io {
        path: cell.to_path_buf(),
        source,
    };
    let opened = match origin {
        CellOrigin::Configured => rustix::fs::open(cell, DIR_FLAGS, Mode::empty()).map_err(io::Error::from),
        CellOrigin::PoolMember => open_in_pool(cell),
    };
    match opened {
        Ok(fd) => {
            stats.exists = true;
            Ok((stats, Some(CellDir { fd })))
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            stats.anomalies.bump(AnomalyKind::SymlinkedDirIgnored);
            stats.warnings.push(CasWarning {
                kind: AnomalyKind::SymlinkedDirIgnored,
                path: cell.to_path_buf(),
                detail: "store directory in a pool is a symbolic link; not scanned".to_owned(),
            });
            Ok((stats, None))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok((stats, None)),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            // Either a component above is not a directory (missing, as
            // `isdir` says) or the cell itself is a file: only the latter
            // is worth a warning.
            if std::fs::symlink_metadata(cell).is_ok() {
                stats.warnings.push(CasWarning {
                    kind: AnomalyKind::CellNotDirectory,
                    path: cell.to_path_buf(),
                    detail: "exists but is not a directory; treated as missing".to_owned(),
                });
            }
            Ok((stats, None))
        }
        Err(e) => Err(io_err(e)),
    }
}

/// Opens the pool (configured, followed) and the cell as its entry, not
/// following a link; a link is reported as `ELOOP` whatever it points at.
fn open_in_pool(cell: &Path) -> io::Result<OwnedFd> {
    let (Some(pool), Some(name)) = (cell.parent(), cell.file_name()) else {
        return rustix::fs::open(cell, DIR_FLAGS | OFlags::NOFOLLOW, Mode::empty()).map_err(io::Error::from);
    };
    let pool = if pool.as_os_str().is_empty() {
        Path::new(".")
    } else {
        pool
    };
    let pool = rustix::fs::open(pool, DIR_FLAGS, Mode::empty())?;
    open_dir_at(pool.as_fd(), Path::new(name))
}

/// Opens the directory `name` of `parent` without following a link. Linux
/// answers `ELOOP` or `ENOTDIR` for a link with these flags; a link is
/// always reported as `ELOOP`.
pub(crate) fn open_dir_at(parent: BorrowedFd<'_>, name: &Path) -> io::Result<OwnedFd> {
    rustix::fs::openat(parent, name, DIR_FLAGS | OFlags::NOFOLLOW, Mode::empty()).map_err(|e| {
        let is_link = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
        if is_link {
            io::Error::from_raw_os_error(libc::ELOOP)
        } else {
            e.into()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cas::{scan_cell_with, CasKind, ScanLimits};
    use crate::CancelToken;
    use std::fs;

    /// An object `<basename>_<12>_<14>_<16>.o` in its shard `0d`.
    fn object(dir: &Path, basename: &str, bytes: usize) {
        let shard = dir.join("0d");
        fs::create_dir_all(&shard).unwrap();
        let name = format!("{basename}_0d99ae76451a_0af5b42cc55ffb_0123456789abcdef.o");
        fs::write(shard.join(name), vec![0u8; bytes]).unwrap();
    }

    const OBJ: &str = "own";

    /// A store directory in a pool that is a link to another user's
    /// directory is not scanned, and says so; the same link configured
    /// explicitly is the user's choice and followed.
    #[test]
    fn symlinked_store_in_a_pool_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let victim = root.path().join("victim");
        object(&victim, "secret", 4242);
        let pool = root.path().join("pool");
        fs::create_dir(&pool).unwrap();
        let own = pool.join("gcc.debug");
        object(&own, OBJ, 7);
        let swapped = pool.join("gcc.release");
        std::os::unix::fs::symlink(&victim, &swapped).unwrap();
        let cancel = CancelToken::new();
        let limits = ScanLimits::default();

        let s = scan_cell_with(CasKind::Obj, &own, CellOrigin::PoolMember, &cancel, limits).unwrap();
        assert!(s.exists);
        assert_eq!((s.total_entries, s.total_bytes), (1, 7));

        let s = scan_cell_with(CasKind::Obj, &swapped, CellOrigin::PoolMember, &cancel, limits).unwrap();
        assert!(!s.exists, "a symlinked pool member was scanned");
        assert_eq!((s.total_entries, s.total_bytes), (0, 0));
        assert_eq!(s.anomalies.symlinked_dirs_ignored, 1);
        assert!(s
            .warnings
            .iter()
            .any(|w| w.path == swapped && w.detail.contains("symbolic link")));

        let s = scan_cell_with(CasKind::Obj, &swapped, CellOrigin::Configured, &cancel, limits).unwrap();
        assert!(
            s.exists && s.total_bytes == 4242,
            "a configured link is the user's own path"
        );
    }

    /// Members are opened relative to the cell's handle: a cell renamed
    /// away and replaced by a link after it was opened still lists the
    /// directory that was opened.
    #[test]
    fn members_are_read_through_the_opened_cell() {
        let root = tempfile::tempdir().unwrap();
        let pool = root.path().join("pool");
        let cell = pool.join("v");
        object(&cell, OBJ, 3);
        let victim = root.path().join("victim");
        object(&victim, OBJ, 999);
        let (_, dir) = open_cell(&cell, CellOrigin::PoolMember).unwrap();
        let dir = dir.expect("opened");
        fs::rename(&cell, pool.join("moved")).unwrap();
        std::os::unix::fs::symlink(&victim, &cell).unwrap();
        let cancel = CancelToken::new();
        let mut scan = crate::cas::scan::Scan::new(&cancel, ScanLimits::default());
        let shards = crate::cas::scan::members(&mut scan, &cell, &dir, |n| n.len() == 2).unwrap();
        assert_eq!(shards.len(), 1);
        let mut table = crate::cas::buckets::BucketTable::default();
        crate::cas::obj::scan_shard(&mut scan, dir.fd(), &shards[0], &mut table).unwrap();
        assert_eq!(table.totals().total_bytes, 3, "read the victim's shard");
    }
}
