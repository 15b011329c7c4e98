//! Incremental rescans of obj stores: [`ScanCache`] and [`scan_store_cached`].
//!
//! # Why a shard's result can be reused
//!
//! compiletools never modifies an object in place: it compiles to a temp
//! file in the shard and renames it over the final name, and a cleanup
//! unlinks. Every change to the set of entries of a shard, or to their
//! sizes, is therefore a create/rename/unlink *in the shard directory*,
//! which updates that directory's mtime and ctime (POSIX). So while a shard
//! directory's `(st_dev, st_ino, st_mtime, st_ctime)` is unchanged, its
//! entries' names and sizes are too, and the per-bucket aggregates of its
//! last listing are still exact. `st_ino`/`st_dev` catch a shard replaced by
//! another directory; `st_ctime` (which cannot be set from user space)
//! catches a shard restored with its old mtime (`tar`, `rsync -a`).
//!
//! # When a result is not kept
//!
//! * **Racy timestamps** (git's "racy clean" rule): a file-system timestamp
//!   has a granularity (1 ns on ext4/xfs/btrfs/tmpfs, 1 s on some network
//!   and older file systems, 2 s on FAT). If the shard was modified in the
//!   same tick as our listing, a later change in that tick would leave the
//!   mtime as we recorded it. A shard whose mtime is less than
//!   `RACY_WINDOW_NS` (2 s) before the scan started — or after it — is
//!   listed but not kept; the next scan lists it again, and keeps it once
//!   its mtime has aged. The identity is taken *before* the listing, so a
//!   change during the listing shows up as a different identity next time.
//! * **Shards with any anomaly** are listed every time. Their numbers depend
//!   on more than the shard's own entries: an entry that is a symlink counts
//!   with its target's size (the target can change anywhere), a directory
//!   named like an object counts with its own `st_size` (which changes when
//!   *its* content changes), a broken symlink can be repaired, a failed
//!   `stat` or listing can succeed next time. Rescanning them also
//!   re-emits their anomaly counters and warnings exactly as the uncached
//!   scan does, so the cache never holds anomalies or warnings: a kept
//!   shard is one that had none.
//!
//! What cannot be noticed: a regular entry rewritten in place (`truncate`,
//! an editor saving over it, a second hard link written to) leaves the
//! shard directory untouched, so its old size is reused until the shard
//! changes. compiletools never does this (formats.md §6.8: artefacts appear by
//! rename). Nor can a shard be told apart whose mtime was set back to the
//! recorded value (`tar x`, `rsync -a` over it) within the same ctime tick
//! as the change — impossible with the nanosecond ctime of ext4, xfs,
//! btrfs and tmpfs; the racy rule looks at the mtime only, so that shards
//! merely re-dated (`touch -d`) stay cacheable. Timestamps set into the
//! future, or a wall clock stepped back by more than the racy window, only
//! make shards uncacheable or shift when they become cacheable; a shared
//! file system whose server clock runs behind ours by more than 2 s
//! defeats the racy rule, as it does git's.
//!
//! # Only obj
//!
//! pch/pcm entries are sized by every file of a command-hash directory and
//! keyed by a `manifest.json` whose content can be rewritten in place; exe
//! entries are keyed by `<artefact>.manifest` files, likewise. Neither
//! change touches the directory's mtime, so those kinds always fall
//! through to the uncached scan.
//!
//! # Memory
//!
//! Per cached shard, the aggregates of its distinct bucket keys — never a
//! list of entries — with the 26-hex-digit key packed into 13 bytes:
//! 24 bytes for a key held by a single entry (key + size) and 40 bytes for
//! a duplicate group (key + count, sum, min), plus a few hundred bytes per
//! shard (name, identity, totals, map slot). That is at most 24 bytes per
//! entry: the 100k-entry benchmark store (90k keys, 256 shards) takes
//! 2.4 MB, the 1M-entry one 23 MB ([`ScanCache::footprint`] gives the
//! figure for a live cache). No per-entry list is built even while a shard
//! is listed, and the cells' totals are merged without a store-wide table
//! (see below), so a cached scan peaks lower than an uncached one. Shards
//! that vanished are dropped on the next successful scan of their cell;
//! a cell found missing is dropped whole; [`ScanCache::forget`] drops a
//! cell that is no longer scanned, and [`ScanCache::retain_cells`] every
//! cell but a given set (the receiver passes each pass's cells, so a pool
//! variant that disappeared does not stay cached forever).
//!
//! # Merging shards
//!
//! The bucket key is (`file_hash`, `dep_hash`) and compiletools puts an
//! object in the shard named after `file_hash[..2]`, but the shard is never
//! cross-checked (formats.md §8 item 23): a key may appear in several shards.
//! A key whose first two hex digits are the shard's exact name is *home*
//! there, and can be home in one shard only, so shards holding only home
//! keys have disjoint keys and their five numbers simply add up. As soon as
//! any shard holds a *foreign* key (a hand-moved file, the `"ab\n"` shard
//! Python's `$` admits), every shard's aggregates are merged by key in one
//! table, exactly as the uncached scan merges its entries.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::mem::size_of;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, FileType};

