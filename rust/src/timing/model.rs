//! The typed model of one `timing.json` (formats.md §2.2–§2.6).
//!
//! The model owns its data in a few flat tables instead of one allocation
//! per event, string and metadata entry: the 100k-rule benchmark build
//! (61 MB of JSON) is ~35 MB in a handful of buffers instead of ~64 MB in
//! 170k allocations, it is built and freed in a fraction of the time, and
//! the file text is no longer needed once it is decoded, so its memory can
//! hold the OTLP output (design.md §7: peak RSS ≤ 2× the file).
//!
//! * every string (names, paths, metadata keys and string values) is a
//!   byte range of one string arena;
//! * events sit in one table, each linking to its first child and its next
//!   sibling, so that no event needs a `Vec` of its own;
//! * metadata entries of one event are one contiguous run of the entry
//!   table; array values are runs of the typed array tables.
//!
//! Consumers read it through borrowed views ([`Event`], [`MetaValue`]).
//! The defaults of formats.md §2.9 are applied while decoding, so later consumers
//! (metrics, outcomes merge) all see the same interpretation.

use std::fmt;
use std::ops::Range;

use crate::retain::Kept;

/// Metadata key of the cache layer that served a compile rule (formats.md §2.6):
/// `cas` or `other` as compiletools writes it; recomputed by the outcomes
/// merge and refined by per-TU ccache attribution.
pub const CACHE_LAYER_KEY: &str = "ct.rule.cache_layer";

/// A run of one of the build's tables (or bytes of its string arena).
///
/// u32 offsets keep the tables small; [`super::decode`] refuses text whose
/// offsets would not fit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Run {
    start: u32,
    len: u32,
}

impl Run {
    /// The run `[start, end)`; offsets past `u32::MAX` give an empty run
    /// (unreachable within the decoder's size cap, but never a panic).
    pub(super) fn new(start: usize, end: usize) -> Self {
        match (u32::try_from(start), u32::try_from(end.saturating_sub(start))) {
            (Ok(start), Ok(len)) => Run { start, len },
            _ => Run::default(),
        }
    }

    pub(super) fn range(self) -> Range<usize> {
        let start = self.start as usize;
        start..start + self.len as usize
    }

    /// The same run in a table that gained `by` entries in front (see
    /// [`super::splice`]).
    pub(super) fn shifted(self, by: usize) -> Self {
        let range = self.range();
        Run::new(range.start + by, range.end + by)
    }
}

/// The last few distinct strings [`Build::push_str_shared`] stored.
#[derive(Debug, Clone, Default)]
pub(super) struct Recent {
    runs: [Run; 16],
    /// The slot the next new string replaces (round robin).
    next: usize,
}

impl Recent {
    fn find(&self, strings: &str, s: &str) -> Option<Run> {
        self.runs
            .iter()
            .find(|run| run.len as usize == s.len() && strings.get(run.range()) == Some(s))
            .copied()
    }

    fn insert(&mut self, run: Run) {
        self.runs[self.next] = run;
        self.next = (self.next + 1) % self.runs.len();
    }
}

/// The model's large tables kept between builds.
static KEPT_STRINGS: Kept<u8> = Kept::new();
static KEPT_EVENTS: Kept<EventData> = Kept::new();
static KEPT_META: Kept<MetaEntry> = Kept::new();

/// Frees the model's kept tables (the FFI's `ct_kept_buffers_release`
/// frees every kept buffer); returns their capacity in bytes.
pub(crate) fn release_kept() -> usize {
    KEPT_STRINGS.release() + KEPT_EVENTS.release() + KEPT_META.release()
}

/// Above glibc's largest dynamic mmap threshold (32 MiB on 64-bit, see
/// mallopt(3) `M_MMAP_THRESHOLD`): blocks this large are always mapped on
/// their own, and unmapped when freed.
const MAPPED_MIN: usize = (32 << 20) + (1 << 20);

/// "No event": the end of a sibling list, or no children.
pub(super) const NO_EVENT: u32 = u32::MAX;

