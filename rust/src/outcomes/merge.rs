//! Merging outcomes into the rules of a build (formats.md §5.3 rule 6), then
//! recomputing `ct.rule.cache_layer` (formats.md §2.6) as compiletools does.

use super::parse::Outcomes;
use crate::timing::{Build, MetaValue, CACHE_LAYER_KEY};

/// What a merge changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Rules (any depth) whose metadata received a record.
    pub rules_updated: u64,
    /// Compile rules whose `ct.rule.cache_layer` was (re)computed.
    pub layers_recomputed: u64,
}

/// Merges `outcomes` into `build`:
/// 1. every non-phase event, at any depth, whose non-empty `target` equals a
///    record's target exactly gets `cas.hit`, `cas.bytes_reused` and (when
///    the record has one) `cas.kind`, overwriting existing values in place
///    and appending new keys in that order (a Python `dict.update`);
/// 2. then every `compile` rule reachable through phases gets
///    `ct.rule.cache_layer` = `cas` if its `cas.hit` is truthy, else
///    `other`.
///
/// Step 2 only runs when the log holds at least one record: compiletools
/// computes the layer on every build, so a timing.json it wrote already has
/// the value step 2 would give, and a legacy file without the key keeps
/// what it says. Per-TU ccache attribution
/// ([`crate::statslog::attribute`]) goes on top afterwards.
pub fn merge(build: &mut Build, outcomes: &Outcomes) -> MergeStats {
    let mut stats = MergeStats::default();
    if outcomes.is_empty() {
        return stats;
    }
    for id in build.rule_ids() {
        let Some(outcome) = build
            .event(id)
            .map(|rule| rule.target())
            .filter(|target| !target.is_empty())
            .and_then(|target| outcomes.get(target))
        else {
            continue;
        };
        build.set_metadata(id, "cas.hit", MetaValue::Bool(outcome.hit));
        build.set_metadata(id, "cas.bytes_reused", MetaValue::Int(outcome.bytes_reused));
        if let Some(kind) = &outcome.kind {
            build.set_metadata(id, "cas.kind", MetaValue::Str(kind));
        }
        stats.rules_updated += 1;
    }
    for id in build.phase_rule_ids() {
        let Some(rule) = build.event(id).filter(|rule| rule.rule_type() == Some("compile")) else {
            continue;
        };
        let layer = if rule.is_cas_hit() { "cas" } else { "other" };
        build.set_metadata(id, CACHE_LAYER_KEY, MetaValue::Str(layer));
        stats.layers_recomputed += 1;
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcomes::parse;
    use crate::timing::model::parse_for_test;
    use crate::timing::Event;

    /// A rule as JSON text; `metadata` is JSON text too, so that its key
    /// order is kept (serde_json's `Value` sorts keys).
    fn rule(rule_type: &str, target: &str, metadata: &str) -> String {
        format!(
            r#"{{"name": "r", "rule_type": "{rule_type}", "target": "{target}", "metadata": {metadata}}}"#
        )
    }

    fn meta<'b>(e: &Event<'b>) -> Vec<(&'b str, MetaValue<'b>)> {
        e.metadata().collect()
    }

    #[test]
    fn merges_in_dict_order_and_recomputes_layers() {
        let child = format!(
            r#"{{"name": "c", "rule_type": "compile", "target": "/o/c.o", "children": [{}]}}"#,
            rule("compile", "/o/a.o", "{}")
        );
        let rules = [
            // shake-style metadata: existing keys are overwritten in place.
            rule(
                "compile",
                "/o/a.o",
                r#"{"cas.hit": false, "cas.bytes_reused": 0, "cas.kind": "obj",
                    "queue_wait_s": 1e-6, "ct.rule.cache_layer": "other"}"#,
            ),
            // make-style: no metadata yet; the kind field is empty.
            rule("compile", "/o/b.o", "{}"),
            rule("link", "/e/x.exe", "{}"),
            rule("compile", "", "{}"),
            child,
        ];
        let doc = format!(
            r#"{{"phases": [{{"name": "p", "rules": [{}]}}]}}"#,
            rules.join(",")
        );
        let mut build = parse_for_test(&doc);
        let log = parse(b"/o/a.o\tobj\t1\t8552\n/o/b.o\t\t0\t0\n/e/x.exe\texe\t0\t0\n\tobj\t1\t1\n");
        let stats = merge(&mut build, &log);
        assert_eq!(
            stats,
            MergeStats {
                rules_updated: 4, // a, b, x.exe and the nested child a
                layers_recomputed: 4,
            }
        );
        let rules: Vec<Event> = build.children().next().unwrap().children().collect();
        assert_eq!(
            meta(&rules[0]),
            [
                ("cas.hit", MetaValue::Bool(true)),
                ("cas.bytes_reused", MetaValue::Int(8552)),
                ("cas.kind", MetaValue::Str("obj")),
                ("queue_wait_s", MetaValue::Double(1e-6)),
                (CACHE_LAYER_KEY, MetaValue::Str("cas")),
            ]
        );
        assert_eq!(
            meta(&rules[1]),
            [
                ("cas.hit", MetaValue::Bool(false)),
                ("cas.bytes_reused", MetaValue::Int(0)),
                (CACHE_LAYER_KEY, MetaValue::Str("other")),
            ]
        );
        // Link rules get the record but no layer.
        assert_eq!(meta(&rules[2]).len(), 3);
        // The empty target matches nothing, yet is a compile rule: layer only.
        assert_eq!(meta(&rules[3]), [(CACHE_LAYER_KEY, MetaValue::Str("other"))]);
        // Rule children are merged but not annotated (formats.md §2.6).
        let nested = rules[4].children().next().unwrap();
        assert_eq!(meta(&nested).len(), 3);
        assert!(nested.metadata_value(CACHE_LAYER_KEY).is_none());
    }

    #[test]
    fn empty_log_changes_nothing() {
        let doc = format!(r#"{{"phases": [{}]}}"#, rule("compile", "/o/a.o", "{}"));
        let mut build = parse_for_test(&doc);
        assert_eq!(merge(&mut build, &parse(b"")), MergeStats::default());
        assert_eq!(build.children().next().unwrap().metadata().len(), 0);
    }
}
