//! Joining the two models of a split decode (see [`super::two_halves`]):
//! the second thread's events go into the first's table where the file
//! has them, so the result is the model one decode of the whole file
//! gives, slot for slot.

use super::model::{Build, EventData, MetaEntry, Stored, NO_EVENT};

/// How far each of `other`'s tables moves when appended to `build`'s.
struct Offsets {
    strings: usize,
    meta: usize,
    bools: usize,
    ints: usize,
    doubles: usize,
    strs: usize,
}

impl Offsets {
    fn of(build: &Build) -> Self {
        Offsets {
            strings: build.strings.len(),
            meta: build.meta.len(),
            bools: build.bools.len(),
            ints: build.ints.len(),
            doubles: build.doubles.len(),
            strs: build.strs.len(),
        }
    }

    fn value(&self, v: Stored) -> Stored {
        match v {
            Stored::Str(run) => Stored::Str(run.shifted(self.strings)),
            Stored::BoolArray(run) => Stored::BoolArray(run.shifted(self.bools)),
            Stored::IntArray(run) => Stored::IntArray(run.shifted(self.ints)),
            Stored::DoubleArray(run) => Stored::DoubleArray(run.shifted(self.doubles)),
            Stored::StrArray(run) => Stored::StrArray(run.shifted(self.strs)),
            Stored::Null
            | Stored::Bool(_)
            | Stored::Int(_)
            | Stored::Double(_)
            | Stored::Unsupported { .. } => v,
        }
    }
}

impl Build {
    /// Inserts all of `other`'s events at slot `at` of this build's event
    /// table, appending its strings, metadata and arrays; returns what
    /// `other`'s event ids became (`id + at`). Links between the events
    /// are kept on both sides; linking `other`'s events into this build's
    /// tree is the caller's business.
    ///
    /// Each of `other`'s tables is freed as soon as it is copied: the
    /// memory of both models at once is the peak RSS of the decode.
    pub(super) fn splice_events(&mut self, at: usize, mut other: Build) -> u32 {
        let at = at.min(self.events.len());
        let off = Offsets::of(self);
        self.strings.push_str(&std::mem::take(&mut other.strings));
        self.strs
            .extend(other.strs.iter().map(|r| r.shifted(off.strings)));
        self.bools.extend_from_slice(&other.bools);
        self.ints.extend_from_slice(&other.ints);
        self.doubles.extend_from_slice(&other.doubles);
        self.meta
            .extend(std::mem::take(&mut other.meta).into_iter().map(|m| MetaEntry {
                key: m.key.shifted(off.strings),
                value: off.value(m.value),
            }));

        // u32 throughout: the decoder's text cap keeps every count far
        // below u32::MAX (see Run).
        let (at32, moved) = (at as u32, other.events.len() as u32);
        let ours = |id: u32| {
            if id != NO_EVENT && id >= at32 {
                id + moved
            } else {
                id
            }
        };
        let theirs = |id: u32| if id != NO_EVENT { id + at32 } else { id };
        let after: Vec<EventData> = self.events.drain(at..).collect();
        for e in &mut self.events {
            e.first_child = ours(e.first_child);
            e.next_sibling = ours(e.next_sibling);
        }
        self.events
            .extend(std::mem::take(&mut other.events).into_iter().map(|e| EventData {
                name: e.name.shifted(off.strings),
                rule_type: e.rule_type.shifted(off.strings),
                target: e.target.shifted(off.strings),
                source: e.source.shifted(off.strings),
                metadata: e.metadata.shifted(off.meta),
                first_child: theirs(e.first_child),
                next_sibling: theirs(e.next_sibling),
                ..e
            }));
        self.events.extend(after.into_iter().map(|e| EventData {
            first_child: ours(e.first_child),
            next_sibling: ours(e.next_sibling),
            ..e
        }));
        self.first_root = ours(self.first_root);
        at32
    }

    /// Makes `next` the sibling after `id`.
    pub(super) fn link_sibling(&mut self, id: u32, next: u32) {
        if let Some(e) = self.events.get_mut(id as usize) {
            e.next_sibling = next;
        }
    }

    /// Adds `by` to the file index of `first` and each of its siblings;
    /// returns how many there were.
    pub(super) fn shift_indexes(&mut self, first: u32, by: u32) -> u32 {
        let (mut next, mut count) = (first, 0u32);
        while let Some(e) = self.events.get_mut(next as usize) {
            e.index = e.index.saturating_add(by);
            next = e.next_sibling;
            count += 1;
        }
        count
    }

    /// The last of `first` and its siblings.
    pub(super) fn last_sibling(&self, first: u32) -> u32 {
        let mut last = NO_EVENT;
        let mut next = first;
        while let Some(e) = self.events.get(next as usize) {
            last = next;
            next = e.next_sibling;
        }
        last
    }
}
