//! Per-target compile history, kept by the receiver across builds: the
//! time a cache hit saved (the target's last actual compile − the hit),
//! how a compile compares with its target's recent ones (this compile −
//! the median of the last K), why a compile ran (its rebuild reason, from
//! the CAS key its target had the last time, [`crate::rebuild`]) and the
//! previous build of the same host, variant and pipeline ([`builds`]). The
//! OTLP side puts them on the rule spans, the root span and the
//! `ct.cache.time_saved` and `ct.rebuilds` metrics (`otlp::history`,
//! `otlp::rebuild`).
//!
//! **Identity.** A target is (host, variant, the rule's stable identity):
//! a compile's source, another rule's target without CAS hashes
//! ([`crate::rebuild::stable_identity`]). Not `ct.target`: a CAS object's
//! name changes exactly when its source is recompiled, so a history keyed
//! by it never found the previous compile of a CAS build. Counted rules
//! are the analytics' (anchored rules reached through phases) with an
//! identity; rule `children` are steps of their parent, not jobs.
//!
//! **What counts as a compile.** `ct.rule.cache_layer` decides where a
//! statslog (per-TU attribution) or the outcomes log set it: `compiled`
//! ran the compiler, `ccache` and `cas` are hits. Where nothing decided it
//! (`other`, or rules that are not compiles, e.g. links), a rule with a
//! truthy `cas.hit` is a CAS hit and any other ran the tool.
//!
//! **Re-reads give the same numbers.** Each remembered compile carries the
//! [`BuildKey`] of its build (start time, then trace id bits), and a build
//! only looks at compiles of strictly older builds. [`History::evaluate`]
//! only reads the history and *stages* what the build adds, under the
//! build's id; [`History::commit`] applies it when the receiver checkpoints
//! the build, and re-applying a build replaces its own entries. So a build
//! read again — after a failed delivery, or after a crash, against the
//! history saved with the last checkpoint — sees exactly what it saw the
//! first time. Each target keeps K + 1 compiles, so even the last build
//! committed, read again (a crash after the history was saved but before
//! its checkpoint was), still finds the K compiles before it. Not covered:
//! builds that settled in between and compiled the same target (several
//! builds in flight at once) can push an older compile out of the window.
//!
//! The same holds for the rebuild reasons (each target keeps its last two
//! CAS keys, tagged with their builds) and the comparison (two builds kept
//! per scope).
//!
//! **Bounds.** At most `max_targets` targets (least recently used
//! forgotten first, [`lru`]), at most `window` + 1 compiles and 2 keys
//! each, 2 builds per scope and [`builds::MAX_BUILD_SCOPES`] scopes, at
//! most [`MAX_STAGED_BUILDS`] builds staged and not yet committed (the
//! oldest staging is dropped: a build that never settles).

mod builds;
mod codec;
mod evaluate;
mod lru;
mod manifests;
mod record;

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

pub use builds::Comparison;
pub use evaluate::{BuildOrigin, CacheLayer, HistoryFacts, HistorySummary, RuleHistory, RuleRebuild};
pub use record::BuildKey;

use builds::BuildRecords;
use evaluate::Staged;
use lru::TargetLru;
use manifests::{KeptManifest, Manifests};
use record::{Compile, Seen};

use crate::timing::{Build, Clock};

/// Builds evaluated and not yet committed that the history keeps staged.
pub(crate) const MAX_STAGED_BUILDS: usize = 64;
/// Largest `window` (the codec stores a compile count, `window` + 1, in a byte).
pub(crate) const MAX_WINDOW: usize = 254;

/// How much the history keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryConfig {
    /// Targets remembered (LRU).
    pub max_targets: usize,
    /// K: compiles remembered per target, the median's window.
    pub window: usize,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            max_targets: 100_000,
            window: 5,
        }
    }
}

/// What the history holds (for the receiver's self-observation and the bench).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    pub targets: u64,
    pub compiles: u64,
    /// Estimated heap bytes of the targets (staging not included).
    pub bytes: u64,
    pub staged_builds: u64,
    /// Targets forgotten to stay within `max_targets`.
    pub evicted: u64,
}

/// The receiver's compile history, shared by the builds in flight.
pub struct History {
    state: Mutex<State>,
}

struct State {
    targets: TargetLru,
    builds: BuildRecords,
    /// PCH/PCM manifests' header hashes ([`manifests`]).
    manifests: Manifests,
    window: usize,
    staged: HashMap<String, Staged>,
    /// Staged build ids, oldest staging first.
    staged_order: VecDeque<String>,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("footprint", &self.footprint())
            .finish()
    }
}

impl History {
    pub fn new(config: HistoryConfig) -> Self {
        Self {
            state: Mutex::new(State {
                targets: TargetLru::new(config.max_targets),
                builds: BuildRecords::default(),
                manifests: Manifests::default(),
                window: config.window.clamp(1, MAX_WINDOW),
                staged: HashMap::new(),
                staged_order: VecDeque::new(),
            }),
        }
    }

    /// The state, whatever a panic while holding the lock left: every
    /// change is either staging (replaced whole) or a commit of records
    /// that are each consistent on their own.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The history numbers of `build` (read only), staging what it adds
    /// under `build_id` (replacing an earlier staging of the same id).
    /// `key` orders builds; `host` is the first part of the target keys.
    pub fn evaluate(
        &self,
        build: &Build,
        clock: &Clock,
        host: &str,
        key: BuildKey,
        build_id: &str,
    ) -> HistoryFacts {
        let origin = BuildOrigin {
            host,
            pipeline: "",
            key,
            trace_id: [0; 16],
        };
        self.evaluate_build(build, clock, &origin, build_id)
    }

