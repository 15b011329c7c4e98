//! CAS store health (design.md §5, formats.md §6): scanning one cell of an obj, pch,
//! pcm or exe store the way `ct-cache-report` does. The numbers become OTLP
//! gauges or a `ct.cache.snapshot` span in `crate::otlp::cas`.
//!
//! # Parity
//!
//! The five numbers equal `ct-cache-report --json` on the same store; the
//! layouts, name filters, size rules and bucket keys of formats.md §6.2–§6.6 are
//! implemented per kind in `obj`, `cmd_hash` (pch and pcm) and `exe`, down
//! to Python quirks that change counts (see `names`); the differential test
//! `rust/tests/cas_differential.rs` checks them against the real tool
//! (`CT_CACHE_REPORT=…`). Where compiletools
//! crashes (formats.md §6.8) the scan counts the anomaly and continues; every
//! deliberate difference is listed here:
//!
//! * manifests that would crash compiletools (invalid UTF-8, not an object,
//!   unhashable key) and pch/pcm keys that are numbers or booleans (which
//!   compiletools uses verbatim) get the `<unknown:…>` key — see `manifest`;
//! * manifests that are FIFOs/devices or larger than
//!   [`ScanLimits::max_manifest_bytes`] are not read (unknown key);
//! * a cell that exists but cannot be listed is an [`Error::Io`], not an
//!   all-zero store (compiletools prints zeros);
//! * a cell path that exists but is not a directory, or is missing, gives
//!   `exists = false` (compiletools: not scanned in default scope, zeros
//!   when requested explicitly — the caller's choice, formats.md §6.8).
//! * a cell found in a pool ([`CellOrigin::PoolMember`]) that is a
//!   symbolic link is not scanned, also when it became one after the
//!   receiver listed the pool (counted as `symlinked_dir_ignored`, with a
//!   warning); compiletools' enumeration skips such entries too, but opens
//!   the ones it keeps by path. Shards and command-hash directories are
//!   opened relative to the cell's handle (module `cell`).
//!
//! Kept for parity although odd (formats.md §6.8, §8 item 22): obj entries that
//! are symlinks count with their target's size and directories named like
//! objects count with the directory's `st_size`; pch/pcm sizes include
//! locks, temps, manifests and the staged header. Each is counted in
//! [`Anomalies`].
//!
//! # Cost
//!
//! Single-level listings only (formats.md §6.2: nothing is recursed), one `stat`
//! per name-matching entry, one manifest read per pch/pcm directory or exe
//! entry. Shards / command-hash directories are spread over up to
//! [`ScanLimits::max_threads`] threads (`parallel`), since the cost is the
//! kernel's and the disk's, not ours. Memory is one aggregate per distinct
//! bucket key (plus the list of shard / command-hash directory paths), never
//! a list of entries. The cancel token is polled every 256 directory
//! entries and before each directory.
//!
//! # Periodic rescans
//!
//! [`scan_store_cached`] gives the same result as [`scan_store_with`] but
//! keeps per-shard aggregates of obj stores in a [`ScanCache`] and, on the
//! next call, lists only the shard directories whose identity (device,
//! inode, mtime, ctime) changed: compiletools publishes objects by rename,
//! so an unchanged shard directory has unchanged entries. Shards modified
//! within 2 s before the scan and shards with anomalies are never kept;
//! pch/pcm/exe are never cached (their manifests change in place). The
//! rules, their limits and the cache's size are in the `cache` module.
//!
//! A whole store set (the cells of one variant) is scanned and turned into
//! one OTLP request by [`crate::scan_set`], the entry point the receiver
//! calls.

mod buckets;
mod cache;
mod cell;
mod cmd_hash;
mod exe;
mod kind;
mod manifest;
pub(crate) mod names;
mod obj;
mod parallel;
mod scan;
mod stats;

use std::path::Path;

pub use cache::{scan_cell_cached, scan_store_cached, CacheFootprint, CachedScanReport, ScanCache};
pub use cell::CellOrigin;
pub use kind::CasKind;
pub use stats::{Anomalies, AnomalyKind, CasWarning, ScanLimits, StoreStats};

use crate::{CancelToken, Error};
use buckets::Totals;
use scan::Scan;

/// Scans one cell of a `kind` store with the default [`ScanLimits`].
///
/// `Ok` with `exists == false` (all numbers zero) when the cell is missing
/// or not a directory; `Err(Error::Io)` when it exists but cannot be listed;
/// `Err(Error::Cancelled)` when `cancel` fires.
pub fn scan_store(kind: CasKind, cell: &Path, cancel: &CancelToken) -> Result<StoreStats, Error> {
    scan_store_with(kind, cell, cancel, ScanLimits::default())
}

/// [`scan_store`] with explicit limits.
pub fn scan_store_with(
    kind: CasKind,
    cell: &Path,
    cancel: &CancelToken,
    limits: ScanLimits,
) -> Result<StoreStats, Error> {
    scan_cell_with(kind, cell, CellOrigin::Configured, cancel, limits)
}

/// [`scan_store_with`] for a cell of the given origin: a cell found in a
/// pool that is a symbolic link is not scanned (`exists == false`, counted
/// as [`AnomalyKind::SymlinkedDirIgnored`] with a warning).
pub fn scan_cell_with(
    kind: CasKind,
    cell: &Path,
    origin: CellOrigin,
    cancel: &CancelToken,
    limits: ScanLimits,
) -> Result<StoreStats, Error> {
    cancel.check()?;
    let (mut stats, dir) = cell::open_cell(cell, origin)?;
    let Some(dir) = dir else {
        return Ok(stats);
    };
    let mut scan = Scan::new(cancel, limits);
    let totals = match kind {
        CasKind::Obj => obj::scan(&mut scan, cell, &dir)?,
        CasKind::Pch => cmd_hash::scan(&mut scan, cell, &dir, "header_realpath")?,
        CasKind::Pcm => cmd_hash::scan(&mut scan, cell, &dir, "bucket_key")?,
        CasKind::Exe => exe::scan(&mut scan, cell, &dir)?,
    };
    finish(&mut stats, totals, scan);
    Ok(stats)
}

/// Stores the numbers, anomaly counters and warnings of a finished scan.
fn finish(stats: &mut StoreStats, totals: Totals, mut scan: Scan) {
    stats.total_bytes = totals.total_bytes;
    stats.total_entries = totals.total_entries;
    stats.unique_buckets = totals.unique_buckets;
    stats.wasted_bytes = totals.wasted_bytes;
    stats.duplicate_groups = totals.duplicate_groups;
    stats.anomalies = scan.anomalies;
    (stats.warnings, stats.warnings_suppressed) = scan.finish_warnings();
}
