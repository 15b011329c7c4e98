//! What the history keeps of one target: its most recent actual compiles,
//! each tagged with the build it came from, oldest first; and the CAS keys
//! its object last had (formats.md §6.3), for the rebuild reasons.

use crate::rebuild::CasKey;

/// Where a build sits in the order builds are processed: its start (Unix
/// ns) and, between builds starting in the same nanosecond, bits of its
/// trace id. Both are read from the build's files, so a re-read of the same
/// build has the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BuildKey {
    pub start_unix_ns: i64,
    pub tie: u32,
}

impl BuildKey {
    /// The key of a build starting at `start_unix_ns` with trace id `trace_id`.
    pub fn new(start_unix_ns: i64, trace_id: &[u8; 16]) -> Self {
        let tie = u32::from_be_bytes([trace_id[0], trace_id[1], trace_id[2], trace_id[3]]);
        Self { start_unix_ns, tie }
    }
}

/// One actual compile of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compile {
    pub build: BuildKey,
    pub duration_ns: i64,
}

/// The CAS key a build's rule of a target had (compiled, or served by a
/// cache: either way the object then existed with that key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Seen {
    pub build: BuildKey,
    pub key: CasKey,
}

/// Keys kept per target: the newest and the one before, so that the last
/// committed build, read again, still finds the key before its own (as
/// the compiles' K + 1).
pub(crate) const SEEN_KEPT: usize = 2;

/// The compiles of one target, ascending by build, at most the window the
/// history was configured with; and its last [`SEEN_KEPT`] keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetRecord {
    compiles: Vec<Compile>,
    /// The first `seen_len`, ascending by build; none for targets without
    /// CAS names. Inline, not on the heap: every compile of a build looks
    /// its key up, and a pointer to chase per rule was a cache miss each
    /// (~10 ms at 100k rules).
    seen: [Seen; SEEN_KEPT],
    seen_len: u8,
}

impl TargetRecord {
    pub fn compiles(&self) -> &[Compile] {
        &self.compiles
    }

    /// Records `compile`, keeping the `window` newest. A compile of a build
    /// already recorded replaces it (re-applying a build changes nothing);
    /// one older than every kept compile of a full record is not kept.
    /// Returns whether the record changed.
    pub fn record(&mut self, compile: Compile, window: usize) -> bool {
        let window = window.max(1);
        match self.compiles.binary_search_by_key(&compile.build, |c| c.build) {
            Ok(i) => {
                let changed = self.compiles[i] != compile;
                self.compiles[i] = compile;
                changed
            }
            Err(0) if self.compiles.len() >= window => false,
            Err(i) => {
                // Exact growth: most targets keep one or two compiles, and
                // doubling would leave a third of the memory unused.
                self.compiles.reserve_exact(1);
                self.compiles.insert(i, compile);
                let excess = self.compiles.len().saturating_sub(window);
                self.compiles.drain(..excess);
                true
            }
        }
    }

    /// The compiles of builds strictly older than `build`: the only ones a
    /// build may look at, so that its numbers do not depend on whether its
    /// own (or a newer build's) compiles were recorded already.
    pub fn before(&self, build: BuildKey) -> &[Compile] {
        let end = self.compiles.partition_point(|c| c.build < build);
        &self.compiles[..end]
    }

    /// Duration of the most recent compile before `build`, ns.
    pub fn last_before(&self, build: BuildKey) -> Option<i64> {
        self.before(build).last().map(|c| c.duration_ns)
    }

    /// Median duration of the last `window` compiles before `build`, ns (the
    /// mean of the two middle ones for an even count).
    pub fn median_before(&self, build: BuildKey, window: usize) -> Option<f64> {
        let older = self.before(build);
        let last = &older[older.len().saturating_sub(window.max(1))..];
        median(last)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.compiles.capacity() * std::mem::size_of::<Compile>()
    }

    pub fn seen(&self) -> &[Seen] {
        &self.seen[..usize::from(self.seen_len)]
    }

    /// Records the key a build saw, keeping the newest [`SEEN_KEPT`]; a
    /// build already recorded is replaced. Returns whether anything changed.
    pub fn record_seen(&mut self, seen: Seen) -> bool {
        // In place (no allocation: a commit records a key per compile).
        let len = usize::from(self.seen_len);
        let kept = &mut self.seen[..len];
        match kept.binary_search_by_key(&seen.build, |s| s.build) {
            Ok(i) if kept[i] == seen => false,
            Ok(i) => {
                kept[i] = seen;
                true
            }
            Err(0) if len >= SEEN_KEPT => false,
            Err(i) if len < SEEN_KEPT => {
                self.seen.copy_within(i..len, i + 1);
                self.seen[i] = seen;
                self.seen_len += 1;
                true
            }
            Err(i) => {
                // Full: the oldest goes, the new one lands before slot i.
                self.seen.copy_within(1..i, 0);
                self.seen[i - 1] = seen;
                true
            }
        }
    }

