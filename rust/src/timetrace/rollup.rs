//! ClangBuildAnalyzer's analysis (`Analysis.cpp`) over a set of TUs, one TU
//! at a time: each [`Rollup::add`] folds a [`TraceUnit`] into tallies keyed
//! by interned names, so the TU's model can be dropped right after.
//!
//! What is counted, as ClangBuildAnalyzer counts it:
//! * totals: every `Frontend` (a TU's extra ones merged into its first, see
//!   `nesting`) and every `Backend`;
//! * files: a `Frontend` or `Backend` of at least `min_file_ms`, named by
//!   the nearest of itself and its ancestors (`ExecuteCompiler`,
//!   `Frontend`, `Backend`, `OptModule`) with a detail, an
//!   `ExecuteCompiler` without one standing for the TU's name;
//! * templates: every `InstantiateClass` and `InstantiateFunction`, by exact
//!   name (nested instantiations of one name count each time);
//! * template sets: the same by [`collapse_template_args`] name, leaving out
//!   an instantiation inside another of the same set (its time is in the
//!   outer one's already);
//! * functions: `OptFunction` time by demangled name and TU source file;
//!   function sets: those whose name has a `<`, one count per (name, file);
//! * headers: every `Source` event of a header (see [`is_header`]), its
//!   inclusive time summed over all its inclusions (nothing is
//!   de-duplicated: a header inside another counts in both), with the chain
//!   of enclosing header `Source` events as "included via"; a header is a
//!   root one if some inclusion of it is not inside another header, looking
//!   through every enclosing `Source` (a `.tcc` between two headers does
//!   not make the inner one a root) up to the first other event.
//!
//! Ties in the sorted lists: ClangBuildAnalyzer breaks some by the order in
//! which its worker threads interned names, which is not reproducible; here
//! templates and include chains tie-break by name, functions by name then
//! file. Its lists past the number of distinct templates pad with empty
//! entries; these do not.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;

use super::interner::{Interner, NameId};
use super::model::{EventKind, TraceUnit, TuTimes};
use super::names::{collapse_template_args, demangle, is_header, nice_path};
use super::report::{
    FileTime, FunctionTime, HeaderTime, IncludeChain, NamedTime, Report, RollupConfig, TimeSummary,
};

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    count: u64,
    us: i64,
}

impl Tally {
    fn add(&mut self, us: i64) {
        self.count += 1;
        self.us = self.us.saturating_add(us);
    }
}

/// An include chain, stored as a node of a tree shared by all chains: the
/// nearest enclosing header and the chain that header itself came through.
type ChainId = u32;
const DIRECT: ChainId = 0;

#[derive(Debug, Default)]
struct HeaderTally {
    time: Tally,
    root: bool,
    chains: HashMap<ChainId, Tally>,
}

/// Not yet computed, in the collapsed-name and raw-reading caches.
const NOT_COLLAPSED: NameId = NameId::MAX;

pub struct Rollup {
    config: RollupConfig,
    names: Interner,
    /// clang's raw paths and mangled names, each read once: the same
    /// headers and functions come back in TU after TU.
    raw: RawNames,
    /// Collapsed name of each name id, filled as met.
    collapsed: Vec<NameId>,
    /// Chain nodes: (enclosing header, its own chain); node 0 is DIRECT.
    chain_nodes: Vec<(NameId, ChainId)>,
    chain_index: HashMap<(NameId, ChainId), ChainId>,
    summary: TimeSummary,
    parse_files: Vec<(NameId, i64)>,
    codegen_files: Vec<(NameId, i64)>,
    templates: HashMap<NameId, Tally>,
    template_sets: HashMap<NameId, Tally>,
    functions: HashMap<(NameId, NameId), i64>,
    headers: HashMap<NameId, HeaderTally>,
}

impl Default for Rollup {
    fn default() -> Self {
        Self::new(RollupConfig::default())
    }
}

/// Per event of the TU being added, what its ancestors tell.
#[derive(Clone, Copy)]
struct Inherited {
    /// The file name `Frontend`, `Backend` and `OptFunction` events report.
    path: NameId,
    /// As an ancestor: the chain its header children were included through
    /// (None unless this is a header `Source`).
    chain_below: Option<ChainId>,
    /// A `Source` in an unbroken line of `Source` events of which one is a
    /// header: a header included below it is no root header, even through
    /// a file that is no header itself (`cmath` → `specfun.h` →
    /// `gamma.tcc` → `special_function_util.h`), as ClangBuildAnalyzer
    /// walks every enclosing `Source` up to the first other event.
    header_above: bool,
}

