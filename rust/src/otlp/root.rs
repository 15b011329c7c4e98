//! Attributes of the root span `compiletools.build` (spec §3.4).

use opentelemetry_proto::tonic::common::v1::KeyValue;

use super::attributes::AttrBuilder;
use crate::timing::BuildAggregates;

/// Value of `ct.build.aggregate_warning` when ccache counted more hits than
/// there were compile misses.
pub const CCACHE_OVERCOUNT: &str = "ccache_overcount";

/// The `ct.build.*` attributes, in compiletools' order. The `ct.ccache.*`
/// summary precedes them once statslog data is available for a build.
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

fn saturating_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
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
}