    /// The newest key of a build strictly older than `build`.
    pub fn key_before(&self, build: BuildKey) -> Option<CasKey> {
        let seen = self.seen();
        let end = seen.partition_point(|s| s.build < build);
        end.checked_sub(1).map(|i| seen[i].key)
    }
}

/// The median of `compiles`' durations; on the stack (the window is at
/// most 255 compiles): this runs once per rule of a 100k-rule build.
fn median(compiles: &[Compile]) -> Option<f64> {
    let mut buf = [0i64; 256];
    let v = buf.get_mut(..compiles.len())?;
    if v.is_empty() {
        return None;
    }
    for (d, c) in v.iter_mut().zip(compiles) {
        *d = c.duration_ns;
    }
    v.sort_unstable();
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid] as f64
    } else {
        (v[mid - 1] as f64 + v[mid] as f64) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: i64) -> BuildKey {
        BuildKey {
            start_unix_ns: t,
            tie: 0,
        }
    }

    fn compile(t: i64, d: i64) -> Compile {
        Compile {
            build: key(t),
            duration_ns: d,
        }
    }

    #[test]
    fn keeps_the_window_newest_in_build_order() {
        let mut r = TargetRecord::default();
        for (t, d) in [(30, 3), (10, 1), (20, 2), (40, 4)] {
            assert!(r.record(compile(t, d), 3));
        }
        let kept: Vec<i64> = r.compiles().iter().map(|c| c.duration_ns).collect();
        assert_eq!(kept, [2, 3, 4]);
        // Older than everything kept in a full record: not kept.
        assert!(!r.record(compile(5, 9), 3));
        assert_eq!(r.compiles().len(), 3);
    }

    #[test]
    fn keys_keep_the_newest_two_and_look_strictly_back() {
        let k = |n: u64| CasKey {
            file_hash: n,
            dep_hash: 0,
            macro_state_hash: 0,
        };
        let mut r = TargetRecord::default();
        assert!(r.record_seen(Seen {
            build: key(20),
            key: k(2)
        }));
        assert!(r.record_seen(Seen {
            build: key(10),
            key: k(1)
        }));
        assert!(
            !r.record_seen(Seen {
                build: key(10),
                key: k(1)
            }),
            "idempotent"
        );
        assert!(r.record_seen(Seen {
            build: key(30),
            key: k(3)
        }));
        assert_eq!(r.seen().len(), 2);
        assert!(
            !r.record_seen(Seen {
                build: key(5),
                key: k(9)
            }),
            "older than both"
        );
        assert_eq!(r.key_before(key(30)), Some(k(2)));
        assert_eq!(r.key_before(key(31)), Some(k(3)));
        assert_eq!(r.key_before(key(20)), None, "forgotten");
        assert!(
            r.record_seen(Seen {
                build: key(30),
                key: k(7)
            }),
            "replaced"
        );
        assert_eq!(r.key_before(key(99)), Some(k(7)));
    }

    #[test]
    fn re_recording_a_build_is_idempotent() {
        let mut r = TargetRecord::default();
        assert!(r.record(compile(10, 1), 3));
        assert!(!r.record(compile(10, 1), 3));
        assert!(r.record(compile(10, 7), 3));
        assert_eq!(r.compiles(), [compile(10, 7)]);
    }

    #[test]
    fn lookups_see_only_strictly_older_builds() {
        let mut r = TargetRecord::default();
        for (t, d) in [(10, 100), (20, 300), (30, 200), (40, 1000)] {
            r.record(compile(t, d), 10);
        }
        assert_eq!(r.last_before(key(10)), None);
        assert_eq!(r.last_before(key(30)), Some(300));
        assert_eq!(r.last_before(key(35)), Some(200));
        // 100, 300, 200 → 200; with 1000: (200 + 300) / 2.
        assert_eq!(r.median_before(key(40), 10), Some(200.0));
        assert_eq!(r.median_before(key(41), 10), Some(250.0));
        // Window 2 before 41: 200, 1000.
        assert_eq!(r.median_before(key(41), 2), Some(600.0));
        assert_eq!(r.median_before(key(5), 10), None);
    }
}
