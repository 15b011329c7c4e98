//! A bounded map from target to [`TargetRecord`] that forgets the least
//! recently used target first.
//!
//! A target is a *scope* — host and variant, interned once as a small
//! number, since every target of a build shares it — and the `ct.target`
//! path. Nodes live in one slab (a `Vec`) linked in use order by `u32`
//! indices, and the hash table holds only slab indices: each path is stored
//! once, in its node, which matters at 100k targets whose paths are long.

use std::collections::HashMap;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::record::TargetRecord;

const NIL: u32 = u32::MAX;

struct Node {
    scope: u32,
    path: Box<str>,
    record: TargetRecord,
    /// Towards the most recently used end.
    newer: u32,
    /// Towards the least recently used end.
    older: u32,
}

/// The targets, at most `capacity`, in use order.
pub struct TargetLru {
    table: HashTable<u32>,
    nodes: Vec<Node>,
    /// Interned scopes by number. Never shrunk: one per host and variant
    /// ever seen, a handful.
    scopes: Vec<Box<str>>,
    scope_ids: HashMap<Box<str>, u32>,
    hasher: std::collections::hash_map::RandomState,
    capacity: usize,
    /// Most recently used.
    newest: u32,
    /// Least recently used: the next to go.
    oldest: u32,
    evicted: u64,
}

