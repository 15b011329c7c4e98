//! One build against the history: which rules actually compiled and which
//! a cache served, the numbers each gets from its target's earlier
//! compiles, and what the build would add to the history.

use super::lru::TargetLru;
use super::record::BuildKey;
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
fn classify(rule: &Event) -> Outcome {
    if rule.is_cas_hit() {
        return Outcome::Hit(CacheLayer::Cas);
    }
    match rule.metadata_value(CACHE_LAYER_KEY) {
        Some(MetaValue::Str("cas")) => Outcome::Hit(CacheLayer::Cas),
        Some(MetaValue::Str("ccache")) => Outcome::Hit(CacheLayer::Ccache),
        _ => Outcome::Executed,
    }
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
}

/// Everything the history gives one build.
#[derive(Debug, Clone, Default)]
pub struct HistoryFacts {
    /// Per event slot: time saved and duration delta, NaN when absent
    /// (16 bytes a slot: a 100k-rule build's table stays small).
    by_slot: Vec<[f64; 2]>,
    summary: HistorySummary,
}

impl HistoryFacts {
    /// The history numbers of rule span `id`; `None` when it has neither.
    pub fn rule(&self, id: crate::timing::EventId) -> Option<RuleHistory> {
        let [saved, delta] = *self.by_slot.get(id.slot())?;
        let some = |v: f64| (!v.is_nan()).then_some(v);
        let facts = RuleHistory {
            time_saved_s: some(saved),
            duration_delta_s: some(delta),
        };
        (facts != RuleHistory::default()).then_some(facts)
    }

    pub fn summary(&self) -> &HistorySummary {
        &self.summary
    }
}

/// Equal when every number has the same bits (absent ones included): a
/// re-read must give exactly the same values, not merely close ones.
impl PartialEq for HistoryFacts {
    fn eq(&self, other: &Self) -> bool {
        let bits = |f: &Self| -> Vec<[u64; 2]> { f.by_slot.iter().map(|s| s.map(f64::to_bits)).collect() };
        bits(self) == bits(other) && self.summary == other.summary
    }
}

/// What a build adds to the history once it is committed: every target it
/// touched, with the duration of the compile where one ran. The paths are
/// kept in one string (no allocation per rule of a 100k-rule build).
#[derive(Debug, Clone, Default)]
pub(super) struct Staged {
    pub build: BuildKey,
    /// Host NUL variant.
    pub scope: String,
    paths: String,
    /// Per touched target: its path's end in `paths` (each starts where
    /// the previous one ended) and the compile's duration, or
    /// [`NOT_COMPILED`] for a hit.
    touched: Vec<(usize, i64)>,
}

/// Duration slot of a staged hit.
const NOT_COMPILED: i64 = i64::MIN;

impl Staged {
    fn push(&mut self, path: &str, duration_ns: Option<i64>) {
        self.paths.push_str(path);
        self.touched
            .push((self.paths.len(), duration_ns.unwrap_or(NOT_COMPILED)));
    }

    /// Every touched target: its path and the compile's duration, if one ran.
    pub fn touched(&self) -> impl Iterator<Item = (&str, Option<i64>)> {
        let mut start = 0;
        self.touched.iter().map(move |&(end, d)| {
            let path = self.paths.get(start..end).unwrap_or("");
            start = end;
            (path, (d != NOT_COMPILED).then_some(d))
        })
    }

    pub fn len(&self) -> usize {
        self.touched.len()
    }
}

/// The scope of a build's targets: host and variant, NUL-separated.
pub(super) fn scope_of(host: &str, variant: &str) -> String {
    format!("{host}\0{variant}")
}

/// Looks every counted rule of `build` up in `targets` (read only) and
/// returns its numbers and what the build would add. Counted rules are the
/// analytics' (anchored rules reached through phases) that name a target.
pub(super) fn evaluate(
    targets: &TargetLru,
    window: usize,
    build: &Build,
    clock: &Clock,
    host: &str,
    key: BuildKey,
) -> (HistoryFacts, Staged) {
    let mut by_slot = vec![[f64::NAN; 2]; build.event_count()];
    let mut staged = Staged {
        build: key,
        scope: scope_of(host, &build.variant),
        ..Staged::default()
    };
    // A scope never seen has no targets yet: every lookup misses.
    let scope = targets.scope_id(&staged.scope);
    let mut summary = HistorySummary::default();
    let mut saved_by_layer: Vec<(CacheLayer, f64)> = Vec::new();
    let mut regressions: Vec<(f64, usize, crate::timing::EventId)> = Vec::new();
    build.for_each_phase_rule(&mut |rule| {
        let path = rule.target();
        if path.is_empty() || !clock.is_anchored(&rule) {
            return;
        }
        let duration_ns = Interval::of(&rule).duration_ns();
        let record = scope.and_then(|s| targets.get(s, path));
        let slot = by_slot.get_mut(rule.id().slot());
        match classify(&rule) {
            Outcome::Hit(layer) => {
                staged.push(path, None);
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
                staged.push(path, Some(duration_ns));
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
    (HistoryFacts { by_slot, summary }, staged)
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
