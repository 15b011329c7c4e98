//! The command-hash stores, pch and pcm (formats.md §6.4, §6.5): every real
//! `<cell>/<16 hex>/` directory is one entry, whatever it holds.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::FileType;

use super::buckets::{BucketTable, Totals};
use super::cell::CellDir;
use super::manifest::{read_key_at, read_key_failed, Fallback, ManifestKey};
use super::names::is_hex_name;
use super::parallel::scan_members;
use super::scan::{for_each_entry_of, members, open_member, Scan};
use super::stats::AnomalyKind;
use crate::Error;

/// Manifest file inside each command-hash directory.
const MANIFEST: &str = "manifest.json";

/// Scans a pch (`key_field` = `header_realpath`) or pcm (`bucket_key`) cell.
pub(crate) fn scan(
    scan: &mut Scan,
    cell: &Path,
    cell_dir: &CellDir,
    key_field: &str,
) -> Result<Totals, Error> {
    let dirs = members(scan, cell, cell_dir, |name| is_hex_name(name, 16))?;
    let table = scan_members(scan, &dirs, |scan, dir, table: &mut BucketTable<Vec<u8>>| {
        scan.tick()?;
        let manifest = dir.path.join(MANIFEST);
        // One handle for the manifest and the listing: both read the
        // directory that was opened, never one swapped in between.
        let opened = open_member(cell_dir.fd(), &dir.name);
        let max = scan.limits.max_manifest_bytes;
        let key = match opened.as_ref() {
            Ok(fd) => read_key_at(fd.as_fd(), Path::new(MANIFEST), key_field, max),
            Err(e) => read_key_failed(copy_error(e), key_field, max),
        };
        let key = match key {
            ManifestKey::Key(key) => key,
            ManifestKey::Unknown(fallback) => {
                record(scan, &manifest, key_field, fallback);
                // `<unknown:<cmd_hash>>` keeps unrelated orphans apart.
                [&b"<unknown:"[..], dir.name.as_bytes(), b">"].concat()
            }
        };
        table.add(key, dir_size(scan, opened, &dir.path)?);
        Ok(())
    })?;
    Ok(table.totals())
}

/// Σ `st_size` of the regular, non-symlink files directly inside `dir`:
/// the artefact, manifest, staged header, locks and temps alike (parity:
/// compiletools' `_dir_size_bytes`). A directory that cannot be listed
/// still counts as an entry, with the bytes seen so far.
fn dir_size(scan: &mut Scan, opened: io::Result<OwnedFd>, dir: &Path) -> Result<u64, Error> {
    let mut total: u64 = 0;
    for_each_entry_of(scan, opened, dir, |scan, entry| {
        // Python's `is_file(follow_symlinks=False)` is False when lstat
        // fails, so such an entry is silently not a file.
        if entry.file_type().is_ok_and(|t| t == FileType::RegularFile) {
            match entry.metadata() {
                Ok(m) => total = total.saturating_add(m.len()),
                Err(e) => scan.note(
                    AnomalyKind::StatFailed,
                    &entry.path(),
                    format!("vanished or unreadable: {e}"),
                ),
            }
        }
        Ok(())
    })?;
    Ok(total)
}

/// The same error again (an `io::Error` is not `Clone`): the manifest and
/// the listing each report the failed open.
fn copy_error(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

fn record(scan: &mut Scan, manifest: &Path, key_field: &str, fallback: Fallback) {
    let (kind, detail) = match fallback {
        Fallback::Missing => (AnomalyKind::ManifestMissing, "absent".to_owned()),
        Fallback::Invalid(why) => (AnomalyKind::ManifestInvalid, why),
        Fallback::WithoutKey => (
            AnomalyKind::ManifestWithoutKey,
            format!("no usable {key_field:?}"),
        ),
        Fallback::CrashCompat(why) => (
            AnomalyKind::ManifestCrashCompat,
            format!("{why}; treated as missing"),
        ),
        Fallback::NonString {
            what,
            unhashable: true,
        } => (
            AnomalyKind::ManifestCrashCompat,
            format!("{key_field:?} is {what} (unhashable in compiletools); treated as missing"),
        ),
        Fallback::NonString {
            what,
            unhashable: false,
        } => (
            AnomalyKind::ManifestNonStringKey,
            format!("{key_field:?} is {what}; treated as missing"),
        ),
        Fallback::Skipped(why) => (AnomalyKind::ManifestSkipped, why),
    };
    scan.note(kind, manifest, detail);
}