impl Rollup {
    pub fn new(config: RollupConfig) -> Self {
        Self {
            config,
            names: Interner::new(),
            raw: RawNames::default(),
            collapsed: Vec::new(),
            chain_nodes: vec![(0, DIRECT)],
            chain_index: HashMap::new(),
            summary: TimeSummary::default(),
            parse_files: Vec::new(),
            codegen_files: Vec::new(),
            templates: HashMap::new(),
            template_sets: HashMap::new(),
            functions: HashMap::new(),
            headers: HashMap::new(),
        }
    }

    /// Folds one TU in. `tu_name` stands for the TU wherever clang wrote no
    /// name (ClangBuildAnalyzer uses the trace file's path there, or the
    /// object file beside it when one exists: the caller chooses).
    pub fn add(&mut self, tu_name: &str, unit: &TraceUnit) -> TuTimes {
        let tu = self.names.intern(tu_name);
        let ids = self.event_names(unit, tu);
        let min_file_us = self.config.min_file_ms.saturating_mul(1000);
        let mut inherited = vec![
            Inherited {
                path: 0,
                chain_below: None,
                header_above: false,
            };
            unit.events.len()
        ];
        // The current event's ancestors, and how many of the instantiations
        // among them are in each set: "inside another of the same set" in O(1).
        let mut ancestors: Vec<u32> = Vec::new();
        let mut open_sets: HashMap<NameId, u32> = HashMap::new();
        for (i, event) in unit.nesting_order() {
            let i = i as usize;
            let id = ids[i];
            let parent = event.parent.map(|p| p as usize);
            while let Some(&top) = ancestors.last() {
                if Some(top as usize) == parent {
                    break;
                }
                ancestors.pop();
                let top = top as usize;
                if is_instantiation(unit.events[top].kind) {
                    if let Some(n) = open_sets.get_mut(&self.collapsed_of(ids[top])) {
                        *n -= 1;
                    }
                }
            }
            ancestors.push(i as u32);
            let from_parent = parent.map(|p| inherited[p]);
            let names_a_file = matches!(
                event.kind,
                EventKind::Compiler | EventKind::Frontend | EventKind::Backend | EventKind::OptModule
            );
            let path = if names_a_file && id != 0 {
                id
            } else {
                from_parent.map_or(0, |p| p.path)
            };
            let mut chain_below = None;
            // Only Source events carry it: any other event ends the line.
            let header_above_here = from_parent.is_some_and(|p| p.header_above);
            let mut header_above = false;
            match event.kind {
                EventKind::Frontend => {
                    self.summary.compilations += 1;
                    self.summary.frontend_us = self.summary.frontend_us.saturating_add(event.dur);
                    if event.dur >= min_file_us {
                        self.parse_files.push((path, event.dur));
                    }
                }
                EventKind::Backend => {
                    self.summary.backend_us = self.summary.backend_us.saturating_add(event.dur);
                    if event.dur >= min_file_us {
                        self.codegen_files.push((path, event.dur));
                    }
                }
                EventKind::OptFunction => {
                    let us = self.functions.entry((id, path)).or_insert(0);
                    *us = us.saturating_add(event.dur);
                }
                EventKind::InstantiateClass | EventKind::InstantiateFunction => {
                    self.templates.entry(id).or_default().add(event.dur);
                    let set = self.collapsed_of(id);
                    let sets = self.template_sets.entry(set).or_default();
                    let inside_same_set = open_sets.get(&set).is_some_and(|&n| n > 0);
                    if !inside_same_set {
                        sets.add(event.dur);
                    }
                    *open_sets.entry(set).or_insert(0) += 1;
                }
                EventKind::Source if is_header(self.names.get(id)) => {
                    let chain = from_parent.and_then(|p| p.chain_below).unwrap_or(DIRECT);
                    let header = self.headers.entry(id).or_default();
                    header.time.add(event.dur);
                    header.root |= !header_above_here;
                    header.chains.entry(chain).or_default().add(event.dur);
                    chain_below = Some(self.chain_node(id, chain));
                    header_above = true;
                }
                EventKind::Source => header_above = header_above_here,
                _ => {}
            }
            inherited[i] = Inherited {
                path,
                chain_below,
                header_above,
            };
        }
        unit.times()
    }