/// One event as stored.
#[derive(Debug, Clone, Copy)]
pub(super) struct EventData {
    /// Position inside the parent's array as stored in the file, counting
    /// elements that were skipped as invalid (input of the span id).
    pub(super) index: u32,
    /// `rule_type` present ⇒ rule, absent ⇒ phase (formats.md §2.4).
    pub(super) is_rule: bool,
    pub(super) name: Run,
    pub(super) rule_type: Run,
    pub(super) target: Run,
    pub(super) source: Run,
    /// Entries of the metadata table, in file order with duplicate keys
    /// resolved (last value wins, in the first key's position, as a Python
    /// dict does).
    pub(super) metadata: Run,
    /// A phase's `rules` or a rule's `children`, whichever applies.
    pub(super) first_child: u32,
    pub(super) next_sibling: u32,
    /// Monotonic start and end (formats.md §2.9 defaults applied).
    pub(super) start: f64,
    pub(super) end: f64,
}

/// A metadata value as stored: strings and arrays are runs of the tables.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Stored {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    Str(Run),
    BoolArray(Run),
    IntArray(Run),
    DoubleArray(Run),
    StrArray(Run),
    Unsupported { truthy: bool },
}

#[derive(Debug, Clone, Copy)]
pub(super) struct MetaEntry {
    pub(super) key: Run,
    pub(super) value: Stored,
}

/// Identifies one event of a [`Build`] (for the side-file merges, which
/// change metadata while walking the rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventId(u32);

impl EventId {
    /// Position of the event in its build's event table, in
    /// `0..Build::event_count()`: lets per-event results live in a plain
    /// `Vec` instead of a map (the analytics of 100k rules).
    pub fn slot(self) -> usize {
        self.0 as usize
    }
}

/// One build: the top-level object and every event under it.
#[derive(Debug, Clone)]
pub struct Build {
    /// Wall clock of the root end, as written (formats.md §2.2); `None` if absent
    /// or not a string.
    pub timestamp: Option<String>,
    pub total_elapsed_s: Option<f64>,
    pub variant: String,
    pub backend: String,
    /// Root start on the monotonic clock; absent in legacy (< 8.3.0) files.
    pub start_s: Option<f64>,
    /// First of the root's children (the top-level `phases` array).
    pub(super) first_root: u32,
    pub(super) events: Vec<EventData>,
    pub(super) strings: String,
    pub(super) meta: Vec<MetaEntry>,
    pub(super) bools: Vec<bool>,
    pub(super) ints: Vec<i64>,
    pub(super) doubles: Vec<f64>,
    pub(super) strs: Vec<Run>,
    pub(super) recent: Recent,
}

impl Default for Build {
    fn default() -> Self {
        Build {
            timestamp: None,
            total_elapsed_s: None,
            variant: String::new(),
            backend: String::new(),
            start_s: None,
            first_root: NO_EVENT,
            events: Vec::new(),
            strings: String::new(),
            meta: Vec::new(),
            bools: Vec::new(),
            ints: Vec::new(),
            doubles: Vec::new(),
            strs: Vec::new(),
            recent: Recent::default(),
        }
    }
}

impl Build {
    /// Root start, default 0.0 (formats.md §2.9).
    pub fn root_start_s(&self) -> f64 {
        self.start_s.unwrap_or(0.0)
    }

    /// Root duration, default 0.0.
    pub fn total_elapsed(&self) -> f64 {
        self.total_elapsed_s.unwrap_or(0.0)
    }

