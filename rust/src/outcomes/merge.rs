//! Merging outcomes into the rules of a build (spec §5.3 rule 6), then
//! recomputing `ct.rule.cache_layer` (spec §2.6) as compiletools does.

use std::borrow::Cow;

use super::parse::Outcomes;
use crate::statslog::attribution::CACHE_LAYER_KEY;
use crate::timing::{Build, MetaValue};

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
    build.for_each_rule_mut(&mut |rule| {
        if rule.target.is_empty() {
            return;
        }
        let Some(outcome) = outcomes.get(&rule.target) else {
            return;
        };
        rule.set_metadata("cas.hit", MetaValue::Bool(outcome.hit));
        rule.set_metadata("cas.bytes_reused", MetaValue::Int(outcome.bytes_reused));
        if let Some(kind) = &outcome.kind {
            rule.set_metadata("cas.kind", MetaValue::Str(Cow::Owned(kind.clone())));
        }
        stats.rules_updated += 1;
    });
    build.for_each_phase_rule_mut(&mut |rule| {
        if rule.rule_type() != Some("compile") {
            return;
        }
        let layer = if rule.is_cas_hit() { "cas" } else { "other" };
        rule.set_metadata(CACHE_LAYER_KEY, MetaValue::Str(Cow::Borrowed(layer)));
        stats.layers_recomputed += 1;
    });
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcomes::parse;
    use crate::timing::Event;

    fn rule(
        rule_type: &'static str,
        target: &'static str,
        metadata: Vec<(&'static str, MetaValue<'static>)>,
    ) -> Event<'static> {
        Event {
            rule_type: Some(Cow::Borrowed(rule_type)),
            target: Cow::Borrowed(target),
            metadata: metadata.into_iter().map(|(k, v)| (Cow::Borrowed(k), v)).collect(),
            ..Default::default()
        }
    }

    fn meta(e: &Event) -> Vec<(String, MetaValue<'static>)> {
        e.metadata
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    MetaValue::Str(s) => MetaValue::Str(Cow::Owned(s.to_string())),
                    MetaValue::Bool(b) => MetaValue::Bool(*b),
                    MetaValue::Int(i) => MetaValue::Int(*i),
                    MetaValue::Double(d) => MetaValue::Double(*d),
                    other => panic!("{other:?}"),
                };
                (k.to_string(), v)
            })
            .collect()
    }

    fn s(v: &'static str) -> MetaValue<'static> {
        MetaValue::Str(Cow::Borrowed(v))
    }

    #[test]
    fn merges_in_dict_order_and_recomputes_layers() {
        let mut child = rule("compile", "/o/c.o", vec![]);
        child.children = vec![rule("compile", "/o/a.o", vec![])];
        let mut build = Build {
            children: vec![Event {
                children: vec![
                    // shake-style metadata: existing keys are overwritten in place.
                    rule(
                        "compile",
                        "/o/a.o",
                        vec![
                            ("cas.hit", MetaValue::Bool(false)),
                            ("cas.bytes_reused", MetaValue::Int(0)),
                            ("cas.kind", s("obj")),
                            ("queue_wait_s", MetaValue::Double(1e-6)),
                            (CACHE_LAYER_KEY, s("other")),
                        ],
                    ),
                    // make-style: no metadata yet; the kind field is empty.
                    rule("compile", "/o/b.o", vec![]),
                    rule("link", "/e/x.exe", vec![]),
                    rule("compile", "", vec![]),
                    child,
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let log = parse(b"/o/a.o\tobj\t1\t8552\n/o/b.o\t\t0\t0\n/e/x.exe\texe\t0\t0\n\tobj\t1\t1\n");
        let stats = merge(&mut build, &log);
        assert_eq!(
            stats,
            MergeStats {
                rules_updated: 4, // a, b, x.exe and the nested child a
                layers_recomputed: 4,
            }
        );
        let rules = &build.children[0].children;
        let key_value = |k: &str, v| (k.to_owned(), v);
        assert_eq!(
            meta(&rules[0]),
            [
                key_value("cas.hit", MetaValue::Bool(true)),
                key_value("cas.bytes_reused", MetaValue::Int(8552)),
                key_value("cas.kind", s("obj")),
                key_value("queue_wait_s", MetaValue::Double(1e-6)),
                key_value(CACHE_LAYER_KEY, s("cas")),
            ]
        );
        assert_eq!(
            meta(&rules[1]),
            [
                key_value("cas.hit", MetaValue::Bool(false)),
                key_value("cas.bytes_reused", MetaValue::Int(0)),
                key_value(CACHE_LAYER_KEY, s("other")),
            ]
        );
        // Link rules get the record but no layer.
        assert_eq!(meta(&rules[2]).len(), 3);
        // The empty target matches nothing, yet is a compile rule: layer only.
        assert_eq!(meta(&rules[3]), [key_value(CACHE_LAYER_KEY, s("other"))]);
        // Rule children are merged but not annotated (spec §2.6).
        let nested = &rules[4].children[0];
        assert_eq!(meta(nested).len(), 3);
        assert!(nested.metadata_value(CACHE_LAYER_KEY).is_none());
    }

    #[test]
    fn empty_log_changes_nothing() {
        let mut build = Build {
            children: vec![rule("compile", "/o/a.o", vec![])],
            ..Default::default()
        };
        assert_eq!(merge(&mut build, &parse(b"")), MergeStats::default());
        assert!(build.children[0].metadata.is_empty());
    }
}