impl TargetLru {
    /// An empty map holding at most `capacity` targets (at least one; the
    /// slab's `u32` links bound it below 2³²).
    pub fn new(capacity: usize) -> Self {
        Self {
            table: HashTable::new(),
            nodes: Vec::new(),
            scopes: Vec::new(),
            scope_ids: HashMap::new(),
            hasher: Default::default(),
            capacity: capacity.clamp(1, NIL as usize - 1),
            newest: NIL,
            oldest: NIL,
            evicted: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Targets forgotten to stay within the capacity, since creation.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// The number of `scope`, if it was ever interned.
    pub fn scope_id(&self, scope: &str) -> Option<u32> {
        self.scope_ids.get(scope).copied()
    }

    /// The number of `scope`, made one if new.
    pub fn intern(&mut self, scope: &str) -> u32 {
        if let Some(&id) = self.scope_ids.get(scope) {
            return id;
        }
        let id = self.scopes.len() as u32;
        self.scopes.push(scope.into());
        self.scope_ids.insert(scope.into(), id);
        id
    }

    /// Every scope, by number.
    pub fn scopes(&self) -> &[Box<str>] {
        &self.scopes
    }

    /// The scope numbered `id` ("" for an unknown number).
    #[cfg(test)]
    pub fn scope(&self, id: u32) -> &str {
        self.scopes.get(id as usize).map_or("", |s| s)
    }

    fn hash(&self, scope: u32, path: &str) -> u64 {
        self.hasher.hash_one((scope, path))
    }

    fn find(&self, hash: u64, scope: u32, path: &str) -> Option<u32> {
        let nodes = &self.nodes;
        self.table
            .find(hash, |&i| {
                let n = &nodes[i as usize];
                n.scope == scope && &*n.path == path
            })
            .copied()
    }

    /// The record of `path` in `scope`, without changing the use order.
    pub fn get(&self, scope: u32, path: &str) -> Option<&TargetRecord> {
        let i = self.find(self.hash(scope, path), scope, path)?;
        Some(&self.nodes[i as usize].record)
    }

    /// The record of `path` in `scope`, made the most recently used; a new
    /// target gets an empty record, forgetting the least recently used one
    /// when full.
    pub fn touch(&mut self, scope: u32, path: &str) -> &mut TargetRecord {
        let hash = self.hash(scope, path);
        let i = match self.find(hash, scope, path) {
            Some(i) => {
                self.unlink(i);
                i
            }
            None => self.insert(hash, scope, path),
        };
        self.link_newest(i);
        &mut self.nodes[i as usize].record
    }

    /// Every target (scope number, path, record) from the least to the most
    /// recently used: the order a restore replays them in to get the same
    /// use order back.
    pub fn iter_oldest_first(&self) -> impl Iterator<Item = (u32, &str, &TargetRecord)> {
        let mut i = self.oldest;
        std::iter::from_fn(move || {
            let node = self.nodes.get(i as usize)?;
            i = node.newer;
            Some((node.scope, &*node.path, &node.record))
        })
    }

    /// Estimated heap bytes held: slab, table, paths, records and scopes.
    pub fn heap_bytes(&self) -> usize {
        let nodes = self.nodes.capacity() * std::mem::size_of::<Node>();
        let table = self.table.allocation_size();
        let owned: usize = self
            .nodes
            .iter()
            .map(|n| n.path.len() + n.record.heap_bytes())
            .sum();
        let scopes: usize = self.scopes.iter().map(|s| 2 * s.len() + 64).sum();
        nodes + table + owned + scopes
    }

    /// A new node for `path` (not linked yet): a fresh slot, or the least
    /// recently used target's when full.
    fn insert(&mut self, hash: u64, scope: u32, path: &str) -> u32 {
        let node = Node {
            scope,
            path: path.into(),
            record: TargetRecord::default(),
            newer: NIL,
            older: NIL,
        };
        let i = if self.nodes.len() < self.capacity {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        } else {
            let victim = self.oldest;
            self.unlink(victim);
            let old = &self.nodes[victim as usize];
            let old_hash = self.hash(old.scope, &old.path);
            if let Ok(entry) = self.table.find_entry(old_hash, |&j| j == victim) {
                entry.remove();
            }
            self.nodes[victim as usize] = node;
            self.evicted += 1;
            victim
        };
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        self.table.insert_unique(hash, i, |&j| {
            let n = &nodes[j as usize];
            hasher.hash_one((n.scope, &*n.path))
        });
        i
    }

    fn unlink(&mut self, i: u32) {
        let (newer, older) = {
            let n = &self.nodes[i as usize];
            (n.newer, n.older)
        };
        match self.nodes.get_mut(newer as usize) {
            Some(n) => n.older = older,
            None => self.newest = older,
        }
        match self.nodes.get_mut(older as usize) {
            Some(n) => n.newer = newer,
            None => self.oldest = newer,
        }
        let n = &mut self.nodes[i as usize];
        (n.newer, n.older) = (NIL, NIL);
    }

    fn link_newest(&mut self, i: u32) {
        let previous = self.newest;
        {
            let n = &mut self.nodes[i as usize];
            n.older = previous;
            n.newer = NIL;
        }
        match self.nodes.get_mut(previous as usize) {
            Some(n) => n.newer = i,
            None => self.oldest = i,
        }
        self.newest = i;
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::{BuildKey, Compile};
    use super::*;

    fn paths(lru: &TargetLru) -> Vec<&str> {
        lru.iter_oldest_first().map(|(_, p, _)| p).collect()
    }

    const C: Compile = Compile {
        build: BuildKey {
            start_unix_ns: 0,
            tie: 0,
        },
        duration_ns: 5,
    };

    #[test]
    fn forgets_the_least_recently_used_beyond_capacity() {
        let mut lru = TargetLru::new(3);
        for p in ["a", "b", "c"] {
            lru.touch(0, p);
        }
        lru.touch(0, "a"); // a is now the most recent: b goes first
        lru.touch(0, "d");
        assert_eq!(paths(&lru), ["c", "a", "d"]);
        assert!(lru.get(0, "b").is_none());
        assert_eq!((lru.len(), lru.evicted()), (3, 1));
        lru.touch(0, "e");
        lru.touch(0, "f");
        assert_eq!(paths(&lru), ["d", "e", "f"]);
        assert_eq!(lru.evicted(), 3);
    }

    #[test]
    fn a_reused_slot_starts_empty_and_is_found_by_its_new_path() {
        let mut lru = TargetLru::new(1);
        lru.touch(0, "x").record(C, 3);
        assert!(lru.touch(0, "y").compiles().is_empty());
        assert!(lru.get(0, "x").is_none());
        assert!(lru.get(0, "y").is_some());
        lru.touch(0, "y").record(C, 3);
        assert_eq!(lru.get(0, "y").unwrap().compiles(), [C]);
    }

    #[test]
    fn the_same_path_in_two_scopes_is_two_targets() {
        let mut lru = TargetLru::new(10);
        let (a, b) = (lru.intern("h\0v1"), lru.intern("h\0v2"));
        assert_eq!((a, b, lru.intern("h\0v1")), (0, 1, 0));
        lru.touch(a, "x.o").record(C, 3);
        assert!(lru.get(b, "x.o").is_none());
        assert!(lru.get(a, "x.o").is_some());
        assert_eq!(lru.scope(b), "h\0v2");
        assert_eq!(lru.scope_id("h\0v3"), None);
    }

    #[test]
    fn many_paths_stay_consistent() {
        let mut lru = TargetLru::new(1000);
        for i in 0..5000u32 {
            lru.touch(0, &format!("t{}", i % 1700));
        }
        assert_eq!(lru.len(), 1000);
        // The last 1000 distinct paths touched are those of i in 4000..5000.
        for i in 4000..5000u32 {
            assert!(lru.get(0, &format!("t{}", i % 1700)).is_some());
        }
        assert_eq!(lru.iter_oldest_first().count(), 1000);
    }
}

/// The map against a plain model: a list of targets, oldest first.
#[cfg(test)]
mod model_tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn behaves_like_a_list_in_use_order(
            capacity in 1usize..8,
            ops in proptest::collection::vec((0u32..2, 0u8..20), 0..200),
        ) {
            let mut lru = TargetLru::new(capacity);
            let mut model: Vec<(u32, String)> = Vec::new();
            let mut evicted = 0u64;
            for (scope, p) in ops {
                let path = format!("p{p}");
                lru.touch(scope, &path);
                if let Some(at) = model.iter().position(|(s, q)| *s == scope && *q == path) {
                    model.remove(at);
                } else if model.len() == capacity {
                    model.remove(0);
                    evicted += 1;
                }
                model.push((scope, path));
                let got: Vec<(u32, String)> =
                    lru.iter_oldest_first().map(|(s, p, _)| (s, p.to_owned())).collect();
                prop_assert_eq!(&got, &model);
                prop_assert_eq!(lru.evicted(), evicted);
                for s in 0..2 {
                    for q in 0..20 {
                        let path = format!("p{q}");
                        let present = model.iter().any(|(ms, mq)| *ms == s && *mq == path);
                        prop_assert_eq!(lru.get(s, &path).is_some(), present);
                    }
                }
            }
        }
    }
}