use super::buckets::{Bucket, BucketTable, Totals};
use super::cell::{open_cell, CellDir, CellOrigin};
use super::names::{ObjKey, OBJ_KEY_LEN};
use super::obj::{is_shard_name, scan_shard};
use super::parallel::map_members;
use super::scan::{members, Member, Scan};
use super::{finish, scan_cell_with, CasKind, ScanLimits, StoreStats};
use crate::{CancelToken, Error};

/// A shard modified less than this long before the scan started is not
/// kept (see the module comment): covers 1 s and 2 s timestamp
/// granularities and the coarse kernel clock's lag.
const RACY_WINDOW_NS: i128 = 2_000_000_000;

/// Results of earlier scans of obj cells, reused by [`scan_store_cached`]
/// for every shard directory that did not change since.
///
/// One cache serves any number of cells (keyed by the path as given). It
/// holds per-bucket aggregates only; see [`ScanCache::footprint`] for its
/// size. A cache is only a speed-up: dropping it, or [`ScanCache::clear`],
/// never changes a result.
#[derive(Debug, Default)]
pub struct ScanCache {
    cells: HashMap<PathBuf, CellCache>,
    last: CachedScanReport,
}

/// What the last [`scan_store_cached`] call did with the cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CachedScanReport {
    /// Shard directories in the cell (0 for kinds that are never cached).
    pub shards: u64,
    /// Shards whose earlier result was reused without listing them.
    pub reused: u64,
    /// Shards listed (new, changed, or not kept last time).
    pub rescanned: u64,
    /// Rescanned shards not kept because their mtime was within 2 s before
    /// the scan started (or later): they are listed again next time.
    pub too_recent: u64,
    /// Rescanned shards not kept because of anomalies (symlinks, directories
    /// named like objects, failed `stat` or listing): listed every time.
    pub irregular: u64,
}

/// Size of a [`ScanCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheFootprint {
    pub cells: usize,
    pub shards: usize,
    /// Distinct bucket keys over all cached shards.
    pub buckets: usize,
    /// Estimated heap bytes held (aggregates, names, map slots).
    pub bytes: usize,
}

impl ScanCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// What the last [`scan_store_cached`] call reused and rescanned.
    pub fn last_scan(&self) -> CachedScanReport {
        self.last
    }

    /// Drops everything kept for `cell` (spelled as it was scanned);
    /// returns whether there was anything.
    pub fn forget(&mut self, cell: &Path) -> bool {
        self.cells.remove(cell).is_some()
    }

    /// Keeps only the cells in `cells` (spelled as they are scanned) and
    /// drops what is kept for any other, e.g. a pool's variant directory
    /// that was removed and so is never scanned again; returns how many
    /// cells were dropped.
    pub fn retain_cells<'a>(&mut self, cells: impl IntoIterator<Item = &'a Path>) -> usize {
        let keep: HashSet<&Path> = cells.into_iter().collect();
        let before = self.cells.len();
        self.cells.retain(|cell, _| keep.contains(cell.as_path()));
        before - self.cells.len()
    }

    /// Drops every cell.
    pub fn clear(&mut self) {
        self.cells.clear();
    }

    pub fn footprint(&self) -> CacheFootprint {
        let mut f = CacheFootprint {
            cells: self.cells.len(),
            ..CacheFootprint::default()
        };
        // A hashbrown slot is the (key, value) pair plus one control byte;
        // capacity covers the load factor.
        let slot = size_of::<(OsString, CachedShard)>() + 1;
        for (path, cell) in &self.cells {
            f.bytes += size_of::<(PathBuf, CellCache)>() + 1 + path.as_os_str().len();
            f.bytes += cell.shards.capacity() * slot;
            for (name, shard) in &cell.shards {
                f.shards += 1;
                f.buckets += shard.agg.singles.len() + shard.agg.groups.len();
                f.bytes += name.len() + shard.agg.heap_bytes();
            }
        }
        f
    }
}

