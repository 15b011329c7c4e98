//! Appended statslog bytes → one `Compile` event per complete block
//! (formats.md §4.2). A block is its `# <source>` header and the event lines up to
//! the next header; each block is parsed by the statslog parser itself, so
//! the rules of formats.md §4.3 (and the first primary event as the outcome) are
//! the same as for the finished build's attribution.
//!
//! ccache appends one block per call, in one write, so a block is usually
//! complete when its lines end in a newline. The last block of a look that
//! has no primary outcome yet waits (it may be torn); a call that never has
//! one (a link, a preprocessor probe) is then reported when the next block
//! arrives or the build ends. Lines before the first header of the input
//! (the rest of a block torn after its primary outcome) are counted as
//! skipped: the record, which carries only the outcome, was right.

use super::{capped, complete_part, lines_with_ends, LiveEvent, Parsed};
use crate::pytext::strip;
use crate::statslog;

fn is_header(line: &[u8]) -> bool {
    strip(&String::from_utf8_lossy(line)).starts_with('#')
}

/// Parses the complete blocks of `data`, at most `max_records` (0: all).
pub fn parse(data: &[u8], final_chunk: bool, max_records: usize) -> Parsed {
    let data = complete_part(data, final_chunk);
    let mut out = Parsed::default();
    // (start offset of the current block, or None before the first header)
    let mut block_start: Option<usize> = None;
    let mut line_start = 0usize;
    let mut orphan_lines = 0u64;
    let emit = |out: &mut Parsed, from: usize, to: usize| {
        let log = statslog::parse(&data[from..to]);
        if let Some(block) = log.blocks().first() {
            out.events.push(LiveEvent::Compile {
                source: block.path.clone(),
                outcome: block.primary,
            });
        }
        out.consumed = to;
    };
    for (line, end) in lines_with_ends(data) {
        if is_header(line) {
            if let Some(from) = block_start {
                emit(&mut out, from, line_start);
                if capped(out.events.len(), max_records) {
                    out.skipped = orphan_lines;
                    return out;
                }
            } else {
                out.consumed = line_start;
            }
            block_start = Some(line_start);
        } else if block_start.is_none() && !strip(&String::from_utf8_lossy(line)).is_empty() {
            orphan_lines += 1;
        }
        line_start = end;
    }
    match block_start {
        // The last block may still be growing (a look can fall between two
        // writes): without its primary outcome yet it waits for the next
        // header or the build's end. Once the primary is there the record
        // is right whatever follows, since it carries only the outcome.
        Some(from)
            if !final_chunk
                && statslog::parse(&data[from..])
                    .blocks()
                    .first()
                    .is_some_and(|b| b.primary.is_none()) =>
        {
            out.consumed = from
        }
        Some(from) => emit(&mut out, from, data.len()),
        None => out.consumed = data.len(),
    }
    out.skipped = orphan_lines;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statslog::Primary;

    fn compile(source: &str, outcome: Option<Primary>) -> LiveEvent {
        LiveEvent::Compile {
            source: source.to_owned(),
            outcome,
        }
    }

    #[test]
    fn complete_blocks_become_compiles_with_their_outcome() {
        let data = b"# /s/a.cpp\ncache_miss\ndirect_cache_miss\n# /s/b.cpp\ndirect_cache_hit\n# \ncalled_for_preprocessing\n";
        let p = parse(data, true, 0);
        assert_eq!(
            p.events,
            vec![
                compile("/s/a.cpp", Some(Primary::CacheMiss)),
                compile("/s/b.cpp", Some(Primary::DirectCacheHit)),
                compile("", None),
            ]
        );
        assert_eq!((p.consumed, p.skipped), (data.len(), 0));
        // While the build runs, a last block without a primary outcome may
        // still be growing: it waits for the next block or the end.
        let running = parse(data, false, 0);
        assert_eq!(running.events, p.events[..2]);
        assert_eq!(&data[running.consumed..], b"# \ncalled_for_preprocessing\n");
    }

    #[test]
    fn a_torn_last_line_is_left_for_the_next_look() {
        let data = b"# /s/a.cpp\ncache_miss\n# /s/b.cpp\ndirect_ca";
        let p = parse(data, false, 0);
        assert_eq!(p.events, vec![compile("/s/a.cpp", Some(Primary::CacheMiss))]);
        assert_eq!(p.consumed, b"# /s/a.cpp\ncache_miss\n".len());
        let rest = parse(b"# /s/b.cpp\ndirect_cache_hit\n", false, 0);
        assert_eq!(
            rest.events,
            vec![compile("/s/b.cpp", Some(Primary::DirectCacheHit))]
        );
        // Once the build is over, a header alone is a block of its own.
        let last = parse(b"# /s/c.cpp\n", true, 0);
        assert_eq!(
            (last.events, last.consumed),
            (vec![compile("/s/c.cpp", None)], 11)
        );
    }

    #[test]
    fn the_cap_leaves_the_rest_for_the_next_call() {
        let data = b"# /a\ncache_miss\n# /b\ncache_miss\n# /c\ncache_miss\n";
        let p = parse(data, false, 2);
        assert_eq!(p.events.len(), 2);
        assert_eq!(&data[p.consumed..], b"# /c\ncache_miss\n");
        let rest = parse(&data[p.consumed..], false, 2);
        assert_eq!(rest.events, vec![compile("/c", Some(Primary::CacheMiss))]);
        assert_eq!(rest.consumed, data.len() - p.consumed);
    }

    #[test]
    fn lines_before_any_header_are_skipped_and_counted() {
        let p = parse(b"cache_miss\n\n# /a\ndirect_cache_hit\n", false, 0);
        assert_eq!(p.events, vec![compile("/a", Some(Primary::DirectCacheHit))]);
        assert_eq!(p.skipped, 1);
        let p = parse(b"stray\n", false, 0);
        assert_eq!((p.events.len(), p.consumed, p.skipped), (0, 6, 1));
    }

    #[test]
    fn invalid_utf8_and_crlf_do_not_break_blocks() {
        let p = parse(b"# /s/\xff.cpp\r\ncache_miss\r\n", false, 0);
        assert_eq!(
            p.events,
            vec![compile("/s/\u{fffd}.cpp", Some(Primary::CacheMiss))]
        );
    }
}
