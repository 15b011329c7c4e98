//! Per-TU ccache attribution (DESIGN §2, last paragraph): the statslog's
//! `# <source>` blocks say which translation unit each outcome belongs to,
//! which no anchor of compiletools records.
//!
//! For every `compile` rule reachable through phases (the rules compiletools
//! annotates, spec §2.6) whose `source` equals a block's path exactly:
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
//! * an explicit statslog spanning several builds (spec §1.6, corpus case
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
use crate::timing::{Build, MetaValue};

/// Attribute key of the primary ccache event of a compile rule's TU.
pub const OUTCOME_KEY: &str = "ct.ccache.outcome";
/// Attribute key of the cache layer that served a compile rule.
pub const CACHE_LAYER_KEY: &str = "ct.rule.cache_layer";

/// Marks the compile rules of `build` with their TU's ccache outcome;
/// returns how many rules were marked.
pub fn attribute(build: &mut Build, statslog: &Statslog) -> u64 {
    let by_source = statslog.last_block_by_source();
    if by_source.is_empty() {
        return 0;
    }
    let mut marked = 0u64;
    build.for_each_phase_rule_mut(&mut |rule| {
        if rule.rule_type() != Some("compile") || rule.source.is_empty() || rule.is_cas_hit() {
            return;
        }
        let Some(Some(primary)) = by_source.get(rule.source.as_ref()) else {
            return;
        };
        rule.set_metadata(CACHE_LAYER_KEY, MetaValue::Str(primary.cache_layer().into()));
        rule.set_metadata(OUTCOME_KEY, MetaValue::Str(primary.event_name().into()));
        marked += 1;
    });
    marked
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::statslog::parse;
    use crate::timing::Event;

    fn compile(source: &'static str, cas_hit: bool) -> Event<'static> {
        Event {
            rule_type: Some(Cow::Borrowed("compile")),
            source: Cow::Borrowed(source),
            metadata: vec![
                (Cow::Borrowed("cas.hit"), MetaValue::Bool(cas_hit)),
                (
                    Cow::Borrowed(CACHE_LAYER_KEY),
                    MetaValue::Str(Cow::Borrowed(if cas_hit { "cas" } else { "other" })),
                ),
            ],
            ..Default::default()
        }
    }

    fn layer_and_outcome(e: &Event) -> (String, Option<String>) {
        let s = |k| match e.metadata_value(k) {
            Some(MetaValue::Str(s)) => Some(s.to_string()),
            _ => None,
        };
        (s(CACHE_LAYER_KEY).unwrap_or_default(), s(OUTCOME_KEY))
    }

    #[test]
    fn marks_hits_misses_and_leaves_the_rest() {
        let mut link = compile("/s/a.cpp", false);
        link.rule_type = Some(Cow::Borrowed("link"));
        let mut build = Build {
            children: vec![Event {
                children: vec![
                    compile("/s/a.cpp", false),
                    compile("/s/b.cpp", false),
                    compile("/s/c.cpp", true),
                    compile("/s/d.cpp", false),
                    compile("/s/e.cpp", false),
                    compile("", false),
                    link,
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let log = parse(
            b"# \ncalled_for_preprocessing\n# /s/a.cpp\ndirect_cache_hit\n# /s/b.cpp\ncache_miss\n\
              # /s/c.cpp\ncache_miss\n# /s/e.cpp\ndirect_cache_miss\ncompile_failed\n",
        );
        assert_eq!(attribute(&mut build, &log), 2);
        let got: Vec<(String, Option<String>)> =
            build.children[0].children.iter().map(layer_and_outcome).collect();
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
        let keys: Vec<&str> = build.children[0].children[0]
            .metadata
            .iter()
            .map(|(k, _)| k.as_ref())
            .collect();
        assert_eq!(keys, ["cas.hit", CACHE_LAYER_KEY, OUTCOME_KEY]);
    }

    #[test]
    fn preprocessed_hit_and_last_block_wins() {
        let mut build = Build {
            children: vec![Event {
                children: vec![compile("/s/a.cpp", false), compile("/s/a.cpp", false)],
                ..Default::default()
            }],
            ..Default::default()
        };
        let log = parse(b"# /s/a.cpp\ncache_miss\n# /s/a.cpp\npreprocessed_cache_hit\n");
        assert_eq!(attribute(&mut build, &log), 2);
        for rule in &build.children[0].children {
            assert_eq!(
                layer_and_outcome(rule),
                ("ccache".to_owned(), Some("preprocessed_cache_hit".to_owned()))
            );
        }
    }

    #[test]
    fn rules_without_a_layer_get_one() {
        let mut rule = compile("/s/a.cpp", false);
        rule.metadata.clear();
        let mut build = Build {
            children: vec![rule],
            ..Default::default()
        };
        attribute(&mut build, &parse(b"# /s/a.cpp\ncache_miss\n"));
        assert_eq!(
            layer_and_outcome(&build.children[0]),
            ("compiled".to_owned(), Some("cache_miss".to_owned()))
        );
    }
}
