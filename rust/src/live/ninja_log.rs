//! Appended `.ninja_log` bytes → one `NinjaEdge` event per complete line
//! (formats.md §7.2): `#` lines skipped, TAB-separated, at least 4 fields, the
//! first two integers (start and end, ms since ninja started), the fourth
//! the output path. Ninja's times are relative to its own start, which no
//! file records, so the events carry them as such. Unlike compiletools'
//! ingest ("last entry per output wins"), every line is an event: live, a
//! line is an edge that just finished.

use super::{capped, complete_part, lines_with_ends, LiveEvent, Parsed};

/// Parses the complete lines of `data`, at most `max_records` (0: all).
pub fn parse(data: &[u8], final_chunk: bool, max_records: usize) -> Parsed {
    let data = complete_part(data, final_chunk);
    let mut out = Parsed::default();
    for (line, end) in lines_with_ends(data) {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches(['\n', '\r']);
        if !text.is_empty() && !text.starts_with('#') {
            match edge(text) {
                Some(e) => out.events.push(e),
                None => out.skipped += 1,
            }
        }
        out.consumed = end;
        if capped(out.events.len(), max_records) {
            break;
        }
    }
    out
}

fn edge(line: &str) -> Option<LiveEvent> {
    let fields: Vec<&str> = line.split('\t').collect();
    if fields.len() < 4 {
        return None;
    }
    let start_ms = fields[0].trim().parse::<i64>().ok()?;
    let end_ms = fields[1].trim().parse::<i64>().ok()?;
    Some(LiveEvent::NinjaEdge {
        target: fields[3].to_owned(),
        start_ms,
        end_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_edges() {
        let data = b"# ninja log v5\n12\t340\t1796009765000000000\tobj/a.o\t9f2c\nbad\tline\n7\tx\t0\tobj/b.o\t1\n400\t410\t0\tbin/app\tab\n500\t5";
        let p = parse(data, false, 0);
        assert_eq!(
            p.events,
            vec![
                LiveEvent::NinjaEdge {
                    target: "obj/a.o".into(),
                    start_ms: 12,
                    end_ms: 340
                },
                LiveEvent::NinjaEdge {
                    target: "bin/app".into(),
                    start_ms: 400,
                    end_ms: 410
                },
            ]
        );
        assert_eq!(p.skipped, 2);
        assert_eq!(&data[p.consumed..], b"500\t5");
    }
}
