//! What a scan returns: the five numbers of formats.md §6.7, counters of the
//! anomalies met on the way, and a bounded list of warnings with paths.

use std::fmt;
use std::path::PathBuf;

/// Limits of one scan. They exist so that a hostile or broken store cannot
/// make the receiver read without bound or flood its log; the defaults are
/// far above anything compiletools writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimits {
    /// Manifests larger than this are not read and their entry falls back
    /// to the unknown bucket key (compiletools would read them whole).
    /// A real manifest is a few KiB (one hash per transitive header).
    pub max_manifest_bytes: u64,
    /// Warnings kept with their path; further ones are only counted in
    /// [`StoreStats::warnings_suppressed`].
    pub max_warnings: usize,
    /// Threads listing shards / command-hash directories in parallel. A scan
    /// is one `stat` per entry, so it is bound by the kernel and the disk,
    /// and several requests in flight pay off even on few cores. Stores with
    /// few directories are always scanned on the calling thread.
    pub max_threads: usize,
}

impl Default for ScanLimits {
    fn default() -> Self {
        Self {
            max_manifest_bytes: 16 * 1024 * 1024,
            max_warnings: 50,
            max_threads: 4,
        }
    }
}

/// Result of scanning one cell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// The cell as given to the scan.
    pub cell: PathBuf,
    /// Whether the cell existed as a directory (symlinks followed, like
    /// `os.path.isdir`). `false` means "missing": all numbers are zero, and
    /// the caller decides between "not scanned → no points" (default scope)
    /// and "explicitly requested → zeros" (formats.md §6.8 rows 1–2).
    pub exists: bool,
    /// Σ entry sizes (`st_size`).
    pub total_bytes: u64,
    /// Number of entries.
    pub total_entries: u64,
    /// Number of distinct bucket keys.
    pub unique_buckets: u64,
    /// Σ over duplicate groups of (sum of sizes − min size).
    pub wasted_bytes: u64,
    /// Number of bucket keys with ≥ 2 entries.
    pub duplicate_groups: u64,
    pub anomalies: Anomalies,
    /// Up to [`ScanLimits::max_warnings`] anomalies worth a log line, sorted
    /// by path (the smallest paths are kept, so the list does not depend on
    /// thread scheduling).
    pub warnings: Vec<CasWarning>,
    pub warnings_suppressed: u64,
}

/// Counters of everything unusual met during a scan. "Parity" below means
/// the numbers are what `ct-cache-report` gives; "deviation" means we do
/// something else on purpose (always towards "keep going").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Anomalies {
    /// Shard / command-hash directories whose listing failed or broke off
    /// (skipped from there on; parity).
    pub unreadable_dirs: u64,
    /// Entries passing the name rule whose `stat` failed: vanished, broken
    /// symlink, permission (skipped; parity).
    pub stat_failures: u64,
    /// Symlinked shard / command-hash directories (ignored; parity).
    pub symlinked_dirs_ignored: u64,
    /// obj: symlinks named like objects, counted with their target's size
    /// (parity).
    pub obj_symlinks_followed: u64,
    /// obj: directories named like objects, counted with the directory's
    /// `st_size` (parity).
    pub obj_directories_counted: u64,
    /// exe: symlinks named like artefacts (ignored; parity).
    pub exe_symlinks_ignored: u64,
    /// Manifests absent (normal for legacy entries; unknown key; parity).
    pub manifests_missing: u64,
    /// Manifests unreadable, a directory, not valid JSON, or JSON `null`
    /// (unknown key; parity).
    pub manifests_invalid: u64,
    /// Manifests that are objects without a usable key (field absent,
    /// `null`, `""`; unknown key; parity).
    pub manifests_without_key: u64,
    /// Manifests that would crash compiletools — invalid UTF-8, a top level
    /// that is not an object (`[1]`, `5`, `"x"`), or (pch/pcm) a non-empty
    /// array/object as key — treated as missing (unknown key; deviation,
    /// formats.md §6.8).
    pub manifests_crash_compat: u64,
    /// Manifests whose key is a number or boolean (or, for exe, any other
    /// non-string): treated as missing. For pch/pcm compiletools uses a
    /// truthy number/`true` verbatim as the key (deviation, formats.md §6.8
    /// judgement call); for exe this is parity.
    pub manifests_non_string_key: u64,
    /// Manifests not read because of our limits: not a regular file (FIFO,
    /// device) or larger than [`ScanLimits::max_manifest_bytes`] (unknown
    /// key; deviation: compiletools would block or read it all).
    pub manifests_skipped: u64,
}

/// Kinds of anomaly; each maps to one counter of [`Anomalies`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnomalyKind {
    /// The cell exists but is not a directory (reported as missing).
    CellNotDirectory,
    UnreadableDir,
    StatFailed,
    SymlinkedDirIgnored,
    ObjSymlinkFollowed,
    ObjDirectoryCounted,
    ExeSymlinkIgnored,
    ManifestMissing,
    ManifestInvalid,
    ManifestWithoutKey,
    ManifestCrashCompat,
    ManifestNonStringKey,
    ManifestSkipped,
}