    /// Number of events (phases and rules at any depth): the bound of
    /// [`EventId::slot`].
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    /// The root's children, in file order.
    pub fn children(&self) -> Events<'_> {
        Events {
            build: self,
            next: self.first_root,
        }
    }

    /// The event `id` names; `None` when it is out of range (an id is only
    /// meaningful for the build that gave it).
    pub fn event(&self, id: EventId) -> Option<Event<'_>> {
        Some(Event {
            build: self,
            id: id.0,
            data: self.events.get(id.0 as usize)?,
        })
    }

    /// Calls `f` for every rule reachable from the root through phases only:
    /// sub-phases are descended into, rule `children` are not. These are the
    /// rules compiletools' post-build annotation reaches (formats.md §2.6) and,
    /// restricted to `compile`, the `C` of the aggregates (formats.md §3.4).
    pub fn for_each_phase_rule<'b>(&'b self, f: &mut impl FnMut(Event<'b>)) {
        fn walk<'b>(events: Events<'b>, f: &mut impl FnMut(Event<'b>)) {
            for event in events {
                if event.is_rule() {
                    f(event);
                } else {
                    walk(event.children(), f);
                }
            }
        }
        walk(self.children(), f);
    }

    /// The rules [`Build::for_each_phase_rule`] reaches, as ids (to change
    /// their metadata).
    pub fn phase_rule_ids(&self) -> Vec<EventId> {
        let mut ids = Vec::new();
        self.for_each_phase_rule(&mut |e| ids.push(e.id()));
        ids
    }

    /// Every rule (non-phase event) at any depth, rule `children` included,
    /// parents before their children.
    pub fn rule_ids(&self) -> Vec<EventId> {
        fn walk(events: Events<'_>, ids: &mut Vec<EventId>) {
            for event in events {
                if event.is_rule() {
                    ids.push(event.id());
                }
                walk(event.children(), ids);
            }
        }
        let mut ids = Vec::new();
        walk(self.children(), &mut ids);
        ids
    }

    /// Sets one metadata key of event `id` the way a Python dict assignment
    /// does, which is how compiletools updates rule metadata: an existing key
    /// keeps its position and gets the new value, a new key is appended.
    /// Ids of another build are ignored.
    pub fn set_metadata(&mut self, id: EventId, key: &str, value: MetaValue<'_>) {
        let Some(run) = self.events.get(id.0 as usize).map(|e| e.metadata) else {
            return;
        };
        let value = self.store(value);
        let strings = &self.strings;
        let entries = self.meta.get_mut(run.range()).unwrap_or_default();
        if let Some(entry) = entries
            .iter_mut()
            .find(|e| strings.get(e.key.range()) == Some(key))
        {
            entry.value = value;
            return;
        }
        // The event's run must stay contiguous: unless it already ends the
        // table, move it to the end first (the old entries become unused).
        let mut start = run.range().start;
        if run.range().end != self.meta.len() {
            start = self.meta.len();
            let entries = self.meta.get(run.range()).unwrap_or_default().to_vec();
            self.meta.extend_from_slice(&entries);
        }
        let key = self.push_str_shared(key);
        self.meta.push(MetaEntry { key, value });
        let run = Run::new(start, self.meta.len());
        if let Some(event) = self.events.get_mut(id.0 as usize) {
            event.metadata = run;
        }
    }

    /// Copies a value (possibly a view into another build) into the tables.
    fn store(&mut self, value: MetaValue<'_>) -> Stored {
        match value {
            MetaValue::Null => Stored::Null,
            MetaValue::Bool(b) => Stored::Bool(b),
            MetaValue::Int(i) => Stored::Int(i),
            MetaValue::Double(d) => Stored::Double(d),
            MetaValue::Str(s) => Stored::Str(self.push_value_str(s)),
            MetaValue::BoolArray(v) => Stored::BoolArray(push_run(&mut self.bools, v)),
            MetaValue::IntArray(v) => Stored::IntArray(push_run(&mut self.ints, v)),
            MetaValue::DoubleArray(v) => Stored::DoubleArray(push_run(&mut self.doubles, v)),
            MetaValue::StrArray(v) => {
                let items: Vec<Run> = v.iter().map(|s| self.push_str(s)).collect();
                Stored::StrArray(push_run(&mut self.strs, &items))
            }
            MetaValue::Unsupported { truthy } => Stored::Unsupported { truthy },
        }
    }

    /// Reserves the tables for decoding `text_len` bytes of JSON text, and
    /// asks for huge pages behind them (see [`crate::input::pages`]): most
    /// of the decode time of a large file would otherwise go to page faults
    /// while the tables fill. Reserved but unused memory costs no RSS.
    pub(super) fn reserve_for_text(&mut self, text_len: usize) {
        use crate::input::pages::{advise_huge_pages, advise_huge_pages_string};
        // Tables kept from the previous build come with their pages
        // faulted in (see crate::retain).
        let mut strings = KEPT_STRINGS.take(text_len, text_len);
        strings.clear();
        self.strings = String::from_utf8(strings).unwrap_or_default();
        self.events = KEPT_EVENTS.take(text_len / 256, text_len / 256);
        self.events.clear();
        self.meta = KEPT_META.take(text_len / 64, text_len / 64);
        self.meta.clear();
        // Every string of the model is a string of the text, never longer
        // decoded than escaped: the arena never grows while decoding.
        if self.strings.try_reserve_exact(text_len).is_ok() {
            advise_huge_pages_string(&mut self.strings);
        }
        // compiletools writes a few hundred bytes per event and ~30 per
        // metadata entry; more only means that the table grows (and loses
        // the advice for the part past the reservation).
        if self.events.try_reserve_exact(text_len / 256).is_ok() {
            advise_huge_pages(&mut self.events);
        }
        if self.meta.try_reserve_exact(text_len / 64).is_ok() {
            advise_huge_pages(&mut self.meta);
        }
    }

    /// [`Self::reserve_for_text`] without the kept tables (they serve the
    /// main decode; this is the second thread's, see
    /// [`super::two_halves`]).
    ///
    /// Each table is reserved at no less than [`MAPPED_MIN`]: glibc maps
    /// so large a block on its own and unmaps it when freed, so the second
    /// model's memory goes back to the system once it is spliced into the
    /// first instead of staying in the thread's malloc arena (+20 MiB of
    /// RSS between 100k-rule builds, measured). Reserved but untouched
    /// memory costs no RSS.
    pub(super) fn reserve_fresh_for_text(&mut self, text_len: usize) {
        use crate::input::pages::{advise_huge_pages, advise_huge_pages_string};
        fn at_least<T>(n: usize) -> usize {
            n.max(MAPPED_MIN / std::mem::size_of::<T>().max(1))
        }
        if self.strings.try_reserve_exact(at_least::<u8>(text_len)).is_ok() {
            advise_huge_pages_string(&mut self.strings);
        }
        if self
            .events
            .try_reserve_exact(at_least::<EventData>(text_len / 256))
            .is_ok()
        {
            advise_huge_pages(&mut self.events);
        }
        if self
            .meta
            .try_reserve_exact(at_least::<MetaEntry>(text_len / 64))
            .is_ok()
        {
            advise_huge_pages(&mut self.meta);
        }
    }

    /// Frees the model, keeping its three large tables for the next build's
    /// decode (bounded, see [`crate::retain`]).
    pub fn recycle(self) {
        KEPT_STRINGS.give(self.strings.into_bytes());
        KEPT_EVENTS.give(self.events);
        KEPT_META.give(self.meta);
    }

    /// Appends `s` to the string arena.
    pub(super) fn push_str(&mut self, s: &str) -> Run {
        let start = self.strings.len();
        self.strings.push_str(s);
        Run::new(start, self.strings.len())
    }

    /// Stores `s` as the tail of one of `runs` when it is one (an event's
    /// name is usually the file name ending its source or target), else
    /// appends it.
    pub(super) fn push_str_or_suffix(&mut self, s: &str, runs: &[Run]) -> Run {
        for &run in runs {
            let range = run.range();
            if self.str(run).ends_with(s) {
                return Run::new(range.end - s.len(), range.end);
            }
        }
        self.push_str(s)
    }

    /// Stores a metadata string value: short ones (`obj`, `cas`, `other`)
    /// repeat on every rule and are shared, long ones (paths, ids) are not
    /// worth looking up.
    pub(super) fn push_value_str(&mut self, s: &str) -> Run {
        const SHARED_MAX: usize = 24;
        if s.len() <= SHARED_MAX {
            self.push_str_shared(s)
        } else {
            self.push_str(s)
        }
    }

    /// Stores `s` once for all its occurrences while it is among the last
    /// few distinct strings stored this way (metadata keys and rule types
    /// repeat on every rule).
    pub(super) fn push_str_shared(&mut self, s: &str) -> Run {
        if let Some(run) = self.recent.find(&self.strings, s) {
            return run;
        }
        let run = self.push_str(s);
        self.recent.insert(run);
        run
    }

    pub(super) fn str(&self, run: Run) -> &str {
        self.strings.get(run.range()).unwrap_or("")
    }

    /// The view of a stored value.
    pub(super) fn value(&self, v: Stored) -> MetaValue<'_> {
        match v {
            Stored::Null => MetaValue::Null,
            Stored::Bool(b) => MetaValue::Bool(b),
            Stored::Int(i) => MetaValue::Int(i),
            Stored::Double(d) => MetaValue::Double(d),
            Stored::Str(run) => MetaValue::Str(self.str(run)),
            Stored::BoolArray(run) => MetaValue::BoolArray(slice(&self.bools, run)),
            Stored::IntArray(run) => MetaValue::IntArray(slice(&self.ints, run)),
            Stored::DoubleArray(run) => MetaValue::DoubleArray(slice(&self.doubles, run)),
            Stored::StrArray(run) => MetaValue::StrArray(StrArray {
                items: slice(&self.strs, run),
                strings: &self.strings,
            }),
            Stored::Unsupported { truthy } => MetaValue::Unsupported { truthy },
        }
    }
}

