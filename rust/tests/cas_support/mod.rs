//! Helpers of the `cas_*` integration tests: the corpus, its
//! `cas-listing.txt` files turned back into (sparse) stores, and the
//! numbers `ct-cache-report --json` printed for them.

use std::fs;
use std::path::{Path, PathBuf};

pub mod zoo;

use compiletools_core::cas::{CasKind, StoreStats};
use serde_json::Value;

pub use crate::corpus_path::corpus_dir;

/// Every case directory, sorted.
pub fn cases() -> Vec<PathBuf> {
    let dir = corpus_dir().join("cases");
    let mut out: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus not found at {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("cas-listing.txt").is_file())
        .collect();
    out.sort();
    out
}

pub fn case_name(case: &Path) -> String {
    case.file_name().unwrap().to_string_lossy().into_owned()
}

/// One store of a `cas-listing.txt`.
#[derive(Debug)]
pub struct ListedStore {
    pub kind: CasKind,
    /// The listing said `(absent)`.
    pub absent: bool,
    /// `find -printf '%P %s'` lines: relative path and `st_size`.
    pub entries: Vec<(String, u64)>,
}

/// Parses a listing: `### cas-<kind>dir: <cell>` starts a store, then one
/// `<relative path> <size>` line per file or directory, or `(absent)`.
pub fn parse_listing(text: &str) -> Vec<ListedStore> {
    let mut stores: Vec<ListedStore> = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        if let Some(header) = line.strip_prefix("### ") {
            // The cell path after ": " is the recording machine's: not needed.
            let (flag, _cell) = header.split_once(": ").expect("store header");
            let kind = match flag {
                "cas-objdir" => CasKind::Obj,
                "cas-pchdir" => CasKind::Pch,
                "cas-pcmdir" => CasKind::Pcm,
                "cas-exedir" => CasKind::Exe,
                other => panic!("unknown store {other:?}"),
            };
            stores.push(ListedStore {
                kind,
                absent: false,
                entries: Vec::new(),
            });
            continue;
        }
        let store = stores.last_mut().expect("line before the first store header");
        if line == "(absent)" {
            store.absent = true;
            continue;
        }
        // The size is the last field; paths may contain spaces.
        let (path, size) = line.rsplit_once(' ').expect("path and size");
        store.entries.push((path.to_owned(), size.parse().expect("size")));
    }
    stores
}

/// Recreates a listed store under `cell` with sparse files of the listed
/// sizes (contents are all zero bytes, so every manifest is invalid JSON).
///
/// The listing does not record types. A line is a directory when another
/// line lies below it; a line with no children is a directory only when it
/// sits at depth 1 with the 4096-byte size of an empty directory (an empty
/// shard or command-hash directory), otherwise a file. For the obj and exe
/// layouts the choice for such a line cannot change any number: neither an
/// empty shard nor a top-level file holds entries.
pub fn materialize(store: &ListedStore, cell: &Path) {
    assert!(!store.absent, "absent stores are not materialized");
    fs::create_dir_all(cell).unwrap();
    let is_parent = |p: &str| {
        let prefix = format!("{p}/");
        store.entries.iter().any(|(q, _)| q.starts_with(&prefix))
    };
    for (rel, size) in &store.entries {
        let path = cell.join(rel);
        let dir = is_parent(rel) || (!rel.contains('/') && *size == 4096);
        if dir {
            fs::create_dir_all(&path).unwrap();
        } else {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let f = fs::File::create(&path).unwrap();
            f.set_len(*size).unwrap();
        }
    }
}

/// The five numbers, as compared everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Five {
    pub total_bytes: u64,
    pub total_entries: u64,
    pub unique_buckets: u64,
    pub wasted_bytes: u64,
    pub duplicate_groups: u64,
}

impl From<&StoreStats> for Five {
    fn from(s: &StoreStats) -> Self {
        Five {
            total_bytes: s.total_bytes,
            total_entries: s.total_entries,
            unique_buckets: s.unique_buckets,
            wasted_bytes: s.wasted_bytes,
            duplicate_groups: s.duplicate_groups,
        }
    }
}

fn report_key(kind: CasKind) -> (&'static str, &'static str) {
    // (report object key, unique-count key) of formats.md §6.7.
    match kind {
        CasKind::Obj => ("cas-objdir-report", "unique-src-deps-count"),
        CasKind::Pch => ("cas-pchdir-report", "unique-headers-count"),
        CasKind::Pcm => ("cas-pcmdir-report", "unique-buckets-count"),
        CasKind::Exe => ("cas-exedir-report", "unique-buckets-count"),
    }
}

/// The numbers `ct-cache-report --json` printed for `kind`: `None` when the
/// store was not scanned (`null`, or absent from a legacy flat report).
/// Handles the combined schema and the legacy flat objdir-only schema.
pub fn reported(report: &Value, kind: CasKind) -> Option<Five> {
    let (object_key, unique_key) = report_key(kind);
    let flat = report.get("cas-objdir").is_some();
    let obj = if flat {
        (kind == CasKind::Obj).then_some(report)?
    } else {
        report.get(object_key).filter(|v| !v.is_null())?
    };
    let n = |k: &str| {
        obj.get(k)
            .and_then(Value::as_u64)
            .unwrap_or_else(|| panic!("{object_key}.{k} missing"))
    };
    Some(Five {
        total_bytes: n("total-bytes"),
        total_entries: n("total-entries"),
        unique_buckets: n(unique_key),
        wasted_bytes: n("wasted-bytes"),
        duplicate_groups: n("duplicated-groups-count"),
    })
}

pub fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
