//! One build against the history: which rules actually compiled and which
//! a cache served, the numbers each gets from its target's earlier
//! compiles, why each compile ran (its rebuild reason), and what the build
//! would add to the history.

use super::builds::{build_scope_of, BuildRecord, Comparison};
use super::lru::TargetLru;
use super::manifests::Manifests;
use super::record::BuildKey;
use crate::rebuild::manifest_hashes::{read_for_target, store_entry_of};
use crate::rebuild::{
    changed_headers, classify, classify_manifest, stable_hash, stable_identity_in, CasKey, Changed,
    HeaderHashes, RebuildReason, MAX_NAMED_HEADERS, REASONS,
};
use crate::timing::naming::span_name;
use crate::timing::{Build, Clock, Event, Interval, MetaValue, CACHE_LAYER_KEY};

/// How many rules `ct.build.top_regressions` lists (not `pub`: cbindgen
/// would export it into the C header).
pub(crate) const TOP_REGRESSIONS: usize = 10;

/// The cache that served a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CacheLayer {
    Cas,
    Ccache,
}

impl CacheLayer {
    /// The `ct.rule.cache_layer` value.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheLayer::Cas => "cas",
            CacheLayer::Ccache => "ccache",
        }
    }
}

/// What a rule was, for the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The tool ran: its duration is the target's compile time.
    Executed,
    /// A cache served the target.
    Hit(CacheLayer),
}

/// `ct.rule.cache_layer` decides where the statslog or the outcomes log
/// set it: `cas` / `ccache` are hits, `compiled` ran the compiler. Where
/// nothing decided (`other`, or no layer: rules that are not compiles), a
/// rule with a truthy `cas.hit` was a CAS hit and any other ran.
fn classify_outcome(rule: &Event) -> Outcome {
    if rule.is_cas_hit() {
        return Outcome::Hit(CacheLayer::Cas);
    }
    match rule.metadata_value(CACHE_LAYER_KEY) {
        Some(MetaValue::Str("cas")) => Outcome::Hit(CacheLayer::Cas),
        Some(MetaValue::Str("ccache")) => Outcome::Hit(CacheLayer::Ccache),
        _ => Outcome::Executed,
    }
}

/// Why a compile rule's object was not in the CAS (docs/rebuilds.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleRebuild {
    pub reason: RebuildReason,
    /// Every part of the key that changed (empty for `new`, `evicted`,
    /// `not_cas`).
    pub changed: Changed,
    /// ccache served the compile (`ct.rule.cache_layer` = `ccache`): the
    /// CAS missed, the compiler did not run. The reason is then
    /// `ct.rule.cas_miss_reason`, not `ct.rule.rebuild_reason`.
    pub ccache_served: bool,
}

/// The history numbers of one rule span.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RuleHistory {
    /// `ct.rule.time_saved_s`: on a hit whose target compiled in an earlier
    /// build, that compile's duration − this hit's; negative when the
    /// cache was slower.
    pub time_saved_s: Option<f64>,
    /// `ct.rule.duration_delta_s`: on a rule that ran, its duration − the
    /// median of its target's last K compiles in earlier builds.
    pub duration_delta_s: Option<f64>,
    /// On a compile rule the CAS did not serve: why.
    pub rebuild: Option<RuleRebuild>,
}

/// The root span's history numbers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistorySummary {
    /// `ct.build.time_saved_s`: sum over the hits that have a time saved;
    /// `None` when none has.
    pub time_saved_s: Option<f64>,
    /// `ct.build.cache_slower_hits`: hits whose time saved is negative.
    pub slower_hits: u64,
    /// Time saved per layer (the `ct.cache.time_saved` points), layers with
    /// at least one hit that has a time saved, `cas` first.
    pub saved_by_layer: Vec<(CacheLayer, f64)>,
    /// `ct.build.top_regressions`: span names of the rules with the largest
    /// positive duration delta, largest first, ties in file order.
    pub top_regressions: Vec<String>,
    /// Compiles that ran the compiler, by rebuild reason (index:
    /// `RebuildReason::index`); all zero for a build without compiles.
    pub rebuilds: [u64; 6],
    /// CAS misses ccache served (not recompiles).
    pub ccache_served: u64,
    /// Whether the build has a compile rule at all (then the counts are
    /// written, zeros included).
    pub has_compiles: bool,
    /// Against the previous build of the same host, variant and pipeline;
    /// `None` for the first one.
    pub comparison: Option<Comparison>,
}

