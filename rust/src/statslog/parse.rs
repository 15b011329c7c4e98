//! The statslog parser (formats.md §4.3), line for line compiletools' own:
//!
//! 1. decode UTF-8 lossily (undecodable bytes become U+FFFD);
//! 2. split on universal newlines (`\n`, `\r\n`, a lone `\r`);
//! 3. strip Python whitespace from both ends of each line; skip it if it is
//!    empty, starts with `#`, or still contains Python whitespace;
//! 4. otherwise count the exact string (no filtering to known names).
//!
//! On top of the counts, which are all compiletools keeps, the `# <source>`
//! header lines split the file into blocks, one per ccache invocation
//! (formats.md §4.2): the events after a header belong to that translation unit
//! until the next header. Per-TU attribution reads them.

use std::collections::HashMap;

use super::summary::CcacheSummary;
use super::EventCount;
use crate::pytext::{is_python_whitespace, strip, universal_lines};

/// The primary outcome of one cacheable ccache call: exactly one per call
/// (formats.md §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primary {
    DirectCacheHit,
    PreprocessedCacheHit,
    CacheMiss,
}

impl Primary {
    pub fn from_event(name: &str) -> Option<Self> {
        match name {
            "direct_cache_hit" => Some(Primary::DirectCacheHit),
            "preprocessed_cache_hit" => Some(Primary::PreprocessedCacheHit),
            "cache_miss" => Some(Primary::CacheMiss),
            _ => None,
        }
    }

    /// The statslog event name, as `ct.ccache.outcome` carries it.
    pub fn event_name(self) -> &'static str {
        match self {
            Primary::DirectCacheHit => "direct_cache_hit",
            Primary::PreprocessedCacheHit => "preprocessed_cache_hit",
            Primary::CacheMiss => "cache_miss",
        }
    }

    /// The `ct.rule.cache_layer` value compiletools reserves for it (formats.md
    /// §2.6): a hit was served by ccache, a miss ran the compiler.
    pub fn cache_layer(self) -> &'static str {
        match self {
            Primary::DirectCacheHit | Primary::PreprocessedCacheHit => "ccache",
            Primary::CacheMiss => "compiled",
        }
    }
}

/// The events between one `# <path>` header and the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The input file ccache named (empty for `# `, e.g. compiletools'
    /// compiler probe).
    pub path: String,
    /// The first primary event of the block; `None` for calls that were not
    /// cacheable (probes, `compile_failed`, ...).
    pub primary: Option<Primary>,
    /// Events counted in the block.
    pub events: u64,
}

/// A parsed statslog: event counts in first-seen order (the order
/// compiletools exports them in, being a Python `Counter`) and, unless
/// parsed with [`parse_counts`], the blocks in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statslog {
    events: Vec<EventCount>,
    blocks: Vec<Block>,
    summary: CcacheSummary,
}

impl Statslog {
    /// No event counted: compiletools then emits no `ct.ccache.*` summary
    /// and no ccache metrics (formats.md §3.4, §3.5).
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Every counted event name with its count, in first-seen order.
    pub fn events(&self) -> &[EventCount] {
        &self.events
    }

    /// The count of one event name (0 if absent); a linear scan.
    pub fn count(&self, name: &str) -> u64 {
        self.events.iter().find(|e| e.name == name).map_or(0, |e| e.count)
    }

    /// Blocks in file order (empty when parsed with [`parse_counts`]).
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The numbers of the root span's `ct.ccache.*` attributes.
    pub fn summary(&self) -> &CcacheSummary {
        &self.summary
    }

    /// The outcome of each source's **last** block (see
    /// [`super::attribution`] for why the last), keyed by path; sources with
    /// an empty path are left out, as they name no translation unit.
    pub fn last_block_by_source(&self) -> HashMap<&str, Option<Primary>> {
        let mut by_source = HashMap::with_capacity(self.blocks.len());
        for block in &self.blocks {
            if !block.path.is_empty() {
                by_source.insert(block.path.as_str(), block.primary);
            }
        }
        by_source
    }
}

/// Parses statslog bytes: counts and blocks.
pub fn parse(bytes: &[u8]) -> Statslog {
    parse_impl(bytes, true)
}

