//! Per-TU ccache attribution (design.md §2, last paragraph): the statslog's
//! `# <source>` blocks say which translation unit each outcome belongs to,
//! which no anchor of compiletools records.
//!
//! For every `compile` rule reachable through phases (the rules compiletools
//! annotates, formats.md §2.6) whose `source` equals a block's path exactly:
//! * `ct.rule.cache_layer` = `ccache` (direct or preprocessed hit) or
//!   `compiled` (miss) — values compiletools reserves but never emits;
//! * `ct.ccache.outcome` = the primary event name.
//!
//! Left unchanged: rules with a truthy `cas.hit` (the CAS served them, the
//! compiler and ccache never ran for them, so they stay `cas`), rules whose
//! source has no block, and rules whose source's block has no primary event
//! (a failed or uncacheable compile). They keep compiletools' `cas`/`other`.
//!
//! **Several blocks for one source: the last one wins.** This is the
//! deliberate choice for the two ways it happens:
//! * an explicit statslog spanning several builds (formats.md §1.6, corpus case
//!   06): ccache appends, so the current build's blocks come after every
//!   earlier build's, and the last block is this build's compile;
//! * one build compiling a TU more than once (cmake compiles a shared source
//!   once per target, corpus case 19): timing.json then has one rule per
//!   compile, all with the same `source`, and nothing in either file says
//!   which block is which rule's — the last one is as good as any, and is
//!   the state the object files were left in.
//!
//! A last block without a primary event therefore hides an earlier hit or
//! miss: an older build's outcome is never attributed to a compile of this
//! one that ccache could not cache.

use super::parse::Statslog;
use crate::timing::{Build, MetaValue, CACHE_LAYER_KEY};

/// Attribute key of the primary ccache event of a compile rule's TU.
pub const OUTCOME_KEY: &str = "ct.ccache.outcome";

/// Marks the compile rules of `build` with their TU's ccache outcome;
/// returns how many rules were marked.
pub fn attribute(build: &mut Build, statslog: &Statslog) -> u64 {
    let by_source = statslog.last_block_by_source();
    if by_source.is_empty() {
        return 0;
    }
    let mut marked = 0u64;
    for id in build.phase_rule_ids() {
        let Some(rule) = build.event(id) else {
            continue;
        };
        if rule.rule_type() != Some("compile") || rule.source().is_empty() || rule.is_cas_hit() {
            continue;
        }
        let Some(Some(primary)) = by_source.get(rule.source()) else {
            continue;
        };
        build.set_metadata(id, CACHE_LAYER_KEY, MetaValue::Str(primary.cache_layer()));
        build.set_metadata(id, OUTCOME_KEY, MetaValue::Str(primary.event_name()));
        marked += 1;
    }
    marked
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::statslog::parse;
    use crate::timing::model::parse_for_test;
    use crate::timing::Event;

    fn compile(source: &str, cas_hit: bool) -> Value {
        // serde_json's maps are sorted, which here is also the file order
        // compiletools writes: `cas.hit` before `ct.rule.cache_layer`.
        json!({"name": "c", "rule_type": "compile", "source": source, "metadata": {
            "cas.hit": cas_hit,
            CACHE_LAYER_KEY: if cas_hit { "cas" } else { "other" },
        }})
    }

    fn build(children: Vec<Value>) -> Build {
        parse_for_test(&json!({ "phases": children }).to_string())
    }

    fn layer_and_outcome(e: Event) -> (String, Option<String>) {
        let s = |k| match e.metadata_value(k) {
            Some(MetaValue::Str(s)) => Some(s.to_string()),
            _ => None,
        };
        (s(CACHE_LAYER_KEY).unwrap_or_default(), s(OUTCOME_KEY))
    }

    #[test]
    fn marks_hits_misses_and_leaves_the_rest() {
        let mut link = compile("/s/a.cpp", false);
        link["rule_type"] = json!("link");
        let mut build = build(vec![json!({"name": "p", "rules": [
            compile("/s/a.cpp", false),
            compile("/s/b.cpp", false),
            compile("/s/c.cpp", true),
            compile("/s/d.cpp", false),
            compile("/s/e.cpp", false),
            compile("", false),
            link,
        ]})]);
        let log = parse(
            b"# \ncalled_for_preprocessing\n# /s/a.cpp\ndirect_cache_hit\n# /s/b.cpp\ncache_miss\n\
              # /s/c.cpp\ncache_miss\n# /s/e.cpp\ndirect_cache_miss\ncompile_failed\n",
        );
        assert_eq!(attribute(&mut build, &log), 2);
        let phase = build.children().next().unwrap();
        let got: Vec<(String, Option<String>)> = phase.children().map(layer_and_outcome).collect();
        let want = [
            ("ccache", Some("direct_cache_hit")),
            ("compiled", Some("cache_miss")),
            ("cas", None),   // CAS hit stays cas
            ("other", None), // no block
            ("other", None), // block without a primary event
            ("other", None), // empty source never matches the probe block
            ("other", None), // not a compile rule
        ];
        let want: Vec<(String, Option<String>)> = want
            .iter()
            .map(|(l, o)| (l.to_string(), o.map(str::to_owned)))
            .collect();
        assert_eq!(got, want);
        // The outcome follows the layer, appended after the existing keys.
        let keys: Vec<&str> = phase
            .children()
            .next()
            .unwrap()
            .metadata()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["cas.hit", CACHE_LAYER_KEY, OUTCOME_KEY]);
    }

    #[test]
    fn preprocessed_hit_and_last_block_wins() {
        let mut build = build(vec![json!({"name": "p", "rules": [
            compile("/s/a.cpp", false),
            compile("/s/a.cpp", false),
        ]})]);
        let log = parse(b"# /s/a.cpp\ncache_miss\n# /s/a.cpp\npreprocessed_cache_hit\n");
        assert_eq!(attribute(&mut build, &log), 2);
        for rule in build.children().next().unwrap().children() {
            assert_eq!(
                layer_and_outcome(rule),
                ("ccache".to_owned(), Some("preprocessed_cache_hit".to_owned()))
            );
        }
    }

    #[test]
    fn rules_without_a_layer_get_one() {
        let mut rule = compile("/s/a.cpp", false);
        rule["metadata"] = json!({});
        let mut build = build(vec![rule]);
        attribute(&mut build, &parse(b"# /s/a.cpp\ncache_miss\n"));
        assert_eq!(
            layer_and_outcome(build.children().next().unwrap()),
            ("compiled".to_owned(), Some("cache_miss".to_owned()))
        );
    }
}