/// Everything the history gives one build.
#[derive(Debug, Clone, Default)]
pub struct HistoryFacts {
    /// Per event slot: time saved and duration delta, NaN when absent
    /// (16 bytes a slot: a 100k-rule build's table stays small).
    by_slot: Vec<[f64; 2]>,
    /// Per event slot: the rebuild reason, packed ([`pack_rebuild`]); 0
    /// when none.
    rebuilds: Vec<u8>,
    /// The PCH/PCM compiles whose manifest named changed headers: slot,
    /// the first [`MAX_NAMED_HEADERS`] names, how many changed in all;
    /// ascending by slot (a few per build).
    headers: Vec<ChangedHeaders>,
    summary: HistorySummary,
}

/// One PCH/PCM span's changed headers: its slot, the names, the count.
type ChangedHeaders = (usize, Box<[Box<str>]>, usize);

/// Bits of a packed rebuild: the reason's code (1..=6) in the low three,
/// the changed parts in the next three, ccache-served in bit 6.
fn pack_rebuild(r: RuleRebuild) -> u8 {
    r.reason as u8 | r.changed.bits() << 3 | u8::from(r.ccache_served) << 6
}

fn unpack_rebuild(bits: u8) -> Option<RuleRebuild> {
    Some(RuleRebuild {
        reason: RebuildReason::from_code(bits & 7)?,
        changed: Changed::from_bits(bits >> 3),
        ccache_served: bits & 64 != 0,
    })
}

impl HistoryFacts {
    /// The history numbers of rule span `id`; `None` when it has none.
    pub fn rule(&self, id: crate::timing::EventId) -> Option<RuleHistory> {
        let [saved, delta] = *self.by_slot.get(id.slot())?;
        let some = |v: f64| (!v.is_nan()).then_some(v);
        let facts = RuleHistory {
            time_saved_s: some(saved),
            duration_delta_s: some(delta),
            rebuild: self.rebuilds.get(id.slot()).and_then(|&b| unpack_rebuild(b)),
        };
        (facts != RuleHistory::default()).then_some(facts)
    }

    pub fn summary(&self) -> &HistorySummary {
        &self.summary
    }

    /// The headers whose hash changed since the previous compile of the
    /// PCH/PCM rule span `id` (most relevant first, at most
    /// [`MAX_NAMED_HEADERS`]) and how many changed in all; `None` for any
    /// other span.
    pub fn rebuild_headers(&self, id: crate::timing::EventId) -> Option<(&[Box<str>], usize)> {
        let i = self.headers.binary_search_by_key(&id.slot(), |h| h.0).ok()?;
        let (_, names, total) = &self.headers[i];
        Some((names, *total))
    }

    pub(super) fn set_comparison(&mut self, comparison: Option<Comparison>) {
        self.summary.comparison = comparison;
    }
}

/// Equal when every number has the same bits (absent ones included): a
/// re-read must give exactly the same values, not merely close ones.
impl PartialEq for HistoryFacts {
    fn eq(&self, other: &Self) -> bool {
        let bits = |f: &Self| -> Vec<[u64; 2]> { f.by_slot.iter().map(|s| s.map(f64::to_bits)).collect() };
        bits(self) == bits(other)
            && self.rebuilds == other.rebuilds
            && self.headers == other.headers
            && self.summary == other.summary
    }
}

/// What a build adds to the history once it is committed: every target it
/// touched, with the duration of the compile where one ran and the CAS key
/// its object had; and the build itself, for the next build's comparison.
/// The paths are kept in one string (no allocation per rule of a 100k-rule
/// build).
#[derive(Debug, Clone, Default)]
pub(super) struct Staged {
    pub build: BuildKey,
    /// Host NUL variant.
    pub scope: String,
    /// Host NUL variant NUL pipeline.
    pub build_scope: String,
    paths: String,
    touched: Vec<Touched>,
    /// The manifests of its PCH/PCM compiles, by identity.
    pub manifests: Vec<(String, HeaderHashes)>,
    /// The build's record: its rules' identity hashes as evaluated
    /// (sorted by [`Staged::finish`]) and its totals once finished.
    pub record: BuildRecord,
    /// Whether [`Staged::finish`] ran (only a finished build is recorded).
    pub finished: bool,
}

#[derive(Debug, Clone, Copy)]
struct Touched {
    /// The path's end in `paths` (each starts where the previous ended).
    end: usize,
    /// The compile's duration, or [`NOT_COMPILED`] for a hit.
    duration_ns: i64,
    key: Option<CasKey>,
}

/// Duration slot of a staged hit.
const NOT_COMPILED: i64 = i64::MIN;

/// One touched target as committed.
pub(super) struct TouchedTarget<'s> {
    pub path: &'s str,
    pub duration_ns: Option<i64>,
    pub key: Option<CasKey>,
}