/// Parses statslog bytes keeping only the counts (for metrics alone).
pub fn parse_counts(bytes: &[u8]) -> Statslog {
    parse_impl(bytes, false)
}

fn parse_impl(bytes: &[u8], keep_blocks: bool) -> Statslog {
    let text = String::from_utf8_lossy(bytes);
    // Names and paths borrow from the text while counting; each distinct
    // one is copied once at the end.
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut counts: Vec<(&str, u64)> = Vec::new();
    let mut blocks: Vec<(&str, Option<Primary>, u64)> = Vec::new();
    let mut in_block = false;
    for line in universal_lines(&text) {
        let stripped = strip(line);
        if stripped.is_empty() {
            continue;
        }
        if stripped.starts_with('#') {
            if keep_blocks {
                blocks.push((header_path(line), None, 0));
                in_block = true;
            }
            continue;
        }
        if stripped.contains(is_python_whitespace) {
            continue;
        }
        match index.get(stripped) {
            Some(&i) => counts[i].1 += 1,
            None => {
                index.insert(stripped, counts.len());
                counts.push((stripped, 1));
            }
        }
        if in_block {
            if let Some(block) = blocks.last_mut() {
                block.2 += 1;
                if block.1.is_none() {
                    block.1 = Primary::from_event(stripped);
                }
            }
        }
    }
    let events: Vec<EventCount> = counts
        .into_iter()
        .map(|(name, count)| EventCount {
            name: name.to_owned(),
            count,
        })
        .collect();
    let summary = CcacheSummary::from_events(&events);
    Statslog {
        blocks: blocks
            .into_iter()
            .map(|(path, primary, events)| Block {
                path: path.to_owned(),
                primary,
                events,
            })
            .collect(),
        events,
        summary,
    }
}

