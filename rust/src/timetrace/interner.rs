//! Names shared by all the TUs of a rollup, each stored once and named by
//! a `u32`: the rollup's tallies key on these instead of strings.

use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;

pub(crate) type NameId = u32;

pub(crate) struct Interner {
    names: Vec<Box<str>>,
    table: HashTable<NameId>,
    hasher: RandomState,
}

impl Interner {
    /// Id 0 is the empty name, as in ClangBuildAnalyzer (an event without
    /// detail has the name "").
    pub fn new() -> Self {
        let mut interner = Self {
            names: Vec::new(),
            table: HashTable::new(),
            hasher: RandomState::new(),
        };
        interner.intern("");
        interner
    }

    pub fn intern(&mut self, name: &str) -> NameId {
        let hash = self.hasher.hash_one(name);
        let names = &self.names;
        if let Some(&id) = self.table.find(hash, |&id| &*names[id as usize] == name) {
            return id;
        }
        let id = self.names.len() as NameId;
        self.names.push(name.into());
        let (names, hasher) = (&self.names, &self.hasher);
        self.table
            .insert_unique(hash, id, |&id| hasher.hash_one(&*names[id as usize]));
        id
    }

    pub fn get(&self, id: NameId) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_name_same_id() {
        let mut i = Interner::new();
        assert_eq!(i.intern(""), 0);
        let a = i.intern("a");
        let b = i.intern("b");
        assert_ne!(a, b);
        assert_eq!(i.intern("a"), a);
        assert_eq!(i.get(b), "b");
        assert_eq!(i.len(), 3);
    }
}