impl Staged {
    fn push(&mut self, path: &str, duration_ns: Option<i64>, key: Option<CasKey>) {
        self.paths.push_str(path);
        self.touched.push(Touched {
            end: self.paths.len(),
            duration_ns: duration_ns.unwrap_or(NOT_COMPILED),
            key,
        });
    }

    /// Every touched target.
    pub fn touched(&self) -> impl Iterator<Item = TouchedTarget<'_>> {
        let mut start = 0;
        self.touched.iter().map(move |t| {
            let path = self.paths.get(start..t.end).unwrap_or("");
            start = t.end;
            TouchedTarget {
                path,
                duration_ns: (t.duration_ns != NOT_COMPILED).then_some(t.duration_ns),
                key: t.key,
            }
        })
    }

    pub fn len(&self) -> usize {
        self.touched.len()
    }

    /// Completes the build's record with its totals (sorting its rules
    /// once; a second call only replaces the totals).
    pub fn finish(&mut self, duration_ns: i64, critical_path: Option<(i64, u64)>) {
        if !self.finished {
            let mut rules = std::mem::take(&mut self.record.rules).into_vec();
            rules.sort_unstable();
            rules.dedup();
            self.record.rules = rules.into_boxed_slice();
        }
        self.record.duration_ns = duration_ns;
        self.record.critical_path = critical_path;
        self.finished = true;
    }
}

/// The scope of a build's targets: host and variant, NUL-separated.
pub(super) fn scope_of(host: &str, variant: &str) -> String {
    format!("{host}\0{variant}")
}

/// Where a build comes from, beyond its files: the host and pipeline of
/// its scopes, its order among builds and its trace id.
#[derive(Debug, Clone, Copy)]
pub struct BuildOrigin<'x> {
    pub host: &'x str,
    /// `cicd.pipeline.name` (may be empty).
    pub pipeline: &'x str,
    pub key: BuildKey,
    pub trace_id: [u8; 16],
}

/// Whether a rule compiles one source into one object: the rules that get a
/// rebuild reason.
fn is_compile(rule: &Event) -> bool {
    matches!(rule.rule_type(), Some("compile" | "header_unit"))
}

/// A rule's history identity ([`stable_identity_in`]), rewritten ones in
/// `scratch`.
fn identity_of<'b>(rule: &Event<'b>, scratch: &'b mut String) -> &'b str {
    stable_identity_in(rule.rule_type(), rule.target(), rule.source(), scratch)
}