#[derive(Debug, Default)]
struct CellCache {
    /// Kept shards by directory name.
    shards: HashMap<OsString, CachedShard>,
}

#[derive(Debug)]
struct CachedShard {
    id: DirId,
    agg: ShardAgg,
}

/// What identifies a shard directory's state (`lstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirId {
    dev: u64,
    ino: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl DirId {
    /// The identity of the entry `name` of the cell `cell` if it is a
    /// directory (not followed: shards that are symlinks are not members
    /// anyway).
    fn of(cell: &CellDir, name: &OsStr) -> Option<DirId> {
        let st = rustix::fs::statat(cell.fd(), name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let ns = |secs: i64, nsecs: u64| i128::from(secs) * 1_000_000_000 + i128::from(nsecs);
        (FileType::from_raw_mode(st.st_mode) == FileType::Directory).then(|| DirId {
            dev: st.st_dev,
            ino: st.st_ino,
            mtime_ns: ns(st.st_mtime, st.st_mtime_nsec as u64),
            ctime_ns: ns(st.st_ctime, st.st_ctime_nsec as u64),
        })
    }
}

/// The 26 lower-case hex digits of an object key as 13 bytes.
type PackedKey = [u8; OBJ_KEY_LEN / 2];

fn pack(key: &ObjKey) -> PackedKey {
    // `parse_object_name` admits `[0-9a-f]` only, so this is a bijection.
    let nibble = |c: u8| if c <= b'9' { c - b'0' } else { c - b'a' + 10 };
    let mut out = [0u8; OBJ_KEY_LEN / 2];
    for (o, pair) in out.iter_mut().zip(key.chunks_exact(2)) {
        *o = nibble(pair[0]) << 4 | nibble(pair[1]);
    }
    out
}

/// One shard's contribution: its per-key aggregates and its five numbers
/// as if it were the whole store.
#[derive(Debug)]
struct ShardAgg {
    /// Keys held by a single entry, with that entry's size.
    singles: Box<[(PackedKey, u64)]>,
    /// Keys held by several entries (duplicate groups within the shard).
    groups: Box<[(PackedKey, Bucket)]>,
    totals: Totals,
    /// Some key is not home here (its first two hex digits are not the
    /// shard's name), so it may also occur in another shard.
    foreign: bool,
}

impl ShardAgg {
    fn new(name: &OsStr, table: BucketTable<ObjKey>) -> ShardAgg {
        let totals = table.totals();
        let (mut singles, mut groups) = (Vec::new(), Vec::new());
        let mut foreign = false;
        for (key, b) in table.into_buckets() {
            foreign |= name.as_bytes() != &key[..2];
            if b.count == 1 {
                singles.push((pack(&key), b.sum));
            } else {
                groups.push((pack(&key), b));
            }
        }
        ShardAgg {
            singles: singles.into_boxed_slice(),
            groups: groups.into_boxed_slice(),
            totals,
            foreign,
        }
    }

    fn heap_bytes(&self) -> usize {
        self.singles.len() * size_of::<(PackedKey, u64)>()
            + self.groups.len() * size_of::<(PackedKey, Bucket)>()
    }
}

/// The five numbers of the whole cell from its shards' contributions.
fn merge<'a>(shards: impl Iterator<Item = &'a ShardAgg> + Clone) -> Totals {
    if !shards.clone().any(|s| s.foreign) {
        // Only home keys: no key is in two shards.
        let mut totals = Totals::default();
        for s in shards {
            totals.add_disjoint(&s.totals);
        }
        return totals;
    }
    let mut table = BucketTable::<PackedKey>::default();
    for s in shards {
        for &(key, size) in s.singles.iter() {
            table.add(key, size);
        }
        for &(key, b) in s.groups.iter() {
            table.add_bucket(key, b);
        }
    }
    table.totals()
}