fn push_run<T: Copy>(table: &mut Vec<T>, items: &[T]) -> Run {
    let start = table.len();
    table.extend_from_slice(items);
    Run::new(start, table.len())
}

fn slice<T>(table: &[T], run: Run) -> &[T] {
    table.get(run.range()).unwrap_or(&[])
}

/// One element of `phases`, `rules` or `children`, borrowed from its build.
#[derive(Clone, Copy)]
pub struct Event<'b> {
    build: &'b Build,
    id: u32,
    data: &'b EventData,
}

impl<'b> Event<'b> {
    pub fn id(&self) -> EventId {
        EventId(self.id)
    }

    /// Position inside the parent's array as stored in the file, counting
    /// elements that were skipped as invalid (input of the span id).
    pub fn index(&self) -> u32 {
        self.data.index
    }

    pub fn name(&self) -> &'b str {
        self.build.str(self.data.name)
    }

    /// Present ⇒ rule, absent ⇒ phase (formats.md §2.4), wherever the event sits.
    pub fn rule_type(&self) -> Option<&'b str> {
        self.data.is_rule.then(|| self.build.str(self.data.rule_type))
    }

    pub fn is_rule(&self) -> bool {
        self.data.is_rule
    }

    /// `target`, empty when absent.
    pub fn target(&self) -> &'b str {
        self.build.str(self.data.target)
    }

    /// `source`, empty when absent.
    pub fn source(&self) -> &'b str {
        self.build.str(self.data.source)
    }

    /// Monotonic start, default 0.0 (which marks a rule unanchored).
    pub fn start(&self) -> f64 {
        self.data.start
    }

    /// Monotonic end. Without `end_s`: `start_s + elapsed_s` when `start_s`
    /// exists (formats.md §2.9 judgement call: compiletools' `elapsed_s`-as-instant
    /// fallback would give garbage there), else `elapsed_s` (legacy files,
    /// where it yields the right duration from a 0.0 start).
    pub fn end(&self) -> f64 {
        self.data.end
    }

    /// A phase's `rules` or a rule's `children`, in file order.
    pub fn children(&self) -> Events<'b> {
        Events {
            build: self.build,
            next: self.data.first_child,
        }
    }

    /// Metadata entries in file order, duplicate keys resolved (last value
    /// wins, in the first key's position, as a Python dict does).
    pub fn metadata(&self) -> impl ExactSizeIterator<Item = (&'b str, MetaValue<'b>)> + 'b {
        let build = self.build;
        slice(&build.meta, self.data.metadata)
            .iter()
            .map(move |e| (build.str(e.key), build.value(e.value)))
    }

    pub fn metadata_value(&self, key: &str) -> Option<MetaValue<'b>> {
        self.metadata().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Whether `cas.hit` is truthy (Python truthiness, formats.md §3.4).
    pub fn is_cas_hit(&self) -> bool {
        self.metadata_value("cas.hit").is_some_and(|v| v.is_truthy())
    }
}

