//! The linked-artefact store (formats.md §6.6):
//! `<cell>/<2 hex>/<basename>_<link_key>{.exe,.a,.so}`, bucket key
//! (`source_realpath` from `<entry>.manifest` or `<unknown:<basename>:<suffix>>`,
//! suffix).

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use rustix::fs::FileType;

use super::buckets::{BucketTable, Totals};
use super::cell::CellDir;
use super::manifest::{read_key_at, Fallback, ManifestKey};
use super::names::{is_hex_name, split_exe_name, ExeSuffix};
use super::parallel::scan_members;
use super::scan::{for_each_entry, members, Scan};
use super::stats::AnomalyKind;
use crate::Error;

const KEY_FIELD: &str = "source_realpath";

/// (`source_realpath` or unknown key, suffix).
type ExeKey = (Vec<u8>, ExeSuffix);

pub(crate) fn scan(scan: &mut Scan, cell: &Path, dir: &CellDir) -> Result<Totals, Error> {
    let shards = members(scan, cell, dir, |name| is_hex_name(name, 2))?;
    let table = scan_members(scan, &shards, |scan, shard, table: &mut BucketTable<ExeKey>| {
        for_each_entry(scan, dir.fd(), &shard.name, &shard.path, |scan, entry| {
            let name = entry.file_name();
            let Some((basename, suffix)) = split_exe_name(name.as_bytes()) else {
                return Ok(()); // lock, manifest, result, xml, publish temp, …
            };
            // Only regular files: symlinks are ignored whatever they point
            // at (parity: `is_file(follow_symlinks=False)`).
            match entry.file_type() {
                Ok(FileType::RegularFile) => {}
                Ok(FileType::Symlink) => {
                    scan.note(AnomalyKind::ExeSymlinkIgnored, &entry.path(), "symlink ignored");
                    return Ok(());
                }
                _ => return Ok(()),
            }
            let size = match entry.metadata() {
                Ok(m) => m.len(),
                Err(e) => {
                    scan.note(
                        AnomalyKind::StatFailed,
                        &entry.path(),
                        format!("vanished or unreadable: {e}"),
                    );
                    return Ok(());
                }
            };
            let manifest = manifest_path(&entry.path());
            let manifest_name = manifest_path(Path::new(entry.file_name()));
            let source = match read_key_at(
                entry.dir(),
                &manifest_name,
                KEY_FIELD,
                scan.limits.max_manifest_bytes,
            ) {
                ManifestKey::Key(key) => key,
                ManifestKey::Unknown(fallback) => {
                    record(scan, &manifest, fallback);
                    [&b"<unknown:"[..], basename, b":", suffix.as_bytes(), b">"].concat()
                }
            };
            table.add((source, suffix), size);
            Ok(())
        })
        .map(drop)
    })?;
    Ok(table.totals())
}

/// `<entry>.manifest` (string concatenation, as compiletools does).
fn manifest_path(entry: &Path) -> PathBuf {
    let mut bytes = entry.as_os_str().as_bytes().to_vec();
    bytes.extend_from_slice(b".manifest");
    PathBuf::from(OsString::from_vec(bytes))
}

/// For exe every non-string `source_realpath` is the unknown key in
/// compiletools too (it checks `isinstance(src, str) and src`); only a
/// manifest that is not an object, or not UTF-8, would crash it.
fn record(scan: &mut Scan, manifest: &Path, fallback: Fallback) {
    let (kind, detail) = match fallback {
        Fallback::Missing => (AnomalyKind::ManifestMissing, "absent".to_owned()),
        Fallback::Invalid(why) => (AnomalyKind::ManifestInvalid, why),
        Fallback::WithoutKey => (
            AnomalyKind::ManifestWithoutKey,
            format!("no usable {KEY_FIELD:?}"),
        ),
        Fallback::CrashCompat(why) => (
            AnomalyKind::ManifestCrashCompat,
            format!("{why}; treated as missing"),
        ),
        Fallback::NonString { what, .. } => (
            AnomalyKind::ManifestNonStringKey,
            format!("{KEY_FIELD:?} is {what}; unknown key"),
        ),
        Fallback::Skipped(why) => (AnomalyKind::ManifestSkipped, why),
    };
    scan.note(kind, manifest, detail);
}