/// Whether a listed shard's result is kept.
enum Keep {
    Yes(DirId),
    TooRecent,
    Irregular,
}

/// [`super::scan_store_with`], reusing for every obj shard directory that
/// did not change since the last call the result kept in `cache`, and
/// keeping the new results there.
///
/// The result — the five numbers, `exists`, the anomaly counters and the
/// warnings — is identical to [`super::scan_store_with`]'s on the same
/// store, for any cache content, as long as objects are only ever replaced
/// by rename (see the module comment for what that rules out). Kinds other
/// than obj are scanned without the cache. On an error (cancellation
/// included) the cache is left as it was, and stays usable.
///
/// Cost of a rescan: one listing of the cell, one `lstat` per shard, and a
/// full listing (one `stat` per object) of new or changed shards only.
pub fn scan_store_cached(
    kind: CasKind,
    cell: &Path,
    cancel: &CancelToken,
    limits: ScanLimits,
    cache: &mut ScanCache,
) -> Result<StoreStats, Error> {
    scan_cell_cached(kind, cell, CellOrigin::Configured, cancel, limits, cache)
}

/// [`scan_store_cached`] for a cell of the given origin (see
/// [`super::scan_cell_with`]).
pub fn scan_cell_cached(
    kind: CasKind,
    cell: &Path,
    origin: CellOrigin,
    cancel: &CancelToken,
    limits: ScanLimits,
    cache: &mut ScanCache,
) -> Result<StoreStats, Error> {
    cache.last = CachedScanReport::default();
    if kind != CasKind::Obj {
        // pch/pcm/exe: keys live in manifests that can be rewritten in
        // place without touching any directory's mtime (module comment).
        return scan_cell_with(kind, cell, origin, cancel, limits);
    }
    cancel.check()?;
    let (mut stats, dir) = open_cell(cell, origin)?;
    let Some(dir) = dir else {
        cache.cells.remove(cell);
        return Ok(stats);
    };
    // Taken before anything is listed: a shard modified since then is
    // "too recent" whatever the order in which shards are visited.
    let horizon = now_ns() - RACY_WINDOW_NS;
    let mut scan = Scan::new(cancel, limits);
    let shards = members(&mut scan, cell, &dir, is_shard_name)?;

    // One `lstat` per shard, on this thread (a few µs in all when warm):
    // only new or changed shards are listed, on as many threads as their
    // number warrants.
    let no_cells = CellCache::default();
    let kept = &cache.cells.get(cell).unwrap_or(&no_cells).shards;
    let (mut reused, mut changed, mut changed_ids) = (Vec::new(), Vec::new(), Vec::new());
    for shard in shards {
        scan.tick()?;
        // Before the listing: a change made while we list gives a different
        // identity next time, never a stale result.
        let id = DirId::of(&dir, &shard.name);
        match (id, kept.get(&shard.name)) {
            (Some(id), Some(k)) if k.id == id => reused.push(shard.name),
            _ => {
                changed.push(shard);
                changed_ids.push(id);
            }
        }
    }
    let listed = map_members(&mut scan, &changed, |scan, i, shard| {
        list_shard(scan, &dir, shard, changed_ids[i], horizon)
    })?;

    // Success: replace the cell's entry. Reused shards move over, kept new
    // results are added, shards no longer in the cell are dropped.
    let mut old = cache.cells.remove(cell).unwrap_or_default().shards;
    let mut next = CellCache {
        shards: HashMap::with_capacity(reused.len() + changed.len()),
    };
    let mut report = CachedScanReport {
        shards: (reused.len() + changed.len()) as u64,
        reused: reused.len() as u64,
        rescanned: changed.len() as u64,
        ..CachedScanReport::default()
    };
    for name in reused {
        let (name, kept) = old.remove_entry(&name).expect("a reused shard is in the cache");
        next.shards.insert(name, kept);
    }
    let mut unkept = Vec::new();
    for (shard, (agg, keep)) in changed.into_iter().zip(listed) {
        match keep {
            Keep::Yes(id) => {
                next.shards.insert(shard.name, CachedShard { id, agg });
            }
            Keep::TooRecent => {
                report.too_recent += 1;
                unkept.push(agg);
            }
            Keep::Irregular => {
                report.irregular += 1;
                unkept.push(agg);
            }
        }
    }
    let totals = merge(next.shards.values().map(|s| &s.agg).chain(unkept.iter()));
    cache.cells.insert(cell.to_path_buf(), next);
    cache.last = report;
    finish(&mut stats, totals, scan);
    Ok(stats)
}