    /// [`History::evaluate`] with the build's pipeline and trace id, which
    /// its comparison with the previous build needs ([`History::finish`]).
    pub fn evaluate_build(
        &self,
        build: &Build,
        clock: &Clock,
        origin: &BuildOrigin,
        build_id: &str,
    ) -> HistoryFacts {
        let mut state = self.lock();
        let (facts, staged) = evaluate::evaluate(
            &state.targets,
            &state.manifests,
            state.window,
            build,
            clock,
            origin,
        );
        state.stage(build_id, staged);
        facts
    }

    /// Completes what `build_id` staged with the build's totals — its
    /// duration (ns) and, with analytics, its critical path (length in ns,
    /// hash of its rules' identities) — and puts its comparison with the
    /// previous build of its host, variant and pipeline into `facts`
    /// (strictly older builds only, as for the rules). Nothing happens for
    /// an id not staged.
    pub fn finish(
        &self,
        build_id: &str,
        duration_ns: i64,
        critical_path: Option<(i64, u64)>,
        facts: &mut HistoryFacts,
    ) {
        let mut state = self.lock();
        let State { staged, builds, .. } = &mut *state;
        let Some(staged) = staged.get_mut(build_id) else {
            return;
        };
        staged.finish(duration_ns, critical_path);
        let comparison = builds
            .previous(&staged.build_scope, staged.build)
            .map(|previous| Comparison::of(previous, &staged.record));
        facts.set_comparison(comparison);
    }

    /// Applies what `build_id` staged; returns how many rules it recorded or
    /// touched (0: nothing was staged under that id).
    pub fn commit(&self, build_id: &str) -> usize {
        let mut state = self.lock();
        let Some(staged) = state.unstage(build_id) else {
            return 0;
        };
        let kept = state.window + 1;
        let scope = state.targets.intern(&staged.scope);
        for t in staged.touched() {
            let record = state.targets.touch(scope, t.path);
            if let Some(duration_ns) = t.duration_ns {
                record.record(
                    Compile {
                        build: staged.build,
                        duration_ns,
                    },
                    kept,
                );
            }
            if let Some(key) = t.key {
                record.record_seen(Seen {
                    build: staged.build,
                    key,
                });
            }
        }
        let touched = staged.len();
        for (identity, hashes) in staged.manifests {
            let manifest = KeptManifest {
                build: staged.build,
                hashes,
            };
            state.manifests.record(&staged.scope, &identity, manifest);
        }
        if staged.finished {
            state.builds.record(&staged.build_scope, staged.record);
        }
        touched
    }

    /// Drops what `build_id` staged; returns whether there was anything.
    pub fn discard(&self, build_id: &str) -> bool {
        self.lock().unstage(build_id).is_some()
    }

    /// The committed history as bytes (staging is not saved: it belongs to
    /// builds not checkpointed, which are read again after a restart).
    pub fn save(&self) -> Vec<u8> {
        let state = self.lock();
        codec::encode(&state.targets, &state.builds, &state.manifests)
    }

    /// Adds saved bytes to the history (normally empty); returns how many
    /// targets they held. Malformed bytes change nothing; so do the bytes
    /// of an older format (keyed by `ct.target`, wrong for CAS builds),
    /// with an error that says so: the receiver warns once and starts
    /// afresh.
    pub fn restore(&self, bytes: &[u8]) -> Result<usize, String> {
        self.restore_noting(bytes).map(|(n, _)| n)
    }

    /// [`History::restore`], with a note when the bytes were of an older
    /// format that was converted (the receiver logs it as one warning).
    pub fn restore_noting(&self, bytes: &[u8]) -> Result<(usize, Option<&'static str>), String> {
        let mut state = self.lock();
        let kept = state.window + 1;
        let State {
            targets,
            builds,
            manifests,
            ..
        } = &mut *state;
        codec::decode_into(bytes, targets, builds, manifests, kept)
    }

    pub fn footprint(&self) -> Footprint {
        let state = self.lock();
        let t = &state.targets;
        Footprint {
            targets: t.len() as u64,
            compiles: t
                .iter_oldest_first()
                .map(|(_, _, r)| r.compiles().len() as u64)
                .sum(),
            bytes: (t.heap_bytes() + state.builds.heap_bytes() + state.manifests.heap_bytes()) as u64,
            staged_builds: state.staged.len() as u64,
            evicted: t.evicted(),
        }
    }
}

impl State {
    fn stage(&mut self, build_id: &str, staged: Staged) {
        if self.staged.insert(build_id.to_owned(), staged).is_some() {
            self.staged_order.retain(|id| id != build_id);
        }
        self.staged_order.push_back(build_id.to_owned());
        while self.staged_order.len() > MAX_STAGED_BUILDS {
            if let Some(oldest) = self.staged_order.pop_front() {
                self.staged.remove(&oldest);
            }
        }
    }

    fn unstage(&mut self, build_id: &str) -> Option<Staged> {
        let staged = self.staged.remove(build_id)?;
        self.staged_order.retain(|id| id != build_id);
        Some(staged)
    }
}

#[cfg(test)]
mod tests;