impl fmt::Debug for Event<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("index", &self.index())
            .field("name", &self.name())
            .field("rule_type", &self.rule_type())
            .field("target", &self.target())
            .field("source", &self.source())
            .field("start", &self.start())
            .field("end", &self.end())
            .field("metadata", &self.metadata().collect::<Vec<_>>())
            .field("children", &self.children().collect::<Vec<_>>())
            .finish()
    }
}

/// The events of one array, in file order.
#[derive(Clone)]
pub struct Events<'b> {
    build: &'b Build,
    next: u32,
}

impl<'b> Iterator for Events<'b> {
    type Item = Event<'b>;

    fn next(&mut self) -> Option<Event<'b>> {
        let data = self.build.events.get(self.next as usize)?;
        let event = Event {
            build: self.build,
            id: self.next,
            data,
        };
        self.next = data.next_sibling;
        Some(event)
    }
}

/// A metadata value as far as OTLP attributes can carry it, borrowed from
/// its build.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MetaValue<'b> {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    Str(&'b str),
    BoolArray(&'b [bool]),
    IntArray(&'b [i64]),
    DoubleArray(&'b [f64]),
    /// Also holds the empty array, whose element type is unknown.
    StrArray(StrArray<'b>),
    /// Objects, mixed or nested arrays, arrays with null, integers outside
    /// i64: no attribute. `truthy` is Python's truth value of the original,
    /// which the aggregates need (`cas.hit` is tested for truthiness).
    Unsupported {
        truthy: bool,
    },
}

impl MetaValue<'_> {
    /// Python truthiness, as compiletools applies it to `cas.hit` (formats.md §3.4).
    pub fn is_truthy(&self) -> bool {
        match self {
            MetaValue::Null => false,
            MetaValue::Bool(b) => *b,
            MetaValue::Int(i) => *i != 0,
            MetaValue::Double(d) => *d != 0.0,
            MetaValue::Str(s) => !s.is_empty(),
            MetaValue::BoolArray(v) => !v.is_empty(),
            MetaValue::IntArray(v) => !v.is_empty(),
            MetaValue::DoubleArray(v) => !v.is_empty(),
            MetaValue::StrArray(v) => !v.is_empty(),
            MetaValue::Unsupported { truthy } => *truthy,
        }
    }
}

/// The strings of a string array value.
#[derive(Clone, Copy)]
pub struct StrArray<'b> {
    items: &'b [Run],
    strings: &'b str,
}

impl<'b> StrArray<'b> {
    /// The empty array.
    pub fn empty() -> StrArray<'static> {
        StrArray {
            items: &[],
            strings: "",
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'b str> + 'b {
        let strings = self.strings;
        self.items
            .iter()
            .map(move |run| strings.get(run.range()).unwrap_or(""))
    }
}

impl PartialEq for StrArray<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl fmt::Debug for StrArray<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Test support: a build decoded from JSON text with the default limits.
#[cfg(test)]
pub(crate) fn parse_for_test(json: &str) -> Build {
    let mut warnings = crate::warnings::Warnings::new();
    super::decode::decode(
        json,
        std::path::Path::new("test/timing.json"),
        &crate::limits::Limits::default(),
        &crate::cancel::CancelToken::new(),
        &mut warnings,
    )
    .expect("test JSON decodes")
}

/// Test support: the event whose JSON object is `json`, alone in the
/// `phases` of a build that is leaked to give it a `'static` lifetime.
#[cfg(test)]
pub(crate) fn event_for_test(json: &str) -> Event<'static> {
    let build: &'static Build = Box::leak(Box::new(parse_for_test(&format!(r#"{{"phases": [{json}]}}"#))));
    build.children().next().expect("the test event decodes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_rule(b: &Build) -> Event<'_> {
        b.children().next().unwrap()
    }

    #[test]
    fn end_fallbacks() {
        let b = parse_for_test(
            r#"{"phases": [
                {"name": "a", "start_s": 10.0, "elapsed_s": 2.5},
                {"name": "b", "elapsed_s": 2.5},
                {"name": "c", "start_s": 10.0, "end_s": 11.0, "elapsed_s": 2.5},
                {"name": "d"}
            ]}"#,
        );
        let got: Vec<(f64, f64)> = b.children().map(|e| (e.start(), e.end())).collect();
        assert_eq!(got, [(10.0, 12.5), (0.0, 2.5), (10.0, 11.0), (0.0, 0.0)]);
    }

    #[test]
    fn set_metadata_keeps_dict_order() {
        let mut b = parse_for_test(
            r#"{"phases": [{"name": "r", "rule_type": "compile",
                "metadata": {"cas.hit": false, "queue_wait_s": 1e-6}}, {"name": "p"}]}"#,
        );
        let id = first_rule(&b).id();
        b.set_metadata(id, "ct.rule.cache_layer", MetaValue::Str("other"));
        b.set_metadata(id, "cas.hit", MetaValue::Bool(true));
        let keys: Vec<&str> = first_rule(&b).metadata().map(|(k, _)| k).collect();
        assert_eq!(keys, ["cas.hit", "queue_wait_s", "ct.rule.cache_layer"]);
        assert!(first_rule(&b).is_cas_hit());
        // Appending to a run that does not end the table moves it.
        let other = b.children().nth(1).unwrap().id();
        b.set_metadata(other, "x", MetaValue::Int(1));
        b.set_metadata(id, "y", MetaValue::StrArray(StrArray::empty()));
        let keys: Vec<&str> = first_rule(&b).metadata().map(|(k, _)| k).collect();
        assert_eq!(keys, ["cas.hit", "queue_wait_s", "ct.rule.cache_layer", "y"]);
        let other: Vec<_> = b.event(other).unwrap().metadata().collect();
        assert_eq!(other, [("x", MetaValue::Int(1))]);
    }

    #[test]
    fn walks_reach_the_documented_rules() {
        let b = parse_for_test(
            r#"{"phases": [
                {"name": "top", "rule_type": "compile"},
                {"name": "p", "rules": [
                    {"name": "r", "rule_type": "compile", "children": [
                        {"name": "child", "rule_type": "compile"}]},
                    {"name": "sp", "rules": [{"name": "sub", "rule_type": "compile"}]}
                ]}
            ]}"#,
        );
        let mut seen = Vec::new();
        b.for_each_phase_rule(&mut |e| seen.push(e.name()));
        assert_eq!(seen, ["top", "r", "sub"]);
        let names = |ids: Vec<EventId>| {
            ids.into_iter()
                .map(|id| b.event(id).unwrap().name())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(b.phase_rule_ids()), ["top", "r", "sub"]);
        assert_eq!(names(b.rule_ids()), ["top", "r", "child", "sub"]);
    }

    #[test]
    fn names_share_the_tail_of_their_paths() {
        let b = parse_for_test(
            r#"{"phases": [
                {"name": "a.cpp", "rule_type": "compile", "target": "/o/a.o", "source": "/s/a.cpp"},
                {"name": "t\u00e9st", "rule_type": "test", "target": "/x/t\u00e9st"},
                {"name": "a.cpp", "rule_type": "compile", "target": "/o/xa.cpp", "source": "/s/b.cpp"},
                {"name": "other", "rule_type": "link", "target": "/o/x", "source": "/s/y"},
                {"name": "", "rule_type": "link", "target": "/o/x"}
            ]}"#,
        );
        let got: Vec<_> = b.children().map(|e| (e.name(), e.target(), e.source())).collect();
        assert_eq!(
            got,
            [
                ("a.cpp", "/o/a.o", "/s/a.cpp"),
                ("tést", "/x/tést", ""),
                ("a.cpp", "/o/xa.cpp", "/s/b.cpp"),
                ("other", "/o/x", "/s/y"),
                ("", "/o/x", ""),
            ]
        );
        // Only "other" needed bytes of its own.
        let paths: usize = got.iter().map(|(_, t, s)| t.len() + s.len()).sum();
        assert!(b.strings.len() <= paths + "other".len() + "compile".len() + "test".len() + "link".len());
    }

    #[test]
    fn repeated_keys_are_stored_once_and_many_keys_stay_right() {
        let rules: Vec<String> = (0..40)
            .map(|i| {
                format!(
                    r#"{{"name": "r", "rule_type": "c", "metadata": {{"k{}": "v{}", "same": 1}}}}"#,
                    i % 20,
                    i % 3
                )
            })
            .collect();
        let b = parse_for_test(&format!(r#"{{"phases": [{}]}}"#, rules.join(",")));
        for (i, e) in b.children().enumerate() {
            let key = format!("k{}", i % 20);
            let value = format!("v{}", i % 3);
            let m: Vec<_> = e.metadata().collect();
            assert_eq!(
                m,
                [
                    (key.as_str(), MetaValue::Str(&value)),
                    ("same", MetaValue::Int(1))
                ]
            );
        }
        // Fewer distinct strings than the cache holds: each stored once.
        let rule = r#"{"name": "r", "rule_type": "compile", "metadata": {"cas.kind": "obj", "same": 1}}"#;
        let b = parse_for_test(&format!(r#"{{"phases": [{rule}, {rule}, {rule}]}}"#));
        let once = ["compile", "cas.kind", "obj", "same"].concat();
        assert_eq!(b.strings.len(), "rrr".len() + once.len());
    }

    #[test]
    fn truthiness() {
        assert!(!MetaValue::Null.is_truthy());
        assert!(MetaValue::Bool(true).is_truthy());
        assert!(!MetaValue::Int(0).is_truthy());
        assert!(MetaValue::Str("x").is_truthy());
        assert!(!MetaValue::StrArray(StrArray::empty()).is_truthy());
        assert!(MetaValue::Unsupported { truthy: true }.is_truthy());
    }
}
