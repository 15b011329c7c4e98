//! Root cross-layer aggregates `ct.build.*` (spec §3.4), recomputed because
//! timing.json never stores them (spec §2.7).
//!
//! The ccache side (`H`) comes from a statslog the receiver may or may not
//! hold for the build; it is an input here so that the statslog parser can
//! be plugged in without touching this computation.

use super::model::{Build, Event};

/// The statslog counts the aggregates need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CcacheHits {
    pub direct_cache_hit: u64,
    pub preprocessed_cache_hit: u64,
}

impl CcacheHits {
    /// `H` of spec §3.4: every ccache hit of the build.
    pub fn total(&self) -> u64 {
        self.direct_cache_hit.saturating_add(self.preprocessed_cache_hit)
    }
}

/// `ct.build.*` values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BuildAggregates {
    /// |C|: compile rules reachable through phases.
    pub compile_rules: u64,
    /// A → `ct.build.cas_avoided_count`.
    pub cas_avoided: u64,
    /// H → `ct.build.ccache_avoided_count`.
    pub ccache_avoided: u64,
    /// max(0, miss − H) → `ct.build.recompiled_count`.
    pub recompiled: u64,
    /// (A + H) / |C| clamped to [0, 1], 0.0 without compile rules.
    pub compile_avoided_rate: f64,
    /// miss − H < 0 → `ct.build.aggregate_warning = "ccache_overcount"`.
    pub ccache_overcount: bool,
}

/// Computes the aggregates; `ccache` is `None` when no statslog data is held
/// for the build (then H = 0, as in compiletools without a statslog).
///
/// All compile rules count, anchored or not: compiletools aggregates over
/// the timing tree before its exporter skips anything.
pub fn compute(build: &Build, ccache: Option<CcacheHits>) -> BuildAggregates {
    let mut compile_rules = 0u64;
    let mut cas_avoided = 0u64;
    walk_phases(&build.children, &mut |rule| {
        if rule.rule_type() == Some("compile") {
            compile_rules += 1;
            if rule.metadata_value("cas.hit").is_some_and(|v| v.is_truthy()) {
                cas_avoided += 1;
            }
        }
    });
    let h = ccache.map(|c| c.total()).unwrap_or(0);
    let miss = compile_rules - cas_avoided;
    let compile_avoided_rate = if compile_rules > 0 {
        ((cas_avoided as f64 + h as f64) / compile_rules as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    BuildAggregates {
        compile_rules,
        cas_avoided,
        ccache_avoided: h,
        recompiled: miss.saturating_sub(h),
        compile_avoided_rate,
        ccache_overcount: miss < h,
    }
}

/// Calls `on_rule` for every rule found from the root through phases only:
/// sub-phases are descended into, rule `children` are not (spec §3.4 `C`).
fn walk_phases<'e>(events: &'e [Event<'e>], on_rule: &mut impl FnMut(&'e Event<'e>)) {
    for event in events {
        if event.is_rule() {
            on_rule(event);
        } else {
            walk_phases(&event.children, on_rule);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::timing::model::MetaValue;

    fn compile(hit: Option<MetaValue<'static>>) -> Event<'static> {
        Event {
            rule_type: Some(Cow::Borrowed("compile")),
            metadata: hit
                .map(|v| vec![(Cow::Borrowed("cas.hit"), v)])
                .unwrap_or_default(),
            ..Default::default()
        }
    }

    fn phase(children: Vec<Event<'static>>) -> Event<'static> {
        Event {
            name: Cow::Borrowed("p"),
            children,
            ..Default::default()
        }
    }

    #[test]
    fn counts_compile_rules_through_phases_only() {
        let mut link = compile(Some(MetaValue::Bool(true)));
        link.rule_type = Some(Cow::Borrowed("link"));
        let mut parent = compile(None);
        // A compile rule under a rule's children is not in C.
        parent.children = vec![compile(Some(MetaValue::Bool(true)))];
        let build = Build {
            children: vec![
                compile(Some(MetaValue::Bool(true))), // a rule directly under the root
                phase(vec![compile(Some(MetaValue::Bool(false))), link, parent]),
                phase(vec![phase(vec![compile(Some(MetaValue::Int(1)))])]), // sub-phase
            ],
            ..Default::default()
        };
        let agg = compute(&build, None);
        assert_eq!(
            (
                agg.compile_rules,
                agg.cas_avoided,
                agg.ccache_avoided,
                agg.recompiled
            ),
            (4, 2, 0, 2)
        );
        assert_eq!(agg.compile_avoided_rate, 0.5);
        assert!(!agg.ccache_overcount);
    }

    #[test]
    fn ccache_hits_and_overcount() {
        let build = Build {
            children: vec![phase(vec![compile(None), compile(None)])],
            ..Default::default()
        };
        let hits = |h| {
            Some(CcacheHits {
                direct_cache_hit: h,
                preprocessed_cache_hit: 0,
            })
        };
        let agg = compute(&build, hits(1));
        assert_eq!(
            (agg.recompiled, agg.compile_avoided_rate, agg.ccache_overcount),
            (1, 0.5, false)
        );
        let agg = compute(&build, hits(5));
        assert_eq!(
            (agg.recompiled, agg.compile_avoided_rate, agg.ccache_overcount),
            (0, 1.0, true)
        );
        // Corpus case 06: no compile rules, 58 hits from a stale statslog.
        let agg = compute(&Build::default(), hits(58));
        assert_eq!(
            (agg.recompiled, agg.compile_avoided_rate, agg.ccache_overcount),
            (0, 0.0, true)
        );
    }
}