/// The path of a header line ccache wrote as `# <input file>`: the text
/// after the `#` and one space. Leading whitespace before the `#` is
/// dropped (the line was recognised after stripping); trailing characters
/// are kept, as ccache writes the path verbatim and `source` in timing.json
/// has it verbatim too.
fn header_path(line: &str) -> &str {
    let after_hash = line
        .trim_start_matches(is_python_whitespace)
        .strip_prefix('#')
        .unwrap_or("");
    after_hash.strip_prefix(' ').unwrap_or(after_hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(log: &Statslog) -> Vec<(&str, u64)> {
        log.events().iter().map(|e| (e.name.as_str(), e.count)).collect()
    }

    #[test]
    fn counts_in_first_seen_order_with_unknown_events() {
        let log = parse(
            b"# \ncalled_for_preprocessing\n# /s/a.cpp\ncache_miss\ndirect_cache_miss\n\
              local_storage_write\nlocal_storage_write\n# /s/b.cpp\ncompile_failed\ncache_miss\n",
        );
        assert_eq!(
            counts(&log),
            [
                ("called_for_preprocessing", 1),
                ("cache_miss", 2),
                ("direct_cache_miss", 1),
                ("local_storage_write", 2),
                ("compile_failed", 1)
            ]
        );
        assert_eq!(log.count("cache_miss"), 2);
        assert_eq!(log.count("never"), 0);
        assert!(!log.is_empty());
    }

    #[test]
    fn universal_newlines_and_crlf() {
        let log = parse(b"# /s/a.cpp\r\ncache_miss\rcache_miss\r\ndirect_cache_hit\n# /s/b.cpp\rcache_miss");
        assert_eq!(counts(&log), [("cache_miss", 3), ("direct_cache_hit", 1)]);
        let paths: Vec<&str> = log.blocks().iter().map(|b| b.path.as_str()).collect();
        assert_eq!(paths, ["/s/a.cpp", "/s/b.cpp"], "no \\r left in a path");
    }

    #[test]
    fn python_whitespace_is_stripped_and_rejected() {
        // \x1c–\x1f and NBSP are Python whitespace: stripped at the ends,
        // and a line still holding one inside is skipped.
        let log = parse(
            "\x1ccache_miss\x1f\n\u{a0}cache_miss \ncache\x1dmiss\ncache miss\ncache\u{3000}miss\n\t\n"
                .as_bytes(),
        );
        assert_eq!(counts(&log), [("cache_miss", 2)]);
        // Not whitespace for Python: kept in the name.
        let log = parse("cache_miss\u{200b}\n".as_bytes());
        assert_eq!(counts(&log), [("cache_miss\u{200b}", 1)]);
    }

    #[test]
    fn comments_empty_lines_and_lossy_utf8() {
        let log = parse(b"#\n  # indented comment\n\n   \ncache_miss\n\xff\xfeevent\n#cache_miss\n");
        assert_eq!(counts(&log), [("cache_miss", 1), ("\u{fffd}\u{fffd}event", 1)]);
        assert!(parse(b"").is_empty());
        assert!(parse(b"# only\n# headers\n").is_empty());
    }

    #[test]
    fn torn_lines_count_as_what_they_are() {
        // Two appends that lost a newline between them; a half-written last
        // line. Both are counted verbatim, as compiletools does.
        let log = parse(b"# /s/a.cpp\ncache_missdirect_cache_miss\nlocal_stor");
        assert_eq!(
            counts(&log),
            [("cache_missdirect_cache_miss", 1), ("local_stor", 1)]
        );
        assert_eq!(log.blocks()[0].primary, None);
        assert_eq!(log.blocks()[0].events, 2);
    }

    #[test]
    fn blocks_and_primary_outcomes() {
        let log = parse(
            b"stray_before_any_header\n# \ncalled_for_preprocessing\n# /s/a.cpp\ndirect_cache_miss\n\
              preprocessed_cache_hit\nlocal_storage_hit\n# /s/b.cpp\n# /s/c.cpp\ncache_miss\ndirect_cache_hit\n",
        );
        let blocks: Vec<(&str, Option<Primary>, u64)> = log
            .blocks()
            .iter()
            .map(|b| (b.path.as_str(), b.primary, b.events))
            .collect();
        assert_eq!(
            blocks,
            [
                ("", None, 1),
                ("/s/a.cpp", Some(Primary::PreprocessedCacheHit), 3),
                ("/s/b.cpp", None, 0),
                // The first primary event of a block is its outcome.
                ("/s/c.cpp", Some(Primary::CacheMiss), 2),
            ]
        );
        // Events before the first header are counted but in no block.
        assert_eq!(log.count("stray_before_any_header"), 1);
    }

    #[test]
    fn empty_header_block_names_no_source() {
        let log = parse(b"# \ncalled_for_preprocessing\n#\ncache_miss\n");
        assert_eq!(log.blocks().len(), 2);
        assert!(log.blocks().iter().all(|b| b.path.is_empty()));
        assert!(log.last_block_by_source().is_empty());
        assert_eq!(log.summary().misses, 1, "still counted");
    }

    #[test]
    fn header_paths_are_verbatim() {
        assert_eq!(header_path("# /s/a b.cpp"), "/s/a b.cpp");
        assert_eq!(header_path("#/s/a.cpp"), "/s/a.cpp");
        assert_eq!(header_path("#  /s/a.cpp "), " /s/a.cpp ");
        assert_eq!(header_path("\x1c# /s/a.cpp"), "/s/a.cpp");
        assert_eq!(header_path("# "), "");
        assert_eq!(header_path("#"), "");
    }

    #[test]
    fn last_block_per_source_wins() {
        let log = parse(b"# /s/a.cpp\ncache_miss\n# /s/b.cpp\ncache_miss\n# /s/a.cpp\ndirect_cache_hit\n");
        let by_source = log.last_block_by_source();
        assert_eq!(by_source["/s/a.cpp"], Some(Primary::DirectCacheHit));
        assert_eq!(by_source["/s/b.cpp"], Some(Primary::CacheMiss));
        // A later block without an outcome hides an earlier one.
        let log = parse(b"# /s/a.cpp\ncache_miss\n# /s/a.cpp\ncompile_failed\n");
        assert_eq!(log.last_block_by_source()["/s/a.cpp"], None);
    }

    #[test]
    fn counts_only_skips_blocks() {
        let bytes = b"# /s/a.cpp\ncache_miss\n";
        let full = parse(bytes);
        let counts_only = parse_counts(bytes);
        assert_eq!(full.events(), counts_only.events());
        assert_eq!(full.summary(), counts_only.summary());
        assert!(counts_only.blocks().is_empty());
    }
}
