//! Grouping entries by bucket key (formats.md §6.2, identical for every kind).
//!
//! Only per-bucket aggregates are kept (count, sum, min), never a list of
//! entries, so memory grows with the number of distinct keys, not with the
//! number of files, and `wasted_bytes` (Σ sum − min over groups with ≥ 2
//! entries) needs nothing more.

use std::collections::HashMap;
use std::hash::Hash;

/// The aggregate of one bucket key: number of entries, Σ sizes, min size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bucket {
    pub(crate) count: u64,
    pub(crate) sum: u64,
    pub(crate) min: u64,
}

impl Bucket {
    /// Folds `other` (the same key seen elsewhere) into `self`.
    fn absorb(&mut self, other: Bucket) {
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        self.min = self.min.min(other.min);
    }
}

/// The five numbers of formats.md §6.7.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub total_bytes: u64,
    pub total_entries: u64,
    pub unique_buckets: u64,
    pub wasted_bytes: u64,
    pub duplicate_groups: u64,
}

impl Totals {
    /// Adds the totals of a table that has no key in common with the ones
    /// already added (keys of disjoint tables neither merge nor form new
    /// duplicate groups, so the five numbers simply add up).
    pub(crate) fn add_disjoint(&mut self, o: &Totals) {
        self.total_bytes = self.total_bytes.saturating_add(o.total_bytes);
        self.total_entries += o.total_entries;
        self.unique_buckets += o.unique_buckets;
        self.wasted_bytes = self.wasted_bytes.saturating_add(o.wasted_bytes);
        self.duplicate_groups += o.duplicate_groups;
    }
}

#[derive(Debug)]
pub(crate) struct BucketTable<K> {
    buckets: HashMap<K, Bucket>,
    entries: u64,
    bytes: u64,
}

impl<K: Hash + Eq> Default for BucketTable<K> {
    fn default() -> Self {
        Self {
            buckets: HashMap::new(),
            entries: 0,
            bytes: 0,
        }
    }
}

impl<K: Hash + Eq> BucketTable<K> {
    /// Records one entry of `size` bytes. Sums saturate: Python's integers
    /// do not overflow, and 2^64 bytes cannot exist on one file system
    /// anyway; saturating keeps a forged sparse file from panicking us.
    pub(crate) fn add(&mut self, key: K, size: u64) {
        self.add_bucket(
            key,
            Bucket {
                count: 1,
                sum: size,
                min: size,
            },
        );
    }

    /// Records `b.count` entries of one key at once (an aggregate kept from
    /// an earlier scan). Saturating sums are associative, so adding
    /// aggregates gives exactly what adding their entries one by one gives.
    pub(crate) fn add_bucket(&mut self, key: K, b: Bucket) {
        self.entries += b.count;
        self.bytes = self.bytes.saturating_add(b.sum);
        self.buckets.entry(key).and_modify(|a| a.absorb(b)).or_insert(b);
    }

    /// The per-key aggregates, in no particular order.
    pub(crate) fn into_buckets(self) -> impl Iterator<Item = (K, Bucket)> {
        self.buckets.into_iter()
    }

    /// Adds the entries of `other` (another worker's share of the store).
    pub(crate) fn merge(&mut self, other: BucketTable<K>) {
        self.entries += other.entries;
        self.bytes = self.bytes.saturating_add(other.bytes);
        if self.buckets.is_empty() {
            self.buckets = other.buckets;
            return;
        }
        for (key, b) in other.buckets {
            self.buckets.entry(key).and_modify(|a| a.absorb(b)).or_insert(b);
        }
    }

    pub(crate) fn totals(&self) -> Totals {
        let mut t = Totals {
            total_bytes: self.bytes,
            total_entries: self.entries,
            unique_buckets: self.buckets.len() as u64,
            ..Totals::default()
        };
        for b in self.buckets.values().filter(|b| b.count >= 2) {
            t.duplicate_groups += 1;
            t.wasted_bytes = t.wasted_bytes.saturating_add(b.sum - b.min);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_three_variants() {
        // formats.md §6.7: one object group with sizes 100, 150, 120.
        let mut t = BucketTable::default();
        for size in [100, 150, 120] {
            t.add("foo", size);
        }
        t.add("bar", 7);
        let got = t.totals();
        assert_eq!(
            got,
            Totals {
                total_bytes: 377,
                total_entries: 4,
                unique_buckets: 2,
                wasted_bytes: 270,
                duplicate_groups: 1
            }
        );
    }

    #[test]
    fn merge_equals_single_table() {
        let entries = [("a", 5), ("b", 1), ("a", 9), ("c", 4), ("b", 2), ("a", 3)];
        let mut whole = BucketTable::default();
        for (k, s) in entries {
            whole.add(k, s);
        }
        let (mut left, mut right) = (BucketTable::default(), BucketTable::default());
        for (i, (k, s)) in entries.into_iter().enumerate() {
            if i % 2 == 0 {
                left.add(k, s)
            } else {
                right.add(k, s)
            }
        }
        left.merge(right);
        assert_eq!(left.totals(), whole.totals());
        let mut empty = BucketTable::default();
        empty.merge(left);
        assert_eq!(empty.totals(), whole.totals());
    }

    #[test]
    fn aggregates_and_disjoint_totals_equal_entries() {
        let entries = [
            ("a", 5),
            ("b", 1),
            ("a", 9),
            ("c", 4),
            ("b", 2),
            ("a", 3),
            ("d", 8),
        ];
        let mut whole = BucketTable::default();
        for (k, s) in entries {
            whole.add(k, s);
        }
        // "a" and "b" in one part, "c" and "d" in the other: disjoint keys
        let (mut ab, mut cd) = (BucketTable::default(), BucketTable::default());
        for (k, s) in entries {
            if k < "c" {
                ab.add(k, s)
            } else {
                cd.add(k, s)
            }
        }
        let mut sum = ab.totals();
        sum.add_disjoint(&cd.totals());
        assert_eq!(sum, whole.totals());
        // re-adding the aggregates of both parts rebuilds the same table
        let mut rebuilt = BucketTable::default();
        for (k, b) in ab.into_buckets().chain(cd.into_buckets()) {
            rebuilt.add_bucket(k, b);
        }
        assert_eq!(rebuilt.totals(), whole.totals());
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(BucketTable::<u8>::default().totals(), Totals::default());
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        let mut t = BucketTable::default();
        t.add(1u8, u64::MAX);
        t.add(1u8, u64::MAX);
        let got = t.totals();
        assert_eq!(got.total_bytes, u64::MAX);
        // the group sum saturated at MAX and its min is MAX: no panic, zero waste
        assert_eq!(got.wasted_bytes, 0);
        assert_eq!(got.duplicate_groups, 1);
    }
}
