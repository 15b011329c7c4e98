//! The object store (formats.md §6.3): `<cell>/<2 hex>/<basename>_<12>_<14>_<16>.o`,
//! bucket key (`file_hash`, `dep_hash`).

use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::FileType;

use super::buckets::{BucketTable, Totals};
use super::cell::CellDir;
use super::names::{is_hex_name, parse_object_name, ObjKey};
use super::parallel::scan_members;
use super::scan::{for_each_entry, members, Entry, Member, Scan};
use super::stats::AnomalyKind;
use crate::Error;

pub(crate) fn scan(scan: &mut Scan, cell: &Path, dir: &CellDir) -> Result<Totals, Error> {
    let shards = members(scan, cell, dir, is_shard_name)?;
    let table = scan_members(scan, &shards, |scan, shard, table: &mut BucketTable<ObjKey>| {
        scan_shard(scan, dir.fd(), shard, table)
    })?;
    Ok(table.totals())
}

/// `^[0-9a-f]{2}$`, Python's `$` included (see `names`).
pub(crate) fn is_shard_name(name: &[u8]) -> bool {
    is_hex_name(name, 2)
}

/// Adds the entries of one shard directory (a member of the cell `cell`)
/// to `table`.
pub(crate) fn scan_shard(
    scan: &mut Scan,
    cell: BorrowedFd<'_>,
    shard: &Member,
    table: &mut BucketTable<ObjKey>,
) -> Result<(), Error> {
    for_each_entry(scan, cell, &shard.name, &shard.path, |scan, entry| {
        // Name first, stat second: sidecars, locks and temps never cost
        // a syscall, exactly as compiletools filters before stat().
        if let Some(key) = parse_object_name(entry.file_name().as_bytes()) {
            if let Some(size) = entry_size(scan, &entry) {
                table.add(key, size);
            }
        }
        Ok(())
    })
    .map(drop)
}

/// `DirEntry.stat().st_size` as compiletools takes it: symlinks followed
/// (a broken one is skipped), and whatever the name points at counts, a
/// directory included. Both quirks are kept for parity and counted.
fn entry_size(scan: &mut Scan, entry: &Entry) -> Option<u64> {
    let is_symlink = match entry.file_type() {
        Ok(t) => t == FileType::Symlink,
        Err(e) => {
            scan.note(AnomalyKind::StatFailed, &entry.path(), e.to_string());
            return None;
        }
    };
    // For anything but a symlink lstat is stat; only symlinks need the
    // following call (relative to the open shard all the same).
    let meta = if is_symlink {
        entry.followed_metadata()
    } else {
        entry.metadata()
    };
    let meta = match meta {
        Ok(m) => m,
        Err(e) => {
            let what = if is_symlink {
                "broken symlink skipped"
            } else {
                "vanished or unreadable, skipped"
            };
            scan.note(AnomalyKind::StatFailed, &entry.path(), format!("{what}: {e}"));
            return None;
        }
    };
    if is_symlink {
        scan.note(
            AnomalyKind::ObjSymlinkFollowed,
            &entry.path(),
            "symlink counted with its target's size",
        );
    }
    if meta.is_dir() {
        scan.note(
            AnomalyKind::ObjDirectoryCounted,
            &entry.path(),
            "directory named like an object counted",
        );
    }
    Some(meta.len())
}
