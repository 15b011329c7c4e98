//! Attributes of the root span `compiletools.build` (formats.md §3.4).

use opentelemetry_proto::tonic::common::v1::KeyValue;

use super::attributes::{saturating_i64, AttrBuilder};
use crate::statslog::CcacheSummary;
use crate::timing::BuildAggregates;

/// Value of `ct.build.aggregate_warning` when ccache counted more hits than
/// there were compile misses.
pub const CCACHE_OVERCOUNT: &str = "ccache_overcount";

/// Every root attribute in compiletools' order: the twelve `ct.ccache.*`
/// summary keys when the build has statslog data (`ccache` is `Some` only
/// when the statslog yielded at least one event, formats.md §3.4), then the
/// `ct.build.*` keys.
pub fn root_attributes_with_ccache(
    agg: &BuildAggregates,
    ccache: Option<&CcacheSummary>,
    max_attribute_len: u32,
) -> Vec<KeyValue> {
    let mut attrs = ccache
        .map(|s| ccache_attributes(s, max_attribute_len))
        .unwrap_or_default();
    attrs.extend(root_attributes(agg, max_attribute_len));
    attrs
}

/// The `ct.ccache.*` summary of formats.md §3.4, in compiletools' order.
pub fn ccache_attributes(s: &CcacheSummary, max_attribute_len: u32) -> Vec<KeyValue> {
    let mut a = AttrBuilder::with_capacity(max_attribute_len, 12);
    a.int("ct.ccache.cacheable_calls", saturating_i64(s.cacheable_calls()));
    a.int("ct.ccache.direct_hits", saturating_i64(s.direct_hits));
    a.int("ct.ccache.preprocessed_hits", saturating_i64(s.preprocessed_hits));
    a.int("ct.ccache.misses", saturating_i64(s.misses));
    a.int("ct.ccache.local_writes", saturating_i64(s.local_writes));
    a.int("ct.ccache.remote_hits", saturating_i64(s.remote_hits));
    a.int("ct.ccache.remote_misses", saturating_i64(s.remote_misses));
    a.int("ct.ccache.remote_writes", saturating_i64(s.remote_writes));
    a.int("ct.ccache.remote_errors", saturating_i64(s.remote_errors));
    a.int("ct.ccache.remote_timeouts", saturating_i64(s.remote_timeouts));
    a.double("ct.ccache.hit_rate", s.hit_rate());
    a.double("ct.ccache.remote_hit_rate", s.remote_hit_rate());
    a.finish().0
}

/// The `ct.build.*` attributes, in compiletools' order (the `ct.ccache.*`
/// summary, when there is one, goes before them: see
/// [`root_attributes_with_ccache`]).
pub fn root_attributes(agg: &BuildAggregates, max_attribute_len: u32) -> Vec<KeyValue> {
    let mut a = AttrBuilder::with_capacity(max_attribute_len, 5);
    a.int("ct.build.cas_avoided_count", saturating_i64(agg.cas_avoided));
    a.int(
        "ct.build.ccache_avoided_count",
        saturating_i64(agg.ccache_avoided),
    );
    a.int("ct.build.recompiled_count", saturating_i64(agg.recompiled));
    a.double("ct.build.compile_avoided_rate", agg.compile_avoided_rate);
    if agg.ccache_overcount {
        a.string("ct.build.aggregate_warning", CCACHE_OVERCOUNT);
    }
    a.finish().0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_only_on_overcount() {
        let mut agg = BuildAggregates {
            compile_rules: 2,
            cas_avoided: 0,
            ccache_avoided: 0,
            recompiled: 2,
            compile_avoided_rate: 0.0,
            ccache_overcount: false,
        };
        let keys = |a: &[KeyValue]| a.iter().map(|kv| kv.key.clone()).collect::<Vec<_>>();
        assert_eq!(root_attributes(&agg, 100).len(), 4);
        agg.ccache_overcount = true;
        assert_eq!(keys(&root_attributes(&agg, 100))[4], "ct.build.aggregate_warning");
    }

    #[test]
    fn ccache_summary_goes_first_in_order() {
        let agg = BuildAggregates {
            compile_rules: 0,
            cas_avoided: 0,
            ccache_avoided: 0,
            recompiled: 0,
            compile_avoided_rate: 0.0,
            ccache_overcount: false,
        };
        let keys = |a: &[KeyValue]| a.iter().map(|kv| kv.key.clone()).collect::<Vec<_>>();
        assert_eq!(
            keys(&root_attributes_with_ccache(&agg, None, 100)),
            keys(&root_attributes(&agg, 100))
        );
        let all = keys(&root_attributes_with_ccache(
            &agg,
            Some(&CcacheSummary::default()),
            100,
        ));
        assert_eq!(
            all,
            [
                "ct.ccache.cacheable_calls",
                "ct.ccache.direct_hits",
                "ct.ccache.preprocessed_hits",
                "ct.ccache.misses",
                "ct.ccache.local_writes",
                "ct.ccache.remote_hits",
                "ct.ccache.remote_misses",
                "ct.ccache.remote_writes",
                "ct.ccache.remote_errors",
                "ct.ccache.remote_timeouts",
                "ct.ccache.hit_rate",
                "ct.ccache.remote_hit_rate",
                "ct.build.cas_avoided_count",
                "ct.build.ccache_avoided_count",
                "ct.build.recompiled_count",
                "ct.build.compile_avoided_rate",
            ]
        );
    }
}
