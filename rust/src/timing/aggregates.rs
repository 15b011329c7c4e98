//! Root cross-layer aggregates `ct.build.*` (formats.md §3.4), recomputed because
//! timing.json never stores them (formats.md §2.7).
//!
//! The ccache side (`H`) comes from a statslog the receiver may or may not
//! hold for the build; it is an input here so that the statslog parser can
//! be plugged in without touching this computation.

use super::model::Build;

/// The statslog counts the aggregates need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CcacheHits {
    pub direct_cache_hit: u64,
    pub preprocessed_cache_hit: u64,
}

impl CcacheHits {
    /// `H` of formats.md §3.4: every ccache hit of the build.
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
    build.for_each_phase_rule(&mut |rule| {
        if rule.rule_type() == Some("compile") {
            compile_rules += 1;
            if rule.is_cas_hit() {
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

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::timing::model::parse_for_test;

    fn compile(hit: Option<Value>) -> Value {
        let mut rule = json!({"name": "c", "rule_type": "compile"});
        if let Some(hit) = hit {
            rule["metadata"] = json!({ "cas.hit": hit });
        }
        rule
    }

    fn phase(children: Vec<Value>) -> Value {
        json!({"name": "p", "rules": children})
    }

    fn build(children: Vec<Value>) -> Build {
        parse_for_test(&json!({ "phases": children }).to_string())
    }

    #[test]
    fn counts_compile_rules_through_phases_only() {
        let mut link = compile(Some(json!(true)));
        link["rule_type"] = json!("link");
        let mut parent = compile(None);
        // A compile rule under a rule's children is not in C.
        parent["children"] = json!([compile(Some(json!(true)))]);
        let build = build(vec![
            compile(Some(json!(true))), // a rule directly under the root
            phase(vec![compile(Some(json!(false))), link, parent]),
            phase(vec![phase(vec![compile(Some(json!(1)))])]), // sub-phase
        ]);
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
        let build = build(vec![phase(vec![compile(None), compile(None)])]);
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
