//! A bounded map from target key to [`TargetRecord`] that forgets the
//! least recently used target first.
//!
//! Nodes live in one slab (a `Vec`) linked in use order by `u32` indices,
//! and the hash table holds only slab indices: each key is stored once, in
//! its node, which matters at 100k targets whose keys are long paths.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::record::TargetRecord;

const NIL: u32 = u32::MAX;

struct Node {
    key: Box<str>,
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

    /// The record of `key`, without changing the use order.
    pub fn get(&self, key: &str) -> Option<&TargetRecord> {
        let hash = self.hasher.hash_one(key);
        let nodes = &self.nodes;
        let &i = self.table.find(hash, |&i| &*nodes[i as usize].key == key)?;
        Some(&nodes[i as usize].record)
    }

    /// The record of `key`, made the most recently used; a new target gets
    /// an empty record, forgetting the least recently used one when full.
    pub fn touch(&mut self, key: &str) -> &mut TargetRecord {
        let hash = self.hasher.hash_one(key);
        let nodes = &self.nodes;
        let found = self
            .table
            .find(hash, |&i| &*nodes[i as usize].key == key)
            .copied();
        let i = match found {
            Some(i) => {
                self.unlink(i);
                i
            }
            None => self.insert(hash, key),
        };
        self.link_newest(i);
        &mut self.nodes[i as usize].record
    }

    /// Every target from the least to the most recently used: the order a
    /// restore replays them in to get the same use order back.
    pub fn iter_oldest_first(&self) -> impl Iterator<Item = (&str, &TargetRecord)> {
        let mut i = self.oldest;
        std::iter::from_fn(move || {
            let node = self.nodes.get(i as usize)?;
            i = node.newer;
            Some((&*node.key, &node.record))
        })
    }

    /// Estimated heap bytes held: slab, table, keys and records.
    pub fn heap_bytes(&self) -> usize {
        let nodes = self.nodes.capacity() * std::mem::size_of::<Node>();
        let table = self.table.allocation_size();
        let owned: usize = self
            .nodes
            .iter()
            .map(|n| n.key.len() + n.record.heap_bytes())
            .sum();
        nodes + table + owned
    }

    /// A new node for `key` (not linked yet): a fresh slot, or the least
    /// recently used target's when full.
    fn insert(&mut self, hash: u64, key: &str) -> u32 {
        let node = Node {
            key: key.into(),
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
            let old_hash = self.hasher.hash_one(&*self.nodes[victim as usize].key);
            if let Ok(entry) = self.table.find_entry(old_hash, |&j| j == victim) {
                entry.remove();
            }
            self.nodes[victim as usize] = node;
            self.evicted += 1;
            victim
        };
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        self.table
            .insert_unique(hash, i, |&j| hasher.hash_one(&*nodes[j as usize].key));
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

    fn keys(lru: &TargetLru) -> Vec<&str> {
        lru.iter_oldest_first().map(|(k, _)| k).collect()
    }

    #[test]
    fn forgets_the_least_recently_used_beyond_capacity() {
        let mut lru = TargetLru::new(3);
        for k in ["a", "b", "c"] {
            lru.touch(k);
        }
        lru.touch("a"); // a is now the most recent: b goes first
        lru.touch("d");
        assert_eq!(keys(&lru), ["c", "a", "d"]);
        assert!(lru.get("b").is_none());
        assert_eq!((lru.len(), lru.evicted()), (3, 1));
        lru.touch("e");
        lru.touch("f");
        assert_eq!(keys(&lru), ["d", "e", "f"]);
        assert_eq!(lru.evicted(), 3);
    }

    #[test]
    fn a_reused_slot_starts_empty_and_is_found_by_its_new_key() {
        let mut lru = TargetLru::new(1);
        let c = Compile {
            build: BuildKey::default(),
            duration_ns: 5,
        };
        lru.touch("x").record(c, 3);
        assert!(lru.touch("y").compiles().is_empty());
        assert!(lru.get("x").is_none());
        assert!(lru.get("y").is_some());
        lru.touch("y").record(c, 3);
        assert_eq!(lru.get("y").unwrap().compiles(), [c]);
    }

    #[test]
    fn many_keys_stay_consistent() {
        let mut lru = TargetLru::new(1000);
        for i in 0..5000u32 {
            lru.touch(&format!("t{}", i % 1700));
        }
        assert_eq!(lru.len(), 1000);
        // The last 1000 distinct keys touched are those of i in 4000..5000.
        for i in 4000..5000u32 {
            assert!(lru.get(&format!("t{}", i % 1700)).is_some());
        }
        assert_eq!(lru.iter_oldest_first().count(), 1000);
    }
}