    /// Each event's name as ClangBuildAnalyzer reads it, interned.
    fn event_names(&mut self, unit: &TraceUnit, tu: NameId) -> Vec<NameId> {
        let (names, raw) = (&mut self.names, &mut self.raw);
        unit.events
            .iter()
            .map(|e| match (e.kind, unit.detail(e)) {
                (EventKind::Compiler, None) => tu,
                (_, None) => 0,
                (EventKind::Source | EventKind::OptModule, Some(d)) => {
                    raw.paths.read(d, names, |d| Cow::Owned(nice_path(d)))
                }
                (EventKind::OptFunction, Some(d)) => raw.mangled.read(d, names, demangle),
                (_, Some(d)) => names.intern(d),
            })
            .collect()
    }

    fn collapsed_of(&mut self, id: NameId) -> NameId {
        let i = id as usize;
        if self.collapsed.len() <= i {
            self.collapsed.resize(self.names.len().max(i + 1), NOT_COLLAPSED);
        }
        if self.collapsed[i] == NOT_COLLAPSED {
            let collapsed = collapse_template_args(self.names.get(id)).into_owned();
            let c = self.names.intern(&collapsed);
            self.collapsed[i] = c;
        }
        self.collapsed[i]
    }

    fn chain_node(&mut self, header: NameId, below: ChainId) -> ChainId {
        let next = self.chain_nodes.len() as ChainId;
        let id = *self.chain_index.entry((header, below)).or_insert(next);
        if id == next {
            self.chain_nodes.push((header, below));
        }
        id
    }

    /// The chain's headers, nearest first.
    fn chain_headers(&self, mut chain: ChainId) -> Vec<&str> {
        let mut headers = Vec::new();
        while let Some(&(header, below)) = self.chain_nodes.get(chain as usize).filter(|_| chain != DIRECT) {
            headers.push(self.names.get(header));
            chain = below;
        }
        headers
    }

    /// Chains compared as their nearest-first header lists, without making
    /// them: only as far as they differ (chains of a header may be many and
    /// deep, and only a few are shown).
    fn cmp_chains(&self, mut a: ChainId, mut b: ChainId) -> Ordering {
        loop {
            if a == b {
                return Ordering::Equal;
            }
            let (Some(&(ha, below_a)), Some(&(hb, below_b))) = (self.node(a), self.node(b)) else {
                return self.node(a).is_some().cmp(&self.node(b).is_some());
            };
            match self.names.get(ha).cmp(self.names.get(hb)) {
                Ordering::Equal => (a, b) = (below_a, below_b),
                unequal => return unequal,
            }
        }
    }

    fn node(&self, chain: ChainId) -> Option<&(NameId, ChainId)> {
        if chain == DIRECT {
            return None;
        }
        self.chain_nodes.get(chain as usize)
    }

    pub fn report(&self) -> Report {
        let c = &self.config;
        Report {
            config: *c,
            summary: self.summary,
            parse_files: self.files(&self.parse_files, c.file_parse_count),
            codegen_files: self.files(&self.codegen_files, c.file_codegen_count),
            templates: self.templates_by_name(),
            template_sets: self.top_named(self.template_sets.iter().map(|(&n, &t)| (n, t))),
            functions: self.functions_list(),
            function_sets: self.function_sets(),
            headers: self.headers_list(),
        }
    }

    fn files(&self, files: &[(NameId, i64)], count: usize) -> Vec<FileTime> {
        let mut sorted: Vec<(&str, i64)> = files.iter().map(|&(n, us)| (self.names.get(n), us)).collect();
        sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        sorted
            .into_iter()
            .take(count)
            .map(|(name, us)| FileTime {
                name: name.to_owned(),
                us,
            })
            .collect()
    }

    fn templates_by_name(&self) -> Vec<NamedTime> {
        let mut sorted: Vec<(&str, Tally)> = self
            .templates
            .iter()
            .map(|(&n, &t)| (self.names.get(n), t))
            .collect();
        sorted.sort_by(|a, b| (b.1.us, b.1.count).cmp(&(a.1.us, a.1.count)).then(a.0.cmp(b.0)));
        named(sorted.into_iter().take(self.config.template_count))
    }

    /// Sets, sorted as ClangBuildAnalyzer sorts them: by time, count and
    /// name, all descending.
    fn top_named(&self, tallies: impl Iterator<Item = (NameId, Tally)>) -> Vec<NamedTime> {
        let mut sorted: Vec<(&str, Tally)> = tallies.map(|(n, t)| (self.names.get(n), t)).collect();
        sorted.sort_by(|a, b| (b.1.us, b.1.count, b.0).cmp(&(a.1.us, a.1.count, a.0)));
        named(sorted.into_iter().take(self.config.template_count))
    }