/// Lists a new or changed shard whose identity before the listing was
/// `id`, and says whether the result may be kept.
fn list_shard(
    scan: &mut Scan,
    cell: &CellDir,
    shard: &Member,
    id: Option<DirId>,
    horizon: i128,
) -> Result<(ShardAgg, Keep), Error> {
    let before = scan.anomalies;
    let mut table = BucketTable::default();
    scan_shard(scan, cell.fd(), shard, &mut table)?;
    let keep = match id {
        // Any anomaly, or the directory could not be stat'ed.
        _ if scan.anomalies != before => Keep::Irregular,
        None => Keep::Irregular,
        Some(id) if id.mtime_ns >= horizon => Keep::TooRecent,
        Some(id) => Keep::Yes(id),
    };
    Ok((ShardAgg::new(&shard.name, table), keep))
}

/// Wall-clock time in ns since the epoch (the clock file timestamps use).
fn now_ns() -> i128 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_is_a_bijection_on_hex_keys() {
        let a: ObjKey = *b"0d99ae76451a0af5b42cc55ffb";
        let b: ObjKey = *b"0d99ae76451a0af5b42cc55ffa";
        assert_eq!(
            pack(&a),
            [0x0d, 0x99, 0xae, 0x76, 0x45, 0x1a, 0x0a, 0xf5, 0xb4, 0x2c, 0xc5, 0x5f, 0xfb]
        );
        assert_ne!(pack(&a), pack(&b));
        assert_eq!(pack(b"ffffffffffffffffffffffffff"), [0xff; 13]);
        assert_eq!(pack(b"00000000000000000000000000"), [0; 13]);
    }

    #[test]
    fn aggregate_sizes_are_as_documented() {
        assert_eq!(size_of::<(PackedKey, u64)>(), 24);
        assert_eq!(size_of::<(PackedKey, Bucket)>(), 40);
    }

    #[test]
    fn cache_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<ScanCache>();
    }

    fn agg(name: &str, entries: &[(&[u8; 26], u64)]) -> ShardAgg {
        let mut t = BucketTable::default();
        for (k, s) in entries {
            t.add(**k, *s);
        }
        ShardAgg::new(OsStr::new(name), t)
    }

    #[test]
    fn foreign_keys_are_merged_across_shards() {
        let k1 = b"0d99ae76451a0af5b42cc55ffb";
        let k2 = b"ff99ae76451a0af5b42cc55ffb";
        let home = agg("0d", &[(k1, 100), (k1, 150)]);
        let other = agg("ff", &[(k2, 7)]);
        assert!(!home.foreign && !other.foreign);
        let moved = agg("ff", &[(k1, 120), (k2, 9)]);
        assert!(moved.foreign);
        let nl = agg("0d\n", &[(k1, 1)]);
        assert!(nl.foreign, "the name must be exactly the key's first two digits");

        // disjoint: sums
        let t = merge([&home, &other].into_iter());
        assert_eq!((t.total_entries, t.unique_buckets, t.duplicate_groups), (3, 2, 1));
        assert_eq!(t.wasted_bytes, 150);
        // k1 in two shards: one group of three
        let t = merge([&home, &moved].into_iter());
        assert_eq!((t.total_entries, t.unique_buckets, t.duplicate_groups), (4, 2, 1));
        assert_eq!((t.total_bytes, t.wasted_bytes), (379, 270));
    }
}