/// Looks every counted rule of `build` up in `targets` (read only) and
/// returns its numbers and what the build would add. Counted rules are the
/// analytics' (anchored rules reached through phases) that have an
/// identity (a target, or a compile's source).
pub(super) fn evaluate(
    targets: &TargetLru,
    manifests: &Manifests,
    window: usize,
    build: &Build,
    clock: &Clock,
    origin: &BuildOrigin,
) -> (HistoryFacts, Staged) {
    let key = origin.key;
    let mut by_slot = vec![[f64::NAN; 2]; build.event_count()];
    let mut rebuilds = vec![0u8; build.event_count()];
    let mut headers = Vec::new();
    let mut staged = Staged {
        build: key,
        scope: scope_of(origin.host, &build.variant),
        build_scope: build_scope_of(origin.host, &build.variant, origin.pipeline),
        record: BuildRecord {
            key,
            trace_id: origin.trace_id,
            ..BuildRecord::default()
        },
        ..Staged::default()
    };
    // Sized once: a 100k-rule build pushes one entry a rule.
    let mut rule_hashes: Vec<u64> = Vec::with_capacity(build.event_count());
    staged.touched.reserve(build.event_count());
    // A scope never seen has no targets yet: every lookup misses.
    let scope = targets.scope_id(&staged.scope);
    let mut summary = HistorySummary::default();
    let mut saved_by_layer: Vec<(CacheLayer, f64)> = Vec::new();
    let mut regressions: Vec<(f64, usize, crate::timing::EventId)> = Vec::new();
    let mut scratch = String::new();
    build.for_each_phase_rule(&mut |rule| {
        if !clock.is_anchored(&rule) {
            return;
        }
        let path = identity_of(&rule, &mut scratch);
        if path.is_empty() {
            return;
        }
        rule_hashes.push(stable_hash(path.as_bytes()));
        let duration_ns = Interval::of(&rule).duration_ns();
        let record = scope.and_then(|s| targets.get(s, path));
        let slot = by_slot.get_mut(rule.id().slot());
        let compile = is_compile(&rule);
        summary.has_compiles |= compile;
        let cas_key = if compile {
            CasKey::of_target(rule.target())
        } else {
            None
        };
        let outcome = classify_outcome(&rule);
        // A PCH/PCM: no key in its name, its manifest's header hashes instead.
        let manifest = match cas_key {
            None if compile => manifest_of(manifests, &staged.scope, path, key, rule.target(), || {
                clock.wall(Interval::of(&rule).start)
            }),
            _ => None,
        };
        if compile && outcome != Outcome::Hit(CacheLayer::Cas) {
            let (reason, changed) = match &manifest {
                Some(now) => {
                    let previous = manifests.before(&staged.scope, path, key);
                    let compiled_before = record.is_some_and(|r| !r.before(key).is_empty());
                    if let Some(previous) = previous {
                        let (names, total) = changed_headers(previous, now, MAX_NAMED_HEADERS);
                        if total > 0 {
                            let names: Box<[Box<str>]> = names.into_iter().map(Box::from).collect();
                            headers.push((rule.id().slot(), names, total));
                        }
                    }
                    classify_manifest(previous, now, compiled_before)
                }
                None => classify(record.and_then(|r| r.key_before(key)), cas_key),
            };
            let ccache_served = outcome == Outcome::Hit(CacheLayer::Ccache);
            if ccache_served {
                summary.ccache_served += 1;
            } else {
                summary.rebuilds[reason.index()] += 1;
            }
            if let Some(b) = rebuilds.get_mut(rule.id().slot()) {
                *b = pack_rebuild(RuleRebuild {
                    reason,
                    changed,
                    ccache_served,
                });
            }
        }
        if let Some(now) = manifest {
            staged.manifests.push((path.to_owned(), now));
        }
        match outcome {
            Outcome::Hit(layer) => {
                staged.push(path, None, cas_key);
                let Some(compiled) = record.and_then(|r| r.last_before(key)) else {
                    return;
                };
                let saved = (compiled as f64 - duration_ns as f64) / 1e9;
                if let Some(s) = slot {
                    s[0] = saved;
                }
                *summary.time_saved_s.get_or_insert(0.0) += saved;
                if saved < 0.0 {
                    summary.slower_hits += 1;
                }
                match saved_by_layer.iter_mut().find(|(l, _)| *l == layer) {
                    Some((_, sum)) => *sum += saved,
                    None => saved_by_layer.push((layer, saved)),
                }
            }
            Outcome::Executed => {
                staged.push(path, Some(duration_ns), cas_key);
                let Some(median) = record.and_then(|r| r.median_before(key, window)) else {
                    return;
                };
                let delta = (duration_ns as f64 - median) / 1e9;
                if let Some(s) = slot {
                    s[1] = delta;
                }
                if delta > 0.0 {
                    regressions.push((delta, regressions.len(), rule.id()));
                }
            }
        }
    });
    saved_by_layer.sort_by_key(|(l, _)| *l);
    summary.saved_by_layer = saved_by_layer;
    summary.top_regressions = top(build, regressions);
    debug_assert_eq!(summary.rebuilds.len(), REASONS.len());
    staged.record.rules = rule_hashes.into_boxed_slice();
    headers.sort_unstable_by_key(|h| h.0);
    (
        HistoryFacts {
            by_slot,
            rebuilds,
            headers,
            summary,
        },
        staged,
    )
}

/// The header hashes of a compile whose target is a PCH/PCM store entry:
/// those recorded for this very build when it is read again (the file has
/// been rewritten by later builds since), else its manifest's now unless
/// it was modified after the compile started (`started`, Unix ns); `None`
/// for other targets and unusable manifests (then `not_cas`, as before).
fn manifest_of(
    manifests: &Manifests,
    scope: &str,
    identity: &str,
    build: BuildKey,
    target: &str,
    started: impl FnOnce() -> i64,
) -> Option<HeaderHashes> {
    store_entry_of(target)?;
    if let Some(kept) = manifests.of_build(scope, identity, build) {
        return Some(kept.clone());
    }
    read_for_target(target, started()).ok()
}

/// Span names of the [`TOP_REGRESSIONS`] largest deltas, largest first,
/// ties in file order.
fn top(build: &Build, mut regressions: Vec<(f64, usize, crate::timing::EventId)>) -> Vec<String> {
    let order = |a: &(f64, usize, _), b: &(f64, usize, _)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if regressions.len() > TOP_REGRESSIONS {
        regressions.select_nth_unstable_by(TOP_REGRESSIONS - 1, order);
        regressions.truncate(TOP_REGRESSIONS);
    }
    regressions.sort_unstable_by(order);
    regressions
        .into_iter()
        .filter_map(|(_, _, id)| build.event(id))
        .map(|rule| span_name(&rule))
        .collect()
}