impl AnomalyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AnomalyKind::CellNotDirectory => "cell_not_directory",
            AnomalyKind::UnreadableDir => "unreadable_dir",
            AnomalyKind::StatFailed => "stat_failed",
            AnomalyKind::SymlinkedDirIgnored => "symlinked_dir_ignored",
            AnomalyKind::ObjSymlinkFollowed => "obj_symlink_followed",
            AnomalyKind::ObjDirectoryCounted => "obj_directory_counted",
            AnomalyKind::ExeSymlinkIgnored => "exe_symlink_ignored",
            AnomalyKind::ManifestMissing => "manifest_missing",
            AnomalyKind::ManifestInvalid => "manifest_invalid",
            AnomalyKind::ManifestWithoutKey => "manifest_without_key",
            AnomalyKind::ManifestCrashCompat => "manifest_crash_compat",
            AnomalyKind::ManifestNonStringKey => "manifest_non_string_key",
            AnomalyKind::ManifestSkipped => "manifest_skipped",
        }
    }

    /// Whether one occurrence deserves a warning line. Missing manifests and
    /// manifests without key are routine (legacy entries), so only counted.
    pub(crate) fn warns(self) -> bool {
        !matches!(
            self,
            AnomalyKind::ManifestMissing | AnomalyKind::ManifestWithoutKey
        )
    }
}

impl Anomalies {
    pub(crate) fn bump(&mut self, kind: AnomalyKind) {
        let counter = match kind {
            // Reported through `StoreStats::exists`, not counted here.
            AnomalyKind::CellNotDirectory => return,
            AnomalyKind::UnreadableDir => &mut self.unreadable_dirs,
            AnomalyKind::StatFailed => &mut self.stat_failures,
            AnomalyKind::SymlinkedDirIgnored => &mut self.symlinked_dirs_ignored,
            AnomalyKind::ObjSymlinkFollowed => &mut self.obj_symlinks_followed,
            AnomalyKind::ObjDirectoryCounted => &mut self.obj_directories_counted,
            AnomalyKind::ExeSymlinkIgnored => &mut self.exe_symlinks_ignored,
            AnomalyKind::ManifestMissing => &mut self.manifests_missing,
            AnomalyKind::ManifestInvalid => &mut self.manifests_invalid,
            AnomalyKind::ManifestWithoutKey => &mut self.manifests_without_key,
            AnomalyKind::ManifestCrashCompat => &mut self.manifests_crash_compat,
            AnomalyKind::ManifestNonStringKey => &mut self.manifests_non_string_key,
            AnomalyKind::ManifestSkipped => &mut self.manifests_skipped,
        };
        *counter += 1;
    }

    /// Adds another worker's counters.
    pub(crate) fn add(&mut self, o: &Anomalies) {
        self.unreadable_dirs += o.unreadable_dirs;
        self.stat_failures += o.stat_failures;
        self.symlinked_dirs_ignored += o.symlinked_dirs_ignored;
        self.obj_symlinks_followed += o.obj_symlinks_followed;
        self.obj_directories_counted += o.obj_directories_counted;
        self.exe_symlinks_ignored += o.exe_symlinks_ignored;
        self.manifests_missing += o.manifests_missing;
        self.manifests_invalid += o.manifests_invalid;
        self.manifests_without_key += o.manifests_without_key;
        self.manifests_crash_compat += o.manifests_crash_compat;
        self.manifests_non_string_key += o.manifests_non_string_key;
        self.manifests_skipped += o.manifests_skipped;
    }

    /// Every counter with its name, for logs and self-metrics.
    pub fn counters(&self) -> [(&'static str, u64); 12] {
        [
            ("unreadable_dirs", self.unreadable_dirs),
            ("stat_failures", self.stat_failures),
            ("symlinked_dirs_ignored", self.symlinked_dirs_ignored),
            ("obj_symlinks_followed", self.obj_symlinks_followed),
            ("obj_directories_counted", self.obj_directories_counted),
            ("exe_symlinks_ignored", self.exe_symlinks_ignored),
            ("manifests_missing", self.manifests_missing),
            ("manifests_invalid", self.manifests_invalid),
            ("manifests_without_key", self.manifests_without_key),
            ("manifests_crash_compat", self.manifests_crash_compat),
            ("manifests_non_string_key", self.manifests_non_string_key),
            ("manifests_skipped", self.manifests_skipped),
        ]
    }
}

/// One anomaly worth a log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CasWarning {
    pub kind: AnomalyKind,
    pub path: PathBuf,
    pub detail: String,
}

impl fmt::Display for CasWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {}",
            self.path.display(),
            self.kind.as_str(),
            self.detail
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_but_cell_has_a_counter() {
        let kinds = [
            AnomalyKind::UnreadableDir,
            AnomalyKind::StatFailed,
            AnomalyKind::SymlinkedDirIgnored,
            AnomalyKind::ObjSymlinkFollowed,
            AnomalyKind::ObjDirectoryCounted,
            AnomalyKind::ExeSymlinkIgnored,
            AnomalyKind::ManifestMissing,
            AnomalyKind::ManifestInvalid,
            AnomalyKind::ManifestWithoutKey,
            AnomalyKind::ManifestCrashCompat,
            AnomalyKind::ManifestNonStringKey,
            AnomalyKind::ManifestSkipped,
        ];
        let mut a = Anomalies::default();
        for k in kinds {
            a.bump(k);
        }
        assert!(a.counters().iter().all(|(_, v)| *v == 1), "{a:?}");
        a.bump(AnomalyKind::CellNotDirectory);
        assert!(a.counters().iter().all(|(_, v)| *v == 1));
        let copy = a;
        a.add(&copy);
        assert!(
            a.counters().iter().all(|(_, v)| *v == 2),
            "add covers every counter: {a:?}"
        );
    }
}
