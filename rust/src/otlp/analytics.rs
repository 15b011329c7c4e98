//! The build analytics ([`crate::analytics`]) as span attributes. These
//! keys are additions over ct-cake's export; they follow compiletools' own
//! keys (root: after the `ct.build.*` aggregates; rules: after the
//! metadata), so that everything before them stays in compiletools' order.

use opentelemetry_proto::tonic::common::v1::KeyValue;

use super::attributes::{saturating_i64, AttrBuilder};
use super::history::{RULE_DURATION_DELTA_S, RULE_TIME_SAVED_S};
use crate::analytics::{BuildAnalytics, RuleFacts};
use crate::history::RuleHistory;

/// Root: sum of rule durations ÷ wall time of the `build_execution` phase.
pub const PARALLELISM_AVG: &str = "ct.build.parallelism.avg";
/// Root: most rules running at once.
pub const PARALLELISM_MAX: &str = "ct.build.parallelism.max";
/// Root: length of the critical path, seconds.
pub const CRITICAL_PATH_S: &str = "ct.build.critical_path_s";
/// Root: how the path was found: `estimate`, `ninja_graph`, `make_graph`.
pub const CRITICAL_PATH_METHOD: &str = "ct.build.critical_path.method";
/// Root: span names of the rules with the most weighted time.
pub const TOP_WEIGHTED_RULES: &str = "ct.build.top_weighted_rules";
/// Rule: weighted time (Chromium's `post_build_ninja_summary` definition).
pub const RULE_WEIGHTED_S: &str = "ct.rule.weighted_s";
/// Rule: `true` on the rules of the critical path, absent elsewhere.
pub const CRITICAL_PATH: &str = "ct.critical_path";
/// Rule: how much shorter the exact critical path gets without this rule,
/// seconds; on the rules of an exact path only.
pub const RULE_DRAG_S: &str = "ct.rule.drag_s";

/// The root span's analytics attributes, in this order: parallelism
/// average (only when the build has a `build_execution` phase that took
/// time), maximum, critical path length and method, top weighted rules.
/// None when no rule counted.
pub fn analytics_root_attributes(analytics: &BuildAnalytics, max_attribute_len: u32) -> Vec<KeyValue> {
    let Some(s) = analytics.summary() else {
        return Vec::new();
    };
    let mut a = AttrBuilder::with_capacity(max_attribute_len, 5);
    if let Some(avg) = s.parallelism_avg {
        a.double(PARALLELISM_AVG, avg);
    }
    a.int(PARALLELISM_MAX, saturating_i64(s.parallelism_max));
    a.double(CRITICAL_PATH_S, s.critical_path_s);
    a.string(CRITICAL_PATH_METHOD, s.critical_path_method.as_str());
    a.strings(
        TOP_WEIGHTED_RULES,
        s.top_weighted_rules.iter().map(String::as_str),
    );
    a.finish().0
}

/// A rule attribute's value: a number of seconds, a count, a flag, one of
/// a fixed set of names (the rebuild reasons), or names the history holds
/// (a precompiled header's changed headers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RuleValue<'h> {
    Double(f64),
    Int(i64),
    Bool(bool),
    Str(&'static str),
    Strs(&'static [&'static str]),
    Names(&'h [Box<str>]),
}

/// A rule span's analytics attributes, the compile history's after them,
/// in the order they follow its metadata: the one list both trace encoders
/// (`SpanWriter` and the wire encoder) write, so they cannot drift apart.
pub fn rule_attributes(
    facts: Option<RuleFacts>,
    history: Option<RuleHistory>,
) -> impl Iterator<Item = (&'static str, RuleValue<'static>)> {
    [
        facts.map(|f| (RULE_WEIGHTED_S, RuleValue::Double(f.weighted_s))),
        facts
            .filter(|f| f.critical_path)
            .map(|_| (CRITICAL_PATH, RuleValue::Bool(true))),
        facts
            .and_then(|f| f.drag_s)
            .map(|d| (RULE_DRAG_S, RuleValue::Double(d))),
        history
            .and_then(|h| h.time_saved_s)
            .map(|v| (RULE_TIME_SAVED_S, RuleValue::Double(v))),
        history
            .and_then(|h| h.duration_delta_s)
            .map(|v| (RULE_DURATION_DELTA_S, RuleValue::Double(v))),
    ]
    .into_iter()
    .flatten()
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;

    use super::*;
    use crate::analytics::analyze;
    use crate::timing::model::parse_for_test;
    use crate::timing::Clock;

    #[test]
    fn root_keys_in_order_and_names_cut_at_the_limit() {
        let build = parse_for_test(
            r#"{"timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0,
                "phases": [{"name": "build_execution", "start_s": 101.0, "end_s": 103.0, "rules": [
                  {"name": "a_long_name.cpp", "rule_type": "compile", "start_s": 101.0, "end_s": 102.0}]}]}"#,
        );
        let analytics = analyze(&build, &Clock::for_build(&build).unwrap());
        let attrs = analytics_root_attributes(&analytics, 12);
        let keys: Vec<&str> = attrs.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                PARALLELISM_AVG,
                PARALLELISM_MAX,
                CRITICAL_PATH_S,
                CRITICAL_PATH_METHOD,
                TOP_WEIGHTED_RULES
            ]
        );
        let value = |i: usize| attrs[i].value.as_ref().and_then(|v| v.value.clone());
        assert_eq!(value(0), Some(Value::DoubleValue(0.5)));
        assert_eq!(value(1), Some(Value::IntValue(1)));
        assert_eq!(value(2), Some(Value::DoubleValue(1.0)));
        assert_eq!(value(3), Some(Value::StringValue("estimate".into())));
        let Some(Value::ArrayValue(top)) = value(4) else {
            panic!("top rules are not an array")
        };
        assert_eq!(
            top.values[0].value,
            Some(Value::StringValue("compile.a_lo".into()))
        );
    }

    #[test]
    fn critical_path_flag_only_when_true() {
        let keys = |critical_path, drag_s| {
            let facts = RuleFacts {
                weighted_s: 1.0,
                critical_path,
                drag_s,
            };
            rule_attributes(Some(facts), None)
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            keys(true, Some(0.5)),
            [RULE_WEIGHTED_S, CRITICAL_PATH, RULE_DRAG_S]
        );
        assert_eq!(keys(true, None), [RULE_WEIGHTED_S, CRITICAL_PATH]);
        assert_eq!(keys(false, None), [RULE_WEIGHTED_S]);
        assert!(analytics_root_attributes(&BuildAnalytics::default(), 100).is_empty());
    }
}