    fn functions_list(&self) -> Vec<FunctionTime> {
        let mut sorted: Vec<(&str, &str, i64)> = self
            .functions
            .iter()
            .map(|(&(n, f), &us)| (self.names.get(n), self.names.get(f), us))
            .collect();
        sorted.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)).then(a.1.cmp(b.1)));
        sorted
            .into_iter()
            .take(self.config.function_count)
            .map(|(name, file, us)| FunctionTime {
                name: name.to_owned(),
                file: file.to_owned(),
                us,
            })
            .collect()
    }

    fn function_sets(&self) -> Vec<NamedTime> {
        let mut sets: HashMap<String, Tally> = HashMap::new();
        for (&(n, _), &us) in &self.functions {
            let name = self.names.get(n);
            if !name.contains('<') {
                continue;
            }
            let set = sets.entry(collapse_template_args(name).into_owned()).or_default();
            set.add(us);
        }
        let mut sorted: Vec<(&str, Tally)> = sets.iter().map(|(n, &t)| (n.as_str(), t)).collect();
        sorted.sort_by(|a, b| (b.1.us, b.1.count, b.0).cmp(&(a.1.us, a.1.count, a.0)));
        named(sorted.into_iter().take(self.config.template_count))
    }

    fn headers_list(&self) -> Vec<HeaderTime> {
        let mut sorted: Vec<(&str, &HeaderTally)> = self
            .headers
            .iter()
            .filter(|(_, h)| h.root || !self.config.only_root_headers)
            .map(|(&n, h)| (self.names.get(n), h))
            .collect();
        sorted.sort_by(|a, b| b.1.time.us.cmp(&a.1.time.us).then(a.0.cmp(b.0)));
        sorted
            .into_iter()
            .take(self.config.header_count)
            .map(|(path, h)| self.header_time(path, h))
            .collect()
    }

    fn header_time(&self, path: &str, h: &HeaderTally) -> HeaderTime {
        let mut chains: Vec<(ChainId, Tally)> = h.chains.iter().map(|(&c, &t)| (c, t)).collect();
        let order = |a: &(ChainId, Tally), b: &(ChainId, Tally)| {
            (b.1.count, b.1.us)
                .cmp(&(a.1.count, a.1.us))
                .then_with(|| self.cmp_chains(a.0, b.0))
        };
        let shown = self.config.header_chain_count.saturating_add(1);
        if chains.len() > shown {
            chains.select_nth_unstable_by(shown - 1, order);
            chains.truncate(shown);
        }
        chains.sort_by(order);
        HeaderTime {
            path: path.to_owned(),
            us: h.time.us,
            count: h.time.count,
            more_chains: h.chains.len() > self.config.header_chain_count,
            chains: chains
                .into_iter()
                .map(|(chain, t)| IncludeChain {
                    via: self
                        .chain_headers(chain)
                        .into_iter()
                        .rev()
                        .map(str::to_owned)
                        .collect(),
                    count: t.count,
                    us: t.us,
                })
                .collect(),
        }
    }
}

#[derive(Default)]
struct RawNames {
    paths: RawReading,
    mangled: RawReading,
}

/// Raw names, and the interned reading of each.
struct RawReading {
    raw: Interner,
    read: Vec<NameId>,
}

impl Default for RawReading {
    fn default() -> Self {
        Self {
            raw: Interner::new(),
            read: Vec::new(),
        }
    }
}

impl RawReading {
    fn read(&mut self, raw: &str, names: &mut Interner, reading: impl Fn(&str) -> Cow<'_, str>) -> NameId {
        let r = self.raw.intern(raw) as usize;
        if let Some(&id) = self.read.get(r).filter(|&&id| id != NOT_COLLAPSED) {
            return id;
        }
        if self.read.len() <= r {
            self.read.resize(r + 1, NOT_COLLAPSED);
        }
        let id = names.intern(&reading(raw));
        self.read[r] = id;
        id
    }
}

fn is_instantiation(kind: EventKind) -> bool {
    matches!(kind, EventKind::InstantiateClass | EventKind::InstantiateFunction)
}

fn named<'a>(list: impl Iterator<Item = (&'a str, Tally)>) -> Vec<NamedTime> {
    list.map(|(name, t)| NamedTime {
        name: name.to_owned(),
        count: t.count,
        us: t.us,
    })
    .collect()
}
